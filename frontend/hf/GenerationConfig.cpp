//===- GenerationConfig.cpp - generation_config.json ----------------------===//

#include "frontend/hf/GenerationConfig.h"

#include "frontend/hf/JsonFields.h"
#include "runtime/support/Error.h"

#include <cmath>

namespace sol::hf {

GenerationConfig parseGenerationConfig(std::string_view jsonText,
                                       std::string_view source) {
  nlohmann::json json = detail::parseJsonObject(jsonText, source);
  return generationConfigFrom(detail::JsonFields(json, std::string(source)));
}

GenerationConfig generationConfigFrom(const detail::JsonFields &fields) {
  GenerationConfig config;
  config.eosTokenIds =
      fields.optIntOrList("eos_token_id").value_or(std::vector<int64_t>{});
  config.bosTokenId = fields.optInt("bos_token_id");
  // pad_token_id is occasionally written as a list; the first id is the one
  // transformers pads with.
  if (std::optional<std::vector<int64_t>> pad =
          fields.optIntOrList("pad_token_id");
      pad && !pad->empty())
    config.padTokenId = pad->front();
  config.doSample = fields.optBool("do_sample");
  config.temperature = fields.optNumber("temperature");
  config.topK = fields.optInt("top_k");
  config.topP = fields.optNumber("top_p");
  config.repetitionPenalty = fields.optNumber("repetition_penalty");
  config.maxNewTokens = fields.optInt("max_new_tokens");
  config.maxLength = fields.optInt("max_length");

  auto nonNegative = [&](std::string_view key, std::optional<int64_t> id) {
    if (id && *id < 0)
      fail(fields.where(key), "must be >= 0, got ", *id);
  };
  for (int64_t id : config.eosTokenIds)
    nonNegative("eos_token_id", id);
  nonNegative("bos_token_id", config.bosTokenId);
  nonNegative("pad_token_id", config.padTokenId);
  nonNegative("top_k", config.topK);
  if (config.temperature &&
      (!std::isfinite(*config.temperature) || *config.temperature < 0))
    fail(fields.where("temperature"), "must be a number >= 0, got ",
         *config.temperature);
  if (config.topP && !(*config.topP > 0 && *config.topP <= 1))
    fail(fields.where("top_p"), "must be in (0, 1], got ", *config.topP);
  if (config.repetitionPenalty && (!std::isfinite(*config.repetitionPenalty) ||
                                   *config.repetitionPenalty <= 0))
    fail(fields.where("repetition_penalty"), "must be a number > 0, got ",
         *config.repetitionPenalty);
  if (config.maxNewTokens && *config.maxNewTokens <= 0)
    fail(fields.where("max_new_tokens"), "must be > 0, got ",
         *config.maxNewTokens);
  if (config.maxLength && *config.maxLength <= 0)
    fail(fields.where("max_length"), "must be > 0, got ", *config.maxLength);
  return config;
}

std::optional<GenerationConfig>
loadGenerationConfig(const std::filesystem::path &modelDir) {
  std::filesystem::path file = modelDir / "generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return std::nullopt;
  return parseGenerationConfig(detail::readTextFile(file), file.string());
}

} // namespace sol::hf

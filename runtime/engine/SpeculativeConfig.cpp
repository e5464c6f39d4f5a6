//===- SpeculativeConfig.cpp - Parsing --speculative-config ---------------===//
#include "runtime/engine/SpeculativeConfig.h"

#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>
#include <string>

namespace sol {

namespace {

using Json = nlohmann::json;

constexpr const char *kWhere = "--speculative-config";
constexpr std::string_view kKeys[] = {"method",
                                      "model",
                                      "num_speculative_tokens",
                                      "prompt_lookup_max",
                                      "prompt_lookup_min",
                                      "disable_by_batch_size"};

/// The integer value of `key`, or nothing when it is absent or null.
/// Refuses other types and values outside [lo, hi].
std::optional<int32_t> intKey(const Json &j, const char *key, int64_t lo,
                              int64_t hi, const char *range) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return std::nullopt;
  if (!it->is_number_integer())
    fail(kWhere, ": \"", key, "\" must be an integer ", range, ", got ",
         it->type_name(), " ", it->dump());
  // Non-negative numbers parse as unsigned: compare before converting.
  const bool tooLarge = it->is_number_unsigned()
                            ? it->get<uint64_t>() > uint64_t(hi)
                            : it->get<int64_t>() > hi;
  const int64_t value = tooLarge ? hi : it->get<int64_t>();
  if (tooLarge || value < lo)
    fail(kWhere, ": \"", key, "\" must be ", range,
         // Say so where the range does not show the upper bound.
         tooLarge && std::string_view(range).find("..") == std::string::npos
             ? cat(" and at most ", hi)
             : std::string(),
         ", got ", it->dump());
  return int32_t(value);
}

} // namespace

SpeculativeConfig parseSpeculativeConfig(std::string_view text) {
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error &e) {
    // Keep "parse error at line L, column C: what" of nlohmann's message.
    std::string why = e.what();
    if (size_t b = why.find("] "); b != std::string::npos)
      why = why.substr(b + 2);
    fail(kWhere, ": not valid JSON: ", why,
         " (expected an object such as {\"method\": \"ngram\", "
         "\"num_speculative_tokens\": 4})");
  }
  if (!j.is_object())
    fail(kWhere,
         ": expected a JSON object such as {\"method\": \"ngram\", "
         "\"num_speculative_tokens\": 4}, got ",
         j.type_name());

  std::string unknown, known;
  size_t numUnknown = 0;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(std::begin(kKeys), std::end(kKeys), it.key()) ==
        std::end(kKeys))
      unknown += cat(numUnknown++ ? ", " : "", "\"", it.key(), "\"");
  for (std::string_view key : kKeys)
    known += cat(known.empty() ? "" : ", ", "\"", key, "\"");
  if (!unknown.empty())
    fail(kWhere, ": unknown key", numUnknown == 1 ? " " : "s ", unknown,
         "; the supported keys are ", known);

  SpeculativeConfig config;
  // As in vLLM: "model" alone means a draft model; "method" may say so
  // ("draft_model") or ask for prompt lookup ("ngram").
  auto model = j.find("model");
  const bool hasModel = model != j.end() && !model->is_null();
  if (hasModel) {
    if (!model->is_string() || model->get_ref<const std::string &>().empty())
      fail(kWhere,
           ": \"model\" must be the path of a draft plan (made by "
           "solc), got ",
           model->dump());
    config.draftModel = model->get<std::string>();
  }
  auto method = j.find("method");
  std::string methodName;
  if (method != j.end() && !method->is_null()) {
    if (!method->is_string())
      fail(kWhere,
           ": \"method\" must be a string (\"ngram\" or \"draft_model\"), "
           "got ",
           method->type_name(), " ", method->dump());
    methodName = method->get<std::string>();
  } else if (hasModel) {
    methodName = "draft_model";
  } else {
    fail(kWhere, ": give \"method\": \"ngram\" (prompt lookup) or "
                 "\"model\": \"draft.plan\" (a draft model)");
  }
  if (methodName == "ngram") {
    if (hasModel)
      fail(kWhere, ": \"method\" \"ngram\" proposes without a model; drop "
                   "\"model\" or use \"method\": \"draft_model\"");
    config.method = SpeculativeConfig::Method::Ngram;
  } else if (methodName == "draft_model") {
    // Without "model" the target plan's packed draft (solc --draft) is used;
    // solrun checks that there is one.
    for (const char *key : {"prompt_lookup_max", "prompt_lookup_min"})
      if (auto it = j.find(key); it != j.end() && !it->is_null())
        fail(kWhere, ": \"", key,
             "\" is an n-gram setting; a draft model does not use it");
    config.method = SpeculativeConfig::Method::DraftModel;
  } else {
    fail(kWhere, ": \"method\" ", method->dump(),
         " is not supported; the supported methods are \"ngram\" and "
         "\"draft_model\"");
  }

  const std::string tokensRange = cat("in 1..", kMaxSpeculativeTokens);
  std::optional<int32_t> numTokens =
      intKey(j, "num_speculative_tokens", 1, kMaxSpeculativeTokens,
             tokensRange.c_str());
  if (!numTokens)
    fail(kWhere,
         ": \"num_speculative_tokens\" is required: the number of "
         "draft tokens per step, ",
         tokensRange);
  config.numSpeculativeTokens = *numTokens;

  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  config.disableByBatchSize =
      intKey(j, "disable_by_batch_size", 1, kMax, ">= 1")
          .value_or(kDefaultDisableByBatchSize);
  if (config.method != SpeculativeConfig::Method::Ngram)
    return config;
  std::optional<int32_t> lookupMax =
      intKey(j, "prompt_lookup_max", 1, kMax, ">= 1");
  std::optional<int32_t> lookupMin =
      intKey(j, "prompt_lookup_min", 1, kMax, ">= 1");
  if (!lookupMax && !lookupMin) {
    lookupMin = kDefaultPromptLookupMin;
    lookupMax = kDefaultPromptLookupMax;
  }
  config.promptLookupMax = lookupMax.value_or(lookupMin.value_or(0));
  config.promptLookupMin = lookupMin.value_or(config.promptLookupMax);
  if (config.promptLookupMin > config.promptLookupMax)
    fail(kWhere, ": \"prompt_lookup_min\" (", config.promptLookupMin,
         ") must not exceed \"prompt_lookup_max\" (", config.promptLookupMax,
         ")");
  return config;
}

} // namespace sol

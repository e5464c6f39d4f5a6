//===- GenerationConfig.h - generation_config.json --------------*- C++ -*-===//
//
// Generation defaults a model ships with (stop tokens, sampling settings);
// the plan records them so solrun stops and samples like transformers does.
// Every field is optional: absent in the file means "not specified".
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace sol::hf {

struct GenerationConfig {
  std::vector<int64_t> eosTokenIds; // int or list in the JSON
  std::optional<int64_t> bosTokenId;
  std::optional<int64_t> padTokenId;
  std::optional<bool> doSample;
  std::optional<double> temperature;
  std::optional<int64_t> topK;
  std::optional<double> topP;
  std::optional<double> repetitionPenalty;
  std::optional<int64_t> maxNewTokens;
  std::optional<int64_t> maxLength;
};

namespace detail {
class JsonFields;
}

/// The generation fields of one JSON object (generation_config.json, or
/// genai_config.json's "search", which uses the same names), checked.
GenerationConfig generationConfigFrom(const detail::JsonFields &fields);

/// Parses the text of a generation_config.json; `source` names it in errors.
GenerationConfig parseGenerationConfig(std::string_view jsonText,
                                       std::string_view source);

/// Reads `<modelDir>/generation_config.json`; std::nullopt when the file does
/// not exist (it is optional), sol::Error when it exists but is malformed.
std::optional<GenerationConfig>
loadGenerationConfig(const std::filesystem::path &modelDir);

} // namespace sol::hf

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
constexpr std::string_view kKeys[] = {"method", "num_speculative_tokens",
                                      "prompt_lookup_max", "prompt_lookup_min",
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

  // A draft model is a known vLLM key, so it gets its own message.
  if (auto it = j.find("model"); it != j.end() && !it->is_null())
    fail(kWhere, ": \"model\" (speculation with a draft model) is not "
                 "supported yet; use \"method\": \"ngram\"");
  std::string unknown, known;
  size_t numUnknown = 0;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "model" && std::find(std::begin(kKeys), std::end(kKeys),
                                         it.key()) == std::end(kKeys))
      unknown += cat(numUnknown++ ? ", " : "", "\"", it.key(), "\"");
  for (std::string_view key : kKeys)
    known += cat(known.empty() ? "" : ", ", "\"", key, "\"");
  if (!unknown.empty())
    fail(kWhere, ": unknown key", numUnknown == 1 ? " " : "s ", unknown,
         "; the supported keys are ", known);

  SpeculativeConfig config;
  auto method = j.find("method");
  if (method == j.end() || method->is_null())
    fail(kWhere, ": \"method\" is required; use \"method\": \"ngram\" (the "
                 "only supported method)");
  if (!method->is_string())
    fail(kWhere, ": \"method\" must be a string (\"ngram\"), got ",
         method->type_name(), " ", method->dump());
  if (method->get_ref<const std::string &>() != "ngram")
    fail(kWhere, ": \"method\" ", method->dump(),
         " is not supported; the supported method is \"ngram\"");
  config.method = SpeculativeConfig::Method::Ngram;

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

  config.disableByBatchSize =
      intKey(j, "disable_by_batch_size", 1, kMax, ">= 1").value_or(0);
  return config;
}

} // namespace sol

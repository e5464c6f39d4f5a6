//===- SpeculativeConfigTest.cpp - Parsing --speculative-config -----------===//
//
// vLLM's --speculative-config JSON: the ngram and draft-model
// configurations Sol runs, the lookup bounds' defaults, and a message naming
// the key for each config it refuses.
//
//===----------------------------------------------------------------------===//
#include "runtime/engine/SpeculativeConfig.h"

#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <string>

using namespace sol;

namespace {

/// The sol::Error message of parsing `json`, or "" when it parses.
std::string errorOf(std::string_view json) {
  try {
    parseSpeculativeConfig(json);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// Expects parsing `json` to fail with a message containing each of `parts`.
void expectError(std::string_view json,
                 std::initializer_list<std::string_view> parts) {
  const std::string message = errorOf(json);
  ASSERT_FALSE(message.empty()) << json << " was accepted";
  EXPECT_NE(message.find("--speculative-config"), std::string::npos) << message;
  for (std::string_view part : parts)
    EXPECT_NE(message.find(part), std::string::npos)
        << "'" << message << "' does not mention '" << part << "'";
}

TEST(SpeculativeConfig, DefaultIsDisabled) {
  SpeculativeConfig c;
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(c.method, SpeculativeConfig::Method::None);
}

TEST(SpeculativeConfig, ParsesAFullNgramConfig) {
  const SpeculativeConfig c = parseSpeculativeConfig(
      R"({"method": "ngram", "num_speculative_tokens": 5,
          "prompt_lookup_max": 6, "prompt_lookup_min": 3,
          "disable_by_batch_size": 32})");
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.method, SpeculativeConfig::Method::Ngram);
  EXPECT_EQ(c.numSpeculativeTokens, 5);
  EXPECT_EQ(c.promptLookupMax, 6);
  EXPECT_EQ(c.promptLookupMin, 3);
  EXPECT_EQ(c.disableByBatchSize, 32);
}

TEST(SpeculativeConfig, LookupBoundsDefault) {
  SpeculativeConfig c = parseSpeculativeConfig(
      R"({"method": "ngram", "num_speculative_tokens": 1})");
  EXPECT_EQ(c.numSpeculativeTokens, 1);
  EXPECT_EQ(c.promptLookupMin, kDefaultPromptLookupMin);
  EXPECT_EQ(c.promptLookupMax, kDefaultPromptLookupMax);
  EXPECT_EQ(c.promptLookupMin, 2);
  EXPECT_EQ(c.promptLookupMax, 4);
  EXPECT_EQ(c.disableByBatchSize, kDefaultDisableByBatchSize);
  EXPECT_EQ(c.disableByBatchSize, 4);

  // One bound given: the other takes its value.
  c = parseSpeculativeConfig(
      R"({"method": "ngram", "num_speculative_tokens": 3,
          "prompt_lookup_max": 7})");
  EXPECT_EQ(c.promptLookupMin, 7);
  EXPECT_EQ(c.promptLookupMax, 7);
  c = parseSpeculativeConfig(
      R"({"method": "ngram", "num_speculative_tokens": 3,
          "prompt_lookup_min": 1})");
  EXPECT_EQ(c.promptLookupMin, 1);
  EXPECT_EQ(c.promptLookupMax, 1);

  // null counts as not given.
  c = parseSpeculativeConfig(
      R"({"method": "ngram", "num_speculative_tokens": 16, "model": null,
          "prompt_lookup_min": null, "prompt_lookup_max": 5,
          "disable_by_batch_size": null})");
  EXPECT_EQ(c.numSpeculativeTokens, 16);
  EXPECT_EQ(c.promptLookupMin, 5);
  EXPECT_EQ(c.promptLookupMax, 5);
  EXPECT_EQ(c.disableByBatchSize, kDefaultDisableByBatchSize);
}

TEST(SpeculativeConfig, RefusesMalformedJson) {
  expectError(R"({"method": "ngram",)", {"not valid JSON", "column"});
  expectError("", {"not valid JSON"});
}

TEST(SpeculativeConfig, RefusesANonObject) {
  expectError(R"(["ngram"])", {"JSON object", "array"});
  expectError("4", {"JSON object", "number"});
}

TEST(SpeculativeConfig, RefusesUnknownKeys) {
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 2, "foo": 1,
          "draft_tensor_parallel_size": 1})",
      {"unknown keys", "\"foo\"", "\"draft_tensor_parallel_size\"",
       "\"prompt_lookup_max\""});
  expectError(R"({"method": "ngram", "num_speculative_tokens": 2, "bar": 1})",
              {"unknown key \"bar\""});
}

TEST(SpeculativeConfig, ParsesADraftModelConfig) {
  // vLLM's form: "model" alone means a draft model.
  SpeculativeConfig c = parseSpeculativeConfig(
      R"({"model": "draft.plan", "num_speculative_tokens": 3})");
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.method, SpeculativeConfig::Method::DraftModel);
  EXPECT_EQ(c.draftModel, "draft.plan");
  EXPECT_EQ(c.numSpeculativeTokens, 3);
  EXPECT_EQ(c.disableByBatchSize, kDefaultDisableByBatchSize);
  c = parseSpeculativeConfig(
      R"({"method": "draft_model", "model": "/m/d.plan",
          "num_speculative_tokens": 5, "disable_by_batch_size": 8,
          "prompt_lookup_max": null})");
  EXPECT_EQ(c.method, SpeculativeConfig::Method::DraftModel);
  EXPECT_EQ(c.draftModel, "/m/d.plan");
  EXPECT_EQ(c.disableByBatchSize, 8);
  // No model: the draft solc --draft packed into the target (solrun checks
  // that there is one).
  c = parseSpeculativeConfig(
      R"({"method": "draft_model", "num_speculative_tokens": 2})");
  EXPECT_EQ(c.method, SpeculativeConfig::Method::DraftModel);
  EXPECT_TRUE(c.draftModel.empty());
}

TEST(SpeculativeConfig, RefusesInconsistentDraftModelConfigs) {
  expectError(R"({"method": "ngram", "model": "x",
                  "num_speculative_tokens": 2})",
              {"\"ngram\"", "drop \"model\""});
  expectError(R"({"model": "d.plan", "num_speculative_tokens": 2,
                  "prompt_lookup_min": 2})",
              {"\"prompt_lookup_min\"", "n-gram setting"});
  expectError(R"({"model": 3, "num_speculative_tokens": 2})",
              {"\"model\"", "path of a draft plan", "3"});
  expectError(R"({"model": "", "num_speculative_tokens": 2})",
              {"\"model\"", "path of a draft plan"});
  expectError(R"({"model": "d.plan"})",
              {"\"num_speculative_tokens\"", "required"});
}

TEST(SpeculativeConfig, RefusesOtherMethods) {
  expectError(R"({"method": "eagle", "num_speculative_tokens": 2})",
              {"\"method\"", "\"eagle\"", "not supported", "\"ngram\"",
               "\"draft_model\""});
  expectError(R"({"method": "[ngram]", "num_speculative_tokens": 2})",
              {"\"method\"", "\"[ngram]\"", "\"ngram\""});
  expectError(R"({"method": 1, "num_speculative_tokens": 2})",
              {"\"method\"", "must be a string"});
  expectError(R"({"num_speculative_tokens": 2})",
              {"\"method\"", "\"ngram\"", "\"model\""});
}

TEST(SpeculativeConfig, RefusesWrongTypes) {
  expectError(R"({"method": "ngram", "num_speculative_tokens": "4"})",
              {"\"num_speculative_tokens\"", "integer", "string"});
  expectError(R"({"method": "ngram", "num_speculative_tokens": 4.0})",
              {"\"num_speculative_tokens\"", "integer"});
  expectError(R"({"method": "ngram", "num_speculative_tokens": true})",
              {"\"num_speculative_tokens\"", "integer", "boolean"});
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "prompt_lookup_max": [4]})",
      {"\"prompt_lookup_max\"", "integer"});
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "prompt_lookup_min": 1.5})",
      {"\"prompt_lookup_min\"", "integer"});
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "disable_by_batch_size": "8"})",
      {"\"disable_by_batch_size\"", "integer"});
}

TEST(SpeculativeConfig, RefusesOutOfRangeValues) {
  expectError(R"({"method": "ngram"})",
              {"\"num_speculative_tokens\"", "required"});
  expectError(R"({"method": "ngram", "num_speculative_tokens": 0})",
              {"\"num_speculative_tokens\"", "1..16", "got 0"});
  expectError(R"({"method": "ngram", "num_speculative_tokens": 17})",
              {"\"num_speculative_tokens\"", "1..16", "got 17"});
  expectError(R"({"method": "ngram", "num_speculative_tokens": -3})",
              {"\"num_speculative_tokens\"", "got -3"});
  expectError(R"({"method": "ngram",
                  "num_speculative_tokens": 18446744073709551615})",
              {"\"num_speculative_tokens\"", "1..16"});
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "prompt_lookup_max": 0})",
      {"\"prompt_lookup_max\"", ">= 1"});
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "prompt_lookup_min": -1})",
      {"\"prompt_lookup_min\"", ">= 1"});
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "prompt_lookup_max": 4294967296})",
      {"\"prompt_lookup_max\"", ">= 1 and at most 2147483647"});
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "disable_by_batch_size": 0})",
      {"\"disable_by_batch_size\"", ">= 1"});
}

TEST(SpeculativeConfig, RefusesMinAboveMax) {
  expectError(
      R"({"method": "ngram", "num_speculative_tokens": 4,
          "prompt_lookup_min": 5, "prompt_lookup_max": 3})",
      {"\"prompt_lookup_min\" (5)", "\"prompt_lookup_max\" (3)"});
}

} // namespace

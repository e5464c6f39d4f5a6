//===- PreTokenizerTest.cpp - Split behaviors and the real patterns -------===//

#include "runtime/tokenizer/PreTokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sol {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(const nlohmann::json &config, std::string_view text) {
  const PreTokenizer preTokenizer = PreTokenizer::fromJson(config, "test");
  std::deque<std::string> arena;
  Pieces out;
  for (std::string_view piece : preTokenizer.split(text, arena))
    out.emplace_back(piece);
  return out;
}

nlohmann::json splitOn(const std::string &delimiter,
                       const std::string &behavior, bool invert = false) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"String", delimiter}}},
             {"behavior", behavior},
             {"invert", invert}},
            {{"type", "ByteLevel"},
             {"add_prefix_space", false},
             {"use_regex", false}}}}};
}

TEST(PreTokenizerTest, SplitBehaviorsAsDocumentedByHuggingFace) {
  // The examples of SplitDelimiterBehavior in the HF tokenizers docs.
  const std::string text = "the-final--countdown";
  EXPECT_EQ(split(splitOn("-", "Removed"), text),
            (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(split(splitOn("-", "Isolated"), text),
            (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(splitOn("-", "MergedWithPrevious"), text),
            (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(splitOn("-", "MergedWithNext"), text),
            (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(splitOn("-", "Contiguous"), text),
            (Pieces{"the", "-", "final", "--", "countdown"}));
  // invert swaps matches and gaps: Removed then drops the former gaps.
  EXPECT_EQ(split(splitOn("-", "Removed", true), text),
            (Pieces{"-", "-", "-"}));
}

TEST(PreTokenizerTest, QwenAndLlamaPatterns) {
  const std::string qwen =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const nlohmann::json config = {{"type", "Sequence"},
                                 {"pretokenizers",
                                  {{{"type", "Split"},
                                    {"pattern", {{"Regex", qwen}}},
                                    {"behavior", "Isolated"}},
                                   {{"type", "ByteLevel"},
                                    {"add_prefix_space", false},
                                    {"use_regex", false}}}}};
  EXPECT_EQ(
      split(config, "Hello world's 123  \n\nx"),
      (Pieces{"Hello", " world", "'s", " ", "1", "2", "3", "  \n\n", "x"}));
}

TEST(PreTokenizerTest, ByteLevelPrefixSpaceAndGpt2Regex) {
  const nlohmann::json config = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(split(config, "Hello world"), (Pieces{" Hello", " world"}));
  EXPECT_EQ(split(config, " it's"), (Pieces{" it", "'s"}));
}

TEST(PreTokenizerTest, RequiresByteLevel) {
  const nlohmann::json config = {{"type", "Split"},
                                 {"pattern", {{"String", " "}}},
                                 {"behavior", "Removed"}};
  EXPECT_THROW(PreTokenizer::fromJson(config, "test"), std::exception);
  EXPECT_THROW(PreTokenizer::fromJson({{"type", "Whitespace"}}, "test"),
               std::exception);
}

} // namespace
} // namespace sol

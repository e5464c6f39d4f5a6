//===- RegexTest.cpp - PCRE2 runs tokenizer.json patterns like Oniguruma --===//

#include "runtime/tokenizer/Regex.h"

#include <gtest/gtest.h>

namespace sol {
namespace {

std::vector<std::string> matches(const Regex &regex, std::string_view text) {
  std::vector<Regex::Match> found;
  regex.findAll(text, found);
  std::vector<std::string> out;
  for (const auto &[begin, end] : found)
    out.emplace_back(text.substr(begin, end - begin));
  return out;
}

TEST(RegexTest, WhiteSpaceEscapesBecomeTheWhiteSpaceProperty) {
  const std::string ws =
      "[\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-"
      "\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]";
  EXPECT_EQ(translateOnigurumaPattern("\\s+"), ws + "+");
  EXPECT_EQ(translateOnigurumaPattern("(?!\\S)"), "(?![^" + ws.substr(1) + ")");
  EXPECT_EQ(translateOnigurumaPattern("[^\\s\\p{L}]"),
            "[^" + ws.substr(1, ws.size() - 2) + "\\p{L}]");
  // An escaped backslash followed by 's' is not \s.
  EXPECT_EQ(translateOnigurumaPattern("\\\\s"), "\\\\s");
  // ']' first in a class is a literal, so the class goes on.
  EXPECT_EQ(translateOnigurumaPattern("[]\\s]"),
            "[]" + ws.substr(1, ws.size() - 2) + "]");
}

TEST(RegexTest, SpaceClassExcludesMongolianVowelSeparator) {
  // PCRE2's own \s matches U+180E; Oniguruma's (White_Space) does not.
  const Regex regex = Regex::fromPattern("\\s+", "test");
  EXPECT_EQ(matches(regex, "a\xE1\xA0\x8E"
                           "b"),
            std::vector<std::string>{});
  EXPECT_EQ(matches(regex, "a\xC2\xA0\xE3\x80\x80"
                           "b"),
            std::vector<std::string>{"\xC2\xA0\xE3\x80\x80"});
}

TEST(RegexTest, Gpt2StylePatternSplitsContractionsAndDigits) {
  const Regex regex = Regex::fromPattern(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      "test");
  EXPECT_EQ(matches(regex, "I'M here  12345!\n\nok"),
            (std::vector<std::string>{"I", "'M", " here", " ", " ", "123", "45",
                                      "!\n\n", "ok"}));
}

// o200k_base's split (gpt-oss's tokenizer.json): case runs kept whole or
// split before a capital, contractions case-insensitively, three digits at
// a time, punctuation with a leading space, newlines apart.
TEST(RegexTest, O200kPatternSplitsCaseRunsAndPunctuation) {
  const Regex regex = Regex::fromPattern(
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      "o200k");
  EXPECT_EQ(matches(regex, "Hello World'S helloWorld HTTPServer 12345 "
                           "\xC2\xBFQu\xC3\xA9? a/b\n\n  x"),
            (std::vector<std::string>{"Hello", " World'S", " hello", "World",
                                      " HTTPServer", " ", "123", "45",
                                      " \xC2\xBF", "Qu\xC3\xA9", "?", " a",
                                      "/b", "\n\n", " ", " x"}));
}

TEST(RegexTest, LiteralPatternsAndEmptyMatches) {
  const Regex literal = Regex::literal("a+", "test");
  EXPECT_EQ(matches(literal, "aa+a+"), (std::vector<std::string>{"a+", "a+"}));
  // An empty match advances by one character, never splitting UTF-8.
  const Regex empty = Regex::fromPattern("x*", "test");
  std::vector<Regex::Match> found;
  empty.findAll("\xC3\xA9x", found);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], (Regex::Match{0, 0}));
  EXPECT_EQ(found[1], (Regex::Match{2, 3}));
  EXPECT_EQ(found[2], (Regex::Match{3, 3}));
}

TEST(RegexTest, BadPatternIsReportedWithItsSource) {
  try {
    Regex::fromPattern("(unclosed", "tokenizer.json: Split pattern");
    FAIL() << "expected sol::Error";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json: Split pattern"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("(unclosed"), std::string::npos);
  }
}

} // namespace
} // namespace sol

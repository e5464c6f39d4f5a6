//===- BpeModelTest.cpp - BPE merging on small hand-made vocabularies -----===//
//
// Ids 0-255 are the bytes themselves (see makeTokenizerJson), so expected
// ids can be read off by hand: 'a' = 97, 'b' = 98, 'c' = 99, and the extra
// tokens count from 256.
//
//===----------------------------------------------------------------------===//

#include "TokenizerTestSupport.h"

#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sol::test {
namespace {

using Ids = std::vector<TokenId>;

TEST(BpeModelTest, LowestRankMergesFirst) {
  // ab = 256, bc = 257.
  const Tokenizer abFirst = Tokenizer::fromJson(
      makeTokenizerJson({"ab", "bc"}, {{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(abFirst.encode("abc"), (Ids{256, 99}));
  const Tokenizer bcFirst = Tokenizer::fromJson(
      makeTokenizerJson({"ab", "bc"}, {{"b", "c"}, {"a", "b"}}));
  EXPECT_EQ(bcFirst.encode("abc"), (Ids{97, 257}));
}

TEST(BpeModelTest, EqualRanksMergeLeftmostFirst) {
  // aa = 256: "aaa" -> (aa)(a), "aaaa" -> (aa)(aa); then aaaa = 257.
  const Tokenizer t = Tokenizer::fromJson(
      makeTokenizerJson({"aa", "aaaa"}, {{"a", "a"}, {"aa", "aa"}}));
  EXPECT_EQ(t.encode("aaa"), (Ids{256, 97}));
  EXPECT_EQ(t.encode("aaaa"), (Ids{257}));
  EXPECT_EQ(t.encode("aaaaa"), (Ids{257, 97}));
  EXPECT_EQ(t.encode("aaaaaa"), (Ids{257, 256}));
}

TEST(BpeModelTest, MergesChainThroughNewSymbols) {
  // ab = 256, abc = 257, abcd = 258.
  const Tokenizer t = Tokenizer::fromJson(makeTokenizerJson(
      {"ab", "abc", "abcd"}, {{"a", "b"}, {"ab", "c"}, {"abc", "d"}}));
  EXPECT_EQ(t.encode("abcd"), (Ids{258}));
  EXPECT_EQ(t.encode("xabcdabc"), (Ids{'x', 258, 257}));
}

TEST(BpeModelTest, IgnoreMergesEmitsWholeWordsFromTheVocabulary) {
  // "abc" = 258 is in the vocabulary but no merge builds it.
  const auto json = [](bool ignoreMerges) {
    return makeTokenizerJson({"ab", "bc", "abc"}, {{"b", "c"}, {"a", "b"}},
                             ignoreMerges);
  };
  EXPECT_EQ(Tokenizer::fromJson(json(false)).encode("abc"), (Ids{97, 257}));
  EXPECT_EQ(Tokenizer::fromJson(json(true)).encode("abc"), (Ids{258}));
  EXPECT_EQ(Tokenizer::fromJson(json(true)).encode("abcc"), (Ids{97, 257, 99}));
}

TEST(BpeModelTest, ArrayAndStringMergesAreTheSame) {
  nlohmann::json json = nlohmann::json::parse(
      makeTokenizerJson({"ab", "bc"}, {{"b", "c"}, {"a", "b"}}));
  json["model"]["merges"] = nlohmann::json::array(
      {nlohmann::json::array({"b", "c"}), nlohmann::json::array({"a", "b"})});
  EXPECT_EQ(Tokenizer::fromJson(json.dump()).encode("abc"), (Ids{97, 257}));
  // Legacy files may start with a "#version" line, which HF skips.
  json["model"]["merges"] =
      nlohmann::json::array({"#version: 0.2", "b c", "a b"});
  EXPECT_EQ(Tokenizer::fromJson(json.dump()).encode("abc"), (Ids{97, 257}));
}

TEST(BpeModelTest, BytesSpelledWithTheByteAlphabet) {
  // " a" is spelled "Ġa"; newline is "Ċ".
  const Tokenizer t = Tokenizer::fromJson(
      makeTokenizerJson({" a", "\n\n"}, {{" ", "a"}, {"\n", "\n"}}));
  EXPECT_EQ(t.encode(" a\n\n"), (Ids{256, 257}));
  EXPECT_EQ(t.idToToken(256), "\xC4\xA0"
                              "a");
  EXPECT_EQ(t.idToToken(257), "\xC4\x8A\xC4\x8A");
  EXPECT_EQ(t.decode(Ids{256, 257}), " a\n\n");
}

TEST(BpeModelTest, AddedTokenStripping) {
  // Hand-reasoned with HF's rules: lstrip takes the white space before the
  // token, rstrip the white space after it; single_word needs non-word
  // characters (or the text's ends) on both sides.
  const std::string added = R"([
    {"id": 300, "content": "<L>", "lstrip": true, "rstrip": false, "single_word": false, "normalized": false, "special": true},
    {"id": 301, "content": "<R>", "lstrip": false, "rstrip": true, "single_word": false, "normalized": false, "special": false},
    {"id": 302, "content": "<W>", "lstrip": false, "rstrip": false, "single_word": true, "normalized": false, "special": false}
  ])";
  std::string json = makeTokenizerJson({}, {}, false, "", added);
  const Tokenizer t = Tokenizer::fromJson(json);
  EXPECT_EQ(t.encode("a \t<L> b"), (Ids{'a', 300, ' ', 'b'}));
  EXPECT_EQ(t.encode("a <R> \n b"), (Ids{'a', ' ', 301, 'b'}));
  EXPECT_EQ(t.encode("a <W> b"), (Ids{'a', ' ', 302, ' ', 'b'}));
  EXPECT_EQ(t.encode("a<W>b"), (Ids{'a', '<', 'W', '>', 'b'}));
  EXPECT_EQ(t.encode(".<W>."), (Ids{'.', 302, '.'}));
  EXPECT_EQ(t.decode(Ids{'a', 300, 301}, true), "a<R>");
}

} // namespace
} // namespace sol::test

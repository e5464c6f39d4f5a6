//===- IncrementalDetokenizerTest.cpp - Streaming decode is exact ---------===//

#include "TokenizerTestSupport.h"

#include "runtime/tokenizer/IncrementalDetokenizer.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/support/Utf8.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <sstream>

namespace sol::test {
namespace {

using Ids = std::vector<TokenId>;

/// Streams `ids` and checks the property: every chunk is valid UTF-8 and the
/// chunks add up to decode(ids).
void expectStreamMatchesDecode(const Tokenizer &tokenizer, const Ids &ids,
                               bool skipSpecialTokens,
                               const std::string &label) {
  IncrementalDetokenizer stream(tokenizer, skipSpecialTokens);
  std::string text;
  for (TokenId id : ids) {
    const std::string chunk = stream.push(id);
    ASSERT_TRUE(utf8::isValid(chunk)) << label << ": chunk " << escaped(chunk);
    EXPECT_LE(stream.pendingBytes(), 3u);
    text += chunk;
  }
  const std::string last = stream.finish();
  ASSERT_TRUE(utf8::isValid(last)) << label;
  text += last;
  EXPECT_EQ(text, tokenizer.decode(ids, skipSpecialTokens))
      << label << " " << formatIds(ids);
}

std::vector<std::string> corpus() {
  std::vector<std::string> texts;
  std::istringstream lines(
      readTextFile(sourceDir() / "test" / "tokenizer" / "corpus.jsonl"));
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty())
      texts.push_back(nlohmann::json::parse(line).get<std::string>());
  return texts;
}

TEST(IncrementalDetokenizerTest, EmojiSplitAcrossTokensIsHeldBack) {
  const Tokenizer &llama = realTokenizer("llama3.1");
  // 😀 = F0 9F 98 80: Llama 3.1 spells it "ðŁĺ" (3 bytes) + "Ģ" (1 byte).
  const Ids ids = llama.encode("\xF0\x9F\x98\x80");
  ASSERT_EQ(ids.size(), 2u);
  IncrementalDetokenizer stream(llama);
  EXPECT_EQ(stream.push(ids[0]), "");
  EXPECT_EQ(stream.pendingBytes(), 3u);
  EXPECT_EQ(stream.push(ids[1]), "\xF0\x9F\x98\x80");
  EXPECT_EQ(stream.pendingBytes(), 0u);
  EXPECT_EQ(stream.finish(), "");
}

TEST(IncrementalDetokenizerTest, BrokenSequencesBecomeReplacementCharacters) {
  const Tokenizer &llama = realTokenizer("llama3.1");
  const TokenId e4 = *llama.tokenToId("\xC3\xA4"); // the byte E4 alone
  IncrementalDetokenizer stream(llama);
  EXPECT_EQ(stream.push(e4), "");
  // "Hello" proves E4 broken: U+FFFD, then the word.
  EXPECT_EQ(stream.push(9906), "\xEF\xBF\xBDHello");
  EXPECT_EQ(stream.push(e4), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD"); // truncated at the end
}

TEST(IncrementalDetokenizerTest, ChunksConcatenateToDecodeOnTheCorpus) {
  const std::vector<std::string> texts = corpus();
  ASSERT_GT(texts.size(), 1000u);
  for (const char *family : {"qwen3", "llama3.1"}) {
    const Tokenizer &tokenizer = realTokenizer(family);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const Ids ids = tokenizer.encode(texts[i], true);
      const std::string label =
          std::string(family) + " case " + std::to_string(i + 1);
      expectStreamMatchesDecode(tokenizer, ids, false, label);
      expectStreamMatchesDecode(tokenizer, ids, true, label);
    }
  }
}

TEST(IncrementalDetokenizerTest, ChunksConcatenateToDecodeOnRandomIds) {
  // Random ids make many broken and split characters.
  std::mt19937 random(7);
  for (const char *family : {"qwen3", "llama3.1"}) {
    const Tokenizer &tokenizer = realTokenizer(family);
    for (int n = 0; n < 2000; ++n) {
      Ids ids(1 + random() % 12);
      for (TokenId &id : ids)
        id = static_cast<TokenId>(random() % tokenizer.size());
      expectStreamMatchesDecode(tokenizer, ids, n % 2 == 0,
                                std::string(family) + " random");
    }
  }
}

TEST(IncrementalDetokenizerTest, CjkAndEmojiTextStreamsExactly) {
  const std::string text =
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C "
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7"
      " "
      "\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD "
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4";
  for (const char *family : {"qwen3", "llama3.1"}) {
    const Tokenizer &tokenizer = realTokenizer(family);
    const Ids ids = tokenizer.encode(text);
    expectStreamMatchesDecode(tokenizer, ids, false, family);
    EXPECT_EQ(tokenizer.decode(ids), text) << family;
  }
}

} // namespace
} // namespace sol::test

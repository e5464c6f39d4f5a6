//===- TokenizerTest.cpp - sol::Tokenizer on the real tokenizers ----------===//
//
// Hand-verified facts about Qwen3, Llama 3.1 and gpt-oss (ids looked up in the
// vocabularies of the fetched test tokenizers), plus behaviour that the goldens
// cannot show: invalid UTF-8, very long inputs, threads, error messages.
//
//===----------------------------------------------------------------------===//

#include "TokenizerTestSupport.h"

#include "runtime/support/Error.h"
#include "runtime/support/Utf8.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

namespace sol::test {
namespace {

using Ids = std::vector<TokenId>;

const Tokenizer &qwen() { return realTokenizer("qwen3"); }
const Tokenizer &llama() { return realTokenizer("llama3.1"); }
const Tokenizer &gptOss() { return realTokenizer("gptoss"); }

/// Expects `f` to throw sol::Error whose message contains every `parts`.
template <typename F>
void expectError(F &&f, std::initializer_list<std::string_view> parts) {
  try {
    f();
    ADD_FAILURE() << "expected sol::Error";
  } catch (const Error &e) {
    for (std::string_view part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << part << "\"";
  }
}

TEST(TokenizerTest, HelloWorld) {
  // "Hello" and "Ġworld" (Ġ = space) in each vocabulary.
  EXPECT_EQ(llama().encode("Hello world"), (Ids{9906, 1917}));
  EXPECT_EQ(llama().encode("Hello world", true), (Ids{128000, 9906, 1917}));
  EXPECT_EQ(qwen().encode("Hello world"), (Ids{9707, 1879}));
  EXPECT_EQ(qwen().encode("Hello world", true), (Ids{9707, 1879}));
  EXPECT_EQ(llama().decode(Ids{128000, 9906, 1917}),
            "<|begin_of_text|>Hello world");
  EXPECT_EQ(llama().decode(Ids{128000, 9906, 1917}, true), "Hello world");
}

TEST(TokenizerTest, VocabularyLookups) {
  EXPECT_EQ(llama().idToToken(9906), "Hello");
  EXPECT_EQ(llama().idToToken(1917), "\xC4\xA0world"); // "Ġworld"
  EXPECT_EQ(llama().tokenToId("\xC4\xA0world"), 1917u);
  EXPECT_EQ(llama().tokenToId("<|eot_id|>"), 128009u);
  EXPECT_EQ(llama().idToToken(128009), "<|eot_id|>");
  EXPECT_EQ(qwen().tokenToId("<|im_end|>"), 151645u);
  EXPECT_EQ(qwen().tokenToId("<think>"), 151667u);
  EXPECT_EQ(qwen().tokenToId("no such token"), std::nullopt);
  EXPECT_EQ(qwen().idToToken(99999999), std::nullopt);
  EXPECT_EQ(llama().tokenBytes(1917), " world");
  EXPECT_EQ(llama().tokenBytes(198), "\n"); // "Ċ"

  EXPECT_EQ(llama().vocabSize(), 128000u);
  EXPECT_EQ(llama().size(), 128256u);
  EXPECT_EQ(qwen().vocabSize(), 151643u);
  EXPECT_EQ(qwen().size(), 151669u);

  EXPECT_TRUE(qwen().isSpecial(151645));  // <|im_end|>
  EXPECT_FALSE(qwen().isSpecial(151667)); // <think> is added, not special
  EXPECT_TRUE(qwen().isAdded(151667));
  EXPECT_FALSE(qwen().isAdded(9707));
}

TEST(TokenizerTest, BosAndEosFromTokenizerConfig) {
  EXPECT_EQ(llama().bosToken(), "<|begin_of_text|>");
  EXPECT_EQ(llama().bosTokenId(), 128000u);
  EXPECT_EQ(llama().eosToken(), "<|eot_id|>");
  EXPECT_EQ(llama().eosTokenId(), 128009u);
  EXPECT_EQ(llama().specialPrefix(), (Ids{128000}));
  EXPECT_TRUE(llama().specialSuffix().empty());
  EXPECT_EQ(llama().configAddBosToken(), std::nullopt);

  EXPECT_EQ(qwen().bosToken(), std::nullopt);
  EXPECT_EQ(qwen().bosTokenId(), std::nullopt);
  EXPECT_EQ(qwen().eosTokenId(), 151645u);
  EXPECT_TRUE(qwen().specialPrefix().empty());
  EXPECT_EQ(qwen().configAddBosToken(), false);
}

TEST(TokenizerTest, SpecialTokensInsideText) {
  // <|im_start|> user Ċ Hi <|im_end|>
  const Ids chat{151644, 872, 198, 13048, 151645};
  EXPECT_EQ(qwen().encode("<|im_start|>user\nHi<|im_end|>"), chat);
  EXPECT_EQ(qwen().decode(chat), "<|im_start|>user\nHi<|im_end|>");
  EXPECT_EQ(qwen().decode(chat, true), "user\nHi");
  // <think> is not special: skipSpecialTokens keeps it.
  EXPECT_EQ(qwen().decode(Ids{151667, 13048, 151668}, true),
            "<think>Hi</think>");

  // <|start_header_id|> user <|end_header_id|> ĊĊ Hello <|eot_id|>
  EXPECT_EQ(llama().encode(
                "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"),
            (Ids{128006, 882, 128007, 271, 9906, 128009}));
}

TEST(TokenizerTest, GptOssHarmony) {
  // o200k: "Hello", "Ġworld"; its post-processor adds no BOS although the
  // config names one.
  EXPECT_EQ(gptOss().encode("Hello world"), (Ids{13225, 2375}));
  EXPECT_EQ(gptOss().encode("Hello world", true), (Ids{13225, 2375}));
  EXPECT_TRUE(gptOss().specialPrefix().empty());
  EXPECT_EQ(gptOss().bosTokenId(), 199998u); // <|startoftext|>
  EXPECT_EQ(gptOss().eosTokenId(), 200002u); // <|return|>
  // The harmony format's markers are single special ids (tokenizer.json's
  // added tokens): <|start|> 200006, <|channel|> 200005, <|message|>
  // 200008, <|end|> 200007, <|call|> 200012.
  const std::string text =
      "<|start|>assistant<|channel|>final<|message|>Hi<|end|>";
  const Ids ids = gptOss().encode(text);
  ASSERT_GE(ids.size(), 7u);
  EXPECT_EQ(ids.front(), 200006u);
  EXPECT_EQ(ids.back(), 200007u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 200005u), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 200008u), 1);
  EXPECT_EQ(gptOss().decode(ids), text);
  EXPECT_EQ(gptOss().decode(ids, true), "assistantfinalHi");
  EXPECT_EQ(gptOss().tokenToId("<|call|>"), 200012u);
  // Its pre-tokenizer (letter-case classes, numbers of up to three digits,
  // no Llama-style contractions): text round-trips.
  for (const char *t :
       {"x = [1, 22, 333, 4444]", "I'm HTTPServer's\r\n",
        "\xE4\xB8\xAD\xE6\x96\x87 caf\xC3\xA9 \xF0\x9F\x98\x80"})
    EXPECT_EQ(gptOss().decode(gptOss().encode(t)), t) << t;
}

TEST(TokenizerTest, OtherFamiliesSpecialStringsArePlainText) {
  for (const char *text :
       {"<|eot_id|>", "<|im_start", "<|im_end| >", "<think"}) {
    const Ids ids = qwen().encode(text);
    EXPECT_GT(ids.size(), 1u) << text;
    for (TokenId id : ids)
      EXPECT_FALSE(qwen().isAdded(id)) << text;
    EXPECT_EQ(qwen().decode(ids), text);
  }
  const Ids ids = llama().encode("<|im_start|>");
  EXPECT_GT(ids.size(), 1u);
  EXPECT_EQ(llama().decode(ids), "<|im_start|>");
}

TEST(TokenizerTest, EmptyText) {
  EXPECT_EQ(qwen().encode(""), Ids{});
  EXPECT_EQ(qwen().encode("", true), Ids{});
  EXPECT_EQ(llama().encode(""), Ids{});
  EXPECT_EQ(llama().encode("", true), (Ids{128000}));
  EXPECT_EQ(llama().decode(Ids{}), "");
}

TEST(TokenizerTest, InvalidUtf8IsReplacedBeforeEncoding) {
  const std::string r(utf8::kReplacementCharacter);
  const std::pair<std::string, std::string> cases[] = {
      {"a\xFF"
       "b",
       "a" + r + "b"},
      {"\xE4\xB8", r},
      {"caf\xC3", "caf" + r},
      {"\xED\xA0\x80 x", r + r + r + " x"},
      {"<|im_end|>\x80", "<|im_end|>" + r},
  };
  for (const Tokenizer *tokenizer : {&qwen(), &llama()})
    for (const auto &[bytes, text] : cases) {
      EXPECT_EQ(tokenizer->encode(bytes), tokenizer->encode(text))
          << escaped(bytes);
      EXPECT_EQ(tokenizer->decode(tokenizer->encode(bytes)), text)
          << escaped(bytes);
    }
}

TEST(TokenizerTest, DecodeRepairsPartialCharacters) {
  // "ä" is the byte 0xE4 alone, the first byte of 中 (E4 B8 AD).
  const std::optional<TokenId> e4 = llama().tokenToId("\xC3\xA4");
  ASSERT_TRUE(e4);
  EXPECT_EQ(llama().decode(Ids{*e4}), "\xEF\xBF\xBD");
  const Ids zhong = llama().encode("\xE4\xB8\xAD");
  EXPECT_EQ(llama().decode(zhong), "\xE4\xB8\xAD");
  // Ids outside the vocabulary are skipped, as HF does.
  EXPECT_EQ(llama().decode(Ids{9906, 4000000, 1917}), "Hello world");
}

TEST(TokenizerTest, RoundTripOfRandomBytes) {
  // Llama 3.1 has no normalizer: decode(encode(x)) is x after UTF-8 repair.
  std::mt19937 random(123);
  for (int n = 0; n < 300; ++n) {
    std::string bytes(random() % 40, '\0');
    for (char &c : bytes)
      c = static_cast<char>(random() % 4 == 0 ? random() % 256
                                              : 32 + random() % 95);
    EXPECT_EQ(llama().decode(llama().encode(bytes)), utf8::repair(bytes))
        << escaped(bytes);
  }
}

TEST(TokenizerTest, MegabyteInputsComplete) {
  std::string prose;
  while (prose.size() < 1'000'000)
    prose +=
        "The quick brown fox, 1234567 jumps over the lazy dog's \xE4\xBD\xA0"
        "\xE5\xA5\xBD tail!\n";
  for (const Tokenizer *tokenizer : {&qwen(), &llama()}) {
    for (const std::string &text :
         {prose, std::string(1'000'000, ' '), std::string(1'000'000, '9'),
          std::string(300'000, 'x')}) {
      const Ids ids = tokenizer->encode(text);
      EXPECT_LT(ids.size(), text.size() + 1);
      EXPECT_EQ(tokenizer->decode(ids), text);
    }
  }
}

TEST(TokenizerTest, ConcurrentEncodingGivesTheSameIds) {
  const std::string text =
      readTextFile(sourceDir() / "test" / "tokenizer" / "corpus.jsonl");
  const Ids expected = qwen().encode(text);
  std::vector<Ids> results(4);
  std::vector<std::thread> threads;
  for (Ids &result : results)
    threads.emplace_back([&] { result = qwen().encode(text); });
  for (std::thread &thread : threads)
    thread.join();
  for (const Ids &result : results)
    EXPECT_EQ(result, expected);
}

TEST(TokenizerTest, LoadErrorsNameTheProblem) {
  expectError([] { Tokenizer::fromJson("{not json", "", "x/tokenizer.json"); },
              {"x/tokenizer.json", "not valid JSON"});
  expectError([] { Tokenizer::fromJson("{}", "", "t.json"); },
              {"t.json", "\"model\""});
  expectError(
      [] {
        std::string json = makeTokenizerJson({}, {});
        json.replace(json.find("\"merges\":[]"), 11, "\"merges\":{}");
        Tokenizer::fromJson(json);
      },
      {"model.merges must be an array"});
  expectError(
      [] {
        std::string json = makeTokenizerJson({}, {});
        json.replace(json.find("\"normalizer\":null"), 17,
                     "\"normalizer\":{\"type\":\"Lowercase\"}");
        Tokenizer::fromJson(json);
      },
      {"normalizer type \"Lowercase\" is not supported"});
  expectError(
      [] {
        Tokenizer::fromJson(makeTokenizerJson({}, {{"a", "b"}}));
      },
      {"merge 1", "\"ab\"", "not in the vocabulary"});
  expectError(
      [] {
        Tokenizer::fromJson(makeTokenizerJson({}, {}),
                            R"({"eos_token": "<nope>"})");
      },
      {"tokenizer_config.json", "eos_token \"<nope>\""});
  expectError(
      [] {
        std::string json = makeTokenizerJson({}, {});
        json.replace(json.find("\"a\":97"), 6, "\"a\":4000000000");
        Tokenizer::fromJson(json);
      },
      {"vocabulary entry \"a\" has id 4000000000", "larger than Sol accepts"});
  expectError([] { Tokenizer::fromDirectory("/nonexistent/dir"); },
              {"/nonexistent/dir", "no tokenizer.json"});
  expectError(
      [] {
        std::string json = makeTokenizerJson({"ab"}, {{"a", "b"}});
        const std::size_t merge = json.find("\"a b\"");
        json.replace(merge, 5, "\"a b c\"");
        Tokenizer::fromJson(json);
      },
      {"merges entry 1", "one space"});
}

} // namespace
} // namespace sol::test

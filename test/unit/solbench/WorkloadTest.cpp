//===- WorkloadTest.cpp - Synthetic prompts and dataset validation --------===//
#include "tools/solbench/Workload.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "test/unit/TestTokenizers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace sol::bench;

namespace {

std::string writeTemp(const std::string &name, const std::string &text) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() /
      (name + "-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(p) << text;
  return p.string();
}

std::string datasetError(const std::string &text,
                         Endpoint endpoint = Endpoint::Completions,
                         std::optional<LengthRange> out = std::nullopt) {
  const std::string path = writeTemp("solbench-bad", text);
  std::string what = "no error";
  try {
    Workload::dataset(path, endpoint, out, nullptr, 0);
  } catch (const sol::Error &e) {
    what = e.what();
    // Messages start with the file's path; keep the rest.
    if (what.rfind(path, 0) == 0)
      what = "FILE" + what.substr(path.size());
  }
  std::filesystem::remove(path);
  return what;
}

} // namespace

TEST(Workload, LengthRanges) {
  EXPECT_EQ(parseLengthRange("--input-len", "32").lo, 32);
  const LengthRange r = parseLengthRange("--random-input-len", "4:9");
  EXPECT_EQ(r.lo, 4);
  EXPECT_EQ(r.hi, 9);
  auto errorOf = [](const std::string &text) {
    try {
      parseLengthRange("--random-output-len", text);
    } catch (const sol::Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(errorOf("9:4"), "--random-output-len: the range '9:4' is empty "
                            "(expected A:B with A <= B)");
  EXPECT_EQ(errorOf("0"), "--random-output-len: '0' is not a positive integer");
  EXPECT_EQ(errorOf("x:4"),
            "--random-output-len: 'x' is not a positive integer");
}

TEST(Workload, IdRangeForVocab) {
  EXPECT_EQ(idRangeForVocab(2048).lo, 512);
  EXPECT_EQ(idRangeForVocab(2048).hi, 1536);
  EXPECT_EQ(idRangeForVocab(128256).lo, 1000);
  EXPECT_EQ(idRangeForVocab(128256).hi, 127256);
  EXPECT_THROW(idRangeForVocab(1), sol::Error);
}

TEST(Workload, SyntheticTokenIds) {
  const Workload w = Workload::synthetic(Endpoint::Completions, {5, 9}, {3, 3},
                                         {100, 200}, nullptr, 7);
  const std::vector<Prompt> a = w.prompts(0, 50);
  ASSERT_EQ(a.size(), 50u);
  bool sawShort = false, sawLong = false;
  for (const Prompt &p : a) {
    EXPECT_GE(p.ids.size(), 5u);
    EXPECT_LE(p.ids.size(), 9u);
    sawShort |= p.ids.size() == 5;
    sawLong |= p.ids.size() == 9;
    EXPECT_EQ(p.promptTokens, static_cast<int64_t>(p.ids.size()));
    EXPECT_EQ(p.maxTokens, 3);
    for (int32_t id : p.ids) {
      EXPECT_GE(id, 100);
      EXPECT_LT(id, 200);
    }
  }
  EXPECT_TRUE(sawShort && sawLong);
  // The same seed and level give the same prompts; another level others.
  const std::vector<Prompt> again = w.prompts(0, 50);
  const std::vector<Prompt> next = w.prompts(1, 50);
  bool allSame = true, allSameNext = true;
  for (size_t i = 0; i < a.size(); ++i) {
    allSame &= a[i].ids == again[i].ids;
    allSameNext &= a[i].ids == next[i].ids;
  }
  EXPECT_TRUE(allSame);
  EXPECT_FALSE(allSameNext);
}

TEST(Workload, SyntheticChatWords) {
  const Workload w =
      Workload::synthetic(Endpoint::Chat, {12, 12}, {4, 4}, {}, nullptr, 0);
  const Prompt p = w.prompts(0, 1)[0];
  ASSERT_TRUE(p.messages.is_array());
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0]["role"], "user");
  const std::string text = p.messages[0]["content"].get<std::string>();
  EXPECT_EQ(std::count(text.begin(), text.end(), ' '), 11);
  EXPECT_EQ(p.promptTokens, 12);
}

TEST(Workload, SyntheticChatTextOfExactTokenLength) {
  const sol::Tokenizer tok =
      sol::Tokenizer::fromDirectory(sol::test::testTokenizerDir("qwen3"));
  const Workload w = Workload::synthetic(Endpoint::Chat, {40, 40}, {4, 4},
                                         {1000, 20000}, &tok, 3);
  int exact = 0;
  for (const Prompt &p : w.prompts(0, 20)) {
    const std::string text = p.messages[0]["content"].get<std::string>();
    const size_t n = tok.encode(text).size();
    EXPECT_EQ(static_cast<int64_t>(n), p.promptTokens);
    exact += n == 40;
  }
  // Re-encoding random tokens rarely round-trips at once; the adjustment
  // loop must land on the length nearly always.
  EXPECT_GE(exact, 18);
}

TEST(Workload, Dataset) {
  const std::string path = writeTemp(
      "solbench-good",
      "{\"prompt\": \"Hello there\", \"max_tokens\": 5}\n"
      "\n"
      "{\"prompt\": [1, 2, 3], \"max_tokens\": 2, \"id\": \"extra\"}\n");
  const Workload w =
      Workload::dataset(path, Endpoint::Completions, std::nullopt, nullptr, 0);
  ASSERT_EQ(w.datasetSize(), 2u);
  const std::vector<Prompt> p = w.prompts(0, 5); // wraps around
  EXPECT_EQ(p[0].text, "Hello there");
  EXPECT_EQ(p[0].maxTokens, 5);
  EXPECT_EQ(p[1].ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(p[1].promptTokens, 3);
  EXPECT_EQ(p[4].maxTokens, 5);
  // --output-len replaces max_tokens.
  const Workload o = Workload::dataset(path, Endpoint::Completions,
                                       LengthRange{9, 9}, nullptr, 0);
  EXPECT_EQ(o.prompts(0, 1)[0].maxTokens, 9);
  // For chat, a text prompt becomes a user message.
  const std::string chatPath = writeTemp(
      "solbench-chat",
      "{\"prompt\": \"Hi\", \"max_tokens\": 5}\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
      "{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 3}\n");
  const Workload c =
      Workload::dataset(chatPath, Endpoint::Chat, std::nullopt, nullptr, 0);
  const std::vector<Prompt> cp = c.prompts(0, 2);
  EXPECT_EQ(cp[0].messages.dump(), R"([{"content":"Hi","role":"user"}])");
  EXPECT_EQ(cp[1].messages.size(), 2u);
  std::filesystem::remove(path);
  std::filesystem::remove(chatPath);
}

TEST(Workload, DatasetErrorsNameTheLine) {
  const std::string ok = "{\"prompt\": \"a\", \"max_tokens\": 1}\n";
  EXPECT_EQ(datasetError(ok + "{\"prompt\": \"a\", \"max_tokens\": 1\n"),
            "FILE:2: not valid JSON: column 32: syntax error while parsing "
            "object - unexpected end of input; expected '}'");
  EXPECT_EQ(datasetError(ok + ok + "[1, 2]\n"),
            "FILE:3: expected a JSON object {\"prompt\": ..., \"max_tokens\": "
            "N} or {\"messages\": [...], \"max_tokens\": N}, got array");
  EXPECT_EQ(datasetError("{\"max_tokens\": 1}\n"),
            "FILE:1: has neither \"prompt\" nor \"messages\"");
  EXPECT_EQ(datasetError("{\"prompt\": \"a\", \"messages\": [], "
                         "\"max_tokens\": 1}\n",
                         Endpoint::Chat),
            "FILE:1: has both \"prompt\" and \"messages\"; give one");
  EXPECT_EQ(datasetError("{\"prompt\": \"\", \"max_tokens\": 1}\n"),
            "FILE:1: \"prompt\" is empty");
  EXPECT_EQ(datasetError("{\"prompt\": 5, \"max_tokens\": 1}\n"),
            "FILE:1: \"prompt\" must be a string or an array of token ids, "
            "got number");
  EXPECT_EQ(datasetError("{\"prompt\": [1, -2], \"max_tokens\": 1}\n"),
            "FILE:1: \"prompt\"[1] is not a token id (a non-negative "
            "integer): -2");
  EXPECT_EQ(
      datasetError("{\"prompt\": [1], \"max_tokens\": 1}\n", Endpoint::Chat),
      "FILE:1: a \"prompt\" of token ids needs --endpoint completions "
      "(chat takes text)");
  EXPECT_EQ(datasetError("{\"messages\": [{\"role\": \"user\", \"content\": "
                         "\"a\"}], \"max_tokens\": 1}\n"),
            "FILE:1: \"messages\" needs --endpoint chat (completions takes "
            "\"prompt\")");
  EXPECT_EQ(datasetError("{\"messages\": [{\"content\": \"a\"}], "
                         "\"max_tokens\": 1}\n",
                         Endpoint::Chat),
            "FILE:1: \"messages\"[0] has no \"role\" string");
  EXPECT_EQ(datasetError("{\"messages\": [{\"role\": \"user\"}], "
                         "\"max_tokens\": 1}\n",
                         Endpoint::Chat),
            "FILE:1: \"messages\"[0] has no \"content\" (a string or an "
            "array of parts)");
  EXPECT_EQ(
      datasetError("{\"messages\": {}, \"max_tokens\": 1}\n", Endpoint::Chat),
      "FILE:1: \"messages\" must be a non-empty array of {\"role\": "
      "..., \"content\": ...}");
  EXPECT_EQ(datasetError("{\"prompt\": \"a\", \"max_tokens\": 0}\n"),
            "FILE:1: \"max_tokens\" must be a positive integer, got 0");
  EXPECT_EQ(datasetError("{\"prompt\": \"a\", \"max_tokens\": \"5\"}\n"),
            "FILE:1: \"max_tokens\" must be a positive integer, got \"5\"");
  EXPECT_EQ(datasetError("{\"prompt\": \"a\"}\n"),
            "FILE:1: no \"max_tokens\" (give it on every line, or "
            "--output-len for all)");
  EXPECT_EQ(datasetError("{\"prompt\": \"a\"}\n", Endpoint::Completions,
                         LengthRange{4, 4}),
            "no error");
  EXPECT_NE(datasetError("\n  \n").find("holds no requests"),
            std::string::npos);
  EXPECT_THROW(Workload::dataset("/nonexistent/file.jsonl",
                                 Endpoint::Completions, std::nullopt, nullptr,
                                 0),
               sol::Error);
}

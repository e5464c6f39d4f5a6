//===- ChatGoldenTest.cpp - Sol vs. Transformers on real templates --------===//
//
// test/chat/goldens/<family>.jsonl holds what Hugging Face Transformers'
// apply_chat_template(..., tokenize=False) produced for every request of
// test/chat/conversations.jsonl (scripts/make-chat-goldens.py writes them on
// a machine with transformers installed). Sol must produce the same bytes,
// and must fail where Transformers raised.
//
// SOL_CHAT_GOLDENS_DIR overrides the goldens folder (for trying goldens
// made elsewhere).
//
//===----------------------------------------------------------------------===//

#include "runtime/chat/ChatTemplate.h"
#include "runtime/support/Error.h"
#include "test/unit/TestTokenizers.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string sourceDir() {
  const char *dir = std::getenv("SOL_SOURCE_DIR");
  return dir ? dir : ".";
}

std::string goldensDir() {
  const char *dir = std::getenv("SOL_CHAT_GOLDENS_DIR");
  return dir ? dir : sourceDir() + "/test/chat/goldens";
}

std::vector<nlohmann::ordered_json> readJsonLines(const std::string &path) {
  std::ifstream in(path);
  std::vector<nlohmann::ordered_json> lines;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty())
      lines.push_back(nlohmann::ordered_json::parse(line));
  return lines;
}

/// Where two texts first differ, shown with some context.
std::string describeDifference(const std::string &expected,
                               const std::string &actual) {
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i])
    ++i;
  size_t from = i > 40 ? i - 40 : 0;
  auto escape = [](std::string s) {
    return nlohmann::json(std::move(s)).dump();
  };
  return "first difference at byte " + std::to_string(i) +
         "\n  expected: " + escape(expected.substr(from, 120)) +
         "\n  actual:   " + escape(actual.substr(from, 120));
}

class ChatGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatGoldenTest, MatchesTransformers) {
  const std::string family = GetParam();
  const std::string goldenPath = goldensDir() + "/" + family + ".jsonl";
  std::ifstream probe(goldenPath);
  ASSERT_TRUE(probe.good())
      << "missing golden file " << goldenPath
      << ": generate it on a machine with Python transformers installed:\n"
         "  scripts/make-chat-goldens.py --tokenizers third_party/tokenizers "
         "--conversations test/chat/conversations.jsonl --out "
         "test/chat/goldens";

  const std::string configPath =
      (sol::test::testTokenizerDir(family) / "tokenizer_config.json").string();
  sol::ChatTemplate chat =
      sol::ChatTemplate::fromTokenizerConfigFile(configPath);

  auto goldens = readJsonLines(goldenPath);
  auto conversations =
      readJsonLines(sourceDir() + "/test/chat/conversations.jsonl");
  ASSERT_EQ(goldens.size(), conversations.size())
      << goldenPath << " is stale: regenerate it from "
      << "test/chat/conversations.jsonl";

  int rendered = 0, errors = 0;
  for (size_t i = 0; i < goldens.size(); ++i) {
    const auto &golden = goldens[i];
    std::string name = golden.value("name", "line " + std::to_string(i + 1));
    SCOPED_TRACE(family + " / " + name);
    ASSERT_EQ(golden["request"], conversations[i]["request"])
        << goldenPath << " is stale: request differs from conversations.jsonl";
    if (golden.contains("error")) {
      ++errors;
      EXPECT_THROW(chat.render(golden["request"]), sol::Error)
          << "Transformers raised: " << golden["error"].get<std::string>();
      continue;
    }
    ++rendered;
    std::string expected = golden["rendered"].get<std::string>();
    std::string actual;
    try {
      actual = chat.render(golden["request"]);
    } catch (const sol::Error &e) {
      ADD_FAILURE() << "Sol failed where Transformers rendered: " << e.what();
      continue;
    }
    EXPECT_EQ(expected, actual) << describeDifference(expected, actual);
  }
  EXPECT_GT(rendered, 0);
  std::cout << family << ": " << rendered << " renders and " << errors
            << " expected errors compared\n";
}

INSTANTIATE_TEST_SUITE_P(RealTemplates, ChatGoldenTest,
                         ::testing::Values("qwen3", "llama3.1"),
                         [](const auto &info) {
                           std::string name = info.param;
                           for (char &c : name)
                             if (c == '.')
                               c = '_';
                           return name;
                         });

} // namespace

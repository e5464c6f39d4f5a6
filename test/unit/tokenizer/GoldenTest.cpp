//===- GoldenTest.cpp - Sol's tokenizer against Hugging Face goldens ------===//
//
// test/tokenizer/goldens/<family>*.jsonl are written by
// scripts/make-tokenizer-goldens.py with transformers 5.17 / tokenizers 0.23
// from test/tokenizer/corpus.jsonl. Every case must match exactly.
//
//===----------------------------------------------------------------------===//

#include "TokenizerTestSupport.h"

#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace sol::test {
namespace {

constexpr int kReportedFailures = 10;

std::filesystem::path goldenPath(const std::string &name) {
  return sourceDir() / "test" / "tokenizer" / "goldens" / name;
}

/// The JSON objects of a golden file, one a line. Fails the test, naming the
/// command that makes the file, when it is missing.
std::vector<nlohmann::json> readGoldens(const std::string &name) {
  const std::filesystem::path path = goldenPath(name);
  std::vector<nlohmann::json> records;
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << "golden file " << path.string()
                  << " is missing. Generate it (needs Python transformers and "
                     "tokenizers) with:\n  scripts/make-tokenizer-goldens.py "
                     "--tokenizers third_party/tokenizers --corpus "
                     "test/tokenizer/corpus.jsonl --out test/tokenizer/goldens";
    return records;
  }
  std::istringstream lines(readTextFile(path));
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty())
      records.push_back(nlohmann::json::parse(line));
  EXPECT_FALSE(records.empty()) << path.string() << " has no cases";
  return records;
}

std::vector<TokenId> idsOf(const nlohmann::json &value) {
  return value.get<std::vector<TokenId>>();
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, EncodeAndDecodeMatchTransformers) {
  const Tokenizer &tokenizer = realTokenizer(GetParam());
  const std::vector<nlohmann::json> cases = readGoldens(GetParam() + ".jsonl");
  int failures = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json &c = cases[i];
    const std::string text = c["text"].get<std::string>();
    const std::vector<TokenId> ids = tokenizer.encode(text, false);
    const std::vector<TokenId> idsSpecial = tokenizer.encode(text, true);
    const std::vector<TokenId> expected = idsOf(c["ids"]);
    const std::vector<TokenId> expectedSpecial = idsOf(c["ids_special"]);
    // Decode the expected ids so a decode bug is not hidden by an encode one.
    const std::string decoded = tokenizer.decode(expected, false);
    const std::string decodedSkip = tokenizer.decode(expectedSpecial, true);
    const bool ok = ids == expected && idsSpecial == expectedSpecial &&
                    decoded == c["decoded"].get<std::string>() &&
                    decodedSkip == c["decoded_skip"].get<std::string>();
    if (!ok && ++failures <= kReportedFailures) {
      ADD_FAILURE() << GetParam() << " case " << i + 1 << " \""
                    << escaped(text.substr(0, 200)) << "\"\n"
                    << "  ids       " << formatIds(ids) << "\n"
                    << "  expected  " << formatIds(expected) << "\n"
                    << "  ids+special " << formatIds(idsSpecial) << " expected "
                    << formatIds(expectedSpecial) << "\n"
                    << "  decoded   \"" << escaped(decoded) << "\"\n"
                    << "  expected  \""
                    << escaped(c["decoded"].get<std::string>())
                    << "\"\n  decoded(skip) \"" << escaped(decodedSkip)
                    << "\" expected \""
                    << escaped(c["decoded_skip"].get<std::string>()) << "\"";
    }
  }
  EXPECT_EQ(failures, 0) << failures << " of " << cases.size()
                         << " golden cases differ";
}

TEST_P(GoldenTest, GoldensCoverTheCurrentCorpus) {
  // A corpus edited without regenerating the goldens would leave new cases
  // untested; say so instead.
  const std::vector<nlohmann::json> cases = readGoldens(GetParam() + ".jsonl");
  std::istringstream lines(
      readTextFile(sourceDir() / "test" / "tokenizer" / "corpus.jsonl"));
  std::vector<std::string> corpus;
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty())
      corpus.push_back(nlohmann::json::parse(line).get<std::string>());
  std::vector<std::string> golden;
  for (const nlohmann::json &c : cases)
    golden.push_back(c["text"].get<std::string>());
  EXPECT_TRUE(golden == corpus)
      << "test/tokenizer/goldens/" << GetParam()
      << ".jsonl does not hold the cases of test/tokenizer/corpus.jsonl ("
      << golden.size() << " vs " << corpus.size()
      << " cases): regenerate it with scripts/make-tokenizer-goldens.py";
}

TEST_P(GoldenTest, DecodeOfArbitraryIdSequencesMatchesTransformers) {
  const Tokenizer &tokenizer = realTokenizer(GetParam());
  const std::vector<nlohmann::json> cases =
      readGoldens(GetParam() + ".decode.jsonl");
  int failures = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::vector<TokenId> ids = idsOf(cases[i]["ids"]);
    const std::string decoded = tokenizer.decode(ids, false);
    const std::string decodedSkip = tokenizer.decode(ids, true);
    const std::string expected = cases[i]["decoded"].get<std::string>();
    const std::string expectedSkip =
        cases[i]["decoded_skip"].get<std::string>();
    if ((decoded != expected || decodedSkip != expectedSkip) &&
        ++failures <= kReportedFailures)
      ADD_FAILURE() << GetParam() << " decode case " << i + 1 << " "
                    << formatIds(ids) << "\n  got      \"" << escaped(decoded)
                    << "\" / \"" << escaped(decodedSkip) << "\"\n  expected \""
                    << escaped(expected) << "\" / \"" << escaped(expectedSkip)
                    << "\"";
  }
  EXPECT_EQ(failures, 0) << failures << " of " << cases.size()
                         << " decode cases differ";
}

// The extra added tokens of ADDED_TOKENS in scripts/make-tokenizer-goldens.py,
// appended in this order with ids following the last id of tokenizer.json.
nlohmann::json extraAddedTokens() {
  struct Flags {
    const char *content;
    bool lstrip, rstrip, singleWord, normalized;
  };
  const Flags flags[] = {
      {"<L>", true, false, false, false},
      {"<R>", false, true, false, false},
      {"<LR>", true, true, false, false},
      {"<W>", false, false, true, false},
      {"wordy", false, false, true, false},
      {"<WLR>", true, true, true, false},
      {"cafe\xCC\x81", false, false, false, true},
      {"\xE2\x84\xAB"
       "x",
       false, false, false, false},
      {"<NL>", true, true, false, true},
      {" spaced ", false, false, false, false},
  };
  nlohmann::json tokens = nlohmann::json::array();
  for (const Flags &f : flags)
    tokens.push_back({{"content", f.content},
                      {"lstrip", f.lstrip},
                      {"rstrip", f.rstrip},
                      {"single_word", f.singleWord},
                      {"normalized", f.normalized},
                      {"special", false}});
  return tokens;
}

TEST_P(GoldenTest, AddedTokenFlagsMatchTokenizersLibrary) {
  const std::vector<nlohmann::json> cases =
      readGoldens(GetParam() + ".added.jsonl");
  if (cases.empty())
    return;
  nlohmann::json config = nlohmann::json::parse(
      readTextFile(tokenizerDir(GetParam()) / "tokenizer.json"));
  TokenId nextId = 0;
  for (const nlohmann::json &token : config["added_tokens"])
    nextId = std::max(nextId, token["id"].get<TokenId>() + 1);
  for (const auto &[spelling, id] : config["model"]["vocab"].items())
    nextId = std::max(nextId, id.get<TokenId>() + 1);
  for (nlohmann::json token : extraAddedTokens()) {
    token["id"] = nextId++;
    config["added_tokens"].push_back(token);
  }
  const Tokenizer tokenizer = Tokenizer::fromJson(config.dump());
  for (const nlohmann::json &c : cases) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(formatIds(tokenizer.encode(text)), formatIds(idsOf(c["ids"])))
        << GetParam() << ": \"" << escaped(text) << "\"";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, GoldenTest,
                         ::testing::Values("qwen3", "llama3.1", "gptoss"),
                         [](const auto &info) {
                           std::string name = info.param;
                           std::erase(name, '.');
                           return name;
                         });

} // namespace
} // namespace sol::test

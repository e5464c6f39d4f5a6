//===- Generator.h - Generates tokens for one prompt ------------*- C++ -*-===//
//
// The single-prompt driver (solrun --prompt): a thin wrapper that submits one
// request to an Engine and steps it to the end, streaming each token. It
// reports TTFT and TPOT as a user sees them (host clock around each step,
// results on the host).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Engine.h"
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
  /// `maxModelLen` bounds prompt + generated tokens; a prompt runs in steps
  /// of at most `maxNumBatchedTokens` tokens (0: the engine's default).
  /// `draftExecutor` and `draftMaxModelLen`: EngineConfig's, for
  /// draft-model speculation.
  Generator(Executor &executor, int64_t vocabSize, int64_t maxModelLen,
            int32_t maxNumBatchedTokens = 0, bool asyncScheduling = true,
            const SpeculativeConfig &speculative = {},
            Executor *draftExecutor = nullptr, int64_t draftMaxModelLen = 0);

  /// Greedy generation. Throws sol::Error naming the problem for an empty
  /// prompt, ids outside the vocabulary, or a prompt + max tokens longer
  /// than the model length or the KV cache.
  GenerationResult generate(const GenerationRequest &request);

  /// Teacher-forced logits of every prompt position (prompt.size() x vocab).
  std::vector<float> promptLogits(const std::vector<int32_t> &promptIds);

  Engine &engine() { return engine_; }

private:
  Engine engine_;
};

} // namespace sol

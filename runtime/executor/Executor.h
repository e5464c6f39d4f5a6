//===- Executor.h - Runs the step of a plan ---------------------*- C++ -*-===//
//
// An executor runs one step of a plan at a time: a flat batch of tokens from
// several sequences (prefill chunks and decode tokens mixed), writing their
// K/V into the paged KV cache and returning logits for the requested rows.
// The engine (scheduler, block manager, sampler) drives it. Two exist: the
// CUDA executor (runtime/cuda) and the reference executor (runtime/reference),
// a float32 CPU implementation of the plan's ops that serves as the oracle.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace sol {

/// How one logits row picks its token (one per row of StepBatch::logitRows).
/// The order of operations follows vLLM: penalties on the raw logits, then
/// temperature, then the top-k, top-p and min-p filters, then a draw. Both
/// executors pick the same token for the same logits (docs/sampling.md).
struct SamplingRow {
  float temperature = 0.0f;       // <= 0: greedy (argmax, lowest index on ties)
  int32_t topK = 0;               // keep the k most likely tokens; 0 = all
  float topP = 1.0f;              // smallest set whose mass reaches p; 1 = all
  float minP = 0.0f;              // drop tokens below minP * max probability
  float repetitionPenalty = 1.0f; // HF style, on prompt and output tokens
  float presencePenalty = 0.0f;   // OpenAI style, on output tokens
  float frequencyPenalty = 0.0f;  // OpenAI style, per output occurrence
  /// The draw is a pure function of (seed, counter) and the filtered
  /// distribution: the same request gives the same tokens whatever else is
  /// in the batch. The engine uses the output index as the counter.
  uint64_t seed = 0;
  int32_t counter = 0;
};

/// Tokens a row's penalties apply to, in CSR form: row r owns entries
/// [offsets[r], offsets[r+1]). `outputCounts` is how often the token occurs
/// in the output so far (presence/frequency); `inPrompt` is 1 when it occurs
/// in the prompt (repetition penalty applies to prompt and output tokens).
/// A token appears at most once per row. Empty spans: no penalties in this
/// step.
struct PenaltyTokens {
  std::span<const int32_t> offsets; // R + 1
  std::span<const int32_t> ids;
  std::span<const int32_t> outputCounts;
  std::span<const uint8_t> inPrompt;
};

/// Per-row additive logit biases in CSR form: row r owns entries
/// [offsets[r], offsets[r+1]); `values[e]` is added to the raw logit of token
/// `ids[e]` before anything else (penalties, temperature, filters; greedy
/// rows too). -infinity bans the token. Logprobs stay those of the raw
/// logits (docs/sampling.md). A token appears at most once per row. Empty
/// spans: no bias in this step.
struct LogitBias {
  std::span<const int32_t> offsets; // R + 1
  std::span<const int32_t> ids;
  std::span<const float> values; // finite, or -infinity (banned)
};

/// Most top logprobs a row may ask for (OpenAI's top_logprobs limit).
constexpr int32_t kMaxTopLogprobs = 20;

/// One step's batch. All spans are host memory owned by the caller.
struct StepBatch {
  std::span<const int32_t> tokens;    // T token ids
  std::span<const int32_t> positions; // T positions within their sequence
  std::span<const int32_t> tokenSeq;  // T indices into the step's sequences
  /// R token indices whose logits to return; R may be 0 (a prompt chunk
  /// that does not reach its prompt's end).
  std::span<const int32_t> logitRows;
  /// numSeqs x maxBlocksPerSeq: KV-cache block ids of each sequence of the
  /// step, in position order (position p lives in block p / blockSize).
  std::span<const int32_t> blockTables;
  int32_t numSeqs = 0;
  int32_t maxBlocksPerSeq = 0;
  /// R rows of sampling parameters; empty means greedy for every row.
  std::span<const SamplingRow> sampling = {};
  PenaltyTokens penalties = {};
  LogitBias logitBias = {};
  /// Top logprobs to return per row (0..kMaxTopLogprobs), same for all rows.
  int32_t numTopLogprobs = 0;
  /// Empty, or T entries: -1 where tokens[t] is the token's id, r >= 0
  /// where the id is the one chosen for logits row r by the step submitted
  /// just before this one (tokens[t] is then ignored). The caller need not
  /// have that id yet: the executor feeds it on the device, so a decode step
  /// can be queued while the previous one still runs (Executor::submitStep).
  /// Only for executors whose chainsSteps() is true.
  std::span<const int32_t> chainedRows = {};
};

/// Where a step's results go (host memory owned by the caller).
struct StepOutput {
  std::span<float> logits;   // R x vocab, or empty
  std::span<int32_t> argmax; // R chosen ids (greedy or sampled), or empty
  /// R log-probabilities of the chosen ids under the model's distribution
  /// (log_softmax of the raw logits, as OpenAI's `logprobs`), or empty.
  std::span<float> logprobs;
  /// R x numTopLogprobs ids and log-probabilities of the most likely tokens,
  /// most likely first, or empty.
  std::span<int32_t> topIds;
  std::span<float> topLogprobs;
};

class Executor {
public:
  virtual ~Executor() = default;

  /// "cuda" or "cpu".
  virtual std::string name() const = 0;
  /// Number of KV-cache blocks available to the block manager.
  virtual int32_t numKvBlocks() const = 0;
  /// Tokens per KV-cache block.
  virtual int32_t blockSize() const = 0;
  /// The most tokens one step may hold.
  virtual int32_t maxTokensPerStep() const = 0;
  /// Runs one step. When `out.logits` is non-empty it receives R x vocab
  /// float32 values (row r for batch.logitRows[r]); when `out.argmax` is
  /// non-empty it receives the R chosen token ids: greedy (lowest index on
  /// ties) or drawn per `batch.sampling`, on the device, so decoding need not
  /// copy logits back. Throws sol::Error on invalid
  /// input (ids or block ids out of range, T too large) before touching any
  /// state.
  virtual void step(const StepBatch &batch, const StepOutput &out) = 0;

  /// Whether submitStep() returns before the step has run, and steps accept
  /// StepBatch::chainedRows. The engine then queues step N+1 while step N
  /// runs, and the host's work between steps (results, stop checks, the
  /// next batch) overlaps the device's.
  virtual bool chainsSteps() const { return false; }
  /// Queues a step. Its outputs are written by the finishStep() that
  /// retires it; `out` (and nothing else) must stay valid until then. At
  /// most two steps are queued at once. Throws sol::Error on invalid input
  /// before queueing anything. The default runs the step now.
  virtual void submitStep(const StepBatch &batch, const StepOutput &out) {
    step(batch, out);
  }
  /// Waits for the oldest queued step and writes its outputs; a no-op when
  /// none is queued. A step that fails is retired all the same.
  virtual void finishStep() {}
};

/// "KV cache: 9,000 blocks of 16 tokens = 144,000 tokens (cuda)", the line
/// solrun prints on a terminal after sizing the cache.
std::string describeKvCache(const Executor &executor);

} // namespace sol

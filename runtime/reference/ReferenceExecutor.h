//===- ReferenceExecutor.h - Sol's float32 CPU oracle -----------*- C++ -*-===//
//
// Runs a plan's step schedule on the CPU in float32, from the op
// descriptions (never the cubins). It is the oracle the CUDA executor and
// the compiler are tested against, and lets solrun work without a GPU.
//
// Precision: weights are converted to float32 once (bf16/f16/f32 -> f32);
// activations and the KV cache stay float32 between ops (no rounding to the
// plan's activation dtype), RMS and attention reductions run in double,
// Linear accumulates in float32 (16 partial sums per dot product). This
// matches Transformers running in float32 on the same bf16 weights.
//
// Memory: 4 bytes per weight parameter (a 1B model needs about 5 GB), the
// float32 KV cache (2 * layers * numKvBlocks * blockSize * kvHeads *
// headDim * 4 bytes), and the activation buffers, which grow to the largest
// step seen.
//
// Logits: the plan's final logits buffer is the output buffer of the last
// op of the schedule (an F32 buffer with Outputs rows, normally written by
// the LM-head Linear); StepOutput.logits receives its R x width values.
//
// Tensor parallelism: a plan split over N ranks (solc
// --tensor-parallel-size) runs as N simulated ranks, each with its weight
// shards, KV cache and activations, one op at a time on every rank; an
// AllReduce sums the ranks' buffers, an AllGather places their columns side
// by side. Its logits equal the unsplit plan's up to float32 rounding,
// which is how the sharding is tested without GPUs.
//
// Not thread-safe: one step at a time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/Executor.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace sol {

class PlanFile;
struct PlanOp;

namespace reference {
class ReferencePlan;
class ReferenceWeights;
class PagedKvCache;
} // namespace reference

class ReferenceExecutor final : public Executor {
public:
  struct Options {
    /// KV-cache blocks; 0 = enough for maxSeqs sequences of maxModelLen
    /// tokens each.
    int32_t numKvBlocks = 0;
    /// The most tokens one step may hold; 0 = the plan's
    /// max_tokens_per_step (512 when the plan has none).
    int32_t maxTokensPerStep = 0;
    /// Sizes the default KV cache; 0 = the model's max_position_embeddings,
    /// capped at 4096 (a float32 cache of a 1B model's 128K positions
    /// would take 8 GB).
    int64_t maxModelLen = 0;
    /// Sizes the default KV cache.
    int32_t maxSeqs = 1;
    /// Threads for the large loops; 0 = std::thread::hardware_concurrency.
    int32_t numThreads = 0;
  };

  /// Decodes and checks the plan, converts its weights and allocates the KV
  /// cache. The executor copies what it needs: `plan` may be closed after
  /// construction. Throws sol::Error naming the
  /// op, buffer or weight when the plan is inconsistent or corrupted, or
  /// when the cache does not fit in memory.
  ReferenceExecutor(const PlanFile &plan, const Options &options);
  explicit ReferenceExecutor(const PlanFile &plan);
  ~ReferenceExecutor() override;
  ReferenceExecutor(const ReferenceExecutor &) = delete;
  ReferenceExecutor &operator=(const ReferenceExecutor &) = delete;

  std::string name() const override { return "cpu"; }
  int32_t numKvBlocks() const override { return numKvBlocks_; }
  int32_t blockSize() const override { return blockSize_; }
  int32_t maxTokensPerStep() const override { return maxTokensPerStep_; }
  void step(const StepBatch &batch, const StepOutput &out) override;
  /// Steps run at once (submitStep is step), but accept chained rows, so
  /// the engine's async scheduling runs here as on the GPU.
  bool chainsSteps() const override { return true; }

  /// Columns of a logits row (the width of the logits buffer).
  int64_t vocabSize() const;
  /// Bytes of float32 weights held.
  uint64_t weightBytes() const;
  /// Bytes of the float32 KV cache (0 when the plan has no attention).
  uint64_t kvCacheBytes() const;

private:
  void validate(const StepBatch &batch, const StepOutput &out) const;
  /// batch.tokens with chained rows replaced by the previous step's ids.
  std::span<const int32_t> resolveTokens(const StepBatch &batch);
  void validateKvPlacement(const StepBatch &batch) const;
  /// One tensor-parallel rank's weights, KV cache and activation buffers.
  struct Rank;
  void runOps(const StepBatch &batch);
  /// Runs `op` (not a collective) on `rank`.
  void runOp(const PlanOp &op, Rank &rank, const StepBatch &batch);
  /// Activation `index` of `rank` sized for a step of T tokens and R
  /// logits rows (buffers only grow).
  std::span<float> activation(Rank &rank, int index, int64_t T, int64_t R);
  /// An AllReduce or AllGather over every rank.
  void runCollective(const PlanOp &op, int64_t T, int64_t R);
  /// out = y, out += y (residual) or swiglu of y's (gate, up) pairs, for
  /// y = in . w^T (+ bias) and the op's epilogue.
  void linearWithEpilogue(const PlanOp &op, std::span<float> out,
                          std::span<const float> in, std::span<const float> w,
                          std::span<const float> bias, int64_t rows,
                          int64_t width, int64_t inWidth);

  /// Ids the last step chose (what chained rows refer to), and the
  /// resolved tokens of the current step.
  std::vector<int32_t> lastChosen_, resolved_;
  std::unique_ptr<reference::ReferencePlan> plan_;
  /// One per tensor-parallel rank (one for an unsplit plan).
  std::vector<Rank> ranks_;
  int32_t numKvBlocks_ = 0;
  int32_t blockSize_ = 0;
  int32_t maxTokensPerStep_ = 0;
  int numThreads_ = 1;
  std::vector<float> epilogueScratch_;
  /// An RmsNorm op's input after its own norm (Gemma's sandwich norms).
  std::vector<float> normedInput_;
  /// A W8A8 linear's input rows rounded to fp8.
  std::vector<float> fp8Input_;
  /// Smallest first-attended offset: a token at pos reads cache positions
  /// from max(0, pos - lookBack) (lookBack < 0: from 0).
  int64_t lookBack_ = 0;
};

} // namespace sol

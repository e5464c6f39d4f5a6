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

/// One step's batch. All spans are host memory owned by the caller.
struct StepBatch {
  std::span<const int32_t> tokens;    // T token ids
  std::span<const int32_t> positions; // T positions within their sequence
  std::span<const int32_t> tokenSeq;  // T indices into the step's sequences
  std::span<const int32_t> logitRows; // R token indices whose logits to return
  /// numSeqs x maxBlocksPerSeq: KV-cache block ids of each sequence of the
  /// step, in position order (position p lives in block p / blockSize).
  std::span<const int32_t> blockTables;
  int32_t numSeqs = 0;
  int32_t maxBlocksPerSeq = 0;
};

/// Where a step's results go (host memory owned by the caller).
struct StepOutput {
  std::span<float> logits;   // R x vocab, or empty
  std::span<int32_t> argmax; // R, or empty
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
  /// non-empty it receives the R greedy token ids (lowest index on ties), so
  /// greedy decoding need not copy logits back. Throws sol::Error on invalid
  /// input (ids or block ids out of range, T too large) before touching any
  /// state.
  virtual void step(const StepBatch &batch, const StepOutput &out) = 0;
};

} // namespace sol

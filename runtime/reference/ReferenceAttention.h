//===- ReferenceAttention.h - Float32 RoPE, KV write and attention -*- C++
//-*-===//
//
// The two plan ops that touch the paged KV cache. Both read where each token
// of the step lives: its sequence (token_seq), its position, and that
// sequence's block table. Callers have validated every index (see
// ReferenceExecutor::step), so these functions index without checks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/reference/PagedKvCache.h"
#include "runtime/reference/ReferencePlan.h"

#include <cstdint>
#include <span>

namespace sol::reference {

/// Where the tokens of one step live in the paged KV cache.
struct StepPlacement {
  std::span<const int32_t> positions;   // T
  std::span<const int32_t> tokenSeq;    // T
  std::span<const int32_t> blockTables; // numSeqs x maxBlocksPerSeq
  int32_t maxBlocksPerSeq = 0;

  /// The (block, slot) of position `pos` of sequence `seq`.
  int64_t block(int32_t seq, int32_t pos, int32_t blockSize) const {
    return blockTables[static_cast<size_t>(seq) * maxBlocksPerSeq +
                       static_cast<size_t>(pos / blockSize)];
  }
};

/// The first cache position a token at `pos` attends to:
/// max(0, pos - slidingWindow + 1) when slidingWindow > 0, else 0. This is
/// transformers' sliding-window mask (masking_utils.sliding_window_overlay:
/// kv_idx > q_idx - sliding_window, used by Mistral and Qwen2): the token
/// sees itself and the slidingWindow - 1 positions before it.
int64_t firstAttendedPosition(int64_t pos, int64_t slidingWindow);

/// RopeKvWrite: rotates the q heads and k heads of each row of `qkv`
/// ([heads*hd q | kvHeads*hd k | kvHeads*hd v]) in place, then copies each
/// token's k and v into layer op.layer of the cache at its position; an fp8
/// cache keeps each head's row as the GPU stores it (quantizeKvRow).
void ropeKvWriteRows(std::span<float> qkv, int64_t rows, const PlanOp &op,
                     const RopeInfo &rope, const StepPlacement &placement,
                     PagedKvCache &cache);

/// Attention: for token t and head h (kv head h / (heads / kvHeads)),
/// softmax over cache positions j in [firstAttendedPosition(pos_t), pos_t]
/// of q.k_j * op.scale, then out = sum_j p_j v_j. Dot products, softmax
/// and the weighted sum run in double. `sinks` (empty, or one logit per
/// head) adds exp(sink_h) to head h's softmax denominator.
void attentionRows(std::span<float> out, std::span<const float> qkv,
                   int64_t rows, const PlanOp &op, std::span<const float> sinks,
                   const StepPlacement &placement, const PagedKvCache &cache,
                   int numThreads);

} // namespace sol::reference

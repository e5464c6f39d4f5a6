//===- StaticLowering.h - The CUDA choices that hold for every step -*- C++
//-*-===//
//
// Some of the CUDA executor's choices depend only on the plan, not on a
// step's batch: which rope_kv_write (and q/k head norm) each attention
// absorbs in decode steps, which residual norm a linear absorbs in one-row
// steps, whether the logits gather can be skipped, whether
// the LM head may keep the argmax, whether prompt chunks run chunk_attention.
// solc makes them once with these rules when it compiles the kernels and
// records them in the plan (Plan.cuda); the executor reads and checks them at
// load. What a step's shape decides (the instance for its rows, split counts)
// stays with the executor (KernelSelection.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/KernelSelection.h"

#include <span>
#include <string>
#include <vector>

namespace sol::cuda {

struct StaticLowering {
  /// Per op: for each Attention op, the RopeKvWrite op of its layer, whose
  /// work the fused-rope attention variant does in decode steps (one token
  /// per sequence), which then skip it; -1 for other ops. Empty when some
  /// attention op has no rope or no fused variant: no step fuses.
  std::vector<int> attentionRopeKvWrite;
  /// Per op: for each Attention op that absorbs a RopeKvWrite, the
  /// HeadRmsNorm op before it (Qwen3's and Gemma 3's q/k norms) whose work
  /// its fused-rope variant does too in decode steps, which then skip that
  /// op; -1 for other ops and attentions without one. Empty: none.
  std::vector<int> attentionHeadNorm;
  /// Per op: for each Linear op that one-row steps run with the residual
  /// add and norm of the RmsNorm op right before it in linear_gemv's
  /// prologue (Gemma's norms after attention and after the MLP, whose add
  /// cannot be a GEMV epilogue), that op, which those steps then skip; -1
  /// for other ops. Empty: none.
  std::vector<int> linearAddNorm;
  /// The GatherRows ops that steps whose logit rows are their first rows in
  /// order (decode) skip, later ops reading their inputs.
  std::vector<int> skippableGathers;
  /// Greedy one-row steps run the last op, an LM head, with the argmax in
  /// its GEMV's epilogue (selectArgmaxLmHead).
  bool argmaxLmHead = false;
  /// Steps with a short prompt chunk run chunk_attention: every attention
  /// op has one spec, which plans compile (ChunkAttentionSpec::planned).
  bool chunkAttention = false;

  bool fusedRope() const { return !attentionRopeKvWrite.empty(); }
  /// Per op: whether decode steps run it fused with a head norm (an
  /// Attention op that absorbs one, or the HeadRmsNorm op absorbed).
  std::vector<bool> headNormFused(std::size_t ops) const;
  /// Per op: the residual add of linear_gemv's prologue for a Linear op that
  /// absorbs an RmsNorm and for that RmsNorm op (linearAddNorm), else None.
  std::vector<GemvAddNorm> addNormFused(std::span<const OpDesc> ops) const;
};

/// The choices for `ops` (a step's ops in order) with `bufferSlot[i]` the
/// arena slot of buffer i (step inputs have none: any negative value) and
/// steps of up to `maxTokens` tokens.
StaticLowering chooseStaticLowering(std::span<const OpDesc> ops,
                                    std::span<const int> bufferSlot,
                                    int maxTokens);

/// Reads a plan's record (null: a plan compiled without kernels) and checks
/// it against `ops`: indices in range and of the right kinds, the argmax LM
/// head and chunk attention possible. Throws sol::Error naming `where`.
StaticLowering readStaticLowering(const fb::CudaLowering *record,
                                  std::span<const OpDesc> ops,
                                  const std::string &where);

} // namespace sol::cuda

//===- StepProgram.h - The kernel-level step of a compiled model -*- C++
//-*-===//
//
// What code generation translates the kernel-level `sol` module into and
// what the plan writer writes: the step as a list of plan ops (PlanOp, the
// runtime's own decoded form) over activation buffers and weights. Plain
// data, no MLIR, so the writer and its tests stay light.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/PlanOp.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sol {

/// A weight of the plan: a tensor of the weight store, copied as it is.
struct ProgramWeight {
  std::string name; // in the weight store
  fb::DType dtype = fb::DType::BF16;
  std::vector<int64_t> shape;
  /// What quantization did to it ("int8 codes ...", "kept bf16: LM head"),
  /// empty when it was not concerned.
  std::string note;
};

struct ProgramBuffer {
  std::string name;
  fb::DType dtype = fb::DType::BF16;
  int64_t width = 0;
  fb::Rows rows = fb::Rows::Tokens;
  int slot = -1; // arena slot, set by assignArenaSlots()
};

struct ProgramRope {
  std::vector<float> invFreq;
  float attentionScaling = 1.0f;
  /// longrope: the frequencies of positions >= longFrom (else empty).
  std::vector<float> longInvFreq;
  int64_t longFrom = 0;
};

/// What the plan records about the model (from the module's sol.model).
struct ProgramModel {
  std::string architecture;
  int64_t vocabSize = 0, hiddenSize = 0, numLayers = 0,
          maxPositionEmbeddings = 0;
  /// The longest sequence computed as the source does (0: no limit).
  int64_t positionLimit = 0;
  /// Ranks the step runs on at once, each on its weight shards (the
  /// module's sol.tensor_parallel_size; 1: no tensor parallelism).
  int64_t tensorParallelSize = 1;
};

struct StepProgram {
  /// Buffers 0..3 are the step inputs: tokens, positions, token_seq,
  /// logit_rows (int32, one column).
  static constexpr int kTokens = 0, kPositions = 1, kTokenSeq = 2,
                       kLogitRows = 3, kNumInputs = 4;
  ProgramModel model;
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramWeight> weights;
  std::vector<PlanOp> ops;
  std::vector<ProgramRope> ropes;
  int32_t logitsBuffer = -1;
  /// Bytes per row of each arena slot.
  std::vector<int64_t> arenaSlots;

  /// Shares arena slots between buffers whose lifetimes (first write to last
  /// read in `ops`) do not overlap; fills `slot` and `arenaSlots`.
  void assignArenaSlots();
};

} // namespace sol

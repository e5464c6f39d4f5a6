//===- StepProgram.h - The kernel-level step of a compiled model -*- C++ -*-===//
//
// What code generation translates the kernel-level `sol` module into and
// what the plan writer writes: the step as a list of plan ops over
// activation buffers and weights. Plain data, no MLIR, so the writer and its
// tests stay light. The op kinds and their operands are those of
// runtime/plan/Plan.fbs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan_generated.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sol {

/// A weight of the plan: a tensor of the weight store, copied as it is.
struct ProgramWeight {
  std::string name; // in the weight store
  fb::DType dtype = fb::DType::BF16;
  std::vector<int64_t> shape;
};

struct ProgramBuffer {
  std::string name;
  fb::DType dtype = fb::DType::BF16;
  int64_t width = 0;
  fb::Rows rows = fb::Rows::Tokens;
  int slot = -1; // arena slot, set by assignArenaSlots()
};

struct ProgramOp {
  fb::OpKind kind = fb::OpKind::Add;
  std::string name;
  std::vector<int32_t> buffers; // indices into StepProgram::buffers
  std::vector<int32_t> weights; // indices into StepProgram::weights
  std::vector<int64_t> ints;
  std::vector<float> floats;
  /// Buffers the op writes (a subset of `buffers`); the others it only reads.
  std::vector<int32_t> writes;
};

struct ProgramRope {
  std::vector<float> invFreq;
  float attentionScaling = 1.0f;
};

/// What the plan records about the model (from the module's sol.model).
struct ProgramModel {
  std::string architecture;
  int64_t vocabSize = 0, hiddenSize = 0, numLayers = 0,
          maxPositionEmbeddings = 0;
};

struct StepProgram {
  /// Buffers 0..3 are the step inputs: tokens, positions, token_seq,
  /// logit_rows (int32, one column).
  static constexpr int kTokens = 0, kPositions = 1, kTokenSeq = 2,
                       kLogitRows = 3, kNumInputs = 4;
  ProgramModel model;
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramWeight> weights;
  std::vector<ProgramOp> ops;
  std::vector<ProgramRope> ropes;
  int32_t logitsBuffer = -1;
  /// Bytes per row of each arena slot.
  std::vector<int64_t> arenaSlots;

  /// Shares arena slots between buffers whose lifetimes (first write to last
  /// read in `ops`) do not overlap; fills `slot` and `arenaSlots`.
  void assignArenaSlots();
};

} // namespace sol

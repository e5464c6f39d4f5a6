//===- Schedule.h - The kernel-level step of a compiled model ---*- C++ -*-===//
//
// What lowering produces from the `sol` module and what the plan emitter
// writes: the step as a list of kernel-level ops over activation buffers and
// weights. Plain data, no MLIR, so the emitter and its tests stay light. The
// op kinds and their operands are those of runtime/plan/Plan.fbs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan_generated.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sol {

/// A weight of the plan: one tensor of the checkpoint, or the rows of
/// several stacked along dimension 0 (a fused projection).
struct ScheduleWeight {
  std::string name;
  std::vector<std::string> sources; // checkpoint tensors, in row order
  std::vector<int64_t> shape;
  /// After concatenating `sources`, interleave the two halves row by row
  /// (gate/up pairs of a Linear with the swiglu epilogue).
  bool interleaveHalves = false;
};

struct ScheduleBuffer {
  std::string name;
  fb::DType dtype = fb::DType::BF16;
  int64_t width = 0;
  fb::Rows rows = fb::Rows::Tokens;
  int slot = -1; // arena slot, set by assignArenaSlots()
};

struct ScheduleOp {
  fb::OpKind kind = fb::OpKind::Add;
  std::string name;
  std::vector<int32_t> buffers; // indices into Schedule::buffers
  std::vector<int32_t> weights; // indices into Schedule::weights
  std::vector<int64_t> ints;
  std::vector<float> floats;
  /// Buffers the op writes (a subset of `buffers`); the others it only reads.
  std::vector<int32_t> writes;
};

struct ScheduleRope {
  std::vector<float> invFreq;
  float attentionScaling = 1.0f;
};

struct Schedule {
  /// Buffers 0..3 are the step inputs: tokens, positions, token_seq,
  /// logit_rows (int32, one column).
  static constexpr int kTokens = 0, kPositions = 1, kTokenSeq = 2,
                       kLogitRows = 3, kNumInputs = 4;
  std::vector<ScheduleBuffer> buffers;
  std::vector<ScheduleWeight> weights;
  std::vector<ScheduleOp> ops;
  std::vector<ScheduleRope> ropes;
  int32_t logitsBuffer = -1;
  /// Bytes per row of each arena slot.
  std::vector<int64_t> arenaSlots;

  /// Shares arena slots between buffers whose lifetimes (first write to last
  /// read in `ops`) do not overlap; fills `slot` and `arenaSlots`.
  void assignArenaSlots();
};

} // namespace sol

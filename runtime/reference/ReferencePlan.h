//===- ReferencePlan.h - A plan's schedule, decoded and checked -*- C++ -*-===//
//
// The reference executor never walks the flatbuffer while it runs a step: at
// construction it decodes every op into a plain struct and checks everything
// the math relies on (indices in range, operand counts, widths that agree,
// row spaces that agree, buffers written before they are read). A corrupted
// or inconsistent plan is rejected here with a sol::Error naming the op, so
// the kernels can index without further checks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/PlanOp.h"
#include "runtime/support/DType.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sol {
class PlanFile;
} // namespace sol

namespace sol::reference {

using sol::OpKind;
using sol::PlanOp;

/// Plan.fbs Rows: how many rows a buffer has in a step.
enum class RowSpace : uint8_t {
  Tokens = 0,  // T, one per token of the step
  Outputs = 1, // R, one per requested logits row
};

/// The step inputs: buffers 0..3 of every plan, int32, one column.
inline constexpr int kTokensBuffer = 0;
inline constexpr int kPositionsBuffer = 1;
inline constexpr int kTokenSeqBuffer = 2;
inline constexpr int kLogitRowsBuffer = 3;
inline constexpr int kNumStepInputs = 4;

struct BufferInfo {
  std::string name;
  DType dtype = DType::F32; // as declared; the reference computes in f32
  int64_t width = 0;
  RowSpace rows = RowSpace::Tokens;
};

struct WeightInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 0;
};

struct RopeInfo {
  std::vector<float> invFreq;
  float attentionScaling = 1.0f;
  /// longrope: the frequencies of positions >= longFrom (else empty).
  std::vector<float> longInvFreq;
  int64_t longFrom = 0;
};

struct KvLayoutInfo {
  int32_t numLayers = 0;
  int32_t numKvHeads = 0;
  int32_t headDim = 0;
  int32_t blockSize = 0;
  /// An fp8 (E4M3) cache with per-token, per-head scales: rows are stored
  /// as the GPU stores them (Fp8E4M3.h), in float32.
  bool fp8 = false;
};

class ReferencePlan {
public:
  /// Decodes and checks `file`'s schedule. Throws sol::Error naming the
  /// plan file and the offending op, buffer or weight.
  explicit ReferencePlan(const PlanFile &file);

  const std::vector<BufferInfo> &buffers() const { return buffers_; }
  const std::vector<WeightInfo> &weights() const { return weights_; }
  const std::vector<PlanOp> &ops() const { return ops_; }
  const std::vector<RopeInfo> &ropes() const { return ropes_; }
  const KvLayoutInfo &kvLayout() const { return kvLayout_; }
  /// True when some op reads or writes the KV cache.
  bool usesKvCache() const { return usesKvCache_; }
  /// 1 + the highest layer an op names (the cache holds only these).
  int32_t usedLayers() const { return usedLayers_; }
  /// The logits buffer: the output of the last op (Outputs rows, F32).
  int logitsBuffer() const { return ops_.back().buffers[0]; }
  int64_t logitsWidth() const { return buffers_[logitsBuffer()].width; }
  /// model.max_position_embeddings; 0 when the plan does not say.
  int64_t maxPositions() const { return maxPositions_; }
  /// plan.max_tokens_per_step; 0 when the plan does not say.
  int64_t plannedTokensPerStep() const { return plannedTokensPerStep_; }
  /// Weights some op reads (others are never converted).
  const std::vector<bool> &weightIsUsed() const { return weightUsed_; }
  /// Ranks the plan is split over (plan.tensor_parallel_size).
  int32_t tensorParallelSize() const { return ranks_; }

private:
  void decodeBuffers(const PlanFile &file);
  void decodeWeights(const PlanFile &file);
  void decodeRopes(const PlanFile &file);
  void decodeOps(const PlanFile &file);
  void checkOp(const PlanOp &op, int opIndex) const;
  void checkDataFlow() const;

  std::string planPath_;
  std::vector<BufferInfo> buffers_;
  std::vector<WeightInfo> weights_;
  std::vector<bool> weightUsed_;
  std::vector<PlanOp> ops_;
  std::vector<RopeInfo> ropes_;
  KvLayoutInfo kvLayout_;
  bool hasKvLayout_ = false;
  bool usesKvCache_ = false;
  int32_t usedLayers_ = 0;
  int64_t maxPositions_ = 0;
  int64_t plannedTokensPerStep_ = 0;
  int32_t ranks_ = 1;
};

} // namespace sol::reference

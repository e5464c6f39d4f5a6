//===- PlanOp.h - One op of a plan's step, by role --------------*- C++ -*-===//
//
// Plan.fbs stores each op as a table of its kind (OpParams). Code generation
// builds PlanOps and encodes them; both executors decode them once at load
// and never touch the flatbuffer op tables again. Operands are named by
// role; `buffers` and `weights` also list them in a fixed order per kind
// (below) for code that walks every operand (liveness, range checks).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan_generated.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sol {

/// The kinds of plan ops, in the order of Plan.fbs's OpParams.
enum class OpKind : uint8_t {
  Embedding,
  RmsNorm,
  HeadRmsNorm,
  Linear,
  RopeKvWrite,
  Attention,
  Swiglu,
  Add,
  GatherRows,
  NormLinear,
  ConcatColumns,
  Softcap,
  Moe,
  AllReduce,
  AllGather,
  SigmoidGate,
  GatherColumns,
};
inline constexpr int kNumOpKinds = static_cast<int>(OpKind::GatherColumns) + 1;
std::string_view opKindName(OpKind kind);

/// True for the linear epilogues that pair interleaved (gate, up) weight rows
/// into one output (SwiGLU, GeGLU): twice as many weight rows as outputs.
inline bool isGated(fb::LinearEpilogue e) {
  return e == fb::LinearEpilogue::Swiglu || e == fb::LinearEpilogue::Geglu;
}

/// One op. Buffer and weight operands in role order:
///
///   Embedding      buffers out, ids              weights table
///   RmsNorm        buffers out, in[, residual]   weights weight[, input norm]
///   HeadRmsNorm    buffers buf                   weights weight[, second]
///   Linear         buffers out, in               weights W[, bias][, q]
///   NormLinear     buffers out, in, normed       weights norm, W[, bias][, q]
///   RopeKvWrite    buffers qkv
///   Attention      buffers out, qkv              weights [sinks]
///   Swiglu         buffers out, in
///   Add            buffers out, lhs, rhs
///   GatherRows     buffers out, in, rows
///   ConcatColumns  buffers out, in_0, in_1, ...
///   Softcap        buffers buf
///   Moe            buffers out, in               weights router, gate, up,
///                  down[, router bias, gate bias, up bias, down bias]
///                  [, gate scales, up scales, down scales (Mxfp4,
///                  Int8, Fp8, Int4)][, gate zeros, up zeros, down zeros
///                  (Int4)]
///   AllReduce      buffers buf
///   AllGather      buffers out, in
///   SigmoidGate    buffers out, value, in        weights weight
///   GatherColumns  buffers out, in               (columns)
///
/// where q is a quantized W's scales (and, for Int4, zero points).
/// Only the parameters of the op's kind are meaningful.
struct PlanOp {
  OpKind kind = OpKind::Embedding;
  std::string name;
  std::vector<int32_t> buffers;
  std::vector<int32_t> weights;
  float eps = 0.0f;            // RmsNorm, HeadRmsNorm, NormLinear
  float inputEps = 0.0f;       // RmsNorm with an input norm
  float scale = 0.0f;          // Attention
  float embeddingScale = 1.0f; // Embedding: rows times it (1: none)
  float softcap = 0.0f;        // Attention (0: none), Softcap: the cap
  int64_t column = 0;          // HeadRmsNorm: its first column
  int64_t secondHeads = 0;     // HeadRmsNorm: heads normed by weights[1]
  int64_t heads = 0;           // HeadRmsNorm, RopeKvWrite, Attention
  int64_t kvHeads = 0;         // RopeKvWrite, Attention
  int64_t headDim = 0;         // HeadRmsNorm, RopeKvWrite, Attention
  int64_t layer = 0;           // RopeKvWrite, Attention
  int64_t rope = 0;            // RopeKvWrite: index into Plan.rope
  int64_t slidingWindow = 0;   // Attention: 0 = unlimited
  fb::LinearEpilogue epilogue = fb::LinearEpilogue::None; // Linear, NormLinear
  fb::WeightQuant quant = fb::WeightQuant::None;          // Linear, NormLinear
  int64_t groupSize = 0; // Linear, NormLinear, Moe: inputs per Int4 scale
  fb::GateActivation activation = fb::GateActivation::Silu; // Swiglu, Moe
  int64_t topK = 0;           // Moe: experts per row
  bool normalizeTopK = false; // Moe: top-k weights divided by their sum
  float activationLimit = 0;  // Moe with ClampedSilu: its limit
  fb::ExpertFormat expertFormat = fb::ExpertFormat::Float; // Moe
  std::vector<int64_t> columns, widths; // ConcatColumns: per input;
                                        // GatherColumns: columns only

  /// Attention: whether the heads have sinks (weights[0]).
  bool hasSinks() const {
    return kind == OpKind::Attention && !weights.empty();
  }
  /// Moe: whether the experts are MXFP4 (their scales are the last three
  /// weights).
  bool hasMxfp4Experts() const {
    return kind == OpKind::Moe && expertFormat == fb::ExpertFormat::Mxfp4;
  }
  /// Moe: the weights after the biases that describe quantized experts:
  /// three scales (MXFP4, Int8, Fp8), and three zero points (Int4).
  size_t moeQuantWeights() const {
    if (kind != OpKind::Moe || expertFormat == fb::ExpertFormat::Float)
      return 0;
    return expertFormat == fb::ExpertFormat::Int4 ? 6 : 3;
  }
  /// Moe: whether the router and the experts have biases (weights[4..7]).
  bool hasMoeBiases() const {
    return kind == OpKind::Moe && weights.size() == 8 + moeQuantWeights();
  }
  /// Moe with quantized experts: the index in `weights` of the gate's scales
  /// (up's and down's follow, then, for Int4, the three zero points).
  size_t moeScalesWeight() const { return weights.size() - moeQuantWeights(); }
  /// RmsNorm: whether it adds a residual first (a third buffer).
  bool hasResidual() const { return buffers.size() == 3; }
  /// RmsNorm: whether the input is normalised before the residual add;
  /// HeadRmsNorm: whether a second weight normalises the heads that follow.
  bool hasSecondNormWeight() const { return weights.size() == 2; }
  /// Linear, NormLinear: the index of W in `weights`, and whether a bias
  /// follows it.
  size_t linearWeight() const { return kind == OpKind::NormLinear ? 1 : 0; }
  /// Linear, NormLinear: how many weights after W and the bias describe a
  /// quantized W (scales; scales and zeros for Int4).
  size_t quantOperands() const {
    return quant == fb::WeightQuant::None   ? 0
           : quant == fb::WeightQuant::Int4 ? 2
                                            : 1;
  }
  bool hasBias() const {
    return weights.size() == linearWeight() + 2 + quantOperands();
  }
  /// Linear, NormLinear with a quantized W: the index of its scales in
  /// `weights` (the zero points follow).
  size_t scalesWeight() const {
    return linearWeight() + 1 + (hasBias() ? 1 : 0);
  }
};

/// The ops of `plan`, decoded. Throws sol::Error naming `planPath` and the
/// op for a kind this runtime does not know (a newer solc) or a missing
/// table; operand indices are not range-checked here.
std::vector<PlanOp> decodePlanOps(const fb::Plan &plan,
                                  std::string_view planPath);

/// Encodes `op` as its kind's table (code generation, tests).
flatbuffers::Offset<fb::Op> encodePlanOp(flatbuffers::FlatBufferBuilder &b,
                                         const PlanOp &op);

} // namespace sol

//===- RopeTable.h - Rotary embedding frequencies ---------------*- C++ -*-===//
//
// The per-pair inverse frequencies of rotary embeddings for the parameters
// of a #sol.rope attribute, computed exactly as transformers'
// ROPE_INIT_FUNCTIONS do (default, linear, llama3, yarn, longrope) in
// float32. Code
// generation stores the table in the plan, so the runtime and the kernels
// only read it. No MLIR here: importers resolve their format's conventions
// (defaults, yarn's mscale) into RopeParameters first.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace sol {

enum class RopeScaling { None, Linear, Llama3, Yarn, LongRope };

struct RopeParameters {
  double theta = 10000.0;
  RopeScaling scaling = RopeScaling::None;
  double factor = 1.0;
  // llama3
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  /// The context the frequencies were trained for (llama3, yarn; longrope:
  /// where the long factors take over).
  int64_t originalMaxPosition = 0;
  // yarn
  double betaFast = 32.0;
  double betaSlow = 1.0;
  /// Multiplies cos and sin under yarn and longrope; 0 means the default
  /// (yarn: 0.1 ln(factor) + 1; longrope: sqrt(1 + ln(factor) /
  /// ln(originalMaxPosition)), 1 when factor <= 1).
  double attentionFactor = 0.0;
  /// Yarn floors/ceils its correction range (transformers' `truncate`).
  bool truncate = true;
  /// Dims of a head that rotate (0: all); the rest pass through.
  int64_t rotaryDim = 0;
  /// longrope: one divisor per rotated pair below and from
  /// originalMaxPosition on.
  std::vector<double> shortFactor, longFactor;
};

struct RopeTable {
  /// inv_freq[i] for i in [0, headDim/2): the angle of pair i at position p
  /// is p * invFreq[i]. Pairs are (x[i], x[i + headDim/2]) (rotate_half).
  /// With a partial rotary_dim R, pairs i >= R/2 pass through: their
  /// frequency is 0, and attentionScaling does not apply to them (cos 1,
  /// sin 0).
  std::vector<float> invFreq;
  /// longrope: the frequencies of positions >= longFrom (empty otherwise).
  std::vector<float> longInvFreq;
  int64_t longFrom = 0;
  /// Multiplies cos and sin of rotated pairs: 1 except for yarn and
  /// longrope.
  float attentionScaling = 1.0f;

  /// The frequencies of `position` (longrope: the long ones from longFrom).
  const std::vector<float> &invFreqAt(int64_t position) const {
    return !longInvFreq.empty() && position >= longFrom ? longInvFreq : invFreq;
  }
  /// What cos and sin of a pair with frequency `freq` are multiplied by:
  /// attentionScaling, except for pairs that pass through (frequency 0).
  float scalingFor(float freq) const {
    return freq == 0.0f ? 1.0f : attentionScaling;
  }

  /// Throws sol::Error when head_dim is odd or a parameter is unusable.
  static RopeTable compute(const RopeParameters &params, int64_t headDim);
};

} // namespace sol

//===- RopeTable.h - Rotary embedding frequencies ---------------*- C++ -*-===//
//
// The per-pair inverse frequencies of rotary embeddings for the parameters
// of a #sol.rope attribute, computed exactly as transformers'
// ROPE_INIT_FUNCTIONS do (default, linear, llama3, yarn) in float32. Code
// generation stores the table in the plan, so the runtime and the kernels
// only read it. No MLIR here: importers resolve their format's conventions
// (defaults, yarn's mscale) into RopeParameters first.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace sol {

enum class RopeScaling { None, Linear, Llama3, Yarn };

struct RopeParameters {
  double theta = 10000.0;
  RopeScaling scaling = RopeScaling::None;
  double factor = 1.0;
  // llama3
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  /// The context the frequencies were trained for (llama3, yarn).
  int64_t originalMaxPosition = 0;
  // yarn
  double betaFast = 32.0;
  double betaSlow = 1.0;
  /// Multiplies cos and sin under yarn; 0 means 0.1 ln(factor) + 1.
  double attentionFactor = 0.0;
  /// Yarn floors/ceils its correction range (transformers' `truncate`).
  bool truncate = true;
};

struct RopeTable {
  /// inv_freq[i] for i in [0, headDim/2): the angle of pair i at position p
  /// is p * invFreq[i]. Pairs are (x[i], x[i + headDim/2]) (rotate_half).
  std::vector<float> invFreq;
  /// Multiplies cos and sin: 1 except for yarn.
  float attentionScaling = 1.0f;

  /// Throws sol::Error when head_dim is odd or a parameter is unusable.
  static RopeTable compute(const RopeParameters &params, int64_t headDim);
};

} // namespace sol

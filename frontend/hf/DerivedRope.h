//===- DerivedRope.h - RoPE inverse-frequency table -------------*- C++ -*-===//
//
// The per-dimension inverse frequencies of rotary embeddings, computed once
// at compile time exactly as transformers' ROPE_INIT_FUNCTIONS do (default,
// linear, llama3, yarn) in float32, so the runtime and the generated kernels
// only read a table and never re-derive the scaling rules.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/hf/ModelConfig.h"

#include <vector>

namespace sol::hf {

struct DerivedRope {
  /// inv_freq[i] for i in [0, headDim/2): the angle of pair i at position p
  /// is p * invFreq[i]. Pairs are (x[i], x[i + headDim/2]) (rotate_half).
  std::vector<float> invFreq;
  /// Multiplies cos and sin (transformers' attention_scaling): 1 except for
  /// yarn, where it is attention_factor (or derived from mscale).
  float attentionScaling = 1.0f;

  /// Derives the table from config's head_dim, rope_theta and rope scaling.
  /// Throws sol::Error if head_dim is odd or the scaling values are unusable.
  static DerivedRope compute(const ModelConfig &config);
};

} // namespace sol::hf

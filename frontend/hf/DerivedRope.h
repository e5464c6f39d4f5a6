//===- DerivedRope.h - A config.json's rotary embedding ---------*- C++ -*-===//
//
// Resolves the rope settings of a transformers config (rope_theta,
// rope_scaling / rope_parameters, yarn's mscale and its defaults) into the
// format-neutral RopeParameters of the IR contract, and the table they give.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/hf/ModelConfig.h"
#include "ir/RopeTable.h"

#include <vector>

namespace sol::hf {

/// The RopeParameters transformers would use for `layer` of `config`
/// (Gemma 3's sliding layers have their own): yarn's
/// original context defaults to max_position_embeddings, and its attention
/// factor comes from attention_factor, or mscale / mscale_all_dim, or the
/// default. Throws sol::Error for values no table can be built from.
RopeParameters ropeParameters(const ModelConfig &config, int64_t layer = 0);

struct DerivedRope {
  /// inv_freq[i] for i in [0, headDim/2) (see RopeTable).
  std::vector<float> invFreq;
  /// Multiplies cos and sin (transformers' attention_scaling).
  float attentionScaling = 1.0f;

  /// The table of config's head_dim and rope settings. Throws sol::Error if
  /// head_dim is odd or the scaling values are unusable.
  static DerivedRope compute(const ModelConfig &config, int64_t layer = 0);
};

} // namespace sol::hf

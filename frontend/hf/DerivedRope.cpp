//===- DerivedRope.cpp - RoPE inverse-frequency table ---------------------===//
//
// Mirrors transformers' modeling_rope_utils (ROPE_INIT_FUNCTIONS) operation
// by operation: torch computes these tables in float32 with Python scalars
// rounded to float32, so we do the same in float, and Python-side scalar
// math (correction ranges, mscale) in double. Yarn follows transformers 5:
// an explicit `factor` is used as given (4.5x releases replaced it by
// max_position_embeddings / original_max_position_embeddings whenever the
// latter was present), original_max_position_embeddings defaults to
// max_position_embeddings, and `truncate` (default true) floors/ceils the
// correction range.
//
//===----------------------------------------------------------------------===//

#include "frontend/hf/DerivedRope.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace sol::hf {
namespace {

/// 1 / base^(2i/dim) for i in [0, dim/2), as torch computes it in float32.
std::vector<float> defaultInvFreq(double theta, int64_t dim) {
  std::vector<float> invFreq(size_t(dim / 2));
  float base = static_cast<float>(theta);
  for (int64_t i = 0; i < dim / 2; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    invFreq[size_t(i)] = 1.0f / std::pow(base, exponent);
  }
  return invFreq;
}

void applyLlama3(const RopeScaling &scaling, std::vector<float> &invFreq) {
  auto factor = static_cast<float>(scaling.factor);
  double oldContext = double(*scaling.originalMaxPositionEmbeddings);
  auto lowFreqWavelen = static_cast<float>(oldContext / scaling.lowFreqFactor);
  auto highFreqWavelen =
      static_cast<float>(oldContext / scaling.highFreqFactor);
  auto lowFreqFactor = static_cast<float>(scaling.lowFreqFactor);
  auto freqFactorSpan =
      static_cast<float>(scaling.highFreqFactor - scaling.lowFreqFactor);
  const auto twoPi = static_cast<float>(2 * std::numbers::pi);
  for (float &freq : invFreq) {
    float wavelen = twoPi / freq;
    if (wavelen > lowFreqWavelen) { // low frequency: fully interpolated
      freq = freq / factor;
    } else if (!(wavelen < highFreqWavelen)) { // medium: blend the two
      float smooth =
          (static_cast<float>(oldContext) / wavelen - lowFreqFactor) /
          freqFactorSpan;
      freq = (1.0f - smooth) * freq / factor + smooth * freq;
    } // high frequency: unchanged
  }
}

double yarnMscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

float applyYarn(const ModelConfig &config, std::vector<float> &invFreq) {
  const RopeScaling &scaling = config.ropeScaling;
  const int64_t dim = config.headDim;
  const double base = config.ropeTheta;
  const double factor = scaling.factor;
  const double original = double(scaling.originalMaxPositionEmbeddings.value_or(
      config.maxPositionEmbeddings));

  double attentionFactor;
  if (scaling.attentionFactor)
    attentionFactor = *scaling.attentionFactor;
  else if (scaling.mscale.value_or(0) != 0 &&
           scaling.mscaleAllDim.value_or(0) != 0)
    attentionFactor = yarnMscale(factor, *scaling.mscale) /
                      yarnMscale(factor, *scaling.mscaleAllDim);
  else
    attentionFactor = yarnMscale(factor, 1.0);

  // The dimension at which a frequency makes `rotations` turns over the
  // original context.
  auto correctionDim = [&](double rotations) {
    return (double(dim) *
            std::log(original / (rotations * 2 * std::numbers::pi))) /
           (2 * std::log(base));
  };
  double low = correctionDim(scaling.betaFast);
  double high = correctionDim(scaling.betaSlow);
  if (scaling.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (low == high)
    high += 0.001; // as transformers: avoid dividing by zero

  const auto lowF = static_cast<float>(low);
  const auto spanF = static_cast<float>(high - low);
  const auto factorF = static_cast<float>(factor);
  const auto baseF = static_cast<float>(base);
  for (int64_t i = 0; i < dim / 2; ++i) {
    float posFreq =
        std::pow(baseF, static_cast<float>(2 * i) / static_cast<float>(dim));
    float extrapolation = 1.0f / posFreq;
    float interpolation = 1.0f / (factorF * posFreq);
    float ramp = std::clamp((static_cast<float>(i) - lowF) / spanF, 0.0f, 1.0f);
    float extrapolationFactor = 1.0f - ramp;
    invFreq[size_t(i)] = interpolation * (1.0f - extrapolationFactor) +
                         extrapolation * extrapolationFactor;
  }
  return static_cast<float>(attentionFactor);
}

} // namespace

DerivedRope DerivedRope::compute(const ModelConfig &config) {
  if (config.headDim <= 0 || config.headDim % 2 != 0)
    fail("cannot build the RoPE table: head_dim must be a positive even "
         "number, got ",
         config.headDim);
  if (!(config.ropeTheta > 0) || !std::isfinite(config.ropeTheta))
    fail("cannot build the RoPE table: rope_theta must be positive, got ",
         config.ropeTheta);
  const RopeScaling &scaling = config.ropeScaling;
  if (scaling.type != RopeScalingType::None &&
      (!(scaling.factor > 0) || !std::isfinite(scaling.factor)))
    fail("cannot build the RoPE table: ", ropeScalingTypeName(scaling.type),
         " factor must be positive, got ", scaling.factor);

  DerivedRope rope;
  rope.invFreq = defaultInvFreq(config.ropeTheta, config.headDim);
  switch (scaling.type) {
  case RopeScalingType::None:
    break;
  case RopeScalingType::Linear:
    for (float &freq : rope.invFreq)
      freq /= static_cast<float>(scaling.factor);
    break;
  case RopeScalingType::Llama3:
    if (!scaling.originalMaxPositionEmbeddings ||
        *scaling.originalMaxPositionEmbeddings <= 0 ||
        !(scaling.highFreqFactor > scaling.lowFreqFactor) ||
        !(scaling.lowFreqFactor > 0))
      fail("cannot build the llama3 RoPE table: it needs "
           "original_max_position_embeddings > 0 and "
           "high_freq_factor > low_freq_factor > 0");
    applyLlama3(scaling, rope.invFreq);
    break;
  case RopeScalingType::Yarn:
    if (!(scaling.betaFast > 0) || !(scaling.betaSlow > 0) ||
        (scaling.originalMaxPositionEmbeddings.value_or(1) <= 0))
      fail("cannot build the yarn RoPE table: beta_fast, beta_slow and "
           "original_max_position_embeddings must be positive");
    rope.attentionScaling = applyYarn(config, rope.invFreq);
    break;
  }
  return rope;
}

} // namespace sol::hf

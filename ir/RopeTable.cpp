//===- RopeTable.cpp - Rotary embedding frequencies -----------------------===//
//
// Mirrors transformers' modeling_rope_utils operation by operation: torch
// computes these tables in float32 with Python scalars rounded to float32,
// so we do the same in float, and Python-side scalar math (correction
// ranges, mscale) in double. Yarn follows transformers 5: the `factor` is
// used as given.
//
//===----------------------------------------------------------------------===//
#include "ir/RopeTable.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace sol {
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

void applyLlama3(const RopeParameters &p, std::vector<float> &invFreq) {
  auto factor = static_cast<float>(p.factor);
  double oldContext = double(p.originalMaxPosition);
  auto lowFreqWavelen = static_cast<float>(oldContext / p.lowFreqFactor);
  auto highFreqWavelen = static_cast<float>(oldContext / p.highFreqFactor);
  auto lowFreqFactor = static_cast<float>(p.lowFreqFactor);
  auto freqFactorSpan = static_cast<float>(p.highFreqFactor - p.lowFreqFactor);
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

float applyYarn(const RopeParameters &p, int64_t dim,
                std::vector<float> &invFreq) {
  const double base = p.theta, factor = p.factor;
  const double original = double(p.originalMaxPosition);
  const double attentionFactor =
      p.attentionFactor > 0
          ? p.attentionFactor
          : (factor <= 1 ? 1.0 : 0.1 * std::log(factor) + 1.0);

  // The dimension at which a frequency makes `rotations` turns over the
  // original context.
  auto correctionDim = [&](double rotations) {
    return (double(dim) *
            std::log(original / (rotations * 2 * std::numbers::pi))) /
           (2 * std::log(base));
  };
  double low = correctionDim(p.betaFast);
  double high = correctionDim(p.betaSlow);
  if (p.truncate) {
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

const char *scalingName(RopeScaling s) {
  switch (s) {
  case RopeScaling::None:
    return "default";
  case RopeScaling::Linear:
    return "linear";
  case RopeScaling::Llama3:
    return "llama3";
  case RopeScaling::Yarn:
    return "yarn";
  case RopeScaling::LongRope:
    return "longrope";
  }
  return "?";
}

} // namespace

RopeTable RopeTable::compute(const RopeParameters &p, int64_t headDim) {
  if (headDim <= 0 || headDim % 2 != 0)
    fail("cannot build the RoPE table: head_dim must be a positive even "
         "number, got ",
         headDim);
  if (!(p.theta > 0) || !std::isfinite(p.theta))
    fail("cannot build the RoPE table: rope_theta must be positive, got ",
         p.theta);
  if (p.scaling != RopeScaling::None &&
      (!(p.factor > 0) || !std::isfinite(p.factor)))
    fail("cannot build the RoPE table: ", scalingName(p.scaling),
         " factor must be positive, got ", p.factor);

  const int64_t dim = p.rotaryDim ? p.rotaryDim : headDim;
  if (dim <= 0 || dim % 2 != 0 || dim > headDim)
    fail("cannot build the RoPE table: rotary_dim must be a positive even "
         "number up to head_dim ",
         headDim, ", got ", dim);
  RopeTable table;
  table.invFreq = defaultInvFreq(p.theta, dim);
  switch (p.scaling) {
  case RopeScaling::None:
    break;
  case RopeScaling::Linear:
    for (float &freq : table.invFreq)
      freq /= static_cast<float>(p.factor);
    break;
  case RopeScaling::Llama3:
    if (p.originalMaxPosition <= 0 || !(p.highFreqFactor > p.lowFreqFactor) ||
        !(p.lowFreqFactor > 0))
      fail("cannot build the llama3 RoPE table: it needs "
           "original_max_position_embeddings > 0 and "
           "high_freq_factor > low_freq_factor > 0");
    applyLlama3(p, table.invFreq);
    break;
  case RopeScaling::Yarn:
    if (!(p.betaFast > 0) || !(p.betaSlow > 0) || p.originalMaxPosition <= 0)
      fail("cannot build the yarn RoPE table: beta_fast, beta_slow and "
           "original_max_position_embeddings must be positive");
    table.attentionScaling = applyYarn(p, dim, table.invFreq);
    break;
  case RopeScaling::LongRope: {
    if (p.originalMaxPosition <= 0 || p.shortFactor.size() != size_t(dim / 2) ||
        p.longFactor.size() != size_t(dim / 2))
      fail("cannot build the longrope RoPE table: it needs "
           "original_max_position_embeddings > 0 and ",
           dim / 2, " short and long factors, got ", p.shortFactor.size(),
           " and ", p.longFactor.size());
    // 1 / (factor[i] * base^(2i/dim)), the product in float32 as torch does.
    table.longInvFreq.resize(table.invFreq.size());
    const auto baseF = static_cast<float>(p.theta);
    for (int64_t i = 0; i < dim / 2; ++i) {
      const float pow =
          std::pow(baseF, static_cast<float>(2 * i) / static_cast<float>(dim));
      table.invFreq[size_t(i)] =
          1.0f / (static_cast<float>(p.shortFactor[size_t(i)]) * pow);
      table.longInvFreq[size_t(i)] =
          1.0f / (static_cast<float>(p.longFactor[size_t(i)]) * pow);
    }
    table.longFrom = p.originalMaxPosition;
    double factor = p.factor;
    table.attentionScaling = static_cast<float>(
        p.attentionFactor > 0 ? p.attentionFactor
        : factor <= 1
            ? 1.0
            : std::sqrt(1 + std::log(factor) /
                                std::log(double(p.originalMaxPosition))));
    break;
  }
  }
  // Partial rotary: the pairs of the dims that pass through.
  table.invFreq.resize(size_t(headDim / 2), 0.0f);
  if (!table.longInvFreq.empty())
    table.longInvFreq.resize(size_t(headDim / 2), 0.0f);
  return table;
}

} // namespace sol

//===- DerivedRope.cpp - A config.json's rotary embedding -----------------===//
//
// transformers 5 conventions: an explicit yarn `factor` is used as given
// (4.5x releases replaced it by max_position_embeddings /
// original_max_position_embeddings whenever the latter was present),
// original_max_position_embeddings defaults to max_position_embeddings, and
// `truncate` (default true) floors/ceils the correction range.
//
//===----------------------------------------------------------------------===//
#include "frontend/hf/DerivedRope.h"

#include <cmath>

namespace sol::hf {
namespace {

double yarnMscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

} // namespace

RopeParameters ropeParameters(const ModelConfig &config, int64_t layer) {
  const RopeSettings settings = config.ropeOf(layer);
  const RopeScaling &s = settings.scaling;
  RopeParameters p;
  p.theta = settings.theta;
  p.rotaryDim = config.rotaryDim == config.headDim ? 0 : config.rotaryDim;
  p.factor = s.factor;
  p.lowFreqFactor = s.lowFreqFactor;
  p.highFreqFactor = s.highFreqFactor;
  p.betaFast = s.betaFast;
  p.betaSlow = s.betaSlow;
  p.truncate = s.truncate;
  switch (s.type) {
  case RopeScalingType::None:
  case RopeScalingType::Dynamic: // unscaled up to ModelConfig::positionLimit
    p.scaling = sol::RopeScaling::None;
    break;
  case RopeScalingType::Linear:
    p.scaling = sol::RopeScaling::Linear;
    break;
  case RopeScalingType::Llama3:
    p.scaling = sol::RopeScaling::Llama3;
    p.originalMaxPosition = s.originalMaxPositionEmbeddings.value_or(0);
    break;
  case RopeScalingType::Yarn:
    p.scaling = sol::RopeScaling::Yarn;
    p.originalMaxPosition =
        s.originalMaxPositionEmbeddings.value_or(config.maxPositionEmbeddings);
    if (s.attentionFactor)
      p.attentionFactor = *s.attentionFactor;
    else if (s.mscale.value_or(0) != 0 && s.mscaleAllDim.value_or(0) != 0)
      p.attentionFactor = yarnMscale(s.factor, *s.mscale) /
                          yarnMscale(s.factor, *s.mscaleAllDim);
    else
      p.attentionFactor = yarnMscale(s.factor, 1.0);
    break;
  case RopeScalingType::LongRope:
    p.scaling = sol::RopeScaling::LongRope;
    p.originalMaxPosition =
        s.originalMaxPositionEmbeddings.value_or(config.maxPositionEmbeddings);
    p.shortFactor = s.shortFactor;
    p.longFactor = s.longFactor;
    // transformers: sqrt(1 + ln(factor) / ln(original)) unless given.
    p.attentionFactor = s.attentionFactor.value_or(
        s.factor <= 1
            ? 1.0
            : std::sqrt(1 + std::log(s.factor) /
                                std::log(double(p.originalMaxPosition))));
    break;
  }
  return p;
}

DerivedRope DerivedRope::compute(const ModelConfig &config, int64_t layer) {
  RopeTable table =
      RopeTable::compute(ropeParameters(config, layer), config.headDim);
  return {std::move(table.invFreq), table.attentionScaling};
}

} // namespace sol::hf

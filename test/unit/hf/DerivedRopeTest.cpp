//===- DerivedRopeTest.cpp - RoPE tables against hand-computed values -----===//
//
// Expected values are written out (computed in double precision from the
// formulas of the RoPE / Llama 3.1 / YaRN papers) and also recomputed here
// in double, independently of the float32 code under test.
//
//===----------------------------------------------------------------------===//

#include "frontend/hf/DerivedRope.h"

#include "test/unit/hf/ErrorMessage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace sol::hf {
namespace {

using test::errorOf;
using ::testing::HasSubstr;

ModelConfig ropeConfig(int64_t headDim, double theta) {
  ModelConfig config;
  config.hiddenSize = headDim * 4;
  config.numAttentionHeads = 4;
  config.numKeyValueHeads = 4;
  config.headDim = headDim;
  config.maxPositionEmbeddings = 131072;
  config.ropeTheta = theta;
  return config;
}

/// theta^(-2i/d) in double.
double plainInvFreq(double theta, int64_t dim, int64_t i) {
  return 1.0 / std::pow(theta, double(2 * i) / double(dim));
}

void expectNear(float actual, double expected, const char *what, int64_t i) {
  EXPECT_NEAR(actual, expected, 2e-6 * std::fabs(expected))
      << what << " at i=" << i;
}

TEST(DerivedRopeTest, DefaultIsPowersOfTheta) {
  DerivedRope rope = DerivedRope::compute(ropeConfig(8, 10000.0));
  ASSERT_EQ(rope.invFreq.size(), 4u);
  // 10000^(-2i/8) = 10^-i
  expectNear(rope.invFreq[0], 1.0, "default", 0);
  expectNear(rope.invFreq[1], 0.1, "default", 1);
  expectNear(rope.invFreq[2], 0.01, "default", 2);
  expectNear(rope.invFreq[3], 0.001, "default", 3);
  EXPECT_EQ(rope.attentionScaling, 1.0f);
}

TEST(DerivedRopeTest, LinearDividesEveryFrequencyByFactor) {
  ModelConfig config = ropeConfig(8, 10000.0);
  config.ropeScaling.type = RopeScalingType::Linear;
  config.ropeScaling.factor = 4.0;
  DerivedRope rope = DerivedRope::compute(config);
  ASSERT_EQ(rope.invFreq.size(), 4u);
  expectNear(rope.invFreq[0], 0.25, "linear", 0);
  expectNear(rope.invFreq[1], 0.025, "linear", 1);
  expectNear(rope.invFreq[2], 0.0025, "linear", 2);
  expectNear(rope.invFreq[3], 0.00025, "linear", 3);
  EXPECT_EQ(rope.attentionScaling, 1.0f);

  ModelConfig big = ropeConfig(128, 1e6);
  big.ropeScaling = config.ropeScaling;
  big.ropeScaling.factor = 2.5;
  DerivedRope bigRope = DerivedRope::compute(big);
  for (int64_t i = 0; i < 64; ++i)
    expectNear(bigRope.invFreq[size_t(i)], plainInvFreq(1e6, 128, i) / 2.5,
               "linear", i);
}

// Llama 3.1 8B: theta 500000, head_dim 128, factor 8, low 1, high 4,
// original context 8192. Wavelengths below 2048 are kept, above 8192 divided
// by 8, in between blended with smooth = (8192 / wavelen - 1) / 3.
TEST(DerivedRopeTest, Llama3MatchesHandComputedValues) {
  ModelConfig config = ropeConfig(128, 500000.0);
  config.ropeScaling.type = RopeScalingType::Llama3;
  config.ropeScaling.factor = 8.0;
  config.ropeScaling.lowFreqFactor = 1.0;
  config.ropeScaling.highFreqFactor = 4.0;
  config.ropeScaling.originalMaxPositionEmbeddings = 8192;
  DerivedRope rope = DerivedRope::compute(config);
  ASSERT_EQ(rope.invFreq.size(), 64u);
  EXPECT_EQ(rope.attentionScaling, 1.0f);

  // Values written out: high frequency (kept), the first medium one, one
  // deep in the medium band, the first low one (/8) and the last (/8).
  expectNear(rope.invFreq[0], 1.0, "llama3", 0);
  expectNear(rope.invFreq[10], 0.12868737343265052, "llama3", 10);
  expectNear(rope.invFreq[28], 0.0032114459947525913, "llama3", 28);
  expectNear(rope.invFreq[30], 0.0013718935677611381, "llama3", 30);
  expectNear(rope.invFreq[35], 0.0007644969883171747 / 8, "llama3", 35);
  expectNear(rope.invFreq[63], 3.068925988914511e-07, "llama3", 63);

  // Every entry against the piecewise rule, in double.
  for (int64_t i = 0; i < 64; ++i) {
    double freq = plainInvFreq(500000.0, 128, i);
    double wavelen = 2 * std::numbers::pi / freq;
    double expected;
    if (wavelen < 8192.0 / 4.0) {
      expected = freq;
    } else if (wavelen > 8192.0 / 1.0) {
      expected = freq / 8;
    } else {
      double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      expected = (1 - smooth) * freq / 8 + smooth * freq;
    }
    expectNear(rope.invFreq[size_t(i)], expected, "llama3", i);
  }
}

// Qwen-style YaRN: theta 1e6, head_dim 128, factor 4, original 32768.
// Correction range: floor(23.596) = 23 .. ceil(39.651) = 40.
TEST(DerivedRopeTest, YarnMatchesHandComputedValues) {
  ModelConfig config = ropeConfig(128, 1e6);
  config.ropeScaling.type = RopeScalingType::Yarn;
  config.ropeScaling.factor = 4.0;
  config.ropeScaling.originalMaxPositionEmbeddings = 32768;
  DerivedRope rope = DerivedRope::compute(config);
  ASSERT_EQ(rope.invFreq.size(), 64u);
  EXPECT_NEAR(rope.attentionScaling, 1.138629436111989, 1e-6);

  expectNear(rope.invFreq[0], 1.0, "yarn", 0);
  expectNear(rope.invFreq[23], 0.006978305848598663, "yarn", 23);
  expectNear(rope.invFreq[30], 0.0010643609812470017, "yarn", 30);
  expectNear(rope.invFreq[40], 4.445698525097307e-05, "yarn", 40);
  expectNear(rope.invFreq[63], 3.102344401879299e-07, "yarn", 63);
  for (int64_t i = 0; i < 64; ++i) {
    double ramp = std::clamp((double(i) - 23.0) / (40.0 - 23.0), 0.0, 1.0);
    double freq = plainInvFreq(1e6, 128, i);
    expectNear(rope.invFreq[size_t(i)], freq / 4 * ramp + freq * (1 - ramp),
               "yarn", i);
  }

  // Without original_max_position_embeddings the range is computed from
  // max_position_embeddings; an explicit attention_factor is used as given.
  config.ropeScaling.originalMaxPositionEmbeddings.reset();
  config.maxPositionEmbeddings = 32768;
  config.ropeScaling.attentionFactor = 0.75;
  DerivedRope same = DerivedRope::compute(config);
  EXPECT_EQ(same.invFreq, rope.invFreq);
  EXPECT_EQ(same.attentionScaling, 0.75f);
}

TEST(DerivedRopeTest, YarnMscaleRatioAndNoTruncation) {
  ModelConfig config = ropeConfig(64, 10000.0);
  config.maxPositionEmbeddings = 163840;
  config.ropeScaling.type = RopeScalingType::Yarn;
  config.ropeScaling.factor = 40.0;
  config.ropeScaling.originalMaxPositionEmbeddings = 4096;
  config.ropeScaling.mscale = 0.707;
  config.ropeScaling.mscaleAllDim = 0.707;
  EXPECT_EQ(DerivedRope::compute(config).attentionScaling, 1.0f);
  config.ropeScaling.mscaleAllDim = 1.0;
  EXPECT_NEAR(DerivedRope::compute(config).attentionScaling,
              (0.1 * 0.707 * std::log(40.0) + 1) / (0.1 * std::log(40.0) + 1),
              1e-6);

  // truncate = false keeps the fractional correction range.
  config.ropeScaling.truncate = false;
  DerivedRope rope = DerivedRope::compute(config);
  auto correction = [](double rotations) {
    return 64 * std::log(4096 / (rotations * 2 * std::numbers::pi)) /
           (2 * std::log(10000.0));
  };
  double low = std::max(correction(32), 0.0);
  double high = std::min(correction(1), 63.0);
  for (int64_t i = 0; i < 32; ++i) {
    double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    double freq = plainInvFreq(10000.0, 64, i);
    expectNear(rope.invFreq[size_t(i)], freq / 40 * ramp + freq * (1 - ramp),
               "yarn-untruncated", i);
  }
}

TEST(DerivedRopeTest, RejectsUnusableConfig) {
  ModelConfig odd = ropeConfig(7, 10000.0);
  EXPECT_THAT(errorOf([&] { DerivedRope::compute(odd); }),
              HasSubstr("head_dim must be a positive even number, got 7"));
  ModelConfig llama3 = ropeConfig(8, 10000.0);
  llama3.ropeScaling.type = RopeScalingType::Llama3;
  llama3.ropeScaling.factor = 8;
  EXPECT_THAT(errorOf([&] { DerivedRope::compute(llama3); }),
              HasSubstr("original_max_position_embeddings"));
  ModelConfig zero = ropeConfig(8, 10000.0);
  zero.ropeScaling.type = RopeScalingType::Linear;
  zero.ropeScaling.factor = 0;
  EXPECT_THAT(errorOf([&] { DerivedRope::compute(zero); }),
              HasSubstr("linear factor must be positive"));
}

// Phi-4-mini's partial rotary with longrope: frequencies of a head of
// rotary_dim, short below original_max_position_embeddings and long from it,
// zeros for the pairs that pass through, and the attention factor
// sqrt(1 + ln(factor) / ln(original)).
TEST(DerivedRopeTest, LongRopeWithPartialRotary) {
  ModelConfig config = ropeConfig(16, 10000.0);
  config.rotaryDim = 12; // 6 rotated pairs of 8
  config.maxPositionEmbeddings = 4096;
  config.ropeScaling.type = RopeScalingType::LongRope;
  config.ropeScaling.originalMaxPositionEmbeddings = 1024;
  config.ropeScaling.factor = 4.0;
  config.ropeScaling.shortFactor = {1, 1.5, 2, 2.5, 3, 3.5};
  config.ropeScaling.longFactor = {2, 4, 6, 8, 10, 12};
  RopeTable table = RopeTable::compute(ropeParameters(config), 16);
  ASSERT_EQ(table.invFreq.size(), 8u);
  ASSERT_EQ(table.longInvFreq.size(), 8u);
  for (int64_t i = 0; i < 6; ++i) {
    expectNear(table.invFreq[i],
               plainInvFreq(10000.0, 12, i) / config.ropeScaling.shortFactor[i],
               "short", i);
    expectNear(table.longInvFreq[i],
               plainInvFreq(10000.0, 12, i) / config.ropeScaling.longFactor[i],
               "long", i);
  }
  for (int64_t i = 6; i < 8; ++i) {
    EXPECT_EQ(table.invFreq[i], 0.0f) << i;
    EXPECT_EQ(table.longInvFreq[i], 0.0f) << i;
  }
  EXPECT_EQ(table.longFrom, 1024);
  EXPECT_NEAR(table.attentionScaling,
              std::sqrt(1 + std::log(4.0) / std::log(1024.0)), 1e-6);
  EXPECT_EQ(&table.invFreqAt(1023), &table.invFreq);
  EXPECT_EQ(&table.invFreqAt(1024), &table.longInvFreq);
  // Pass-through pairs are not scaled.
  EXPECT_EQ(table.scalingFor(0.0f), 1.0f);
  EXPECT_EQ(table.scalingFor(table.invFreq[0]), table.attentionScaling);
}

} // namespace
} // namespace sol::hf

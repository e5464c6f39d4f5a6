//===- SamplingMathTest.cpp - The RNG and the float32 sampling steps ------===//

#include "runtime/sampling/SamplingMath.h"
#include "runtime/sampling/Random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace sol::sampling;

namespace {

TEST(SamplingRandom, IsAPureFunctionOfSeedAndCounter) {
  EXPECT_EQ(randomBits(42, 7), randomBits(42, 7));
  EXPECT_EQ(uniform(42, 7), uniform(42, 7));
  EXPECT_NE(randomBits(42, 7), randomBits(42, 8));
  EXPECT_NE(randomBits(42, 7), randomBits(43, 7));
  // Pinned values: a change of the generator changes every seeded output
  // users have seen, and must be deliberate (Sampling.cuh has the same).
  static_assert(mix64(0) == 0);
  static_assert(randomBits(0, 0) == 0xe220a8397b1dcdafull);
  static_assert(randomBits(1234, 5) == 0x28c1a4e664ee0badull);
  static_assert(randomBits(2025, 4000000000u) == 0x1b0ffefc5f7cbaa2ull);
}

TEST(SamplingRandom, UniformLooksUniform) {
  constexpr int kDraws = 100000;
  int buckets[10] = {};
  double sum = 0.0;
  std::set<double> distinct;
  for (int i = 0; i < kDraws; ++i) {
    const double u = uniform(99, static_cast<uint32_t>(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    ++buckets[static_cast<int>(u * 10)];
    distinct.insert(u);
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);
  for (int b : buckets)
    EXPECT_NEAR(b, kDraws / 10, 600); // ~6 sigma
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kDraws));
  // Nearby seeds are not correlated: counters 0..999 of seeds 0 and 1.
  double cov = 0.0;
  for (uint32_t i = 0; i < 1000; ++i)
    cov += (uniform(0, i) - 0.5) * (uniform(1, i) - 0.5);
  EXPECT_LT(std::abs(cov / 1000), 0.01);
}

TEST(SamplingMath, ExpNegativeIsAccurate) {
  EXPECT_EQ(expNegative(0.0f), 1.0f);
  EXPECT_EQ(expNegative(INFINITY), 0.0f);
  EXPECT_EQ(expNegative(NAN), 0.0f);
  EXPECT_EQ(expNegative(87.0f), 0.0f);
  double worst = 0.0;
  float previous = 2.0f;
  for (float d = 0.0f; d < 86.9f; d += 0.000731f) {
    const float e = expNegative(d);
    const double exact = std::exp(-static_cast<double>(d));
    worst = std::max(worst, std::abs(e - exact) / exact);
    ASSERT_LE(e, previous) << "not monotone at d = " << d;
    previous = e;
  }
  EXPECT_LT(worst, 4e-7) << "relative error";
}

TEST(SamplingMath, CanonicalLogit) {
  EXPECT_EQ(canonicalLogit(NAN), -INFINITY);
  EXPECT_FALSE(std::signbit(canonicalLogit(-0.0f)));
  EXPECT_EQ(canonicalLogit(-3.5f), -3.5f);
  EXPECT_EQ(canonicalLogit(INFINITY), INFINITY);
}

TEST(SamplingMath, DistanceIsNeverNegativeZero) {
  EXPECT_FALSE(std::signbit(distanceFromMax(-0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(distanceFromMax(1.5f, 1.5f)));
  EXPECT_EQ(distanceFromMax(1.0f, -INFINITY), INFINITY);
}

TEST(SamplingMath, FixedMassAndTargets) {
  EXPECT_EQ(fixedMass(1.0f), uint64_t{1} << 44);
  EXPECT_EQ(fixedMass(0.0f), 0u);
  EXPECT_EQ(fixedMass(expNegative(31.0f)), 0u); // below 2^-44
  EXPECT_GT(fixedMass(expNegative(30.0f)), 0u);
  EXPECT_EQ(topPTarget(0.5f, 1000), 500u);
  EXPECT_EQ(topPTarget(1.0f, 1000), 1000u);
  EXPECT_EQ(topPTarget(1e-20f, 1000), 1u); // never an empty prefix
  EXPECT_EQ(drawTarget(0.0, 1000), 0u);
  EXPECT_EQ(drawTarget(0.5, 1000), 500u);
  EXPECT_EQ(drawTarget(0.9999999999999999, 1000), 999u);
  // u * mass rounding up to mass is clamped below it.
  const uint64_t big = (uint64_t{1} << 62) + 1;
  EXPECT_LT(drawTarget(0.9999999999999999, big), big);
}

TEST(SamplingMath, Penalties) {
  // Repetition divides positive logits and multiplies the others, for
  // tokens in the prompt or the output.
  EXPECT_EQ(penalizedLogit(2.0f, 2.0f, 0.0f, 0.0f, 0, true), 1.0f);
  EXPECT_EQ(penalizedLogit(-2.0f, 2.0f, 0.0f, 0.0f, 0, true), -4.0f);
  EXPECT_EQ(penalizedLogit(2.0f, 2.0f, 0.0f, 0.0f, 1, false), 1.0f);
  // Presence once, frequency per occurrence, only for output tokens.
  EXPECT_EQ(penalizedLogit(2.0f, 1.0f, 0.5f, 0.25f, 3, false), 0.75f);
  EXPECT_EQ(penalizedLogit(2.0f, 1.0f, 0.5f, 0.25f, 0, true), 2.0f);
  // All three, in vLLM's order: repetition, frequency, presence.
  EXPECT_EQ(penalizedLogit(3.0f, 1.5f, 0.5f, 0.25f, 2, true),
            3.0f / 1.5f - 0.5f - 0.5f);
}

} // namespace

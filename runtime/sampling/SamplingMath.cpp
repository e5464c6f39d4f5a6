//===- SamplingMath.cpp - Float32 steps shared with the GPU sampler -------===//
//
// Keep every function here in step with its twin in
// codegen/kernels/Sampling.cuh: same operations, same order.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/SamplingMath.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sol::sampling {

float canonicalLogit(float v) {
  if (v != v)
    return -INFINITY;
  return v + 0.0f; // -0 + 0 = +0
}

float biasedLogit(float logit, float bias) { return logit + bias; }

float penalizedLogit(float logit, float repetition, float presence,
                     float frequency, int32_t outputCount, bool inPrompt) {
  float v = logit;
  if (inPrompt || outputCount > 0)
    v = v > 0.0f ? v / repetition : v * repetition;
  const float scaled = frequency * static_cast<float>(outputCount);
  v = v - scaled;
  if (outputCount > 0)
    v = v - presence;
  return v;
}

float inverseTemperature(float temperature) { return 1.0f / temperature; }

float scaledLogit(float logit, float inverseTemperature) {
  return logit * inverseTemperature;
}

float distanceFromMax(float zmax, float z) {
  const float d = zmax - z;
  return d + 0.0f;
}

float expNegative(float d) {
  if (!(d < 87.0f))
    return 0.0f;
  const float x = -d;
  // x = k ln2 + r, |r| <= ln2 / 2; ln2 split so that k * kLn2Hi is exact.
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  const float t = x * kLog2e;
  const float k = std::rint(t);
  const float khi = k * kLn2Hi;
  const float klo = k * kLn2Lo;
  float r = x - khi;
  r = r - klo;
  // exp(r) by Horner's rule, Taylor coefficients 1/7! .. 1/0!.
  float p = 1.98412698e-4f;
  p = p * r;
  p = p + 1.38888889e-3f;
  p = p * r;
  p = p + 8.33333333e-3f;
  p = p * r;
  p = p + 4.16666667e-2f;
  p = p * r;
  p = p + 1.66666667e-1f;
  p = p * r;
  p = p + 0.5f;
  p = p * r;
  p = p + 1.0f;
  p = p * r;
  p = p + 1.0f;
  // k is in [-126, 0], so 2^k is a normal float.
  const int32_t exponent = static_cast<int32_t>(k) + 127;
  const float scale =
      std::bit_cast<float>(static_cast<uint32_t>(exponent) << 23);
  return p * scale;
}

uint64_t fixedMass(float e) {
  const float scaled = e * kMassScale;
  return static_cast<uint64_t>(scaled);
}

uint64_t topPTarget(float topP, uint64_t mass) {
  const double target = static_cast<double>(topP) * static_cast<double>(mass);
  // At least 1: the kept prefix is never empty.
  const uint64_t t = std::max<uint64_t>(static_cast<uint64_t>(target), 1);
  return t < mass ? t : mass;
}

uint64_t drawTarget(double u, uint64_t mass) {
  const double target = u * static_cast<double>(mass);
  const uint64_t t = static_cast<uint64_t>(target);
  return t < mass ? t : mass - 1;
}

} // namespace sol::sampling

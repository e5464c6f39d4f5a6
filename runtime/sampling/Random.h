//===- Random.h - The counter-based RNG of sampling -------------*- C++ -*-===//
//
// A draw's randomness is a pure function of (seed, counter): the counter-th
// output of SplitMix64 started from the state mix64(seed). No state is kept,
// so a request's tokens do not depend on what else is in the batch, on the
// executor, or on how often a step was retried. codegen/kernels/Sampling.cuh
// has the same functions for the GPU (test/unit/cuda checks them against
// these with static_asserts).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace sol::sampling {

/// SplitMix64's output function (Stafford's Mix13).
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// 64 random bits for (seed, counter). The counter is taken as an unsigned
/// 32-bit value (SamplingRow::counter is an int32).
constexpr uint64_t randomBits(uint64_t seed, uint32_t counter) {
  return mix64(mix64(seed) +
               0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(counter) + 1));
}

/// A uniform double in [0, 1) with 53 random bits.
constexpr double uniform(uint64_t seed, uint32_t counter) {
  return static_cast<double>(randomBits(seed, counter) >> 11) * 0x1.0p-53;
}

} // namespace sol::sampling

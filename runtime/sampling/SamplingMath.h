//===- SamplingMath.h - Float32 steps shared with the GPU sampler -*- C++
//-*-===//
//
// The arithmetic of sampling, spelled out operation by operation so that the
// CPU sampler and the GPU kernel (codegen/kernels/Sampling.cuh, which repeats
// these functions with _rn intrinsics) compute bitwise the same values: every
// step is one IEEE-754 float32 operation rounded to nearest (no fused
// multiply-add; sol_sampling is compiled with -ffp-contract=off), the
// exponential is a polynomial of our own rather than the libm / CUDA one, and
// probability masses are summed as 64-bit fixed-point integers, whose sums do
// not depend on the order of addition. The same logits and parameters
// therefore give the same token on either device.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace sol::sampling {

/// Fixed-point scale of a token's mass: mass = trunc(exp(-d) * 2^44), so a
/// vocabulary of up to 2^19 tokens sums below 2^63. Tokens more than ~30.5
/// below the maximum (after temperature) have mass 0 and are never drawn.
constexpr float kMassScale = 17592186044416.0f; // 2^44

/// NaN becomes -infinity and -0 becomes +0: NaN logits are never chosen,
/// and the two zeros compare and sort alike.
float canonicalLogit(float v);

/// A raw logit plus its logit bias (one rounding; -inf bans: NaN, for an
/// infinite logit, reads as -inf too).
float biasedLogit(float logit, float bias);

/// A logit after the penalties of a token that occurs `outputCount` times in
/// the output so far and (inPrompt) in the prompt, in vLLM's order:
/// repetition (HF style: divide positive logits, multiply others; for tokens
/// in the prompt or the output), then frequency (minus frequency *
/// outputCount), then presence (minus presence if outputCount > 0).
float penalizedLogit(float logit, float repetition, float presence,
                     float frequency, int32_t outputCount, bool inPrompt);

/// 1 / temperature rounded to nearest (temperature > 0).
float inverseTemperature(float temperature);

/// z = logit * (1 / temperature).
float scaledLogit(float logit, float inverseTemperature);

/// d = zmax - z, >= 0 (+0, never -0), +infinity for z = -infinity.
float distanceFromMax(float zmax, float z);

/// exp(-d) for d >= 0: Cody-Waite reduction and a degree-7 polynomial, a few
/// ulp from the true value; 0 for d >= 87 (and for infinity or NaN).
float expNegative(float d);

/// trunc(e * 2^44) for e = expNegative(d) in [0, 1].
uint64_t fixedMass(float e);

/// The top-p cut: the mass the kept prefix must reach,
/// min(max(trunc(double(p) * double(mass)), 1), mass): never an empty set.
uint64_t topPTarget(float topP, uint64_t mass);

/// The draw's point in [0, mass) for mass > 0: min(trunc(u * double(mass)),
/// mass - 1); the chosen token is the first (in vocabulary order) whose
/// cumulative mass exceeds it, so one always exists.
uint64_t drawTarget(double u, uint64_t mass);

} // namespace sol::sampling

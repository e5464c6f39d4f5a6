//===- Fp8E4M3.h - Host fp8 E4M3 rounding and the KV cache's scales -*- C++
//-*-===//
//
// The fp8 KV cache stores each row (one token's head_dim values of one kv
// head, K or V) as e4m3(x / scale) with scale = amax(|row|) / 448, computed
// when the token is written (codegen/kernels/RopeKvWrite.cuh). The reference
// executor applies the same rule on the CPU, bit for bit given the same
// inputs, so it computes what the GPU computes from its cache.
//
// E4M3 here is the "fn" variant of the OCP FP8 spec (and of CUDA's
// __nv_fp8_e4m3): 1 sign, 4 exponent (bias 7), 3 mantissa bits, no
// infinities, NaN = S.1111.111, largest finite 448, smallest subnormal 2^-9.
// Conversion rounds to nearest, ties to even, and saturates as CUDA's
// __NV_SATFINITE does (cvt.rn.satfinite.e4m3x2.f32): every finite or
// infinite value beyond +-448 becomes +-448; NaN becomes 0x7F.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>

namespace sol::reference {

/// The largest finite E4M3 value.
inline constexpr float kE4M3Max = 448.0f;

/// float -> E4M3 bits, round to nearest even, saturating (see above).
uint8_t floatToE4M3(float x);

/// E4M3 bits -> float (exact); 0x7F and 0xFF are NaN.
float e4m3ToFloat(uint8_t bits);

/// A KV-cache row's scale: max |x| over the row (NaNs ignored, as fmaxf
/// does) divided by 448 in float32, or 1 when that is 0.
float kvRowScale(std::span<const float> row);

/// Replaces each x of `row` by what the fp8 cache holds for it,
/// e4m3(x / scale) * scale in float32, and returns the scale.
float quantizeKvRow(std::span<float> row);

} // namespace sol::reference

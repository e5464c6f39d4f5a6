//===- Fp8.h - Host fp8 E4M3 rounding ---------------------------*- C++ -*-===//
//
// One host definition of float <-> E4M3 shared by the compiler (fp8 weight
// quantization), the reference executor (fp8 KV cache and activations) and
// the tests, so that every host path rounds exactly as the GPU does.
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

namespace sol {

/// The largest finite E4M3 value.
inline constexpr float kE4M3Max = 448.0f;

/// float -> E4M3 bits, round to nearest even, saturating (see above).
uint8_t floatToE4M3(float x);

/// E4M3 bits -> float (exact); 0x7F and 0xFF are NaN.
float e4m3ToFloat(uint8_t bits);

} // namespace sol

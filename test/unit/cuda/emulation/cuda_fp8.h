//===- cuda_fp8.h - Stand-in for CUDA's cuda_fp8.h on the CPU ---*- C++ -*-===//
//
// The float -> E4M3 conversion LinearGemvQuant.cuh uses, for the CPU
// emulation (CudaEmulation.h): __nv_cvt_float2_to_fp8x2 with
// __NV_SATFINITE and __NV_E4M3, i.e. cvt.rn.satfinite.e4m3x2.f32: round to
// nearest even, magnitudes beyond 448 (infinities too) saturate to 448, NaN
// becomes 0x7F. The first value lands in the low byte. Other variants
// (E5M2, no saturation) are not emulated and abort.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "CudaEmulation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned char __nv_fp8_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

namespace cuda_emulation {

inline __nv_fp8_storage_t floatToE4M3SatFinite(float f) {
  if (std::isnan(f))
    return 0x7f;
  const unsigned sign = std::signbit(f) ? 0x80u : 0u;
  const float a = std::fabs(f);
  if (a >= 448.0f)
    return static_cast<__nv_fp8_storage_t>(sign | 0x7eu);
  // E4M3 keeps 3 fraction bits: the quantum is 2^(exponent - 3), and
  // 2^-9 for subnormals (exponents below -6).
  int e = 0;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  const int exponent = std::max(e - 1, -6);
  const float quantum = std::ldexp(1.0f, exponent - 3);
  // a / quantum is exact (a power of two); nearbyint rounds half to even.
  const int units = static_cast<int>(std::nearbyint(a / quantum));
  unsigned code = units < 8
                      ? static_cast<unsigned>(units) // subnormal
                      : static_cast<unsigned>((exponent + 7) * 8 + (units - 8));
  if (code > 0x7eu)
    code = 0x7eu;
  return static_cast<__nv_fp8_storage_t>(sign | code);
}

} // namespace cuda_emulation

inline __nv_fp8x2_storage_t
__nv_cvt_float2_to_fp8x2(float2 v, __nv_saturation_t saturate,
                         __nv_fp8_interpretation_t interpretation) {
  if (saturate != __NV_SATFINITE || interpretation != __NV_E4M3)
    std::abort();
  return static_cast<__nv_fp8x2_storage_t>(
      cuda_emulation::floatToE4M3SatFinite(v.x) |
      cuda_emulation::floatToE4M3SatFinite(v.y) << 8);
}

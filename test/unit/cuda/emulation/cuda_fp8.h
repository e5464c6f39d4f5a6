//===- cuda_fp8.h - Stand-in for CUDA's cuda_fp8.h on the CPU ---*- C++ -*-===//
//
// The float -> E4M3 conversion LinearGemvQuant.cuh uses, for the CPU
// emulation (CudaEmulation.h): __nv_cvt_float2_to_fp8x2 with
// __NV_SATFINITE and __NV_E4M3, i.e. cvt.rn.satfinite.e4m3x2.f32: round to
// nearest even, magnitudes beyond 448 (infinities too) saturate to 448, NaN
// becomes 0x7F, which is the host's one definition, sol::floatToE4M3
// (runtime/support/Fp8.h). The first value lands in the low byte. Other
// variants (E5M2, no saturation) are not emulated and abort.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "CudaEmulation.h"
#include "runtime/support/Fp8.h"

#include <cstdlib>

typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned char __nv_fp8_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

inline __nv_fp8x2_storage_t
__nv_cvt_float2_to_fp8x2(float2 v, __nv_saturation_t saturate,
                         __nv_fp8_interpretation_t interpretation) {
  if (saturate != __NV_SATFINITE || interpretation != __NV_E4M3)
    std::abort();
  return static_cast<__nv_fp8x2_storage_t>(sol::floatToE4M3(v.x) |
                                           sol::floatToE4M3(v.y) << 8);
}

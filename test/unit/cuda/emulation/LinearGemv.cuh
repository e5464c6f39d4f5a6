//===- LinearGemv.cuh - Stand-in for the GEMV header on the CPU -----------===//
//
// What LinearSkinny.cuh takes from codegen/kernels/LinearGemv.cuh, for the
// CPU emulation: the output stores.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

namespace sol {
namespace kernels {
inline void storeOutput(float *p, float v) { *p = v; }
inline void storeOutput(bf16 *p, float v) { *p = __float2bfloat16_rn(v); }
} // namespace kernels
} // namespace sol

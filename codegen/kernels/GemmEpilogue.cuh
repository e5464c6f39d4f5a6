//===- GemmEpilogue.cuh - Stores of the tensor-core GEMMs' C fragments ----===//
//
// A lane's m16n8 C fragment holds columns (col, col + 1) of a row: the
// GEMMs (LinearGemm.cuh, LinearGemmQuant.cuh) store them as a pair, through
// the linear epilogue (kEpilogue* in Common.cuh) with linear_gemv's bf16
// roundings.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

namespace sol {
namespace kernels {
namespace gemm_detail {

__device__ __forceinline__ void storePair(float *p, float a, float b) {
  *reinterpret_cast<float2 *>(p) = make_float2(a, b);
}
__device__ __forceinline__ void storePair(bf16 *p, float a, float b) {
  *reinterpret_cast<unsigned *>(p) = packBf16Pair(a, b);
}

// The epilogue of columns (col, col + 1) of one row: a plain or residual
// store, or, for a gated epilogue (swiglu, geglu), the one output of that
// (gate, up) pair.
template <int Epilogue>
__device__ __forceinline__ void storeLinearPair(float *y, int N, int row,
                                                int col, float a, float b) {
  static_assert(Epilogue == kEpilogueNone, "fp32 output: no epilogue");
  storePair(y + static_cast<long long>(row) * N + col, a, b);
}
template <int Epilogue>
__device__ __forceinline__ void storeLinearPair(bf16 *y, int N, int row,
                                                int col, float a, float b) {
  if constexpr (isGatedEpilogue(Epilogue)) {
    y[static_cast<long long>(row) * (N / 2) + col / 2] = __float2bfloat16_rn(
        gateActivation<Epilogue>(roundToBf16(a)) * roundToBf16(b));
  } else if constexpr (Epilogue == kEpilogueResidual) {
    bf16 *p = y + static_cast<long long>(row) * N + col;
    const unsigned old = *reinterpret_cast<const unsigned *>(p);
    storePair(p, lowBf16(old) + roundToBf16(a), highBf16(old) + roundToBf16(b));
  } else {
    storePair(y + static_cast<long long>(row) * N + col, a, b);
  }
}

} // namespace gemm_detail
} // namespace kernels
} // namespace sol

//===- Dequantize.cuh - A quantized weight back to bf16 -------------------===//
//
// out[n, k] = bf16(W'[n, k]) for a weight in one of linear_gemv_quant's
// formats (LinearGemvQuant.cuh; the layouts of runtime/support/Quantize.h).
// Steps of more rows than the quantized single-pass kernels take run the
// bf16 GEMMs over this copy (runtime/cuda/KernelSelection.cpp); the dequant
// helpers are linear_gemv_quant's, so both read the codes alike. W' is
// computed in fp32 and rounded to bf16 once.
//
// Each thread converts one 16-byte vector of codes (16 int8 or fp8 values,
// 32 int4 values) per pass of a grid-stride loop. The kernel waits for its
// predecessor before writing: the previous kernel may be a GEMM still
// reading the same scratch copy.
//
// Launch: DequantizeArgs (LaunchArgs.h), DequantizeSpec::dims
// (runtime/cuda/KernelSpecs.h). Requires K a multiple of a vector's values
// and, for int4, of GroupSize.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearGemvQuant.cuh"

namespace sol {
namespace kernels {

constexpr int kDequantizeThreads = 256;

template <WeightFormat F, int GroupSize>
__global__ void __launch_bounds__(kDequantizeThreads)
    dequantize_weight(const __grid_constant__ DequantizeArgs args) {
  constexpr bool kInt4 = F == WeightFormat::Int4;
  constexpr int E = quant_gemv::kVectorValues<F>;
  static_assert(kInt4 ? GroupSize > 0 && GroupSize % E == 0 : GroupSize == 0,
                "dequantize_weight: int4 groups are a multiple of 32; int8 "
                "and fp8 take GroupSize 0");
  allowDependentLaunch();
  waitForPredecessor();
  const int K = args.k;
  const int vectorsPerRow = K / E;
  const int groups = kInt4 ? K / GroupSize : 1;
  const long long total = static_cast<long long>(args.n) * vectorsPerRow;
  // E4M3 codes decode to 2^-120 times their value (dequantFp8).
  const float codeScale = F == WeightFormat::Fp8 ? 0x1p120f : 1.0f;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = i / vectorsPerRow;
    const int v = static_cast<int>(i % vectorsPerRow);
    const uint4 codes = loadStreaming16(args.w + i * 16);
    float scale;
    unsigned negativeZero = 0;
    if constexpr (kInt4) {
      const long long g = row * groups + v * E / GroupSize;
      scale = args.scales[g];
      negativeZero = quant_gemv::int4NegativeZero(args.zeros[g]);
    } else {
      scale = args.scales[row] * codeScale;
    }
    bf16 *out = args.out + row * K + static_cast<long long>(v) * E;
#pragma unroll
    for (int c = 0; c < E / 8; ++c) {
      float f[8];
      quant_gemv::dequant<F>(codes, c, negativeZero, f);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        f[j] *= scale;
      store16(out + c * 8, pack8(f));
    }
  }
}

} // namespace kernels
} // namespace sol

//===- QuantizeActivations.cuh - fp8 activation rows for an fp8 GEMM ------===//
//
// quantize_rows_fp8<K>: the W8A8 rule of the fp8 plans (runtime/support/
// Quantize.h; linear_gemv_quant quantizes the same way in its prologue) for
// the rows of an fp8 GEMM on Hopper's tensor cores (cuBLASLt, which scales
// its fp32 sums back by the weights' and the rows' scales):
//   s[t] = max|x[t]| / 448 (1 if 0),
//   codes[t][k] = e4m3(x[t][k] / s[t]), nearest even, saturated,
// with s[t] written once for every 128 k, rows fastest (scales
// [K / 128, rows]): cuBLASLt's VEC128_32F block scales, the form of
// per-row scales Hopper's fp8 GEMMs accept (it has no outer-vector mode).
// Measured, not documented: with k blocks fastest ([rows, K / 128]) the
// GEMM's logits were noise against the reference executor (relative
// error 1.4 on a random two-layer model with K = 256 and 512), rows
// fastest 0.04 (the W8A8 rule's own sensitivity to bf16 roundings of x;
// the bf16 copy's W8A16 gave 0.11). One 256-thread block a row:
// quant_gemv::quantizeRowsFp8 over one row, its quotients stored as E4M3
// bytes. x is read after waitForPredecessor().
//
// repeat_scales: out[r][i] = in[i] for r < repeats, the weights' per-row
// scales in the same layout (once, when the executor starts).
//
// Launch: QuantizeRowsArgs (LaunchArgs.h), rows blocks of 256 threads
// (QuantizeRowsFp8Spec in runtime/cuda/KernelSpecs.h); RepeatScalesArgs,
// RepeatScalesSpec. Requires K a multiple of 128 and 16-byte aligned rows.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearGemvQuant.cuh"

namespace sol {
namespace kernels {

template <int K>
__global__ void __launch_bounds__(kGemvThreads)
    quantize_rows_fp8(const __grid_constant__ QuantizeRowsArgs args) {
  static_assert(K % 128 == 0, "quantize_rows_fp8: K must be a multiple of 128");
  constexpr int kBlocks = K / 128;
  static_assert(kBlocks <= kGemvThreads, "quantize_rows_fp8: K too large");
  allowDependentLaunch();
  waitForPredecessor();
  const long long row = blockIdx.x;
  const bf16 *const x = args.x + row * K;
  unsigned char *const codes = args.codes + row * K;
  __shared__ float scale;
  quant_gemv::quantizeRowsFp8<K, 1>(
      [&](int, int v) { return loadActivation16(x + v * 8); },
      [&](int, int v, const float(&q)[8]) {
        uint2 out;
        out.x = quant_gemv::e4m3Pair(q, 0) | quant_gemv::e4m3Pair(q, 2) << 16;
        out.y = quant_gemv::e4m3Pair(q, 4) | quant_gemv::e4m3Pair(q, 6) << 16;
        *reinterpret_cast<uint2 *>(codes + v * 8) = out;
      },
      1, &scale);
  if (threadIdx.x < kBlocks)
    args.scales[threadIdx.x * args.rows + row] = scale;
}

__global__ void __launch_bounds__(256)
    repeat_scales(const __grid_constant__ RepeatScalesArgs args) {
  const long long i =
      static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<long long>(args.count) * args.repeats)
    args.out[i] = args.in[i % args.count];
}

} // namespace kernels
} // namespace sol

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
// the bf16 copy's W8A16 gave 0.11). One 256-thread block a row, the row
// read once into registers (the GEMV prologue's quant_gemv::quantizeRowsFp8
// reads it twice, having no registers to spare beside its weights); x is
// read after waitForPredecessor().
//
// rms_norm_quantize_fp8<K>: the same of a NormLinear's normalised rows,
// rms_norm's arithmetic first, so that the normalised rows are never
// stored (rms_norm wrote them as bf16 for quantize_rows_fp8 to read back).
//
// repeat_scales: out[r][i] = in[i] for r < repeats, the weights' per-row
// scales in the same layout (once, when the executor starts).
//
// Launch: QuantizeRowsArgs or NormQuantizeRowsArgs (LaunchArgs.h), rows
// blocks of 256 threads (QuantizeRowsFp8Spec in runtime/cuda/KernelSpecs.h);
// RepeatScalesArgs, RepeatScalesSpec. Requires K a multiple of 128 and
// 16-byte aligned rows.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearGemvQuant.cuh"

namespace sol {
namespace kernels {

namespace quantize_detail {

// One row held in registers by a 256-thread block: thread i's 16-byte
// vectors i, i + 256, ... (8 values each). A standalone kernel has the
// registers to spare, so the row is read once from memory and both passes
// (the maximum, then the quotients) run over registers.
template <int K> struct RowVectors {
  static constexpr int kVecs = K / 8;
  static constexpr int kPer = ceilDiv(kVecs, kGemvThreads);
  uint4 v[kPer];

  __device__ static bool has(int i) {
    return threadIdx.x + i * kGemvThreads < kVecs;
  }
  __device__ static int index(int i) { return threadIdx.x + i * kGemvThreads; }
};

// The E4M3 codes of a row's x / s (`divide`), stored.
template <int K, typename Divide>
__device__ __forceinline__ void storeQuotients(const RowVectors<K> &x,
                                               unsigned char *codes,
                                               const Divide &divide) {
#pragma unroll
  for (int i = 0; i < RowVectors<K>::kPer; ++i)
    if (x.has(i)) {
      float q[8];
      unpack8(x.v[i], q);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        q[j] = divide(q[j]);
      uint2 out;
      out.x = quant_gemv::e4m3Pair(q, 0) | quant_gemv::e4m3Pair(q, 2) << 16;
      out.y = quant_gemv::e4m3Pair(q, 4) | quant_gemv::e4m3Pair(q, 6) << 16;
      *reinterpret_cast<uint2 *>(codes + x.index(i) * 8) = out;
    }
}

// The fp8 activation rule (quant_gemv::quantizeRowsFp8's) over one row in
// registers: s = max|x| / 448 (1 if 0), codes[k] = e4m3(x[k] / s), and s
// once for every 128 k of scales[K / 128][rows] at `row`.
template <int K>
__device__ __forceinline__ void quantizeRow(const RowVectors<K> &x,
                                            unsigned char *codes, float *scales,
                                            int rows, long long row) {
  constexpr int kPer = RowVectors<K>::kPer;
  __shared__ float partial[kGemvWarps];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    if (x.has(i)) {
      float f[8];
      unpack8(x.v[i], f);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        amax = fmaxf(amax, fabsf(f[j]));
    }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = 0.0f;
#pragma unroll
  for (int w = 0; w < kGemvWarps; ++w)
    amax = fmaxf(amax, partial[w]);
  float scale = amax / quant_gemv::kFp8Max;
  scale = scale == 0.0f ? 1.0f : scale;
  // A branch per row (the block agrees): no lane runs both divisions.
  if (quant_gemv::hasFastFp8Division(scale))
    storeQuotients(x, codes, quant_gemv::Fp8FastDivision(scale));
  else
    storeQuotients(x, codes, quant_gemv::Fp8Division{scale});
  if (threadIdx.x < K / 128)
    scales[threadIdx.x * rows + row] = scale;
}

} // namespace quantize_detail

template <int K>
__global__ void __launch_bounds__(kGemvThreads)
    quantize_rows_fp8(const __grid_constant__ QuantizeRowsArgs args) {
  static_assert(K % 128 == 0, "quantize_rows_fp8: K must be a multiple of 128");
  static_assert(K / 128 <= kGemvThreads, "quantize_rows_fp8: K too large");
  allowDependentLaunch();
  waitForPredecessor();
  const long long row = blockIdx.x;
  const bf16 *const x = args.x + row * K;
  quantize_detail::RowVectors<K> v;
#pragma unroll
  for (int i = 0; i < v.kPer; ++i)
    v.v[i] = v.has(i) ? loadActivation16(x + v.index(i) * 8)
                      : make_uint4(0, 0, 0, 0);
  quantize_detail::quantizeRow<K>(v, args.codes + row * K, args.scales,
                                  args.rows, row);
}

// rms_norm_quantize_fp8<K>: quantize_rows_fp8 of a NormLinear's normalised
// x, bf16(w * bf16(x * rsqrt(mean(x^2) + eps))) (rms_norm's and the GEMV
// norm prologue's arithmetic), in one pass: the normalised rows are never
// stored as bf16.
template <int K>
__global__ void __launch_bounds__(kGemvThreads)
    rms_norm_quantize_fp8(const __grid_constant__ NormQuantizeRowsArgs args) {
  static_assert(K % 128 == 0,
                "rms_norm_quantize_fp8: K must be a multiple of 128");
  static_assert(K / 128 <= kGemvThreads, "rms_norm_quantize_fp8: K too large");
  using Row = quantize_detail::RowVectors<K>;
  // The norm weight is constant: read before waiting for x's producer.
  NormWeights<K> normW;
  normW.load(args.weight);
  allowDependentLaunch();
  waitForPredecessor();
  const long long row = blockIdx.x;
  const bf16 *const x = args.x + row * K;
  Row v;
#pragma unroll
  for (int i = 0; i < Row::kPer; ++i)
    v.v[i] = v.has(i) ? loadActivation16(x + v.index(i) * 8)
                      : make_uint4(0, 0, 0, 0);
  __shared__ float partial[kGemvWarps];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < Row::kPer; ++i)
    if (v.has(i)) {
      float f[8];
      unpack8(v.v[i], f);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        ss += f[j] * f[j];
    }
  ss = warpSum(ss);
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kGemvWarps; ++w)
    total += partial[w];
  const float inv = rsqrtf(total / static_cast<float>(K) + args.eps);
#pragma unroll
  for (int i = 0; i < Row::kPer; ++i)
    if (v.has(i)) {
      float f[8], wf[8];
      unpack8(v.v[i], f);
      unpack8(normW.v[i], wf);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        f[j] = wf[j] * roundToBf16(f[j] * inv);
      v.v[i] = pack8(f);
    }
  // quantizeRow's maxima have shared memory of their own: no barrier here.
  quantize_detail::quantizeRow<K>(v, args.codes + row * K, args.scales,
                                  args.rows, row);
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

//===- RmsNorm.cuh - RMSNorm with optional fused residual add -------------===//
//
// For each row r < rows:
//   if residual: h = bf16(x'[r] + residual[r]); residual[r] = h; else h = x[r]
//   out[r] = bf16(w * bf16(h * rsqrt(mean(h^2) + eps)))
// where x' = x, or with inputWeight, x normalised the same way by it
// (Gemma's norm of a sub-layer's output before the residual add); w is
// secondWeight for rows at secondFrom and after within their group (the k
// heads after the q heads), else weight.
// i.e. Hugging Face's LlamaRMSNorm: normalise in fp32, round to bf16, multiply
// by the bf16 weight and round again.
//
// Rows are D contiguous elements. They come in groups of `rowGroup` rows laid
// out back to back; consecutive groups are `xStride` / `outStride` elements
// apart. A plain norm over [rows, D] uses rowGroup = 1 and strides of D; the
// per-head q_norm / k_norm of Qwen3 runs in place on the fused QKV buffer with
// D = head_dim, rowGroup = heads, rows = T * heads and strides equal to the
// QKV row length. The residual, when given, is a contiguous [rows, D] tensor.
//
// Launch: RmsNormArgs (LaunchArgs.h), RmsNormShape<D>::kBlockThreads threads
// per block, and ceil(rows / RmsNormShape<D>::kRowsPerBlock) blocks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

template <int D> struct RmsNormShape {
  static_assert(D % 8 == 0, "rms_norm: D must be a multiple of 8");
  static_assert(D <= 32768, "rms_norm: D is larger than supported");
  static constexpr int kVecs = D / 8;
  // Small rows (head_dim) share a warp; large rows get up to 256 threads.
  static constexpr int kThreadsPerRow =
      kVecs <= 32 ? nextPowerOfTwo(kVecs) : constMin(256, roundUp(kVecs, 32));
  static constexpr int kVecsPerThread = ceilDiv(kVecs, kThreadsPerRow);
  static constexpr int kBlockThreads = constMax(kThreadsPerRow, 128);
  static constexpr int kRowsPerBlock = kBlockThreads / kThreadsPerRow;
  static constexpr int kWarpsPerRow = kThreadsPerRow / 32;
};

template <int Per>
__device__ __forceinline__ float sumOfSquares(const float (&v)[Per][8]) {
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < Per; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      sum += v[i][j] * v[i][j];
  return sum;
}

// The sum of `part` over the threads of one row. Rows wider than a warp
// meet in shared memory; each Use (0, 1) has its own, so that two sums in
// one kernel need no barrier between them.
template <typename Shape, int Use>
__device__ __forceinline__ float rowSum(float part, int lane, int rowInBlock) {
  if constexpr (Shape::kThreadsPerRow <= 32) {
    return groupSum<Shape::kThreadsPerRow>(part);
  } else {
    __shared__ float partial[Shape::kRowsPerBlock][Shape::kWarpsPerRow];
    const float warpTotal = warpSum(part);
    if (threadIdx.x % 32 == 0)
      partial[rowInBlock][lane / 32] = warpTotal;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < Shape::kWarpsPerRow; ++i)
      total += partial[rowInBlock][i];
    return total;
  }
}

template <int D>
__global__ void __launch_bounds__(RmsNormShape<D>::kBlockThreads)
    rms_norm(const __grid_constant__ RmsNormArgs args) {
  allowDependentLaunch();
  bf16 *const out = args.out;
  const bf16 *const x = args.x;
  bf16 *const residual = args.residual;
  const float eps = args.eps;
  const int rows = args.rows;
  const int x_stride = args.xStride;
  const int out_stride = args.outStride;
  const int row_group = args.rowGroup;
  using Shape = RmsNormShape<D>;
  constexpr int kTpr = Shape::kThreadsPerRow;
  constexpr int kPer = Shape::kVecsPerThread;
  const int rowInBlock = threadIdx.x / kTpr;
  const int lane = threadIdx.x % kTpr;
  const int row = blockIdx.x * Shape::kRowsPerBlock + rowInBlock;
  // Inactive threads still take part in the shuffles and barriers below.
  const bool activeRow = row < rows;
  const long long group = activeRow ? row / row_group : 0;
  const int inGroup = activeRow ? row % row_group : 0;
  const long long xOffset =
      group * static_cast<long long>(x_stride) + inGroup * D;
  const long long outOffset =
      group * static_cast<long long>(out_stride) + inGroup * D;
  const bf16 *const w =
      args.secondWeight != nullptr && inGroup >= args.secondFrom
          ? args.secondWeight
          : args.weight;
  const bf16 *const inputWeight = args.inputWeight;
  auto active = [&](int i) {
    return activeRow && lane + i * kTpr < Shape::kVecs;
  };
  auto at = [&](int i) { return (lane + i * kTpr) * 8; };

  // The weights are the plan's constants: their loads are in flight before
  // waiting for the kernel that writes x and the residual, and those two
  // load together after it, so that a one-row norm (decode) waits for one
  // round trip instead of four (Gemma-3-4B's residual add with its two
  // norms, one row, under Nsight Compute: 6.0 -> 3.8 us). The registers
  // this holds cost full-width rows some occupancy (4,096 rows of 2,048:
  // 3.4 TB/s against 3.7), a small part of a prompt step.
  uint4 wv[kPer], inputWv[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    wv[i] = active(i) ? load16(w + at(i)) : make_uint4(0, 0, 0, 0);
    inputWv[i] = active(i) && inputWeight != nullptr
                     ? load16(inputWeight + at(i))
                     : make_uint4(0, 0, 0, 0);
  }
  waitForPredecessor();
  uint4 xv[kPer], rv[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    xv[i] = active(i) ? load16(x + xOffset + at(i)) : make_uint4(0, 0, 0, 0);
    rv[i] = active(i) && residual != nullptr
                ? load16(residual + static_cast<long long>(row) * D + at(i))
                : make_uint4(0, 0, 0, 0);
  }

  float v[kPer][8];
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    unpack8(xv[i], v[i]); // zeros where inactive
  if (inputWeight != nullptr) {
    const float inv =
        rsqrtf(rowSum<Shape, 0>(sumOfSquares<kPer>(v), lane, rowInBlock) /
                   static_cast<float>(D) +
               args.inputEps);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      float wf[8];
      unpack8(inputWv[i], wf);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[i][j] = roundToBf16(wf[j] * roundToBf16(v[i][j] * inv));
    }
  }
  if (residual != nullptr) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      float r[8];
      unpack8(rv[i], r);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[i][j] = roundToBf16(v[i][j] + r[j]);
      if (active(i))
        store16(residual + static_cast<long long>(row) * D + at(i),
                pack8(v[i]));
    }
  }

  const float inv =
      rsqrtf(rowSum<Shape, 1>(sumOfSquares<kPer>(v), lane, rowInBlock) /
                 static_cast<float>(D) +
             eps);
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    if (active(i)) {
      float wf[8], o[8];
      unpack8(wv[i], wf);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        o[j] = wf[j] * roundToBf16(v[i][j] * inv);
      store16(out + outOffset + at(i), pack8(o));
    }
  }
}

} // namespace kernels
} // namespace sol

//===- Argmax.cuh - Greedy sampling: index of the largest logit -----------===//
//
// out[r] = argmax(logits[r, 0:V]). Ties go to the lowest index and NaN counts
// as the largest value, like torch.argmax. Blocks of 256 threads; the grid is
// described at the kernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kArgmaxThreads = 256;

// True when (a, ia) should win over (b, ib).
__device__ __forceinline__ bool argmaxBetter(float a, int ia, float b, int ib) {
  const bool aNan = a != a;
  const bool bNan = b != b;
  if (aNan || bNan)
    return aNan && (!bNan || ia < ib);
  return a > b || (a == b && ia < ib);
}

__device__ __forceinline__ void argmaxTake(float &best, int &bestIdx, float v,
                                           int idx) {
  if (argmaxBetter(v, idx, best, bestIdx)) {
    best = v;
    bestIdx = idx;
  }
}

// The block's best (value, index) pair ends up in thread 0.
__device__ __forceinline__ void argmaxBlockReduce(float &best, int &bestIdx) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const float v = __shfl_xor_sync(0xffffffffu, best, offset);
    const int idx = __shfl_xor_sync(0xffffffffu, bestIdx, offset);
    argmaxTake(best, bestIdx, v, idx);
  }
  __shared__ float warpBest[kArgmaxThreads / 32];
  __shared__ int warpIdx[kArgmaxThreads / 32];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) {
    warpBest[warp] = best;
    warpIdx[warp] = bestIdx;
  }
  __syncthreads();
  if (warp == 0) {
    constexpr int kWarps = kArgmaxThreads / 32;
    best = lane < kWarps ? warpBest[lane] : negativeInfinity();
    bestIdx = lane < kWarps ? warpIdx[lane] : 0x7fffffff;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      const float v = __shfl_xor_sync(0xffffffffu, best, offset);
      const int idx = __shfl_xor_sync(0xffffffffu, bestIdx, offset);
      argmaxTake(best, bestIdx, v, idx);
    }
  }
}

// Grid: (splits, rows). Block (s, r) scans the s-th slice of row r and leaves
// its winner in partialValue/partialIndex[r * splits + s]; the last block
// of a row to finish (counted in arrivals[r], which it resets to 0 for the
// next launch) reduces the row's partials. One block per row would leave a
// 128k-entry row to a single SM (13 us); slices spread it over the GPU.
// With one split the workspace pointers are unused and may be null.
__global__ void __launch_bounds__(kArgmaxThreads)
    argmax(const __grid_constant__ ArgmaxArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  int *const out = args.out;
  const float *const logits = args.logits;
  const int rows = args.rows;
  const int V = args.vocab;
  float *const partial_value = args.partialValue;
  int *const partial_index = args.partialIndex;
  unsigned *const arrivals = args.arrivals;
  const int r = blockIdx.y;
  const int splits = gridDim.x;
  if (r >= rows)
    return;
  const float *row = logits + static_cast<long long>(r) * V;
  float best = negativeInfinity();
  int bestIdx = 0x7fffffff;
  if (V % 4 == 0) {
    // Rows start 16-byte aligned when V is a multiple of 4.
    const int vecs = V / 4;
    const int per = (vecs + splits - 1) / splits;
    const int begin = blockIdx.x * per;
    const int end = min(begin + per, vecs);
    const float4 *row4 = reinterpret_cast<const float4 *>(row);
#pragma unroll 4
    for (int i = begin + threadIdx.x; i < end; i += kArgmaxThreads) {
      const float4 v = row4[i];
      argmaxTake(best, bestIdx, v.x, 4 * i);
      argmaxTake(best, bestIdx, v.y, 4 * i + 1);
      argmaxTake(best, bestIdx, v.z, 4 * i + 2);
      argmaxTake(best, bestIdx, v.w, 4 * i + 3);
    }
  } else {
    const int per = (V + splits - 1) / splits;
    const int begin = blockIdx.x * per;
    const int end = min(begin + per, V);
    for (int i = begin + threadIdx.x; i < end; i += kArgmaxThreads)
      argmaxTake(best, bestIdx, row[i], i);
  }
  argmaxBlockReduce(best, bestIdx);
  if (splits == 1) {
    if (threadIdx.x == 0)
      out[r] = bestIdx;
    return;
  }
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partial_value[r * splits + blockIdx.x] = best;
    partial_index[r * splits + blockIdx.x] = bestIdx;
    __threadfence();
    last = atomicAdd(&arrivals[r], 1u) == static_cast<unsigned>(splits - 1);
  }
  __syncthreads();
  if (!last || threadIdx.x >= 32)
    return;
  __threadfence();
  best = negativeInfinity();
  bestIdx = 0x7fffffff;
  for (int s = threadIdx.x; s < splits; s += 32)
    argmaxTake(best, bestIdx, __ldcg(partial_value + r * splits + s),
               __ldcg(partial_index + r * splits + s));
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const float v = __shfl_xor_sync(0xffffffffu, best, offset);
    const int idx = __shfl_xor_sync(0xffffffffu, bestIdx, offset);
    argmaxTake(best, bestIdx, v, idx);
  }
  if (threadIdx.x == 0) {
    out[r] = bestIdx;
    arrivals[r] = 0;
  }
}

} // namespace kernels
} // namespace sol

//===- Argmax.cuh - Greedy sampling: index of the largest logit -----------===//
//
// out[r] = argmax(logits[r, 0:V]). Ties go to the lowest index and NaN counts
// as the largest value, like torch.argmax. Grid: `rows` blocks of 1024 threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

namespace sol {
namespace kernels {

constexpr int kArgmaxThreads = 1024;

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

__global__ void __launch_bounds__(kArgmaxThreads)
    argmax(int *out, const float *logits, int rows, int V) {
  const int r = blockIdx.x;
  if (r >= rows)
    return;
  const float *row = logits + static_cast<long long>(r) * V;
  float best = negativeInfinity();
  int bestIdx = 0x7fffffff;
  if (V % 4 == 0) {
    // Rows start 16-byte aligned when V is a multiple of 4.
    const float4 *row4 = reinterpret_cast<const float4 *>(row);
    // Unrolled so each thread has several loads in flight: with one block per
    // row (a decode step has few rows) a single SM must pull the whole row.
#pragma unroll 8
    for (int i = threadIdx.x; i < V / 4; i += blockDim.x) {
      const float4 v = row4[i];
      argmaxTake(best, bestIdx, v.x, 4 * i);
      argmaxTake(best, bestIdx, v.y, 4 * i + 1);
      argmaxTake(best, bestIdx, v.z, 4 * i + 2);
      argmaxTake(best, bestIdx, v.w, 4 * i + 3);
    }
  } else {
    for (int i = threadIdx.x; i < V; i += blockDim.x)
      argmaxTake(best, bestIdx, row[i], i);
  }
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
    const int warps = blockDim.x / 32;
    best = lane < warps ? warpBest[lane] : negativeInfinity();
    bestIdx = lane < warps ? warpIdx[lane] : 0x7fffffff;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      const float v = __shfl_xor_sync(0xffffffffu, best, offset);
      const int idx = __shfl_xor_sync(0xffffffffu, bestIdx, offset);
      argmaxTake(best, bestIdx, v, idx);
    }
    if (lane == 0)
      out[r] = bestIdx;
  }
}

} // namespace kernels
} // namespace sol

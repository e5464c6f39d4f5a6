//===- LinearPrologue.cuh - What the few-row linear kernels share ---------===//
//
// linear_gemv, linear_gemv_quant and linear_skinny run 256-thread blocks,
// store bf16 or fp32 outputs, reduce partial sums across a warp
// (warpReduceScatter), and may fuse a decoder layer's RMS norm into their
// prologue: every block normalises the few rows of x into shared memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kGemvThreads = 256;
constexpr int kGemvWarps = kGemvThreads / 32;

__device__ __forceinline__ void storeOutput(float *p, float v) { *p = v; }
__device__ __forceinline__ void storeOutput(bf16 *p, float v) {
  *p = __float2bfloat16_rn(v);
}

__host__ __device__ constexpr int log2OfPowerOfTwo(int v) {
  int l = 0;
  while ((1 << l) < v)
    ++l;
  return l;
}

// One butterfly step of warpReduceScatter: the lanes keep `Half` of their
// 2 * Half values (upper or lower half by lane bit `Offset`) and add the
// partner's copy of them. Recursion rather than a loop so that every array
// index is a compile-time constant and `vals` stays in registers.
template <int Half, int Offset>
__device__ __forceinline__ void reduceScatterStep(float *vals, int lane) {
  const bool upper = (lane & Offset) != 0;
#pragma unroll
  for (int i = 0; i < Half; ++i) {
    const float send = upper ? vals[i] : vals[i + Half];
    const float keep = upper ? vals[i + Half] : vals[i];
    vals[i] = keep + __shfl_xor_sync(0xffffffffu, send, Offset);
  }
  if constexpr (Half > 1)
    reduceScatterStep<Half / 2, Offset / 2>(vals, lane);
}

// Sums V (a power of two <= 32) values over the warp in about V shuffles
// instead of 5 * V. Returns the warp total of value number
// lane >> (5 - log2(V)).
template <int V>
__device__ __forceinline__ float warpReduceScatter(float (&vals)[V], int lane) {
  static_assert(isPowerOfTwo(V) && V <= 32, "1, 2, 4, ..., 32 values");
  constexpr int kSteps = log2OfPowerOfTwo(V);
  if constexpr (V > 1)
    reduceScatterStep<V / 2, 16>(vals, lane);
  float total = vals[0];
#pragma unroll
  for (int offset = 16 >> kSteps; offset > 0; offset /= 2)
    total += __shfl_xor_sync(0xffffffffu, total, offset);
  return total;
}

// The norm weight's 16-byte vectors a thread of a 256-thread block uses in
// a norm prologue over K features (linear_gemv's and linear_skinny's).
template <int K> struct NormWeights {
  static constexpr int kPer = ceilDiv(K / 8, kGemvThreads);
  uint4 v[kPer];

  // A weight: loaded before waiting for the kernel that produces x, so the
  // prologue does not wait for it after the sums of squares.
  __device__ __forceinline__ void load(const bf16 *norm_w) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int vec = threadIdx.x + i * kGemvThreads;
      v[i] =
          vec < K / 8 ? loadShared16(norm_w + vec * 8) : make_uint4(0, 0, 0, 0);
    }
  }
};

// One row of x held in registers, the 16-byte vectors a thread of a 256-thread
// block uses in a norm prologue over K features: loaded right after
// waitForPredecessor() and ahead of the first weights, so that the prologue's
// critical path (x, its sum of squares, two barriers) overlaps the weights'
// latency instead of following it.
template <int K> struct ActivationRow {
  static constexpr int kPer = NormWeights<K>::kPer;
  uint4 v[kPer];

  __device__ __forceinline__ void load(const bf16 *x) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int vec = threadIdx.x + i * kGemvThreads;
      v[i] = vec < K / 8 ? load16(x + vec * 8) : make_uint4(0, 0, 0, 0);
    }
  }
};

// The norm prologue: xs[t] = bf16(norm_w * bf16(x[t] * rsqrt(mean(x[t]^2) +
// eps))) for t < rows, the RmsNorm kernel's arithmetic, into shared memory.
// Every block recomputes it: x is a few KB in L2, and the separate norm
// launch it replaces costs more. xVector(t, i) gives thread i's vector i of
// row t (from global memory, or from an ActivationRow).
template <int K, int MaxRows, typename XVector>
__device__ __forceinline__ void
gemvNormPrologueFrom(bf16 *xs, const XVector &xVector,
                     const NormWeights<K> &norm_w, float eps, int rows) {
  constexpr int kVecs = K / 8;
  constexpr int kPer = NormWeights<K>::kPer;
  __shared__ float partial[MaxRows][kGemvWarps];
  float ss[MaxRows];
#pragma unroll
  for (int t = 0; t < MaxRows; ++t) {
    ss[t] = 0.0f;
    if (t < rows) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int v = threadIdx.x + i * kGemvThreads;
        if (v < kVecs) {
          float f[8];
          unpack8(xVector(t, i), f);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            ss[t] += f[j] * f[j];
        }
      }
    }
    ss[t] = warpSum(ss[t]);
    if (threadIdx.x % 32 == 0)
      partial[t][threadIdx.x / 32] = ss[t];
  }
  __syncthreads();
#pragma unroll
  for (int t = 0; t < MaxRows; ++t) {
    if (t < rows) {
      float total = 0.0f;
#pragma unroll
      for (int w = 0; w < kGemvWarps; ++w)
        total += partial[t][w];
      const float inv = rsqrtf(total / static_cast<float>(K) + eps);
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int v = threadIdx.x + i * kGemvThreads;
        if (v < kVecs) {
          float f[8], wf[8], o[8];
          unpack8(xVector(t, i), f);
          unpack8(norm_w.v[i], wf);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            o[j] = wf[j] * roundToBf16(f[j] * inv);
          store16(xs + t * K + v * 8, pack8(o));
        }
      }
    }
  }
  __syncthreads();
}

// The norm prologue over MaxRows rows of x in global memory.
template <int K, int MaxRows>
__device__ __forceinline__ void gemvNormPrologue(bf16 *xs, const bf16 *x,
                                                 const NormWeights<K> &norm_w,
                                                 float eps, int rows) {
  gemvNormPrologueFrom<K, MaxRows>(
      xs,
      [x](int t, int i) {
        return load16(x + static_cast<long long>(t) * K +
                      (threadIdx.x + i * kGemvThreads) * 8);
      },
      norm_w, eps, rows);
}

// The norm prologue over the one row an ActivationRow holds.
template <int K>
__device__ __forceinline__ void
gemvNormPrologue(bf16 *xs, const ActivationRow<K> &x,
                 const NormWeights<K> &norm_w, float eps) {
  gemvNormPrologueFrom<K, 1>(
      xs, [&x](int, int i) { return x.v[i]; }, norm_w, eps, 1);
}

} // namespace kernels
} // namespace sol

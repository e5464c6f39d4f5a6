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
#include "RmsNorm.cuh"

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

// The residual add a one-row linear_gemv may take into its prologue (the
// AddNorm variants, LinearGemv.cuh): none, the add of x to the residual,
// or the add of x normalised by its own weight (Gemma's norms after
// attention and after the MLP).
constexpr int kAddNormNone = 0;
constexpr int kAddNormResidual = 1;
constexpr int kAddNormInputNorm = 2;

// The sum of every thread's `part` over a 256-thread block in rms_norm's
// order (RmsNorm.cuh's rowSum for a row over the block: each warp's
// butterfly, then the warps' totals in order). Each Use (0, 1) has its own
// shared slots, so that two sums need no barrier between them.
template <int Use> __device__ __forceinline__ float blockSum(float part) {
  __shared__ float partial[kGemvWarps];
  const float warpTotal = warpSum(part);
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = warpTotal;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kGemvWarps; ++w)
    total += partial[w];
  return total;
}

// The AddNorm prologue over one row: h = bf16(x' + residual), where x' = x
// (kAddNormResidual) or bf16(inputW * bf16(x * rsqrt(mean(x^2) +
// inputEps))) (kAddNormInputNorm); then sum = h and xs = bf16(normW *
// bf16(h * rsqrt(mean(h^2) + eps))), both into shared memory. This is
// rms_norm's arithmetic with a residual, bit for bit: a thread holds the
// same vectors (i, i + 256, ...) and adds the same parts in the same order.
// Ends with a barrier. The residual is not written here: other blocks still
// read it (gemvAddNormWriteBack).
template <int K, int AddNorm>
__device__ __forceinline__ void
gemvAddNormPrologue(bf16 *xs, bf16 *sum, const bf16 *x, const bf16 *residual,
                    const NormWeights<K> &normW, const NormWeights<K> &inputW,
                    float eps, float inputEps) {
  static_assert(AddNorm == kAddNormResidual || AddNorm == kAddNormInputNorm,
                "gemvAddNormPrologue: no such residual add");
  constexpr int kVecs = K / 8;
  constexpr int kPer = NormWeights<K>::kPer;
  auto vector = [](int i) {
    return static_cast<int>(threadIdx.x) + i * kGemvThreads;
  };
  float v[kPer][8];
  uint4 rv[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const bool ok = vector(i) < kVecs;
    unpack8(ok ? load16(x + vector(i) * 8) : make_uint4(0, 0, 0, 0), v[i]);
    rv[i] = ok ? load16(residual + vector(i) * 8) : make_uint4(0, 0, 0, 0);
  }
  if constexpr (AddNorm == kAddNormInputNorm) {
    const float inv = rsqrtf(
        blockSum<0>(sumOfSquares<kPer>(v)) / static_cast<float>(K) + inputEps);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      float wf[8];
      unpack8(inputW.v[i], wf);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[i][j] = roundToBf16(wf[j] * roundToBf16(v[i][j] * inv));
    }
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    float r[8];
    unpack8(rv[i], r);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      v[i][j] = roundToBf16(v[i][j] + r[j]);
    if (vector(i) < kVecs)
      store16(sum + vector(i) * 8, pack8(v[i]));
  }
  const float inv =
      rsqrtf(blockSum<1>(sumOfSquares<kPer>(v)) / static_cast<float>(K) + eps);
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    if (vector(i) < kVecs) {
      float wf[8], o[8];
      unpack8(normW.v[i], wf);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        o[j] = wf[j] * roundToBf16(v[i][j] * inv);
      store16(xs + vector(i) * 8, pack8(o));
    }
  }
  __syncthreads();
}

// After an AddNorm prologue, called by warp 0 of every block: `arrival` is
// lane 0's result of the atomicAdd on `arrivals` that its block made once all
// its threads had read the residual. The block that arrived last is the one
// after which no block reads the residual any more: it writes the sum over
// the residual and zeroes the counter for the next launch.
template <int K>
__device__ __forceinline__ void
gemvAddNormWriteBack(bf16 *residual, const bf16 *sum, unsigned *arrivals,
                     unsigned arrival) {
  if (__shfl_sync(0xffffffffu, arrival, 0) != gridDim.x - 1)
    return;
  const int lane = threadIdx.x % 32;
  for (int v = lane; v < K / 8; v += 32)
    store16(residual + v * 8, load16(sum + v * 8));
  if (lane == 0)
    *arrivals = 0;
}

} // namespace kernels
} // namespace sol

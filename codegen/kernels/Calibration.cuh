//===- Calibration.cuh - float32 kernels of the GPU calibration evaluator -===//
//
// AWQ's searches evaluate the model in float32 over the calibration tokens
// many times (each candidate scale of each layer). On the GPU, cuBLASLt does
// the linears (bf16 operands, rounded here by calib_to_bf16 and
// calib_awq_candidate, float32 results) and these kernels do everything
// else: the embedding, RMS norms, rope, attention, the elementwise ops, the
// shared-expert gate, a mixture's row gathers and weighted sums, and the
// searches' own reductions (column means, squared errors, int4 round trips,
// Gram matrices, the int4 clipping search).
//
// They mirror passes/TensorEvaluator.cpp (and the int4 rules of
// runtime/support/Quantize.h), so that the searches on the GPU reach the
// CPU's decisions: the same float formulas, each rounding where the CPU
// rounds. Where a decision hinges on exact values (the int4 round trips, the
// clip search's errors, the Gram matrices it reads) they repeat the CPU's
// operations in its order with __fmul_rn / __fadd_rn, which the compiler does
// not fuse into multiply-adds (the host code has no FMA), as does rope;
// elsewhere (sums over rows, attention) the order differs, and expf / tanhf
// are CUDA's (within 2 ulp of the host's), so results agree to float rounding.
//
// Sizes are runtime arguments. Launch: the args struct of LaunchArgs.h,
// blocks of exactly kCalibThreads threads (the tiles below assume it) and
// calib*Blocks() blocks (the host's calib*Dims()); no dynamic shared memory,
// no programmatic dependent launch (calib_attention_tc, at the end, has its
// own block size and dynamic shared memory). Every kernel loops grid-stride
// over its work items (the unit named at each kernel), so any grid is
// correct.
// Pointers are cudaMalloc-aligned (attention reads float4s).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kCalibWarps = kCalibThreads / 32;

// The warp's sum of v (every lane takes part).
__device__ __forceinline__ double calibWarpSum(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The block's sum of v, in every thread (every thread takes part; partial
// holds a value per warp). Ends with a barrier, so partial can be reused.
template <typename T>
__device__ __forceinline__ T calibBlockSum(T v, T *partial) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = v;
  __syncthreads();
  T total = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w)
    total += partial[w];
  __syncthreads();
  return total;
}

// The warp's index among all warps of the grid, and their number.
__device__ __forceinline__ long long calibGlobalWarp() {
  return static_cast<long long>(blockIdx.x) * (blockDim.x / 32) +
         threadIdx.x / 32;
}
__device__ __forceinline__ long long calibGridWarps() {
  return static_cast<long long>(gridDim.x) * (blockDim.x / 32);
}

__device__ __forceinline__ float4 calibLoad4(const float *p) {
  return *reinterpret_cast<const float4 *>(p);
}

// runtime/support/Activations.h's silu and geluTanh, rounded as there.
__device__ __forceinline__ float calibSilu(float x) {
  return x / (1.0f + expf(-x));
}
__device__ __forceinline__ float calibGeluTanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float cube = __fmul_rn(__fmul_rn(__fmul_rn(0.044715f, x), x), x);
  const float inner = __fmul_rn(kSqrt2OverPi, __fadd_rn(x, cube));
  return __fmul_rn(__fmul_rn(0.5f, x), 1.0f + tanhf(inner));
}

// quant::int4GroupParams of a group's min and max and a clip ratio: the
// scale and the zero point (0..15, as a float).
struct CalibInt4Group {
  float scale;
  float zero;
};
__device__ __forceinline__ CalibInt4Group calibInt4Params(float minv,
                                                          float maxv,
                                                          float ratio) {
  constexpr float kMinRange = 1e-5f; // quant::kInt4MinRange
  maxv = __fmul_rn(maxv, ratio);
  minv = __fmul_rn(minv, ratio);
  const float scale = fmaxf(__fsub_rn(maxv, minv), kMinRange) / 15.0f;
  const float zero = fminf(fmaxf(rintf(-minv / scale), 0.0f), 15.0f);
  return {scale, zero};
}
// quant::int4Dequantize(quant::int4Quantize(w)): rintf is nearbyint in the
// default rounding mode; q - zero is an exact small integer.
__device__ __forceinline__ float calibInt4RoundTrip(float w, CalibInt4Group p) {
  const float q = fminf(fmaxf(rintf(w / p.scale) + p.zero, 0.0f), 15.0f);
  return __fmul_rn(q - p.zero, p.scale);
}

//===----------------------------------------------------------------------===//
// calib_embedding: a block per token (grid-stride over tokens).
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_embedding(const __grid_constant__ CalibEmbeddingArgs args) {
  const long long width = args.width;
  for (int t = blockIdx.x; t < args.tokens; t += gridDim.x) {
    const float *row = args.table + args.ids[t] * width;
    float *out = args.out + t * width;
    for (int c = threadIdx.x; c < args.width; c += blockDim.x)
      out[c] = row[c] * args.scale;
  }
}

//===----------------------------------------------------------------------===//
// calib_rms_norm: a warp per run of `group` columns of a row (grid-stride
// over rows * cols / group runs). The sum of squares is in double like the
// CPU's inverseRms (lanes, then a tree over them), the scaling as there:
// float(x * inv) * weight with inv in double.
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_rms_norm(const __grid_constant__ CalibRmsNormArgs args) {
  const int lane = threadIdx.x % 32;
  const int group = args.group;
  const long long runs =
      static_cast<long long>(args.rows) * (args.cols / group);
  for (long long r = calibGlobalWarp(); r < runs; r += calibGridWarps()) {
    // Runs tile each row, and rows are contiguous.
    const float *x = args.x + r * group;
    float *out = args.out + r * group;
    double sum = 0.0;
    for (int j = lane; j < group; j += 32) {
      const double v = x[j];
      sum += v * v;
    }
    sum = calibWarpSum(sum);
    const double inv = 1.0 / sqrt(sum / static_cast<double>(group) + args.eps);
    for (int j = lane; j < group; j += 32)
      out[j] = static_cast<float>(x[j] * inv) * args.weight[j];
  }
}

//===----------------------------------------------------------------------===//
// calib_rope: a block per token (grid-stride over tokens), its threads over
// (head, pair) with pairs (i, i + dim / 2).
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_rope(const __grid_constant__ CalibRopeArgs args) {
  const int half = args.dim / 2;
  const int pairs = args.heads * half;
  const long long width = static_cast<long long>(args.heads) * args.dim;
  for (int t = blockIdx.x; t < args.tokens; t += gridDim.x) {
    const float *cosRow =
        args.cosTable + static_cast<long long>(args.positions[t]) * half;
    const float *sinRow =
        args.sinTable + static_cast<long long>(args.positions[t]) * half;
    const float *x = args.x + t * width;
    float *out = args.out + t * width;
    for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
      const int h = p / half, i = p % half;
      const int lo = h * args.dim + i;
      const float c = cosRow[i], s = sinRow[i];
      const float x1 = x[lo], x2 = x[lo + half];
      out[lo] = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
      out[lo + half] = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
    }
  }
}

//===----------------------------------------------------------------------===//
// calib_attention: a warp per kCalibAttentionQueries (8) consecutive tokens
// of one head; a block holds kCalibWarps such tiles of one head
// (kCalibAttentionBlockTokens consecutive tokens), and the grid strides over
// ceil(tokens / kCalibAttentionBlockTokens) * heads block tiles, the heads of
// a tile adjacent (GQA heads read the same K/V rows, from L2).
//
// The warp takes its tokens Q at a time (Q = 8 for dim <= 128; two passes of
// Q = 4 above, up to kCalibAttentionMaxDim, for registers) and walks the
// union of their key ranges in chunks of K = 32 / Q keys, so that a chunk's
// Q x K scores are one per lane (lane l: query l % Q, key l / Q), with an
// online softmax (a running max and sum per query):
//  * scores: each lane holds a float4 slice of the head dim (dims
//    4 (lane + 32 s), s < S, S = ceil(dim / 128)) of the Q queries in
//    registers, loads the same slice of each key (coalesced row reads), and
//    forms its Q partial dot products with it; transposing butterflies
//    (31 shuffles a chunk: over the low lane bits per key, then over the high
//    bits across keys) leave each lane its score;
//  * weights: per query, the chunk max over its K lanes, the rescaling of
//    the running state (only when the max moved), p = exp(score - max);
//  * values: the warp's 32 weights go through shared memory (a key's Q
//    weights are one broadcast load), and each lane adds p * v of each key
//    to its queries' output slices.
// Keys outside a query's range (before its sequence start or window, after
// its token) get weight 0. The CPU normalises with the global max instead:
// the results agree to float rounding.
//===----------------------------------------------------------------------===//

// One step of a transposing warp sum: lanes `mask` apart exchange halves of
// v[0, 2 W): a lane keeps the half whose index has its bit `mask` (index bit
// W), adds its partner's values of that half, and leaves them in v[0, W).
template <int W, int Mask>
__device__ __forceinline__ void calibTransposeStep(float *v) {
  const bool upper = (threadIdx.x & Mask) != 0;
#pragma unroll
  for (int p = 0; p < W; ++p) {
    const float send = upper ? v[p] : v[p + W];
    const float keep = upper ? v[p + W] : v[p];
    v[p] = keep + __shfl_xor_sync(0xffffffffu, send, Mask);
  }
}

// The sum over the lanes that differ from this one in the bits Lane,
// 2 Lane, ..., (N / 2) Lane of v[p] for p < N, this lane getting the sum for
// p = (lane / Lane) % N: N - 1 shuffles for N sums.
template <int N, int Lane>
__device__ __forceinline__ void calibTransposeSum(float *v) {
  if constexpr (N > 1) {
    calibTransposeStep<N / 2, N / 2 * Lane>(v);
    calibTransposeSum<N / 2, Lane>(v);
  }
}

__device__ __forceinline__ float calibDot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}

// Q queries (tokens t0..t0 + Q - 1 of head h) over chunks of K = 32 / Q
// keys: lane l's score is query l % Q against key l / Q of the chunk.
// weights: the warp's 32 floats of shared memory, 16-byte aligned.
template <int Q>
__device__ __forceinline__ void calibLoadWeights(const float *p,
                                                 float (&out)[Q]) {
  if constexpr (Q % 4 == 0) {
#pragma unroll
    for (int i = 0; i < Q; i += 4) {
      const float4 v = *reinterpret_cast<const float4 *>(p + i);
      out[i] = v.x;
      out[i + 1] = v.y;
      out[i + 2] = v.z;
      out[i + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < Q; ++i)
      out[i] = p[i];
  }
}

template <int S, int Q>
__device__ __forceinline__ void calibAttendTile(const CalibAttentionArgs &args,
                                                float *weights, int t0, int h) {
  constexpr int K = 32 / Q;
  const int lane = threadIdx.x % 32;
  const int dim = args.dim, vecs = dim / 4;
  const long long qStride = static_cast<long long>(args.heads) * dim;
  const long long kvStride = static_cast<long long>(args.kvHeads) * dim;
  const long long kvOffset =
      static_cast<long long>(h / (args.heads / args.kvHeads)) * dim;
  const float4 zero4 = {0.0f, 0.0f, 0.0f, 0.0f};

  // Each query's keys [first, t], the union [lo, hi], and the range of this
  // lane's query.
  int lo = 0x7fffffff, hi = -1, myFirst = 0, myLast = -1;
  float4 q[Q][S];
#pragma unroll
  for (int i = 0; i < Q; ++i) {
    const int t = t0 + i;
    int first = 0, last = -1;
    if (t < args.tokens) {
      const int start = args.seqStart[t];
      first = args.window > 0 ? max(start, t - args.window + 1) : start;
      last = t;
      lo = min(lo, first);
      hi = max(hi, last);
    }
    if (i == lane % Q) {
      myFirst = first;
      myLast = last;
    }
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const int vec = lane + 32 * s;
      q[i][s] = last >= 0 && vec < vecs
                    ? calibLoad4(args.q + t * qStride + h * dim + 4 * vec)
                    : zero4;
    }
  }

  float4 o[Q][S];
  float m[Q], l[Q], myMax = negativeInfinity();
#pragma unroll
  for (int i = 0; i < Q; ++i) {
    m[i] = negativeInfinity();
    l[i] = 0.0f;
#pragma unroll
    for (int s = 0; s < S; ++s)
      o[i][s] = zero4;
  }

  for (int c = lo; c <= hi; c += K) {
    // Scores: per key, the Q partial dot products reduced over the low lane
    // bits at once (so that few are live), then the K results over the rest.
    float perKey[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int key = c + j;
      float part[Q];
#pragma unroll
      for (int i = 0; i < Q; ++i)
        part[i] = 0.0f;
#pragma unroll
      for (int s = 0; s < S; ++s) {
        const int vec = lane + 32 * s;
        if (key <= hi && vec < vecs) {
          const float4 kv =
              calibLoad4(args.k + key * kvStride + kvOffset + 4 * vec);
#pragma unroll
          for (int i = 0; i < Q; ++i)
            part[i] = calibDot4(q[i][s], kv, part[i]);
        }
      }
      calibTransposeSum<Q, 1>(part);
      perKey[j] = part[0];
    }
    calibTransposeSum<K, Q>(perKey);
    float score = perKey[0] * args.scale;
    if (args.softcap > 0.0f)
      score = args.softcap * tanhf(score / args.softcap);
    const int myKey = c + lane / Q;
    if (myKey < myFirst || myKey > myLast)
      score = negativeInfinity();

    // Each query's running max moves to include the chunk's; every lane
    // keeps every query's state (it holds output slices of all Q), so the
    // branches below are uniform over the warp.
    float chunkMax = score;
#pragma unroll
    for (int offset = 16; offset >= Q; offset /= 2)
      chunkMax =
          fmaxf(chunkMax, __shfl_xor_sync(0xffffffffu, chunkMax, offset));
    // (myMax is this lane's query's m, kept apart: an m[lane % Q] would put
    // m in local memory.)
    myMax = fmaxf(myMax, chunkMax);
    float alpha[Q];
    bool moved = false;
#pragma unroll
    for (int i = 0; i < Q; ++i) {
      const float mChunk = __shfl_sync(0xffffffffu, chunkMax, i);
      alpha[i] = 1.0f;
      if (mChunk > m[i]) {
        alpha[i] = m[i] == negativeInfinity() ? 0.0f : expf(m[i] - mChunk);
        m[i] = mChunk;
        moved = true;
      }
    }
    if (moved) {
#pragma unroll
      for (int i = 0; i < Q; ++i) {
        l[i] *= alpha[i];
#pragma unroll
        for (int s = 0; s < S; ++s) {
          o[i][s].x *= alpha[i];
          o[i][s].y *= alpha[i];
          o[i][s].z *= alpha[i];
          o[i][s].w *= alpha[i];
        }
      }
    }
    // The weights go through the warp's slot in shared memory: a key's Q
    // weights are one broadcast load, where shuffles would take Q.
    weights[lane] = score == negativeInfinity() ? 0.0f : expf(score - myMax);
    __syncwarp();

    // Values (loads of a few keys in flight, not all K: registers).
#pragma unroll 4
    for (int j = 0; j < K; ++j) {
      const int key = c + j;
      float pj[Q];
      calibLoadWeights<Q>(weights + j * Q, pj);
#pragma unroll
      for (int i = 0; i < Q; ++i)
        l[i] += pj[i];
#pragma unroll
      for (int s = 0; s < S; ++s) {
        const int vec = lane + 32 * s;
        if (key <= hi && vec < vecs) {
          const float4 vv =
              calibLoad4(args.v + key * kvStride + kvOffset + 4 * vec);
#pragma unroll
          for (int i = 0; i < Q; ++i) {
            o[i][s].x = fmaf(pj[i], vv.x, o[i][s].x);
            o[i][s].y = fmaf(pj[i], vv.y, o[i][s].y);
            o[i][s].z = fmaf(pj[i], vv.z, o[i][s].z);
            o[i][s].w = fmaf(pj[i], vv.w, o[i][s].w);
          }
        }
      }
    }
    // Every lane has read the weights before the next chunk writes them.
    __syncwarp();
  }

  // Each valid query saw its own token, so l > 0.
#pragma unroll
  for (int i = 0; i < Q; ++i) {
    const int t = t0 + i;
    if (t >= args.tokens)
      continue;
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const int vec = lane + 32 * s;
      if (vec < vecs) {
        const float4 r = {o[i][s].x / l[i], o[i][s].y / l[i], o[i][s].z / l[i],
                          o[i][s].w / l[i]};
        *reinterpret_cast<float4 *>(args.out + t * qStride + h * dim +
                                    4 * vec) = r;
      }
    }
  }
}

__global__ void __launch_bounds__(kCalibThreads)
    calib_attention(const __grid_constant__ CalibAttentionArgs args) {
  struct alignas(16) Weights {
    float lanes[kCalibWarps][32];
  };
  __shared__ Weights weights;
  float *const warpWeights = weights.lanes[threadIdx.x / 32];
  const long long tiles = (args.tokens + kCalibAttentionBlockTokens - 1) /
                          kCalibAttentionBlockTokens;
  const long long tasks = tiles * args.heads;
  for (long long b = blockIdx.x; b < tasks; b += gridDim.x) {
    const int h = static_cast<int>(b % args.heads);
    const int t0 =
        static_cast<int>(b / args.heads) * kCalibAttentionBlockTokens +
        static_cast<int>(threadIdx.x / 32) * kCalibAttentionQueries;
    if (args.dim <= 128) {
      calibAttendTile<1, kCalibAttentionQueries>(args, warpWeights, t0, h);
    } else {
      // Twice the slices: the warp's tokens in two halves, for registers.
      constexpr int kHalf = kCalibAttentionQueries / 2;
      calibAttendTile<2, kHalf>(args, warpWeights, t0, h);
      calibAttendTile<2, kHalf>(args, warpWeights, t0 + kHalf, h);
    }
  }
}

//===----------------------------------------------------------------------===//
// calib_elementwise: a thread per element (grid-stride over count).
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_elementwise(const __grid_constant__ CalibElementwiseArgs args) {
  const unsigned long long stride =
      static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i =
      static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const float *a = args.a, *b = args.b;
  float *out = args.out;
  switch (args.op) {
  case kCalibAdd:
    for (; i < args.count; i += stride)
      out[i] = a[i] + b[i];
    break;
  case kCalibSwiglu:
    for (; i < args.count; i += stride)
      out[i] = calibSilu(a[i]) * b[i];
    break;
  case kCalibGegelu:
    for (; i < args.count; i += stride)
      out[i] = calibGeluTanh(a[i]) * b[i];
    break;
  case kCalibAddBias: {
    // The column advances by stride % cols a step: no 64-bit division in
    // the loop.
    if (args.cols <= 0)
      break;
    const unsigned long long cols = args.cols, step = stride % cols;
    for (unsigned long long col = i % cols; i < args.count; i += stride) {
      out[i] = a[i] + b[col];
      col += step;
      if (col >= cols)
        col -= cols;
    }
    break;
  }
  default:
    break;
  }
}

//===----------------------------------------------------------------------===//
// calib_sigmoid_gate: a block per row (grid-stride over rows). The dot
// product sums in float in another order than the CPU's.
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_sigmoid_gate(const __grid_constant__ CalibSigmoidGateArgs args) {
  __shared__ float partial[32];
  for (int r = blockIdx.x; r < args.rows; r += gridDim.x) {
    const float *in = args.in + static_cast<long long>(r) * args.inCols;
    float z = 0.0f;
    for (int i = threadIdx.x; i < args.inCols; i += blockDim.x)
      z = fmaf(in[i], args.weight[i], z);
    z = calibBlockSum(z, partial);
    const float g = 1.0f / (1.0f + expf(-z));
    const long long base = static_cast<long long>(r) * args.valueCols;
    for (int j = threadIdx.x; j < args.valueCols; j += blockDim.x)
      args.out[base + j] = args.value[base + j] * g;
  }
}

//===----------------------------------------------------------------------===//
// calib_column_abs_sum: a block per (blockDim.x columns, kCalibColumnAbsSumRows
// rows) tile, a thread per column (grid-stride over the tiles, column tiles
// fastest); each thread sums its column's rows in double and adds the sum to
// sums[c] atomically.
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_column_abs_sum(const __grid_constant__ CalibColumnAbsSumArgs args) {
  const long long columnTiles = (args.cols + blockDim.x - 1) / blockDim.x;
  const long long rowTiles =
      (args.rows + kCalibColumnAbsSumRows - 1) / kCalibColumnAbsSumRows;
  for (long long b = blockIdx.x; b < columnTiles * rowTiles; b += gridDim.x) {
    const long long c = (b % columnTiles) * blockDim.x + threadIdx.x;
    const long long r0 = (b / columnTiles) * kCalibColumnAbsSumRows;
    const long long r1 = r0 + kCalibColumnAbsSumRows < args.rows
                             ? r0 + kCalibColumnAbsSumRows
                             : args.rows;
    if (c >= args.cols)
      continue;
    double sum = 0.0;
    for (long long r = r0; r < r1; ++r)
      sum += fabsf(args.x[r * args.cols + c]);
    atomicAdd(args.sums + c, sum);
  }
}

//===----------------------------------------------------------------------===//
// calib_squared_error: a thread per element (grid-stride over count), the
// differences and their squares in double as the CPU's squaredError; one
// atomic add per block.
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_squared_error(const __grid_constant__ CalibSquaredErrorArgs args) {
  __shared__ double partial[32];
  const unsigned long long stride =
      static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  double sum = 0.0;
  for (unsigned long long i =
           static_cast<unsigned long long>(blockIdx.x) * blockDim.x +
           threadIdx.x;
       i < args.count; i += stride) {
    const double d = static_cast<double>(args.a[i]) - args.b[i];
    sum += d * d;
  }
  sum = calibBlockSum(sum, partial);
  if (threadIdx.x == 0 && sum != 0.0)
    atomicAdd(args.sum, sum);
}

//===----------------------------------------------------------------------===//
// calib_awq_candidate: quantizing, a warp per run of `group` columns of a row
// (grid-stride over rows * cols / group runs); otherwise a thread per
// element (grid-stride over rows * cols).
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_awq_candidate(const __grid_constant__ CalibAwqCandidateArgs args) {
  const int cols = args.cols;
  if (cols <= 0)
    return;
  if (!args.quantize) {
    const unsigned long long count =
        static_cast<unsigned long long>(args.rows) * cols;
    const unsigned long long stride =
        static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    unsigned long long i =
        static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    // The column advances by stride % cols a step (as kCalibAddBias).
    const unsigned long long step = stride % cols;
    for (unsigned long long col = i % cols; i < count; i += stride) {
      const float s = args.scales[col];
      args.out[i] = __float2bfloat16_rn(args.weight[i] * s / s);
      col += step;
      if (col >= static_cast<unsigned long long>(cols))
        col -= cols;
    }
    return;
  }
  const int lane = threadIdx.x % 32;
  const int group = args.group;
  const int runsPerRow = cols / group;
  const long long runs = static_cast<long long>(args.rows) * runsPerRow;
  for (long long r = calibGlobalWarp(); r < runs; r += calibGridWarps()) {
    const float *w = args.weight + r * group;
    const float *s = args.scales + (r % runsPerRow) * group;
    bf16 *out = args.out + r * group;
    float lo = __int_as_float(0x7f800000), hi = negativeInfinity();
    for (int j = lane; j < group; j += 32) {
      const float v = w[j] * s[j];
      lo = fminf(lo, v);
      hi = fmaxf(hi, v);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, offset));
      hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, offset));
    }
    const CalibInt4Group params = calibInt4Params(lo, hi, 1.0f);
    for (int j = lane; j < group; j += 32)
      out[j] =
          __float2bfloat16_rn(calibInt4RoundTrip(w[j] * s[j], params) / s[j]);
  }
}

//===----------------------------------------------------------------------===//
// calib_to_bf16: a thread per element (grid-stride over count).
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_to_bf16(const __grid_constant__ CalibToBf16Args args) {
  const unsigned long long stride =
      static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           static_cast<unsigned long long>(blockIdx.x) * blockDim.x +
           threadIdx.x;
       i < args.count; i += stride)
    args.out[i] = __float2bfloat16_rn(args.in[i]);
}

//===----------------------------------------------------------------------===//
// calib_gather_rows and calib_scatter_add_rows: a mixture of experts, one
// expert at a time (the host routes, cuBLASLt runs the expert's GEMMs over
// the gathered rows). A block per row (grid-stride over rows). The scatter
// adds as the CPU's mixture does, w * y rounded and then added, experts in
// index order (the host launches them so), with no atomics.
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_gather_rows(const __grid_constant__ CalibGatherRowsArgs args) {
  const long long cols = args.cols;
  for (int i = blockIdx.x; i < args.count; i += gridDim.x) {
    const float *from = args.x + args.rows[i] * cols;
    bf16 *to = args.out + i * cols;
    for (int c = threadIdx.x; c < args.cols; c += blockDim.x)
      to[c] = __float2bfloat16_rn(from[c]);
  }
}

__global__ void __launch_bounds__(kCalibThreads) calib_scatter_add_rows(
    const __grid_constant__ CalibScatterAddRowsArgs args) {
  const long long cols = args.cols;
  for (int i = blockIdx.x; i < args.count; i += gridDim.x) {
    const float w = args.weights[i];
    const float *from = args.y + i * cols;
    float *to = args.out + args.rows[i] * cols;
    for (int c = threadIdx.x; c < args.cols; c += blockDim.x)
      to[c] = __fadd_rn(to[c], __fmul_rn(w, from[c]));
  }
}

//===----------------------------------------------------------------------===//
// calib_gram: a block per kCalibGramTile x kCalibGramTile tile of one group's
// matrix (grid-stride over (cols / group) * ceil(group / kCalibGramTile)^2
// tiles); a thread per 4 x 4 outputs, which sum x[t, i] * x[t, j] in row
// order like searchInt4Clip's Gram matrix, from chunks of kGramRows rows
// staged in shared memory.
//===----------------------------------------------------------------------===//

__global__ void __launch_bounds__(kCalibThreads)
    calib_gram(const __grid_constant__ CalibGramArgs args) {
  constexpr int kTile = kCalibGramTile, kGramRows = 16;
  static_assert(kTile / 4 * (kTile / 4) == kCalibThreads,
                "calib_gram: a thread per 4 x 4 outputs of a tile");
  struct alignas(16) Staged {
    float xi[kGramRows][kTile];
    float xj[kGramRows][kTile];
  };
  __shared__ Staged staged;
  auto &xi = staged.xi;
  auto &xj = staged.xj;
  const int group = args.group;
  const int tilesPerSide = (group + kTile - 1) / kTile;
  const long long tasks =
      static_cast<long long>(args.cols / group) * tilesPerSide * tilesPerSide;
  // The thread's outputs: rows ti*4.., columns tj*4.. of the tile.
  const int ti = threadIdx.x / (kTile / 4), tj = threadIdx.x % (kTile / 4);
  for (long long b = blockIdx.x; b < tasks; b += gridDim.x) {
    const int g = static_cast<int>(b / (tilesPerSide * tilesPerSide));
    const int tile = static_cast<int>(b % (tilesPerSide * tilesPerSide));
    const int i0 = tile / tilesPerSide * kTile,
              j0 = tile % tilesPerSide * kTile;
    const float *x = args.x + static_cast<long long>(g) * group;
    float acc[4][4] = {};
    for (int t0 = 0; t0 < args.rows; t0 += kGramRows) {
      // Stage rows t0.. of both column ranges (zero past the ends).
      for (int e = threadIdx.x; e < kGramRows * kTile; e += blockDim.x) {
        const int t = t0 + e / kTile, c = e % kTile;
        const bool row = t < args.rows;
        const float *xt = x + static_cast<long long>(t) * args.cols;
        xi[e / kTile][c] = row && i0 + c < group ? xt[i0 + c] : 0.0f;
        xj[e / kTile][c] = row && j0 + c < group ? xt[j0 + c] : 0.0f;
      }
      __syncthreads();
      const int rows = min(kGramRows, args.rows - t0);
      for (int t = 0; t < rows; ++t) {
        const float4 a = *reinterpret_cast<const float4 *>(&xi[t][ti * 4]);
        const float4 c = *reinterpret_cast<const float4 *>(&xj[t][tj * 4]);
        const float av[4] = {a.x, a.y, a.z, a.w};
        const float cv[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int v = 0; v < 4; ++v)
            acc[u][v] = __fadd_rn(acc[u][v], __fmul_rn(av[u], cv[v]));
      }
      __syncthreads();
    }
    float *gram = args.gram + static_cast<long long>(g) * group * group;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = i0 + ti * 4 + u;
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int j = j0 + tj * 4 + v;
        if (i < group && j < group)
          gram[static_cast<long long>(i) * group + j] = acc[u][v];
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// calib_clip_search: a block per kCalibClipSearchRows (R = 16) weight rows of
// one group (grid-stride over (cols / group) * ceil(rows / R) tiles, the
// tiles of a group adjacent so that its Gram matrix stays in cache), every
// candidate ratio in turn:
//  1. the block's threads form diff = w - Q(w) for the R rows (each thread
//     keeps the same R-row column of w in registers for all candidates);
//  2. G diff for each row: a thread per 4 rows x ceil(group / 64) columns k
//     (the warps in pairs over k), reading G from global memory (L1 / L2);
//  3. a thread per row sums diff . (G diff) in double, in k order, and keeps
//     the first smallest error.
// The float dot products repeat quant::searchInt4Clip's `dot` exactly (eight
// strided lanes summed in order, then the tail, without fused multiply-adds),
// and the double sum runs in its order, so the errors, and the ratios, are
// the CPU's bit for bit. G must be symmetric (calib_gram's is, exactly): it
// is read as G[j][k] so that a warp's loads are coalesced.
//===----------------------------------------------------------------------===//

// Where element k of a row sits in diff's layout: the CPU's dot sums
// k = l, l + 8, l + 16, ... for each lane l, so each lane's elements are
// adjacent (position l * (group / 8) + k / 8); the tail past 8 * (group / 8)
// stays in place.
__device__ __forceinline__ int calibClipPosition(int k, int lanes) {
  return k < 8 * lanes ? (k % 8) * lanes + k / 8 : k;
}
__device__ __forceinline__ int calibClipElement(int pos, int lanes) {
  return pos < 8 * lanes ? 8 * (pos % lanes) + pos / lanes : pos;
}

// The clip search's shared memory: diff as [position][row], the G diff
// products as [k][row], the rows' ranges, parameters and best candidates.
struct alignas(16) CalibClipShared {
  float diff[kCalibClipSearchMaxGroup * kCalibClipSearchRows];
  float dots[kCalibClipSearchMaxGroup * kCalibClipSearchRows];
  float partMin[kCalibWarps][kCalibClipSearchRows];
  float partMax[kCalibWarps][kCalibClipSearchRows];
  float rowMin[kCalibClipSearchRows];
  float rowMax[kCalibClipSearchRows];
  CalibInt4Group params[kCalibClipSearchRows];
  double bestError[kCalibClipSearchRows];
  float bestRatio[kCalibClipSearchRows];
};

template <int KC>
__device__ __forceinline__ void calibClipTile(const CalibClipSearchArgs &args,
                                              CalibClipShared &sh, int g,
                                              int n0) {
  constexpr int R = kCalibClipSearchRows;
  constexpr int kElems = R * 64 * KC / kCalibThreads; // per thread
  static_assert(kCalibThreads == 256 && R == 16,
                "calib_clip_search: 8 warps, 4 rows per thread");
  float *const diff = sh.diff;
  float *const dots = sh.dots;
  const int group = args.group, lanes = group / 8;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int myRow = tid % R; // every element this thread forms
  const bool rowValid = n0 + myRow < args.rows;
  const float *wRow = args.weight +
                      static_cast<long long>(n0 + myRow) * args.cols +
                      static_cast<long long>(g) * group;

  // 1a. This thread's elements of w (positions tid / R + 16 u) and the rows'
  // min and max.
  float w[kElems];
  float lo = __int_as_float(0x7f800000), hi = negativeInfinity();
#pragma unroll
  for (int u = 0; u < kElems; ++u) {
    const int pos = tid / R + (kCalibThreads / R) * u;
    w[u] = 0.0f;
    if (pos < group && rowValid) {
      w[u] = wRow[calibClipElement(pos, lanes)];
      lo = fminf(lo, w[u]);
      hi = fmaxf(hi, w[u]);
    }
  }
  lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, 16));
  hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, 16));
  if (lane < R) {
    sh.partMin[warp][lane] = lo;
    sh.partMax[warp][lane] = hi;
  }
  __syncthreads();
  if (tid < R) {
    for (int v = 0; v < kCalibWarps; ++v) {
      lo = fminf(lo, sh.partMin[v][tid]);
      hi = fmaxf(hi, sh.partMax[v][tid]);
    }
    // Rows past the end (all zero elements) get a valid, unused range.
    sh.rowMin[tid] = rowValid ? lo : 0.0f;
    sh.rowMax[tid] = rowValid ? hi : 0.0f;
    sh.bestError[tid] = __longlong_as_double(0x7ff0000000000000ll); // +inf
    sh.bestRatio[tid] = 1.0f;
  }

  // 2's mapping: rows r0..r0 + 3, columns k = lane + 32 (2 i + kHalf).
  const int r0 = 4 * (warp / 2), kHalf = warp % 2;
  const float *gram = args.gram + static_cast<long long>(g) * group * group;

  // 3: the error of the previous candidate (thread `row` only).
  auto keepBest = [&](int row, float ratio) {
    double error = 0.0;
    // Unrolled so that the loads run ahead of the serial sum.
#pragma unroll 8
    for (int k = 0; k < group; ++k)
      error +=
          static_cast<double>(diff[calibClipPosition(k, lanes) * R + row]) *
          static_cast<double>(dots[k * R + row]);
    if (error < sh.bestError[row]) {
      sh.bestError[row] = error;
      sh.bestRatio[row] = ratio;
    }
  };

  for (int c = 0; c < args.candidates; ++c) {
    const float ratio =
        1.0f - static_cast<float>(c) / static_cast<float>(args.gridPoints);
    if (tid < R) {
      if (c > 0)
        keepBest(tid, 1.0f - static_cast<float>(c - 1) /
                                 static_cast<float>(args.gridPoints));
      sh.params[tid] = calibInt4Params(sh.rowMin[tid], sh.rowMax[tid], ratio);
    }
    __syncthreads();

    // 1b. diff = w - Q(w) (zero past the group and the rows).
    const CalibInt4Group p = sh.params[myRow];
#pragma unroll
    for (int u = 0; u < kElems; ++u) {
      const int pos = tid / R + (kCalibThreads / R) * u;
      if (pos < kCalibClipSearchMaxGroup)
        diff[pos * R + myRow] =
            pos < group ? __fsub_rn(w[u], calibInt4RoundTrip(w[u], p)) : 0.0f;
    }
    __syncthreads();

    // 2. dots[k][r] = sum_j G[k][j] diff[r][j] as quant's dot: for each
    // lane l, acc = sum over j = l, l + 8, ... in order; total = 0 + acc_0 +
    // ... + acc_7; then the tail j >= 8 * lanes.
    float total[KC][4] = {};
    int kOf[KC];
    bool kValid[KC];
#pragma unroll
    for (int i = 0; i < KC; ++i) {
      kOf[i] = lane + 32 * (2 * i + kHalf);
      kValid[i] = kOf[i] < group;
    }
    for (int l = 0; l < 8; ++l) {
      float acc[KC][4] = {};
      const float *gRow = gram + l * static_cast<long long>(group);
      const float *d = diff + l * lanes * R + r0;
#pragma unroll 4
      for (int m = 0; m < lanes; ++m) {
        const float4 dv = *reinterpret_cast<const float4 *>(d + m * R);
        const float *gm = gRow + static_cast<long long>(8 * m) * group;
#pragma unroll
        for (int i = 0; i < KC; ++i) {
          const float gv = kValid[i] ? __ldg(gm + kOf[i]) : 0.0f;
          acc[i][0] = __fadd_rn(acc[i][0], __fmul_rn(gv, dv.x));
          acc[i][1] = __fadd_rn(acc[i][1], __fmul_rn(gv, dv.y));
          acc[i][2] = __fadd_rn(acc[i][2], __fmul_rn(gv, dv.z));
          acc[i][3] = __fadd_rn(acc[i][3], __fmul_rn(gv, dv.w));
        }
      }
#pragma unroll
      for (int i = 0; i < KC; ++i)
#pragma unroll
        for (int v = 0; v < 4; ++v)
          total[i][v] = __fadd_rn(total[i][v], acc[i][v]);
    }
    for (int j = 8 * lanes; j < group; ++j) {
      const float4 dv = *reinterpret_cast<const float4 *>(diff + j * R + r0);
      const float *gj = gram + static_cast<long long>(j) * group;
#pragma unroll
      for (int i = 0; i < KC; ++i) {
        const float gv = kValid[i] ? __ldg(gj + kOf[i]) : 0.0f;
        total[i][0] = __fadd_rn(total[i][0], __fmul_rn(gv, dv.x));
        total[i][1] = __fadd_rn(total[i][1], __fmul_rn(gv, dv.y));
        total[i][2] = __fadd_rn(total[i][2], __fmul_rn(gv, dv.z));
        total[i][3] = __fadd_rn(total[i][3], __fmul_rn(gv, dv.w));
      }
    }
#pragma unroll
    for (int i = 0; i < KC; ++i)
      if (kValid[i]) {
        const float4 t = {total[i][0], total[i][1], total[i][2], total[i][3]};
        *reinterpret_cast<float4 *>(dots + kOf[i] * R + r0) = t;
      }
    __syncthreads();
  }

  if (tid < R) {
    keepBest(tid, 1.0f - static_cast<float>(args.candidates - 1) /
                             static_cast<float>(args.gridPoints));
    if (rowValid)
      args.ratios[static_cast<long long>(n0 + tid) * (args.cols / group) + g] =
          sh.bestRatio[tid];
  }
  // The next tile reuses the shared arrays.
  __syncthreads();
}

__global__ void __launch_bounds__(kCalibThreads)
    calib_clip_search(const __grid_constant__ CalibClipSearchArgs args) {
  __shared__ CalibClipShared shared;
  const int group = args.group;
  if (group < 1 || group > kCalibClipSearchMaxGroup || args.candidates < 1)
    return;
  const long long slices =
      (args.rows + kCalibClipSearchRows - 1) / kCalibClipSearchRows;
  const long long tasks = static_cast<long long>(args.cols / group) * slices;
  for (long long b = blockIdx.x; b < tasks; b += gridDim.x) {
    const int g = static_cast<int>(b / slices);
    const int n0 = static_cast<int>(b % slices) * kCalibClipSearchRows;
    switch ((group + 63) / 64) {
    case 1:
      calibClipTile<1>(args, shared, g, n0);
      break;
    case 2:
      calibClipTile<2>(args, shared, g, n0);
      break;
    case 3:
      calibClipTile<3>(args, shared, g, n0);
      break;
    default:
      calibClipTile<4>(args, shared, g, n0);
      break;
    }
  }
}

} // namespace kernels
} // namespace sol

// calib_attention_tc, the tensor-core attention (blocks of
// kCalibAttentionTcThreads, dynamic shared memory: CalibrationAttention.cuh).
#include "CalibrationAttention.cuh"

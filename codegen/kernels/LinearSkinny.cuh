//===- LinearSkinny.cuh - y = x * W^T (+ b), 2..16 rows, tensor cores -----===//
//
// The linear layer of steps with a few rows (batched decode of 2..16
// sequences, short prompt chunks): x is [rows, K] with rows <= MaxRows (8 or
// 16), W is [N, K], y is [rows, N] in bf16 or fp32. Like linear_gemv it is
// bandwidth-bound and reads every weight exactly once per launch, but the
// products run on the tensor cores, so 16 rows cost the FMA pipe nothing:
// linear_gemv at 8 rows does 8 FMAs per weight and stops streaming.
//
// "Swap AB": mma.sync m16n8k16 computes D[16 x 8] += A[16 x 16] B[16 x 8].
// A is a 16-row tile of W (16 output features x 16 k; W is row-major in k,
// which is A's `row` layout) and B is x^T (16 k x 8 tokens; `col` layout
// wants each token's k values contiguous, which is x's row-major layout), so
// D is y^T for 16 features and 8 tokens. Tokens 8..15 use a second n8 mma.
//
// Fragments straight from global memory, no shared memory and no shuffles:
// the order of k in a dot product is free, so k is permuted identically for
// A and B. With g = lane / 4 and q = lane % 4, a warp's k step covers 32
// consecutive k = k0..k0+31; lane (g, q) loads one 16-byte vector of each
// operand row it needs at k0 + 8q:
//   lo = W[n0 + g][k0 + 8q, +8), hi = W[n0 + 8 + g][k0 + 8q, +8),
//   xv = x[token g][k0 + 8q, +8)   (for the tokens 8..15: token 8 + g).
// A 16-byte vector is four bf16 pairs {.x, .y, .z, .w} = k + {0-1, 2-3, 4-5,
// 6-7}. The PTX ISA's m16n8k16 .bf16 fragments are
//   A: a0 = (row g, cols 2q, 2q+1), a1 = (row g+8, cols 2q, 2q+1),
//      a2 = (row g, cols 2q+8, 2q+9), a3 = (row g+8, cols 2q+8, 2q+9);
//   B: b0 = (rows 2q, 2q+1, col g), b1 = (rows 2q+8, 2q+9, col g);
//   C: c0, c1 = (row g, cols 2q, 2q+1), c2, c3 = (row g+8, cols 2q, 2q+1);
// with the lower-numbered element of a pair in the low half of a register,
// which is where little-endian memory puts the lower k. The two mmas of a k
// step take
//   mma 1: a = {lo.x, hi.x, lo.y, hi.y}, b = {xv.x, xv.y},
//   mma 2: a = {lo.z, hi.z, lo.w, hi.w}, b = {xv.z, xv.w},
// so mma column (k) 2q + e holds real k 8q + e (mma 1) or 8q + 4 + e (mma
// 2), and column 2q + 8 + e holds 8q + 2 + e (or 8q + 6 + e), for A and B
// alike: both are the same permutation of the step's 32 k, each k once.
// (test/unit/cuda/SkinnyEmulationTest.cpp runs this kernel on the CPU
// against an mma stand-in built from those tables.)
//
// Loads: the four lanes of a row read 64 contiguous bytes, so every 32-byte
// sector a load touches is used whole; weights stream past L1
// (ld.global.nc.L1::no_allocate), x comes through L1 (the warps of a block
// that share a K slice share it). A warp keeps Depth k steps of loads in
// flight in a ring of registers (the slot just consumed is refilled at
// once), Depth chosen so that weights and prefetched x stay within about 80
// registers. Under programmatic dependent launch the first Depth steps of
// weight loads are issued before waiting for the kernel that produces x;
// with L2Prefetch the block also asks L2 for all of its weight rows then
// (prefetchBulkL2), so a block streams more than its registers hold.
//
// A block is 8 warps: (8 / WarpsK) along N times WarpsK along K; a warp owns
// Tiles 16-row tiles of W and a 1/WarpsK slice of K, so a block covers
// 16 * Tiles * (8 / WarpsK) features. The warps' C fragments are reduced
// through shared memory, then the block's threads run the epilogue (bias,
// residual add or SwiGLU over interleaved gate/up rows, the same bf16
// roundings as linear_gemv) with coalesced stores. Tokens past `rows` read
// zeros instead of x and are never stored; features past N re-read row
// N - 1 and are never stored.
//
// With NormPrologue, x is first replaced by bf16(norm_w * bf16(x *
// rsqrt(mean(x^2) + eps))) in shared memory, gemvNormPrologue's arithmetic
// (same threads, same order), but x is read from global memory once
// (cp.async) instead of twice; rows are padded by 64 bytes so that the
// fragment reads from shared memory are free of bank conflicts. Plans run
// rms_norm first instead (every block normalising all rows cost more than
// the extra launch; docs/gpu.md); sol-kernel-check and the CPU emulation
// test keep the prologue checked. Without it, x (the previous kernel's
// output) is read with loadActivation16, behind griddepcontrol.wait.
//
// Launch: LinearArgs (LaunchArgs.h), 256 threads,
// ceil(N / (16 * Tiles * (8 / WarpsK))) blocks, and
// SkinnyShape::kSharedBytes of dynamic shared memory (all of the kernel's
// shared memory). Requires K % 8 == 0 and 16-byte aligned x and W.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearPrologue.cuh"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

constexpr int kSkinnyThreads = 256;
constexpr int kSkinnyWarps = kSkinnyThreads / 32;
// 16-byte loads a lane keeps in flight (4 registers each): weights, plus x
// without the norm prologue. 80 registers leave room for the accumulators
// and addresses under the 128 of two blocks per SM.
constexpr int kSkinnyLoadBudget = 20;

// The k steps a warp keeps in flight: as many as the load budget allows,
// or a few less if that divides the warp's steps (no partial pass).
__host__ __device__ constexpr int skinnyDepth(int steps, int loadsPerStep) {
  const int most =
      constMax(1, constMin(steps, kSkinnyLoadBudget / loadsPerStep));
  for (int d = most; 4 * d >= 3 * most; --d)
    if (steps % d == 0)
      return d;
  return most;
}

// The block's geometry and its dynamic shared memory: the normalised x rows
// (NormPrologue only), the warps' partial sums, the norm's per-warp sums of
// squares (NormPrologue only). runtime/cuda/KernelSpecs.cpp mirrors it.
template <int K, int MaxRows, int Tiles, int WarpsK, bool NormPrologue>
struct SkinnyShape {
  static constexpr int kWarpsN = kSkinnyWarps / WarpsK;
  static constexpr int kFeatures = 16 * Tiles * kWarpsN;
  // x rows in shared memory: 32 bf16 (64 bytes) of padding put the rows g
  // and g + 1 of a fragment read on different banks.
  static constexpr int kXStride = K + 32;
  static constexpr int kXBytes = NormPrologue ? MaxRows * kXStride * 2 : 0;
  // Partial sums [WarpsK][MaxRows][kReduceStride]; the 4 floats of padding
  // make the fragment stores conflict-free.
  static constexpr int kReduceStride = kFeatures + 4;
  static constexpr int kReduceBytes = WarpsK * MaxRows * kReduceStride * 4;
  static constexpr int kNormBytes =
      NormPrologue ? MaxRows * kSkinnyWarps * 4 : 0;
  static constexpr int kSharedBytes = kXBytes + kReduceBytes + kNormBytes;
};

// The norm prologue: xs[t] = bf16(norm_w * bf16(x[t] * rsqrt(mean(x[t]^2) +
// eps))) for t < rows, row stride Stride. The arithmetic and the order of
// every sum are gemvNormPrologue's; x is copied into xs asynchronously and
// normalised in place, each thread touching only the vectors it copied
// until the sums of squares meet.
template <int K, int MaxRows, int Stride>
__device__ __forceinline__ void
skinnyNormPrologue(bf16 *xs, float (*partial)[kSkinnyWarps], const bf16 *x,
                   const NormWeights<K> &norm_w, float eps, int rows) {
  static_assert(kSkinnyThreads == kGemvThreads,
                "linear_skinny: NormWeights assumes linear_gemv's block");
  constexpr int kVecs = K / 8;
  constexpr int kPer = NormWeights<K>::kPer;
  const int warp = threadIdx.x / 32;
#pragma unroll
  for (int t = 0; t < MaxRows; ++t)
    if (t < rows)
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int v = threadIdx.x + i * kSkinnyThreads;
        if (v < kVecs)
          copyAsync16(sharedAddress(xs + t * Stride + v * 8),
                      x + static_cast<long long>(t) * K + v * 8, true);
      }
  copyAsyncCommit();
  copyAsyncWait<0>();
#pragma unroll
  for (int t = 0; t < MaxRows; ++t) {
    float ss = 0.0f;
    if (t < rows) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int v = threadIdx.x + i * kSkinnyThreads;
        if (v < kVecs) {
          float f[8];
          unpack8(load16(xs + t * Stride + v * 8), f);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            ss += f[j] * f[j];
        }
      }
    }
    ss = warpSum(ss);
    if (threadIdx.x % 32 == 0)
      partial[t][warp] = ss;
  }
  __syncthreads();
#pragma unroll
  for (int t = 0; t < MaxRows; ++t) {
    if (t < rows) {
      float total = 0.0f;
#pragma unroll
      for (int w = 0; w < kSkinnyWarps; ++w)
        total += partial[t][w];
      const float inv = rsqrtf(total / static_cast<float>(K) + eps);
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int v = threadIdx.x + i * kSkinnyThreads;
        if (v < kVecs) {
          float f[8], wf[8], o[8];
          unpack8(load16(xs + t * Stride + v * 8), f);
          unpack8(norm_w.v[i], wf);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            o[j] = wf[j] * roundToBf16(f[j] * inv);
          store16(xs + t * Stride + v * 8, pack8(o));
        }
      }
    }
  }
  __syncthreads();
}

// One k step of one 16-row tile for one group of 8 tokens: lo and hi are
// the lane's vectors of W rows g and g + 8, xv its vector of token g (see
// the header comment for the mapping). E4m3: the vectors hold 16 E4M3
// codes instead of 8 bf16 values, and the mmas are m16n8k32
// (LinearSkinnyQuant.cuh).
template <bool E4m3 = false>
__device__ __forceinline__ void skinnyMma(float (&d)[4], const uint4 &lo,
                                          const uint4 &hi, const uint4 &xv) {
  const unsigned a0[4] = {lo.x, hi.x, lo.y, hi.y};
  const unsigned a1[4] = {lo.z, hi.z, lo.w, hi.w};
  if constexpr (E4m3) {
    mmaE4m3(d, a0, xv.x, xv.y);
    mmaE4m3(d, a1, xv.z, xv.w);
  } else {
    mmaBf16(d, a0, xv.x, xv.y);
    mmaBf16(d, a1, xv.z, xv.w);
  }
}

// The end of a skinny kernel: every warp's C fragments (acc[t][j]: tile t,
// tokens 8j..8j + 7) go to reduce[warpK][token][feature] (Features + 4
// floats a row), then the block's threads sum them over the K warps and run
// the epilogue, one output element per thread and pass; consecutive threads
// store consecutive features of a token. Tokens >= count and features >= N
// are never stored.
template <int MaxRows, int Tiles, int WarpsK, int Features, typename OutT,
          bool HasBias, int Epilogue>
__device__ __forceinline__ void
skinnyReduceEpilogue(float *reduce, const float (&acc)[Tiles][MaxRows / 8][4],
                     OutT *y, const bf16 *bias, int count, int N, int nBlock,
                     int warpN, int warpK, int lane) {
  constexpr int kGroups = MaxRows / 8;
  constexpr int kStride = Features + 4;
  const int g = lane / 4;
  const int q = lane % 4;
  // c0 and c1 are feature g of tokens 2q and 2q + 1, c2 and c3 feature
  // g + 8.
#pragma unroll
  for (int t = 0; t < Tiles; ++t)
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      float *r = reduce + (warpK * MaxRows + 8 * j + 2 * q) * kStride +
                 (warpN * Tiles + t) * 16 + g;
      r[0] = acc[t][j][0];
      r[kStride] = acc[t][j][1];
      r[8] = acc[t][j][2];
      r[kStride + 8] = acc[t][j][3];
    }
  __syncthreads();

  constexpr int kOut = isGatedEpilogue(Epilogue) ? Features / 2 : Features;
  for (int e = threadIdx.x; e < count * kOut; e += kSkinnyThreads) {
    const int t = e / kOut;
    const int i = e % kOut;
    if constexpr (isGatedEpilogue(Epilogue)) {
      // Features 2i (gate) and 2i + 1 (up) of the block.
      const int n = nBlock + 2 * i;
      if (n + 1 < N) {
        float gate = 0.0f, up = 0.0f;
#pragma unroll
        for (int k = 0; k < WarpsK; ++k) {
          const float *r = reduce + (k * MaxRows + t) * kStride + 2 * i;
          gate += r[0];
          up += r[1];
        }
        if constexpr (HasBias) {
          gate += __bfloat162float(bias[n]);
          up += __bfloat162float(bias[n + 1]);
        }
        const float gb = roundToBf16(gate);
        storeOutput(y + static_cast<long long>(t) * (N / 2) + n / 2,
                    gateActivation<Epilogue>(gb) * roundToBf16(up));
      }
    } else {
      const int n = nBlock + i;
      if (n < N) {
        float total = 0.0f;
#pragma unroll
        for (int k = 0; k < WarpsK; ++k)
          total += reduce[(k * MaxRows + t) * kStride + i];
        if constexpr (HasBias)
          total += __bfloat162float(bias[n]);
        OutT *out = y + static_cast<long long>(t) * N + n;
        if constexpr (Epilogue == kEpilogueResidual)
          storeOutput(out, asFloat(*out) + roundToBf16(total));
        else
          storeOutput(out, total);
      }
    }
  }
}

// y = epilogue(x . W^T + b) for `rows` (<= MaxRows) rows; with NormPrologue,
// x is first replaced by rmsnorm(x) * normWeight (eps). Epilogue is one of
// kEpilogue* (Common.cuh); residual and swiglu need bf16 y, and swiglu makes
// y [rows, N / 2]. The arguments are linear_gemv's (LinearArgs).
template <int K, int MaxRows, int Tiles, int WarpsK, typename OutT,
          bool HasBias, int Epilogue, bool NormPrologue,
          bool L2Prefetch = false>
__global__ void __launch_bounds__(kSkinnyThreads, 2)
    linear_skinny(const __grid_constant__ LinearArgs args) {
  using Shape = SkinnyShape<K, MaxRows, Tiles, WarpsK, NormPrologue>;
  static_assert(K % 8 == 0, "linear_skinny: K must be a multiple of 8");
  static_assert(MaxRows == 8 || MaxRows == 16,
                "linear_skinny: MaxRows must be 8 or 16");
  static_assert(Tiles == 1 || Tiles == 2,
                "linear_skinny: Tiles (16-row tiles per warp) must be 1 or 2");
  static_assert(WarpsK >= 1 && kSkinnyWarps % WarpsK == 0,
                "linear_skinny: WarpsK must divide 8");
  constexpr int kGroups = MaxRows / 8; // n8 mmas per tile and k step
  constexpr int kVecs = K / 8;         // 16-byte vectors in a row
  // Each warp's K slice is a whole number of 32-wide k steps.
  constexpr int kSlice = roundUp(ceilDiv(kVecs, WarpsK), 4);
  constexpr int kSteps = kSlice / 4;
  // Whether every lane's vector of every step lies inside K.
  constexpr bool kWholeSteps = kSlice * WarpsK == kVecs;
  constexpr int kLoadsPerStep = 2 * Tiles + (NormPrologue ? 0 : kGroups);
  constexpr int kDepth = skinnyDepth(kSteps, kLoadsPerStep);

  OutT *const y = static_cast<OutT *>(args.y);
  const bf16 *const x = args.x;
  const bf16 *const w = args.w;
  const bf16 *const bias = args.bias;
  const int rows = args.rows;
  const int N = args.n;
  const bf16 *const norm_w = args.normWeight;
  const float eps = args.eps;

  unsigned char *skinnyShared = dynamicSharedMemory();
  bf16 *xs = reinterpret_cast<bf16 *>(skinnyShared);
  float *reduce = reinterpret_cast<float *>(skinnyShared + Shape::kXBytes);
  auto *normPartial = reinterpret_cast<float(*)[kSkinnyWarps]>(
      skinnyShared + Shape::kXBytes + Shape::kReduceBytes);

  allowDependentLaunch();
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;
  const int q = lane % 4;
  const int warpN = warp / WarpsK;
  const int warpK = warp % WarpsK;
  const int nBlock = blockIdx.x * Shape::kFeatures;
  const int nWarp = nBlock + warpN * Tiles * 16;
  const int count = min(rows, MaxRows);
  // The lane's vector of each row in k step s is vLane + 4 * s.
  const int vLane = warpK * kSlice + q;

  const bf16 *wRow[Tiles][2];
#pragma unroll
  for (int t = 0; t < Tiles; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      // Rows past N read row N-1 (valid memory); their sums are never
      // stored.
      wRow[t][h] =
          w +
          static_cast<long long>(min(nWarp + 16 * t + 8 * h + g, N - 1)) * K +
          vLane * 8;
  const bf16 *xRow[kGroups];
  bool xValid[kGroups];
#pragma unroll
  for (int j = 0; j < kGroups; ++j) {
    const int token = 8 * j + g;
    xValid[j] = token < count;
    xRow[j] =
        NormPrologue
            ? xs + min(token, MaxRows - 1) * Shape::kXStride + vLane * 8
            : x + static_cast<long long>(xValid[j] ? token : 0) * K + vLane * 8;
  }
  auto inK = [&](int step) { return kWholeSteps || vLane + 4 * step < kVecs; };
  const uint4 zero = make_uint4(0, 0, 0, 0);

  uint4 wv[kDepth][Tiles][2];
  uint4 xv[kDepth][kGroups];
  float acc[Tiles][kGroups][4];
#pragma unroll
  for (int t = 0; t < Tiles; ++t)
#pragma unroll
    for (int j = 0; j < kGroups; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        acc[t][j][c] = 0.0f;

  // The ring's first Depth steps of weights (and the norm weight) go out
  // before x exists: they overlap the previous kernel's tail.
  NormWeights<NormPrologue ? K : 8> normW;
  if constexpr (NormPrologue)
    normW.load(norm_w);
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    const bool ok = inK(d);
#pragma unroll
    for (int t = 0; t < Tiles; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wv[d][t][h] = ok ? loadStreaming16(wRow[t][h] + d * 32) : zero;
  }
  if constexpr (L2Prefetch)
    prefetchBulkL2(w + static_cast<long long>(nBlock) * K,
                   static_cast<long long>(min(Shape::kFeatures, N - nBlock)) *
                       K * 2);
  waitForPredecessor();
  if constexpr (NormPrologue) {
    skinnyNormPrologue<K, MaxRows, Shape::kXStride>(xs, normPartial, x, normW,
                                                    eps, count);
  } else {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const bool ok = inK(d);
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
        xv[d][j] = ok && xValid[j] ? loadActivation16(xRow[j] + d * 32) : zero;
    }
  }

#pragma unroll 1
  for (int s = 0; s < kSteps; s += kDepth) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int step = s + d;
      if (kSteps % kDepth == 0 || step < kSteps) {
        uint4 xk[kGroups];
#pragma unroll
        for (int j = 0; j < kGroups; ++j) {
          if constexpr (NormPrologue) // shared memory is close: read it now
            xk[j] = inK(step) && xValid[j] ? load16(xRow[j] + step * 32) : zero;
          else
            xk[j] = xv[d][j];
        }
#pragma unroll
        for (int t = 0; t < Tiles; ++t)
#pragma unroll
          for (int j = 0; j < kGroups; ++j)
            skinnyMma(acc[t][j], wv[d][t][0], wv[d][t][1], xk[j]);
        // Refill the slot with the step Depth ahead.
        const int next = step + kDepth;
        if (next < kSteps) {
          const bool ok = inK(next);
#pragma unroll
          for (int t = 0; t < Tiles; ++t)
#pragma unroll
            for (int h = 0; h < 2; ++h)
              wv[d][t][h] = ok ? loadStreaming16(wRow[t][h] + next * 32) : zero;
          if constexpr (!NormPrologue) {
#pragma unroll
            for (int j = 0; j < kGroups; ++j)
              xv[d][j] = ok && xValid[j] ? loadActivation16(xRow[j] + next * 32)
                                         : zero;
          }
        }
      }
    }
  }

  skinnyReduceEpilogue<MaxRows, Tiles, WarpsK, Shape::kFeatures, OutT, HasBias,
                       Epilogue>(reduce, acc, y, bias, count, N, nBlock, warpN,
                                 warpK, lane);
}

} // namespace kernels
} // namespace sol

//===- CalibrationAttention.cuh - Tensor-core attention of calibration ----===//
//
// calib_attention_tc<HD>: calib_attention (Calibration.cuh) on mma.sync, a
// flash-attention-2 style kernel. Same CalibAttentionArgs and result: causal
// attention of q ([tokens, heads * HD]) over k, v ([tokens, kvHeads * HD])
// within each token's sequence (keys seqStart[t] .. t), the last `window`
// of them when window > 0 (keys from t - window + 1), scores times scale,
// softcap * tanh(score / softcap) when softcap > 0, query head h reading kv
// head h / (heads / kvHeads); float32 out, every element written. Included
// at the end of Calibration.cuh.
//
// Precision: q, k and v are rounded to bf16 as they are staged into shared
// memory, the softmax weights to bf16 for the P V product; products sum in
// fp32 (m16n8k16 bf16 mma), the online softmax is fp32 (log2 domain, exp2f),
// the output accumulates in fp32. Against float64 attention on the float
// inputs the relative error (Frobenius) is about 2e-3 at scores of order 1
// (CalibrationAttentionEmulationTest).
//
// A block takes kCalibAttentionTcRows (64) consecutive tokens of one head,
// a warp 16 of them (two rows a lane, as the mma's accumulator layout puts
// them), and walks the union of their key ranges in tiles of
// calibAttentionTcKeys(HD) keys (64 up to head dim 48, 32 up to 128, 16
// above). The key ranges [first(t), t], first(t) = max(seqStart[t],
// t - window + 1), have nondecreasing starts and ends (sequences are runs of
// consecutive tokens), so the union is [first(t0), last token]; key tiles
// are aligned to the block's first token, so that the causal diagonal of a
// warp's rows falls in one tile. A warp skips the mma of a tile none of its
// rows sees and masks only tiles some of its rows see in part (a tile may
// span two sequences, or the window's start). Tokens need not fill the last
// block (missing rows read zeros and are not written).
//
// Inputs are float32 in global memory. Each tile is rounded to bf16 and
// stored into shared tiles whose rows are XOR-swizzled (head dims of whole
// 128-byte lines) or padded to an odd number of 16-byte chunks (80, 96,
// ...), so that the ldmatrix reads are free of bank conflicts. The loads
// of a tile overlap the tensor-core work before it: per key tile kt,
//    V(kt) requested; S = Q K(kt)^T; V(kt) stored; K(kt + 1) requested;
//    barrier; softmax, O += P V(kt); K(kt + 1) stored; barrier,
// with one K and one V tile in shared memory. Up to head dim 128 a request
// is float4 loads into registers (at most 8 a thread); above, where the O
// accumulators take HD / 2 registers a lane, cp.async into a float32
// staging tile that each thread converts its own part of
// (calibAttentionTcSharedStaging). Q (64 rows) is staged the same way, a
// K tile's rows at a time, once per block tile; up to head dim 96 each
// warp keeps its Q fragments in registers, above it reads them from shared
// memory per key tile (so that nothing spills: 248 registers at 128).
//
// The online softmax moves a row's reference max only when a tile's max
// exceeds it by more than kCalibAttentionTcSlack (8, in log2 units: weights
// up to 256 are harmless in fp32 sums and bf16 P), and a warp rescales its
// O accumulators only when one of its rows moved, which after the first
// tiles of a row is rare.
//
// Launch: CalibAttentionArgs with dim = HD (calibAttentionTcSupports(HD)),
// kCalibAttentionTcThreads (128) threads, calibAttentionTcBlocks(tokens,
// heads) blocks (any grid is correct: blocks stride over the block tiles),
// calibAttentionTcSharedBytes(HD) bytes of dynamic shared memory (over the
// default 48 KB from head dim 208: raise the kernel's maximum first).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

template <int HD> struct CalibAttentionTcShape {
  static_assert(
      calibAttentionTcSupports(HD),
      "calib_attention_tc: head dim must be a multiple of 16, <= 256");
  static constexpr int kThreads = kCalibAttentionTcThreads;
  static constexpr int kRows = kCalibAttentionTcRows;
  static_assert(kRows == kThreads / 32 * 16, "16 query rows a warp");
  static constexpr int kKeys = calibAttentionTcKeys(HD);
  static_assert(kKeys % 16 == 0, "whole k-slices of P V");
  static constexpr int kRowStride = calibAttentionTcRowStride(HD);
  static constexpr bool kQInRegisters = HD <= 96;
  static constexpr bool kSharedStaging = calibAttentionTcSharedStaging(HD);
  static constexpr int kSharedBytes =
      static_cast<int>(calibAttentionTcSharedBytes(HD));
};

// How far (log2 units) a row's running max may rise before the state is
// rescaled to it.
constexpr float kCalibAttentionTcSlack = 8.0f;

namespace calib_tc_detail {

// Element offset of 16-byte chunk `chunk` (8 bf16) of row `row` of a shared
// tile: rows of whole 128-byte lines XOR the low three chunk bits with the
// row, so that eight rows' same chunk spread over all banks; other rows are
// padded to an odd number of chunks, which does the same unswizzled.
template <int HD>
__device__ __forceinline__ int tileOffset(int row, int chunk) {
  constexpr int kStride = CalibAttentionTcShape<HD>::kRowStride;
  if constexpr (HD % 64 == 0) {
    return row * kStride + ((chunk ^ (row & 7)) * 8);
  } else {
    return row * kStride + chunk * 8;
  }
}

// Rows tokens first .. first + Rows - 1 of a float32 matrix (row t at
// base + t * stride, HD values) on their way into a bf16 shared tile, in
// two steps: load() requests them, store(tile) rounds them to bf16 and
// stores them in the tile. A thread handles float4s idx = threadIdx.x +
// i * threads (row idx / (HD / 4)), the same ones in both steps. Rows outside
// [lo, hi) read as zeros (they are masked, and a zero keeps 0 * v finite).
// Two ways, by calibAttentionTcSharedStaging(HD):
//  * CalibRegisterStage: plain loads into registers (at most 8 float4s a
//    thread for a K/V tile);
//  * CalibSharedStage: cp.async into `staging` (Rows x HD floats,
//    unswizzled); store() waits for this thread's copies and converts the
//    float4s it copied itself, so no barrier comes between the steps, and
//    the next load() may reuse the buffer at once.
template <int HD, int Rows> struct CalibStageShape {
  static constexpr int kThreads = kCalibAttentionTcThreads;
  static constexpr int kQuads = HD / 4; // float4s a row
  static constexpr int kUnits = Rows * kQuads;
  static constexpr int kPerThread = ceilDiv(kUnits, kThreads);
  static constexpr bool kRagged = kUnits % kThreads != 0;
};

// Rounds float4 number `idx` of a tile (row idx / (HD / 4)) to bf16 into the
// shared tile.
template <int HD>
__device__ __forceinline__ void storeQuad(bf16 *tile, int idx, float4 x) {
  constexpr int kQuads = HD / 4;
  const int r = idx / kQuads;
  const int c = idx % kQuads;
  uint2 w;
  w.x = packBf16Pair(x.x, x.y);
  w.y = packBf16Pair(x.z, x.w);
  *reinterpret_cast<uint2 *>(tile + tileOffset<HD>(r, c / 2) + (c % 2) * 4) = w;
}

template <int HD, int Rows>
struct CalibRegisterStage : CalibStageShape<HD, Rows> {
  using S = CalibStageShape<HD, Rows>;
  float4 v[S::kPerThread];

  __device__ __forceinline__ explicit CalibRegisterStage(float *) {}

  __device__ __forceinline__ void load(const float *base, long long stride,
                                       int first, int lo, int hi) {
#pragma unroll
    for (int i = 0; i < S::kPerThread; ++i) {
      const int idx = static_cast<int>(threadIdx.x) + i * S::kThreads;
      const int t = first + idx / S::kQuads;
      const int c = idx % S::kQuads;
      float4 x = {0.0f, 0.0f, 0.0f, 0.0f};
      if ((!S::kRagged || idx < S::kUnits) && t >= lo && t < hi)
        x = *reinterpret_cast<const float4 *>(base + t * stride + 4 * c);
      v[i] = x;
    }
  }

  __device__ __forceinline__ void store(bf16 *tile) const {
#pragma unroll
    for (int i = 0; i < S::kPerThread; ++i) {
      const int idx = static_cast<int>(threadIdx.x) + i * S::kThreads;
      if (S::kRagged && idx >= S::kUnits)
        break;
      storeQuad<HD>(tile, idx, v[i]);
    }
  }
};

template <int HD, int Rows>
struct CalibSharedStage : CalibStageShape<HD, Rows> {
  using S = CalibStageShape<HD, Rows>;
  float *staging;

  __device__ __forceinline__ explicit CalibSharedStage(float *buffer)
      : staging(buffer) {}

  __device__ __forceinline__ void load(const float *base, long long stride,
                                       int first, int lo, int hi) {
#pragma unroll
    for (int i = 0; i < S::kPerThread; ++i) {
      const int idx = static_cast<int>(threadIdx.x) + i * S::kThreads;
      if (S::kRagged && idx >= S::kUnits)
        break;
      const int t = first + idx / S::kQuads;
      const int c = idx % S::kQuads;
      const bool ok = t >= lo && t < hi;
      copyAsync16(sharedAddress(staging + 4 * idx),
                  ok ? base + t * stride + 4 * c : base, ok);
    }
    copyAsyncCommit();
  }

  __device__ __forceinline__ void store(bf16 *tile) const {
    copyAsyncWait<0>();
#pragma unroll
    for (int i = 0; i < S::kPerThread; ++i) {
      const int idx = static_cast<int>(threadIdx.x) + i * S::kThreads;
      if (S::kRagged && idx >= S::kUnits)
        break;
      storeQuad<HD>(tile, idx,
                    *reinterpret_cast<const float4 *>(staging + 4 * idx));
    }
  }
};

template <int HD, int Rows, bool Shared> struct CalibStageOf {
  using Type = CalibRegisterStage<HD, Rows>;
};
template <int HD, int Rows> struct CalibStageOf<HD, Rows, true> {
  using Type = CalibSharedStage<HD, Rows>;
};

// The first key token t sees.
__device__ __forceinline__ int calibFirstKey(const int *seqStart, int window,
                                             int t) {
  const int start = seqStart[t];
  return window > 0 ? max(start, t - window + 1) : start;
}

// Block tile (tokens t0 .. t0 + kRows - 1, head h): the whole walk and the
// normalised output rows. sQ, sK, sV: the shared tiles.
template <int HD>
__device__ __forceinline__ void attendBlockTile(const CalibAttentionArgs &args,
                                                bf16 *sQ, bf16 *sK, bf16 *sV,
                                                float *staging, int t0, int h) {
  using Shape = CalibAttentionTcShape<HD>;
  constexpr int kRows = Shape::kRows;
  constexpr int kKeys = Shape::kKeys;
  constexpr bool kQInRegisters = Shape::kQInRegisters;
  constexpr int kSlices = HD / 16;     // k-slices of Q K^T
  constexpr int kKeyTiles = kKeys / 8; // n-tiles of S
  constexpr int kDimTiles = HD / 8;    // n-tiles of O
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int tokens = args.tokens;
  const int window = args.window;
  const int *seqStart = args.seqStart;
  const long long qStride = static_cast<long long>(args.heads) * HD;
  const long long kvStride = static_cast<long long>(args.kvHeads) * HD;
  const int g = h / (args.heads / args.kvHeads);
  const float *kBase = args.k + g * HD;
  const float *vBase = args.v + g * HD;

  // The block's keys [lo, kvEnd), walked in tiles from kvBegin (<= lo, at a
  // whole number of tiles before t0).
  const int kvEnd = min(t0 + kRows, tokens);
  const int lo = calibFirstKey(seqStart, window, t0);
  const int kvBegin = t0 - roundUp(t0 - lo, kKeys);
  const int tiles = ceilDiv(kvEnd - kvBegin, kKeys);

  // Q and the first K tile: through registers, all loads at once; by
  // cp.async, Q a K tile's rows at a time through the staging tile.
  using Stage = typename CalibStageOf<HD, kKeys, Shape::kSharedStaging>::Type;
  Stage kv(staging); // a K or V tile
  const float *qBase = args.q + h * HD;
  if constexpr (Shape::kSharedStaging) {
#pragma unroll 1
    for (int r = 0; r < kRows; r += kKeys) {
      kv.load(qBase, qStride, t0 + r, t0, kvEnd);
      kv.store(sQ + r * Shape::kRowStride);
    }
    kv.load(kBase, kvStride, kvBegin, lo, kvEnd);
    kv.store(sK);
  } else {
    CalibRegisterStage<HD, kRows> q(staging);
    q.load(qBase, qStride, t0, t0, kvEnd);
    kv.load(kBase, kvStride, kvBegin, lo, kvEnd);
    q.store(sQ);
    kv.store(sK);
  }

  // This lane's rows (rowA, rowB = rowA + 8: accumulator elements 0-1 and
  // 2-3) see keys [loX, hiX]; rows past the tokens see none. The warp's
  // rows see keys from warpLo (its first row's first) up to warpLast, and
  // every one of its rows sees the keys [warpMaxLo, warpFirst].
  const int warpFirst = t0 + warp * 16;
  const bool warpHasRows = warpFirst < tokens;
  const int warpLast = min(warpFirst + 15, tokens - 1);
  const int warpLo =
      warpHasRows ? calibFirstKey(seqStart, window, warpFirst) : 0;
  const int warpMaxLo =
      warpHasRows ? calibFirstKey(seqStart, window, warpLast) : 0;
  const int rowA = warpFirst + lane / 4;
  const int rowB = rowA + 8;
  const int hiA = rowA < tokens ? rowA : -1;
  const int hiB = rowB < tokens ? rowB : -1;
  const int loA = rowA < tokens ? calibFirstKey(seqStart, window, rowA) : 0;
  const int loB = rowB < tokens ? calibFirstKey(seqStart, window, rowB) : 0;
  const float qScale = args.scale * kLog2e; // scores in the log2 domain
  const float softcap = args.softcap;
  const float capLog2 = softcap * kLog2e;
  const float capRate = softcap > 0.0f ? 2.0f / softcap : 0.0f;

  __syncthreads(); // Q and K(0) stored

  unsigned q[kQInRegisters ? kSlices : 1][4];
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int s = 0; s < kSlices; ++s)
      loadMatrixX4(q[s],
                   sharedAddress(sQ + tileOffset<HD>(warp * 16 + lane % 16,
                                                     s * 2 + lane / 16)));
  }
  float o[kDimTiles][4];
#pragma unroll
  for (int j = 0; j < kDimTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[j][e] = 0.0f;
  float mA = negativeInfinity(), mB = negativeInfinity();
  float lA = 0.0f, lB = 0.0f; // this lane's share of the row sums

  for (int kt = 0; kt < tiles; ++kt) {
    const int p0 = kvBegin + kt * kKeys;
    kv.load(vBase, kvStride, p0, lo, kvEnd);
    // Whether any of the warp's rows sees a key of the tile, and whether
    // some row misses one.
    const bool active =
        warpHasRows && p0 <= warpLast && p0 + kKeys - 1 >= warpLo;
    const bool masked = p0 < warpMaxLo || p0 + kKeys - 1 > warpFirst;

    // S = Q K^T for the warp's 16 rows and the tile's keys.
    float s[kKeyTiles][4];
#pragma unroll
    for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[j][e] = 0.0f;
    if (active) {
      auto sliceQK = [&](int ks, const unsigned(&qs)[4]) {
#pragma unroll
        for (int jp = 0; jp < kKeyTiles / 2; ++jp) {
          unsigned b[4];
          loadMatrixX4(
              b, sharedAddress(
                     sK + tileOffset<HD>(jp * 16 + lane % 8 + (lane / 16) * 8,
                                         ks * 2 + (lane / 8) % 2)));
          mmaBf16(s[2 * jp], qs, b[0], b[1]);
          mmaBf16(s[2 * jp + 1], qs, b[2], b[3]);
        }
      };
      if constexpr (kQInRegisters) {
#pragma unroll
        for (int ks = 0; ks < kSlices; ++ks)
          sliceQK(ks, q[ks]);
      } else {
#pragma unroll 1
        for (int ks = 0; ks < kSlices; ++ks) {
          unsigned qs[4];
          loadMatrixX4(qs,
                       sharedAddress(sQ + tileOffset<HD>(warp * 16 + lane % 16,
                                                         ks * 2 + lane / 16)));
          sliceQK(ks, qs);
        }
      }
    }
    // V(kt) goes where iteration kt - 1 read it before its last barrier.
    kv.store(sV);
    if (kt + 1 < tiles)
      kv.load(kBase, kvStride, p0 + kKeys, lo, kvEnd);
    __syncthreads(); // V(kt) stored; every warp is done with K(kt)

    if (active) {
      // Scale, cap, mask, and the running max of each row (4 lanes share a
      // row).
      float maxA = negativeInfinity(), maxB = negativeInfinity();
#pragma unroll
      for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float v = s[j][e] * qScale;
          if (softcap > 0.0f)
            v = softcapScore(v, capLog2, capRate);
          if (masked) {
            const int key = p0 + j * 8 + (lane % 4) * 2 + (e & 1);
            const bool visible =
                e < 2 ? key >= loA && key <= hiA : key >= loB && key <= hiB;
            v = visible ? v : negativeInfinity();
          }
          s[j][e] = v;
          if (e < 2)
            maxA = fmaxf(maxA, v);
          else
            maxB = fmaxf(maxB, v);
        }
      maxA = fmaxf(maxA, __shfl_xor_sync(0xffffffffu, maxA, 1));
      maxA = fmaxf(maxA, __shfl_xor_sync(0xffffffffu, maxA, 2));
      maxB = fmaxf(maxB, __shfl_xor_sync(0xffffffffu, maxB, 1));
      maxB = fmaxf(maxB, __shfl_xor_sync(0xffffffffu, maxB, 2));
      // A row's reference m moves only when the tile's max exceeds it by
      // more than kCalibAttentionTcSlack (weights up to 2^slack are exact
      // enough in fp32 sums and bf16 P), so most tiles rescale nothing.
      const bool moveA = maxA > mA + kCalibAttentionTcSlack;
      const bool moveB = maxB > mB + kCalibAttentionTcSlack;
      if (__ballot_sync(0xffffffffu, moveA || moveB) != 0) {
        const float corrA = moveA ? softmaxRescale(mA, maxA) : 1.0f;
        const float corrB = moveB ? softmaxRescale(mB, maxB) : 1.0f;
        mA = moveA ? maxA : mA;
        mB = moveB ? maxB : mB;
        lA *= corrA;
        lB *= corrB;
#pragma unroll
        for (int j = 0; j < kDimTiles; ++j) {
          o[j][0] *= corrA;
          o[j][1] *= corrA;
          o[j][2] *= corrB;
          o[j][3] *= corrB;
        }
      }
      // P = exp2(S - m); a row that has seen no key yet (m = -inf) gets 0.
      const float subA = mA == negativeInfinity() ? 0.0f : mA;
      const float subB = mB == negativeInfinity() ? 0.0f : mB;
#pragma unroll
      for (int j = 0; j < kKeyTiles; ++j) {
        s[j][0] = exp2f(s[j][0] - subA);
        s[j][1] = exp2f(s[j][1] - subA);
        s[j][2] = exp2f(s[j][2] - subB);
        s[j][3] = exp2f(s[j][3] - subB);
        lA += s[j][0] + s[j][1];
        lB += s[j][2] + s[j][3];
      }

      // O += P V: P's accumulator layout is the A-fragment layout of the
      // next mma (keys 16 ks .. 16 ks + 15 are S tiles 2 ks and 2 ks + 1).
#pragma unroll
      for (int ks = 0; ks < kKeys / 16; ++ks) {
        unsigned a[4];
        a[0] = packBf16Pair(s[2 * ks][0], s[2 * ks][1]);
        a[1] = packBf16Pair(s[2 * ks][2], s[2 * ks][3]);
        a[2] = packBf16Pair(s[2 * ks + 1][0], s[2 * ks + 1][1]);
        a[3] = packBf16Pair(s[2 * ks + 1][2], s[2 * ks + 1][3]);
#pragma unroll
        for (int dp = 0; dp < kDimTiles / 2; ++dp) {
          unsigned b[4];
          loadMatrixX4Trans(
              b, sharedAddress(sV + tileOffset<HD>(ks * 16 + lane % 8 +
                                                       ((lane / 8) % 2) * 8,
                                                   dp * 2 + lane / 16)));
          mmaBf16(o[2 * dp], a, b[0], b[1]);
          mmaBf16(o[2 * dp + 1], a, b[2], b[3]);
        }
      }
    }
    // K(kt + 1) goes where this iteration's S read K(kt) before the barrier.
    if (kt + 1 < tiles)
      kv.store(sK);
    __syncthreads(); // K(kt + 1) stored; every warp is done with V(kt)
  }

  // Each row saw its own token, so its sum is positive.
  float sumA = lA, sumB = lB;
  sumA += __shfl_xor_sync(0xffffffffu, sumA, 1);
  sumA += __shfl_xor_sync(0xffffffffu, sumA, 2);
  sumB += __shfl_xor_sync(0xffffffffu, sumB, 1);
  sumB += __shfl_xor_sync(0xffffffffu, sumB, 2);
  const float invA = 1.0f / sumA;
  const float invB = 1.0f / sumB;
  float *outA = args.out + rowA * qStride + h * HD + (lane % 4) * 2;
  float *outB = args.out + rowB * qStride + h * HD + (lane % 4) * 2;
#pragma unroll
  for (int j = 0; j < kDimTiles; ++j) {
    if (rowA < tokens)
      *reinterpret_cast<float2 *>(outA + j * 8) =
          make_float2(o[j][0] * invA, o[j][1] * invA);
    if (rowB < tokens)
      *reinterpret_cast<float2 *>(outB + j * 8) =
          make_float2(o[j][2] * invB, o[j][3] * invB);
  }
}

} // namespace calib_tc_detail

// Grid-stride over block tiles b: head b % heads, tokens from
// (b / heads) * kCalibAttentionTcRows. The last barrier of a block tile's
// walk frees the shared tiles for the next.
template <int HD>
__global__ void __launch_bounds__(kCalibAttentionTcThreads, 2)
    calib_attention_tc(const __grid_constant__ CalibAttentionArgs args) {
  using Shape = CalibAttentionTcShape<HD>;
  bf16 *const sQ = reinterpret_cast<bf16 *>(dynamicSharedMemory());
  bf16 *const sK = sQ + Shape::kRows * Shape::kRowStride;
  bf16 *const sV = sK + Shape::kKeys * Shape::kRowStride;
  float *const staging =
      reinterpret_cast<float *>(sV + Shape::kKeys * Shape::kRowStride);
  const long long tiles = (args.tokens + Shape::kRows - 1) / Shape::kRows;
  const long long tasks = tiles * args.heads;
  for (long long b = blockIdx.x; b < tasks; b += gridDim.x) {
    const int h = static_cast<int>(b % args.heads);
    const int t0 = static_cast<int>(b / args.heads) * Shape::kRows;
    calib_tc_detail::attendBlockTile<HD>(args, sQ, sK, sV, staging, t0, h);
  }
}

} // namespace kernels
} // namespace sol

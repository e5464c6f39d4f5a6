//===- MoeGroupedGemm.cuh - The routed experts as grouped GEMMs (prefill) -===//
//
// sol.moe for steps of many rows (prompts, large batches): after moe_route
// (MoeDecode.cuh) the slots are sorted by expert, and each expert's slots
// run through its gate/up and down weights on tensor cores, BM slots a
// tile, so an expert's weights are read once per BM of its slots rather
// than once per kMoeSlots as moe_gate_up / moe_down read them. The values
// are those of the decode kernels (moeGatedValue, moeDownValue); only the
// order of the float sums differs.
//
//  moe_sort<E, BM>  one block: counts each expert's slots, then `sorted` =
//                   [order (slots) | expert starts (E + 1) | tile starts
//                   (E + 1)]: the slots grouped by expert (in no set order
//                   within one: each row of a GEMM is computed alone), where
//                   each expert's group begins, and where its tiles of BM
//                   begin in the tile numbering (an expert of c slots has
//                   ceil(c / BM) tiles).
//  moe_grouped_gemm<E, KD, N, GateUp, Format, BM>
//                   block b: N tile b / mTiles, tile t = b % mTiles of the
//                   expert whose tiles hold t (mTiles = gridDim.x / N tiles,
//                   an upper bound, ceil(slots / BM) + E; blocks past the
//                   last tile return). A = the tile's slots' rows gathered
//                   from x, B = rows of the expert's weights:
//                   GateUp: x [rows, H], B = gate and up rows interleaved
//                     (tile row 2j is gate row j, 2j + 1 up row j), so an
//                     accumulator pair is (g, u) of one output j:
//                     act[slot][j] = moeGatedValue(g, u); KD = H, N = 2I.
//                   down: x = act [slots, I], B = down rows: out[slot][j] =
//                     moeDownValue(y); KD = I, N = H.
//
// Quantized experts (Format, as MoeDecode.cuh's) are decoded into the B
// tiles: MXFP4 exactly (moeLoadMxfp4Row); int8 and fp8 codes exactly, their
// row scales applied to the sums in the epilogue; int4 codes minus their
// zero point times the group's scale, rounded to bf16 (moeLoadQuantRow).
// moe_combine then weighs and adds each row's K outputs, as in decode.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "GemmEpilogue.cuh"
#include "GemmTiles.cuh"
#include "LaunchArgs.h"
#include "MoeDecode.cuh"

namespace sol {
namespace kernels {

constexpr int kMoeSortThreads = 1024;
constexpr int kMoeGemmStages = 4;
// The grouped GEMM's tile: BM slots x 128 outputs, 4 warps, 4 stages. BM =
// 64 (2 x 2 warps, linear_gemm's medium tile) for prompts, whose experts
// get tens of slots each; 16 or 32 (one warp along M, four along N) for
// batched decode, where an expert gets a few slots: a 64-row tile would
// spend its tensor cores on zero rows, and the smaller stages let three
// blocks share a multiprocessor instead of two.
template <int BM>
using MoeGemmShape =
    GemmShape<BM, 128, BM == 64 ? 2 : 1, BM == 64 ? 2 : 4, kMoeGemmStages>;

// The upper bound on the tiles of `slots` slots over E experts that
// moe_grouped_gemm's grid covers.
__host__ __device__ constexpr int moeGemmTileBound(int slots, int experts,
                                                   int tileRows) {
  return (slots + tileRows - 1) / tileRows + experts;
}

template <int E, int BM>
__global__ void __launch_bounds__(kMoeSortThreads)
    moe_sort(const __grid_constant__ MoeSortArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  __shared__ int counts[E];
  __shared__ int cursor[E];
  const int slots = args.rows * args.topK;
  int *const order = args.sorted;
  int *const expertStarts = order + slots;
  int *const tileStarts = expertStarts + E + 1;
  for (int e = threadIdx.x; e < E; e += kMoeSortThreads)
    counts[e] = 0;
  __syncthreads();
  for (int s = threadIdx.x; s < slots; s += kMoeSortThreads)
    atomicAdd(&counts[args.ids[s]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int start = 0, tile = 0;
    for (int e = 0; e < E; ++e) {
      expertStarts[e] = start;
      tileStarts[e] = tile;
      cursor[e] = start;
      start += counts[e];
      tile += (counts[e] + BM - 1) / BM;
    }
    expertStarts[E] = start;
    tileStarts[E] = tile;
  }
  __syncthreads();
  for (int s = threadIdx.x; s < slots; s += kMoeSortThreads)
    order[atomicAdd(&cursor[args.ids[s]], 1)] = s;
}

// With MXFP4 experts (gpt-oss's) a thread writes one B row of a stage:
// its 64 values' codes (32 bytes) and two exponents, read with plain loads
// and decoded to bf16 (exact: what Transformers dequantizes the experts to)
// before the barrier that precedes the stage's use.
template <int KD>
__device__ __forceinline__ void
moeLoadMxfp4Row(bf16 *tileB, int r, const unsigned char *codes,
                const unsigned char *scales, bool rowOk, int k0) {
#pragma unroll
  for (int g = 0; g < 2; ++g) {
    const bool ok = rowOk && k0 + 32 * g < KD;
    const uint4 packed = ok ? load16(codes + 16 * g) : make_uint4(0, 0, 0, 0);
    const float scale = ok ? e8m0Scale(scales[g]) : 0.0f;
    const unsigned words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      float v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[j] = fp4Value(words[q] >> (4 * j)) * scale;
      store16(tileB + gemm_detail::swizzled(r, 4 * g + q), pack8(v));
    }
  }
}

// With int8, fp8 or int4 experts a thread writes one B row of a stage the
// same way: its 64 values from `codes` (the row's first code), decoded
// (int8 and fp8 exact, unscaled; int4 times its group's scale), zeros past
// KD.
template <int KD, int Format>
__device__ __forceinline__ void
moeLoadQuantRow(bf16 *tileB, int r, const unsigned char *codes,
                const float *scales, const unsigned char *zeros, int groupSize,
                bool rowOk, int k0) {
  constexpr WeightFormat F = kMoeCodes<Format>;
  constexpr int kValues = quant_gemv::kVectorValues<F>;
#pragma unroll
  for (int q = 0; q < 64 / kValues; ++q) {
    const int k = k0 + q * kValues;
    const bool ok = rowOk && k < KD;
    const uint4 v = ok ? load16(codes + (Format == kMoeInt4 ? k / 2 : k))
                       : make_uint4(0, 0, 0, 0);
    unsigned negativeZero = 0;
    float scale = Format == kMoeFp8 ? kMoeFp8Decoded : 1.0f;
    if constexpr (Format == kMoeInt4) {
      const int g = k / groupSize;
      negativeZero = quant_gemv::int4NegativeZero(ok ? zeros[g] : 0);
      scale = ok ? scales[g] : 0.0f;
    }
#pragma unroll
    for (int h = 0; h < kValues / 8; ++h) {
      float f[8];
      quant_gemv::dequant<F>(v, h, negativeZero, f);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        f[j] *= scale;
      store16(tileB + gemm_detail::swizzled(r, q * (kValues / 8) + h),
              pack8(f));
    }
  }
}

template <int E, int KD, int N, bool GateUp, int Format = kMoeBf16, int BM = 64>
__global__ void __launch_bounds__(MoeGemmShape<BM>::kThreads)
    moe_grouped_gemm(const __grid_constant__ MoeGroupedGemmArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  using Shape = MoeGemmShape<BM>;
  constexpr int BN = Shape::kBN;
  constexpr int kThreads = Shape::kThreads;
  constexpr int kMT = Shape::kMTiles, kNT = Shape::kNTiles;
  constexpr int kNTiles = (N + BN - 1) / BN;
  constexpr int kWidth = GateUp ? N / 2 : N; // outputs a slot gets
  static_assert(KD % 8 == 0 && N % 2 == 0,
                "moe_grouped_gemm: K a multiple of 8, N even");
  static_assert(
      Format == kMoeBf16 ||
          (KD % (Format == kMoeInt8 || Format == kMoeFp8 ? 16 : 32) == 0 &&
           BN == kThreads && Shape::kBK == 64),
      "moe_grouped_gemm: quantized rows are whole vectors (16 int8 "
      "or fp8 codes, 32 int4 or MXFP4), a row a thread");
  using namespace gemm_detail;
  const int slots = args.rows * args.topK;
  const int *const order = args.sorted;
  const int *const expertStarts = order + slots;
  const int *const tileStarts = expertStarts + E + 1;
  const int mTiles = static_cast<int>(gridDim.x) / kNTiles;
  const int tile = static_cast<int>(blockIdx.x) % mTiles;
  const int n0 = static_cast<int>(blockIdx.x) / mTiles * BN;
  if (tile >= tileStarts[E])
    return; // past the last tile: the whole block leaves together
  // The expert holding this tile: the last e with tileStarts[e] <= tile
  // (empty experts share their start with the next one).
  int lo = 0, hi = E - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tileStarts[mid] <= tile)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int expert = lo;
  const int first = expertStarts[expert] + (tile - tileStarts[expert]) * BM;
  const int count = min(BM, expertStarts[expert + 1] - first);

  // The tile's slots and the rows of A they read (-1: past the expert's
  // slots, zero rows).
  __shared__ int slotOf[BM];
  __shared__ int rowOf[BM];
  for (int r = threadIdx.x; r < BM; r += kThreads) {
    const int slot = r < count ? order[first + r] : -1;
    slotOf[r] = slot;
    rowOf[r] = slot < 0 ? -1 : GateUp ? slot / args.topK : slot;
  }
  __syncthreads();

  bf16 *const shared = reinterpret_cast<bf16 *>(dynamicSharedMemory());
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warpM = warp / Shape::kWarpsN, warpN = warp % Shape::kWarpsN;
  const long long expertRows = static_cast<long long>(expert) * kWidth;
  auto loadStage = [&](int stage, int kTile) {
    bf16 *tileA = shared + stage * Shape::kStageElems;
    bf16 *tileB = tileA + BM * Shape::kBK;
    const int k0 = kTile * Shape::kBK;
#pragma unroll
    for (int i = 0; i < BM * 8 / kThreads; ++i) {
      const int idx = threadIdx.x + i * kThreads;
      const int r = idx / 8, c = idx % 8, k = k0 + c * 8;
      const int row = rowOf[r];
      const bool ok = row >= 0 && k < KD;
      const bf16 *from =
          ok ? args.x + static_cast<long long>(row) * KD + k : args.x;
      copyAsync16(sharedAddress(tileA + swizzled(r, c)), from, ok);
    }
    if constexpr (Format != kMoeBf16) {
      const int r = threadIdx.x, n = n0 + r;
      const bool up = GateUp && (n & 1);
      const long long wRow = expertRows + (GateUp ? n / 2 : n);
      const unsigned char *codes =
          reinterpret_cast<const unsigned char *>(up ? args.w1 : args.w0);
      const void *scales = up ? args.w1Scales : args.w0Scales;
      if constexpr (Format == kMoeMxfp4) {
        moeLoadMxfp4Row<KD>(tileB, r, codes + wRow * (KD / 2) + k0 / 2,
                            static_cast<const unsigned char *>(scales) +
                                wRow * (KD / 32) + k0 / 32,
                            n < N, k0);
      } else {
        const long long groups = Format == kMoeInt4 ? KD / args.groupSize : 0;
        moeLoadQuantRow<KD, Format>(
            tileB, r, codes + wRow * (Format == kMoeInt4 ? KD / 2 : KD),
            static_cast<const float *>(scales) + wRow * groups,
            (up ? args.w1Zeros : args.w0Zeros) + wRow * groups, args.groupSize,
            n < N, k0);
      }
    } else {
#pragma unroll
      for (int i = 0; i < BN * 8 / kThreads; ++i) {
        const int idx = threadIdx.x + i * kThreads;
        const int r = idx / 8, c = idx % 8, k = k0 + c * 8;
        const int n = n0 + r;
        const bool ok = n < N && k < KD;
        // GateUp: tile row 2j + 1 is up row j, 2j gate row j.
        const bf16 *w = GateUp && (n & 1) ? args.w1 : args.w0;
        const long long wRow = expertRows + (GateUp ? n / 2 : n);
        const bf16 *from = ok ? w + wRow * KD + k : args.w0;
        copyAsync16(sharedAddress(tileB + swizzled(r, c)), from, ok);
      }
    }
  };

  float acc[kMT][kNT][4];
  gemmMainLoop<Shape, kMoeGemmStages>(shared,
                                      (KD + Shape::kBK - 1) / Shape::kBK,
                                      loadStage, warpM, warpN, lane, acc);

#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int col = n0 + warpN * Shape::kWarpTileN + j * 8 + (lane % 4) * 2;
    if (col >= N)
      continue;
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = warpM * Shape::kWarpTileM + i * 16 + lane / 4 + half * 8;
        if (r >= count)
          continue;
        const long long slot = slotOf[r];
        float a = acc[i][j][2 * half], b = acc[i][j][2 * half + 1];
        if constexpr (Format == kMoeInt8 || Format == kMoeFp8) {
          // The codes' row scales: gate's and up's of output col / 2, or
          // down's of outputs col and col + 1.
          const float *s0 = static_cast<const float *>(args.w0Scales);
          const float *s1 = static_cast<const float *>(GateUp ? args.w1Scales
                                                              : args.w0Scales);
          const long long at = expertRows + (GateUp ? col / 2 : col);
          a *= s0[at];
          b *= s1[GateUp ? at : at + 1];
        }
        if constexpr (GateUp) {
          const int out = col / 2;
          args.y[slot * kWidth + out] = __float2bfloat16_rn(
              moeGatedValue(a, b, args.bias0, args.bias1, expertRows + out,
                            args.activation, args.limit));
        } else {
          storePair(args.y + slot * kWidth + col,
                    moeDownValue(a, args.bias0, expertRows + col),
                    moeDownValue(b, args.bias0, expertRows + col + 1));
        }
      }
  }
}

} // namespace kernels
} // namespace sol

//===- PrefillAttention.cuh - Causal GQA attention of prompt chunks -------===//
//
// The tensor-core (mma.sync m16n8k16, bf16 in, fp32 accumulate) attention
// for steps that hold long prompt chunks; paged_attention (one token per
// block, CUDA cores) re-reads K/V for every query token and stays the
// kernel of decode steps.
//
// The step's tokens are cut into tiles on the host (runtime/cuda/
// PrefillAttention.cpp): a tile is up to kPrefillRows tokens of one sequence
// at consecutive positions, given as (first token, rows). Block (tile, q
// head) keeps the tile's queries in registers and walks the sequence's
// cached positions [lo, last position] in tiles of kPrefillKeys, flash-
// attention style: S = Q K^T, a running row max and sum, O += P V with P
// rounded to bf16. K and V tiles are gathered through the block table with
// cp.async into a two-stage ring, each 16-byte chunk XOR-swizzled by its row
// so that cp.async stores and ldmatrix reads are free of bank conflicts.
// Masking is Hugging Face's: key position k is visible to a query at
// position p when k <= p and, with a sliding window w > 0, k > p - w.
//
// q comes from the fused qkv [T, (Hq + 2 * Hkv) * HD] (rope already
// applied); K and V from the paged cache [num_blocks, BS, Hkv, HD];
// out is [T, Hq * HD]. A tile whose sequence index is negative (padding)
// gets zeros. Every token of the step must be in exactly one tile.
//
// Launch: grid (tiles, Hq), kPrefillThreads threads,
// PrefillAttentionShape<HD>::kSharedBytes of dynamic shared memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

constexpr int kPrefillRows = 64;     // query tokens per tile (16 per warp)
constexpr int kPrefillKeys = 64;     // cached positions per K/V tile
constexpr int kPrefillThreads = 128; // 4 warps

template <int HD> struct PrefillAttentionShape {
  static_assert(HD == 64 || HD == 128,
                "prefill_attention: head_dim must be 64 or 128");
  static constexpr int kChunks = HD / 8; // 16-byte chunks per row
  static constexpr int kTileElems = kPrefillRows * HD;
  // Q, then two stages of (K, V).
  static constexpr int kSharedBytes = (kTileElems + 4 * kTileElems) * 2;
};

namespace prefill_detail {

// Element offset of 16-byte chunk `chunk` of row `row` in a tile of
// HD-element rows; rows are 128 or 256 bytes, so XOR-ing the low three chunk
// bits with the row spreads eight rows' same chunk over all banks.
template <int HD> __device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * HD + ((chunk ^ (row & 7)) * 8);
}

} // namespace prefill_detail

template <int Hq, int Hkv, int HD, int BS = kDefaultKvBlockSize>
__global__ void __launch_bounds__(kPrefillThreads)
    prefill_attention(bf16 *out, const bf16 *qkv, const bf16 *k_cache,
                      const bf16 *v_cache, const int *positions,
                      const int *token_seq, const int *block_tables,
                      int max_blocks, float scale, int sliding_window,
                      const int2 *tiles) {
  static_assert(Hq % Hkv == 0, "prefill_attention: Hq must be k * Hkv");
  allowDependentLaunch();
  waitForPredecessor();
  using namespace prefill_detail;
  using Shape = PrefillAttentionShape<HD>;
  constexpr int kRowElems = (Hq + 2 * Hkv) * HD;
  constexpr int kChunks = Shape::kChunks;
  constexpr int kSlices = HD / 16;            // k-slices of Q K^T
  constexpr int kKeyTiles = kPrefillKeys / 8; // n-tiles of S
  constexpr int kDimTiles = HD / 8;           // n-tiles of O
  extern __shared__ __align__(128) unsigned char prefillShared[];
  bf16 *sQ = reinterpret_cast<bf16 *>(prefillShared);
  bf16 *sKV = sQ + Shape::kTileElems; // stage s: K at 2s, V at 2s + 1

  const int2 tile = tiles[blockIdx.x];
  const int t0 = tile.x;
  const int rows = tile.y;
  const int head = blockIdx.y;
  const int g = head / (Hq / Hkv);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int seq = token_seq[t0];
  const long long outRow = static_cast<long long>(Hq) * HD;

  if (seq < 0) { // padding: zeros
    for (int i = threadIdx.x; i < rows * HD; i += kPrefillThreads)
      out[(t0 + i / HD) * outRow + head * HD + i % HD] =
          __float2bfloat16_rn(0.0f);
    return;
  }
  const int firstPos = positions[t0];
  const int lastPos = positions[t0 + rows - 1];
  const int lo = sliding_window > 0 ? max(0, firstPos - sliding_window + 1) : 0;
  const int kvBegin = lo / kPrefillKeys * kPrefillKeys;
  const int kvEnd = lastPos + 1;
  const int kvTiles = ceilDiv(kvEnd - kvBegin, kPrefillKeys);
  const int *table = block_tables + static_cast<long long>(seq) * max_blocks;

  // Q tile: rows t0 .. t0 + rows - 1 of this head; missing rows are zeros.
#pragma unroll
  for (int i = 0; i < kPrefillRows * kChunks / kPrefillThreads; ++i) {
    const int idx = threadIdx.x + i * kPrefillThreads;
    const int r = idx / kChunks;
    const int c = idx % kChunks;
    const bool ok = r < rows;
    const bf16 *src = ok ? qkv + static_cast<long long>(t0 + r) * kRowElems +
                               head * HD + c * 8
                         : qkv;
    copyAsync16(sharedAddress(sQ + swizzle<HD>(r, c)), src, ok);
  }
  auto loadKv = [&](int stage, int kvTile) {
    bf16 *sK = sKV + 2 * stage * Shape::kTileElems;
    bf16 *sV = sK + Shape::kTileElems;
    const int p0 = kvBegin + kvTile * kPrefillKeys;
#pragma unroll
    for (int i = 0; i < kPrefillKeys * kChunks / kPrefillThreads; ++i) {
      const int idx = threadIdx.x + i * kPrefillThreads;
      const int r = idx / kChunks;
      const int c = idx % kChunks;
      const int p = p0 + r;
      const bool ok = p < kvEnd;
      long long offset = 0;
      if (ok)
        offset =
            ((static_cast<long long>(table[p / BS]) * BS + p % BS) * Hkv + g) *
                HD +
            c * 8;
      copyAsync16(sharedAddress(sK + swizzle<HD>(r, c)), k_cache + offset, ok);
      copyAsync16(sharedAddress(sV + swizzle<HD>(r, c)), v_cache + offset, ok);
    }
  };
  loadKv(0, 0);
  copyAsyncCommit();

  // This thread's two query rows (lane / 4 and lane / 4 + 8 of the warp's
  // 16) and their positions; rows past the tile see no key.
  const int rowA = warp * 16 + lane / 4;
  const int rowB = rowA + 8;
  const int posA = rowA < rows ? positions[t0 + rowA] : -1;
  const int posB = rowB < rows ? positions[t0 + rowB] : -1;
  const int loA = sliding_window > 0 ? posA - sliding_window + 1 : 0;
  const int loB = sliding_window > 0 ? posB - sliding_window + 1 : 0;
  const float qScale = scale * kLog2e; // scores in the log2 domain

  unsigned q[kSlices][4];
  float o[kDimTiles][4];
#pragma unroll
  for (int j = 0; j < kDimTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[j][e] = 0.0f;
  float mA = negativeInfinity(), mB = negativeInfinity();
  float lA = 0.0f, lB = 0.0f; // this lane's share of the row sums

  for (int kt = 0; kt < kvTiles; ++kt) {
    // Prefetch the next K/V tile into the other stage (last read in
    // iteration kt - 1, which ended with a barrier).
    if (kt + 1 < kvTiles)
      loadKv((kt + 1) % 2, kt + 1);
    copyAsyncCommit();
    copyAsyncWait<1>(); // Q and tile kt have landed
    __syncthreads();
    if (kt == 0) {
#pragma unroll
      for (int s = 0; s < kSlices; ++s)
        loadMatrixX4(q[s], sharedAddress(sQ + swizzle<HD>(warp * 16 + lane % 16,
                                                          s * 2 + lane / 16)));
    }
    const bf16 *sK = sKV + 2 * (kt % 2) * Shape::kTileElems;
    const bf16 *sV = sK + Shape::kTileElems;
    const int p0 = kvBegin + kt * kPrefillKeys;

    // S = Q K^T for the warp's 16 rows and the tile's 64 keys.
    float s[kKeyTiles][4];
#pragma unroll
    for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[j][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < kSlices; ++ks) {
#pragma unroll
      for (int jp = 0; jp < kKeyTiles / 2; ++jp) {
        unsigned b[4];
        loadMatrixX4(
            b,
            sharedAddress(sK + swizzle<HD>(jp * 16 + lane % 8 + (lane / 16) * 8,
                                           ks * 2 + (lane / 8) % 2)));
        mmaBf16(s[2 * jp], q[ks], b[0], b[1]);
        mmaBf16(s[2 * jp + 1], q[ks], b[2], b[3]);
      }
    }

    // Mask, scale, and the running max of each row (4 lanes share a row).
    float maxA = negativeInfinity(), maxB = negativeInfinity();
#pragma unroll
    for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = p0 + j * 8 + (lane % 4) * 2 + (e & 1);
        const bool rowIsA = e < 2;
        const int pos = rowIsA ? posA : posB;
        const int low = rowIsA ? loA : loB;
        const bool visible = key <= pos && key >= low;
        const float v = visible ? s[j][e] * qScale : negativeInfinity();
        s[j][e] = v;
        if (rowIsA)
          maxA = fmaxf(maxA, v);
        else
          maxB = fmaxf(maxB, v);
      }
    maxA = fmaxf(maxA, __shfl_xor_sync(0xffffffffu, maxA, 1));
    maxA = fmaxf(maxA, __shfl_xor_sync(0xffffffffu, maxA, 2));
    maxB = fmaxf(maxB, __shfl_xor_sync(0xffffffffu, maxB, 1));
    maxB = fmaxf(maxB, __shfl_xor_sync(0xffffffffu, maxB, 2));
    const float newA = fmaxf(mA, maxA);
    const float newB = fmaxf(mB, maxB);
    const float corrA = softmaxRescale(mA, newA);
    const float corrB = softmaxRescale(mB, newB);
    mA = newA;
    mB = newB;
    lA *= corrA;
    lB *= corrB;
#pragma unroll
    for (int j = 0; j < kDimTiles; ++j) {
      o[j][0] *= corrA;
      o[j][1] *= corrA;
      o[j][2] *= corrB;
      o[j][3] *= corrB;
    }
    // P = exp2(S - m); a row that has seen no key yet (m = -inf) gets 0.
    const float subA = newA == negativeInfinity() ? 0.0f : newA;
    const float subB = newB == negativeInfinity() ? 0.0f : newB;
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
    for (int ks = 0; ks < kPrefillKeys / 16; ++ks) {
      unsigned a[4];
      a[0] = packBf16Pair(s[2 * ks][0], s[2 * ks][1]);
      a[1] = packBf16Pair(s[2 * ks][2], s[2 * ks][3]);
      a[2] = packBf16Pair(s[2 * ks + 1][0], s[2 * ks + 1][1]);
      a[3] = packBf16Pair(s[2 * ks + 1][2], s[2 * ks + 1][3]);
#pragma unroll
      for (int dp = 0; dp < kDimTiles / 2; ++dp) {
        unsigned b[4];
        loadMatrixX4Trans(
            b, sharedAddress(
                   sV + swizzle<HD>(ks * 16 + lane % 8 + ((lane / 8) % 2) * 8,
                                    dp * 2 + lane / 16)));
        mmaBf16(o[2 * dp], a, b[0], b[1]);
        mmaBf16(o[2 * dp + 1], a, b[2], b[3]);
      }
    }
    __syncthreads(); // the stage is refilled in the next iteration
  }
  copyAsyncWait<0>();

  lA += __shfl_xor_sync(0xffffffffu, lA, 1);
  lA += __shfl_xor_sync(0xffffffffu, lA, 2);
  lB += __shfl_xor_sync(0xffffffffu, lB, 1);
  lB += __shfl_xor_sync(0xffffffffu, lB, 2);
  const float invA = lA > 0.0f ? 1.0f / lA : 0.0f;
  const float invB = lB > 0.0f ? 1.0f / lB : 0.0f;
#pragma unroll
  for (int j = 0; j < kDimTiles; ++j) {
    const int col = head * HD + j * 8 + (lane % 4) * 2;
    if (rowA < rows)
      *reinterpret_cast<unsigned *>(out + (t0 + rowA) * outRow + col) =
          packBf16Pair(o[j][0] * invA, o[j][1] * invA);
    if (rowB < rows)
      *reinterpret_cast<unsigned *>(out + (t0 + rowB) * outRow + col) =
          packBf16Pair(o[j][2] * invB, o[j][3] * invB);
  }
}

} // namespace kernels
} // namespace sol

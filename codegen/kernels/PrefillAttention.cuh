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
// rounded to bf16. K and V tiles are gathered through the block table into
// a two-stage ring of bf16 tiles in shared memory, each 16-byte chunk
// XOR-swizzled by its row so that the stores and ldmatrix reads are free of
// bank conflicts. Masking is Hugging Face's: key position k is visible to a
// query at position p when k <= p and, with a sliding window w > 0,
// k > p - w.
//
// q comes from the fused qkv [T, (Hq + 2 * Hkv) * HD] (rope already
// applied); K and V from the paged cache [num_blocks, BS, Hkv, HD];
// out is [T, Hq * HD]. A tile whose sequence index is negative (padding)
// gets zeros. Every token of the step must be in exactly one tile.
//
// Two kernels share one main loop (prefill_detail::attendTiles, also the
// loop of ChunkAttention.cuh's kernels, whose rows pack a kv head's query
// heads), which takes the way K/V tiles reach shared memory as a policy:
//  * prefill_attention, bf16 cache (PrefillBf16Kv): cp.async straight into
//    the bf16 ring.
//  * prefill_attention_fp8, fp8 (E4M3) cache with a float32 scale per
//    (block, slot, kv head) for K and for V ([num_blocks, BS, Hkv], written
//    by rope_kv_write_fp8; value = e4m3 * scale), PrefillFp8Kv: cp.async
//    brings tile kt + 1's E4M3 bytes into a staging buffer and its scales
//    into a per-stage array while tile kt is computed; after the compute
//    each thread widens the chunks it copied itself to bf16 into the ring's
//    other stage (no extra barrier: the end-of-iteration one publishes
//    them). Every E4M3 value is a bf16 value, so the widening is exact and
//    the scales stay out of the mma, as in paged_attention_fp8: scores are
//    (q . k8) * k_scale per key column (fp32, folded into the softmax
//    scale), and P V uses bf16(p * v_scale) per key in place of bf16(p);
//    the row sums add the unscaled p. Against float32 attention over the
//    dequantized cache (e4m3 * scale) the only roundings are then those of
//    the bf16 kernel against a float32 reference on its bf16 cache: fp32
//    mma accumulation, one bf16 rounding of each softmax weight (of
//    p * v_scale here, relative error <= 2^-9) and the bf16 output.
//    The widening is a bit move (E4M3's sign, 4-bit exponent and 3-bit
//    mantissa into bf16's fields gives e4m3 * 2^-120, subnormals included)
//    and one exact bf16x2 multiply by 2^120, 2.5 instructions per pair of
//    values instead of the 4 of cvt.f16x2.e4m3x2 -> f32 -> bf16. E4M3 NaN
//    (0x7F/0xFF, only written for NaN inputs) reads as +-480 * scale.
//
// Head dims: 64, 80, 96, 128 and 256 (any multiple of 16 up to 256
// compiles). The mma tiling needs only multiples of 16; rows of 80 and 96
// (10 and 12 chunks of 16 bytes) cannot take the XOR swizzle, so their
// tiles' rows are padded to an odd number of chunks (88, 104 elements),
// which spreads eight rows' same chunk over the banks by itself. At 256 the
// O accumulators take 128 registers a thread, so Q stays in shared memory
// and each warp reads its fragments once per K/V tile (64 more registers
// otherwise); its tiles take 160 KB (194 KB with fp8): one block an SM.
//
// The Softcap variants (Gemma 2) cap every visible score s (q . k * scale)
// to softcap * tanh(s / softcap) before the softmax; the plain kernels do
// not read args.softcap.
//
// Launch: TiledAttentionArgs (LaunchArgs.h), grid (tiles, Hq),
// kPrefillThreads threads,
// PrefillAttentionShape<HD>::kSharedBytes (bf16) or ::kFp8SharedBytes (fp8)
// of dynamic shared memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

constexpr int kPrefillRows = 64;     // query tokens per tile (16 per warp)
constexpr int kPrefillKeys = 64;     // cached positions per K/V tile
constexpr int kPrefillThreads = 128; // 4 warps

template <int HD> struct PrefillAttentionShape {
  static_assert(HD % 16 == 0 && HD >= 16 && HD <= 256,
                "prefill_attention: head_dim must be a multiple of 16, <= 256");
  static constexpr int kChunks = HD / 8; // 16-byte chunks per row
  // Elements from one tile row to the next: HD when the XOR swizzle spreads
  // the rows over the banks (rows of a multiple of 8 chunks), else HD + 8,
  // an odd number of chunks, which spreads them by itself (80: 11 chunks).
  static constexpr int kRowStride = HD % 64 == 0 ? HD : HD + 8;
  static constexpr int kTileElems = kPrefillRows * kRowStride;
  // Q fragments stay in registers for the whole walk up to head dim 128; at
  // 256 they would take 64 of them beside the 128 of O, so each warp reads
  // its Q fragments from shared memory once per K/V tile instead.
  static constexpr bool kQInRegisters = HD <= 128;
  // Q, then two stages of (K, V).
  static constexpr int kSharedBytes = (kTileElems + 4 * kTileElems) * 2;
  // fp8: then one staging tile of E4M3 K and V bytes, then two stages of
  // (K scales, V scales).
  static constexpr int kStagingBytes = 2 * kPrefillKeys * HD;
  static constexpr int kScaleBytes = 2 * 2 * kPrefillKeys * 4;
  static constexpr int kFp8SharedBytes =
      kSharedBytes + kStagingBytes + kScaleBytes;
};

namespace prefill_detail {

// Element offset of 16-byte chunk `chunk` of row `row` in a tile of
// HD-element rows. Rows of 128, 256 or 512 bytes: XOR-ing the low three
// chunk bits with the row spreads eight rows' same chunk over all banks.
// Other head dims (80, 96) pad each row to an odd number of chunks
// (PrefillAttentionShape::kRowStride), which does the same unswizzled.
template <int HD> __device__ __forceinline__ int swizzle(int row, int chunk) {
  if constexpr (HD % 64 == 0)
    return row * HD + ((chunk ^ (row & 7)) * 8);
  else
    return row * PrefillAttentionShape<HD>::kRowStride + chunk * 8;
}

// K/V tiles from a bf16 cache: cp.async straight into the ring's stage.
template <int Hkv, int HD, int BS> struct PrefillBf16Kv {
  static constexpr bool kScaled = false;
  const bf16 *k_cache;
  const bf16 *v_cache;

  // Issues the copies of K/V tile `kvTile` (positions kvBegin + 64 kvTile
  // ..., zeros from kvEnd on) into stage `stage` of the ring at sKV.
  __device__ __forceinline__ void fetch(bf16 *sKV, int stage, int kvTile,
                                        int kvBegin, int kvEnd,
                                        const int *table, int g) const {
    constexpr int kChunks = HD / 8;
    constexpr int kTileElems = PrefillAttentionShape<HD>::kTileElems;
    bf16 *sK = sKV + 2 * stage * kTileElems;
    bf16 *sV = sK + kTileElems;
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
  }
  // The copies land by themselves (the loop's wait and barrier).
  __device__ __forceinline__ void land(bf16 *, bf16 *) const {}
};

// Four E4M3 values (one word, first value in the low byte) as two bf16x2
// words (values 0, 1 and 2, 3) holding exactly the same values. Per byte
// s eeee mmm: the bf16 pattern s 0000eeee mmm0000 stands for e4m3 * 2^-120
// (exponent bias 7 against 127; an E4M3 subnormal 0000 mmm becomes a bf16
// subnormal of the same significand), and multiplying by 2^120 in bf16 is
// exact (fma.rn.bf16x2 keeps subnormal inputs).
__device__ __forceinline__ void e4m3x4ToBf16(unsigned w, unsigned &lo,
                                             unsigned &hi) {
  // Per byte: the high byte of the bf16 (sign, 0000, exponent bits 3..1)
  // and its low byte (exponent bit 0, mantissa, 0000).
  const unsigned high = (w & 0x80808080u) | ((w >> 4) & 0x07070707u);
  const unsigned low = (w << 4) & 0xf0f0f0f0u;
  const unsigned a = __byte_perm(low, high, 0x5140);
  const unsigned b = __byte_perm(low, high, 0x7362);
  constexpr unsigned kTwoPow120 = 0x7b807b80u; // bf16x2 (2^120, 2^120)
  constexpr unsigned kMinusZero = 0x80008000u;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n"
      : "=r"(lo)
      : "r"(a), "r"(kTwoPow120), "r"(kMinusZero));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n"
      : "=r"(hi)
      : "r"(b), "r"(kTwoPow120), "r"(kMinusZero));
}

// K/V tiles from an fp8 (E4M3) cache with per-(block, slot, kv head) scales:
// fetch copies the bytes into `staging` (one tile: K rows then V rows, HD
// bytes each, unswizzled) and the scales into `scales` [stage][K, V][key]
// with cp.async; land waits for this thread's copies and widens the chunks
// it copied itself to bf16 into the ring (so no barrier comes between).
template <int Hkv, int HD, int BS> struct PrefillFp8Kv {
  static constexpr bool kScaled = true;
  static constexpr int kChunks = HD / 16; // 16-byte fp8 chunks per row
  // Chunks of a tile per thread; when they do not divide evenly (head dim
  // 80: 320 chunks) the last round's threads past the tile copy nothing.
  static constexpr int kTileChunks = kPrefillKeys * kChunks;
  static constexpr int kPerThread = ceilDiv(kTileChunks, kPrefillThreads);
  static constexpr bool kRagged = kTileChunks % kPrefillThreads != 0;
  static_assert(2 * kPrefillKeys == kPrefillThreads,
                "prefill_attention_fp8: one scale per thread and tile");
  const unsigned char *k_cache;
  const unsigned char *v_cache;
  const float *k_scales;
  const float *v_scales;
  unsigned char *staging;
  float *scales;

  __device__ __forceinline__ void fetch(bf16 *, int stage, int kvTile,
                                        int kvBegin, int kvEnd,
                                        const int *table, int g) const {
    const int p0 = kvBegin + kvTile * kPrefillKeys;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int idx = threadIdx.x + i * kPrefillThreads;
      if (kRagged && idx >= kTileChunks)
        break;
      const int r = idx / kChunks;
      const int c = idx % kChunks;
      const int p = p0 + r;
      const bool ok = p < kvEnd;
      long long offset = 0;
      if (ok)
        offset =
            ((static_cast<long long>(table[p / BS]) * BS + p % BS) * Hkv + g) *
                HD +
            c * 16;
      unsigned char *dst = staging + r * HD + c * 16;
      copyAsync16(sharedAddress(dst), k_cache + offset, ok);
      copyAsync16(sharedAddress(dst + kPrefillKeys * HD), v_cache + offset, ok);
    }
    // Threads 0..63: the K scales of the tile's keys, 64..127: the V ones;
    // keys from kvEnd on get 0 (their P is 0: no NaN from 0 * scale).
    const int r = threadIdx.x % kPrefillKeys;
    const bool isV = threadIdx.x >= kPrefillKeys;
    const int p = p0 + r;
    const bool ok = p < kvEnd;
    long long row = 0;
    if (ok)
      row = (static_cast<long long>(table[p / BS]) * BS + p % BS) * Hkv + g;
    copyAsync4(
        sharedAddress(scales + (2 * stage + (isV ? 1 : 0)) * kPrefillKeys + r),
        (isV ? v_scales : k_scales) + row, ok);
  }

  __device__ __forceinline__ void land(bf16 *sK, bf16 *sV) const {
    copyAsyncWait<0>();
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int idx = threadIdx.x + i * kPrefillThreads;
      if (kRagged && idx >= kTileChunks)
        break;
      const int r = idx / kChunks;
      const int c = idx % kChunks;
      // This fp8 chunk is bf16 chunks 2c and 2c + 1 of the row. Storing
      // 2c + 1 first for c >= 4 makes the eight threads of a 16-byte-store
      // phase hit eight different chunks mod 8 (all banks) at head dim 128;
      // at 64 a phase spans two rows, whose swizzles differ in bit 0.
      const int first = 2 * c + ((c >> 2) & 1);
#pragma unroll
      for (int kv = 0; kv < 2; ++kv) {
        const uint4 raw =
            load16(staging + kv * kPrefillKeys * HD + r * HD + c * 16);
        uint4 w0, w1;
        e4m3x4ToBf16(raw.x, w0.x, w0.y);
        e4m3x4ToBf16(raw.y, w0.z, w0.w);
        e4m3x4ToBf16(raw.z, w1.x, w1.y);
        e4m3x4ToBf16(raw.w, w1.z, w1.w);
        bf16 *tile = kv == 0 ? sK : sV;
        store16(tile + swizzle<HD>(r, first), first & 1 ? w1 : w0);
        store16(tile + swizzle<HD>(r, first ^ 1), first & 1 ? w0 : w1);
      }
    }
  }

  // The K and V scales of keys `key` and `key` + 1 of the tile in `stage`.
  __device__ __forceinline__ float2 keyScales(int stage, int key) const {
    return *reinterpret_cast<const float2 *>(scales + 2 * stage * kPrefillKeys +
                                             key);
  }
  __device__ __forceinline__ float2 valueScales(int stage, int key) const {
    return *reinterpret_cast<const float2 *>(
        scales + (2 * stage + 1) * kPrefillKeys + key);
  }
};

// PrefillFp8Kv with its staging tile and scales after the bf16 layout
// (PrefillAttentionShape::kSharedBytes) of the dynamic shared memory.
template <int Hkv, int HD, int BS>
__device__ __forceinline__ PrefillFp8Kv<Hkv, HD, BS>
fp8Kv(unsigned char *shared, const unsigned char *k_cache,
      const unsigned char *v_cache, const float *k_scales,
      const float *v_scales) {
  using Shape = PrefillAttentionShape<HD>;
  unsigned char *staging = shared + Shape::kSharedBytes;
  return {k_cache,  v_cache,
          k_scales, v_scales,
          staging,  reinterpret_cast<float *>(staging + Shape::kStagingBytes)};
}

// The running state of a block's attention: this lane's share of the
// unnormalised outputs of its two query rows (rowA = warp * 16 + lane / 4
// in o[j][0..1], rowB = rowA + 8 in o[j][2..3], columns j * 8 + (lane % 4)
// * 2 + {0, 1}), their running maxima (log2 domain; -inf: no key seen) and
// this lane's share of their sums (the 4 lanes of a row add up to it).
template <int HD> struct AttendState {
  float o[HD / 8][4];
  float mA, mB, lA, lB;

  // The full sums of the lane's two rows (over the 4 lanes of a row).
  __device__ __forceinline__ float2 rowSums() const {
    float a = lA, b = lB;
    a += __shfl_xor_sync(0xffffffffu, a, 1);
    a += __shfl_xor_sync(0xffffffffu, a, 2);
    b += __shfl_xor_sync(0xffffffffu, b, 1);
    b += __shfl_xor_sync(0xffffffffu, b, 2);
    return make_float2(a, b);
  }
};

// The rows of a block: G consecutive query heads (from headBase) of each of
// `tokens` consecutive tokens from t0, row r = (token r / G, head r % G).
// prefill_attention has G = 1 (one head, many tokens); chunk_attention
// (ChunkAttention.cuh) packs the G query heads of one kv head.
struct AttendRows {
  int t0;
  int tokens;
  int headBase;
};

// The main loop the kernels share: Q of `rows` (copied into shared memory;
// `shared` is the dynamic shared memory: Q, the ring of K/V stages, then
// whatever Kv keeps, Kv one of the policies above) against the K/V tiles
// [tileFirst, tileEnd) of kv head g (tile i: positions kvBegin + 64 i ...,
// positions from kvEnd on read as zeros), flash-attention style, leaving
// the unnormalised state in `st`. With earlyFetch the first K/V tile is
// requested before waitForPredecessor (its positions must be older than the
// step); Q always after. softcap > 0 caps the scores (LaunchArgs.h).
template <int Hq, int Hkv, int HD, int BS, int G, typename Kv>
__device__ __forceinline__ void
attendTiles(unsigned char *shared, const Kv &kv, const bf16 *qkv,
            const int *positions, const int *table, AttendRows rows, int g,
            float scale, int sliding_window, float softcap, int kvBegin,
            int kvEnd, int tileFirst, int tileEnd, bool earlyFetch,
            AttendState<HD> &st) {
  using Shape = PrefillAttentionShape<HD>;
  constexpr int kRowElems = (Hq + 2 * Hkv) * HD;
  constexpr int kChunks = Shape::kChunks;
  constexpr int kSlices = HD / 16;            // k-slices of Q K^T
  constexpr int kKeyTiles = kPrefillKeys / 8; // n-tiles of S
  constexpr int kDimTiles = HD / 8;           // n-tiles of O
  bf16 *sQ = reinterpret_cast<bf16 *>(shared);
  bf16 *sKV = sQ + Shape::kTileElems; // stage s: K at 2s, V at 2s + 1
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int qRows = rows.tokens * G;

  auto loadKv = [&](int stage, int kvTile) {
    kv.fetch(sKV, stage, kvTile, kvBegin, kvEnd, table, g);
  };
  auto landKv = [&](int stage) {
    bf16 *sK = sKV + 2 * stage * Shape::kTileElems;
    kv.land(sK, sK + Shape::kTileElems);
  };
  const bool any = tileFirst < tileEnd;
  if (earlyFetch && any) {
    loadKv(0, tileFirst);
    copyAsyncCommit();
  }
  waitForPredecessor();
  // Q tile: row r is head headBase + r % G of token t0 + r / G; missing
  // rows are zeros.
#pragma unroll
  for (int i = 0; i < kPrefillRows * kChunks / kPrefillThreads; ++i) {
    const int idx = threadIdx.x + i * kPrefillThreads;
    const int r = idx / kChunks;
    const int c = idx % kChunks;
    const bool ok = r < qRows;
    const bf16 *src =
        ok ? qkv + static_cast<long long>(rows.t0 + r / G) * kRowElems +
                 (rows.headBase + r % G) * HD + c * 8
           : qkv;
    copyAsync16(sharedAddress(sQ + swizzle<HD>(r, c)), src, ok);
  }
  if (!earlyFetch && any)
    loadKv(0, tileFirst);
  copyAsyncCommit();

  // This thread's two query rows (lane / 4 and lane / 4 + 8 of the warp's
  // 16) and their positions; rows past the tile see no key.
  const int rowA = warp * 16 + lane / 4;
  const int rowB = rowA + 8;
  const int posA = rowA < qRows ? positions[rows.t0 + rowA / G] : -1;
  const int posB = rowB < qRows ? positions[rows.t0 + rowB / G] : -1;
  const int loA = sliding_window > 0 ? posA - sliding_window + 1 : 0;
  const int loB = sliding_window > 0 ? posB - sliding_window + 1 : 0;
  const float qScale = scale * kLog2e; // scores in the log2 domain
  const float capLog2 = softcap * kLog2e;
  const float capRate = softcap > 0.0f ? 2.0f / softcap : 0.0f;
  // Warps whose 16 rows are all past the tile only help with the copies.
  const bool warpHasRows = warp * 16 < qRows;

  constexpr bool kQInRegisters = Shape::kQInRegisters;
  unsigned q[kQInRegisters ? kSlices : 1][4];
  float(&o)[kDimTiles][4] = st.o;
#pragma unroll
  for (int j = 0; j < kDimTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[j][e] = 0.0f;
  float mA = negativeInfinity(), mB = negativeInfinity();
  float lA = 0.0f, lB = 0.0f; // this lane's share of the row sums
  if (any)
    landKv(0);

  for (int kt = tileFirst; kt < tileEnd; ++kt) {
    const int stage = (kt - tileFirst) % 2;
    // Prefetch the next K/V tile into the other stage (last read in
    // iteration kt - 1, which ended with a barrier).
    if (kt + 1 < tileEnd)
      loadKv(stage ^ 1, kt + 1);
    copyAsyncCommit();
    copyAsyncWait<1>(); // Q and tile kt have landed
    __syncthreads();
    const bf16 *sK = sKV + 2 * stage * Shape::kTileElems;
    const bf16 *sV = sK + Shape::kTileElems;
    const int p0 = kvBegin + kt * kPrefillKeys;
    if constexpr (kQInRegisters) {
      if (kt == tileFirst) {
#pragma unroll
        for (int s = 0; s < kSlices; ++s)
          loadMatrixX4(q[s],
                       sharedAddress(sQ + swizzle<HD>(warp * 16 + lane % 16,
                                                      s * 2 + lane / 16)));
      }
    }

    if (warpHasRows) {
      // S = Q K^T for the warp's 16 rows and the tile's 64 keys.
      float s[kKeyTiles][4];
#pragma unroll
      for (int j = 0; j < kKeyTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          s[j][e] = 0.0f;
      // The k-slice of S = Q K^T with Q fragment qs.
      auto sliceQK = [&](int ks, const unsigned(&qs)[4]) {
#pragma unroll
        for (int jp = 0; jp < kKeyTiles / 2; ++jp) {
          unsigned b[4];
          loadMatrixX4(
              b, sharedAddress(sK +
                               swizzle<HD>(jp * 16 + lane % 8 + (lane / 16) * 8,
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
          loadMatrixX4(qs, sharedAddress(sQ + swizzle<HD>(warp * 16 + lane % 16,
                                                          ks * 2 + lane / 16)));
          sliceQK(ks, qs);
        }
      }

      // fp8: the score factor of this lane's key columns (j * 8 + (lane %
      // 4) * 2 + {0, 1}): qScale times the key's K scale.
      float2 keyFactor[kKeyTiles];
      if constexpr (Kv::kScaled) {
#pragma unroll
        for (int j = 0; j < kKeyTiles; ++j) {
          const float2 ks = kv.keyScales(stage, j * 8 + (lane % 4) * 2);
          keyFactor[j] = make_float2(qScale * ks.x, qScale * ks.y);
        }
      }

      // Scale, cap (Softcap variants), mask, and the running max of each
      // row (4 lanes share a row).
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
          float factor = qScale;
          if constexpr (Kv::kScaled)
            factor = (e & 1) ? keyFactor[j].y : keyFactor[j].x;
          float v = s[j][e] * factor;
          if (softcap > 0.0f) // Softcap variants only (else constant)
            v = softcapScore(v, capLog2, capRate);
          v = visible ? v : negativeInfinity();
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
        if constexpr (Kv::kScaled) {
          // fp8: the weights times the keys' V scales (the sums above keep
          // the unscaled p).
          const int key = ks * 16 + (lane % 4) * 2;
          const float2 v0 = kv.valueScales(stage, key);
          const float2 v1 = kv.valueScales(stage, key + 8);
          a[0] = packBf16Pair(s[2 * ks][0] * v0.x, s[2 * ks][1] * v0.y);
          a[1] = packBf16Pair(s[2 * ks][2] * v0.x, s[2 * ks][3] * v0.y);
          a[2] = packBf16Pair(s[2 * ks + 1][0] * v1.x, s[2 * ks + 1][1] * v1.y);
          a[3] = packBf16Pair(s[2 * ks + 1][2] * v1.x, s[2 * ks + 1][3] * v1.y);
        } else {
          a[0] = packBf16Pair(s[2 * ks][0], s[2 * ks][1]);
          a[1] = packBf16Pair(s[2 * ks][2], s[2 * ks][3]);
          a[2] = packBf16Pair(s[2 * ks + 1][0], s[2 * ks + 1][1]);
          a[3] = packBf16Pair(s[2 * ks + 1][2], s[2 * ks + 1][3]);
        }
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
    }
    // fp8: widen tile kt + 1 (copied during this compute) into the other
    // stage, which iteration kt - 1 read before its closing barrier.
    if (kt + 1 < tileEnd)
      landKv(stage ^ 1);
    __syncthreads(); // the stage is refilled in the next iteration
  }
  copyAsyncWait<0>();
  st.mA = mA;
  st.mB = mB;
  st.lA = lA;
  st.lB = lB;
}

// Normalises a block's finished state and writes its rows to out
// [T, Hq * HD], each head's sink (gpt-oss; `sinks` null: none) in its
// softmax.
template <int Hq, int HD, int G>
__device__ __forceinline__ void writeNormalized(AttendState<HD> &st, bf16 *out,
                                                AttendRows rows,
                                                const bf16 *sinks) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int qRows = rows.tokens * G;
  const int rowA = warp * 16 + lane / 4;
  const int rowB = rowA + 8;
  const float2 l = st.rowSums();
  float invA = l.x > 0.0f ? 1.0f / l.x : 0.0f;
  float invB = l.y > 0.0f ? 1.0f / l.y : 0.0f;
  if (sinks) {
    invA =
        sinkNormalizer(st.mA, l.x, sinkLog2Of(sinks, rows.headBase + rowA % G));
    invB =
        sinkNormalizer(st.mB, l.y, sinkLog2Of(sinks, rows.headBase + rowB % G));
  }
  const long long outRow = static_cast<long long>(Hq) * HD;
  bf16 *outA = out + (rows.t0 + rowA / G) * outRow +
               (rows.headBase + rowA % G) * HD + (lane % 4) * 2;
  bf16 *outB = out + (rows.t0 + rowB / G) * outRow +
               (rows.headBase + rowB % G) * HD + (lane % 4) * 2;
#pragma unroll
  for (int j = 0; j < HD / 8; ++j) {
    if (rowA < qRows)
      *reinterpret_cast<unsigned *>(outA + j * 8) =
          packBf16Pair(st.o[j][0] * invA, st.o[j][1] * invA);
    if (rowB < qRows)
      *reinterpret_cast<unsigned *>(outB + j * 8) =
          packBf16Pair(st.o[j][2] * invB, st.o[j][3] * invB);
  }
}

// Zeros for the rows of a padding tile.
template <int Hq, int HD, int G>
__device__ __forceinline__ void writeZeros(bf16 *out, AttendRows rows) {
  const long long outRow = static_cast<long long>(Hq) * HD;
  for (int i = threadIdx.x; i < rows.tokens * G * HD; i += kPrefillThreads) {
    const int r = i / HD;
    out[(rows.t0 + r / G) * outRow + (rows.headBase + r % G) * HD + i % HD] =
        __float2bfloat16_rn(0.0f);
  }
}

// prefill_attention's body: block (tile, q head) walks every K/V tile of
// the tile's sequence up to its last position.
template <int Hq, int Hkv, int HD, int BS, typename Kv>
__device__ __forceinline__ void
attend(unsigned char *shared, const Kv &kv, bf16 *out, const bf16 *qkv,
       const int *positions, const int *token_seq, const int *block_tables,
       int max_blocks, float scale, int sliding_window, float softcap,
       const int2 *tiles, const bf16 *sinks) {
  const int2 tile = tiles[blockIdx.x];
  const AttendRows rows{tile.x, tile.y, static_cast<int>(blockIdx.y)};
  const int g = rows.headBase / (Hq / Hkv);
  const int seq = token_seq[rows.t0];
  if (seq < 0) { // padding: zeros
    writeZeros<Hq, HD, 1>(out, rows);
    return;
  }
  const int firstPos = positions[rows.t0];
  const int lastPos = positions[rows.t0 + rows.tokens - 1];
  const int lo = sliding_window > 0 ? max(0, firstPos - sliding_window + 1) : 0;
  const int kvBegin = lo / kPrefillKeys * kPrefillKeys;
  const int kvEnd = lastPos + 1;
  const int kvTiles = ceilDiv(kvEnd - kvBegin, kPrefillKeys);
  const int *table = block_tables + static_cast<long long>(seq) * max_blocks;
  AttendState<HD> st;
  attendTiles<Hq, Hkv, HD, BS, 1>(shared, kv, qkv, positions, table, rows, g,
                                  scale, sliding_window, softcap, kvBegin,
                                  kvEnd, 0, kvTiles, false, st);
  writeNormalized<Hq, HD, 1>(st, out, rows, sinks);
}

} // namespace prefill_detail

template <int Hq, int Hkv, int HD, int BS = kDefaultKvBlockSize,
          bool Softcap = false>
__global__ void __launch_bounds__(kPrefillThreads)
    prefill_attention(const __grid_constant__ TiledAttentionArgs args) {
  static_assert(Hq % Hkv == 0, "prefill_attention: Hq must be k * Hkv");
  allowDependentLaunch();
  waitForPredecessor();
  extern __shared__ __align__(128) unsigned char prefillShared[];
  const prefill_detail::PrefillBf16Kv<Hkv, HD, BS> kv{
      static_cast<const bf16 *>(args.kCache),
      static_cast<const bf16 *>(args.vCache)};
  prefill_detail::attend<Hq, Hkv, HD, BS>(
      prefillShared, kv, args.out, args.qkv, args.positions, args.tokenSeq,
      args.blockTables, args.maxBlocks, args.scale, args.slidingWindow,
      Softcap ? args.softcap : 0.0f, args.tiles, args.sinks);
}

// kScales, vScales: [num_blocks, BS, Hkv] float32 (see the header).
template <int Hq, int Hkv, int HD, int BS = kDefaultKvBlockSize,
          bool Softcap = false>
__global__ void __launch_bounds__(kPrefillThreads)
    prefill_attention_fp8(const __grid_constant__ TiledAttentionArgs args) {
  static_assert(Hq % Hkv == 0, "prefill_attention_fp8: Hq must be k * Hkv");
  allowDependentLaunch();
  waitForPredecessor();
  extern __shared__ __align__(128) unsigned char prefillShared[];
  const auto kv = prefill_detail::fp8Kv<Hkv, HD, BS>(
      prefillShared, static_cast<const unsigned char *>(args.kCache),
      static_cast<const unsigned char *>(args.vCache), args.kScales,
      args.vScales);
  prefill_detail::attend<Hq, Hkv, HD, BS>(
      prefillShared, kv, args.out, args.qkv, args.positions, args.tokenSeq,
      args.blockTables, args.maxBlocks, args.scale, args.slidingWindow,
      Softcap ? args.softcap : 0.0f, args.tiles, args.sinks);
}

} // namespace kernels
} // namespace sol

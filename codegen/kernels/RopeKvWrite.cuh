//===- RopeKvWrite.cuh - Rotary embedding + paged KV-cache write ----------===//
//
// qkv is the fused projection [T, (Hq + 2 * Hkv) * HD]: q heads, k heads, then
// v heads. For each token t with pos = positions[t] this kernel
//  - rotates q and k in place with Hugging Face's rotate-half RoPE: angles
//    pos * inv_freq[i] in fp32, cos/sin times attention_scaling rounded to
//    bf16, then x * cos + rotate_half(x) * sin with bf16 rounding after each
//    op, as PyTorch does on bf16 tensors;
//  - writes the rotated k and the v of every kv head into the paged cache
//    ([num_blocks, BS, Hkv, HD]) at block block_tables[seq][pos / BS], slot
//    pos % BS, where seq = token_seq[t].
// Tokens with token_seq[t] < 0 are padding (e.g. unused slots of a captured
// batch) and are left untouched.
//
// rope_kv_write_fp8 does the same for an fp8 (E4M3) cache with dynamic
// per-row scales: once q and k are rotated, each kv head's rotated k row and
// its v row (head_dim bf16 values) get scale = amax(|row|) / 448 (1 when
// amax is 0), stored in k_scales / v_scales [num_blocks, BS, Hkv] at the
// row's (block, slot, head), and the row is stored as e4m3(x / scale),
// rounded to nearest even and saturated to +-448 (NaN stays NaN). The
// reference executor (runtime/reference/Fp8.h) applies the same rule.
//
// Launch: T blocks of kRopeThreads threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

#include <cuda_fp8.h>

namespace sol {
namespace kernels {

constexpr int kRopeThreads = 128;

namespace rope_detail {

// Rotates chunk c (8 pairs) of head `head` of `row` in place; r1, r2 get the
// rotated first- and second-half values.
template <int HD>
__device__ __forceinline__ void
rotateChunk(bf16 *row, int head, int c, const float *inv_freq, float angleScale,
            float attention_scaling, uint4 &r1, uint4 &r2) {
  constexpr int kHalf = HD / 2;
  bf16 *p = row + head * HD + c * 8;
  float x1[8], x2[8], o1[8], o2[8];
  unpack8(load16(p), x1);
  unpack8(load16(p + kHalf), x2);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    float s, co;
    sincosf(angleScale * inv_freq[c * 8 + j], &s, &co);
    co = roundToBf16(co * attention_scaling);
    s = roundToBf16(s * attention_scaling);
    o1[j] = roundToBf16(x1[j] * co) + roundToBf16(-x2[j] * s);
    o2[j] = roundToBf16(x2[j] * co) + roundToBf16(x1[j] * s);
  }
  r1 = pack8(o1);
  r2 = pack8(o2);
  store16(p, r1);
  store16(p + kHalf, r2);
}

} // namespace rope_detail

template <int Hq, int Hkv, int HD, int BS>
__global__ void __launch_bounds__(kRopeThreads)
    rope_kv_write(bf16 *qkv, bf16 *k_cache, bf16 *v_cache,
                  const float *inv_freq, float attention_scaling,
                  const int *positions, const int *token_seq,
                  const int *block_tables, int max_blocks, int T) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(HD % 16 == 0, "rope_kv_write: head_dim must be 16k");
  static_assert(Hq % Hkv == 0, "rope_kv_write: Hq must be a multiple of Hkv");
  constexpr int kHalf = HD / 2;
  constexpr int kChunksPerHalf = kHalf / 8;
  constexpr int kRotateItems = (Hq + Hkv) * kChunksPerHalf;
  constexpr int kCopyItems = Hkv * (HD / 8);
  constexpr int kRowElems = (Hq + 2 * Hkv) * HD;

  const int t = blockIdx.x;
  if (t >= T)
    return;
  const int seq = token_seq[t];
  if (seq < 0)
    return;
  const int pos = positions[t];
  const long long block =
      block_tables[static_cast<long long>(seq) * max_blocks + pos / BS];
  const long long slotBase = (block * BS + pos % BS) * Hkv;
  bf16 *row = qkv + static_cast<long long>(t) * kRowElems;
  const float angleScale = static_cast<float>(pos);

  for (int item = threadIdx.x; item < kRotateItems + kCopyItems;
       item += blockDim.x) {
    if (item < kRotateItems) {
      const int head = item / kChunksPerHalf;
      const int c = item % kChunksPerHalf;
      uint4 r1, r2;
      rope_detail::rotateChunk<HD>(row, head, c, inv_freq, angleScale,
                                   attention_scaling, r1, r2);
      if (head >= Hq) {
        bf16 *k = k_cache + (slotBase + (head - Hq)) * HD + c * 8;
        store16(k, r1);
        store16(k + kHalf, r2);
      }
    } else {
      const int i = item - kRotateItems;
      const int head = i / (HD / 8);
      const int c = i % (HD / 8);
      store16(v_cache + (slotBase + head) * HD + c * 8,
              load16(row + (Hq + Hkv + head) * HD + c * 8));
    }
  }
}

// fp8 E4M3's largest finite value: a row's scale maps its amax onto it.
constexpr float kFp8E4M3Max = 448.0f;

template <int Hq, int Hkv, int HD, int BS>
__global__ void __launch_bounds__(kRopeThreads)
    rope_kv_write_fp8(bf16 *qkv, unsigned char *k_cache, unsigned char *v_cache,
                      float *k_scales, float *v_scales, const float *inv_freq,
                      float attention_scaling, const int *positions,
                      const int *token_seq, const int *block_tables,
                      int max_blocks, int T) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(HD % 16 == 0 && HD / 8 <= 32,
                "rope_kv_write_fp8: head_dim must be 16k, at most 256");
  static_assert(Hq % Hkv == 0,
                "rope_kv_write_fp8: Hq must be a multiple of Hkv");
  constexpr int kChunksPerHalf = HD / 16;
  constexpr int kRotateItems = (Hq + Hkv) * kChunksPerHalf;
  constexpr int kRowElems = (Hq + 2 * Hkv) * HD;
  constexpr int kLanesPerRow = HD / 8; // 8 bf16 in, 8 fp8 out per lane
  constexpr int kWarps = kRopeThreads / 32;

  const int t = blockIdx.x;
  if (t >= T)
    return;
  const int seq = token_seq[t];
  if (seq < 0)
    return;
  const int pos = positions[t];
  bf16 *row = qkv + static_cast<long long>(t) * kRowElems;
  for (int item = threadIdx.x; item < kRotateItems; item += blockDim.x) {
    uint4 r1, r2;
    rope_detail::rotateChunk<HD>(
        row, item / kChunksPerHalf, item % kChunksPerHalf, inv_freq,
        static_cast<float>(pos), attention_scaling, r1, r2);
  }
  __syncthreads(); // the rotated k rows are read back by other warps

  const long long block =
      block_tables[static_cast<long long>(seq) * max_blocks + pos / BS];
  const long long slotBase = (block * BS + pos % BS) * Hkv;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  // One warp per cache row: rows 0..Hkv-1 are k heads, then v heads.
  for (int r = warp; r < 2 * Hkv; r += kWarps) {
    const bool isV = r >= Hkv;
    const int head = isV ? r - Hkv : r;
    const bf16 *src = row + (Hq + r) * HD; // k heads then v heads
    float x[8];
    float amax = 0.0f;
    if (lane < kLanesPerRow) {
      unpack8(load16(src + lane * 8), x);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        amax = fmaxf(amax, fabsf(x[j]));
    }
    amax = groupMax<32>(amax);
    float scale = amax / kFp8E4M3Max;
    if (scale == 0.0f)
      scale = 1.0f;
    if (lane < kLanesPerRow) {
      unsigned packed[2];
#pragma unroll
      for (int w = 0; w < 2; ++w) {
        unsigned word = 0;
#pragma unroll
        for (int j = 0; j < 4; j += 2) {
          const __nv_fp8x2_storage_t pair = __nv_cvt_float2_to_fp8x2(
              make_float2(x[4 * w + j] / scale, x[4 * w + j + 1] / scale),
              __NV_SATFINITE, __NV_E4M3);
          word |= static_cast<unsigned>(pair) << (8 * j);
        }
        packed[w] = word;
      }
      unsigned char *dst =
          (isV ? v_cache : k_cache) + (slotBase + head) * HD + lane * 8;
      *reinterpret_cast<uint2 *>(dst) = make_uint2(packed[0], packed[1]);
    }
    if (lane == 0)
      (isV ? v_scales : k_scales)[slotBase + head] = scale;
  }
}

} // namespace kernels
} // namespace sol

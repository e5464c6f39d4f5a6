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
// Launch: T blocks of kRopeThreads threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

namespace sol {
namespace kernels {

constexpr int kRopeThreads = 128;

template <int Hq, int Hkv, int HD, int BS = kDefaultKvBlockSize>
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
      const uint4 r1 = pack8(o1);
      const uint4 r2 = pack8(o2);
      store16(p, r1);
      store16(p + kHalf, r2);
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

} // namespace kernels
} // namespace sol

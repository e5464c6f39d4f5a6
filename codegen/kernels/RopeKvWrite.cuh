//===- RopeKvWrite.cuh - Rotary embedding + paged KV-cache write ----------===//
//
// qkv is the fused projection [T, (Hq + 2 * Hkv) * HD]: q heads, k heads, then
// v heads. For each token t with pos = positions[t] this kernel
//  - rotates q and k in place with Hugging Face's rotate-half RoPE (the
//    arithmetic of Rope.cuh);
//  - writes the rotated k and the v of every kv head into the paged cache
//    ([num_blocks, BS, Hkv, HD]) at block block_tables[seq][pos / BS], slot
//    pos % BS, where seq = token_seq[t].
// Tokens with token_seq[t] < 0 are padding (e.g. unused slots of a captured
// batch) and are left untouched.
//
// rope_kv_write_fp8 does the same for an fp8 (E4M3) cache with dynamic
// per-row scales (Rope.cuh): once q and k are rotated, each kv head's rotated
// k row and its v row (head_dim bf16 values) get their scale, stored in
// kScales / vScales [num_blocks, BS, Hkv] at the row's (block, slot,
// head), and the row is stored as e4m3(x / scale).
//
// Each block computes its token's angles once (Rope.cuh's ropeTable) before
// waiting for the QKV projection, not 8 per rotated chunk: 32 distinct
// angles of a head dim of 64 cost 8 * 160 sincosf a token that way. The
// angles follow Rope.cuh: pass-through pairs (inverse frequency 0) and
// LongRoPE's second set of frequencies from args.ropeLongFrom on.
//
// Head dims: multiples of 16 up to 256 (64, 80, 96, 128, 256 among them);
// the fp8 variant gives each row a warp whose first HD / 8 lanes hold 8
// values each.
//
// Decode-only steps (one token per sequence) skip this kernel when the plan
// has paged_attention with the rope fused into its prologue.
//
// Launch: RopeKvWriteArgs (LaunchArgs.h), T blocks of kRopeThreads threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LaunchArgs.h"
#include "Rope.cuh"

namespace sol {
namespace kernels {

constexpr int kRopeThreads = 128;

template <int Hq, int Hkv, int HD, int BS>
__global__ void __launch_bounds__(kRopeThreads)
    rope_kv_write(const __grid_constant__ RopeKvWriteArgs args) {
  allowDependentLaunch();
  static_assert(HD % 16 == 0, "rope_kv_write: head_dim must be 16k");
  static_assert(Hq % Hkv == 0, "rope_kv_write: Hq must be a multiple of Hkv");
  bf16 *const qkv = args.qkv;
  bf16 *const k_cache = static_cast<bf16 *>(args.kCache);
  bf16 *const v_cache = static_cast<bf16 *>(args.vCache);
  const float *const inv_freq = args.invFreq;
  const float attention_scaling = args.attentionScaling;
  const int *const positions = args.positions;
  const int *const token_seq = args.tokenSeq;
  const int *const block_tables = args.blockTables;
  const int max_blocks = args.maxBlocks;
  const int T = args.tokens;
  constexpr int kHalf = HD / 2;
  constexpr int kChunksPerHalf = kHalf / 8;
  constexpr int kRotateItems = (Hq + Hkv) * kChunksPerHalf;
  constexpr int kCopyItems = Hkv * (HD / 8);
  constexpr int kRowElems = (Hq + 2 * Hkv) * HD;

  const int t = blockIdx.x;
  if (t >= T) {
    waitForPredecessor();
    return;
  }
  const int seq = token_seq[t];
  if (seq < 0) {
    waitForPredecessor();
    return;
  }
  const int pos = positions[t];
  const long long block =
      block_tables[static_cast<long long>(seq) * max_blocks + pos / BS];
  const long long slotBase = (block * BS + pos % BS) * Hkv;
  bf16 *row = qkv + static_cast<long long>(t) * kRowElems;
  // The token's angles once (every head shares them), while the QKV
  // projection finishes: positions and inv_freq are step inputs and plan
  // constants.
  __shared__ float cosT[kHalf], sinT[kHalf];
  rope_detail::ropeTable<HD>(cosT, sinT, inv_freq, pos, attention_scaling,
                             args.ropeLongFrom);
  __syncthreads();
  waitForPredecessor();

  for (int item = threadIdx.x; item < kRotateItems + kCopyItems;
       item += blockDim.x) {
    if (item < kRotateItems) {
      const int head = item / kChunksPerHalf;
      const int c = item % kChunksPerHalf;
      uint4 r1, r2;
      rope_detail::rotateChunkWith<HD>(row, head, c, cosT, sinT, r1, r2);
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

template <int Hq, int Hkv, int HD, int BS>
__global__ void __launch_bounds__(kRopeThreads)
    rope_kv_write_fp8(const __grid_constant__ RopeKvWriteArgs args) {
  allowDependentLaunch();
  static_assert(HD % 16 == 0 && HD / 8 <= 32,
                "rope_kv_write_fp8: head_dim must be 16k, at most 256");
  static_assert(Hq % Hkv == 0,
                "rope_kv_write_fp8: Hq must be a multiple of Hkv");
  bf16 *const qkv = args.qkv;
  unsigned char *const k_cache = static_cast<unsigned char *>(args.kCache);
  unsigned char *const v_cache = static_cast<unsigned char *>(args.vCache);
  float *const k_scales = args.kScales;
  float *const v_scales = args.vScales;
  const float *const inv_freq = args.invFreq;
  const float attention_scaling = args.attentionScaling;
  const int *const positions = args.positions;
  const int *const token_seq = args.tokenSeq;
  const int *const block_tables = args.blockTables;
  const int max_blocks = args.maxBlocks;
  const int T = args.tokens;
  constexpr int kChunksPerHalf = HD / 16;
  constexpr int kRotateItems = (Hq + Hkv) * kChunksPerHalf;
  constexpr int kRowElems = (Hq + 2 * Hkv) * HD;
  constexpr int kLanesPerRow = HD / 8; // 8 bf16 in, 8 fp8 out per lane
  constexpr int kWarps = kRopeThreads / 32;

  const int t = blockIdx.x;
  if (t >= T) {
    waitForPredecessor();
    return;
  }
  const int seq = token_seq[t];
  if (seq < 0) {
    waitForPredecessor();
    return;
  }
  const int pos = positions[t];
  bf16 *row = qkv + static_cast<long long>(t) * kRowElems;
  // The token's angles once, before waiting (as in rope_kv_write).
  __shared__ float cosT[HD / 2], sinT[HD / 2];
  rope_detail::ropeTable<HD>(cosT, sinT, inv_freq, pos, attention_scaling,
                             args.ropeLongFrom);
  __syncthreads();
  waitForPredecessor();
  for (int item = threadIdx.x; item < kRotateItems; item += blockDim.x) {
    uint4 r1, r2;
    rope_detail::rotateChunkWith<HD>(row, item / kChunksPerHalf,
                                     item % kChunksPerHalf, cosT, sinT, r1, r2);
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
    const float scale = rope_detail::fp8RowScale(amax);
    if (lane < kLanesPerRow)
      rope_detail::storeFp8<8>((isV ? v_cache : k_cache) +
                                   (slotBase + head) * HD + lane * 8,
                               x, scale);
    if (lane == 0)
      (isV ? v_scales : k_scales)[slotBase + head] = scale;
  }
}

} // namespace kernels
} // namespace sol

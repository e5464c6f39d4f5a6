//===- Rope.cuh - Rotary embedding and fp8 KV rows, shared by kernels -----===//
//
// The arithmetic of writing one token's K/V into the cache, in one place so
// that rope_kv_write (RopeKvWrite.cuh) and the decode attention with the
// rope fused into its prologue (PagedAttention.cuh) produce the same bits:
//  - Hugging Face's rotate-half RoPE on bf16 values: angles pos * inv_freq[i]
//    in fp32, cos/sin times attention_scaling rounded to bf16, then
//    x * cos + rotate_half(x) * sin with bf16 rounding after each op, as
//    PyTorch does on bf16 tensors. A pair whose inverse frequency is 0 passes
//    through (cos 1, sin 0, unscaled): partial rotary, whose unrotated dims
//    the importer moves after the rotated ones in each half. A table may
//    hold two sets of HD / 2 frequencies back to back (LongRoPE: short,
//    then long); positions >= longFrom take the long set;
//  - fp8 E4M3 rows with a dynamic scale, amax(|row|) / 448 (1 when amax is
//    0), each value stored as e4m3(x / scale), rounded to nearest even and
//    saturated to +-448 (NaN stays NaN). The reference executor
//    (runtime/reference/Fp8.h) applies the same rule.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

#include <cuda_fp8.h>

namespace sol {
namespace kernels {

// fp8 E4M3's largest finite value: a row's scale maps its amax onto it.
constexpr float kFp8E4M3Max = 448.0f;

namespace rope_detail {

// cos and sin of pos * inv_freq, times attention_scaling, rounded to bf16;
// exactly 1 and 0 for a pass-through pair (inv_freq 0), which Hugging Face
// concatenates unrotated and unscaled.
__device__ __forceinline__ void ropeAngle(float pos, float invFreq,
                                          float attentionScaling, float &co,
                                          float &s) {
  if (invFreq == 0.0f) {
    co = 1.0f;
    s = 0.0f;
    return;
  }
  sincosf(pos * invFreq, &s, &co);
  co = roundToBf16(co * attentionScaling);
  s = roundToBf16(s * attentionScaling);
}

// Rotates 8 pairs in place with their angles' cos and sin (ropeAngle's):
// a holds dims c * 8 .. c * 8 + 7 of a head (first half), b the dims HD / 2
// later (second half).
__device__ __forceinline__ void
rotatePairsWith(uint4 &a, uint4 &b, const float *co, const float *s) {
  float x1[8], x2[8], o1[8], o2[8];
  unpack8(a, x1);
  unpack8(b, x2);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    o1[j] = roundToBf16(x1[j] * co[j]) + roundToBf16(-x2[j] * s[j]);
    o2[j] = roundToBf16(x2[j] * co[j]) + roundToBf16(x1[j] * s[j]);
  }
  a = pack8(o1);
  b = pack8(o2);
}

// Rotates chunk c (8 pairs) of head `head` of `row` in place with the
// token's rope table (ropeTable); r1, r2 get the rotated first- and
// second-half values.
template <int HD>
__device__ __forceinline__ void
rotateChunkWith(bf16 *row, int head, int c, const float *cosT,
                const float *sinT, uint4 &r1, uint4 &r2) {
  constexpr int kHalf = HD / 2;
  bf16 *p = row + head * HD + c * 8;
  r1 = load16(p);
  r2 = load16(p + kHalf);
  rotatePairsWith(r1, r2, cosT + c * 8, sinT + c * 8);
  store16(p, r1);
  store16(p + kHalf, r2);
}

// The value of ropeLongFrom (LaunchArgs.h) of a table without a long set.
constexpr int kNoLongRope = 0x7fffffff;

// A token's rope table: cosT[i], sinT[i] = ropeAngle(pos, f[i]) for
// i < HD / 2, f = inv_freq, or its long set (the HD / 2 floats after it)
// from position longFrom on; filled by the block's first HD / 2 threads
// (the caller synchronises before reading it). Every head of the token
// shares it.
template <int HD>
__device__ __forceinline__ void
ropeTable(float *cosT, float *sinT, const float *inv_freq, int pos,
          float attention_scaling, int longFrom) {
  static_assert(HD / 2 <= 128, "ropeTable: one thread per frequency");
  if (threadIdx.x < HD / 2) {
    // Neither load's address waits for pos (itself a load): picking the
    // set by address put the two loads in series, 0.25 us of a batch-1
    // decode attention.
    const float shortF = inv_freq[threadIdx.x];
    const float longF =
        longFrom != kNoLongRope ? inv_freq[HD / 2 + threadIdx.x] : shortF;
    ropeAngle(static_cast<float>(pos), pos >= longFrom ? longF : shortF,
              attention_scaling, cosT[threadIdx.x], sinT[threadIdx.x]);
  }
}

// Rotates one head spread over HD / E lanes of aligned lane groups: the lane
// with `sub` = its index in the group holds dims [sub * E, sub * E + E) in
// x (bf16-exact values) and gets them rotated and rounded to bf16, the same
// bits as rotateChunkWith, with the angles of ropeTable. The partner dims
// +-HD/2 sit HD / (2E) lanes away. When HD / E is not a power of two
// (head dims 80, 96) the groups are padded to the next one and the lanes
// past HD / E get zeros (an fp8 row's amax and the padded dot products
// count them). Every lane of the warp must call it.
template <int HD, int E>
__device__ __forceinline__ void
rotateLane(float (&x)[E], int sub, const float *cosT, const float *sinT) {
  constexpr int kLanes = HD / E;
  static_assert(HD % (2 * E) == 0 && kLanes <= 32,
                "rotateLane: each half of a head must span whole lanes");
  const bool secondHalf = sub >= kLanes / 2;
  float partner[E];
  if constexpr (isPowerOfTwo(kLanes)) {
#pragma unroll
    for (int j = 0; j < E; ++j)
      partner[j] = __shfl_xor_sync(0xffffffffu, x[j], kLanes / 2);
  } else {
    const int lane = threadIdx.x % 32;
    const int from = secondHalf ? lane - kLanes / 2 : lane + kLanes / 2;
#pragma unroll
    for (int j = 0; j < E; ++j)
      partner[j] = __shfl_sync(0xffffffffu, x[j], from);
    if (sub >= kLanes) { // a padding lane: its partner is a real lane
#pragma unroll
      for (int j = 0; j < E; ++j)
        partner[j] = 0.0f;
    }
  }
#pragma unroll
  for (int j = 0; j < E; ++j) {
    const int i = (sub * E + j) % (HD / 2);
    const float co = cosT[i], s = sinT[i];
    // First half: x1 * cos - x2 * sin; second half: x2 * cos + x1 * sin.
    const float o = secondHalf
                        ? roundToBf16(x[j] * co) + roundToBf16(partner[j] * s)
                        : roundToBf16(x[j] * co) + roundToBf16(-partner[j] * s);
    x[j] = roundToBf16(o);
  }
}

// The scale of an fp8 row whose largest magnitude is amax.
__device__ __forceinline__ float fp8RowScale(float amax) {
  const float scale = amax / kFp8E4M3Max;
  return scale == 0.0f ? 1.0f : scale;
}

// Four values / scale as E4M3 in one word, the first in the low byte.
__device__ __forceinline__ unsigned fp8Word(const float *x, float scale) {
  unsigned word = 0;
#pragma unroll
  for (int j = 0; j < 4; j += 2) {
    const __nv_fp8x2_storage_t pair = __nv_cvt_float2_to_fp8x2(
        make_float2(x[j] / scale, x[j + 1] / scale), __NV_SATFINITE, __NV_E4M3);
    word |= static_cast<unsigned>(pair) << (8 * j);
  }
  return word;
}

// Stores E (8 or 16) values / scale as E4M3 bytes at dst.
template <int E>
__device__ __forceinline__ void storeFp8(unsigned char *dst, const float *x,
                                         float scale) {
  static_assert(E == 8 || E == 16, "storeFp8: 8 or 16 values");
  if constexpr (E == 8) {
    *reinterpret_cast<uint2 *>(dst) =
        make_uint2(fp8Word(x, scale), fp8Word(x + 4, scale));
  } else {
    store16(dst, make_uint4(fp8Word(x, scale), fp8Word(x + 4, scale),
                            fp8Word(x + 8, scale), fp8Word(x + 12, scale)));
  }
}

} // namespace rope_detail
} // namespace kernels
} // namespace sol

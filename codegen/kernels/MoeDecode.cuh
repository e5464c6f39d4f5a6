//===- MoeDecode.cuh - A mixture of experts over the routed experts only --===//
//
// sol.moe for steps of few rows (decode): routing happens on the device and
// only the experts some row chose are read, each once per step for all the
// rows routed to it. A row r's K choices are its slots r * K + k. Four
// kernels after the router's linear (logits [rows, E], bf16 as Transformers
// rounds them):
//
//  moe_route<E, K>      one warp per row: p = softmax(logits) in float32, the
//                       K experts of highest p (the lower index first on
//                       ties), their p divided by the K's sum when
//                       args.normalize: ids[slot], weights[slot].
//  moe_gate_up<E, H, I> block b: rows [tile * 16, +16) of the gate and up
//                       of expert e = b / tiles (or, in a step of fewer
//                       slots than experts, of slot b / tiles' expert, so
//                       that unchosen experts cost no block): the slots routed
//                       to e (in slot order), then per row j and slot the dot
//                       products with x[slot's row] (g, u: bf16, plus the bias,
//                       rounded, when there is one); act[slot][j] =
//                       bf16(bf16(act(g)) * u), Transformers' rounding
//                       points; gpt-oss's clamped SwiGLU rounds each of its
//                       steps as Transformers' bf16 ops do (moeClampedSwiglu).
//  moe_down<E, H, I>    the same over down's H rows of e: out[slot][j] =
//                       bf16(down_e[j] . act[slot]) (+ its bias, rounded).
//
// Format (Plan.fbs's ExpertFormat) says how the experts are stored:
//  kMoeBf16   bf16 rows;
//  kMoeMxfp4  gpt-oss's MXFP4: two E2M1 codes a byte, the low nibble first,
//             and one E8M0 exponent a group of 32 values of a row; a lane
//             decodes a group (16 bytes) at a time, values exact in float,
//             so the products are those of the bf16 weights Transformers
//             dequantizes them to;
//  kMoeInt8, kMoeFp8  sol-quantize's codes with an f32 scale a row: a lane
//             multiplies 16 codes (exact in float) at a time and the row's
//             sum is scaled once;
//  kMoeInt4   two codes a byte (the low nibble first) with an f32 scale and
//             a u8 zero point a group of groupSize inputs (a multiple of
//             32): a lane takes 32 codes of one group at a time.
//  moe_combine<H, K>    y[r] = the row's K outputs weighted, added in
//                       increasing expert order, each product and sum
//                       rounded to bf16 (Transformers' index_add_ over the
//                       experts, weights cast to bf16).
//
// Blocks of experts no row chose return after the slot scan. Slots of one
// expert are taken kMoeSlots at a time (the weights re-read per group).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"
#include "LinearGemvQuant.cuh"

namespace sol {
namespace kernels {

// How the experts are stored: Plan.fbs's ExpertFormat.
constexpr int kMoeBf16 = 0, kMoeMxfp4 = 1, kMoeInt8 = 2, kMoeFp8 = 3,
              kMoeInt4 = 4;
// quant_gemv's decoders for the int8, fp8 and int4 formats.
template <int Format>
constexpr WeightFormat kMoeCodes = Format == kMoeInt8  ? WeightFormat::Int8
                                   : Format == kMoeFp8 ? WeightFormat::Fp8
                                                       : WeightFormat::Int4;
// quant_gemv::dequantFp8 decodes E4M3 codes to 2^-120 times their value.
constexpr float kMoeFp8Decoded = 1.329227995784916e36f; // 2^120

constexpr int kMoeThreads = 128;      // 4 warps
constexpr int kMoeRowsPerBlock = 16;  // 4 weight rows per warp
constexpr int kMoeSlots = 8;          // slots one pass multiplies
constexpr int kMoeRouteThreads = 128; // 4 rows (warps) per block

// The slots [from, from + count) of `ids` that chose `expert`, in slot
// order, into list[0..); returns how many (at most kMoeSlots: the caller
// loops from the slot after the last one taken). Every thread of the block
// takes part; list and the warp counts live in shared memory.
__device__ __forceinline__ int moeSlotsOf(const int *ids, int count, int expert,
                                          int &from, int *list,
                                          int *warpCounts) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int found = 0;
  while (from < count && found < kMoeSlots) {
    const int slot = from + threadIdx.x;
    const bool mine = slot < count && ids[slot] == expert;
    const unsigned ballot = __ballot_sync(0xffffffffu, mine);
    if (lane == 0)
      warpCounts[warp] = __popc(ballot);
    __syncthreads();
    int before = found;
    for (int w = 0; w < warp; ++w)
      before += warpCounts[w];
    int total = found;
    for (int w = 0; w < kMoeThreads / 32; ++w)
      total += warpCounts[w];
    const int at = before + __popc(ballot & ((1u << lane) - 1u));
    if (mine && at < kMoeSlots)
      list[at] = slot;
    __syncthreads();
    if (total > kMoeSlots) {
      // Stop after the kMoeSlots-th slot: the next pass starts right
      // after it.
      from = list[kMoeSlots - 1] + 1;
      return kMoeSlots;
    }
    found = total;
    from += kMoeThreads;
  }
  return found;
}

// A router logit and its expert as one key that orders the experts as
// moe_route chooses them: the higher logit first, the lower expert on ties
// (-0 counts as +0). Ordering by the bf16 logits is ordering by their
// softmax, which is monotonic.
__device__ __forceinline__ unsigned moeRouteKey(unsigned bits, int expert) {
  if (bits == 0x8000u)
    bits = 0;
  const unsigned ordered =
      (bits & 0x8000u) ? (~bits & 0xffffu) : (bits | 0x8000u);
  return ordered << 16 | (0xffffu - static_cast<unsigned>(expert));
}
// The logit of a key, as a float.
__device__ __forceinline__ float moeKeyLogit(unsigned key) {
  const unsigned ordered = key >> 16;
  const unsigned bits =
      (ordered & 0x8000u) ? (ordered & 0x7fffu) : (~ordered & 0xffffu);
  return __uint_as_float(bits << 16);
}

// The routing of one row of E bf16 logits, by a whole warp (every lane
// ends with the same result): p = softmax(logits) in float32, the K experts
// of highest p (the lower index first on ties) into ids, and, when
// `weighted`, their p (divided by the K's sum when `normalize`) into
// weights; in that order, or in increasing expert order with ByExpert.
template <int E, int K, bool ByExpert = false>
__device__ __forceinline__ void moeTopK(const bf16 *logits, bool weighted,
                                        bool normalize, int (&ids)[K],
                                        float (&weights)[K]) {
  static_assert(K >= 1 && K <= E && K <= 32 && E <= 65535,
                "moeTopK: 1 <= K <= min(E, 32), E < 65536");
  constexpr int kPerLane = (E + 31) / 32;
  const int lane = threadIdx.x % 32;
  // The logits come from the previous kernel: loads that stay after the
  // wait for it.
  unsigned key[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    key[i] = e < E ? moeRouteKey(loadActivation2(logits + e), e) : 0u;
  }
#pragma unroll
  for (int k = 0; k < K; ++k)
    weights[k] = 0.0f;
  float chosen[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    unsigned best = 0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      best = max(best, key[i]);
    best = warpMaxU32(best);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (key[i] == best)
        key[i] = 0; // taken
    ids[k] = static_cast<int>(0xffffu - (best & 0xffffu));
    chosen[k] = moeKeyLogit(best);
  }
  if (weighted) {
    // The first choice holds the largest logit.
    const float max = chosen[0];
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + 32 * i;
      if (e < E)
        sum += __expf(__uint_as_float(loadActivation2(logits + e) << 16) - max);
    }
    sum = groupSum<32>(sum);
    float chosenSum = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      weights[k] = __expf(chosen[k] - max) / sum;
      chosenSum += weights[k];
    }
    if (normalize)
#pragma unroll
      for (int k = 0; k < K; ++k)
        weights[k] /= chosenSum;
  }
  if constexpr (ByExpert) {
    // K is small: compare-exchange passes on registers.
#pragma unroll
    for (int a = 0; a < K; ++a)
#pragma unroll
      for (int b = 0; b + 1 < K - a; ++b)
        if (ids[b] > ids[b + 1]) {
          const int id = ids[b];
          const float w = weights[b];
          ids[b] = ids[b + 1];
          weights[b] = weights[b + 1];
          ids[b + 1] = id;
          weights[b + 1] = w;
        }
  }
}

template <int E, int K>
__global__ void __launch_bounds__(kMoeRouteThreads)
    moe_route(const __grid_constant__ MoeRouteArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  const int row = blockIdx.x * (kMoeRouteThreads / 32) + threadIdx.x / 32;
  if (row >= args.rows)
    return;
  int ids[K];
  float weights[K];
  moeTopK<E, K>(args.logits + static_cast<long long>(row) * E, true,
                args.normalize != 0, ids, weights);
  if (threadIdx.x % 32 == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      args.ids[row * K + k] = ids[k];
      args.weights[row * K + k] = weights[k];
    }
  }
}

// gpt-oss's clamped SwiGLU of the bf16 values g, u with Transformers' bf16
// rounding of each op: g = min(g, L), u = clamp(u, -L, L), glu = g *
// sigmoid(g * 1.702), (u + 1) * glu.
__device__ __forceinline__ float moeClampedSwiglu(float g, float u,
                                                  float limit) {
  g = fminf(g, limit);
  u = fminf(fmaxf(u, -limit), limit);
  const float sig =
      roundToBf16(1.0f / (1.0f + __expf(-roundToBf16(g * 1.702f))));
  const float glu = roundToBf16(g * sig);
  return roundToBf16(roundToBf16(u + 1.0f) * glu);
}

// act[slot][j] from the float sums g, u of gate and up row j: each rounded
// to bf16, plus its bias (rounded) when the experts have biases, then the
// gate's activation (Plan.fbs's GateActivation: silu 0, tanh GELU 1, the
// clamped SwiGLU 2 with `limit`) times u, where Transformers rounds.
__device__ __forceinline__ float
moeGatedValue(float g, float u, const bf16 *gateBias, const bf16 *upBias,
              long long biasIndex, int activation, float limit) {
  float gs = roundToBf16(g), us = roundToBf16(u);
  if (gateBias) {
    gs = roundToBf16(gs + __bfloat162float(gateBias[biasIndex]));
    us = roundToBf16(us + __bfloat162float(upBias[biasIndex]));
  }
  if (activation == 2)
    return moeClampedSwiglu(gs, us, limit);
  return roundToBf16(activation == 1 ? geluTanh(gs) : silu(gs)) * us;
}

// out[slot][j] from down row j's float sum y: bf16(y), or bf16(bf16(y) +
// bias) when the experts have biases.
__device__ __forceinline__ float moeDownValue(float y, const bf16 *bias,
                                              long long biasIndex) {
  return bias ? roundToBf16(y) + __bfloat162float(bias[biasIndex]) : y;
}

// An FP4 (E2M1) code's value: 0, 0.5, 1, 1.5, 2, 3, 4, 6, negated by
// bit 3. Bits 2..0 (e1 e0 m) placed as a float's lowest exponent bits and
// first mantissa bit make the value times 2^-126 (code 1 a subnormal), so
// one exact multiply by 2^126 gives it: no int-to-float conversion, which
// runs at a quarter of the FMA rate and bounded the MXFP4 GEMVs.
__device__ __forceinline__ float fp4Value(unsigned code) {
  const float magnitude = __uint_as_float((code & 7u) << 22) * 0x1p126f;
  return __uint_as_float(__float_as_uint(magnitude) | (code & 8u) << 28);
}

// An E8M0 exponent's scale, 2^(s - 127) (s = 255, NaN in the format, gives
// infinity, as Transformers' ldexp does).
__device__ __forceinline__ float e8m0Scale(unsigned s) {
  return s ? __int_as_float(static_cast<int>(s << 23))
           : 5.877471754111438e-39f; // 2^-127
}

// Row `row` of an expert matrix of N inputs stored as Format: the row's
// codes (or bf16 values) and, for the quantized formats, its scales (and
// int4's zero points).
template <int N, int Format> struct MoeRow {
  const void *w;
  const void *scales;
  const unsigned char *zeros;
  int groupSize;
};
template <int N, int Format>
__device__ __forceinline__ MoeRow<N, Format>
moeRow(const void *w, const void *scales, const unsigned char *zeros,
       int groupSize, long long row) {
  const unsigned char *codes = static_cast<const unsigned char *>(w);
  if constexpr (Format == kMoeBf16)
    return {static_cast<const bf16 *>(w) + row * N, nullptr, nullptr, 0};
  else if constexpr (Format == kMoeMxfp4)
    return {codes + row * (N / 2),
            static_cast<const unsigned char *>(scales) + row * (N / 32),
            nullptr, 0};
  else if constexpr (Format == kMoeInt4)
    return {codes + row * (N / 2),
            static_cast<const float *>(scales) + row * (N / groupSize),
            zeros + row * (N / groupSize), groupSize};
  else
    return {codes + row * N, static_cast<const float *>(scales) + row, nullptr,
            0};
}

// The values one 16-byte vector of an expert row holds (LaunchArgs.h).
template <int Format> constexpr int kMoeVectorValues = moeVectorValues(Format);

// Vector c of an expert row as loaded: the 16 bytes and, for MXFP4 and
// int4, its group's scale (int4: and zero point).
struct MoeVector {
  uint4 bytes;
  float scale;
  unsigned negativeZero;
};
template <int N, int Format>
__device__ __forceinline__ MoeVector moeLoadVector(const MoeRow<N, Format> &row,
                                                   int c) {
  MoeVector v{
      loadStreaming16(static_cast<const unsigned char *>(row.w) + c * 16), 1.0f,
      0u};
  if constexpr (Format == kMoeMxfp4) {
    v.scale = e8m0Scale(static_cast<const unsigned char *>(row.scales)[c]);
  } else if constexpr (Format == kMoeInt4) {
    const int g = c * 32 / row.groupSize;
    v.negativeZero = quant_gemv::int4NegativeZero(row.zeros[g]);
    v.scale = static_cast<const float *>(row.scales)[g];
  }
  return v;
}

// acc plus vector v's products with the x values it multiplies (x points
// at the first), in the row's units (int8's and fp8's row scale comes after
// the sum: moeRowScale). x is read 8 values at a time, as used.
template <int Format>
__device__ __forceinline__ float moeVectorDot(const MoeVector &v, const bf16 *x,
                                              float acc) {
  if constexpr (Format == kMoeBf16) {
    float wv[8], xv[8];
    unpack8(v.bytes, wv);
    unpack8(load16(x), xv);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      acc += wv[j] * xv[j];
    return acc;
  } else if constexpr (Format == kMoeMxfp4) {
    // The scale is a power of two: scaling the sum is scaling each value.
    const unsigned words[4] = {v.bytes.x, v.bytes.y, v.bytes.z, v.bytes.w};
    float sum = 0.0f;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      float xv[8];
      unpack8(load16(x + q * 8), xv);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        sum += fp4Value(words[q] >> (4 * j)) * xv[j];
    }
    return acc + sum * v.scale;
  } else {
    constexpr WeightFormat F = kMoeCodes<Format>;
    float sum = 0.0f;
#pragma unroll
    for (int q = 0; q < kMoeVectorValues<Format> / 8; ++q) {
      float wv[8], xv[8];
      quant_gemv::dequant<F>(v.bytes, q, v.negativeZero, wv);
      unpack8(load16(x + q * 8), xv);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        sum += wv[j] * xv[j];
    }
    return acc + (Format == kMoeInt4 ? sum * v.scale : sum);
  }
}

// The factor a row's summed products take: int8's row scale, fp8's with
// the decoder's 2^120; 1 for the other formats.
template <int N, int Format>
__device__ __forceinline__ float moeRowScale(const MoeRow<N, Format> &row) {
  if constexpr (Format == kMoeInt8)
    return *static_cast<const float *>(row.scales);
  else if constexpr (Format == kMoeFp8)
    return *static_cast<const float *>(row.scales) * kMoeFp8Decoded;
  else
    return 1.0f;
}

// The dot products of an expert weight row of N inputs (`row`, from
// moeRow) with the vectors of `count` slots (x + slot's row offset), summed
// over the warp into acc[0..count).
template <int N, int Format>
__device__ __forceinline__ void moeDots(const MoeRow<N, Format> &row,
                                        const bf16 *const *x, int count,
                                        float (&acc)[kMoeSlots]) {
  constexpr int kValues = kMoeVectorValues<Format>;
  static_assert(N % kValues == 0,
                "moeDots: rows are whole vectors (8 bf16, 16 int8 or fp8 "
                "codes, 32 MXFP4 or int4 codes)");
  constexpr int kVecs = N / kValues, kPerLane = (kVecs + 31) / 32;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int s = 0; s < kMoeSlots; ++s)
    acc[s] = 0.0f;
    // Counted and unrolled, so that a lane's weight loads are in flight
    // together: decode reads each weight once, at the bandwidth only many
    // outstanding loads reach. Vectors of 16 or 32 codes take as many
    // registers again to decode: 4 at a time.
#pragma unroll(Format == kMoeBf16 ? 8 : 4)
  for (int i = 0; i < kPerLane; ++i) {
    const int c = lane + 32 * i;
    if (kVecs % 32 != 0 && c >= kVecs)
      break;
    const MoeVector v = moeLoadVector(row, c);
    if constexpr (Format == kMoeMxfp4) {
      // Decoded once for all the slots (the FP4 decode is the costly part).
      const unsigned words[4] = {v.bytes.x, v.bytes.y, v.bytes.z, v.bytes.w};
      float wv[32];
#pragma unroll
      for (int i = 0; i < 32; ++i)
        wv[i] = fp4Value(words[i / 8] >> (4 * (i % 8))) * v.scale;
#pragma unroll
      for (int s = 0; s < kMoeSlots; ++s) {
        if (s >= count)
          break;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          float xv[8];
          unpack8(load16(x[s] + c * 32 + q * 8), xv);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            acc[s] += wv[q * 8 + j] * xv[j];
        }
      }
    } else {
#pragma unroll
      for (int s = 0; s < kMoeSlots; ++s) {
        if (s >= count)
          break;
        acc[s] = moeVectorDot<Format>(v, x[s] + c * kValues, acc[s]);
      }
    }
  }
  // Only the slots in use (count is the same for the whole block): a decode
  // step at batch 1 has one.
  const float scale = moeRowScale(row);
#pragma unroll
  for (int s = 0; s < kMoeSlots; ++s) {
    if (s >= count)
      break;
    acc[s] = warpSum(acc[s]) * scale;
  }
}

// The passes of an expert's block over the slots routed to it, kMoeSlots
// at a time: pass(list, count) with the pass's slots in list[0..count).
// Every thread of the block takes part.
template <typename Pass>
__device__ __forceinline__ void moeSlotPasses(const int *ids, int slots,
                                              int expert, Pass &&pass) {
  __shared__ int list[kMoeSlots];
  __shared__ int warpCounts[kMoeThreads / 32];
  int from = 0;
  while (true) {
    const int count = moeSlotsOf(ids, slots, expert, from, list, warpCounts);
    if (count == 0)
      return;
    pass(static_cast<const int *>(list), count);
    __syncthreads(); // list is rewritten by the next pass
    if (count < kMoeSlots)
      return;
  }
}

// The expert block b works on, or -1 when it has none: with E * kTiles
// blocks, expert b / kTiles; with fewer (a step of fewer slots than
// experts: one unit per slot, so that experts no row chose cost no block),
// the expert of slot b / kTiles, unless an earlier slot chose it too (that
// slot's block takes all of the expert's slots).
template <int E, int kTiles>
__device__ __forceinline__ int moeBlockExpert(const int *ids) {
  const int unit = static_cast<int>(blockIdx.x) / kTiles;
  if (static_cast<int>(gridDim.x) == E * kTiles)
    return unit;
  const int expert = ids[unit];
  for (int s = 0; s < unit; ++s)
    if (ids[s] == expert)
      return -1;
  return expert;
}

template <int E, int H, int I, int Format = kMoeBf16>
__global__ void __launch_bounds__(kMoeThreads)
    moe_gate_up(const __grid_constant__ MoeGateUpArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(H % 8 == 0 && I % 8 == 0, "moe_gate_up: H, I multiples of 8");
  constexpr int kTiles = (I + kMoeRowsPerBlock - 1) / kMoeRowsPerBlock;
  const int expert = moeBlockExpert<E, kTiles>(args.ids);
  if (expert < 0)
    return;
  const int tile = blockIdx.x % kTiles;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slots = args.rows * args.topK;
  moeSlotPasses(args.ids, slots, expert, [&](const int *list, int count) {
    const bf16 *x[kMoeSlots];
#pragma unroll
    for (int s = 0; s < kMoeSlots; ++s)
      x[s] = args.x +
             static_cast<long long>(list[s < count ? s : 0] / args.topK) * H;
    for (int r = warp; r < kMoeRowsPerBlock; r += kMoeThreads / 32) {
      const int j = tile * kMoeRowsPerBlock + r;
      if (j >= I)
        break;
      float g[kMoeSlots], u[kMoeSlots];
      const long long row = static_cast<long long>(expert) * I + j;
      moeDots(moeRow<H, Format>(args.gate, args.gateScales, args.gateZeros,
                                args.groupSize, row),
              x, count, g);
      moeDots(moeRow<H, Format>(args.up, args.upScales, args.upZeros,
                                args.groupSize, row),
              x, count, u);
      if (lane == 0) {
#pragma unroll
        for (int s = 0; s < kMoeSlots; ++s) {
          if (s >= count)
            break;
          args.act[static_cast<long long>(list[s]) * I + j] =
              __float2bfloat16_rn(moeGatedValue(g[s], u[s], args.gateBias,
                                                args.upBias, row,
                                                args.activation, args.limit));
        }
      }
    }
  });
}

template <int E, int H, int I, int Format = kMoeBf16>
__global__ void __launch_bounds__(kMoeThreads)
    moe_down(const __grid_constant__ MoeDownArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(H % 8 == 0 && I % 8 == 0, "moe_down: H, I multiples of 8");
  constexpr int kTiles = (H + kMoeRowsPerBlock - 1) / kMoeRowsPerBlock;
  const int expert = moeBlockExpert<E, kTiles>(args.ids);
  if (expert < 0)
    return;
  const int tile = blockIdx.x % kTiles;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slots = args.rows * args.topK;
  moeSlotPasses(args.ids, slots, expert, [&](const int *list, int count) {
    const bf16 *act[kMoeSlots];
#pragma unroll
    for (int s = 0; s < kMoeSlots; ++s)
      act[s] = args.act + static_cast<long long>(list[s < count ? s : 0]) * I;
    for (int r = warp; r < kMoeRowsPerBlock; r += kMoeThreads / 32) {
      const int j = tile * kMoeRowsPerBlock + r;
      if (j >= H)
        break;
      float y[kMoeSlots];
      moeDots(moeRow<I, Format>(args.down, args.scales, args.zeros,
                                args.groupSize,
                                static_cast<long long>(expert) * H + j),
              act, count, y);
      if (lane == 0) {
#pragma unroll
        for (int s = 0; s < kMoeSlots; ++s) {
          if (s >= count)
            break;
          args.out[static_cast<long long>(list[s]) * H + j] =
              __float2bfloat16_rn(moeDownValue(
                  y[s], args.bias, static_cast<long long>(expert) * H + j));
        }
      }
    }
  });
}

template <int H, int K>
__global__ void __launch_bounds__(kMoeThreads)
    moe_combine(const __grid_constant__ MoeCombineArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(H % 8 == 0, "moe_combine: H a multiple of 8");
  constexpr int kVecs = H / 8;
  const long long total = static_cast<long long>(args.rows) * kVecs;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int row = static_cast<int>(i / kVecs);
    const int c = static_cast<int>(i % kVecs);
    // The row's slots in increasing expert order (K is small).
    int order[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
      order[k] = k;
#pragma unroll
    for (int a = 1; a < K; ++a)
      for (int b = a; b > 0 && args.ids[row * K + order[b - 1]] >
                                   args.ids[row * K + order[b]];
           --b) {
        const int t = order[b];
        order[b] = order[b - 1];
        order[b - 1] = t;
      }
    float y[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int slot = row * K + order[k];
      const float w = roundToBf16(args.weights[slot]);
      float o[8];
      unpack8(load16(args.out + static_cast<long long>(slot) * H + c * 8), o);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        y[j] = roundToBf16(y[j] + roundToBf16(o[j] * w));
    }
    store16(args.y + static_cast<long long>(row) * H + c * 8, pack8(y));
  }
}

} // namespace kernels
} // namespace sol

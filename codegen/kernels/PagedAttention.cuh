//===- PagedAttention.cuh - Causal GQA attention over a paged KV cache ----===//
//
// out [T, Hq * HD]; q comes from the fused qkv [T, (Hq + 2 * Hkv) * HD]; K and
// V come from the paged cache [num_blocks, BS, Hkv, HD] (rope_kv_write has
// already stored the current tokens there). Token t of sequence
// seq = token_seq[t] at position pos = positions[t] attends to the cache
// positions [lo, pos] of its sequence, lo = max(0, pos - sliding_window + 1)
// when sliding_window > 0 (Hugging Face's `kv_idx > q_idx - sliding_window`),
// else 0. Scores are q.k * scale; softmax and accumulation run in fp32 with an
// online (running max) softmax. One kernel serves prefill (many tokens of a
// sequence) and decode (one token per sequence).
//
// Each block handles one (token, kv head) pair, i.e. all Hq / Hkv query heads
// of the group, so each K/V row is loaded once per group. HD / 8 lanes share a
// cache position (16 bytes each); the block's 4 warps walk the positions with
// independent running softmax states that are merged at the end. A head dim
// whose HD / 8 is not a power of two (80, 96) takes the next power of two
// lanes a position (16); the lanes past HD / 8 load nothing and hold zeros,
// so they add nothing to the dot products and write nothing. Head dims 8 to
// 256 in steps of 8 run; 64, 128 and 256 have no idle lanes.
//
// With Softcap (Gemma 2), softcap > 0 replaces each score s = q.k * scale
// by softcap * tanh(s / softcap) before the mask and the softmax. It is a
// template flag, not only a runtime value: a uniform branch on it took the
// plain kernels from 128 to 156 registers (4 blocks an SM to 3).
//
// Flash-decoding: gridDim.y = splits > 1 cuts each token's context into
// `splits` equal ranges, one block each; the blocks write unnormalised partial
// results to `partials`: T * splits * Hq * (HD + 2) floats, the unnormalised
// outputs [T, splits, Hq, HD] then (max, sum) pairs [T, splits, Hq, 2]), and
// count themselves in `arrivals[t * Hkv + g]` (T * Hkv zeroed counters; with
// HeadSplit, T * Hkv * HeadSplit, one per block of heads); the
// last block of a (token, kv head) to arrive merges the splits into `out` and
// zeroes its counter again, so no combine launch is needed (the launch and
// drain of one cost about 5 us per layer of batch-1 decode on an H200).
// With splits == 1 the kernel writes `out` itself and `partials` and
// `arrivals` may be null. Launched in clusters of all the splits of a
// (token, kv head) (cluster dimension (1, splits, 1), splits <= 8), the
// blocks merge through distributed shared memory instead: each keeps its
// split's state in shared memory, and after a cluster barrier each writes
// 1/splits of the outputs from all of them (mergeCluster); `partials` and
// `arrivals` are then unused. That drops the partials' round trip through
// L2, the fence and the atomic from the end of every decode attention.
// Padding tokens (token_seq[t] < 0) get zeros.
//
// FusedRope: the step's own K/V are not in the cache yet, and q and k are
// not rotated: each block computes the token's rope angles once (Rope.cuh's
// ropeTable), rotates its group's q rows in registers, and the one block
// whose split range holds pos (not always the last: trailing splits of a
// short context are empty) rotates the token's k row and appends k and v to
// the cache (quantised to fp8 in paged_attention_fp8) before walking its
// range: the work of rope_kv_write (Rope.cuh's arithmetic, the same bits),
// without its launch. With PreloadWalk as well (small grids), the first
// step's cache rows of earlier positions are loaded before waiting for the
// QKV projection (no kernel of a decode step writes them), and the token's
// k and v are walked from registers: after the wait a block loads only q,
// k and v of its token before the scores. Only valid when every sequence
// has one token in the step (decode): a prompt chunk's tokens would read
// each other's K/V, which other blocks write.
//
// QkNorm (with FusedRope): q and k are not normalised either: the per-head
// RMSNorm of Qwen3 and Gemma 3 (q_norm, k_norm; the plan's HeadRmsNorm,
// which decode steps then skip) runs on the values each lane loads, before
// the rope, with rms_norm<HD>'s bits (normalizeHead). Its weights are
// constants, loaded before the wait.
//
// HeadSplit (with PreloadWalk): the Hq / Hkv query heads of a kv head are
// spread over HeadSplit blocks of Hq / Hkv / HeadSplit heads each, which
// walk the same positions: batch-1 decode of a large group (Qwen3-30B-A3B's
// and gpt-oss's 8) otherwise leaves most multiprocessors idle while each
// block's scores and softmax take 8 heads. Block x of the grid is token
// x / (Hkv * HeadSplit) and "virtual kv head" x % (Hkv * HeadSplit), whose
// q heads it handles and under which it merges; only the first block of a
// kv head appends the token's k and v, every block takes them from its
// registers (PreloadWalk), so none reads a row another writes.
//
// paged_attention_fp8 reads an fp8 (E4M3) cache with a float32 scale per
// (block, slot, kv head) for K and V ([num_blocks, BS, Hkv], written by
// rope_kv_write_fp8): K = e4m3 * k_scale, V = e4m3 * v_scale. The scales are
// applied once per position, to the score (q . k8 * k_scale) and to the
// softmax weight (p * v_scale), not per element. A lane loads 16 fp8 values
// (16 bytes, HD / 16 lanes per position) when the group's registers allow
// (Hq / Hkv <= 4) and HD is a power of two or a multiple of 32 (80 takes 8,
// so that each half of a head spans whole lanes for the fused rope), else
// 8 (8 bytes, the bf16
// kernel's HD / 8 lanes), so q and the accumulators never hold more than
// 128 floats per lane. Lane counts that are not a power of two are padded
// as in the bf16 kernel (80: 10 lanes of 16, 96: 6 of 8 or 12 of 16).
//
// Launch: PagedAttentionArgs (LaunchArgs.h), grid (T * Hkv * HeadSplit,
// splits), kPagedAttentionThreads threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LaunchArgs.h"
#include "Rope.cuh"

namespace sol {
namespace kernels {

constexpr int kPagedAttentionThreads = 128;
// The most splits a launch may have (PagedAttentionSpec::kMaxSplits): the
// in-kernel merge weighs up to this many per head in shared memory.
constexpr int kMaxAttentionSplits = 64;
// The most splits that merge through a thread-block cluster
// (PagedAttentionSpec::kMaxClusterSplits; 8 is the portable cluster size).
constexpr int kMaxClusterSplits = 8;

template <int Hq, int Hkv, int HD, int BS, int HeadSplit = 1>
struct PagedAttentionShape {
  static_assert(Hq % Hkv == 0, "paged_attention: Hq must be a multiple of Hkv");
  static_assert(HD % 8 == 0 && HD >= 8 && HD / 8 <= 32,
                "paged_attention: head_dim must be a multiple of 8, <= 256");
  static_assert((Hq / Hkv) % HeadSplit == 0,
                "paged_attention: HeadSplit must divide the group");
  // The q heads of a block.
  static constexpr int kGroup = Hq / Hkv / HeadSplit;
  // Lanes holding a position's values, and lanes per position (padded to a
  // power of two; the rest idle).
  static constexpr int kValueLanes = HD / 8;
  static constexpr int kLanesPerPos = nextPowerOfTwo(HD / 8);
  static constexpr int kPosPerWarp = 32 / kLanesPerPos;
  static constexpr int kWarps = kPagedAttentionThreads / 32;
  static constexpr int kPosPerStep = kWarps * kPosPerWarp;
  // More positions in flight per lane when the group's state leaves room;
  // by the whole group, so that a head split walks in the same steps and
  // gives the same bits.
  static constexpr int kUnroll = Hq / Hkv <= 4 ? 4 : 2;
  static constexpr int kRowElems = (Hq + 2 * Hkv) * HD;
};

// The fp8 kernel's lane layout: E fp8 values per lane (16 = one 16-byte
// load, or 8 = 8 bytes when the group is large; see the header comment).
template <int Hq, int Hkv, int HD, int BS, int HeadSplit = 1>
struct PagedAttentionFp8Shape {
  static_assert(Hq % Hkv == 0,
                "paged_attention_fp8: Hq must be a multiple of Hkv");
  static_assert((Hq / Hkv) % HeadSplit == 0,
                "paged_attention_fp8: HeadSplit must divide the group");
  static_assert(HD % 16 == 0 && HD >= 16 && HD <= 256,
                "paged_attention_fp8: head_dim must be a multiple of 16, "
                "<= 256");
  static constexpr int kGroup = Hq / Hkv / HeadSplit; // q heads of a block
  static constexpr int kElems =
      Hq / Hkv <= 4 && (isPowerOfTwo(HD) || HD % 32 == 0) ? 16 : 8;
  static constexpr int kValueLanes = HD / kElems;
  static constexpr int kLanesPerPos = nextPowerOfTwo(HD / kElems);
  static constexpr int kPosPerWarp = 32 / kLanesPerPos;
  static constexpr int kWarps = kPagedAttentionThreads / 32;
  static constexpr int kPosPerStep = kWarps * kPosPerWarp;
  static constexpr int kUnroll = Hq / Hkv <= 2 ? 4 : 2; // as above
  static constexpr int kRowElems = (Hq + 2 * Hkv) * HD;
};

namespace attention_detail {

template <int Hq, int HD, int G, int kWarps>
__device__ __forceinline__ void mergeSplits(bf16 *out, const float *partials,
                                            const bf16 *sinks, int t, int g,
                                            int splits, int T);
template <int Hq, int HD, int G>
__device__ __forceinline__ void
mergeCluster(bf16 *out, const float *mergedM, const float *mergedL,
             const float *mergedAcc, const bf16 *sinks, int t, int g,
             int splits);

// Merges, for the block's G heads [g * G, g * G + G) (g: its kv head, or
// with HeadSplit its part of one), the running softmax states of its
// position groups (lanes
// with equal `sub` hold head-dim values [sub * E, sub * E + E) of each of the
// G heads; kLpp lanes a group, of which the first HD / E hold values) and
// its warps, then writes out (splits == 1) or the split's partials. `sinks`
// (gpt-oss; null for none) join each head's softmax where it is normalised.
template <int Hq, int HD, int G, int kLpp, int E, int kWarps>
__device__ __forceinline__ void
mergeAndWrite(float (&m)[G], float (&l)[G], float (&acc)[G][E], bf16 *out,
              float *partials, unsigned *arrivals, const bf16 *sinks, int t,
              int g, int split, int splits, int T) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int sub = lane % kLpp;
  // Merge the position groups of the warp (lanes with equal `sub`).
#pragma unroll
  for (int offset = kLpp; offset < 32; offset *= 2) {
#pragma unroll
    for (int gi = 0; gi < G; ++gi) {
      const float mOther = __shfl_xor_sync(0xffffffffu, m[gi], offset);
      const float lOther = __shfl_xor_sync(0xffffffffu, l[gi], offset);
      const float mNew = fmaxf(m[gi], mOther);
      const float cSelf = softmaxRescale(m[gi], mNew);
      const float cOther = softmaxRescale(mOther, mNew);
      l[gi] = l[gi] * cSelf + lOther * cOther;
#pragma unroll
      for (int j = 0; j < E; ++j) {
        const float aOther = __shfl_xor_sync(0xffffffffu, acc[gi][j], offset);
        acc[gi][j] = acc[gi][j] * cSelf + aOther * cOther;
      }
      m[gi] = mNew;
    }
  }

  // Merge the warps through shared memory.
  __shared__ float sharedM[kWarps][G];
  __shared__ float sharedL[kWarps][G];
  __shared__ float sharedAcc[kWarps][G][HD];
  if (lane < HD / E) {
#pragma unroll
    for (int gi = 0; gi < G; ++gi) {
#pragma unroll
      for (int j = 0; j < E; ++j)
        sharedAcc[warp][gi][sub * E + j] = acc[gi][j];
      if (lane == 0) {
        sharedM[warp][gi] = m[gi];
        sharedL[warp][gi] = l[gi];
      }
    }
  }
  __syncthreads();

  // A cluster of all the splits merges through distributed shared memory
  // instead of global partials, a fence and an arrival atomic.
  const bool clusterMerge =
      splits > 1 && clusterBlocks() == static_cast<unsigned>(splits);
  __shared__ float mergedM[G], mergedL[G], mergedAcc[G * HD];
  for (int idx = threadIdx.x; idx < G * HD; idx += blockDim.x) {
    const int gi = idx / HD;
    const int d = idx % HD;
    float mAll = negativeInfinity();
#pragma unroll
    for (int wi = 0; wi < kWarps; ++wi)
      mAll = fmaxf(mAll, sharedM[wi][gi]);
    float lAll = 0.0f;
    float aAll = 0.0f;
#pragma unroll
    for (int wi = 0; wi < kWarps; ++wi) {
      const float c = softmaxRescale(sharedM[wi][gi], mAll);
      lAll += sharedL[wi][gi] * c;
      aAll += sharedAcc[wi][gi][d] * c;
    }
    const int head = g * G + gi;
    if (splits == 1) {
      const float o =
          sinks ? aAll * sinkNormalizer(mAll, lAll, sinkLog2Of(sinks, head))
          : lAll > 0.0f ? aAll / lAll
                        : 0.0f;
      out[static_cast<long long>(t) * Hq * HD + head * HD + d] =
          __float2bfloat16_rn(o);
    } else if (clusterMerge) {
      mergedAcc[idx] = aAll;
      if (d == 0) {
        mergedM[gi] = mAll;
        mergedL[gi] = lAll;
      }
    } else {
      const long long slot =
          (static_cast<long long>(t) * splits + split) * Hq + head;
      partials[slot * HD + d] = aAll;
      if (d == 0) {
        float *ml = partials + static_cast<long long>(T) * splits * Hq * HD;
        ml[2 * slot] = mAll;
        ml[2 * slot + 1] = lAll;
      }
    }
  }
  if (splits == 1)
    return;
  if (clusterMerge) {
    mergeCluster<Hq, HD, G>(out, mergedM, mergedL, mergedAcc, sinks, t, g,
                            splits);
    return;
  }

  // The last split block of (t, g) to arrive merges every split's partials.
  __shared__ bool lastArrival;
  __threadfence(); // this block's partials before its arrival
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned *arrival = arrivals + static_cast<long long>(t) * (Hq / G) + g;
    lastArrival = atomicAdd(arrival, 1u) == static_cast<unsigned>(splits - 1);
    if (lastArrival)
      atomicExch(arrival, 0u); // every split has arrived: reset for reuse
  }
  __syncthreads();
  if (!lastArrival)
    return;
  __threadfence(); // the other blocks' partials after their arrivals
  mergeSplits<Hq, HD, G, kWarps>(out, partials, sinks, t, g, splits, T);
}

// The merge of a cluster of `splits` (<= kMaxClusterSplits) blocks, one per
// split of token t and kv head g, each holding its split's state (m, l and
// the unnormalised outputs of the G heads) in shared memory: block r of the
// cluster reads every block's state for its 1/splits of the G * HD outputs
// and writes them. The clusterSync before the reads publishes the states;
// the one after keeps every block's shared memory alive until all reads
// are done.
template <int Hq, int HD, int G>
__device__ __forceinline__ void
mergeCluster(bf16 *out, const float *mergedM, const float *mergedL,
             const float *mergedAcc, const bf16 *sinks, int t, int g,
             int splits) {
  clusterSync();
  const int per = ceilDiv(G * HD, splits);
  const int first = static_cast<int>(clusterRank()) * per;
  const int last = min(first + per, G * HD);
  for (int idx = first + threadIdx.x; idx < last; idx += blockDim.x) {
    const int gi = idx / HD;
    out[static_cast<long long>(t) * Hq * HD + (g * G + gi) * HD + idx % HD] =
        __float2bfloat16_rn(mergeClusterStates<kMaxClusterSplits>(
            mergedM + gi, mergedL + gi, mergedAcc + idx, splits,
            sinkLog2Of(sinks, g * G + gi)));
  }
  clusterSync();
}

// The merge of `splits` (<= kMaxAttentionSplits) partial results of token t
// and kv head g into out, by one block: each warp first weighs the splits of
// its heads (one split per lane, the global max and sum by shuffles), then
// every thread sums its outputs' partials with independent loads in flight.
template <int Hq, int HD, int G, int kWarps>
__device__ __forceinline__ void mergeSplits(bf16 *out, const float *partials,
                                            const bf16 *sinks, int t, int g,
                                            int splits, int T) {
  constexpr int kPerLane = kMaxAttentionSplits / 32;
  __shared__ float weight[kMaxAttentionSplits][G];
  // Per head: its sum, or with a sink the factor of its weighted sum.
  __shared__ float total[G];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const float *ml = partials + static_cast<long long>(T) * splits * Hq * HD;
  const long long first = static_cast<long long>(t) * splits * Hq + g * G;
  for (int gi = warp; gi < G; gi += kWarps) {
    float m[kPerLane], l[kPerLane];
    float mAll = negativeInfinity();
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
      const int s = lane + 32 * r;
      const long long slot = first + static_cast<long long>(s) * Hq + gi;
      m[r] = s < splits ? __ldcg(ml + 2 * slot) : negativeInfinity();
      l[r] = s < splits ? __ldcg(ml + 2 * slot + 1) : 0.0f;
      mAll = fmaxf(mAll, m[r]);
    }
    mAll = groupMax<32>(mAll);
    float lAll = 0.0f;
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
      const int s = lane + 32 * r;
      const float c = softmaxRescale(m[r], mAll);
      if (s < splits)
        weight[s][gi] = c;
      lAll += l[r] * c;
    }
    lAll = groupSum<32>(lAll);
    if (lane == 0)
      total[gi] =
          sinks ? sinkNormalizer(mAll, lAll, sinkLog2Of(sinks, g * G + gi))
                : lAll;
  }
  __syncthreads();
  // Four consecutive outputs a thread (16-byte loads) and 8 splits in
  // flight: a 64-split merge of 7 heads of 128 reads 229 KB.
  constexpr int kInFlight = 8;
  static_assert(HD % 4 == 0, "mergeSplits: 16-byte partial loads");
  const long long stride = static_cast<long long>(Hq) * HD / 4;
  for (int quad = threadIdx.x; quad < G * HD / 4; quad += blockDim.x) {
    const int gi = quad / (HD / 4);
    const int d = quad % (HD / 4) * 4;
    const float4 *p =
        reinterpret_cast<const float4 *>(partials + (first + gi) * HD + d);
    float4 acc[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s0 = 0; s0 < splits; s0 += kInFlight)
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (s0 + u < splits) {
          const float4 v = __ldcg(p + (s0 + u) * stride);
          const float w = weight[s0 + u][gi];
          acc[u].x += v.x * w;
          acc[u].y += v.y * w;
          acc[u].z += v.z * w;
          acc[u].w += v.w * w;
        }
    float a[4] = {};
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      a[0] += acc[u].x;
      a[1] += acc[u].y;
      a[2] += acc[u].z;
      a[3] += acc[u].w;
    }
    const float lAll = total[gi];
    bf16 *o = out + static_cast<long long>(t) * Hq * HD + (g * G + gi) * HD + d;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      o[j] = __float2bfloat16_rn(sinks         ? a[j] * lAll
                                 : lAll > 0.0f ? a[j] / lAll
                                               : 0.0f);
  }
}

// E (a multiple of 8) bf16 values as 16-byte chunks: loaded early, unpacked
// when needed.
template <int E> struct RawBf16 {
  uint4 chunk[E / 8];

  __device__ __forceinline__ void load(const bf16 *p) {
#pragma unroll
    for (int c = 0; c < E / 8; ++c)
      chunk[c] = load16(p + c * 8);
  }
  // load(p) for a lane that holds values, zeros for an idle one.
  __device__ __forceinline__ void loadIf(bool holds, const bf16 *p) {
#pragma unroll
    for (int c = 0; c < E / 8; ++c)
      chunk[c] = holds ? load16(p + c * 8) : make_uint4(0, 0, 0, 0);
  }
  __device__ __forceinline__ void unpack(float (&f)[E]) const {
#pragma unroll
    for (int c = 0; c < E / 8; ++c) {
      float part[8];
      unpack8(chunk[c], part);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        f[c * 8 + j] = part[j];
    }
  }
};

// Loads E (a multiple of 8) bf16 values from p as floats.
template <int E>
__device__ __forceinline__ void loadBf16(const bf16 *p, float (&f)[E]) {
  RawBf16<E> raw;
  raw.load(p);
  raw.unpack(f);
}

// QkNorm: HeadRmsNorm's RMSNorm of one head (Qwen3's q_norm or k_norm)
// held E values a lane by aligned groups of kLpp lanes (padding lanes hold
// zeros), scaled by w (the lane's E weights), with the bits of
// rms_norm<HD>: x = bf16(w * bf16(x * rsqrt(mean(x^2) + eps))). That kernel
// gives each of its nextPowerOfTwo(HD / 8) lanes 8 values, sums their
// squares in order and adds across lanes by groupSum, whose butterfly pairs
// the farthest lanes first. With E = 16 a lane holds two of its lanes'
// values: the butterfly over the even ones and over the odd ones, then
// their sum (the butterfly's last, offset-1 step) is the same sum.
template <int HD, int E, int kLpp>
__device__ __forceinline__ void normalizeHead(float (&x)[E],
                                              const RawBf16<E> &w, float eps) {
  static_assert(E == 8 || E == 16, "normalizeHead: 8 or 16 values a lane");
  float total = 0.0f;
#pragma unroll
  for (int c = 0; c < E / 8; ++c) {
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      sum += x[c * 8 + j] * x[c * 8 + j];
    sum = groupSum<kLpp>(sum);
    total = c == 0 ? sum : total + sum;
  }
  const float inv = rsqrtf(total / static_cast<float>(HD) + eps);
  float wf[E];
  w.unpack(wf);
#pragma unroll
  for (int j = 0; j < E; ++j)
    x[j] = roundToBf16(wf[j] * roundToBf16(x[j] * inv));
}

// The QkNorm weights of this lane's dims (q's, then k's), loaded when the
// variant normalises, before waiting for the QKV projection.
template <bool QkNorm, int E> struct QkNormWeights {
  RawBf16<E> q, k;
  float eps = 0.0f;
  __device__ __forceinline__ void load(const PagedAttentionArgs &args,
                                       bool holds, int sub) {
    if constexpr (QkNorm) {
      q.loadIf(holds, args.qNormWeight + sub * E);
      k.loadIf(holds, args.kNormWeight + sub * E);
      eps = args.normEps;
    }
  }
  template <int HD, int kLpp>
  __device__ __forceinline__ void normalizeQ(float (&x)[E]) const {
    if constexpr (QkNorm)
      normalizeHead<HD, E, kLpp>(x, q, eps);
  }
  template <int HD, int kLpp>
  __device__ __forceinline__ void normalizeK(float (&x)[E]) const {
    if constexpr (QkNorm)
      normalizeHead<HD, E, kLpp>(x, k, eps);
  }
};

// FusedRope's work before griddepcontrol.wait: L2 prefetches of this lane's
// chunks (E elements of T) of the K and V rows of the walk's step at `base`
// (the first; with PreloadWalk, which loads the first, the second),
// positions below pos only (pos is appended after the wait), by the lanes
// that hold values (`holds`). Prefetches hold no registers.
template <int Hkv, int HD, int BS, int E, int kPosPerStep, int U, typename T>
__device__ __forceinline__ void
prefetchStep(const T *k_cache, const T *v_cache, const int *table, int base,
             int end, int pos, int posGroup, int g, int sub, bool holds) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int p = base + u * kPosPerStep + posGroup;
    if (holds && p < end && p < pos) {
      const long long row =
          (table[p / BS] * static_cast<long long>(BS) + p % BS) * Hkv + g;
      prefetchL2(k_cache + row * HD + sub * E);
      prefetchL2(v_cache + row * HD + sub * E);
    }
  }
}

// FusedRope's quantisation of the token's k or v for an fp8 cache: the
// lane's E values as loadFp8<E> returns them (16 bytes, or 8 in x and y)
// and the row's scale (all HD / E lanes of a position hold the row; every
// lane of the warp must call it). The bits rope_kv_write_fp8 stores.
template <int E, int kLpp>
__device__ __forceinline__ uint4 quantizeFp8(const float (&x)[E],
                                             float &scale) {
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < E; ++j)
    amax = fmaxf(amax, fabsf(x[j]));
  scale = rope_detail::fp8RowScale(groupMax<kLpp>(amax));
  uint4 raw = make_uint4(rope_detail::fp8Word(x, scale),
                         rope_detail::fp8Word(x + 4, scale), 0, 0);
  if constexpr (E == 16) {
    raw.z = rope_detail::fp8Word(x + 8, scale);
    raw.w = rope_detail::fp8Word(x + 12, scale);
  }
  return raw;
}

// Stores what quantizeFp8 returned (E bytes) at dst.
template <int E>
__device__ __forceinline__ void storeFp8Raw(unsigned char *dst,
                                            const uint4 &raw) {
  if constexpr (E == 16)
    store16(dst, raw);
  else
    *reinterpret_cast<uint2 *>(dst) = make_uint2(raw.x, raw.y);
}

// FusedRope's cache append for a bf16 cache, run by one warp: the HD / 8
// lanes of its first position group rotate token row `row`'s k head g
// (normalised first with QkNorm) and store it and the v head at `offset`
// (elements) of the caches.
template <int Hq, int Hkv, int HD, bool QkNorm>
__device__ __forceinline__ void
appendKvBf16(const bf16 *row, bf16 *k_cache, bf16 *v_cache, long long offset,
             int g, const float *cosT, const float *sinT,
             const QkNormWeights<QkNorm, 8> &norm) {
  constexpr int kLanes = HD / 8;
  constexpr int kLpp = nextPowerOfTwo(kLanes);
  const int lane = threadIdx.x % 32;
  const int sub = lane % kLpp;
  float k[8];
  unpack8(kLanes == kLpp || sub < kLanes ? load16(row + (Hq + g) * HD + sub * 8)
                                         : make_uint4(0, 0, 0, 0),
          k);
  norm.template normalizeK<HD, kLpp>(k);
  rope_detail::rotateLane<HD, 8>(k, sub, cosT, sinT);
  if (lane < kLanes) {
    store16(k_cache + offset + sub * 8, pack8(k));
    store16(v_cache + offset + sub * 8,
            load16(row + (Hq + Hkv + g) * HD + sub * 8));
  }
}

// The same for an fp8 cache: lanes hold E values (HD / E lanes per row,
// padded to a power of two with lanes of zeros), and each row gets its
// scale (Rope.cuh) at scale index `row` of the caches.
template <int Hq, int Hkv, int HD, int E, bool QkNorm>
__device__ __forceinline__ void
appendKvFp8(const bf16 *row, unsigned char *k_cache, unsigned char *v_cache,
            float *k_scales, float *v_scales, long long cacheRow, int g,
            const float *cosT, const float *sinT,
            const QkNormWeights<QkNorm, E> &norm) {
  constexpr int kLanes = HD / E;
  constexpr int kLpp = nextPowerOfTwo(kLanes);
  const int lane = threadIdx.x % 32;
  const int sub = lane % kLpp;
  const bool holds = kLanes == kLpp || sub < kLanes;
#pragma unroll
  for (int isV = 0; isV < 2; ++isV) {
    float x[E];
    if (holds) {
      loadBf16<E>(row + (Hq + isV * Hkv + g) * HD + sub * E, x);
    } else {
#pragma unroll
      for (int j = 0; j < E; ++j)
        x[j] = 0.0f;
    }
    if (!isV) {
      norm.template normalizeK<HD, kLpp>(x);
      rope_detail::rotateLane<HD, E>(x, sub, cosT, sinT);
    }
    float scale;
    const uint4 raw = quantizeFp8<E, kLpp>(x, scale);
    if (lane < kLanes)
      storeFp8Raw<E>((isV ? v_cache : k_cache) + cacheRow * HD + sub * E, raw);
    if (lane == 0)
      (isV ? v_scales : k_scales)[cacheRow] = scale;
  }
}

// Four E4M3 values (one 32-bit word, first value in the low byte) to
// float: exact, E4M3 is a subset of f16.
__device__ __forceinline__ void fp8x4ToFloat(unsigned w, float *f) {
  const __half2 lo(__nv_cvt_fp8x2_to_halfraw2(
      static_cast<__nv_fp8x2_storage_t>(w & 0xffffu), __NV_E4M3));
  const __half2 hi(__nv_cvt_fp8x2_to_halfraw2(
      static_cast<__nv_fp8x2_storage_t>(w >> 16), __NV_E4M3));
  const float2 a = __half22float2(lo);
  const float2 b = __half22float2(hi);
  f[0] = a.x;
  f[1] = a.y;
  f[2] = b.x;
  f[3] = b.y;
}

// E fp8 values (16: all of v, 8: v.x and v.y) to float.
template <int E>
__device__ __forceinline__ void unpackFp8(const uint4 &v, float (&f)[E]) {
  fp8x4ToFloat(v.x, f);
  fp8x4ToFloat(v.y, f + 4);
  if constexpr (E == 16) {
    fp8x4ToFloat(v.z, f + 8);
    fp8x4ToFloat(v.w, f + 12);
  }
}

template <int E> __device__ __forceinline__ uint4 loadFp8(const void *p) {
  if constexpr (E == 16) {
    return load16(p);
  } else {
    const uint2 v = *reinterpret_cast<const uint2 *>(p);
    return make_uint4(v.x, v.y, 0, 0);
  }
}

} // namespace attention_detail

template <int Hq, int Hkv, int HD, int BS, bool FusedRope,
          bool PreloadWalk = false, bool Softcap = false, bool QkNorm = false,
          int HeadSplit = 1>
__global__ void __launch_bounds__(kPagedAttentionThreads)
    paged_attention(const __grid_constant__ PagedAttentionArgs args) {
  allowDependentLaunch();
  bf16 *const out = args.out;
  const bf16 *const qkv = args.qkv;
  bf16 *const k_cache = static_cast<bf16 *>(args.kCache);
  bf16 *const v_cache = static_cast<bf16 *>(args.vCache);
  const int *const positions = args.positions;
  const int *const token_seq = args.tokenSeq;
  const int *const block_tables = args.blockTables;
  const int max_blocks = args.maxBlocks;
  const float scale = args.scale;
  const int sliding_window = args.slidingWindow;
  const int T = args.tokens;
  float *const partials = args.partials;
  unsigned *const arrivals = args.arrivals;
  const float *const inv_freq = args.invFreq;
  const float attention_scaling = args.attentionScaling;
  const int rope_long_from = args.ropeLongFrom;
  // Only the Softcap variants read it: a branch on it in every kernel cost
  // registers, and occupancy, even when never taken.
  const float softcap = Softcap ? args.softcap : 0.0f;
  // Unfused: rope_kv_write, the predecessor, wrote this step's K/V rows
  // (a prompt chunk's tokens read each other's), so wait at once.
  static_assert(FusedRope || !PreloadWalk,
                "paged_attention: PreloadWalk needs FusedRope");
  static_assert(FusedRope || !QkNorm,
                "paged_attention: QkNorm needs FusedRope");
  static_assert(HeadSplit == 1 || PreloadWalk,
                "paged_attention: HeadSplit needs PreloadWalk");
  if constexpr (!FusedRope)
    waitForPredecessor();
  using namespace attention_detail;
  using Shape = PagedAttentionShape<Hq, Hkv, HD, BS, HeadSplit>;
  constexpr int G = Shape::kGroup;
  constexpr int kLpp = Shape::kLanesPerPos;
  constexpr int U = Shape::kUnroll;
  constexpr int kWarps = Shape::kWarps;

  // The block's q heads are [gv * G, gv * G + G), of kv head g.
  const int t = blockIdx.x / (Hkv * HeadSplit);
  const int gv = blockIdx.x % (Hkv * HeadSplit);
  const int g = gv / HeadSplit;
  const bool appendsKv = gv % HeadSplit == 0;
  if (t >= T)
    return;
  const int split = blockIdx.y;
  const int splits = gridDim.y;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int sub = lane % kLpp;
  // Whether this lane holds values of its position (not a padding lane).
  const bool holds = Shape::kValueLanes == kLpp || sub < Shape::kValueLanes;
  const int posGroup = warp * Shape::kPosPerWarp + lane / kLpp;

  const int seq = token_seq[t];
  int pos = 0;
  int begin = 0;
  int end = 0;
  if (seq >= 0) {
    pos = positions[t];
    const int lo = sliding_window > 0 ? max(0, pos - sliding_window + 1) : 0;
    const int chunk = ceilDiv(pos + 1 - lo, splits);
    begin = min(lo + split * chunk, pos + 1);
    end = min(begin + chunk, pos + 1);
  }
  const bf16 *tokenRow = qkv + static_cast<long long>(t) * Shape::kRowElems;
  const int *table =
      block_tables + static_cast<long long>(seq < 0 ? 0 : seq) * max_blocks;

  // q's chunks, loaded as soon as the QKV projection is done.
  const bf16 *qRow = tokenRow + gv * G * HD + sub * 8;
  RawBf16<8> qRaw[G];
  auto loadQ = [&] {
#pragma unroll
    for (int gi = 0; gi < G; ++gi)
      qRaw[gi].loadIf(holds, qRow + gi * HD);
  };

  // One step of the walk: U positions per position group.
  uint4 kRaw[U], vRaw[U];
  bool ok[U];
  // HeadSplit: the token's k and v (position pos), which only the first
  // block of a kv head appends to the cache: the others take them from here
  // wherever their walk meets pos, never reading a row another block writes.
  uint4 kPos = make_uint4(0, 0, 0, 0), vPos = make_uint4(0, 0, 0, 0);
  auto loadStep = [&](int base) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int p = base + u * Shape::kPosPerStep + posGroup;
      ok[u] = p < end;
      if (HeadSplit > 1 && p == pos) {
        kRaw[u] = kPos;
        vRaw[u] = vPos;
      } else if (ok[u] && holds) {
        const long long block = table[p / BS];
        const long long offset =
            ((block * BS + p % BS) * Hkv + g) * HD + sub * 8;
        kRaw[u] = load16(k_cache + offset);
        vRaw[u] = load16(v_cache + offset);
      } else {
        kRaw[u] = make_uint4(0, 0, 0, 0);
        vRaw[u] = make_uint4(0, 0, 0, 0);
      }
    }
  };

  // FusedRope: the token's rope angles, once per block (per element they
  // cost more than the launch fusion saves); the block whose split range
  // holds pos (not always the last: trailing splits of a short context are
  // empty) rotates the token's k and appends k and v to the cache. seq, pos
  // and the range are uniform over the block. In a decode step no kernel
  // before this one writes the step inputs, the rope frequencies or the
  // cache rows of earlier positions: the angles and the first step's L2
  // prefetches come before waiting for the QKV projection.
  //
  // PreloadWalk (small grids: PagedAttentionSpec::preloadsWalk): the first
  // step's cache rows are loaded into registers before the wait, so after
  // it only the token's q, k and v are loaded before the scores; the lanes
  // that walk pos take its k and v from registers in the first step, and
  // store them to the cache, from which the same threads read them back in
  // a later step. The registers held across the wait (150 instead of 128
  // for Llama-3.2-1B's heads) cost full grids their fourth block per
  // multiprocessor; measured on the H200 (docs/gpu.md): 64-sequence decode
  // 3.7% slower, batch-1 decode 0.4% faster (fp8 cache: 1.2%). Keeping the
  // first step in shared memory instead (cp.async, no registers) makes
  // batch-1 decode 1.5% slower: 16 KB more of shared memory per block keeps
  // attention blocks off multiprocessors that the QKV projection still
  // occupies (the same 16 KB unused in the plain kernel costs as much).
  __shared__ float cosT[FusedRope ? HD / 2 : 1], sinT[FusedRope ? HD / 2 : 1];
  QkNormWeights<QkNorm, 8> norm;
  norm.load(args, holds, sub);
  if constexpr (FusedRope && PreloadWalk) {
    if (seq >= 0)
      rope_detail::ropeTable<HD>(cosT, sinT, inv_freq, pos, attention_scaling,
                                 rope_long_from);
    loadStep(begin);
    if (begin + Shape::kPosPerStep * U < end)
      prefetchStep<Hkv, HD, BS, 8, Shape::kPosPerStep, U>(
          k_cache, v_cache, table, begin + Shape::kPosPerStep * U, end, pos,
          posGroup, g, sub, holds);
    const bool writesPos = holds && begin <= pos && pos < end &&
                           (pos - begin) % Shape::kPosPerStep == posGroup;
    long long newOffset = 0;
    if (writesPos)
      newOffset =
          ((table[pos / BS] * static_cast<long long>(BS) + pos % BS) * Hkv +
           g) *
              HD +
          sub * 8;
    __syncthreads(); // the rope table
    waitForPredecessor();
    loadQ();
    const bool ownsPos = seq >= 0 && begin <= pos && pos < end;
    if (ownsPos) {
      uint4 kNew = holds ? load16(tokenRow + (Hq + g) * HD + sub * 8)
                         : make_uint4(0, 0, 0, 0);
      const uint4 vNew = holds
                             ? load16(tokenRow + (Hq + Hkv + g) * HD + sub * 8)
                             : make_uint4(0, 0, 0, 0);
      float k[8];
      unpack8(kNew, k);
      norm.template normalizeK<HD, kLpp>(k);
      rope_detail::rotateLane<HD, 8>(k, sub, cosT, sinT);
      kNew = pack8(k); // exact: rotateLane rounds to bf16
      kPos = kNew;
      vPos = vNew;
      if (writesPos) {
        if (appendsKv) {
          store16(k_cache + newOffset, kNew);
          store16(v_cache + newOffset, vNew);
        }
        const int first = (pos - begin) / Shape::kPosPerStep;
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (u == first) {
            kRaw[u] = kNew;
            vRaw[u] = vNew;
          }
      }
    }
  } else if constexpr (FusedRope) {
    if (seq >= 0) {
      rope_detail::ropeTable<HD>(cosT, sinT, inv_freq, pos, attention_scaling,
                                 rope_long_from);
      prefetchStep<Hkv, HD, BS, 8, Shape::kPosPerStep, U>(
          k_cache, v_cache, table, begin, end, pos, posGroup, g, sub, holds);
    }
    waitForPredecessor();
    loadQ();
    if (seq >= 0) {
      __syncthreads();
      if (begin <= pos && pos < end) {
        if (warp == 0) {
          const long long block = table[pos / BS];
          appendKvBf16<Hq, Hkv, HD, QkNorm>(
              tokenRow, k_cache, v_cache,
              ((block * BS + pos % BS) * Hkv + g) * HD, g, cosT, sinT, norm);
        }
        __syncthreads(); // the block reads the appended row below
      }
    }
  } else {
    loadQ();
  }

  float q[G][8];
  const float qScale = scale * kLog2e; // scores in the log2 domain
#pragma unroll
  for (int gi = 0; gi < G; ++gi) {
    qRaw[gi].unpack(q[gi]);
    norm.template normalizeQ<HD, kLpp>(q[gi]);
    if constexpr (FusedRope)
      if (seq >= 0)
        rope_detail::rotateLane<HD, 8>(q[gi], sub, cosT, sinT);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      q[gi][j] *= qScale;
  }

  float m[G], l[G], acc[G][8];
#pragma unroll
  for (int gi = 0; gi < G; ++gi) {
    m[gi] = negativeInfinity();
    l[gi] = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      acc[gi][j] = 0.0f;
  }

  // Soft-capping, in the log2 domain of the scores.
  const float capLog2 = softcap * kLog2e;
  const float capRate = softcap > 0.0f ? 2.0f / softcap : 0.0f;

  // begin/end are uniform over the block, so every lane runs every iteration
  // and the shuffles below always see the full warp.
  for (int base = begin; base < end; base += Shape::kPosPerStep * U) {
    if (!(FusedRope && PreloadWalk) || base != begin) // preloaded
      loadStep(base);
    float s[U][G];
    float vf[U][8];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float kf[8];
      unpack8(kRaw[u], kf);
      unpack8(vRaw[u], vf[u]);
#pragma unroll
      for (int gi = 0; gi < G; ++gi) {
        float d = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j)
          d = fmaf(q[gi][j], kf[j], d);
        d = groupSum<kLpp>(d);
        s[u][gi] = ok[u] ? d : negativeInfinity();
      }
    }
    if (softcap > 0.0f) { // uniform
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int gi = 0; gi < G; ++gi)
          if (ok[u])
            s[u][gi] = softcapScore(s[u][gi], capLog2, capRate);
    }
#pragma unroll
    for (int gi = 0; gi < G; ++gi) {
      float mNew = m[gi];
#pragma unroll
      for (int u = 0; u < U; ++u)
        mNew = fmaxf(mNew, s[u][gi]);
      if (mNew == negativeInfinity())
        continue; // nothing seen yet by this position group
      const float corr = softmaxRescale(m[gi], mNew);
      l[gi] *= corr;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        acc[gi][j] *= corr;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float p = exp2f(s[u][gi] - mNew); // exp2(-inf) = 0
        l[gi] += p;
#pragma unroll
        for (int j = 0; j < 8; ++j)
          acc[gi][j] = fmaf(p, vf[u][j], acc[gi][j]);
      }
      m[gi] = mNew;
    }
  }

  mergeAndWrite<Hq, HD, G, kLpp, 8, kWarps>(
      m, l, acc, out, partials, arrivals, args.sinks, t, gv, split, splits, T);
}

template <int Hq, int Hkv, int HD, int BS, bool FusedRope,
          bool PreloadWalk = false, bool Softcap = false, bool QkNorm = false,
          int HeadSplit = 1>
__global__ void __launch_bounds__(kPagedAttentionThreads)
    paged_attention_fp8(const __grid_constant__ PagedAttentionArgs args) {
  allowDependentLaunch();
  bf16 *const out = args.out;
  const bf16 *const qkv = args.qkv;
  unsigned char *const k_cache = static_cast<unsigned char *>(args.kCache);
  unsigned char *const v_cache = static_cast<unsigned char *>(args.vCache);
  float *const k_scales = args.kScales;
  float *const v_scales = args.vScales;
  const int *const positions = args.positions;
  const int *const token_seq = args.tokenSeq;
  const int *const block_tables = args.blockTables;
  const int max_blocks = args.maxBlocks;
  const float scale = args.scale;
  const int sliding_window = args.slidingWindow;
  const int T = args.tokens;
  float *const partials = args.partials;
  unsigned *const arrivals = args.arrivals;
  const float *const inv_freq = args.invFreq;
  const float attention_scaling = args.attentionScaling;
  const int rope_long_from = args.ropeLongFrom;
  // Only the Softcap variants read it: a branch on it in every kernel cost
  // registers, and occupancy, even when never taken.
  const float softcap = Softcap ? args.softcap : 0.0f;
  // Unfused: rope_kv_write, the predecessor, wrote this step's K/V rows
  // (a prompt chunk's tokens read each other's), so wait at once.
  static_assert(FusedRope || !PreloadWalk,
                "paged_attention: PreloadWalk needs FusedRope");
  static_assert(FusedRope || !QkNorm,
                "paged_attention: QkNorm needs FusedRope");
  static_assert(HeadSplit == 1 || PreloadWalk,
                "paged_attention: HeadSplit needs PreloadWalk");
  if constexpr (!FusedRope)
    waitForPredecessor();
  using namespace attention_detail;
  using Shape = PagedAttentionFp8Shape<Hq, Hkv, HD, BS, HeadSplit>;
  constexpr int G = Shape::kGroup;
  constexpr int E = Shape::kElems;
  constexpr int kLpp = Shape::kLanesPerPos;
  constexpr int U = Shape::kUnroll;
  constexpr int kWarps = Shape::kWarps;

  // The block's q heads are [gv * G, gv * G + G), of kv head g.
  const int t = blockIdx.x / (Hkv * HeadSplit);
  const int gv = blockIdx.x % (Hkv * HeadSplit);
  const int g = gv / HeadSplit;
  const bool appendsKv = gv % HeadSplit == 0;
  if (t >= T)
    return;
  const int split = blockIdx.y;
  const int splits = gridDim.y;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int sub = lane % kLpp;
  // Whether this lane holds values of its position (not a padding lane).
  const bool holds = Shape::kValueLanes == kLpp || sub < Shape::kValueLanes;
  const int posGroup = warp * Shape::kPosPerWarp + lane / kLpp;

  const int seq = token_seq[t];
  int pos = 0;
  int begin = 0;
  int end = 0;
  if (seq >= 0) {
    pos = positions[t];
    const int lo = sliding_window > 0 ? max(0, pos - sliding_window + 1) : 0;
    const int chunk = ceilDiv(pos + 1 - lo, splits);
    begin = min(lo + split * chunk, pos + 1);
    end = min(begin + chunk, pos + 1);
  }
  const bf16 *tokenRow = qkv + static_cast<long long>(t) * Shape::kRowElems;
  const int *table =
      block_tables + static_cast<long long>(seq < 0 ? 0 : seq) * max_blocks;

  // q's chunks, loaded as soon as the QKV projection is done.
  const bf16 *qRow = tokenRow + gv * G * HD + sub * E;
  RawBf16<E> qRaw[G];
  auto loadQ = [&] {
#pragma unroll
    for (int gi = 0; gi < G; ++gi)
      qRaw[gi].loadIf(holds, qRow + gi * HD);
  };

  // One step of the walk, as in paged_attention.
  uint4 kRaw[U], vRaw[U];
  float kScale[U], vScale[U];
  bool ok[U];
  // HeadSplit: the token's quantised k and v and their scales, as in
  // paged_attention.
  uint4 kPos = make_uint4(0, 0, 0, 0), vPos = make_uint4(0, 0, 0, 0);
  float kPosScale = 0.0f, vPosScale = 0.0f;
  auto loadStep = [&](int base) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int p = base + u * Shape::kPosPerStep + posGroup;
      ok[u] = p < end;
      if (HeadSplit > 1 && p == pos) {
        kRaw[u] = kPos;
        vRaw[u] = vPos;
        kScale[u] = kPosScale;
        vScale[u] = vPosScale;
      } else if (ok[u]) {
        const long long block = table[p / BS];
        const long long row = (block * BS + p % BS) * Hkv + g;
        kRaw[u] = holds ? loadFp8<E>(k_cache + row * HD + sub * E)
                        : make_uint4(0, 0, 0, 0);
        vRaw[u] = holds ? loadFp8<E>(v_cache + row * HD + sub * E)
                        : make_uint4(0, 0, 0, 0);
        kScale[u] = k_scales[row];
        vScale[u] = v_scales[row];
      } else {
        kRaw[u] = make_uint4(0, 0, 0, 0);
        vRaw[u] = make_uint4(0, 0, 0, 0);
        kScale[u] = 0.0f;
        vScale[u] = 0.0f;
      }
    }
  };

  // FusedRope and PreloadWalk as in paged_attention; the block that holds
  // pos quantises the token's rotated k and its v (Rope.cuh's arithmetic,
  // the bits rope_kv_write_fp8 stores).
  __shared__ float cosT[FusedRope ? HD / 2 : 1], sinT[FusedRope ? HD / 2 : 1];
  QkNormWeights<QkNorm, E> norm;
  norm.load(args, holds, sub);
  if constexpr (FusedRope && PreloadWalk) {
    if (seq >= 0)
      rope_detail::ropeTable<HD>(cosT, sinT, inv_freq, pos, attention_scaling,
                                 rope_long_from);
    loadStep(begin);
    if (begin + Shape::kPosPerStep * U < end)
      prefetchStep<Hkv, HD, BS, E, Shape::kPosPerStep, U>(
          k_cache, v_cache, table, begin + Shape::kPosPerStep * U, end, pos,
          posGroup, g, sub, holds);
    const bool writesPos = begin <= pos && pos < end &&
                           (pos - begin) % Shape::kPosPerStep == posGroup;
    long long newRow = 0;
    if (writesPos)
      newRow =
          (table[pos / BS] * static_cast<long long>(BS) + pos % BS) * Hkv + g;
    __syncthreads(); // the rope table
    waitForPredecessor();
    loadQ();
    const bool ownsPos = seq >= 0 && begin <= pos && pos < end;
    if (ownsPos) {
      RawBf16<E> kIn, vIn;
      kIn.loadIf(holds, tokenRow + (Hq + g) * HD + sub * E);
      vIn.loadIf(holds, tokenRow + (Hq + Hkv + g) * HD + sub * E);
      float k[E], v[E];
      kIn.unpack(k);
      vIn.unpack(v);
      norm.template normalizeK<HD, kLpp>(k);
      rope_detail::rotateLane<HD, E>(k, sub, cosT, sinT);
      float kNewScale, vNewScale;
      const uint4 kNew = quantizeFp8<E, kLpp>(k, kNewScale);
      const uint4 vNew = quantizeFp8<E, kLpp>(v, vNewScale);
      kPos = kNew;
      vPos = vNew;
      kPosScale = kNewScale;
      vPosScale = vNewScale;
      if (writesPos) {
        if (holds && appendsKv) {
          storeFp8Raw<E>(k_cache + newRow * HD + sub * E, kNew);
          storeFp8Raw<E>(v_cache + newRow * HD + sub * E, vNew);
        }
        if (sub == 0 && appendsKv) {
          k_scales[newRow] = kNewScale;
          v_scales[newRow] = vNewScale;
        }
        const int first = (pos - begin) / Shape::kPosPerStep;
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (u == first) {
            kRaw[u] = kNew;
            vRaw[u] = vNew;
            kScale[u] = kNewScale;
            vScale[u] = vNewScale;
          }
      }
    }
  } else if constexpr (FusedRope) {
    if (seq >= 0) {
      rope_detail::ropeTable<HD>(cosT, sinT, inv_freq, pos, attention_scaling,
                                 rope_long_from);
      prefetchStep<Hkv, HD, BS, E, Shape::kPosPerStep, U>(
          k_cache, v_cache, table, begin, end, pos, posGroup, g, sub, holds);
    }
    waitForPredecessor();
    loadQ();
    if (seq >= 0) {
      __syncthreads();
      if (begin <= pos && pos < end) {
        if (warp == 0) {
          const long long block = table[pos / BS];
          appendKvFp8<Hq, Hkv, HD, E, QkNorm>(
              tokenRow, k_cache, v_cache, k_scales, v_scales,
              (block * BS + pos % BS) * Hkv + g, g, cosT, sinT, norm);
        }
        __syncthreads(); // the block reads the appended row below
      }
    }
  } else {
    loadQ();
  }

  float q[G][E];
  const float qScale = scale * kLog2e; // scores in the log2 domain
#pragma unroll
  for (int gi = 0; gi < G; ++gi) {
    qRaw[gi].unpack(q[gi]);
    norm.template normalizeQ<HD, kLpp>(q[gi]);
    if constexpr (FusedRope)
      if (seq >= 0)
        rope_detail::rotateLane<HD, E>(q[gi], sub, cosT, sinT);
#pragma unroll
    for (int j = 0; j < E; ++j)
      q[gi][j] *= qScale;
  }

  float m[G], l[G], acc[G][E];
#pragma unroll
  for (int gi = 0; gi < G; ++gi) {
    m[gi] = negativeInfinity();
    l[gi] = 0.0f;
#pragma unroll
    for (int j = 0; j < E; ++j)
      acc[gi][j] = 0.0f;
  }

  // Soft-capping, in the log2 domain of the scores.
  const float capLog2 = softcap * kLog2e;
  const float capRate = softcap > 0.0f ? 2.0f / softcap : 0.0f;

  // begin/end are uniform over the block, so every lane runs every iteration
  // and the shuffles below always see the full warp.
  for (int base = begin; base < end; base += Shape::kPosPerStep * U) {
    if (!(FusedRope && PreloadWalk) || base != begin) // preloaded
      loadStep(base);
    float s[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float kf[E];
      unpackFp8<E>(kRaw[u], kf);
#pragma unroll
      for (int gi = 0; gi < G; ++gi) {
        float d = 0.0f;
#pragma unroll
        for (int j = 0; j < E; ++j)
          d = fmaf(q[gi][j], kf[j], d);
        d = groupSum<kLpp>(d);
        s[u][gi] = ok[u] ? d * kScale[u] : negativeInfinity();
      }
    }
    if (softcap > 0.0f) { // uniform
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int gi = 0; gi < G; ++gi)
          if (ok[u])
            s[u][gi] = softcapScore(s[u][gi], capLog2, capRate);
    }
    // New running maxima first, so that each V row is converted once and
    // used by every head of the group.
#pragma unroll
    for (int gi = 0; gi < G; ++gi) {
      float mNew = m[gi];
#pragma unroll
      for (int u = 0; u < U; ++u)
        mNew = fmaxf(mNew, s[u][gi]);
      if (mNew == negativeInfinity())
        continue; // nothing seen yet by this position group
      const float corr = softmaxRescale(m[gi], mNew);
      l[gi] *= corr;
#pragma unroll
      for (int j = 0; j < E; ++j)
        acc[gi][j] *= corr;
      m[gi] = mNew;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float vf[E];
      unpackFp8<E>(vRaw[u], vf);
#pragma unroll
      for (int gi = 0; gi < G; ++gi) {
        // exp2(-inf) = 0 for positions past `end`; m is finite whenever a
        // position was seen (an empty state only meets -inf scores).
        const float p =
            m[gi] == negativeInfinity() ? 0.0f : exp2f(s[u][gi] - m[gi]);
        l[gi] += p;
        const float pv = p * vScale[u];
#pragma unroll
        for (int j = 0; j < E; ++j)
          acc[gi][j] = fmaf(pv, vf[j], acc[gi][j]);
      }
    }
  }

  mergeAndWrite<Hq, HD, G, kLpp, E, kWarps>(
      m, l, acc, out, partials, arrivals, args.sinks, t, gv, split, splits, T);
}

} // namespace kernels
} // namespace sol

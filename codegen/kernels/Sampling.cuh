//===- Sampling.cuh - Per-request sampling of logits rows -----------------===//
//
// sample_rows: one block of 1024 threads per fp32 logits row. For each row:
//
//  1. when logprobs are asked for: log-sum-exp of the raw row and its top-n
//     ids (before the penalties touch the row);
//  2. penalties: the row's CSR entries are applied in place (the original
//     values are saved in penaltySaved and restored at the end, so the
//     logits the executor copies back are the raw ones);
//  3. greedy rows (temperature <= 0): argmax, lowest index on ties;
//     sampled rows: the semantics of runtime/sampling/CpuSampler.h, with the
//     same float32 operations (SamplingMath.h, repeated below with _rn
//     intrinsics so nothing is contracted into an FMA) and masses as 64-bit
//     fixed-point integers, so the GPU and the CPU pick the same token.
//
// Method. Every token gets d = zmax - z >= 0 (z = logit / temperature).
// Top-k and top-p are thresholds on d, found from a 1024-bin histogram of d
// over [0, 32) (32 bins per nat; bin 1023 holds d >= 31.97, whose mass is 0),
// with per-bin counts and fixed-point masses (shared-memory atomics; integer
// sums are order independent, so results are deterministic):
//  * fast path: when the bins up to the one holding the loosest threshold
//    hold <= 4096 tokens, they are gathered into shared memory, sorted
//    (bitonic) by (d, id), the thresholds read off exactly, the survivors
//    re-sorted by id and drawn from there;
//  * otherwise (flat distributions) each threshold is refined by histograms
//    of the bin's d range at 2^-15 and then 2^-25 resolution until its bin
//    holds <= 4096 tokens, which are gathered and sorted; the draw is then
//    one pass over the row in vocabulary order: each warp sums a contiguous
//    segment, the segment holding the draw point is walked by one warp with
//    a prefix scan.
// Top-n logprobs use the same histogram on the raw logits. Rows with
// temperature-only sampling skip the histograms (one max pass, the draw).
//
// Launch: SamplingArgs (LaunchArgs.h), `rows` blocks of kSamplingThreads;
// static shared memory (~45 KB).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kSamplingThreads = 1024;
constexpr int kSamplingWarps = kSamplingThreads / 32;
constexpr int kSamplingBins = 1024; // one per thread
constexpr int kSamplingCandidates = 4096;
constexpr int kSamplingMaxTop = 20;

// sol::SamplingRow (runtime/executor/Executor.h), byte for byte.
struct SamplingParams {
  float temperature;
  int top_k;
  float top_p;
  float min_p;
  float repetition_penalty;
  float presence_penalty;
  float frequency_penalty;
  int pad0;
  unsigned long long seed;
  int counter;
  int pad1;
};
static_assert(sizeof(SamplingParams) == 48, "SamplingParams layout");

// A penalty entry: x = token id, y = output count | (in prompt ? 1 << 31 : 0);
// a logit-bias entry: x = token id | kSamplingBiasBit, y = the bias's bits.
constexpr unsigned kPenaltyInPromptBit = 0x80000000u;
constexpr unsigned kSamplingBiasBit = 0x80000000u;

// ---------------------------------------------------------------------------
// The RNG (runtime/sampling/Random.h).

__host__ __device__ constexpr unsigned long long
samplingMix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__host__ __device__ constexpr unsigned long long
samplingRandomBits(unsigned long long seed, unsigned counter) {
  return samplingMix64(samplingMix64(seed) +
                       0x9e3779b97f4a7c15ull *
                           (static_cast<unsigned long long>(counter) + 1));
}

__host__ __device__ constexpr double samplingUniform(unsigned long long seed,
                                                     unsigned counter) {
  return static_cast<double>(samplingRandomBits(seed, counter) >> 11) *
         0x1.0p-53;
}

// ---------------------------------------------------------------------------
// The float32 steps (runtime/sampling/SamplingMath.cpp), one rounding each.

constexpr float kSamplingMassScale = 17592186044416.0f; // 2^44

__device__ __forceinline__ float positiveInfinity() {
  return __int_as_float(0x7f800000);
}

__device__ __forceinline__ float samplingCanonical(float v) {
  return v != v ? negativeInfinity() : __fadd_rn(v, 0.0f);
}

__device__ __forceinline__ float samplingPenalized(float v, float repetition,
                                                   float presence,
                                                   float frequency, int count,
                                                   bool inPrompt) {
  if (inPrompt || count > 0)
    v = v > 0.0f ? __fdiv_rn(v, repetition) : __fmul_rn(v, repetition);
  v = __fsub_rn(v, __fmul_rn(frequency, __int2float_rn(count)));
  if (count > 0)
    v = __fsub_rn(v, presence);
  return v;
}

__device__ __forceinline__ float samplingExpNegative(float d) {
  if (!(d < 87.0f))
    return 0.0f;
  const float x = -d;
  const float t = __fmul_rn(x, 1.44269504088896341f);
  const float k = rintf(t);
  const float khi = __fmul_rn(k, 0.693359375f);
  const float klo = __fmul_rn(k, -2.12194440e-4f);
  float r = __fsub_rn(x, khi);
  r = __fsub_rn(r, klo);
  float p = 1.98412698e-4f;
  p = __fadd_rn(__fmul_rn(p, r), 1.38888889e-3f);
  p = __fadd_rn(__fmul_rn(p, r), 8.33333333e-3f);
  p = __fadd_rn(__fmul_rn(p, r), 4.16666667e-2f);
  p = __fadd_rn(__fmul_rn(p, r), 1.66666667e-1f);
  p = __fadd_rn(__fmul_rn(p, r), 0.5f);
  p = __fadd_rn(__fmul_rn(p, r), 1.0f);
  p = __fadd_rn(__fmul_rn(p, r), 1.0f);
  const float scale = __int_as_float((static_cast<int>(k) + 127) << 23);
  return __fmul_rn(p, scale);
}

__device__ __forceinline__ unsigned long long samplingFixedMass(float e) {
  return __float2ull_rz(__fmul_rn(e, kSamplingMassScale));
}

__device__ __forceinline__ unsigned long long
samplingTopPTarget(float p, unsigned long long mass) {
  const double t = __dmul_rn(static_cast<double>(p), __ull2double_rn(mass));
  unsigned long long v = __double2ull_rz(t);
  if (v == 0)
    v = 1; // the kept prefix is never empty
  return v < mass ? v : mass;
}

__device__ __forceinline__ unsigned long long
samplingDrawTarget(double u, unsigned long long mass) {
  const double t = __dmul_rn(u, __ull2double_rn(mass));
  const unsigned long long v = __double2ull_rz(t);
  return v < mass ? v : mass - 1;
}

// ---------------------------------------------------------------------------
// Block-wide helpers. Every thread of the block must call them.

struct SamplingShared {
  unsigned cnt[kSamplingBins];            // level-1 histogram, then its scan
  unsigned long long mass[kSamplingBins]; // the same for masses
  union {
    struct {
      unsigned cnt[kSamplingBins];
      unsigned long long mass[kSamplingBins];
    } fine;                                       // refinement histograms
    unsigned long long cand[kSamplingCandidates]; // gathered tokens
  } u;
  unsigned long long redU[kSamplingWarps];
  float redF[kSamplingWarps];
  int redI[kSamplingWarps];
  int count;
  int found;
};

__device__ __forceinline__ unsigned long long
samplingBlockSum(unsigned long long v, SamplingShared &sh) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0)
    sh.redU[threadIdx.x / 32] = v;
  __syncthreads();
  unsigned long long total = 0;
#pragma unroll 8
  for (int w = 0; w < kSamplingWarps; ++w)
    total += sh.redU[w];
  __syncthreads();
  return total;
}

// Sum in a fixed order (deterministic).
__device__ __forceinline__ float samplingBlockSumF(float v,
                                                   SamplingShared &sh) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0)
    sh.redF[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kSamplingWarps; ++w)
    total += sh.redF[w];
  __syncthreads();
  return total;
}

__device__ __forceinline__ bool samplingBetter(float a, int ia, float b,
                                               int ib) {
  return a > b || (a == b && ia < ib);
}

// The largest (value, index), lowest index on ties; values must not be NaN.
__device__ __forceinline__ void samplingBlockArgmax(float &v, int &idx,
                                                    SamplingShared &sh) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
    if (samplingBetter(ov, oi, v, idx)) {
      v = ov;
      idx = oi;
    }
  }
  if (threadIdx.x % 32 == 0) {
    sh.redF[threadIdx.x / 32] = v;
    sh.redI[threadIdx.x / 32] = idx;
  }
  __syncthreads();
  for (int w = 0; w < kSamplingWarps; ++w)
    if (samplingBetter(sh.redF[w], sh.redI[w], v, idx)) {
      v = sh.redF[w];
      idx = sh.redI[w];
    }
  __syncthreads();
}

__device__ __forceinline__ unsigned long long
samplingWarpInclusiveScan(unsigned long long v) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 1; o < 32; o *= 2) {
    const unsigned long long t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o)
      v += t;
  }
  return v;
}

// Exclusive prefix sum over the threads in order; `total` gets the sum.
__device__ __forceinline__ unsigned long long
samplingBlockExclusiveScan(unsigned long long v, unsigned long long &total,
                           SamplingShared &sh) {
  const int warp = threadIdx.x / 32;
  const unsigned long long incl = samplingWarpInclusiveScan(v);
  if (threadIdx.x % 32 == 31)
    sh.redU[warp] = incl;
  __syncthreads();
  unsigned long long before = 0;
  total = 0;
  for (int w = 0; w < kSamplingWarps; ++w) {
    const unsigned long long s = sh.redU[w];
    if (w < warp)
      before += s;
    total += s;
  }
  __syncthreads();
  return before + incl - v;
}

// The first bin b with cum[b] >= target (cum non-decreasing), or
// kSamplingBins when there is none.
template <typename T>
__device__ __forceinline__ int samplingFirstAtLeast(const T *cum,
                                                    unsigned long long target,
                                                    SamplingShared &sh) {
  if (threadIdx.x == 0)
    sh.found = kSamplingBins;
  __syncthreads();
  const int b = threadIdx.x;
  const unsigned long long here = cum[b];
  const unsigned long long before = b > 0 ? cum[b - 1] : 0;
  if (here >= target && before < target)
    sh.found = b;
  __syncthreads();
  const int found = sh.found;
  __syncthreads();
  return found;
}

// Sorts a[0, n) ascending; n a power of two <= kSamplingCandidates. The
// caller synchronises before.
__device__ __forceinline__ void samplingSort(unsigned long long *a, int n) {
  for (int k = 2; k <= n; k *= 2)
    for (int j = k / 2; j > 0; j /= 2) {
      for (int i = threadIdx.x; i < n; i += kSamplingThreads) {
        const int ixj = i ^ j;
        if (ixj > i) {
          const unsigned long long x = a[i], y = a[ixj];
          if ((x > y) == ((i & k) == 0)) {
            a[i] = y;
            a[ixj] = x;
          }
        }
      }
      __syncthreads();
    }
}

__device__ __forceinline__ int samplingPow2(int n) {
  int p = 1;
  while (p < n)
    p *= 2;
  return p;
}

// Calls f(index, value) for every element of a row, 16-byte loads when the
// row allows. Plain loads: the row is written by this kernel (penalties).
template <typename F>
__device__ __forceinline__ void samplingForRow(const float *row, int V, F f) {
  if (V % 4 == 0) {
    const float4 *row4 = reinterpret_cast<const float4 *>(row);
#pragma unroll 4
    for (int i = threadIdx.x; i < V / 4; i += kSamplingThreads) {
      const float4 v = row4[i];
      f(4 * i, v.x);
      f(4 * i + 1, v.y);
      f(4 * i + 2, v.z);
      f(4 * i + 3, v.w);
    }
  } else {
    for (int i = threadIdx.x; i < V; i += kSamplingThreads)
      f(i, row[i]);
  }
}

// Float keys for ascending sorts: d >= 0 sorts by its bits; a logit sorts
// descending by the complement of its order-preserving bits.
__device__ __forceinline__ unsigned samplingDescendingKey(float v) {
  const unsigned u = __float_as_uint(v);
  const unsigned ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return ~ordered;
}

// ---------------------------------------------------------------------------
// The parts of a sampled row.

// d of a stored logit.
struct SamplingRowView {
  const float *row;
  int V;
  float invT;
  float zmax;
  __device__ __forceinline__ float distance(float v) const {
    const float z = __fmul_rn(samplingCanonical(v), invT);
    return __fadd_rn(__fsub_rn(zmax, z), 0.0f);
  }
};

// A range of d split into kSamplingBins bins: bin = trunc((d - lo) * scale),
// the last bin also taking everything above (open: no upper bound).
struct SamplingWindow {
  float lo, hi, scale;
  bool open;
  __device__ __forceinline__ bool contains(float d) const {
    return d >= lo && (open || d < hi);
  }
  __device__ __forceinline__ int bin(float d) const {
    const float t = __fmul_rn(__fsub_rn(d, lo), scale);
    return t < static_cast<float>(kSamplingBins - 1) ? static_cast<int>(t)
                                                     : kSamplingBins - 1;
  }
};

__device__ __forceinline__ SamplingWindow samplingLevel1() {
  return {0.0f, 0.0f, 32.0f, true};
}

__device__ __forceinline__ unsigned long long samplingMassOf(float d) {
  return samplingFixedMass(samplingExpNegative(d));
}

// Histogram of the tokens with d in `w` and d <= clip, then its inclusive
// scan in place.
__device__ __forceinline__ void
samplingHistogram(const SamplingRowView &rv, const SamplingWindow &w,
                  float clip, bool withMass, unsigned *cnt,
                  unsigned long long *mass, SamplingShared &sh) {
  cnt[threadIdx.x] = 0;
  mass[threadIdx.x] = 0;
  __syncthreads();
  // Runs of one bin are counted in registers and added once: constant and
  // flat rows would otherwise send every token's atomics to a few addresses
  // (serialised); the crowded tail bin gets its own register pair.
  unsigned lastCount = 0, runCount = 0;
  unsigned long long lastMass = 0, runMass = 0;
  int runBin = -1;
  auto flush = [&] {
    if (runCount != 0) {
      atomicAdd(&cnt[runBin], runCount);
      if (runMass != 0)
        atomicAdd(&mass[runBin], runMass);
    }
  };
  samplingForRow(rv.row, rv.V, [&](int, float v) {
    const float d = rv.distance(v);
    if (!w.contains(d) || d > clip)
      return;
    const int b = w.bin(d);
    const unsigned long long m = withMass ? samplingMassOf(d) : 0;
    if (b == kSamplingBins - 1) {
      ++lastCount;
      lastMass += m;
    } else if (b == runBin) {
      ++runCount;
      runMass += m;
    } else {
      flush();
      runBin = b;
      runCount = 1;
      runMass = m;
    }
  });
  flush();
  if (lastCount != 0)
    atomicAdd(&cnt[kSamplingBins - 1], lastCount);
  if (lastMass != 0)
    atomicAdd(&mass[kSamplingBins - 1], lastMass);
  __syncthreads();
  unsigned long long total;
  const unsigned long long c = cnt[threadIdx.x];
  const unsigned long long m = mass[threadIdx.x];
  const unsigned long long cs = samplingBlockExclusiveScan(c, total, sh) + c;
  const unsigned long long ms = samplingBlockExclusiveScan(m, total, sh) + m;
  cnt[threadIdx.x] = static_cast<unsigned>(cs);
  mass[threadIdx.x] = ms;
  __syncthreads();
}

// Gathers (d bits << 32 | id) of the tokens `pick` accepts into sh.u.cand,
// pads to a power of two with ~0 and sorts; returns the count (callers know
// it is <= kSamplingCandidates).
template <typename Pick>
__device__ __forceinline__ int samplingGather(const SamplingRowView &rv,
                                              Pick pick, SamplingShared &sh,
                                              int *padded) {
  if (threadIdx.x == 0)
    sh.count = 0;
  __syncthreads();
  samplingForRow(rv.row, rv.V, [&](int i, float v) {
    const float d = rv.distance(v);
    if (pick(d)) {
      const int slot = atomicAdd(&sh.count, 1);
      if (slot < kSamplingCandidates)
        sh.u.cand[slot] =
            (static_cast<unsigned long long>(__float_as_uint(d)) << 32) |
            static_cast<unsigned>(i);
    }
  });
  __syncthreads();
  const int n = min(sh.count, kSamplingCandidates);
  const int p = samplingPow2(n);
  for (int j = n + threadIdx.x; j < p; j += kSamplingThreads)
    sh.u.cand[j] = ~0ull;
  __syncthreads();
  samplingSort(sh.u.cand, p);
  *padded = p;
  return n;
}

__device__ __forceinline__ float samplingKeyDistance(unsigned long long key) {
  return __uint_as_float(static_cast<unsigned>(key >> 32));
}

// The exact threshold of one filter when its level-1 bin is too crowded to
// gather: the smallest d such that the weight (count or mass) of the tokens
// with d' <= d and d' <= clip reaches `target`. `massUpTo` gets the mass of
// those tokens (needs the level-1 masses). Tokens with d > clip are
// excluded; clip is +inf or a d whose level-1 bin bounds the search.
__device__ float samplingSearch(const SamplingRowView &rv, bool byMass,
                                unsigned long long target, float clip,
                                bool withMass, unsigned long long *massUpTo,
                                SamplingShared &sh) {
  const SamplingWindow level1 = samplingLevel1();
  int t;
  if (clip == positiveInfinity()) {
    t = byMass ? samplingFirstAtLeast(sh.mass, target, sh)
               : samplingFirstAtLeast(sh.cnt, target, sh);
  } else {
    const int cb = level1.bin(clip);
    t = cb > 0 && sh.mass[cb - 1] >= target
            ? samplingFirstAtLeast(sh.mass, target, sh)
            : cb;
  }
  t = min(t, kSamplingBins - 2); // never the massless tail (see callers)
  unsigned long long aboveCount = t > 0 ? sh.cnt[t - 1] : 0;
  unsigned long long aboveMass = t > 0 ? sh.mass[t - 1] : 0;
  unsigned long long inBin = sh.cnt[t] - aboveCount;
  SamplingWindow w = {__fmul_rn(static_cast<float>(t), 0.03125f),
                      __fmul_rn(static_cast<float>(t + 1), 0.03125f), 32768.0f,
                      false};
  int fineBin = -1;
  for (int level = 2; level <= 3 && inBin > kSamplingCandidates; ++level) {
    samplingHistogram(rv, w, clip, byMass || withMass, sh.u.fine.cnt,
                      sh.u.fine.mass, sh);
    const unsigned long long above = byMass ? aboveMass : aboveCount;
    const int s = byMass
                      ? samplingFirstAtLeast(sh.u.fine.mass, target - above, sh)
                      : samplingFirstAtLeast(sh.u.fine.cnt, target - above, sh);
    const int sb = min(s, kSamplingBins - 1);
    const unsigned long long c0 = sb > 0 ? sh.u.fine.cnt[sb - 1] : 0;
    aboveCount += c0;
    aboveMass += sb > 0 ? sh.u.fine.mass[sb - 1] : 0;
    inBin = sh.u.fine.cnt[sb] - c0;
    __syncthreads();
    if (level == 2) {
      const float lo = w.lo;
      w.lo =
          __fadd_rn(lo, __fmul_rn(static_cast<float>(sb), 3.0517578125e-05f));
      w.hi = __fadd_rn(
          lo, __fmul_rn(static_cast<float>(sb + 1), 3.0517578125e-05f));
      w.scale = 33554432.0f; // 2^25
    } else {
      fineBin = sb;
    }
  }
  auto member = [&](float d) {
    return w.contains(d) && d <= clip && (fineBin < 0 || w.bin(d) == fineBin);
  };
  if (inBin <= kSamplingCandidates) {
    int padded;
    const int n = samplingGather(rv, member, sh, &padded);
    // Walk the sorted members: four consecutive per thread.
    unsigned long long weight[4];
    float dist[4];
    unsigned long long local = 0;
    for (int q = 0; q < 4; ++q) {
      const int j = 4 * threadIdx.x + q;
      dist[q] = j < n ? samplingKeyDistance(sh.u.cand[j]) : positiveInfinity();
      const unsigned long long m = j < n ? samplingMassOf(dist[q]) : 0;
      weight[q] = byMass ? m : (j < n ? 1 : 0);
      local += weight[q];
    }
    unsigned long long total;
    unsigned long long cum = (byMass ? aboveMass : aboveCount) +
                             samplingBlockExclusiveScan(local, total, sh);
    if (threadIdx.x == 0)
      sh.found = -1;
    __syncthreads();
    for (int q = 0; q < 4; ++q) {
      const unsigned long long before = cum;
      cum += weight[q];
      if (4 * threadIdx.x + q < n && cum >= target && before < target)
        sh.found = 4 * threadIdx.x + q;
    }
    __syncthreads();
    const int f = sh.found;
    float delta = f >= 0 ? samplingKeyDistance(sh.u.cand[f])
                         : samplingKeyDistance(sh.u.cand[n - 1]);
    unsigned long long mine = 0;
    for (int q = 0; q < 4; ++q)
      if (4 * threadIdx.x + q < n && dist[q] <= delta)
        mine += samplingMassOf(dist[q]);
    *massUpTo = aboveMass + samplingBlockSum(mine, sh);
    return delta;
  }
  // More than kSamplingCandidates tokens within 2^-25 of each other: they
  // are taken as tied (all kept).
  float dmax = 0.0f;
  int unused = 0;
  unsigned long long mine = 0;
  samplingForRow(rv.row, rv.V, [&](int, float v) {
    const float d = rv.distance(v);
    if (member(d)) {
      dmax = fmaxf(dmax, d);
      mine += samplingMassOf(d);
    }
  });
  samplingBlockArgmax(dmax, unused, sh);
  *massUpTo = aboveMass + samplingBlockSum(mine, sh);
  return dmax;
}

// Draws over the whole row in vocabulary order: the tokens with d <= cut
// and, when minP > 0, exp(-d) >= minP.
__device__ int samplingDrawRow(const SamplingRowView &rv, float cut, float minP,
                               double u, SamplingShared &sh) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int segment =
      ((rv.V + kSamplingWarps - 1) / kSamplingWarps + 127) / 128 * 128;
  const int begin = warp * segment;
  const int end = min(rv.V, begin + segment);
  auto massAt = [&](float v) -> unsigned long long {
    const float d = rv.distance(v);
    if (!(d <= cut))
      return 0;
    const float e = samplingExpNegative(d);
    if (minP > 0.0f && !(e >= minP))
      return 0;
    return samplingFixedMass(e);
  };
  unsigned long long sum = 0;
  if (rv.V % 4 == 0) {
    const float4 *row4 = reinterpret_cast<const float4 *>(rv.row);
    for (int i = begin / 4 + lane; i < end / 4; i += 32) {
      const float4 v = row4[i];
      sum += massAt(v.x) + massAt(v.y) + massAt(v.z) + massAt(v.w);
    }
  } else {
    for (int i = begin + lane; i < end; i += 32)
      sum += massAt(rv.row[i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0)
    sh.redU[warp] = sum;
  if (threadIdx.x == 0)
    sh.found = -1;
  __syncthreads();
  unsigned long long total = 0;
  for (int w = 0; w < kSamplingWarps; ++w)
    total += sh.redU[w];
  const unsigned long long target = samplingDrawTarget(u, total);
  int chosenWarp = kSamplingWarps - 1;
  unsigned long long base = 0;
  for (int w = 0; w < kSamplingWarps; ++w) {
    if (base + sh.redU[w] > target) {
      chosenWarp = w;
      break;
    }
    base += sh.redU[w];
  }
  if (warp == chosenWarp) {
    for (int c = begin; c < end; c += 32) {
      const int i = c + lane;
      const unsigned long long m = i < end ? massAt(rv.row[i]) : 0;
      const unsigned long long incl = samplingWarpInclusiveScan(m);
      const unsigned hit = __ballot_sync(0xffffffffu, base + incl > target);
      if (hit != 0) {
        if (lane == 0)
          sh.found = c + __ffs(hit) - 1;
        break;
      }
      base += __shfl_sync(0xffffffffu, incl, 31);
    }
  }
  __syncthreads();
  const int chosen = sh.found;
  __syncthreads();
  return chosen;
}

// The token of a sampled row (temperature > 0) whose penalized logits are in
// rv.row; `greedy` is its argmax.
__device__ int samplingChoose(const SamplingRowView &rv,
                              const SamplingParams &p, double u,
                              SamplingShared &sh) {
  bool topK = p.top_k > 0 && p.top_k < rv.V;
  const bool topP = p.top_p < 1.0f;
  const bool minP = p.min_p > 0.0f;
  const float inf = positiveInfinity();
  if (!topK && !topP && !minP)
    return samplingDrawRow(rv, inf, 0.0f, u, sh);

  const SamplingWindow level1 = samplingLevel1();
  samplingHistogram(rv, level1, inf, topP, sh.cnt, sh.mass, sh);
  const unsigned long long massAll = sh.mass[kSamplingBins - 1];
  int last = kSamplingBins - 1; // the loosest bin a kept token may be in
  if (topK) {
    last = samplingFirstAtLeast(sh.cnt, p.top_k, sh);
    // A k-th token in the massless tail keeps every token that has mass.
    if (last >= kSamplingBins - 1) {
      topK = false;
      last = kSamplingBins - 1;
    }
  }
  if (!topK && topP)
    last = min(
        samplingFirstAtLeast(sh.mass, samplingTopPTarget(p.top_p, massAll), sh),
        kSamplingBins - 1);
  bool exactK = topK, exactP = topP;
  if (minP && !(topK && topP)) {
    // Tokens with exp(-d) >= minP have d <= -ln(minP); two bins of slack.
    const float t = __fmul_rn(-logf(p.min_p), 32.0f);
    const int minBin =
        t < kSamplingBins - 3 ? static_cast<int>(t) + 2 : kSamplingBins - 1;
    if (minBin < last) {
      last = minBin;
      exactK = exactP = false; // every gathered token passes them
    }
  }

  if (sh.cnt[last] <= kSamplingCandidates) {
    // Fast path: gather every token of bins <= last.
    int padded;
    const int n = samplingGather(
        rv, [&](float d) { return level1.bin(d) <= last; }, sh, &padded);
    const float dk = exactK ? samplingKeyDistance(sh.u.cand[p.top_k - 1]) : inf;
    float dp = inf;
    if (exactP) {
      unsigned long long m[4], local = 0;
      for (int q = 0; q < 4; ++q) {
        const int j = 4 * threadIdx.x + q;
        const float d = j < n ? samplingKeyDistance(sh.u.cand[j]) : inf;
        m[q] = j < n && d <= dk ? samplingMassOf(d) : 0;
        local += m[q];
      }
      unsigned long long massK;
      unsigned long long cum = samplingBlockExclusiveScan(local, massK, sh);
      if (!exactK)
        massK = massAll;
      const unsigned long long target = samplingTopPTarget(p.top_p, massK);
      if (threadIdx.x == 0)
        sh.found = -1;
      __syncthreads();
      for (int q = 0; q < 4; ++q) {
        const unsigned long long before = cum;
        cum += m[q];
        if (4 * threadIdx.x + q < n && cum >= target && before < target)
          sh.found = 4 * threadIdx.x + q;
      }
      __syncthreads();
      if (sh.found >= 0)
        dp = samplingKeyDistance(sh.u.cand[sh.found]);
    }
    const float cut = fminf(dk, dp);
    __syncthreads();
    // Survivors re-keyed by id (id << 32 | d bits), the rest to the end.
    for (int j = threadIdx.x; j < n; j += kSamplingThreads) {
      const unsigned long long key = sh.u.cand[j];
      const float d = samplingKeyDistance(key);
      const bool keep =
          d <= cut && (!minP || samplingExpNegative(d) >= p.min_p);
      sh.u.cand[j] = keep ? (key << 32) | (key >> 32) : ~0ull;
    }
    __syncthreads();
    samplingSort(sh.u.cand, padded);
    unsigned long long m[4], local = 0;
    for (int q = 0; q < 4; ++q) {
      const int j = 4 * threadIdx.x + q;
      const unsigned long long key = j < n ? sh.u.cand[j] : ~0ull;
      m[q] = key != ~0ull
                 ? samplingMassOf(__uint_as_float(static_cast<unsigned>(key)))
                 : 0;
      local += m[q];
    }
    unsigned long long total;
    unsigned long long cum = samplingBlockExclusiveScan(local, total, sh);
    const unsigned long long target = samplingDrawTarget(u, total);
    if (threadIdx.x == 0)
      sh.found = -1;
    __syncthreads();
    for (int q = 0; q < 4; ++q) {
      const unsigned long long before = cum;
      cum += m[q];
      if (cum > target && before <= target)
        sh.found = static_cast<int>(sh.u.cand[4 * threadIdx.x + q] >> 32);
    }
    __syncthreads();
    const int chosen = sh.found;
    __syncthreads();
    return chosen;
  }

  // Slow path: exact thresholds by refinement, then a pass over the row.
  float dk = inf;
  unsigned long long massK = massAll;
  if (topK)
    dk = samplingSearch(rv, false, p.top_k, inf, topP, &massK, sh);
  float dp = inf;
  if (topP) {
    unsigned long long unused;
    dp = samplingSearch(rv, true, samplingTopPTarget(p.top_p, massK), dk, true,
                        &unused, sh);
  }
  return samplingDrawRow(rv, fminf(dk, dp), minP ? p.min_p : 0.0f, u, sh);
}

// Top-n ids of the raw row (most likely first, lower id on ties) and their
// log-probabilities; rawMax and logSum describe the row's log-sum-exp.
__device__ void samplingTopLogprobs(const float *row, int V, int n,
                                    float rawMax, float logSum, int *ids,
                                    float *logprobs, SamplingShared &sh) {
  auto output = [&](int j, int id) {
    ids[j] = id;
    const float l = samplingCanonical(row[id]);
    logprobs[j] = __fsub_rn(__fsub_rn(l, rawMax), logSum);
  };
  // d of the raw logits (temperature 1).
  const SamplingRowView rv = {row, V, 1.0f, rawMax};
  bool gathered = false;
  if (rawMax != negativeInfinity() && rawMax != positiveInfinity()) {
    const SamplingWindow level1 = samplingLevel1();
    samplingHistogram(rv, level1, positiveInfinity(), false, sh.cnt, sh.mass,
                      sh);
    const int last = samplingFirstAtLeast(sh.cnt, n, sh);
    if (sh.cnt[last] <= kSamplingCandidates) {
      if (threadIdx.x == 0)
        sh.count = 0;
      __syncthreads();
      samplingForRow(row, V, [&](int i, float v) {
        if (level1.bin(rv.distance(v)) <= last) {
          const int slot = atomicAdd(&sh.count, 1);
          if (slot < kSamplingCandidates)
            sh.u.cand[slot] = (static_cast<unsigned long long>(
                                   samplingDescendingKey(samplingCanonical(v)))
                               << 32) |
                              static_cast<unsigned>(i);
        }
      });
      __syncthreads();
      const int count = min(sh.count, kSamplingCandidates);
      const int padded = samplingPow2(count);
      for (int j = count + threadIdx.x; j < padded; j += kSamplingThreads)
        sh.u.cand[j] = ~0ull;
      __syncthreads();
      samplingSort(sh.u.cand, padded);
      if (threadIdx.x < n)
        output(threadIdx.x,
               static_cast<int>(sh.u.cand[threadIdx.x] & 0xffffffffull));
      __syncthreads();
      gathered = true;
    }
  }
  if (gathered)
    return;
  // Crowded (many equal logits) or infinite maximum: n passes, each finding
  // the best token after the previous one in (logit desc, id asc) order.
  float prev = positiveInfinity();
  int prevId = -1;
  for (int j = 0; j < n; ++j) {
    float best = negativeInfinity();
    int bestId = 0x7fffffff;
    samplingForRow(row, V, [&](int i, float v) {
      v = samplingCanonical(v);
      const bool after = v < prev || (v == prev && i > prevId);
      if (after && samplingBetter(v, i, best, bestId)) {
        best = v;
        bestId = i;
      }
    });
    samplingBlockArgmax(best, bestId, sh);
    if (threadIdx.x == 0)
      output(j, bestId);
    prev = best;
    prevId = bestId;
  }
}

// The arguments (SamplingArgs, LaunchArgs.h): outIds[r], the chosen token
// of row r (always written); outLogprobs: null, or R log-probabilities of
// the chosen tokens; outTopIds / outTopLogprobs: R x numTop, used when
// numTop > 0; logits: R x V fp32, restored to its input values on return;
// params: R rows, or null for greedy rows; penaltyOffsets: R + 1 CSR
// offsets into penaltyEntries, or null; penaltySaved: scratch of as many
// floats as there are entries.
__global__ void __launch_bounds__(kSamplingThreads)
    sample_rows(const __grid_constant__ SamplingArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  int *const out_ids = args.outIds;
  float *const out_logprobs = args.outLogprobs;
  int *const out_top_ids = args.outTopIds;
  float *const out_top_logprobs = args.outTopLogprobs;
  float *const logits = args.logits;
  const SamplingParams *const params = args.params;
  const int *const penalty_offsets = args.penaltyOffsets;
  const int2 *const penalty_entries = args.penaltyEntries;
  float *const penalty_saved = args.penaltySaved;
  const int rows = args.rows;
  const int V = args.vocab;
  const int num_top = args.numTop;
  __shared__ SamplingShared sh;
  const int r = blockIdx.x;
  if (r >= rows)
    return;
  float *row = logits + static_cast<long long>(r) * V;
  SamplingParams p = {0.0f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0, 0ull, 0, 0};
  if (params != nullptr)
    p = params[r];

  // 1. Logprobs of the raw logits (and their argmax, which is the row's
  // when it has no penalties).
  float rawMax = negativeInfinity(), logSum = 0.0f;
  int rawArgmax = 0x7fffffff;
  const bool raw = out_logprobs != nullptr || num_top > 0;
  if (raw) {
    float m = negativeInfinity(), s = 0.0f;
    int mi = 0x7fffffff;
    samplingForRow(row, V, [&](int i, float v) {
      v = samplingCanonical(v);
      if (v > m) {
        s = m == negativeInfinity() ? 1.0f : s * expf(m - v) + 1.0f;
        m = v;
        mi = i;
      } else {
        if (v != negativeInfinity())
          s += expf(v - m);
        if (v == m && i < mi)
          mi = i;
      }
    });
    rawMax = m;
    rawArgmax = mi;
    samplingBlockArgmax(rawMax, rawArgmax, sh);
    const float scaled = m == negativeInfinity() ? 0.0f : s * expf(m - rawMax);
    logSum = logf(samplingBlockSumF(scaled, sh));
    if (num_top > 0)
      samplingTopLogprobs(
          row, V, num_top, rawMax, logSum,
          out_top_ids + static_cast<long long>(r) * num_top,
          out_top_logprobs + static_cast<long long>(r) * num_top, sh);
  }

  // 2. Logit bias, then penalties, in place (a token may be in both lists:
  // the penalty sees the biased logit).
  int begin = 0, end = 0;
  if (penalty_offsets != nullptr) {
    begin = penalty_offsets[r];
    end = penalty_offsets[r + 1];
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (int e = begin + threadIdx.x; e < end; e += kSamplingThreads) {
      const int2 entry = penalty_entries[e];
      const unsigned bits = static_cast<unsigned>(entry.y);
      const bool bias =
          (static_cast<unsigned>(entry.x) & kSamplingBiasBit) != 0;
      if (bias != (pass == 0))
        continue;
      const int id = static_cast<int>(entry.x & ~kSamplingBiasBit);
      const float v = row[id];
      penalty_saved[e] = v;
      row[id] =
          bias
              ? __fadd_rn(v, __int_as_float(entry.y))
              : samplingPenalized(v, p.repetition_penalty, p.presence_penalty,
                                  p.frequency_penalty,
                                  static_cast<int>(bits & ~kPenaltyInPromptBit),
                                  (bits & kPenaltyInPromptBit) != 0);
    }
    __syncthreads();
  }

  // 3. The token: argmax, then the draw for sampled rows.
  float lmax = rawMax;
  int chosen = rawArgmax;
  if (!raw || end > begin) {
    lmax = negativeInfinity();
    chosen = 0x7fffffff;
    samplingForRow(row, V, [&](int i, float v) {
      v = samplingCanonical(v);
      if (samplingBetter(v, i, lmax, chosen)) {
        lmax = v;
        chosen = i;
      }
    });
    samplingBlockArgmax(lmax, chosen, sh);
  }
  if (p.temperature > 0.0f) {
    const float invT = __frcp_rn(p.temperature);
    const float zmax = __fmul_rn(lmax, invT);
    // 1/T overflowing, or an infinite maximum: the limit is greedy.
    if (invT != positiveInfinity() && zmax != positiveInfinity() &&
        zmax != negativeInfinity()) {
      const SamplingRowView rv = {row, V, invT, zmax};
      chosen = samplingChoose(
          rv, p, samplingUniform(p.seed, static_cast<unsigned>(p.counter)), sh);
    }
  }

  // 4. The raw logits back.
  __syncthreads();
  for (int pass = 1; pass >= 0; --pass) {
    for (int e = begin + threadIdx.x; e < end; e += kSamplingThreads) {
      const unsigned x = static_cast<unsigned>(penalty_entries[e].x);
      if (((x & kSamplingBiasBit) != 0) == (pass == 0))
        row[x & ~kSamplingBiasBit] = penalty_saved[e];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out_ids[r] = chosen;
    if (out_logprobs != nullptr)
      out_logprobs[r] =
          __fsub_rn(__fsub_rn(samplingCanonical(row[chosen]), rawMax), logSum);
  }
}

} // namespace kernels
} // namespace sol

//===- Common.cuh - Helpers shared by Sol's CUDA kernel templates ---------===//
//
// Compiled by both nvcc and NVRTC, so only cuda_bf16.h is included: NVRTC has
// no host standard headers (not even <cstdint>), so sizes use plain int /
// unsigned / long long.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda_bf16.h>

namespace sol {
namespace kernels {

using bf16 = __nv_bfloat16;

// The paged KV cache's block size unless a kernel is told otherwise.
constexpr int kDefaultKvBlockSize = 16;

__host__ __device__ constexpr int constMin(int a, int b) {
  return a < b ? a : b;
}
__host__ __device__ constexpr int constMax(int a, int b) {
  return a > b ? a : b;
}
__host__ __device__ constexpr int ceilDiv(int a, int b) {
  return (a + b - 1) / b;
}
__host__ __device__ constexpr int roundUp(int a, int b) {
  return ceilDiv(a, b) * b;
}
__host__ __device__ constexpr int nextPowerOfTwo(int v) {
  int p = 1;
  while (p < v)
    p *= 2;
  return p;
}
__host__ __device__ constexpr bool isPowerOfTwo(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}

// bf16 <-> fp32. A bf16 is the upper half of an fp32, so widening is a shift.
__device__ __forceinline__ float lowBf16(unsigned pair) {
  return __uint_as_float(pair << 16);
}
__device__ __forceinline__ float highBf16(unsigned pair) {
  return __uint_as_float(pair & 0xffff0000u);
}

// Round-to-nearest-even to bf16 and back: what PyTorch does after every bf16
// op, so kernels reproduce Hugging Face's rounding points with it.
__device__ __forceinline__ float roundToBf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

__device__ __forceinline__ unsigned packBf16Pair(float lo, float hi) {
  unsigned l = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
  unsigned h = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return l | (h << 16);
}

// Eight bf16 values travel as one 16-byte uint4.
__device__ __forceinline__ void unpack8(const uint4 &v, float (&f)[8]) {
  f[0] = lowBf16(v.x);
  f[1] = highBf16(v.x);
  f[2] = lowBf16(v.y);
  f[3] = highBf16(v.y);
  f[4] = lowBf16(v.z);
  f[5] = highBf16(v.z);
  f[6] = lowBf16(v.w);
  f[7] = highBf16(v.w);
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  uint4 v;
  v.x = packBf16Pair(f[0], f[1]);
  v.y = packBf16Pair(f[2], f[3]);
  v.z = packBf16Pair(f[4], f[5]);
  v.w = packBf16Pair(f[6], f[7]);
  return v;
}

__device__ __forceinline__ uint4 load16(const void *p) {
  return *reinterpret_cast<const uint4 *>(p);
}

__device__ __forceinline__ void store16(void *p, const uint4 &v) {
  *reinterpret_cast<uint4 *>(p) = v;
}

// The launch's dynamic shared memory (LaunchDims::sharedBytes), 16-byte
// aligned.
__device__ __forceinline__ unsigned char *dynamicSharedMemory() {
  extern __shared__ __align__(16) unsigned char solDynamicShared[];
  return solDynamicShared;
}

// Read-only load that bypasses L1: weights are read once per launch, so they
// should not evict the activations that every warp re-reads from L1.
__device__ __forceinline__ uint4 loadStreaming16(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// loadStreaming16 as a plain (not .nc) load, which ptxas keeps where the
// source puts it. For the weight loads a kernel issues before
// waitForPredecessor(): ptxas may sink .nc loads below the wait and the norm
// prologue's barriers, and then their latency no longer overlaps the
// predecessor's tail or the prologue (linear_gemv's 1B gate/up projection
// with the norm prologue: 18.7 us became 22.3 us on an H200).
__device__ __forceinline__ uint4 loadStreamingInOrder16(const void *p) {
  uint4 v;
  asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Asks L2 for the line holding p, without waiting or holding a register:
// for data a kernel will read after griddepcontrol.wait.
__device__ __forceinline__ void prefetchL2(const void *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// Asks the copy engine to bring [p, p + bytes) into L2, without waiting or
// holding a register (cp.async.bulk.prefetch, sm_90), in 4 KB pieces spread
// over the block's threads: a linear kernel's whole weight slice requested
// before griddepcontrol.wait streams in while its predecessor (attention,
// say) leaves DRAM idle, however few loads its registers keep in flight.
// p must be 16-byte aligned and bytes a multiple of 16.
__device__ __forceinline__ void prefetchBulkL2(const void *p, long long bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr long long kPiece = 4096;
  const char *base = static_cast<const char *>(p);
  for (long long off = threadIdx.x * kPiece; off < bytes;
       off += blockDim.x * kPiece) {
    const unsigned size = static_cast<unsigned>(min(kPiece, bytes - off));
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(base + off),
                 "r"(size)
                 : "memory");
  }
#endif
}

// Read-only, L1-cached load (ld.global.nc) for data many warps share that
// nothing writes while the step runs: weights, norm weights, the embedding
// table.
__device__ __forceinline__ uint4 loadShared16(const void *p) {
  return __ldg(reinterpret_cast<const uint4 *>(p));
}

// L1-cached load of an activation the previous kernel wrote, after
// waitForPredecessor(). Not ld.global.nc: that promises data no one writes
// while the kernel runs, and under programmatic dependent launch the
// predecessor does, and ptxas may move such loads above griddepcontrol.wait
// (it did for linear_skinny's x without the norm prologue: wrong logits for
// the Llama-3.2-1B shape in 8-token steps). A plain load in asm volatile
// stays behind the wait.
__device__ __forceinline__ uint4 loadActivation16(const void *p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// loadActivation16 for one 32-bit or 16-bit value (ids, routing weights,
// router logits).
__device__ __forceinline__ unsigned loadActivation4(const void *p) {
  unsigned v;
  asm volatile("ld.global.b32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned loadActivation2(const void *p) {
  unsigned short v;
  asm volatile("ld.global.b16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

// Sum over aligned groups of `Width` lanes (Width a power of two <= 32); every
// lane of the warp must take part.
template <int Width> __device__ __forceinline__ float groupSum(float v) {
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <int Width> __device__ __forceinline__ float groupMax(float v) {
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float warpSum(float v) { return groupSum<32>(v); }

// The largest of the warp's 32 values (redux.sync, sm_80+); every lane of
// the warp must take part.
__device__ __forceinline__ unsigned warpMaxU32(unsigned v) {
  return __reduce_max_sync(0xffffffffu, v);
}

// Programmatic dependent launch (sm_90+). The executor launches each step
// kernel with programmatic stream serialization, so a kernel may start while
// its predecessor finishes. Every kernel therefore
//  * calls allowDependentLaunch() first, letting its successor's blocks be
//    scheduled as soon as all of its own blocks are running, and
//  * calls waitForPredecessor() before it reads anything an earlier kernel
//    wrote or writes anything an earlier kernel reads, and reads such data
//    with loads that stay behind the wait (plain loads, loadActivation16,
//    cp.async; not ld.global.nc, which the assembler may move above it). Only
//    work on data no kernel of the step writes may come before it: weights, the
//    step's inputs (copied before its first kernel), and in a decode step the
//    KV cache rows of earlier positions.
// Both are no-ops for launches without the attribute and before sm_90.
__device__ __forceinline__ void allowDependentLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void waitForPredecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Thread-block clusters (sm_90). A launch without a cluster dimension makes
// every block a cluster of one. clusterSync is a barrier over every thread
// of the cluster that orders each block's shared-memory writes before the
// other blocks' reads of them (loadClusterShared: distributed shared
// memory); a block must not exit while another may still read its shared
// memory, so a reading phase ends with clusterSync too.
__device__ __forceinline__ unsigned clusterBlocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
#else
  return 1;
#endif
}
__device__ __forceinline__ unsigned clusterRank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
#else
  return 0;
#endif
}
__device__ __forceinline__ void clusterSync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
#else
  __syncthreads();
#endif
}
// *p in the shared memory of the cluster's block `rank` (p: this block's
// address of the same variable).
__device__ __forceinline__ float loadClusterShared(const float *p,
                                                   unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(local), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];"
               : "=f"(v)
               : "r"(remote)
               : "memory");
  return v;
#else
  return *p;
#endif
}

// What a linear layer does with y = x . W^T (+ b), rounded to bf16 (the
// values of Plan.fbs's Linear `ints[0]`):
//  * kEpilogueNone: out = y;
//  * kEpilogueResidual: out = bf16(out + y): the residual add of a decoder
//    layer, in place on the residual stream (each output element is read and
//    written by the one thread that computes it);
//  * kEpilogueSwiglu: W's rows are interleaved gate/up pairs (2i: gate i,
//    2i + 1: up i), so y holds (g, u) pairs and out[i] = bf16(bf16(silu(g)) *
//    u), half as wide as y;
//  * kEpilogueGeglu: the same with tanh GELU for silu (Gemma's GeGLU).
constexpr int kEpilogueNone = 0;
constexpr int kEpilogueResidual = 1;
constexpr int kEpilogueSwiglu = 2;
constexpr int kEpilogueGeglu = 3;
// Not a plan epilogue: the LM head of a greedy one-row step also keeps the
// row's argmax as an argmaxKey in a zeroed 64-bit word (linear_gemv's `bias`
// argument), so that no argmax launch follows it.
constexpr int kEpilogueArgmax = 4;

// Whether an epilogue pairs (gate, up) columns into one output.
__host__ __device__ constexpr bool isGatedEpilogue(int epilogue) {
  return epilogue == kEpilogueSwiglu || epilogue == kEpilogueGeglu;
}

// A 64-bit key whose unsigned order is Argmax.cuh's: larger values first,
// NaN above everything, ties to the lower index; -0 and +0 are equal. The
// index is 0xffffffff - key's low word.
__device__ __forceinline__ unsigned long long argmaxKey(float v, int index) {
  unsigned bits = v == 0.0f ? 0u : __float_as_uint(v);
  bits =
      v != v ? 0xffffffffu : (bits & 0x80000000u ? ~bits : bits | 0x80000000u);
  return (static_cast<unsigned long long>(bits) << 32) |
         (0xffffffffu - static_cast<unsigned>(index));
}

// The index an argmaxKey holds.
__device__ __forceinline__ int argmaxKeyIndex(unsigned long long key) {
  return static_cast<int>(0xffffffffu - static_cast<unsigned>(key));
}

__device__ __forceinline__ float asFloat(float v) { return v; }
__device__ __forceinline__ float asFloat(bf16 v) { return __bfloat162float(v); }

__device__ __forceinline__ float silu(float g) {
  return g / (1.0f + __expf(-g));
}

// PyTorch's gelu(x, approximate="tanh"): Gemma's gelu_pytorch_tanh.
__device__ __forceinline__ float geluTanh(float x) {
  return 0.5f * x *
         (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// The activation of a gated epilogue's gate: bf16(act(g)).
template <int Epilogue>
__device__ __forceinline__ float gateActivation(float g) {
  static_assert(isGatedEpilogue(Epilogue), "not a gated epilogue");
  if constexpr (Epilogue == kEpilogueGeglu)
    return roundToBf16(geluTanh(g));
  else
    return roundToBf16(silu(g));
}

// Negative infinity without <cmath>/<limits> (unavailable under NVRTC).
__device__ __forceinline__ float negativeInfinity() {
  return __int_as_float(0xff800000);
}

// Online softmax (the attention kernels): scores live in the log2 domain
// (scaled by kLog2e, exponentiated with exp2f), and a running state (max m,
// sum, accumulators) moving to a new max mNew is scaled by softmaxRescale,
// which gives an empty state (m = -inf) weight 0.
constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float softmaxRescale(float m, float mNew) {
  return m == negativeInfinity() ? 0.0f : exp2f(m - mNew);
}

// Attention-logit soft-capping (Gemma 2: softcap * tanh(s / softcap), on
// the scaled score, before the mask) of a score in the log2 domain,
// capLog2 = softcap * kLog2e: capLog2 * tanh(s / capLog2), as
// capLog2 - 2 capLog2 / (1 + 2^(s * 2 kLog2e / capLog2)) with the hardware
// exp2 and reciprocal (absolute error about 1e-7 of capLog2; few registers,
// where tanhf's polynomial cost the decode kernels their occupancy).
// twiceLog2eOverCap = 2 * kLog2e / capLog2. It is monotonic, so the cap of
// a running maximum is the maximum of the capped scores.
__device__ __forceinline__ float softcapScore(float s, float capLog2,
                                              float twiceLog2eOverCap) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(s * twiceLog2eOverCap));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return fmaf(-2.0f * capLog2, r, capLog2);
}

// Attention sinks (gpt-oss): a head's learned logit, one more softmax term
// of no key. sinkLog2 is it in the log2 domain, or -inf for a head without.
__device__ __forceinline__ float sinkLog2Of(const bf16 *sinks, int head) {
  return sinks ? __bfloat162float(sinks[head]) * kLog2e : negativeInfinity();
}

// The factor that normalises the unnormalised output of a softmax state
// (max m, log2 domain; sum l) whose softmax also has the sink term
// 2^sinkLog2 (a finite sinkLog2): both scaled to the larger of m and the
// sink, so that neither overflows.
__device__ __forceinline__ float sinkNormalizer(float m, float l,
                                                float sinkLog2) {
  const float mAll = fmaxf(m, sinkLog2);
  const float c = softmaxRescale(m, mAll);
  return c / (l * c + exp2f(sinkLog2 - mAll));
}

// The merge of the running softmax states of the first `splits` (<= Max)
// blocks of a thread-block cluster, each holding its state at the same
// shared-memory addresses: max m (log2 domain), sum l and one unnormalised
// output acc. Returns the normalised output (0 when nothing was seen), with
// the head's sink in the softmax when sinkLog2 is finite.
template <int Max>
__device__ __forceinline__ float
mergeClusterStates(const float *m, const float *l, const float *acc, int splits,
                   float sinkLog2 = negativeInfinity()) {
  float ms[Max], ls[Max], as[Max];
  float mAll = negativeInfinity();
#pragma unroll
  for (int s = 0; s < Max; ++s) {
    ms[s] = negativeInfinity();
    ls[s] = as[s] = 0.0f;
    if (s < splits) {
      ms[s] = loadClusterShared(m, s);
      ls[s] = loadClusterShared(l, s);
      as[s] = loadClusterShared(acc, s);
    }
    mAll = fmaxf(mAll, ms[s]);
  }
  float lAll = 0.0f, aAll = 0.0f;
#pragma unroll
  for (int s = 0; s < Max; ++s) {
    const float c = softmaxRescale(ms[s], mAll);
    lAll += ls[s] * c;
    aAll += as[s] * c;
  }
  if (sinkLog2 != negativeInfinity())
    return aAll * sinkNormalizer(mAll, lAll, sinkLog2);
  return lAll > 0.0f ? aAll / lAll : 0.0f;
}

} // namespace kernels
} // namespace sol

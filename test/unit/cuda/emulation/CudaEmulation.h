//===- CudaEmulation.h - A CUDA subset for kernels run on the CPU ---------===//
//
// Lets kernels (Sampling.cuh, LinearSkinny.cuh) be compiled as host C++ and
// run on a CPU: each CUDA thread of a block is a std::thread,
// __syncthreads is a barrier over the block, warp shuffles and ballots
// exchange values through per-warp slots between two barriers over the
// warp, shared-memory atomics are __atomic builtins, __shared__ variables
// are function statics and dynamic shared memory is one caller-provided
// buffer (blocks run one after another). The _rn intrinsics are plain float
// operations: compile with -ffp-contract=off. A model of the kernel's
// logic, not of its performance or of the GPU's memory model; slow (a
// barrier wakes 1024 threads), so tests keep rows short.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static

struct EmulatedDim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local EmulatedDim3 threadIdx, blockIdx;
inline EmulatedDim3 gridDim, blockDim;

struct float4 {
  float x, y, z, w;
};
struct float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
struct int2 {
  int x, y;
};
struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __int2float_rn(int v) { return static_cast<float>(v); }
inline unsigned long long __float2ull_rz(float f) {
  return static_cast<unsigned long long>(f);
}
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ull2double_rn(unsigned long long v) {
  return static_cast<double>(v);
}
inline unsigned long long __double2ull_rz(double d) {
  return static_cast<unsigned long long>(d);
}
inline float __int_as_float(int v) { return std::bit_cast<float>(v); }
inline double __longlong_as_double(long long v) {
  return std::bit_cast<double>(v);
}
inline float __uint_as_float(unsigned v) { return std::bit_cast<float>(v); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
inline int __ffs(unsigned x) { return __builtin_ffs(static_cast<int>(x)); }
inline int __popc(unsigned x) { return std::popcount(x); }
// PRMT: result byte i is byte (s >> 4i) & 7 of y:x.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long both = x | static_cast<unsigned long long>(y) << 32;
  unsigned out = 0;
  for (int i = 0; i < 4; ++i)
    out |= static_cast<unsigned>((both >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu)
           << (8 * i);
  return out;
}

// The read-only data cache is only a cache.
template <typename T> T __ldg(const T *p) { return *p; }

template <typename T, typename U> T atomicAdd(T *p, U v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::atomic_ref<T>(*p).fetch_add(static_cast<T>(v));
  else
    return __atomic_fetch_add(p, static_cast<T>(v), __ATOMIC_SEQ_CST);
}

template <typename T> T atomicMax(T *p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old < v &&
         !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST)) {
  }
  return old;
}

namespace cuda_emulation {
inline std::barrier<> *blockBarrier;
inline std::barrier<> *warpBarriers[32];
/// Barriers over each warpgroup (4 warps) of a block of a multiple of 128
/// threads (the wgmma stand-ins).
inline std::barrier<> *warpgroupBarriers[8];
inline unsigned long long slots[32][32];
/// The launch's dynamic shared memory (the caller sizes and sets it).
inline unsigned char *dynamicShared = nullptr;

/// Every lane publishes v; returns lane `src`'s value (or v when !use).
template <typename T> T exchange(T v, int src, bool use) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  slots[warp][lane] = bits;
  warpBarriers[warp]->arrive_and_wait();
  T out = v;
  if (use) {
    const unsigned long long b = slots[warp][src];
    std::memcpy(&out, &b, sizeof(T));
  }
  warpBarriers[warp]->arrive_and_wait();
  return out;
}

/// Runs f() as `blocks` blocks of `threads` threads, one block at a time.
template <typename F> void launch(int blocks, int threads, F f) {
  gridDim.x = static_cast<unsigned>(blocks);
  blockDim.x = static_cast<unsigned>(threads);
  for (int b = 0; b < blocks; ++b) {
    std::barrier<> block(threads);
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    for (int w = 0; w < threads / 32; ++w) {
      warps.push_back(std::make_unique<std::barrier<>>(32));
      warpBarriers[w] = warps.back().get();
    }
    std::vector<std::unique_ptr<std::barrier<>>> warpgroups;
    for (int w = 0; threads % 128 == 0 && w < threads / 128; ++w) {
      warpgroups.push_back(std::make_unique<std::barrier<>>(128));
      warpgroupBarriers[w] = warpgroups.back().get();
    }
    blockBarrier = &block;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t, b] {
        threadIdx.x = static_cast<unsigned>(t);
        blockIdx.x = static_cast<unsigned>(b);
        f();
      });
    for (std::thread &t : pool)
      t.join();
  }
}
} // namespace cuda_emulation

inline void __syncthreads() { cuda_emulation::blockBarrier->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  cuda_emulation::warpBarriers[threadIdx.x / 32]->arrive_and_wait();
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int mask) {
  return cuda_emulation::exchange(v, (threadIdx.x % 32) ^ mask, true);
}
template <typename T> T __shfl_up_sync(unsigned, T v, unsigned delta) {
  const int lane = threadIdx.x % 32;
  return cuda_emulation::exchange(v, lane - static_cast<int>(delta),
                                  lane >= static_cast<int>(delta));
}
template <typename T> T __shfl_down_sync(unsigned, T v, unsigned delta) {
  const int src = threadIdx.x % 32 + static_cast<int>(delta);
  return cuda_emulation::exchange(v, src, src < 32);
}
template <typename T> T __shfl_sync(unsigned, T v, int src) {
  return cuda_emulation::exchange(v, src, true);
}
inline unsigned __ballot_sync(unsigned, int predicate) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  cuda_emulation::slots[warp][lane] = predicate ? 1 : 0;
  cuda_emulation::warpBarriers[warp]->arrive_and_wait();
  unsigned bits = 0;
  for (int i = 0; i < 32; ++i)
    if (cuda_emulation::slots[warp][i])
      bits |= 1u << i;
  cuda_emulation::warpBarriers[warp]->arrive_and_wait();
  return bits;
}

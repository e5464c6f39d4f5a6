//===- Common.cuh - Stand-in for codegen/kernels/Common.cuh on the CPU ----===//
//
// What Sampling.cuh and LinearSkinny.cuh take from Common.cuh, for the CPU
// emulation (CudaEmulation.h); the build copies those kernels beside this
// file. The helpers do what the real ones do, in host C++: bf16 is a
// 16-bit struct rounded to nearest even, 16-byte loads are memcpy, and the
// PTX-only hints (streaming loads, programmatic dependent launch) are plain
// loads and no-ops.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "CudaEmulation.h"

struct __nv_bfloat16 {
  unsigned short bits;
};
inline float __bfloat162float(__nv_bfloat16 v) {
  return std::bit_cast<float>(static_cast<unsigned>(v.bits) << 16);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  unsigned u = std::bit_cast<unsigned>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return {static_cast<unsigned short>((u >> 16) | 0x40u)}; // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<unsigned short>(u >> 16)};
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 v) { return v.bits; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }

namespace sol {
namespace kernels {

using bf16 = __nv_bfloat16;

constexpr int constMin(int a, int b) { return a < b ? a : b; }
constexpr int constMax(int a, int b) { return a > b ? a : b; }
constexpr int ceilDiv(int a, int b) { return (a + b - 1) / b; }
constexpr int roundUp(int a, int b) { return ceilDiv(a, b) * b; }
constexpr bool isPowerOfTwo(int v) { return v > 0 && (v & (v - 1)) == 0; }
constexpr int nextPowerOfTwo(int v) {
  int p = 1;
  while (p < v)
    p *= 2;
  return p;
}

inline float lowBf16(unsigned pair) { return __uint_as_float(pair << 16); }
inline float highBf16(unsigned pair) {
  return __uint_as_float(pair & 0xffff0000u);
}
inline float roundToBf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}
inline unsigned packBf16Pair(float lo, float hi) {
  const unsigned l = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
  const unsigned h = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return l | (h << 16);
}
inline void unpack8(const uint4 &v, float (&f)[8]) {
  f[0] = lowBf16(v.x);
  f[1] = highBf16(v.x);
  f[2] = lowBf16(v.y);
  f[3] = highBf16(v.y);
  f[4] = lowBf16(v.z);
  f[5] = highBf16(v.z);
  f[6] = lowBf16(v.w);
  f[7] = highBf16(v.w);
}
inline uint4 pack8(const float (&f)[8]) {
  return {packBf16Pair(f[0], f[1]), packBf16Pair(f[2], f[3]),
          packBf16Pair(f[4], f[5]), packBf16Pair(f[6], f[7])};
}
inline uint4 load16(const void *p) {
  uint4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store16(void *p, const uint4 &v) { std::memcpy(p, &v, sizeof v); }
inline unsigned char *dynamicSharedMemory() {
  return cuda_emulation::dynamicShared;
}
inline uint4 loadStreaming16(const void *p) { return load16(p); }
inline uint4 loadStreamingInOrder16(const void *p) { return load16(p); }
inline uint4 loadShared16(const void *p) { return load16(p); }
inline uint4 loadActivation16(const void *p) { return load16(p); }
inline unsigned loadActivation4(const void *p) {
  unsigned v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline unsigned loadActivation2(const void *p) {
  unsigned short v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// An L2 prefetch changes no value; the emulation has no L2.
inline void prefetchL2(const void *) {}
inline void prefetchBulkL2(const void *, long long) {}

template <int Width> inline float groupSum(float v) {
  for (int offset = Width / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
inline float warpSum(float v) { return groupSum<32>(v); }
inline unsigned warpMaxU32(unsigned v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = std::max(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
template <int Width> inline float groupMax(float v) {
  for (int offset = Width / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

inline void allowDependentLaunch() {}
inline void waitForPredecessor() {}

constexpr int kEpilogueNone = 0;
constexpr int kEpilogueResidual = 1;
constexpr int kEpilogueSwiglu = 2;
constexpr int kEpilogueGeglu = 3;
constexpr int kEpilogueArgmax = 4;
constexpr bool isGatedEpilogue(int epilogue) {
  return epilogue == kEpilogueSwiglu || epilogue == kEpilogueGeglu;
}
// Common.cuh's key: larger values first, NaN above all, ties to the lower
// index.
inline unsigned long long argmaxKey(float v, int index) {
  unsigned bits = v == 0.0f ? 0u : __float_as_uint(v);
  bits =
      v != v ? 0xffffffffu : (bits & 0x80000000u ? ~bits : bits | 0x80000000u);
  return (static_cast<unsigned long long>(bits) << 32) |
         (0xffffffffu - static_cast<unsigned>(index));
}
inline float asFloat(float v) { return v; }
inline float asFloat(bf16 v) { return __bfloat162float(v); }
inline float silu(float g) { return g / (1.0f + __expf(-g)); }
inline float geluTanh(float x) {
  return 0.5f * x *
         (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
template <int Epilogue> inline float gateActivation(float g) {
  static_assert(isGatedEpilogue(Epilogue), "not a gated epilogue");
  if constexpr (Epilogue == kEpilogueGeglu)
    return roundToBf16(geluTanh(g));
  else
    return roundToBf16(silu(g));
}

inline float negativeInfinity() { return __int_as_float(0xff800000); }

// The online softmax's helpers (the attention kernels), with the host's
// exp2f in place of ex2.approx and a division in place of rcp.approx.
constexpr float kLog2e = 1.4426950408889634f;
inline float softmaxRescale(float m, float mNew) {
  return m == negativeInfinity() ? 0.0f : exp2f(m - mNew);
}
inline float softcapScore(float s, float capLog2, float twiceLog2eOverCap) {
  const float e = exp2f(s * twiceLog2eOverCap);
  return fmaf(-2.0f * capLog2, 1.0f / (1.0f + e), capLog2);
}

} // namespace kernels
} // namespace sol

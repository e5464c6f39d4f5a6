//===- Wgmma.cuh - Stand-in for the wgmma wrappers on the CPU -------------===//
//
// codegen/kernels/Wgmma.cuh for the CPU emulation: a wgmma gathers the 128
// lanes' A registers of its warpgroup into the 64 x 16 matrix by the PTX
// ISA's register layout (that of mma.m16n8k16's A, warp w of the
// warpgroup holding rows 16w..16w+15), reads B (16 x N) from the emulated
// shared memory through the descriptor (no swizzle: the 8 x 8 core matrix
// of columns 8i.. and k 8h.. at start + i * stride + h * leading, a column
// 16 contiguous bytes of 8 k), and computes at once (fence, commit and wait
// do nothing); D in mma's C layout per n8 tile. Written from the ISA's
// description, independently of any kernel; a descriptor with a swizzle
// mode or base offset is refused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

#include <cstdio>
#include <cstdlib>

namespace cuda_emulation {
/// Each lane's a0..a3 during a wgmma, by warpgroup and lane.
inline unsigned wgmmaSlots[8][128][4];
} // namespace cuda_emulation

namespace sol {
namespace kernels {

inline unsigned long long wgmmaDescriptor(unsigned sharedAddr,
                                          unsigned leadingBytes,
                                          unsigned strideBytes) {
  return static_cast<unsigned long long>((sharedAddr & 0x3ffffu) >> 4) |
         static_cast<unsigned long long>(leadingBytes >> 4) << 16 |
         static_cast<unsigned long long>(strideBytes >> 4) << 32;
}
inline void wgmmaFence() {}
inline void wgmmaCommit() {}
template <int Pending> inline void wgmmaWait() {}
inline void asyncSharedFence() {}
inline void wgmmaHold(float &) {}

template <int N>
void wgmmaBf16(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long b,
               int accumulate) {
  using namespace cuda_emulation;
  if ((b >> 49 & 7) != 0 || (b >> 62) != 0) {
    std::fprintf(stderr, "wgmma stand-in: swizzled descriptor\n");
    std::abort();
  }
  const int group = threadIdx.x / 128, local = threadIdx.x % 128;
  for (int i = 0; i < 4; ++i)
    wgmmaSlots[group][local][i] = a[i];
  warpgroupBarriers[group]->arrive_and_wait();
  float A[64][16];
  for (int l = 0; l < 128; ++l) {
    const int w = l / 32, g = l % 32 / 4, q = l % 4;
    for (int i = 0; i < 4; ++i) {
      const unsigned r = wgmmaSlots[group][l][i];
      const int row = 16 * w + g + 8 * (i % 2), col = 2 * q + 8 * (i / 2);
      A[row][col] = lowBf16(r);
      A[row][col + 1] = highBf16(r);
    }
  }
  const unsigned start = static_cast<unsigned>(b & 0x3fff) << 4;
  const unsigned leading = static_cast<unsigned>(b >> 16 & 0x3fff) << 4;
  const unsigned stride = static_cast<unsigned>(b >> 32 & 0x3fff) << 4;
  const int w = local / 32, g = local % 32 / 4, q = local % 4;
  float out[N / 2];
  for (int j = 0; j < N / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * w + g + 8 * (e / 2), col = 8 * j + 2 * q + e % 2;
      float sum = accumulate ? d[4 * j + e] : 0.0f;
      for (int k = 0; k < 16; ++k) {
        unsigned short bits;
        std::memcpy(&bits,
                    dynamicShared + start + col / 8 * stride + k / 8 * leading +
                        col % 8 * 16 + k % 8 * 2,
                    2);
        sum += A[row][k] * __uint_as_float(static_cast<unsigned>(bits) << 16);
      }
      out[4 * j + e] = sum;
    }
  warpgroupBarriers[group]->arrive_and_wait();
  for (int e = 0; e < N / 2; ++e)
    d[e] = out[e];
}

} // namespace kernels
} // namespace sol

//===- TensorCore.cuh - Stand-in for the mma.sync wrappers on the CPU -----===//
//
// codegen/kernels/TensorCore.cuh for the CPU emulation: cp.async copies at
// once into the dynamic shared memory buffer (a "shared address" is an
// offset into it), and mmaBf16 gathers the 32 lanes' fragments into whole
// matrices by the PTX ISA's layouts for mma.m16n8k16 with .bf16 inputs and
// .f32 accumulators, written out here independently of any kernel:
//   A (16 x 16, row-major): register i of lane l holds row g + 8 (i % 2) and
//     columns 2q + 8 (i / 2) + {0, 1};
//   B (16 x 8, column-major): register j holds rows 2q + 8 j + {0, 1} of
//     column g;
//   C, D (16 x 8): element e holds row g + 8 (e / 2), column 2q + e % 2;
// with g = l / 4, q = l % 4 and the lower-numbered element of a pair in
// the low 16 bits of its register.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

namespace cuda_emulation {
/// Each lane's a0..a3, b0, b1, c0..c3 during an mma.
inline unsigned mmaSlots[32][32][10];
} // namespace cuda_emulation

namespace sol {
namespace kernels {

inline unsigned sharedAddress(const void *p) {
  return static_cast<unsigned>(static_cast<const unsigned char *>(p) -
                               cuda_emulation::dynamicShared);
}
inline void copyAsync16(unsigned dst, const void *src, bool valid) {
  unsigned char *to = cuda_emulation::dynamicShared + dst;
  if (valid)
    std::memcpy(to, src, 16);
  else
    std::memset(to, 0, 16);
}
inline void copyAsyncCommit() {}
template <int Pending> inline void copyAsyncWait() {}

inline void mmaBf16(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                    unsigned b1) {
  using namespace cuda_emulation;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned *mine = mmaSlots[warp][lane];
  for (int i = 0; i < 4; ++i)
    mine[i] = a[i];
  mine[4] = b0;
  mine[5] = b1;
  for (int e = 0; e < 4; ++e)
    mine[6 + e] = std::bit_cast<unsigned>(d[e]);
  warpBarriers[warp]->arrive_and_wait();
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, q = l % 4;
    const unsigned *s = mmaSlots[warp][l];
    for (int i = 0; i < 4; ++i) {
      const int row = g + 8 * (i % 2), col = 2 * q + 8 * (i / 2);
      A[row][col] = lowBf16(s[i]);
      A[row][col + 1] = highBf16(s[i]);
    }
    for (int j = 0; j < 2; ++j) {
      const int row = 2 * q + 8 * j;
      B[row][g] = lowBf16(s[4 + j]);
      B[row + 1][g] = highBf16(s[4 + j]);
    }
    for (int e = 0; e < 4; ++e)
      C[g + 8 * (e / 2)][2 * q + e % 2] = std::bit_cast<float>(s[6 + e]);
  }
  warpBarriers[warp]->arrive_and_wait();
  const int g = lane / 4, q = lane % 4;
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * q + e % 2;
    float sum = C[row][col];
    for (int k = 0; k < 16; ++k)
      sum += A[row][k] * B[k][col];
    d[e] = sum;
  }
}

} // namespace kernels
} // namespace sol

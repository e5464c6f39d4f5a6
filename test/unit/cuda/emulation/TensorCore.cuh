//===- TensorCore.cuh - Stand-in for the mma.sync wrappers on the CPU -----===//
//
// codegen/kernels/TensorCore.cuh for the CPU emulation: cp.async copies at
// once into the dynamic shared memory buffer (a "shared address" is an
// offset into it), ldmatrix (plain and .trans) gathers rows by the lanes'
// addresses, and mmaBf16 and mmaE4m3 gather the 32 lanes' fragments into
// whole matrices by the PTX ISA's layouts for mma.m16n8k16 with .bf16
// inputs and mma.m16n8k32 with .e4m3 inputs (.f32 accumulators), written out
// here independently of any kernel.
// With P values to a register (2 bf16, 4 E4M3) and k = 8P:
//   A (16 x k, row-major): register i of lane l holds row g + 8 (i % 2) and
//     columns Pq + (k / 2)(i / 2) + {0, .., P - 1};
//   B (k x 8, column-major): register j holds rows Pq + (k / 2) j + {0, ..,
//     P - 1} of column g;
//   C, D (16 x 8): element e holds row g + 8 (e / 2), column 2q + e % 2;
// with g = l / 4, q = l % 4 and the lower-numbered element in the lower
// bits of its register. E4M3 codes are decoded arithmetically (sign,
// 4-bit exponent biased by 7, 3-bit mantissa, subnormals m * 2^-9).
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

/// ldmatrix .x4: lane l addresses row l % 8 of matrix l / 8 and receives,
/// of each matrix m, the 4 bytes at 4 (l % 4) of row l / 4.
inline void loadMatrixX4(unsigned (&r)[4], unsigned addr) {
  const int lane = threadIdx.x % 32;
  for (int m = 0; m < 4; ++m) {
    const unsigned row = cuda_emulation::exchange(addr, 8 * m + lane / 4, true);
    std::memcpy(&r[m], cuda_emulation::dynamicShared + row + 4 * (lane % 4), 4);
  }
}
template <int Pending> inline void copyAsyncWait() {}

/// ldmatrix .x4 .trans: lane l addresses row l % 8 of matrix l / 8 and
/// receives, of each matrix m, column l / 4's elements of rows 2 (l % 4)
/// and 2 (l % 4) + 1 (the lower in the lower half).
inline void loadMatrixX4Trans(unsigned (&r)[4], unsigned addr) {
  const int lane = threadIdx.x % 32;
  for (int m = 0; m < 4; ++m) {
    unsigned short half[2];
    for (int e = 0; e < 2; ++e) {
      const unsigned row =
          cuda_emulation::exchange(addr, 8 * m + 2 * (lane % 4) + e, true);
      std::memcpy(&half[e],
                  cuda_emulation::dynamicShared + row + 2 * (lane / 4), 2);
    }
    r[m] = half[0] | static_cast<unsigned>(half[1]) << 16;
  }
}

/// d += a . b with P values a register (element e of a register from
/// value(register, e)), the fragment layouts above.
template <int P, typename Value>
void mmaStandIn(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
                Value value) {
  using namespace cuda_emulation;
  constexpr int k = 8 * P;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned *mine = mmaSlots[warp][lane];
  for (int i = 0; i < 4; ++i)
    mine[i] = a[i];
  mine[4] = b0;
  mine[5] = b1;
  for (int e = 0; e < 4; ++e)
    mine[6 + e] = std::bit_cast<unsigned>(d[e]);
  warpBarriers[warp]->arrive_and_wait();
  float A[16][k], B[k][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, q = l % 4;
    const unsigned *s = mmaSlots[warp][l];
    for (int i = 0; i < 4; ++i)
      for (int e = 0; e < P; ++e)
        A[g + 8 * (i % 2)][P * q + k / 2 * (i / 2) + e] = value(s[i], e);
    for (int j = 0; j < 2; ++j)
      for (int e = 0; e < P; ++e)
        B[P * q + k / 2 * j + e][g] = value(s[4 + j], e);
    for (int e = 0; e < 4; ++e)
      C[g + 8 * (e / 2)][2 * q + e % 2] = std::bit_cast<float>(s[6 + e]);
  }
  warpBarriers[warp]->arrive_and_wait();
  const int g = lane / 4, q = lane % 4;
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * q + e % 2;
    float sum = C[row][col];
    for (int i = 0; i < k; ++i)
      sum += A[row][i] * B[i][col];
    d[e] = sum;
  }
}

inline void mmaBf16(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                    unsigned b1) {
  mmaStandIn<2>(d, a, b0, b1, [](unsigned r, int e) {
    return e == 0 ? lowBf16(r) : highBf16(r);
  });
}

inline void mmaE4m3(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                    unsigned b1) {
  mmaStandIn<4>(d, a, b0, b1, [](unsigned r, int e) {
    const unsigned code = (r >> (8 * e)) & 0xffu;
    const int exponent = (code >> 3) & 15, mantissa = code & 7;
    const float magnitude =
        (code & 0x7fu) == 0x7fu ? NAN
        : exponent == 0
            ? std::ldexp(static_cast<float>(mantissa), -9)
            : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
    return code & 0x80u ? -magnitude : magnitude;
  });
}

} // namespace kernels
} // namespace sol

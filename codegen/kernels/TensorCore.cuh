//===- TensorCore.cuh - cp.async, ldmatrix and mma.sync wrappers ----------===//
//
// The PTX the tensor-core kernels share (LinearGemm.cuh, PrefillAttention.cuh):
// asynchronous 16- and 4-byte global->shared copies in commit groups, 8x8 b16
// matrix loads from shared memory (plain and transposed), the m16n8k16 bf16
// mma with fp32 accumulators (sm_80 and newer) and the m16n8k32 E4M3 mma
// with fp32 accumulators (sm_89 and newer; LinearSkinnyQuant.cuh).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

namespace sol {
namespace kernels {

__device__ __forceinline__ unsigned sharedAddress(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte global->shared copy; zero-fills the destination when !valid.
__device__ __forceinline__ void copyAsync16(unsigned dst, const void *src,
                                            bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(src), "r"(valid ? 16 : 0));
}

// 8-byte global->shared copy (through L1); zero-fills when !valid.
__device__ __forceinline__ void copyAsync8(unsigned dst, const void *src,
                                           bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst),
               "l"(src), "r"(valid ? 8 : 0));
}

// 4-byte global->shared copy (through L1); zero-fills when !valid.
__device__ __forceinline__ void copyAsync4(unsigned dst, const void *src,
                                           bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst),
               "l"(src), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void copyAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int Pending> __device__ __forceinline__ void copyAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

__device__ __forceinline__ void loadMatrixX4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, "
               "[%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// ldmatrix .trans: each 8x8 matrix arrives transposed (a row-major [k][n]
// tile in shared memory gives the k-pairs an mma B fragment needs).
__device__ __forceinline__ void loadMatrixX4Trans(unsigned (&r)[4],
                                                  unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
               "{%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a . b for one m16n8k16 tile: bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mmaBf16(float (&d)[4], const unsigned (&a)[4],
                                        unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d += a . b for one m16n8k32 tile: E4M3 inputs, four to a register, fp32
// accumulators. The fragments are m16n8k16 bf16's with four 8-bit values
// where that has two 16-bit ones: a0 = (row g, cols 4q..4q+3),
// a1 = (row g+8, cols 4q..4q+3), a2 and a3 the same at cols 16 + 4q..;
// b0 = (rows 4q..4q+3, col g), b1 = (rows 16 + 4q.., col g); the lowest
// byte holds the lowest column (row of B). sm_89 and newer.
__device__ __forceinline__ void mmaE4m3(float (&d)[4], const unsigned (&a)[4],
                                        unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

} // namespace kernels
} // namespace sol

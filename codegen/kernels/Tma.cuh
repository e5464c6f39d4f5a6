//===- Tma.cuh - Hopper's tensor memory accelerator and mbarriers ---------===//
//
// The bulk tensor copy (TMA, sm_90): one thread asks the copy engine for a
// whole box of a 2-D tensor, global to shared memory, described by a
// tensor map the host encodes (cuTensorMapEncodeTiled: address, sizes,
// strides, box, swizzle; runtime/cuda/TensorMap.h). The copy lands with the
// swizzle wgmma's descriptors expect and counts its bytes on an mbarrier,
// so the threads that wait there need no address arithmetic and no
// registers for the transfer. Elements outside the tensor arrive as zeros
// and still count: a box always completes its full byte count.
//
// mbarriers: a 64-bit shared-memory barrier with an arrival count and a
// transaction (byte) count; a phase completes when both reach zero, and
// waiters name the phase's parity (0 for the first, then alternating).
// A ring of stages uses two a stage: "full" (the producer's one arrival
// with the stage's bytes expected) and "empty" (one arrival per consumer
// warp once the tensor cores have read the stage).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LaunchArgs.h"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

__device__ __forceinline__ void mbarrierInit(unsigned barrier,
                                             unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier),
               "r"(arrivals)
               : "memory");
}
// Makes the initialisations visible to the copy engine and other threads.
__device__ __forceinline__ void mbarrierInitFence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbarrierArriveExpectBytes(unsigned barrier,
                                                          unsigned bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier),
      "r"(bytes)
      : "memory");
}
__device__ __forceinline__ void mbarrierArrive(unsigned barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(barrier)
               : "memory");
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrierWait(unsigned barrier,
                                             unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(barrier), "r"(parity)
                 : "memory");
  } while (!done);
}

// The box of `map` at element coordinates (inner, outer) into shared memory
// at `dst`, its bytes counted on `barrier`.
__device__ __forceinline__ void tmaLoad2d(unsigned dst, const TensorMap &map,
                                          unsigned barrier, int inner,
                                          int outer) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
               "complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
               "l"(reinterpret_cast<unsigned long long>(&map)), "r"(barrier),
               "r"(inner), "r"(outer)
               : "memory");
}

// A barrier over the 128 threads of one warpgroup (id 1..15; 0 is
// __syncthreads').
__device__ __forceinline__ void warpGroupBarrier(int id) {
  asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

// Warp specialization: the producer warpgroup gives registers back, the
// consumers take them (all threads of a warpgroup execute the same one).
template <int Registers> __device__ __forceinline__ void releaseRegisters() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
template <int Registers> __device__ __forceinline__ void claimRegisters() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

} // namespace kernels
} // namespace sol

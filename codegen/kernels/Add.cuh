//===- Add.cuh - Elementwise sum of two activations -----------------------===//
//
// out[t, i] = bf16(a[t, i] + b[t, i]) for T rows of D elements: a residual
// connection the lowering could not fold into the following RMS norm. out may
// alias a. Launch: AddArgs (LaunchArgs.h), ceil(T * D / 8 / 256) blocks of
// 256 threads, 8 outputs per thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kAddThreads = 256;

template <int D>
__global__ void __launch_bounds__(kAddThreads)
    add(const __grid_constant__ AddArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(D % 8 == 0, "add: D must be a multiple of 8");
  bf16 *const out = args.out;
  const bf16 *const a = args.a;
  const bf16 *const b = args.b;
  const int T = args.tokens;
  constexpr int kVecsPerRow = D / 8;
  const long long total = static_cast<long long>(T) * kVecsPerRow;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    float x[8], y[8], o[8];
    unpack8(load16(a + i * 8), x);
    unpack8(load16(b + i * 8), y);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      o[j] = x[j] + y[j];
    store16(out + i * 8, pack8(o));
  }
}

} // namespace kernels
} // namespace sol

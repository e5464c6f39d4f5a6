//===- GatherColumns.cuh - Each row's columns in a given order ------------===//
//
// out[t][j] = in[t][columns[j]] for T rows of W bf16 values: the inputs of a
// GPTQ act-order linear, whose weight columns are stored sorted by
// quantization group, put in the same order (sol.gather_columns). The
// column table is no kernel's output and is read before the wait for the
// previous kernel.
// Launch: GatherColumnsArgs (LaunchArgs.h), one block of
// kGatherColumnsThreads threads per row.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kGatherColumnsThreads = 256;

template <int W>
__global__ void __launch_bounds__(kGatherColumnsThreads)
    gather_columns(const __grid_constant__ GatherColumnsArgs args) {
  constexpr int kPerThread = ceilDiv(W, kGatherColumnsThreads);
  allowDependentLaunch();
  int from[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int j = threadIdx.x + i * kGatherColumnsThreads;
    from[i] = j < W ? args.columns[j] : 0;
  }
  waitForPredecessor();
  const int row = blockIdx.x;
  if (row >= args.rows)
    return;
  const bf16 *const in = args.in + static_cast<long long>(row) * W;
  bf16 *const out = args.out + static_cast<long long>(row) * W;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int j = threadIdx.x + i * kGatherColumnsThreads;
    if (j < W)
      out[j] = in[from[i]];
  }
}

} // namespace kernels
} // namespace sol

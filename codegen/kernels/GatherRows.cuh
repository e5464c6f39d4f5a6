//===- GatherRows.cuh - Pick rows of a matrix by index --------------------===//
//
// out[i, :] = in[rows[i], :] for i < n: selects the last token of each
// sequence before the final norm and the LM head. Grid: ceil(n * D / 8 / 256)
// blocks of 256 threads, 16 bytes per thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kGatherRowsThreads = 256;

template <int D>
__global__ void __launch_bounds__(kGatherRowsThreads)
    gather_rows(const __grid_constant__ GatherRowsArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(D % 8 == 0, "gather_rows: D must be a multiple of 8");
  bf16 *const out = args.out;
  const bf16 *const in = args.in;
  const int *const rows = args.indices;
  const int n = args.rows;
  constexpr int kVecsPerRow = D / 8;
  const long long total = static_cast<long long>(n) * kVecsPerRow;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i / kVecsPerRow);
    const int c = static_cast<int>(i % kVecsPerRow);
    const long long src = rows[r];
    store16(out + static_cast<long long>(r) * D + c * 8,
            load16(in + src * D + c * 8));
  }
}

} // namespace kernels
} // namespace sol

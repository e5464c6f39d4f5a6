//===- Embedding.cuh - Token embedding lookup -----------------------------===//
//
// out[t, :] = table[ids[t], :] for t < T. Each thread copies 16 bytes, so the
// grid is ceil(T * D / 8 / 256) blocks of 256 threads. Token ids are
// validated on the host (the tokenizer and the engine own the vocabulary).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"

namespace sol {
namespace kernels {

constexpr int kEmbeddingThreads = 256;

template <int D>
__global__ void __launch_bounds__(kEmbeddingThreads)
    embedding(bf16 *out, const bf16 *table, const int *ids, int T) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(D % 8 == 0, "embedding: D must be a multiple of 8");
  constexpr int kVecsPerRow = D / 8;
  const long long total = static_cast<long long>(T) * kVecsPerRow;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(i / kVecsPerRow);
    const int c = static_cast<int>(i % kVecsPerRow);
    const long long row = ids[t];
    store16(out + static_cast<long long>(t) * D + c * 8,
            loadShared16(table + row * D + c * 8));
  }
}

} // namespace kernels
} // namespace sol

//===- Embedding.cuh - Token embedding lookup -----------------------------===//
//
// out[t, :] = table[ids[t], :] for t < T, times bf16(scale) (rounded after
// the product, as a bf16 model multiplies by its bf16 normalizer) when scale
// is not 1 (Gemma's sqrt(hidden)). Each thread copies 16 bytes, so the grid
// is ceil(T * D / 8 / 256) blocks of 256 threads. Token ids are validated
// on the host (the tokenizer and the engine own the vocabulary).
//
// Chained steps (async scheduling) are queued before the previous step's
// ids reach the host: a negative id -1 - r names row r of the previous
// step's result, read here on the device. That result is either an id array
// (`previousIds`: the argmax or sampling output) or the one-row fused
// LM-head argmax's key (`previousKey`, argmaxKey in Common.cuh). With
// `clearKey` the kernel also clears that key, in place, for the step's own
// LM head (the input copy that clears it otherwise skips it in one-token
// chained steps); the launch is then one block, so that the clear follows
// every read. Longer steps read a copy of the key and clear nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kEmbeddingThreads = 256;

template <int D>
__global__ void __launch_bounds__(kEmbeddingThreads)
    embedding(const __grid_constant__ EmbeddingArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(D % 8 == 0, "embedding: D must be a multiple of 8");
  bf16 *const out = args.out;
  const bf16 *const table = args.table;
  const int *const ids = args.ids;
  const int *const previousIds = args.previousIds;
  unsigned long long *const previousKey = args.previousKey;
  const int T = args.tokens;
  constexpr int kVecsPerRow = D / 8;
  const long long total = static_cast<long long>(T) * kVecsPerRow;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(i / kVecsPerRow);
    const int c = static_cast<int>(i % kVecsPerRow);
    long long row = ids[t];
    if (row < 0)
      row = previousKey != nullptr ? argmaxKeyIndex(*previousKey)
                                   : previousIds[-1 - row];
    uint4 v = loadShared16(table + row * D + c * 8);
    if (args.scale != 1.0f) {
      const float s = roundToBf16(args.scale);
      float x[8];
      unpack8(v, x);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        x[j] *= s;
      v = pack8(x);
    }
    store16(out + static_cast<long long>(t) * D + c * 8, v);
  }
  if (args.clearKey) {
    __syncthreads();
    if (threadIdx.x == 0)
      *previousKey = 0ull;
  }
}

} // namespace kernels
} // namespace sol

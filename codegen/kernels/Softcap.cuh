//===- Softcap.cuh - Soft-capping of float32 logits -----------------------===//
//
// values[i] = cap * tanh(values[i] / cap), in place, over `count` floats:
// Gemma 2's final-logit soft-capping on the LM head's output. Grid-stride,
// kSoftcapThreads threads a block.
//
// Launch: SoftcapArgs (LaunchArgs.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kSoftcapThreads = 256;

__global__ void __launch_bounds__(kSoftcapThreads)
    softcap(const __grid_constant__ SoftcapArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  float *const values = args.values;
  const float cap = args.cap;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < args.count; i += static_cast<long long>(gridDim.x) * blockDim.x)
    values[i] = cap * tanhf(values[i] / cap);
}

} // namespace kernels
} // namespace sol

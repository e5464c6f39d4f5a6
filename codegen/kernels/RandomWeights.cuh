//===- RandomWeights.cuh - The weights of a plan without them, on the GPU -===//
//
// A plan of `solc --load-format dummy` has no weight bytes; the executors
// make seeded random values (runtime/plan/RandomWeights.h). random_weights
// writes them in device memory, so that a 60 GB shape loads in a second
// rather than minutes of host generation and copies: element i of a weight
// is a function of randomWeightBits(seed ^ i) alone, the host's formula
// (fillRandomWeight) with each float operation rounded as the host rounds
// it (no contraction), so both executors hold the same bytes.
//
// Launch: RandomWeightsArgs, 256 threads, grid-stride over `count` elements.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

// splitmix64's finaliser: a counter-based generator.
__host__ __device__ __forceinline__ unsigned long long
randomWeightBits(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__global__ void __launch_bounds__(256)
    random_weights(const __grid_constant__ RandomWeightsArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < args.count;
       i += static_cast<long long>(gridDim.x) * 256) {
    const unsigned long long bits =
        randomWeightBits(args.seed ^ static_cast<unsigned long long>(i));
    // A uniform value in [-1, 1) from 24 bits (exact).
    const float u =
        __fsub_rn(__fmul_rn(__int2float_rn(static_cast<int>(bits & 0xFFFFFF)),
                            1.0f / 8388608.0f),
                  1.0f);
    switch (args.kind) {
    case kRandomBf16Matrix:
      static_cast<bf16 *>(args.out)[i] =
          __float2bfloat16_rn(__fmul_rn(0.02f, u));
      break;
    case kRandomBf16Vector:
      static_cast<bf16 *>(args.out)[i] =
          __float2bfloat16_rn(__fadd_rn(1.0f, __fmul_rn(0.02f, u)));
      break;
    case kRandomF32:
    case kRandomF32AsBf16: {
      const float v = __fmul_rn(0.01f, __fadd_rn(1.0f, __fmul_rn(0.5f, u)));
      if (args.kind == kRandomF32)
        static_cast<float *>(args.out)[i] = v;
      else
        static_cast<bf16 *>(args.out)[i] = __float2bfloat16_rn(v);
      break;
    }
    case kRandomE4m3:
      static_cast<unsigned char *>(args.out)[i] = static_cast<unsigned char>(
          (bits & 1) << 7 | (1 + (bits >> 1) % 7) << 3 | ((bits >> 4) & 7));
      break;
    case kRandomI8:
      static_cast<unsigned char *>(args.out)[i] =
          static_cast<unsigned char>(static_cast<int>(bits % 255) - 127);
      break;
    case kRandomU8:
      static_cast<unsigned char *>(args.out)[i] = 8;
      break;
    default: // kRandomI4
      static_cast<unsigned char *>(args.out)[i] =
          static_cast<unsigned char>(bits & 0xFF);
      break;
    }
  }
}

} // namespace kernels
} // namespace sol

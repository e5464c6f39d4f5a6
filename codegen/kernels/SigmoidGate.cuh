//===- SigmoidGate.cuh - A row scaled by sigmoid(x . w) -------------------===//
//
// out[t] = bf16(bf16(sigmoid(bf16(in[t] . w))) * value[t]) for T rows: the
// gate of Qwen2-MoE's shared expert (a [1, H] linear, its sigmoid, the
// product), rounded where Transformers' bf16 modules round. value and out
// are [T, D], in is [T, H], w is [H]; the dot product sums in float32.
// Launch: SigmoidGateArgs (LaunchArgs.h), one block of kSigmoidGateThreads
// threads per row.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kSigmoidGateThreads = 128;

template <int D, int H>
__global__ void __launch_bounds__(kSigmoidGateThreads)
    sigmoid_gate(const __grid_constant__ SigmoidGateArgs args) {
  static_assert(D % 8 == 0 && H % 8 == 0,
                "sigmoid_gate: widths must be multiples of 8");
  constexpr int kWarps = kSigmoidGateThreads / 32;
  __shared__ float partial[kWarps];
  allowDependentLaunch();
  const int row = blockIdx.x;
  // The weight is no kernel's output: read it before the wait.
  float wv[ceilDiv(H / 8, kSigmoidGateThreads)][8];
#pragma unroll
  for (int i = 0; i < ceilDiv(H / 8, kSigmoidGateThreads); ++i) {
    const int v = threadIdx.x + i * kSigmoidGateThreads;
    if (v < H / 8)
      unpack8(load16(args.weight + v * 8), wv[i]);
  }
  waitForPredecessor();
  if (row >= args.rows)
    return;
  const bf16 *const x = args.in + static_cast<long long>(row) * H;
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < ceilDiv(H / 8, kSigmoidGateThreads); ++i) {
    const int v = threadIdx.x + i * kSigmoidGateThreads;
    if (v < H / 8) {
      float xv[8];
      unpack8(loadActivation16(x + v * 8), xv);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        sum += xv[j] * wv[i][j];
    }
  }
  sum = warpSum(sum);
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = sum;
  __syncthreads();
  float z = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    z += partial[w];
  const float g = roundToBf16(1.0f / (1.0f + __expf(-roundToBf16(z))));
  const long long base = static_cast<long long>(row) * D;
  for (int v = threadIdx.x; v < D / 8; v += kSigmoidGateThreads) {
    float in[8], o[8];
    unpack8(loadActivation16(args.value + base + v * 8), in);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      o[j] = g * in[j];
    store16(args.out + base + v * 8, pack8(o));
  }
}

} // namespace kernels
} // namespace sol

//===- Swiglu.cuh - SwiGLU activation of a fused gate/up projection -------===//
//
// gate_up is [T, 2I]: the gate half then the up half of each row.
// out[t, i] = bf16(bf16(silu(g)) * u), the rounding points of Hugging Face's
// `act_fn(gate_proj(x)) * up_proj(x)` in bf16; with args.geluTanh, GeGLU
// (tanh GELU instead of silu). Grid: ceil(T * I / 8 / 256) blocks of 256
// threads, 8 outputs per thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

constexpr int kSwigluThreads = 256;

template <int I>
__global__ void __launch_bounds__(kSwigluThreads)
    swiglu(const __grid_constant__ SwigluArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(I % 8 == 0, "swiglu: I must be a multiple of 8");
  bf16 *const out = args.out;
  const bf16 *const gate_up = args.gateUp;
  const int T = args.tokens;
  constexpr int kVecsPerRow = I / 8;
  const long long total = static_cast<long long>(T) * kVecsPerRow;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long t = i / kVecsPerRow;
    const int c = static_cast<int>(i % kVecsPerRow);
    const bf16 *row = gate_up + t * (2 * I);
    float g[8], u[8], o[8];
    unpack8(load16(row + c * 8), g);
    unpack8(load16(row + I + c * 8), u);
    if (args.geluTanh) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        o[j] = roundToBf16(geluTanh(g[j])) * u[j];
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        o[j] = roundToBf16(silu(g[j])) * u[j];
    }
    store16(out + t * I + c * 8, pack8(o));
  }
}

// The same for gate_up rows of interleaved pairs (g0, u0, g1, u1, ...): the
// fused gate/up GEMM's output when cuBLASLt ran it without our gated
// epilogue (the weight rows are interleaved, Common.cuh kEpilogueSwiglu and
// kEpilogueGeglu; args.geluTanh for the latter).
template <int I>
__global__ void __launch_bounds__(kSwigluThreads)
    swiglu_pairs(const __grid_constant__ SwigluArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  static_assert(I % 8 == 0, "swiglu_pairs: I must be a multiple of 8");
  bf16 *const out = args.out;
  const bf16 *const gate_up = args.gateUp;
  const int T = args.tokens;
  constexpr int kVecsPerRow = I / 8;
  const long long total = static_cast<long long>(T) * kVecsPerRow;
  for (long long i =
           blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long t = i / kVecsPerRow;
    const int c = static_cast<int>(i % kVecsPerRow);
    const bf16 *pairs = gate_up + t * (2 * I) + c * 16;
    float a[8], b[8], o[8];
    unpack8(load16(pairs), a);
    unpack8(load16(pairs + 8), b);
    if (args.geluTanh) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        o[j] = roundToBf16(geluTanh(a[2 * j])) * a[2 * j + 1];
        o[4 + j] = roundToBf16(geluTanh(b[2 * j])) * b[2 * j + 1];
      }
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        o[j] = roundToBf16(silu(a[2 * j])) * a[2 * j + 1];
        o[4 + j] = roundToBf16(silu(b[2 * j])) * b[2 * j + 1];
      }
    }
    store16(out + t * I + c * 8, pack8(o));
  }
}

} // namespace kernels
} // namespace sol

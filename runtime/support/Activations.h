//===- Activations.h - The gated MLPs' activations, in float ----*- C++ -*-===//
//
// The float32 definitions the CPU executors share (the reference executor,
// calibration's evaluator); codegen/kernels/Swiglu.cuh computes the same.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>

namespace sol {

/// x * sigmoid(x) (SwiGLU's gate).
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

/// PyTorch's gelu(x, approximate="tanh") (Gemma's gelu_pytorch_tanh):
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
inline float geluTanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x *
         (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

} // namespace sol

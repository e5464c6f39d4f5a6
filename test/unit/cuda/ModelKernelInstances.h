//===- ModelKernelInstances.h - Kernels real models instantiate -*- C++ -*-===//
//
// The kernel instantiations that decoding and prefilling the supported model
// shapes (Llama 3.x, Qwen2.5, Qwen3, Mistral, gpt-oss, and the experts of
// Qwen3-30B-A3B and gpt-oss-20b) need, built through the same specs the
// compiler and executor use.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/KernelSpecs.h"

#include <string>
#include <vector>

namespace sol::test {

struct ModelShape {
  std::string name;
  int hidden;
  int intermediate;
  int qHeads;
  int kvHeads;
  int headDim;
  int vocab;
  bool qkvBias;
  bool qkNorm;
};

const std::vector<ModelShape> &supportedModelShapes();

/// Whether the kernel named by `nameExpression`, lowered (mangled) to
/// `lowered`, takes the launch-args struct (codegen/kernels/LaunchArgs.h)
/// that the CUDA executor passes to its family, the check Kernel::launch
/// makes before every launch.
bool takesItsLaunchArgs(const std::string &nameExpression,
                        const std::string &lowered);

/// Every instance the shapes need, without duplicates.
std::vector<cuda::KernelInstance> modelKernelInstances();

} // namespace sol::test

//===- CompileKernels.h - NVRTC-compiles the kernels of a step -*- C++ -*-===//
#pragma once

#include "codegen/plan/PlanEmitter.h"
#include "codegen/step/StepProgram.h"
#include "runtime/cuda/StaticLowering.h"

namespace sol {

struct KernelCompileOptions {
  std::string gpuArch = "sm_90";
  int maxTokensPerStep = 2048;
  /// Longest context a step may attend over (the model's max positions).
  int maxContext = 4096;
  /// The KV-cache layout the attention kernels are instantiated for.
  KvCachePlan kvCache;
  /// Progress line on stderr when it is a terminal.
  bool progress = true;
};

/// Every kernel instance the CUDA executor may launch for `program` (the
/// same selection rules, runtime/cuda/KernelSelection.h), compiled with NVRTC
/// into modules (in parallel, cached on disk). Throws sol::Error when NVRTC
/// or the CUDA headers are missing or a kernel does not compile.
std::vector<CompiledModule> compileKernels(const StepProgram &program,
                                           const KernelCompileOptions &options);

/// The CUDA executor's choices that hold for every step of `program`
/// (recorded in the plan beside the kernels compileKernels makes).
cuda::StaticLowering chooseCudaLowering(const StepProgram &program,
                                        const KernelCompileOptions &options);

} // namespace sol

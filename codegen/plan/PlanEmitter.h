//===- PlanEmitter.h - Writes a compiled model as a plan file ---*- C++ -*-===//
#pragma once

#include "codegen/plan/KvCachePlan.h"
#include "codegen/schedule/Schedule.h"
#include "frontend/import/HfModel.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sol {

/// One NVRTC compilation unit's output and the kernels it holds.
struct CompiledModule {
  std::string arch; // e.g. sm_90
  std::vector<std::byte> cubin;
  std::string ptx;
  struct Kernel {
    std::string expression;  // e.g. sol::kernels::rms_norm<2048>
    std::string loweredName; // the symbol in the cubin
  };
  std::vector<Kernel> kernels;
};

struct PlanOptions {
  std::string compilerVersion;
  std::string commandLine;
  std::string target = "sm_90";
  int64_t maxTokensPerStep = 2048;
  /// The KV-cache layout sol-plan-kv-cache chose (lowerKvCacheLayout).
  KvCachePlan kvCache;
  /// Progress on stderr when it is a terminal.
  bool progress = true;
};

/// Writes `schedule` of `model` to `path`: weights converted to bf16 and
/// stacked into their final layout (256-byte aligned sections), the kernel
/// modules, tokenizer files, generation defaults and the metadata.
/// Throws sol::Error.
void emitPlan(const std::filesystem::path &path, const Schedule &schedule,
              const HfModel &model, const PlanOptions &options,
              const std::vector<CompiledModule> &modules);

} // namespace sol

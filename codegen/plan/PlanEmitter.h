//===- PlanEmitter.h - Writes a compiled model as a plan file ---*- C++ -*-===//
#pragma once

#include "codegen/plan/KvCachePlan.h"
#include "codegen/step/StepProgram.h"
#include "ir/ModelAssets.h"
#include "ir/WeightStore.h"
#include "runtime/cuda/StaticLowering.h"

#include <cstdint>
#include <filesystem>
#include <optional>
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
  /// With kernels: the CUDA executor's per-plan choices (chooseCudaLowering).
  std::optional<cuda::StaticLowering> cudaLowering;
  /// A draft model's plan file, copied into the plan's draft_plan section
  /// (solc --draft; checked against this model by the caller).
  std::filesystem::path draftPlan;
  /// Write no weight bytes (solc --load-format dummy): the runtime fills
  /// the weights with seeded random values (Plan.random_weights).
  bool randomWeights = false;
};

/// Writes `program` to `path`: each weight's bytes copied from `weights`
/// as they are (layouts and dtypes were decided by the passes) into
/// 256-byte aligned sections, the kernel modules, the assets (tokenizer,
/// generation defaults, source configuration) and the metadata. Throws
/// sol::Error.
void emitPlan(const std::filesystem::path &path, const StepProgram &program,
              const WeightStore &weights, const ModelAssets &assets,
              const PlanOptions &options,
              const std::vector<CompiledModule> &modules);

} // namespace sol

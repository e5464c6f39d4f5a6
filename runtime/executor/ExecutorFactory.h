//===- ExecutorFactory.h - Picks and builds an executor for a plan -*- C++
//-*-===//
#pragma once

#include "runtime/executor/Executor.h"
#include "runtime/plan/PlanFile.h"

#include <memory>
#include <string>

namespace sol {

struct ExecutorOptions {
  /// Longest sequence (prompt + output); 0 = the model's maximum.
  int64_t maxModelLen = 0;
  /// Fraction of GPU memory for weights, activations and the KV cache.
  double gpuMemoryUtilization = 0.9;
  /// Launch every step kernel by kernel instead of replaying CUDA graphs.
  bool disableCudaGraphs = false;
  /// Time every op of decode-sized steps with CUDA events (no graphs) and
  /// print a per-op table to stderr when the executor goes (CUDA only).
  bool profileOps = false;
  /// Time every step (GPU time between its first and last command, the
  /// wall time of the step call, the host time between steps) and print a
  /// table by step size to stderr when the executor goes (CUDA only).
  bool profileSteps = false;
  /// Sequences the (CPU) KV cache is sized for.
  int32_t maxSeqs = 1;
  /// Tokens the (GPU) KV cache holds at most (0: all that
  /// gpuMemoryUtilization leaves; never fewer than one maxModelLen
  /// sequence). A draft model's executor, made before the target's, takes
  /// what its sequences need and leaves the rest to the target.
  int64_t maxKvTokens = 0;
};

/// `device` is "cuda", "cpu" or "auto". "cuda" without a usable GPU is an
/// error; "auto" falls back to the CPU reference executor with a warning on
/// stderr. Throws sol::Error.
std::unique_ptr<Executor> makeExecutor(const PlanFile &plan,
                                       const std::string &device,
                                       const ExecutorOptions &options);

} // namespace sol

//===- Bench.h - solrun --bench: offline throughput benchmark ---*- C++ -*-===//
//
// Like `vllm bench throughput` with the random dataset: N requests of random
// prompt ids (from a seeded RNG) are submitted to the engine at once, with
// ignore_eos so each generates exactly its output length, and the engine is
// stepped until all finish. Prints a table, or one JSON object.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/SpeculativeConfig.h"
#include "runtime/executor/ExecutorFactory.h"
#include "tools/common/LengthRange.h"

#include <cstdint>
#include <string>

namespace sol {

class PlanFile;

struct BenchOptions {
  int32_t numPrompts = 256;
  LengthRange inputLen{1024, 1024};
  LengthRange outputLen{128, 128};
  /// Ids every prompt starts with (vLLM's --random-prefix-len).
  int32_t prefixLen = 0;
  int32_t maxNumSeqs = 0;          // 0: the engine's default
  int32_t maxNumBatchedTokens = 0; // 0: the plan's tokens per step
  bool enablePrefixCaching = false;
  /// EngineConfig::asyncScheduling (solrun --async-scheduling on|off).
  bool asyncScheduling = true;
  /// EngineConfig::speculative (solrun --speculative-config).
  SpeculativeConfig speculative;
  /// Requests in flight at most; the next is submitted when one finishes
  /// (vLLM bench's --max-concurrency). 0: all are submitted at the start.
  int32_t maxConcurrency = 0;
  uint64_t seed = 0;
  bool json = false;
};

/// Runs the benchmark on `device` and prints the results. Returns the exit
/// code; throws sol::Error on bad options.
int runBench(const PlanFile &plan, const std::string &device,
             ExecutorOptions executor, const BenchOptions &options);

} // namespace sol

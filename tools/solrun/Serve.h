//===- Serve.h - solrun --serve: the OpenAI-compatible server ----*- C++
//-*-===//
//
// Loads the plan's executor, tokenizer and chat template, starts the engine
// loop and the HTTP server (runtime/server), and serves until SIGINT or
// SIGTERM: then it stops accepting, lets running requests finish within the
// shutdown timeout, aborts the rest and returns 0. See docs/server.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/SpeculativeConfig.h"
#include "runtime/executor/ExecutorFactory.h"

#include <cstdint>
#include <string>

namespace sol {

class PlanFile;

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  /// Empty: the plan file's stem.
  std::string servedModelName;
  int32_t maxNumSeqs = 0;          // 0: the engine's default
  int32_t maxNumBatchedTokens = 0; // 0: the plan's tokens per step
  bool enablePrefixCaching = false;
  /// EngineConfig::asyncScheduling; off by default for a server: under
  /// load it delays the first token of arriving requests (docs/engine.md).
  bool asyncScheduling = false;
  /// EngineConfig::speculative (solrun --speculative-config).
  SpeculativeConfig speculative;
  /// Empty: no authentication.
  std::string apiKey;
  int64_t maxRequestBytes = 8 << 20;
  int32_t maxWaitingRequests = 1024;
  int32_t maxConnections = 1024;
  double shutdownTimeoutS = 30;
  double requestReadTimeoutS = 30;
  double keepAliveTimeoutS = 5;
};

/// Serves until a signal; returns the exit code. Throws sol::Error on bad
/// options or when the address cannot be bound.
int runServe(const PlanFile &plan, const std::string &device,
             ExecutorOptions executor, const ServeOptions &options);

} // namespace sol

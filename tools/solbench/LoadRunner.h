//===- LoadRunner.h - solbench: one level of load ---------------*- C++ -*-===//
//
// A level is a fixed number of requests sent either with a fixed number in
// flight (--concurrency C: C workers, each sends its next request when the
// last one ends) or at a Poisson arrival rate (--request-rate R, optionally
// capped by --max-concurrency), after optional warm-up requests that are
// not counted.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/solbench/OpenAiClient.h"
#include "tools/solbench/Progress.h"

#include <string>
#include <vector>

namespace sol::bench {

struct LevelSpec {
  enum class Kind { Concurrency, Rate };
  Kind kind = Kind::Concurrency;
  int32_t concurrency = 1;    ///< Concurrency: requests in flight
  double rate = 0;            ///< Rate: requests/s; infinity: all at once
  int32_t maxConcurrency = 0; ///< Rate: most requests in flight; 0: no cap
  int32_t numPrompts = 0;
  int32_t warmup = 0;

  /// "concurrency 4", "rate 2.5/s", "rate inf".
  std::string label() const;
  /// Workers (threads, connections) for `n` requests.
  size_t workers(size_t n) const;
};

struct LevelRun {
  LevelSpec spec;
  double durationS = 0; ///< from the first request sent to the last ended
  std::vector<RequestResult> results;
};

/// Arrival times (s from the start) of `n` requests at `rate` per second:
/// the first at 0, then exponentially distributed gaps (a Poisson process).
/// All 0 for an infinite rate.
std::vector<double> arrivalTimes(double rate, size_t n, uint64_t seed,
                                 size_t level);

/// Runs the warm-up requests, then the measured ones, of one level.
LevelRun runLevel(const OpenAiClient &client, const LevelSpec &spec,
                  const std::vector<Prompt> &warmup,
                  const std::vector<Prompt> &prompts, uint64_t seed,
                  size_t level, Progress &progress);

} // namespace sol::bench

//===- Metrics.h - The server's Prometheus metrics ---------------*- C++
//-*-===//
//
// Latency histograms and request counters, filled by the engine loop as
// requests progress, and rendered with a snapshot of the engine's state as
// Prometheus text exposition format 0.0.4 (names prefixed sol_). Thread-safe:
// the engine loop observes, HTTP threads render.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Engine.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sol {

/// A Prometheus histogram: cumulative bucket counts, sum and count.
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  /// The exposition lines for metric `name` (with its HELP and TYPE).
  void render(std::string &out, const std::string &name,
              const std::string &help) const;
  uint64_t count() const { return count_; }

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; // per bucket, not cumulative; +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
public:
  Metrics();

  /// A request's first token, `seconds` after its arrival.
  void observeTtft(double seconds);
  /// The time between two consecutive tokens of a request.
  void observeInterTokenLatency(double seconds);
  /// A request that ended ("stop", "length" or "abort") after `seconds`.
  void observeFinished(const std::string &reason, double e2eSeconds);
  /// An HTTP response with this status.
  void countResponse(int status);

  /// The exposition text: these metrics and the engine's state.
  std::string render(const EngineStats &stats) const;

private:
  mutable std::mutex mutex_;
  Histogram ttft_, interToken_, e2e_;
  std::map<std::string, uint64_t> finished_;
  std::map<int, uint64_t> responses_;
};

} // namespace sol

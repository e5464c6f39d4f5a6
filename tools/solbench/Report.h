//===- Report.h - solbench: figures of a level, table and JSON --*- C++ -*-===//
#pragma once

#include "tools/solbench/LoadRunner.h"
#include "tools/solbench/Stats.h"

#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace sol::bench {

/// The figures of one level.
struct LevelReport {
  LevelSpec spec;
  size_t completed = 0, failed = 0;
  /// Failed requests by reason, e.g. {"HTTP 500 ...: overloaded": 3}.
  std::map<std::string, size_t> failures;
  double durationS = 0;
  int64_t promptTokens = 0, outputTokens = 0; ///< of completed requests
  double requestsPerS = 0, outputTokensPerS = 0, totalTokensPerS = 0;
  /// In milliseconds. TPOT per request: (e2e - TTFT) / (output tokens - 1),
  /// for requests of more than one output token; ITL: every gap between
  /// text chunks of every request.
  Summary ttft, tpot, itl, e2e;
  /// Completed requests whose output differs from what they asked for.
  size_t outputLenMismatches = 0;
  /// Completed requests whose token count came from the server's usage.
  size_t usageReported = 0;
  /// Completed requests that streamed no text at all (a plan without a
  /// tokenizer, say): their TTFT is the time to their first chunk, and they
  /// add no inter-token latency.
  size_t withoutText = 0;
};

/// `asked[i]` is the max_tokens of request i.
LevelReport summarizeLevel(const LevelRun &run,
                           const std::vector<int32_t> &asked);

/// One row per level; the first column is the concurrency or the rate.
void printTable(std::ostream &os, const std::vector<LevelReport> &levels);
/// Failures by reason and other warnings, per level; nothing when none.
void printNotes(std::ostream &os, const std::vector<LevelReport> &levels);

/// A level's figures as JSON.
nlohmann::ordered_json levelJson(const LevelReport &level);
/// Per-request figures of a level (for --save-detailed).
nlohmann::ordered_json requestsJson(const LevelRun &run);

/// Decimal text of `v` with `digits` after the point ("12.35").
std::string fixed(double v, int digits);

} // namespace sol::bench

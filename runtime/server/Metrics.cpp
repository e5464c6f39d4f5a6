//===- Metrics.cpp - The server's Prometheus metrics ----------------------===//
#include "runtime/server/Metrics.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sol {

namespace {

/// Numbers as Prometheus reads them: integers as integers, others in the
/// shortest form that reads back the same, +Inf.
std::string number(double v) {
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v))
    return "NaN";
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

void header(std::string &out, const std::string &name, const std::string &help,
            const char *type) {
  out += cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void scalar(std::string &out, const std::string &name, const std::string &help,
            const char *type, double value) {
  header(out, name, help, type);
  out += cat(name, " ", number(value), "\n");
}

} // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string &out, const std::string &name,
                       const std::string &help) const {
  header(out, name, help, "histogram");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += cat(name, "_bucket{le=\"", number(bounds_[i]), "\"} ", cumulative,
               "\n");
  }
  out += cat(name, "_bucket{le=\"+Inf\"} ", count_, "\n");
  out += cat(name, "_sum ", number(sum_), "\n");
  out += cat(name, "_count ", count_, "\n");
}

// Buckets from 0.5 ms (an H200 decode step) up to minutes (a CPU run or a
// long queue).
Metrics::Metrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06,  0.08,
             0.1,   0.25,  0.5,  0.75, 1.0,  2.5,   5.0,
             7.5,   10.0,  20.0, 40.0, 80.0, 160.0, 640.0}),
      interToken_({0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02,
                   0.025,  0.03,  0.04,   0.05,  0.075,  0.1,  0.15,  0.2,
                   0.3,    0.4,   0.5,    0.75,  1.0,    2.5,  5.0,   10.0}),
      e2e_({0.01, 0.025, 0.05,  0.1,   0.25,  0.5,   1.0,
            2.5,  5.0,   10.0,  15.0,  20.0,  30.0,  40.0,
            50.0, 60.0,  120.0, 240.0, 480.0, 960.0, 1920.0}) {
  for (const char *r : {"stop", "length", "abort"})
    finished_[r] = 0;
}

void Metrics::observeTtft(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::observeInterTokenLatency(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  interToken_.observe(seconds);
}

void Metrics::observeFinished(const std::string &reason, double e2eSeconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finished_[reason];
  e2e_.observe(e2eSeconds);
}

void Metrics::countResponse(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++responses_[status];
}

std::string Metrics::render(const EngineStats &s) const {
  std::string out;
  scalar(out, "sol_num_requests_running",
         "Requests in the running batch (their KV cache is allocated).",
         "gauge", s.numRunning);
  scalar(out, "sol_num_requests_waiting",
         "Requests waiting to be scheduled, preempted ones included.", "gauge",
         s.numWaiting);
  scalar(out, "sol_num_requests_swapped",
         "Requests swapped to CPU memory: always 0, Sol preempts by "
         "recomputing the KV cache instead of swapping it.",
         "gauge", 0);
  scalar(
      out, "sol_kv_cache_usage_perc",
      "Fraction of KV-cache blocks held by running requests (0 to 1).", "gauge",
      s.kvBlocksTotal ? double(s.kvBlocksUsed) / double(s.kvBlocksTotal) : 0.0);
  scalar(out, "sol_kv_cache_blocks_used",
         "KV-cache blocks held by running requests.", "gauge", s.kvBlocksUsed);
  scalar(out, "sol_kv_cache_blocks_cached",
         "KV-cache blocks held by the prefix cache only (reusable, evictable).",
         "gauge", s.kvBlocksCached);
  scalar(out, "sol_kv_cache_blocks_total", "KV-cache blocks in all.", "gauge",
         s.kvBlocksTotal);
  scalar(out, "sol_prefix_cache_queries_total",
         "Prompt tokens looked up in the prefix cache.", "counter",
         double(s.prefixCacheQueries));
  scalar(out, "sol_prefix_cache_hits_total",
         "Prompt tokens found in the prefix cache.", "counter",
         double(s.prefixCacheHits));
  scalar(out, "sol_prefix_cache_hit_rate",
         "Prefix-cache hits over queries since start (0 to 1).", "gauge",
         s.prefixCacheQueries
             ? double(s.prefixCacheHits) / double(s.prefixCacheQueries)
             : 0.0);
  scalar(out, "sol_spec_decode_num_drafts_total",
         "Decode steps of a request that carried speculative tokens.",
         "counter", double(s.specDrafts));
  scalar(out, "sol_spec_decode_num_draft_tokens_total",
         "Speculative tokens proposed.", "counter",
         double(s.specProposedTokens));
  scalar(out, "sol_spec_decode_num_accepted_tokens_total",
         "Speculative tokens accepted (equal to the token drawn there).",
         "counter", double(s.specAcceptedTokens));
  scalar(out, "sol_num_preemptions_total",
         "Requests preempted (KV cache released, recomputed later).", "counter",
         double(s.numPreemptions));
  scalar(out, "sol_prompt_tokens_total",
         "Prompt tokens of the requests accepted.", "counter",
         double(s.promptTokens));
  scalar(out, "sol_generation_tokens_total", "Tokens generated.", "counter",
         double(s.generatedTokens));
  std::lock_guard<std::mutex> lock(mutex_);
  header(out, "sol_request_success_total",
         "Requests finished, by finish reason (abort: cancelled by a client "
         "disconnect or at shutdown).",
         "counter");
  for (const auto &[reason, n] : finished_)
    out += cat("sol_request_success_total{finished_reason=\"", reason, "\"} ",
               n, "\n");
  ttft_.render(out, "sol_time_to_first_token_seconds",
               "Time from a request's arrival to its first token.");
  interToken_.render(out, "sol_time_per_output_token_seconds",
                     "Time between consecutive tokens of a request "
                     "(inter-token latency).");
  e2e_.render(out, "sol_e2e_request_latency_seconds",
              "Time from a request's arrival to its end.");
  header(out, "sol_http_responses_total",
         "HTTP responses of the API, by status code.", "counter");
  for (const auto &[code, n] : responses_)
    out += cat("sol_http_responses_total{code=\"", code, "\"} ", n, "\n");
  return out;
}

} // namespace sol

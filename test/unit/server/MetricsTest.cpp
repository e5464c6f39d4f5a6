//===- MetricsTest.cpp - Prometheus text of the server's metrics ----------===//
#include "runtime/server/Metrics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

namespace sol {
namespace {

bool hasLine(const std::string &text, const std::string &line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line)
      return true;
  return false;
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Histogram h({0.125, 1.0});
  for (double v : {0.0625, 0.125, 0.5, 2.0})
    h.observe(v);
  std::string out;
  h.render(out, "x_seconds", "help text");
  EXPECT_EQ(out, "# HELP x_seconds help text\n"
                 "# TYPE x_seconds histogram\n"
                 "x_seconds_bucket{le=\"0.125\"} 2\n"
                 "x_seconds_bucket{le=\"1\"} 3\n"
                 "x_seconds_bucket{le=\"+Inf\"} 4\n"
                 "x_seconds_sum 2.6875\n"
                 "x_seconds_count 4\n");
}

TEST(Metrics, RendersEngineStateAndCounters) {
  Metrics m;
  m.observeTtft(0.02);
  m.observeInterTokenLatency(0.001);
  m.observeFinished("length", 0.5);
  m.observeFinished("stop", 0.25);
  m.observeFinished("stop", 0.25);
  m.countResponse(200);
  m.countResponse(404);
  EngineStats s;
  s.numRunning = 3;
  s.numWaiting = 2;
  s.kvBlocksUsed = 25;
  s.kvBlocksTotal = 100;
  s.prefixCacheQueries = 200;
  s.prefixCacheHits = 50;
  s.promptTokens = 1234;
  s.generatedTokens = 567;
  const std::string text = m.render(s);
  for (const char *line : {
           "sol_num_requests_running 3",
           "sol_num_requests_waiting 2",
           "sol_num_requests_swapped 0",
           "sol_kv_cache_usage_perc 0.25",
           "sol_kv_cache_blocks_used 25",
           "sol_kv_cache_blocks_total 100",
           "sol_prefix_cache_queries_total 200",
           "sol_prefix_cache_hits_total 50",
           "sol_prefix_cache_hit_rate 0.25",
           "sol_prompt_tokens_total 1234",
           "sol_generation_tokens_total 567",
           "sol_request_success_total{finished_reason=\"stop\"} 2",
           "sol_request_success_total{finished_reason=\"length\"} 1",
           "sol_request_success_total{finished_reason=\"abort\"} 0",
           "sol_time_to_first_token_seconds_count 1",
           "sol_time_per_output_token_seconds_bucket{le=\"0.001\"} 1",
           "sol_e2e_request_latency_seconds_count 3",
           "sol_http_responses_total{code=\"404\"} 1",
           "# TYPE sol_num_requests_swapped gauge",
           "# TYPE sol_generation_tokens_total counter",
       })
    EXPECT_TRUE(hasLine(text, line)) << line << "\n" << text;
  // Every sample line belongs to a metric with a TYPE.
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l[0] == '#')
      continue;
    std::string name = l.substr(0, l.find_first_of("{ "));
    for (const char *suffix : {"_bucket", "_sum", "_count"})
      if (name.size() > strlen(suffix) &&
          name.compare(name.size() - strlen(suffix), strlen(suffix), suffix) ==
              0 &&
          text.find("# TYPE " + name + " ") == std::string::npos)
        name = name.substr(0, name.size() - strlen(suffix));
    EXPECT_NE(text.find("# TYPE " + name + " "), std::string::npos) << l;
  }
}

} // namespace
} // namespace sol

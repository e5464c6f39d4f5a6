//===- ReportTest.cpp - Level figures, the table, the HTML, arrivals ------===//
#include "tools/solbench/Report.h"
#include "tools/solbench/HtmlReport.h"
#include "tools/solbench/LoadRunner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

using namespace sol::bench;

namespace {

RequestResult ok(double ttft, double e2e, int64_t out,
                 std::vector<double> itl = {}) {
  RequestResult r;
  r.ok = true;
  r.ttftMs = ttft;
  r.e2eMs = e2e;
  r.outputTokens = out;
  r.promptTokens = 10;
  r.itlMs = std::move(itl);
  r.usageReported = true;
  r.textChunks = out;
  return r;
}

RequestResult failed(const std::string &why) {
  RequestResult r;
  r.error = why;
  return r;
}

LevelRun sampleRun() {
  LevelRun run;
  run.spec.kind = LevelSpec::Kind::Concurrency;
  run.spec.concurrency = 4;
  run.spec.numPrompts = 6;
  run.durationS = 2.0;
  run.results = {ok(100, 1000, 10, {100, 100}),
                 ok(200, 2000, 10),
                 ok(50, 50, 1),
                 failed("HTTP 500: boom"),
                 failed("HTTP 500: boom"),
                 failed("timed out")};
  return run;
}

int count(const std::string &s, const std::string &what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
    ++n;
  return n;
}

} // namespace

TEST(Report, SummarizeLevel) {
  const LevelReport r = summarizeLevel(sampleRun(), {10, 10, 4, 10, 10, 10});
  EXPECT_EQ(r.completed, 3u);
  EXPECT_EQ(r.failed, 3u);
  EXPECT_EQ(r.failures.at("HTTP 500: boom"), 2u);
  EXPECT_EQ(r.failures.at("timed out"), 1u);
  EXPECT_EQ(r.outputTokens, 21);
  EXPECT_EQ(r.promptTokens, 30);
  EXPECT_DOUBLE_EQ(r.requestsPerS, 1.5);
  EXPECT_DOUBLE_EQ(r.outputTokensPerS, 10.5);
  EXPECT_DOUBLE_EQ(r.totalTokensPerS, 25.5);
  // TPOT = (e2e - ttft) / (out - 1): 100 and 200; one-token requests have
  // none.
  EXPECT_EQ(r.tpot.count, 2u);
  EXPECT_DOUBLE_EQ(r.tpot.mean, 150);
  EXPECT_EQ(r.ttft.count, 3u);
  EXPECT_DOUBLE_EQ(r.ttft.p50, 100);
  EXPECT_EQ(r.itl.count, 2u);
  EXPECT_EQ(r.outputLenMismatches, 1u); // asked 4, got 1
  EXPECT_EQ(r.usageReported, 3u);
  EXPECT_EQ(r.withoutText, 0u);
}

TEST(Report, RequestsWithoutText) {
  LevelRun run = sampleRun();
  run.results[0].textChunks = 0;
  const LevelReport r = summarizeLevel(run, {});
  EXPECT_EQ(r.withoutText, 1u);
  std::ostringstream notes;
  printNotes(notes, {r});
  EXPECT_NE(notes.str().find("concurrency 4: 1 completed requests streamed no "
                             "text (does the model have a tokenizer?)"),
            std::string::npos)
      << notes.str();
}

TEST(Report, TableAndNotes) {
  const LevelReport r = summarizeLevel(sampleRun(), {});
  std::ostringstream table, notes;
  printTable(table, {r});
  printNotes(notes, {r});
  EXPECT_NE(table.str().find("concurrency"), std::string::npos);
  EXPECT_NE(table.str().find("TTFT (ms)"), std::string::npos);
  // The row: level, ok, failed, time, req/s, out tok/s, total tok/s, ...
  EXPECT_NE(table.str().find("\n4                3      3     2.00     1.50"
                             "       10.5       25.5"),
            std::string::npos)
      << table.str();
  EXPECT_EQ(notes.str(), "concurrency 4: 3 of 6 requests failed:\n"
                         "  2 x HTTP 500: boom\n  1 x timed out\n");
}

TEST(Report, Json) {
  const nlohmann::ordered_json j = levelJson(summarizeLevel(sampleRun(), {}));
  EXPECT_EQ(j["concurrency"], 4);
  EXPECT_EQ(j["completed"], 3);
  EXPECT_EQ(j["failures"]["HTTP 500: boom"], 2);
  EXPECT_EQ(j["tpot_ms"]["mean"], 150.0);
  EXPECT_EQ(j["ttft_ms"]["count"], 3);

  LevelRun none;
  none.spec.kind = LevelSpec::Kind::Rate;
  none.spec.rate = INFINITY;
  none.results = {failed("x")};
  const nlohmann::ordered_json k = levelJson(summarizeLevel(none, {}));
  EXPECT_EQ(k["request_rate"], "inf");
  EXPECT_TRUE(k["ttft_ms"]["mean"].is_null());
}

TEST(Html, ChartsTableAndEscaping) {
  LevelRun two = sampleRun();
  two.spec.concurrency = 16;
  const std::vector<LevelReport> levels = {summarizeLevel(sampleRun(), {}),
                                           summarizeLevel(two, {})};
  nlohmann::ordered_json config;
  config["model"] = "<b>model</b>";
  config["url"] = "http://h/v1";
  const std::string page = htmlReport(config, levels);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(page, "<svg"), 6);
  EXPECT_EQ(count(page, "</svg>"), 6);
  EXPECT_EQ(count(page, "<tr><td>"), 2);
  EXPECT_EQ(page.find("<b>model"), std::string::npos);
  EXPECT_NE(page.find("&lt;b&gt;model&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(page.find("HTTP 500: boom"), std::string::npos);
  // Nothing is fetched: no external references.
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("href="), std::string::npos);
}

TEST(Html, LineChart) {
  const std::string svg =
      svgLineChart("T", "concurrency", "ms", {"1", "4", "16"},
                   {{"p50", {1, 2, NAN}}, {"p99", {3, 4, 5}}});
  EXPECT_EQ(count(svg, "<polyline"), 2);
  EXPECT_EQ(count(svg, "<circle"), 5); // the missing value has no dot
  EXPECT_NE(svg.find("<title>p99 at 16: 5.00</title>"), std::string::npos);
  EXPECT_EQ(htmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST(LoadRunner, PoissonArrivals) {
  const std::vector<double> t = arrivalTimes(50, 20001, 1, 0);
  EXPECT_EQ(t[0], 0);
  for (size_t i = 1; i < t.size(); ++i)
    ASSERT_GE(t[i], t[i - 1]);
  // 20000 gaps of mean 1/50 s.
  EXPECT_NEAR(t.back() / 20000, 0.02, 0.02 * 0.03);
  EXPECT_EQ(arrivalTimes(50, 100, 1, 0), arrivalTimes(50, 100, 1, 0));
  EXPECT_NE(arrivalTimes(50, 100, 1, 0), arrivalTimes(50, 100, 1, 1));
  for (double x : arrivalTimes(INFINITY, 10, 1, 0))
    EXPECT_EQ(x, 0);
}

TEST(LoadRunner, Workers) {
  LevelSpec c;
  c.kind = LevelSpec::Kind::Concurrency;
  c.concurrency = 8;
  EXPECT_EQ(c.workers(100), 8u);
  EXPECT_EQ(c.workers(3), 3u);
  LevelSpec r;
  r.kind = LevelSpec::Kind::Rate;
  r.rate = 5;
  EXPECT_EQ(r.workers(100), 100u);
  r.maxConcurrency = 4;
  EXPECT_EQ(r.workers(100), 4u);
  EXPECT_EQ(r.label(), "rate 5/s");
  EXPECT_EQ(c.label(), "concurrency 8");
}

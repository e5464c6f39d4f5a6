//===- Report.cpp - solbench: figures of a level, table and JSON ----------===//
#include "tools/solbench/Report.h"

#include <cmath>
#include <cstdio>

namespace sol::bench {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

LevelReport summarizeLevel(const LevelRun &run,
                           const std::vector<int32_t> &asked) {
  LevelReport r;
  r.spec = run.spec;
  r.durationS = run.durationS;
  std::vector<double> ttft, tpot, itl, e2e;
  for (size_t i = 0; i < run.results.size(); ++i) {
    const RequestResult &q = run.results[i];
    if (!q.ok) {
      ++r.failed;
      ++r.failures[q.error];
      continue;
    }
    ++r.completed;
    r.promptTokens += q.promptTokens;
    r.outputTokens += q.outputTokens;
    if (q.usageReported)
      ++r.usageReported;
    if (q.textChunks == 0)
      ++r.withoutText;
    if (i < asked.size() && q.outputTokens != asked[i])
      ++r.outputLenMismatches;
    ttft.push_back(q.ttftMs);
    e2e.push_back(q.e2eMs);
    if (q.outputTokens > 1)
      tpot.push_back((q.e2eMs - q.ttftMs) /
                     static_cast<double>(q.outputTokens - 1));
    itl.insert(itl.end(), q.itlMs.begin(), q.itlMs.end());
  }
  if (r.durationS > 0) {
    r.requestsPerS = static_cast<double>(r.completed) / r.durationS;
    r.outputTokensPerS = static_cast<double>(r.outputTokens) / r.durationS;
    r.totalTokensPerS =
        static_cast<double>(r.promptTokens + r.outputTokens) / r.durationS;
  }
  r.ttft = summarize(std::move(ttft));
  r.tpot = summarize(std::move(tpot));
  r.itl = summarize(std::move(itl));
  r.e2e = summarize(std::move(e2e));
  return r;
}

namespace {

std::string levelValue(const LevelSpec &s) {
  if (s.kind == LevelSpec::Kind::Concurrency)
    return std::to_string(s.concurrency);
  return std::isinf(s.rate) ? "inf" : cat(s.rate);
}

std::string cell(const Summary &s, double v) {
  return s.count ? fixed(v, 2) : "-";
}

} // namespace

void printTable(std::ostream &os, const std::vector<LevelReport> &levels) {
  if (levels.empty())
    return;
  const bool rate = levels[0].spec.kind == LevelSpec::Kind::Rate;
  // level | ok failed | time req/s out/s total/s | 4 x (mean p50 p90 p99)
  static const int kWidths[] = {11, 7, 7, 9, 9, 11, 11};
  const int kLatencyWidth = 9;
  char buf[512];
  auto row = [&](const std::vector<std::string> &cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      const bool latency = i >= std::size(kWidths);
      if (latency && (i - std::size(kWidths)) % 4 == 0)
        line += "  ";
      std::snprintf(buf, sizeof buf, i == 0 ? "%-*s" : "%*s",
                    latency ? kLatencyWidth : kWidths[i], cells[i].c_str());
      line += buf;
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    os << line << "\n";
  };
  // The group titles, centred over their four latency columns.
  int prefix = 0;
  for (int w : kWidths)
    prefix += w;
  std::string groups(static_cast<size_t>(prefix), ' ');
  for (std::string g : {"TTFT (ms)", "TPOT (ms)", "ITL (ms)", "E2E (ms)"}) {
    const size_t span = 4 * kLatencyWidth;
    const size_t left = (span - g.size() + 1) / 2;
    groups += std::string(2 + left, ' ') + g +
              std::string(span - g.size() - left, ' ');
  }
  while (!groups.empty() && groups.back() == ' ')
    groups.pop_back();
  os << groups << "\n";
  std::vector<std::string> head = {rate ? "rate" : "concurrency",
                                   "ok",
                                   "failed",
                                   "time s",
                                   "req/s",
                                   "out tok/s",
                                   "tot tok/s"};
  for (int g = 0; g < 4; ++g)
    for (const char *p : {"mean", "p50", "p90", "p99"})
      head.push_back(p);
  row(head);
  for (const LevelReport &l : levels) {
    std::vector<std::string> cells = {
        levelValue(l.spec),         std::to_string(l.completed),
        std::to_string(l.failed),   fixed(l.durationS, 2),
        fixed(l.requestsPerS, 2),   fixed(l.outputTokensPerS, 1),
        fixed(l.totalTokensPerS, 1)};
    for (const Summary *s : {&l.ttft, &l.tpot, &l.itl, &l.e2e})
      for (double v : {s->mean, s->p50, s->p90, s->p99})
        cells.push_back(cell(*s, v));
    row(cells);
  }
}

void printNotes(std::ostream &os, const std::vector<LevelReport> &levels) {
  for (const LevelReport &l : levels) {
    if (l.failed) {
      os << l.spec.label() << ": " << l.failed << " of "
         << l.failed + l.completed << " requests failed:\n";
      for (const auto &[reason, n] : l.failures)
        os << "  " << n << " x " << reason << "\n";
    }
    if (l.outputLenMismatches)
      os << l.spec.label() << ": " << l.outputLenMismatches
         << " completed requests returned another number of tokens than "
            "they asked for (the model stopped early: see --ignore-eos)\n";
    if (l.withoutText)
      os << l.spec.label() << ": " << l.withoutText
         << " completed requests streamed no text (does the model have a "
            "tokenizer?): TTFT is the time to their first chunk, and they have "
            "no inter-token latency\n";
  }
}

namespace {

nlohmann::ordered_json summaryJson(const Summary &s) {
  nlohmann::ordered_json j;
  if (!s.count) {
    for (const char *k : {"mean", "p50", "p90", "p99", "min", "max"})
      j[k] = nullptr;
  } else {
    j["mean"] = s.mean;
    j["p50"] = s.p50;
    j["p90"] = s.p90;
    j["p99"] = s.p99;
    j["min"] = s.min;
    j["max"] = s.max;
  }
  j["count"] = s.count;
  return j;
}

} // namespace

nlohmann::ordered_json levelJson(const LevelReport &l) {
  nlohmann::ordered_json j;
  if (l.spec.kind == LevelSpec::Kind::Concurrency) {
    j["concurrency"] = l.spec.concurrency;
  } else {
    // JSON has no infinity: "inf" as vLLM's scripts write it.
    if (std::isinf(l.spec.rate))
      j["request_rate"] = "inf";
    else
      j["request_rate"] = l.spec.rate;
    if (l.spec.maxConcurrency > 0)
      j["max_concurrency"] = l.spec.maxConcurrency;
    else
      j["max_concurrency"] = nullptr;
  }
  j["num_prompts"] = l.spec.numPrompts;
  j["warmup"] = l.spec.warmup;
  j["completed"] = l.completed;
  j["failed"] = l.failed;
  nlohmann::ordered_json failures = nlohmann::ordered_json::object();
  for (const auto &[reason, n] : l.failures)
    failures[reason] = n;
  j["failures"] = failures;
  j["duration_s"] = l.durationS;
  j["prompt_tokens"] = l.promptTokens;
  j["output_tokens"] = l.outputTokens;
  j["requests_per_s"] = l.requestsPerS;
  j["output_tokens_per_s"] = l.outputTokensPerS;
  j["total_tokens_per_s"] = l.totalTokensPerS;
  j["ttft_ms"] = summaryJson(l.ttft);
  j["tpot_ms"] = summaryJson(l.tpot);
  j["itl_ms"] = summaryJson(l.itl);
  j["e2e_ms"] = summaryJson(l.e2e);
  j["output_len_mismatches"] = l.outputLenMismatches;
  j["usage_reported"] = l.usageReported;
  j["requests_without_text"] = l.withoutText;
  return j;
}

nlohmann::ordered_json requestsJson(const LevelRun &run) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const RequestResult &q : run.results) {
    nlohmann::ordered_json j;
    j["ok"] = q.ok;
    if (!q.ok)
      j["error"] = q.error;
    j["start_s"] = q.startS;
    j["ttft_ms"] = q.ok ? nlohmann::ordered_json(q.ttftMs) : nullptr;
    j["e2e_ms"] = q.e2eMs;
    j["prompt_tokens"] = q.promptTokens;
    j["output_tokens"] = q.outputTokens;
    j["itl_ms"] = q.itlMs;
    a.push_back(std::move(j));
  }
  return a;
}

} // namespace sol::bench

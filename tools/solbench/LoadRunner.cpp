//===- LoadRunner.cpp - solbench: one level of load -----------------------===//
#include "tools/solbench/LoadRunner.h"

#include <atomic>
#include <cmath>
#include <random>
#include <system_error>
#include <thread>

namespace sol::bench {

namespace {

/// Sends `prompts` with `workers` threads; request i is not sent before
/// `arrivals[i]` seconds (when given). Returns the results in prompt order
/// and the time from start to the last end.
double runBatch(const OpenAiClient &client, const std::vector<Prompt> &prompts,
                const std::vector<double> &arrivals, size_t workers,
                Progress &progress, std::vector<RequestResult> &results) {
  results.assign(prompts.size(), RequestResult());
  std::atomic<size_t> next{0};
  const Clock::time_point start = Clock::now();
  auto work = [&] {
    for (size_t i = next++; i < prompts.size(); i = next++) {
      if (!arrivals.empty())
        std::this_thread::sleep_until(
            start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(arrivals[i])));
      const Clock::time_point sent = Clock::now();
      results[i] = client.run(prompts[i]);
      results[i].startS = std::chrono::duration<double>(sent - start).count();
      progress.requestDone(results[i].ok);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers);
  try {
    for (size_t w = 0; w < workers; ++w)
      threads.emplace_back(work);
  } catch (const std::system_error &e) {
    // Stop the workers already started, then report.
    next = prompts.size();
    for (std::thread &t : threads)
      t.join();
    fail("cannot start ", workers, " request threads (started ", threads.size(),
         "): ", e.what(), "; use a lower --concurrency or --max-concurrency");
  }
  for (std::thread &t : threads)
    t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

std::string LevelSpec::label() const {
  if (kind == Kind::Concurrency)
    return cat("concurrency ", concurrency);
  if (std::isinf(rate))
    return "rate inf";
  return cat("rate ", rate, "/s");
}

size_t LevelSpec::workers(size_t n) const {
  size_t limit = n;
  if (kind == Kind::Concurrency)
    limit = static_cast<size_t>(concurrency);
  else if (maxConcurrency > 0)
    limit = static_cast<size_t>(maxConcurrency);
  return std::max<size_t>(1, std::min(limit, n));
}

std::vector<double> arrivalTimes(double rate, size_t n, uint64_t seed,
                                 size_t level) {
  std::vector<double> t(n, 0.0);
  if (std::isinf(rate))
    return t;
  if (!(rate > 0))
    fail("request rate must be > 0, got ", rate);
  // A generator of its own, so the schedule does not depend on the prompts.
  std::seed_seq seq{static_cast<uint32_t>(seed),
                    static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(level), 0x5eedu};
  std::mt19937_64 rng(seq);
  std::exponential_distribution<double> gap(rate);
  for (size_t i = 1; i < n; ++i)
    t[i] = t[i - 1] + gap(rng);
  return t;
}

LevelRun runLevel(const OpenAiClient &client, const LevelSpec &spec,
                  const std::vector<Prompt> &warmup,
                  const std::vector<Prompt> &prompts, uint64_t seed,
                  size_t level, Progress &progress) {
  LevelRun run;
  run.spec = spec;
  if (!warmup.empty()) {
    std::vector<RequestResult> ignored;
    progress.begin(spec.label() + " (warm-up)", warmup.size());
    runBatch(client, warmup, {}, spec.workers(warmup.size()), progress,
             ignored);
    progress.end();
  }
  std::vector<double> arrivals;
  if (spec.kind == LevelSpec::Kind::Rate && !std::isinf(spec.rate))
    arrivals = arrivalTimes(spec.rate, prompts.size(), seed, level);
  progress.begin(spec.label(), prompts.size());
  run.durationS = runBatch(client, prompts, arrivals,
                           spec.workers(prompts.size()), progress, run.results);
  progress.end();
  return run;
}

} // namespace sol::bench

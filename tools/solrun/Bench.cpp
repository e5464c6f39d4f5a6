//===- Bench.cpp - solrun --bench: offline throughput benchmark -----------===//
#include "tools/solrun/Bench.h"

#include "tools/solrun/DraftModel.h"

#include "runtime/engine/Engine.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <unistd.h>

namespace sol {

namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

} // namespace

int runBench(const PlanFile &file, const std::string &device,
             ExecutorOptions executorOptions, const BenchOptions &opts) {
  if (opts.numPrompts < 1)
    fail("--num-prompts must be >= 1, got ", opts.numPrompts);
  if (opts.prefixLen < 0)
    fail("--prefix-len must be >= 0, got ", opts.prefixLen);
  const fb::Plan &plan = file.plan();
  const int64_t vocab = plan.model()->vocab_size();
  const int64_t longest =
      int64_t(opts.prefixLen) + opts.inputLen.hi + opts.outputLen.hi;
  const int64_t modelMax = plan.model()->max_position_embeddings();
  const int64_t maxModelLen =
      executorOptions.maxModelLen > 0 ? executorOptions.maxModelLen : modelMax;
  if (longest > maxModelLen)
    fail("--bench: the longest request (prefix ", opts.prefixLen, " + input ",
         opts.inputLen.hi, " + output ", opts.outputLen.hi, " = ", longest,
         " tokens) exceeds the maximum model length of ", maxModelLen,
         executorOptions.maxModelLen > 0 ? " (--max-model-len)"
                                         : " (max_position_embeddings)");
  // Size the executor for this workload unless told otherwise.
  if (executorOptions.maxModelLen == 0)
    executorOptions.maxModelLen = longest;
  executorOptions.maxSeqs =
      opts.maxNumSeqs > 0 ? opts.maxNumSeqs : kDefaultMaxNumSeqs;
  // A draft model's executor first: the target's KV cache takes the rest.
  std::optional<DraftModel> draft = openDraftModel(
      opts.speculative, file, device, executorOptions, opts.maxNumSeqs);
  std::unique_ptr<Executor> executor =
      makeExecutor(file, device, executorOptions);
  if (isatty(STDERR_FILENO))
    std::fprintf(stderr, "solrun: %s\n", describeKvCache(*executor).c_str());

  EngineConfig config;
  config.vocabSize = vocab;
  config.maxModelLen = executorOptions.maxModelLen;
  config.maxNumSeqs = opts.maxNumSeqs;
  config.maxNumBatchedTokens = opts.maxNumBatchedTokens;
  config.enablePrefixCaching = opts.enablePrefixCaching;
  config.asyncScheduling = opts.asyncScheduling;
  config.speculative = opts.speculative;
  if (draft)
    draft->attach(config);
  config.seed = opts.seed;
  Engine engine(*executor, config);

  // The workload, all drawn before the clock starts.
  std::mt19937_64 rng(opts.seed);
  auto draw = [&](LengthRange r) {
    return std::uniform_int_distribution<int32_t>(r.lo, r.hi)(rng);
  };
  std::uniform_int_distribution<int32_t> token(0,
                                               static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> prefix(static_cast<size_t>(opts.prefixLen));
  for (int32_t &t : prefix)
    t = token(rng);
  std::vector<Request> requests(static_cast<size_t>(opts.numPrompts));
  int64_t promptTokens = 0;
  for (Request &r : requests) {
    r.promptIds = prefix;
    const int32_t n = draw(opts.inputLen);
    for (int32_t i = 0; i < n; ++i)
      r.promptIds.push_back(token(rng));
    r.maxTokens = draw(opts.outputLen);
    r.ignoreEos = true;
    promptTokens += static_cast<int64_t>(r.promptIds.size());
  }

  const auto start = std::chrono::steady_clock::now();
  // TTFT counts from submission, so with --max-concurrency it is the time a
  // request takes once admitted, without the queue in front of it.
  size_t submitted = 0;
  const size_t inFlight = opts.maxConcurrency > 0
                              ? static_cast<size_t>(opts.maxConcurrency)
                              : requests.size();
  auto submitMore = [&](size_t running) {
    while (submitted < requests.size() && running < inFlight) {
      engine.submit(std::move(requests[submitted++]));
      ++running;
    }
  };
  submitMore(0);
  int64_t outputTokens = 0, finished = 0;
  double ttftSum = 0, tpotSum = 0;
  // Each finished request's TTFT by request id (ids count up from the first
  // submission): the median leaves out a first request that fills a prefix
  // cache the others hit.
  std::map<int64_t, double> ttfts;
  int64_t tpotCount = 0;
  while (engine.hasUnfinished()) {
    for (const RequestOutput &o : engine.step()) {
      outputTokens += static_cast<int64_t>(o.newTokenIds.size());
      if (!o.finished)
        continue;
      ++finished;
      submitMore(submitted - static_cast<size_t>(finished));
      ttftSum += o.ttftMs();
      ttfts[o.id] = o.ttftMs();
      if (o.numOutputTokens > 1) {
        tpotSum += o.tpotMs();
        ++tpotCount;
      }
    }
  }
  const double elapsed = seconds(std::chrono::steady_clock::now() - start);
  const EngineStats s = engine.stats();
  const double hitRate =
      s.prefixCacheQueries > 0
          ? double(s.prefixCacheHits) / double(s.prefixCacheQueries)
          : 0.0;
  const double meanTtft = finished ? ttftSum / double(finished) : 0.0;
  std::vector<double> sortedTtfts;
  for (const auto &[id, ms] : ttfts)
    sortedTtfts.push_back(ms);
  std::sort(sortedTtfts.begin(), sortedTtfts.end());
  const size_t n = sortedTtfts.size();
  const double medianTtft =
      n == 0  ? 0.0
      : n % 2 ? sortedTtfts[n / 2]
              : (sortedTtfts[n / 2 - 1] + sortedTtfts[n / 2]) / 2.0;
  const double firstTtft = ttfts.empty() ? 0.0 : ttfts.begin()->second;
  const double meanTpot = tpotCount ? tpotSum / double(tpotCount) : 0.0;
  const int32_t blockSize = executor->blockSize();
  const SchedulerConfig &sched = engine.schedulerConfig();

  if (opts.json) {
    nlohmann::ordered_json j;
    j["device"] = executor->name();
    j["requests"] = finished;
    j["prompt_tokens"] = promptTokens;
    j["output_tokens"] = outputTokens;
    j["elapsed_s"] = elapsed;
    j["requests_per_s"] = double(finished) / elapsed;
    j["output_tokens_per_s"] = double(outputTokens) / elapsed;
    j["total_tokens_per_s"] = double(promptTokens + outputTokens) / elapsed;
    j["peak_kv_blocks_used"] = s.peakKvBlocksUsed;
    j["kv_blocks_total"] = s.kvBlocksTotal;
    j["kv_block_size"] = blockSize;
    j["peak_kv_tokens"] = s.peakKvTokens;
    j["preemptions"] = s.numPreemptions;
    j["prefix_cache_queries"] = s.prefixCacheQueries;
    j["prefix_cache_hits"] = s.prefixCacheHits;
    j["prefix_cache_hit_rate"] = hitRate;
    j["mean_ttft_ms"] = meanTtft;
    j["median_ttft_ms"] = medianTtft;
    j["first_ttft_ms"] = firstTtft;
    j["mean_tpot_ms"] = meanTpot;
    if (opts.speculative.enabled()) {
      j["spec_num_drafts"] = s.specDrafts;
      j["spec_proposed_tokens"] = s.specProposedTokens;
      j["spec_accepted_tokens"] = s.specAcceptedTokens;
      if (opts.speculative.method == SpeculativeConfig::Method::DraftModel)
        j["spec_draft_model_steps"] = s.specDraftModelSteps;
      j["spec_acceptance_rate"] =
          s.specProposedTokens > 0
              ? double(s.specAcceptedTokens) / double(s.specProposedTokens)
              : 0.0;
      // Tokens a speculating step yields for its sequence: the accepted
      // ones and the one drawn after them.
      j["spec_mean_accepted_length"] =
          s.specDrafts > 0
              ? 1.0 + double(s.specAcceptedTokens) / double(s.specDrafts)
              : 0.0;
    }
    j["steps"] = s.numSteps;
    j["computed_tokens"] = s.computedTokens;
    j["config"] = {{"num_prompts", opts.numPrompts},
                   {"input_len", {opts.inputLen.lo, opts.inputLen.hi}},
                   {"output_len", {opts.outputLen.lo, opts.outputLen.hi}},
                   {"prefix_len", opts.prefixLen},
                   {"max_num_seqs", sched.maxNumSeqs},
                   {"max_num_batched_tokens", sched.maxNumBatchedTokens},
                   {"max_model_len", config.maxModelLen},
                   {"enable_prefix_caching", opts.enablePrefixCaching},
                   {"max_concurrency", opts.maxConcurrency},
                   {"seed", opts.seed}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  auto range = [](LengthRange r) {
    return r.lo == r.hi ? std::to_string(r.lo)
                        : std::to_string(r.lo) + ":" + std::to_string(r.hi);
  };
  std::printf("solrun bench on %s: %d prompts, input %s, output %s, prefix "
              "%d, max-num-seqs %d, max-num-batched-tokens %d%s\n",
              executor->name().c_str(), opts.numPrompts,
              range(opts.inputLen).c_str(), range(opts.outputLen).c_str(),
              opts.prefixLen, sched.maxNumSeqs, sched.maxNumBatchedTokens,
              opts.enablePrefixCaching ? ", prefix caching" : "");
  std::printf("  %-24s %lld\n", "requests", static_cast<long long>(finished));
  std::printf("  %-24s %lld\n", "prompt tokens",
              static_cast<long long>(promptTokens));
  std::printf("  %-24s %lld\n", "output tokens",
              static_cast<long long>(outputTokens));
  std::printf("  %-24s %.3f s (%lld steps)\n", "elapsed", elapsed,
              static_cast<long long>(s.numSteps));
  std::printf("  %-24s %.2f\n", "requests/s", double(finished) / elapsed);
  std::printf("  %-24s %.1f\n", "output tokens/s",
              double(outputTokens) / elapsed);
  std::printf("  %-24s %.1f\n", "total tokens/s",
              double(promptTokens + outputTokens) / elapsed);
  std::printf("  %-24s %d / %d blocks (%.1f%%), %lld tokens\n", "peak KV cache",
              s.peakKvBlocksUsed, s.kvBlocksTotal,
              100.0 * s.peakKvBlocksUsed / std::max(1, s.kvBlocksTotal),
              static_cast<long long>(s.peakKvTokens));
  std::printf("  %-24s %lld\n", "preemptions",
              static_cast<long long>(s.numPreemptions));
  std::printf("  %-24s %.1f%% (%lld of %lld prompt tokens)\n",
              "prefix-cache hit rate", 100.0 * hitRate,
              static_cast<long long>(s.prefixCacheHits),
              static_cast<long long>(s.prefixCacheQueries));
  std::printf("  %-24s %.2f ms\n", "mean TTFT", meanTtft);
  std::printf("  %-24s %.2f ms (first request %.2f ms)\n", "median TTFT",
              medianTtft, firstTtft);
  std::printf("  %-24s %.3f ms\n", "mean TPOT", meanTpot);
  if (opts.speculative.enabled())
    std::printf(
        "  %-24s %lld of %lld proposed tokens accepted (%.1f%%), "
        "%.2f tokens per speculating step\n",
        "speculative decoding", static_cast<long long>(s.specAcceptedTokens),
        static_cast<long long>(s.specProposedTokens),
        s.specProposedTokens > 0 ? 100.0 * double(s.specAcceptedTokens) /
                                       double(s.specProposedTokens)
                                 : 0.0,
        s.specDrafts > 0
            ? 1.0 + double(s.specAcceptedTokens) / double(s.specDrafts)
            : 0.0);
  return 0;
}

} // namespace sol

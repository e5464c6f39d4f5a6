//===- ReferenceEngineTest.cpp - The engine on the reference executor -----===//
//
// Hundreds of concurrent greedy requests of random lengths on the tiny
// two-layer model of test/unit/reference, with a KV cache small enough to
// force preemptions: every output must equal the same request run alone
// (a plain loop over its own executor, contiguous blocks), and no block may
// leak. Then the same with prefix caching on and shared prompt prefixes.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"

#include "../reference/TinyModel.h"

#include "runtime/engine/DraftModelProposer.h"
#include "runtime/engine/Generator.h"
#include "runtime/reference/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

using namespace sol;
using namespace sol::test;

namespace {

/// End-of-sequence ids: a few, so that some requests stop early.
const std::vector<int32_t> kEos = {3, 19};

ReferenceExecutor::Options optionsOf(int32_t blocks) {
  ReferenceExecutor::Options o;
  o.numKvBlocks = blocks;
  o.numThreads = 1;
  return o;
}

/// Generation of one request on its own executor: chunked prefill over
/// contiguous blocks 0, 1, ..., then one decode step per token, with the
/// request's sampling row (seed, counter = output index) and penalty tokens
/// when it is not greedy.
class AloneRunner {
public:
  AloneRunner(const PlanFile &plan, int32_t maxLen)
      : ex_(plan, optionsOf((maxLen + 3) / 4)) {
    table_.resize(static_cast<size_t>(ex_.numKvBlocks()));
    std::iota(table_.begin(), table_.end(), 0);
  }

  Finished run(const Request &r) {
    Finished f;
    std::vector<int32_t> tokens = r.promptIds;
    size_t computed = 0;
    for (int32_t n = 1;; ++n) {
      int32_t next = -1;
      while (computed < tokens.size()) {
        const size_t len =
            std::min(tokens.size() - computed,
                     static_cast<size_t>(ex_.maxTokensPerStep()));
        std::vector<int32_t> positions(len), seq(len, 0);
        std::iota(positions.begin(), positions.end(),
                  static_cast<int32_t>(computed));
        const int32_t last = static_cast<int32_t>(len) - 1;
        StepBatch b;
        b.tokens = std::span<const int32_t>(tokens).subspan(computed, len);
        b.positions = positions;
        b.tokenSeq = seq;
        b.logitRows = {&last, 1};
        b.blockTables = table_;
        b.numSeqs = 1;
        b.maxBlocksPerSeq = static_cast<int32_t>(table_.size());
        // The sampling inputs of the last token's row.
        SamplingRow row;
        const SamplingParams &p = r.sampling;
        row.temperature = p.temperature;
        row.topK = p.topK;
        row.topP = p.topP;
        row.minP = p.minP;
        row.repetitionPenalty = p.repetitionPenalty;
        row.presencePenalty = p.presencePenalty;
        row.frequencyPenalty = p.frequencyPenalty;
        row.seed = p.seed.value_or(0);
        row.counter = n - 1;
        std::map<int32_t, std::pair<int32_t, uint8_t>> counts;
        for (int32_t id : r.promptIds)
          counts[id] = {0, 1};
        for (int32_t id : f.ids)
          ++counts.try_emplace(id, 0, 0).first->second.first;
        std::vector<int32_t> offsets = {0}, ids, outCounts;
        std::vector<uint8_t> inPrompt;
        for (const auto &[id, c] : counts) {
          ids.push_back(id);
          outCounts.push_back(c.first);
          inPrompt.push_back(c.second);
        }
        offsets.push_back(static_cast<int32_t>(ids.size()));
        if (!p.greedy() || p.hasPenalties())
          b.sampling = {&row, 1};
        if (p.hasPenalties())
          b.penalties = {offsets, ids, outCounts, inPrompt};
        const int32_t numTop = r.logprobs.value_or(0);
        b.numTopLogprobs = numTop;
        float logprob = 0;
        std::vector<int32_t> topIds(static_cast<size_t>(numTop));
        std::vector<float> topLogprobs(topIds.size());
        StepOutput out;
        out.argmax = {&next, 1};
        if (r.logprobs) {
          out.logprobs = {&logprob, 1};
          out.topIds = topIds;
          out.topLogprobs = topLogprobs;
        }
        ex_.step(b, out);
        computed += len;
        if (computed == tokens.size() && r.logprobs) {
          f.logprobs.push_back(logprob);
          std::vector<TopLogprob> top;
          for (int32_t k = 0; k < numTop; ++k)
            top.push_back({topIds[size_t(k)], topLogprobs[size_t(k)]});
          f.topLogprobs.push_back(std::move(top));
        }
      }
      tokens.push_back(next);
      f.ids.push_back(next);
      const bool eos = !r.ignoreEos &&
                       std::find(kEos.begin(), kEos.end(), next) != kEos.end();
      if (n >= r.minTokens && eos) {
        f.reason = FinishReason::Stop;
        return f;
      }
      if (n >= r.maxTokens) {
        f.reason = FinishReason::Length;
        return f;
      }
    }
  }

private:
  ReferenceExecutor ex_;
  std::vector<int32_t> table_;
};

struct Scenario {
  bool prefixCaching = false;
  bool sharedPrefixes = false;
  uint32_t seed = 1;
  int numRequests = 300;
  int32_t numBlocks = 48; // of 4 tokens
  int32_t maxNumSeqs = 16;
  int32_t maxNumBatchedTokens = 48;
  /// Random sampling parameters (seeded), penalties and logprobs.
  bool sampled = false;
  /// With `sampled`, a third of the requests have penalties (which keep
  /// async scheduling from chaining: they need the last token on the host).
  bool penalties = true;
  /// 0: every request submitted at the start. Else requests are submitted
  /// as others finish, this many unfinished at a time, and async scheduling
  /// (which needs an empty waiting queue) chains most steps.
  int rolling = 0;
  bool asyncScheduling = true;
  /// N-gram speculation (4 tokens, lookup 1..3) on prompts made of a
  /// repeated random segment, so that the lookup finds matches.
  bool speculative = false;
  /// Instead of the n-gram lookup, a draft model proposes (4 tokens): the
  /// target's own weights (most greedy drafts stand) or another, one-layer
  /// model (most are rejected).
  enum class Draft { None, SameModel, OtherModel };
  Draft draft = Draft::None;
  /// Blocks of the draft's KV cache: few, so that some sequences find no
  /// room and decode without drafts.
  int32_t draftBlocks = 64;
};

/// A one-layer model of the tiny model's vocabulary with other weights.
TinyModelConfig otherDraftConfig() {
  TinyModelConfig c;
  c.layers = 1;
  c.slidingWindow = {0};
  c.seed = 7;
  return c;
}

void runScenario(const Scenario &sc) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  const int32_t vocab = static_cast<int32_t>(model.config().vocab);
  const int32_t maxLen = 64;

  std::mt19937 rng(sc.seed);
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 8; ++i)
    prefixes.push_back(randomIds(rng, size_t(uniform(rng, 4, 24)), vocab));
  std::vector<Request> requests;
  for (int i = 0; i < sc.numRequests; ++i) {
    Request r;
    if (sc.sharedPrefixes)
      r.promptIds = prefixes[rng() % prefixes.size()];
    const int32_t tail = sc.speculative      ? uniform(rng, 1, 4)
                         : sc.sharedPrefixes ? uniform(rng, 1, 16)
                                             : uniform(rng, 1, 40);
    const auto ids = randomIds(rng, size_t(tail), vocab);
    r.promptIds.insert(r.promptIds.end(), ids.begin(), ids.end());
    if (sc.speculative) {
      const auto segment = randomIds(rng, size_t(uniform(rng, 2, 6)), vocab);
      for (int k = uniform(rng, 1, 4); k > 0; --k)
        r.promptIds.insert(r.promptIds.end(), segment.begin(), segment.end());
    }
    r.maxTokens = uniform(rng, 1, sc.speculative ? 16 : 24);
    r.ignoreEos = rng() % 3 != 0;
    if (sc.sampled) {
      SamplingParams &p = r.sampling;
      p.temperature = 0.5f + 0.25f * float(rng() % 5);
      p.topK = uniform(rng, 0, 8);
      p.topP = rng() % 2 ? 1.0f : 0.9f;
      p.minP = rng() % 2 ? 0.0f : 0.05f;
      if (rng() % 3 == 0 && sc.penalties) {
        p.repetitionPenalty = 1.2f;
        p.presencePenalty = 0.5f;
        p.frequencyPenalty = 0.25f;
      }
      p.seed = rng();
      if (rng() % 2 == 0)
        r.logprobs = uniform(rng, 0, 3);
    }
    requests.push_back(std::move(r));
  }

  // 16 sequences of up to 64 tokens would need 256 blocks.
  ReferenceExecutor ex(plan, optionsOf(sc.numBlocks));
  const bool drafting = sc.draft != Scenario::Draft::None;
  TinyModel draftModel(sc.draft == Scenario::Draft::OtherModel
                           ? otherDraftConfig()
                           : TinyModelConfig{});
  const PlanFile draftPlan = draftModel.plan.write();
  ReferenceExecutor draftEx(draftPlan, optionsOf(sc.draftBlocks));
  EngineConfig c;
  c.vocabSize = vocab;
  c.maxModelLen = maxLen;
  c.maxNumSeqs = sc.maxNumSeqs;
  c.maxNumBatchedTokens = sc.maxNumBatchedTokens;
  c.enablePrefixCaching = sc.prefixCaching;
  c.eosTokenIds = kEos;
  c.seed = 1;
  c.asyncScheduling = sc.asyncScheduling;
  if (sc.speculative) {
    c.speculative.method = SpeculativeConfig::Method::Ngram;
    c.speculative.numSpeculativeTokens = 4;
    c.speculative.promptLookupMin = 1;
    c.speculative.promptLookupMax = 3;
  }
  if (drafting) {
    c.speculative.method = SpeculativeConfig::Method::DraftModel;
    c.speculative.numSpeculativeTokens = 4;
    c.draftExecutor = &draftEx;
  }
  Engine engine(ex, c);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Finished> results;
  if (sc.rolling > 0) {
    results = runRolling(engine, requests, sc.rolling);
  } else {
    std::vector<int64_t> ids;
    for (const Request &r : requests)
      ids.push_back(engine.submit(r));
    const auto byId = runToEnd(engine);
    for (int64_t id : ids)
      results.push_back(byId.at(id));
  }
  const double engineS =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();

  AloneRunner alone(plan, maxLen);
  int stopped = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Finished want = alone.run(requests[i]);
    const Finished &got = results.at(i);
    ASSERT_EQ(got.ids, want.ids) << "request " << i;
    ASSERT_EQ(got.reason, want.reason) << "request " << i;
    ASSERT_EQ(got.logprobs, want.logprobs) << "request " << i;
    ASSERT_EQ(got.topLogprobs.size(), want.topLogprobs.size());
    for (size_t k = 0; k < want.topLogprobs.size(); ++k)
      for (size_t j = 0; j < want.topLogprobs[k].size(); ++j) {
        ASSERT_EQ(got.topLogprobs[k].at(j).id, want.topLogprobs[k][j].id);
        ASSERT_EQ(got.topLogprobs[k][j].logprob,
                  want.topLogprobs[k][j].logprob);
      }
    stopped += want.reason == FinishReason::Stop;
  }
  if (sc.sampled) {
    // The executor really drew and reported (not greedy zeros).
    int withLogprobs = 0;
    for (const Finished &f : results)
      withLogprobs += std::any_of(f.logprobs.begin(), f.logprobs.end(),
                                  [](float v) { return v < 0.0f; });
    std::cout << "  " << withLogprobs << " requests with logprobs\n";
    EXPECT_GT(withLogprobs, 0);
  }
  const EngineStats s = engine.stats();
  std::cout << "  " << sc.numRequests << " requests in " << s.numSteps
            << " steps (" << engineS << " s), " << s.numPreemptions
            << " preemptions, " << stopped << " stopped on EOS, prefix hits "
            << s.prefixCacheHits << "/" << s.prefixCacheQueries
            << " tokens, peak " << s.peakKvBlocksUsed << "/" << s.kvBlocksTotal
            << " blocks, " << s.chainedSteps << " chained steps, "
            << s.discardedTokens << " tokens discarded\n";
  if (sc.speculative || drafting) {
    std::cout << "  speculation: " << s.specAcceptedTokens << " of "
              << s.specProposedTokens << " proposed tokens accepted over "
              << s.specDrafts << " steps\n";
    EXPECT_GT(s.specAcceptedTokens, 0);
    // A draft with the target's weights has nearly every greedy draft
    // accepted (all but those after a stop).
    if (sc.draft != Scenario::Draft::SameModel || sc.sampled) {
      EXPECT_LT(s.specAcceptedTokens, s.specProposedTokens);
    }
  }
  if (drafting) {
    // Every sequence's draft K/V went back; the draft ran real steps.
    const DraftModelProposer *proposer = engine.draftProposer();
    ASSERT_NE(proposer, nullptr);
    std::cout << "  draft model: " << proposer->numSteps() << " steps\n";
    EXPECT_GT(proposer->numSteps(), 0);
    EXPECT_EQ(proposer->blockManager().numReferenced(), 0);
    EXPECT_NO_THROW(proposer->blockManager().checkConsistency());
  }
  EXPECT_GT(s.numPreemptions, 0) << "the cache should force preemptions";
  if (sc.rolling > 0 && sc.asyncScheduling) {
    EXPECT_GT(s.chainedSteps, s.numSteps / 2);
  }
  if (!sc.asyncScheduling) {
    EXPECT_EQ(s.chainedSteps, 0);
  }
  EXPECT_EQ(s.numRunning, 0);
  EXPECT_EQ(s.numWaiting, 0);
  EXPECT_EQ(s.kvBlocksUsed, 0);
  const BlockManager &bm = engine.blockManager();
  EXPECT_EQ(bm.numFree() + bm.numCached(), bm.numBlocks());
  EXPECT_NO_THROW(bm.checkConsistency());
  if (sc.sharedPrefixes) {
    EXPECT_GT(s.prefixCacheHits, s.prefixCacheQueries / 10);
  }
  if (!sc.prefixCaching) {
    EXPECT_EQ(bm.numCached(), 0);
  }
}

} // namespace

TEST(ReferenceEngine, ConcurrentGreedyRequestsMatchRunningAlone) {
  runScenario({false, false, 11, 400});
}

TEST(ReferenceEngine, SmallStepBudgetChunksPromptsAndStillMatches) {
  // 8 tokens a step: most prompts span several steps, and sequences are
  // preempted in the middle of their chunked prefill.
  runScenario({false, false, 13, 300, 24, 8, 8});
}

TEST(ReferenceEngine, PrefixCachingKeepsOutputsIdentical) {
  runScenario({true, true, 12, 400});
  runScenario({true, true, 14, 300, 24, 8, 8});
  runScenario({true, false, 15, 300}); // few hits, same outputs
}

TEST(ReferenceEngine, SampledRequestsMatchRunningAlone) {
  // Seeded draws depend only on (seed, output index) and the row's logits:
  // batching, preemption and prefix caching must not change them, nor the
  // penalties' token counts or the logprobs.
  Scenario sc{true, true, 16, 300};
  sc.sampled = true;
  runScenario(sc);
}

TEST(ReferenceEngine, AsyncSchedulingUnderSteadyLoadMatchesRunningAlone) {
  // Few requests wait, so most steps are queued before the previous step's
  // tokens are read; sequences stop (EOS, length) with a step queued, are
  // preempted between chains, and share cached prefixes.
  Scenario sc{true, true, 17, 300};
  sc.rolling = 6;
  runScenario(sc);
  sc.sampled = true;
  sc.penalties = false;
  sc.seed = 18;
  runScenario(sc);
  sc.asyncScheduling = false;
  runScenario(sc);
}

TEST(ReferenceEngine, NgramSpeculationGivesTheOutputsOfPlainDecoding) {
  // Greedy and sampled, with penalties and logprobs, under preemption and
  // with prefix caching: every request's ids, logprobs and finish reason
  // equal the same request run alone without speculation, and rejected
  // tokens leave no block behind.
  Scenario sc{false, false, 21, 300};
  sc.speculative = true;
  runScenario(sc);
  sc.prefixCaching = true;
  sc.sharedPrefixes = true;
  sc.seed = 22;
  runScenario(sc);
  sc.sampled = true;
  sc.seed = 23;
  runScenario(sc);
  // Small step budgets trim the proposals.
  Scenario small{true, true, 24, 200, 24, 4, 6};
  small.speculative = true;
  small.sampled = true;
  runScenario(small);
}

TEST(ReferenceEngine, DraftModelSpeculationGivesTheOutputsOfPlainDecoding) {
  // As the n-gram test, with a draft model proposing: a one-layer model with
  // other weights (most drafts rejected) and the target's own weights (most
  // greedy drafts accepted, sampled ones where the draw is the argmax), a
  // draft KV cache too small for every sequence, preemption, prefix caching
  // and small step budgets.
  Scenario sc{false, false, 31, 300};
  sc.draft = Scenario::Draft::OtherModel;
  runScenario(sc);
  sc.draft = Scenario::Draft::SameModel;
  runScenario(sc);
  sc.sampled = true;
  sc.seed = 32;
  runScenario(sc);
  sc.prefixCaching = true;
  sc.sharedPrefixes = true;
  sc.draft = Scenario::Draft::OtherModel;
  sc.seed = 33;
  runScenario(sc);
  Scenario small{true, true, 34, 200, 24, 4, 6};
  small.draft = Scenario::Draft::SameModel;
  small.sampled = true;
  small.draftBlocks = 10;
  runScenario(small);
}

namespace {

/// How often each id is the `index`-th output token of `n` sampled requests
/// (temperature 1, no filters) of one prompt, seeds firstSeed, firstSeed + 1,
/// ...; with `draft`, the target's own weights propose greedily.
std::map<int32_t, int> outputHistogram(bool draft, uint64_t firstSeed, int n,
                                       size_t index, EngineStats *stats) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  ReferenceExecutor ex(plan, optionsOf(256));
  ReferenceExecutor draftEx(plan, optionsOf(256));
  EngineConfig c;
  c.vocabSize = model.config().vocab;
  c.maxModelLen = 32;
  c.maxNumSeqs = 32;
  c.maxNumBatchedTokens = 64;
  c.seed = 1;
  if (draft) {
    c.speculative.method = SpeculativeConfig::Method::DraftModel;
    c.speculative.numSpeculativeTokens = 3;
    c.draftExecutor = &draftEx;
  }
  Engine engine(ex, c);
  for (int i = 0; i < n; ++i) {
    Request r;
    r.promptIds = {5, 9, 2, 14, 7};
    r.maxTokens = static_cast<int32_t>(index) + 1;
    r.ignoreEos = true;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = firstSeed + uint64_t(i);
    engine.submit(r);
  }
  std::map<int32_t, int> histogram;
  for (const auto &[id, f] : runToEnd(engine))
    ++histogram[f.ids.at(index)];
  if (stats)
    *stats = engine.stats();
  return histogram;
}

} // namespace

TEST(ReferenceEngine, DraftModelSpeculationKeepsTheSampledDistribution) {
  // Two-sample chi-square test of homogeneity: the 3rd and 4th output
  // tokens of 3,000 sampled requests with draft-model speculation (drawn in
  // rows that check drafts) against 3,000 without, on disjoint seeds (equal
  // seeds give equal tokens, which the scenarios above check). A biased
  // acceptance rule (say, keeping drafts without checking them) fails it.
  constexpr int kN = 3000;
  for (size_t index : {size_t(2), size_t(3)}) {
    EngineStats stats;
    const auto spec = outputHistogram(true, 0, kN, index, &stats);
    const auto plain = outputHistogram(false, kN, kN, index, nullptr);
    EXPECT_GT(stats.specAcceptedTokens, 0);
    EXPECT_LT(stats.specAcceptedTokens, stats.specProposedTokens);
    std::map<int32_t, std::pair<int, int>> bins;
    for (const auto &[id, count] : spec)
      bins[id].first = count;
    for (const auto &[id, count] : plain)
      bins[id].second = count;
    // Ids seen fewer than 10 times in all share one bin.
    std::vector<std::pair<double, double>> table;
    std::pair<double, double> rare{0, 0};
    for (const auto &[id, c] : bins) {
      if (c.first + c.second < 10) {
        rare.first += c.first;
        rare.second += c.second;
      } else {
        table.emplace_back(c.first, c.second);
      }
    }
    if (rare.first + rare.second > 0)
      table.push_back(rare);
    ASSERT_GE(table.size(), 4u) << "too few outcomes to test anything";
    double chi2 = 0;
    for (const auto &[a, b] : table) {
      // Equal sample sizes: expected a = b = (a + b) / 2.
      const double e = (a + b) / 2;
      chi2 += (a - e) * (a - e) / e + (b - e) * (b - e) / e;
    }
    // Critical value at p = 0.001 (Wilson-Hilferty).
    const double k = double(table.size() - 1);
    const double z = 3.0902;
    const double critical =
        k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
    std::cout << "  output " << index << ": chi2 " << chi2 << " over " << k
              << " degrees of freedom (critical " << critical << "), "
              << stats.specAcceptedTokens << " of " << stats.specProposedTokens
              << " drafts accepted\n";
    EXPECT_LT(chi2, critical);
  }
}

TEST(ReferenceEngine, GeneratorMatchesTheEngine) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  ReferenceExecutor ex(plan, optionsOf(32));
  Generator gen(ex, model.config().vocab, 100);
  GenerationRequest r;
  r.promptIds = {1, 2, 3, 4, 5, 6, 7};
  r.maxTokens = 9;
  r.ignoreEos = true;
  std::vector<int32_t> streamed;
  r.onToken = [&](int32_t id) { streamed.push_back(id); };
  const GenerationResult got = gen.generate(r);
  Request req;
  req.promptIds = r.promptIds;
  req.maxTokens = 9;
  req.ignoreEos = true;
  AloneRunner alone(plan, 64);
  EXPECT_EQ(got.ids, alone.run(req).ids);
  EXPECT_EQ(streamed, got.ids);
  EXPECT_EQ(got.finishReason, "length");
  EXPECT_GE(got.ttftMs, 0.0);
  EXPECT_GT(got.tpotMs, 0.0);
  // Teacher-forced logits: one row per prompt token; the last row's argmax
  // is the first generated token.
  const std::vector<float> logits = gen.promptLogits(r.promptIds);
  const size_t V = static_cast<size_t>(model.config().vocab);
  ASSERT_EQ(logits.size(), r.promptIds.size() * V);
  const auto last = logits.begin() + int64_t((r.promptIds.size() - 1) * V);
  EXPECT_EQ(std::max_element(last, last + int64_t(V)) - last, got.ids[0]);
  EXPECT_EQ(gen.engine().stats().kvBlocksUsed, 0);
  // max tokens 0 checks the prompt and generates nothing.
  r.maxTokens = 0;
  EXPECT_TRUE(gen.generate(r).ids.empty());
  r.promptIds = {};
  EXPECT_EQ(engineErrorOf([&] { gen.generate(r); }),
            "the prompt is empty; give at least one token id");
}

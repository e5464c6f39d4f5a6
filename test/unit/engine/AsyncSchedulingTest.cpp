//===- AsyncSchedulingTest.cpp - Steps queued before their tokens ---------===//
//
// The engine over a fake executor that queues steps (FakeExecutor::chains):
// outputs arrive only when a step is retired, chained tokens are the
// previous step's ids. Exact outputs against each request run alone prove
// the chained batches, the early commits and the discarded tokens right;
// the recorded batches show which steps were chained.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"
#include "FakeExecutor.h"

#include <gtest/gtest.h>

#include <iostream>

using namespace sol;
using namespace sol::test;

namespace {

constexpr int32_t kVocab = 50;

EngineConfig configOf(int64_t maxModelLen = 256) {
  return fakeConfig(kVocab, maxModelLen);
}

int32_t hashNext(std::span<const int32_t> ctx) {
  return FakeExecutor::hashModel(ctx, kVocab);
}

} // namespace

TEST(AsyncScheduling, ALoneRequestChainsEveryDecode) {
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.chains = true;
  Engine engine(ex, configOf());
  const Request r = greedy({1, 2, 3}, 6);
  engine.submit(r);
  const auto results = runToEnd(engine);
  const Finished want = generateAlone(r, {}, hashNext);
  ASSERT_EQ(results.begin()->second.ids, want.ids);
  EXPECT_EQ(results.begin()->second.reason, FinishReason::Length);
  // The prompt, the first decode (built once the prompt's step is done:
  // nothing is queued behind prompt work), then four decodes, each queued
  // before the previous token was read: its token is row 0 of the step
  // before (the fake resolved it).
  ASSERT_EQ(ex.batches.size(), 6u);
  EXPECT_TRUE(ex.batches[0].chainedRows.empty());
  EXPECT_TRUE(ex.batches[1].chainedRows.empty());
  for (size_t k = 2; k < 6; ++k) {
    EXPECT_EQ(ex.batches[k].chainedRows, std::vector<int32_t>{0}) << k;
    EXPECT_EQ(ex.batches[k].tokens, std::vector<int32_t>{want.ids[k - 1]});
    EXPECT_EQ(ex.batches[k].positions,
              std::vector<int32_t>{static_cast<int32_t>(2 + k)});
  }
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.numSteps, 6);
  EXPECT_EQ(s.chainedSteps, 4);
  EXPECT_EQ(s.discardedTokens, 0); // max_tokens is known ahead: no waste
  EXPECT_EQ(ex.queued(), 0);
  EXPECT_EQ(s.kvBlocksUsed, 0);
}

TEST(AsyncScheduling, AStopDiscardsTheQueuedTokenAndItsBlock) {
  FakeExecutor ex(8, 4, 64, kVocab);
  ex.chains = true;
  // Prompt of 3; the third output is EOS (id 3).
  ex.model = [](std::span<const int32_t> ctx) {
    return ctx.size() == 5 ? 3 : 7;
  };
  {
    EngineConfig c = configOf();
    c.eosTokenIds = {3};
    Engine engine(ex, c);
    const int64_t a = engine.submit(greedy({1, 2, 3}, 10));
    auto results = runToEnd(engine);
    EXPECT_EQ(results.at(a).ids, (std::vector<int32_t>{7, 7, 3}));
    EXPECT_EQ(results.at(a).reason, FinishReason::Stop);
    // The fourth token's step was queued when EOS arrived; its position 5
    // is in the sequence's second block, released with the sequence.
    EXPECT_EQ(ex.queued(), 1);
    EXPECT_EQ(ex.batches.back().positions, std::vector<int32_t>{5});
    EXPECT_EQ(engine.stats().kvBlocksUsed, 0);
    EXPECT_FALSE(engine.hasUnfinished());
    // The next request retires it first; its token is dropped, and the
    // freed blocks serve the new request, all of them (8 blocks).
    ex.model = [](std::span<const int32_t> ctx) {
      return FakeExecutor::hashModel(ctx, kVocab);
    };
    const Request r = greedy({4, 5}, 29);
    const int64_t b = engine.submit(r);
    results = runToEnd(engine);
    EXPECT_EQ(results.at(b).ids, generateAlone(r, c.eosTokenIds, hashNext).ids);
    // A stop of b leaves its own queued step, counted when retired.
    EXPECT_EQ(engine.stats().discardedTokens, 1);
    EXPECT_NO_THROW(engine.blockManager().checkConsistency());
  }
  // The engine retires what it queued before it goes.
  EXPECT_EQ(ex.queued(), 0);
}

TEST(AsyncScheduling, ArrivalsJoinTheStepScheduledAhead) {
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.chains = true;
  Engine engine(ex, configOf());
  const Request ra = greedy({1, 2}, 6), rb = greedy({7, 8, 9}, 3);
  const int64_t a = engine.submit(ra);
  std::map<int64_t, Finished> got;
  for (int i = 0; i < 2; ++i)
    for (const RequestOutput &o : engine.step())
      accumulate(got, o);
  // b arrives while a's third step is queued; the step scheduled ahead of
  // the next results holds a's chained decode and b's prompt, as the
  // scheduler orders them (decodes first).
  const int64_t b = engine.submit(rb);
  for (const auto &[id, f] : runToEnd(engine)) {
    Finished &g = got[id];
    g.ids.insert(g.ids.end(), f.ids.begin(), f.ids.end());
  }
  EXPECT_EQ(got.at(a).ids, generateAlone(ra, {}, hashNext).ids);
  EXPECT_EQ(got.at(b).ids, generateAlone(rb, {}, hashNext).ids);
  ASSERT_GE(ex.batches.size(), 4u);
  const RecordedBatch &mixed = ex.batches[3];
  EXPECT_EQ(mixed.chainedRows, (std::vector<int32_t>{0, -1, -1, -1}));
  EXPECT_EQ(mixed.tokens, (std::vector<int32_t>{got.at(a).ids[2], 7, 8, 9}));
  EXPECT_EQ(mixed.positions, (std::vector<int32_t>{4, 0, 1, 2}));
  EXPECT_EQ(mixed.logitRows, (std::vector<int32_t>{0, 3}));
  // The steps after prompt work (a's prompt, then b's) are built once it is
  // done; every other step is queued ahead. a and b both end by length, so
  // nothing was discarded.
  for (size_t k = 0; k < ex.batches.size(); ++k)
    EXPECT_EQ(ex.batches[k].chainedRows.empty(), k < 2 || k == 4) << k;
  EXPECT_EQ(engine.stats().chainedSteps,
            static_cast<int64_t>(ex.batches.size()) - 3);
  EXPECT_EQ(engine.stats().discardedTokens, 0);
}

TEST(AsyncScheduling, PenaltiesKeepStepsInOrder) {
  // Penalty lists count the last token on the host: while a request with
  // penalties runs, every step waits for the one before.
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.chains = true;
  Engine engine(ex, configOf());
  Request p = greedy({5, 6}, 5);
  p.sampling.presencePenalty = 0.5f;
  const Request q = greedy({1, 2, 3}, 5);
  engine.submit(p);
  engine.submit(q);
  runToEnd(engine);
  ASSERT_EQ(ex.batches.size(), 5u);
  for (const RecordedBatch &batch : ex.batches)
    EXPECT_TRUE(batch.chainedRows.empty());
  EXPECT_EQ(engine.stats().chainedSteps, 0);
}

TEST(AsyncScheduling, AChainedRowCountsTheTokenItHasNotSeen) {
  // min_tokens bans EOS for the first three draws; the sampling counter is
  // the output index. Both must count the token still on the device.
  auto run = [](bool chains) {
    FakeExecutor ex(32, 4, 64, kVocab);
    ex.chains = chains;
    ex.honorBans = true;
    ex.model = [](std::span<const int32_t>) { return 3; };
    EngineConfig c = configOf();
    c.eosTokenIds = {3};
    Engine engine(ex, c);
    Request r = greedy({1, 2}, 8);
    r.minTokens = 3;
    r.sampling.temperature = 0.5f; // sampling rows (the fake ignores them)
    engine.submit(r);
    const auto results = runToEnd(engine);
    EXPECT_EQ(results.begin()->second.ids, (std::vector<int32_t>{4, 4, 4, 3}));
    EXPECT_EQ(results.begin()->second.reason, FinishReason::Stop);
    return ex.batches;
  };
  const std::vector<RecordedBatch> chained = run(true), plain = run(false);
  // The chained run also queued a fifth step before EOS came back.
  ASSERT_EQ(chained.size(), 5u);
  ASSERT_EQ(plain.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(chained[k].chainedRows.empty(), k < 2) << k;
    ASSERT_EQ(chained[k].sampling.size(), 1u);
    EXPECT_EQ(chained[k].sampling[0].counter, static_cast<int32_t>(k));
    EXPECT_EQ(chained[k].sampling[0].counter, plain[k].sampling[0].counter);
    EXPECT_EQ(chained[k].biasIds, plain[k].biasIds) << k;
    EXPECT_EQ(chained[k].biasOffsets, plain[k].biasOffsets) << k;
  }
  EXPECT_EQ(chained[2].biasIds, std::vector<int32_t>{3});
  EXPECT_TRUE(chained[3].biasIds.empty());
}

TEST(AsyncScheduling, AbortingAQueuedSequenceDropsItsToken) {
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.chains = true;
  Engine engine(ex, configOf());
  const Request ra = greedy({1, 2, 3}, 20), rb = greedy({4, 5}, 9);
  const int64_t a = engine.submit(ra);
  const int64_t b = engine.submit(rb);
  std::map<int64_t, Finished> got;
  for (int i = 0; i < 3; ++i)
    for (const RequestOutput &o : engine.step())
      accumulate(got, o);
  // The step after the third is queued, with a's row in it.
  EXPECT_EQ(ex.queued(), 1);
  EXPECT_TRUE(engine.abort(a));
  for (const auto &[id, f] : runToEnd(engine)) {
    Finished &g = got[id];
    g.ids.insert(g.ids.end(), f.ids.begin(), f.ids.end());
    g.reason = f.reason;
  }
  EXPECT_EQ(got.at(a).reason, FinishReason::Abort);
  EXPECT_EQ(got.at(a).ids.size(), 3u);
  EXPECT_EQ(got.at(b).ids, generateAlone(rb, {}, hashNext).ids);
  EXPECT_EQ(engine.stats().discardedTokens, 1);
  EXPECT_EQ(engine.stats().kvBlocksUsed, 0);
  EXPECT_NO_THROW(engine.blockManager().checkConsistency());
}

TEST(AsyncScheduling, ADeviceErrorRequeuesTheQueuedSequences) {
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.chains = true;
  ex.failAtSubmit = 4; // the third chained decode
  Engine engine(ex, configOf());
  const Request ra = greedy({1, 2, 3}, 12), rb = greedy({9, 8, 7, 6, 5}, 10);
  const int64_t a = engine.submit(ra);
  const int64_t b = engine.submit(rb);
  std::map<int64_t, Finished> got;
  int errors = 0;
  while (engine.hasUnfinished()) {
    try {
      for (const RequestOutput &o : engine.step())
        accumulate(got, o);
    } catch (const Error &e) {
      ++errors;
      EXPECT_EQ(std::string(e.what()), "fake: the device failed in step 4");
      // Nothing stays queued, and nothing is half counted.
      EXPECT_EQ(ex.queued(), 0);
      EXPECT_EQ(engine.stats().numWaiting, 2);
      EXPECT_EQ(engine.stats().kvBlocksUsed, 0);
    }
  }
  EXPECT_EQ(errors, 1);
  // Both recomputed from their tokens so far and ended as if alone.
  EXPECT_EQ(got.at(a).ids, generateAlone(ra, {}, hashNext).ids);
  EXPECT_EQ(got.at(b).ids, generateAlone(rb, {}, hashNext).ids);
  EXPECT_NO_THROW(engine.blockManager().checkConsistency());
}

TEST(AsyncScheduling, SteadyLoadMatchesRunningAlone) {
  // Requests arrive as others finish: most steps chain, admissions and
  // preemptions (a small cache) interleave, sequences stop on EOS and stop
  // ids with a step queued, prefixes are shared.
  for (const bool prefixCaching : {false, true}) {
    FakeExecutor ex(/*numBlocks=*/60, /*blockSize=*/4, /*maxTokens=*/32,
                    kVocab);
    ex.chains = true;
    ex.record = false;
    EngineConfig c = configOf(160);
    c.maxNumSeqs = 8;
    c.enablePrefixCaching = prefixCaching;
    c.eosTokenIds = {3};
    Engine engine(ex, c);
    std::mt19937 rng(prefixCaching ? 21 : 22);
    std::vector<std::vector<int32_t>> prefixes;
    for (int i = 0; i < 4; ++i)
      prefixes.push_back(randomIds(rng, size_t(uniform(rng, 4, 20)), kVocab));
    std::vector<Request> requests;
    for (int i = 0; i < 300; ++i) {
      Request r;
      r.promptIds = prefixes[rng() % prefixes.size()];
      const auto tail = randomIds(rng, size_t(uniform(rng, 1, 20)), kVocab);
      r.promptIds.insert(r.promptIds.end(), tail.begin(), tail.end());
      r.maxTokens = uniform(rng, 1, 40);
      r.ignoreEos = rng() % 2 == 0;
      if (rng() % 4 == 0)
        r.stopTokenIds = {uniform(rng, 0, kVocab - 1)};
      if (rng() % 4 == 0)
        r.minTokens = uniform(rng, 0, r.maxTokens);
      requests.push_back(std::move(r));
    }
    const std::vector<Finished> got = runRolling(engine, requests, 6);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Finished want = generateAlone(requests[i], c.eosTokenIds, hashNext);
      ASSERT_EQ(got[i].ids, want.ids) << "request " << i;
      ASSERT_EQ(got[i].reason, want.reason) << "request " << i;
    }
    const EngineStats s = engine.stats();
    std::cout << "  prefix caching " << prefixCaching << ": " << s.numSteps
              << " steps, " << s.chainedSteps << " chained, "
              << s.discardedTokens << " tokens discarded, " << s.numPreemptions
              << " preemptions\n";
    EXPECT_GT(s.chainedSteps, s.numSteps / 2);
    EXPECT_GT(s.discardedTokens, 0);
    EXPECT_GT(s.numPreemptions, 0) << "the cache should be too small";
    EXPECT_EQ(s.kvBlocksUsed, 0);
    EXPECT_NO_THROW(engine.blockManager().checkConsistency());
    if (prefixCaching) {
      EXPECT_GT(s.prefixCacheHits, 0);
    }
  }
}

//===- DraftModelSpeculationTest.cpp - Draft-model speculation ------------===//
//
// The engine with a draft model over two fake executors (target and draft,
// each with its own paged cache). The draft's recorded batches show that it
// computes the prompt once and then only what the last round did not leave
// in its cache (the accepted drafts' K/V stays, the rejected ones' is
// recomputed), that a prompt longer than a step's budget runs in chunks
// without logits rows, and that a sequence the draft's cache cannot hold
// decodes without drafts. Outputs always equal plain decoding's; an error of
// the draft's executor releases its blocks and leaves the engine usable.
// Exactness over many requests on a real model is ReferenceEngineTest's.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"
#include "FakeExecutor.h"

#include "runtime/engine/DraftModelProposer.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

using namespace sol;
using namespace sol::test;

namespace {

constexpr int32_t kVocab = 50;

constexpr auto periodic = &FakeExecutor::periodic;

EngineConfig withDraft(Executor &draft, int32_t tokens,
                       int32_t maxNumBatchedTokens = 64) {
  EngineConfig c = fakeConfig(kVocab);
  c.maxNumBatchedTokens = maxNumBatchedTokens;
  c.speculative.method = SpeculativeConfig::Method::DraftModel;
  c.speculative.numSpeculativeTokens = tokens;
  c.draftExecutor = &draft;
  return c;
}

/// Runs `requests` to the end and expects each to give the ids of plain
/// decoding with the target's periodic(3) model; returns the engine's stats.
EngineStats expectPlainOutputs(Engine &engine,
                               const std::vector<Request> &requests) {
  std::vector<int64_t> ids;
  for (const Request &r : requests)
    ids.push_back(engine.submit(r));
  const auto results = runToEnd(engine);
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(results.at(ids[i]).ids,
              generateAlone(requests[i], {}, periodic(3)).ids)
        << i;
  return engine.stats();
}

void expectNoDraftBlocks(const Engine &engine) {
  ASSERT_NE(engine.draftProposer(), nullptr);
  const BlockManager &bm = engine.draftProposer()->blockManager();
  EXPECT_EQ(bm.numReferenced(), 0);
  EXPECT_NO_THROW(bm.checkConsistency());
}

} // namespace

TEST(DraftModelSpeculation, TheDraftComputesThePromptOnceThenOnlyWhatIsNew) {
  FakeExecutor target(32, 4, 64, kVocab), draft(32, 4, 64, kVocab);
  target.model = periodic(3);
  draft.model = periodic(3); // agrees with the target: every draft stands
  Engine engine(target, withDraft(draft, 3));
  const Request r = greedy({5, 6, 7, 5, 6}, 9);
  const int64_t id = engine.submit(r);
  const auto results = runToEnd(engine);
  EXPECT_EQ(results.at(id).ids, generateAlone(r, {}, periodic(3)).ids);
  EXPECT_EQ(results.at(id).ids,
            (std::vector<int32_t>{7, 5, 6, 7, 5, 6, 7, 5, 6}));
  // Target: the prompt (output 7); 7 with drafts 5 6 7 (all stand, plus 5);
  // 5 with drafts 6 7 5 (max_tokens leaves room for three), all stand, plus
  // 6: 9 outputs.
  ASSERT_EQ(target.batches.size(), 3u);
  EXPECT_EQ(target.batches[1].tokens, (std::vector<int32_t>{7, 5, 6, 7}));
  EXPECT_EQ(target.batches[2].tokens, (std::vector<int32_t>{5, 6, 7, 5}));
  // Draft, round 1: the whole sequence (prompt and 7) with one row, then
  // its proposals 5 and 6 one at a time (the last, 7, is not run). Round 2:
  // only that 7 and the target's extra token 5, then two proposals.
  ASSERT_EQ(draft.batches.size(), 6u);
  EXPECT_EQ(draft.batches[0].tokens, (std::vector<int32_t>{5, 6, 7, 5, 6, 7}));
  EXPECT_EQ(draft.batches[0].logitRows, (std::vector<int32_t>{5}));
  EXPECT_EQ(draft.batches[1].tokens, (std::vector<int32_t>{5}));
  EXPECT_EQ(draft.batches[1].positions, (std::vector<int32_t>{6}));
  EXPECT_EQ(draft.batches[2].tokens, (std::vector<int32_t>{6}));
  EXPECT_EQ(draft.batches[3].tokens, (std::vector<int32_t>{7, 5}));
  EXPECT_EQ(draft.batches[3].positions, (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(draft.batches[4].tokens, (std::vector<int32_t>{6}));
  EXPECT_EQ(draft.batches[5].tokens, (std::vector<int32_t>{7}));
  for (const RecordedBatch &b : draft.batches)
    EXPECT_TRUE(b.sampling.empty()) << "the draft proposes greedily";
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.specProposedTokens, 6);
  EXPECT_EQ(s.specAcceptedTokens, 6);
  EXPECT_EQ(engine.draftProposer()->numSteps(), 6);
  EXPECT_EQ(s.specDraftModelSteps, 6);
  expectNoDraftBlocks(engine);
}

TEST(DraftModelSpeculation, RejectedDraftsAreRecomputedFromTheFirstMismatch) {
  FakeExecutor target(32, 4, 64, kVocab), draft(32, 4, 64, kVocab);
  target.model = periodic(3);
  draft.model = periodic(2); // agrees now and then
  Engine engine(target, withDraft(draft, 4));
  const EngineStats s = expectPlainOutputs(
      engine, {greedy({1, 2, 3, 1, 2, 3, 1}, 14), greedy({4, 4, 9, 4, 4}, 11),
               greedy({7, 8, 9}, 12)});
  EXPECT_GT(s.specAcceptedTokens, 0);
  EXPECT_LT(s.specAcceptedTokens, s.specProposedTokens);
  // The fake reads every position back through the block tables: a draft
  // that skipped a needed recompute would have read a stale slot and thrown.
  EXPECT_EQ(s.kvBlocksUsed, 0);
  expectNoDraftBlocks(engine);
}

TEST(DraftModelSpeculation, AChainingDraftExecutorGetsItsStepsQueuedAhead) {
  // On an executor that chains steps, the one-token draft steps are queued
  // back to back: each takes the previous step's proposals on the device
  // (chainedRows), and the host reads them after queueing the next.
  FakeExecutor target(64, 4, 64, kVocab), draft(64, 4, 64, kVocab);
  target.model = periodic(3);
  draft.model = periodic(2);
  draft.chains = true;
  Engine engine(target, withDraft(draft, 4));
  const std::vector<Request> requests = {greedy({1, 2, 3, 1, 2, 3, 1}, 17),
                                         greedy({4, 4, 9, 4, 4}, 13),
                                         greedy({7, 8, 9}, 15)};
  const EngineStats s = expectPlainOutputs(engine, requests);
  int chained = 0;
  for (const RecordedBatch &b : draft.batches)
    if (!b.chainedRows.empty()) {
      ++chained;
      EXPECT_TRUE(std::all_of(b.chainedRows.begin(), b.chainedRows.end(),
                              [](int32_t r) { return r >= 0; }));
    }
  EXPECT_GT(chained, 0);
  EXPECT_EQ(draft.queued(), 0);
  EXPECT_GT(s.specAcceptedTokens, 0);
  EXPECT_LT(s.specAcceptedTokens, s.specProposedTokens);
  EXPECT_EQ(engine.draftProposer()->numSteps(),
            static_cast<int64_t>(draft.batches.size()));
  expectNoDraftBlocks(engine);

  // Chained proposals are the model's: a draft that is the target's model
  // has every draft accepted (no stops here).
  FakeExecutor target2(64, 4, 64, kVocab), same(64, 4, 64, kVocab);
  target2.model = periodic(3);
  same.model = periodic(3);
  same.chains = true;
  Engine engine2(target2, withDraft(same, 4));
  const EngineStats s2 = expectPlainOutputs(engine2, requests);
  EXPECT_GT(s2.specProposedTokens, 0);
  EXPECT_EQ(s2.specAcceptedTokens, s2.specProposedTokens);
}

TEST(DraftModelSpeculation, APromptLongerThanTheBudgetRunsInChunks) {
  FakeExecutor target(64, 4, 64, kVocab), draft(64, 4, 64, kVocab);
  target.model = periodic(3);
  draft.model = periodic(3);
  // 6 tokens a step: the target's prompt runs in chunks of 6, 6 and 1; the
  // step of the last prompt token already carries drafts, for which the
  // draft runs those 13 tokens in three steps, the first two without a
  // logits row.
  Engine engine(target, withDraft(draft, 2, 6));
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 13; ++i)
    prompt.push_back(10 + i % 3);
  const Request r = greedy(prompt, 5);
  const int64_t id = engine.submit(r);
  const auto results = runToEnd(engine);
  EXPECT_EQ(results.at(id).ids, generateAlone(r, {}, periodic(3)).ids);
  ASSERT_GE(draft.batches.size(), 3u);
  EXPECT_EQ(draft.batches[0].tokens.size(), 6u);
  EXPECT_TRUE(draft.batches[0].logitRows.empty());
  EXPECT_EQ(draft.batches[1].tokens.size(), 6u);
  EXPECT_TRUE(draft.batches[1].logitRows.empty());
  EXPECT_EQ(draft.batches[2].positions, (std::vector<int32_t>{12}));
  EXPECT_EQ(draft.batches[2].logitRows, (std::vector<int32_t>{0}));
  EXPECT_GT(engine.stats().specAcceptedTokens, 0);
  expectNoDraftBlocks(engine);
}

TEST(DraftModelSpeculation, SequencesTheDraftCacheCannotHoldDecodeWithout) {
  FakeExecutor target(128, 4, 64, kVocab);
  // Three blocks of 4: one sequence of up to 12 positions at a time.
  FakeExecutor draft(3, 4, 64, kVocab);
  target.model = periodic(3);
  draft.model = periodic(3);
  Engine engine(target, withDraft(draft, 3));
  std::vector<Request> requests;
  std::vector<int64_t> ids;
  for (int32_t i = 0; i < 4; ++i) {
    requests.push_back(greedy({20 + i, 30 + i, 40 + i}, 6));
    ids.push_back(engine.submit(requests.back()));
  }
  const auto results = runToEnd(engine);
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(results.at(ids[i]).ids,
              generateAlone(requests[i], {}, periodic(3)).ids)
        << i;
  EXPECT_GT(engine.stats().specDrafts, 0);
  // The target decodes the four together; the draft never holds more than
  // one of them (two blocks each), so the others decode without drafts.
  int32_t targetSeqs = 0, draftSeqs = 0;
  for (const RecordedBatch &b : target.batches)
    targetSeqs = std::max(targetSeqs, b.numSeqs);
  for (const RecordedBatch &b : draft.batches)
    draftSeqs = std::max(draftSeqs, b.numSeqs);
  EXPECT_EQ(targetSeqs, 4);
  EXPECT_EQ(draftSeqs, 1);
  expectNoDraftBlocks(engine);
}

TEST(DraftModelSpeculation, ADraftErrorReleasesItsBlocksAndTheEngineGoesOn) {
  FakeExecutor target(32, 4, 64, kVocab), draft(32, 4, 64, kVocab);
  target.model = periodic(3);
  bool failOnce = true;
  draft.model = [&](std::span<const int32_t> ctx) -> int32_t {
    if (ctx.size() == 8 && failOnce) {
      failOnce = false;
      fail("draft device error");
    }
    return periodic(3)(ctx);
  };
  Engine engine(target, withDraft(draft, 3));
  const Request r = greedy({5, 6, 7, 5, 6}, 10);
  const int64_t id = engine.submit(r);
  std::map<int64_t, Finished> results;
  bool threw = false;
  while (engine.hasUnfinished()) {
    try {
      for (const RequestOutput &o : engine.step())
        accumulate(results, o);
    } catch (const Error &e) {
      EXPECT_STREQ(e.what(), "draft device error");
      threw = true;
      expectNoDraftBlocks(engine);
    }
  }
  EXPECT_TRUE(threw);
  EXPECT_EQ(results.at(id).ids, generateAlone(r, {}, periodic(3)).ids);
  EXPECT_EQ(engine.stats().kvBlocksUsed, 0);
  expectNoDraftBlocks(engine);
}

TEST(DraftModelSpeculation, TheEngineRefusesADraftExecutorWithoutTheMethod) {
  FakeExecutor target(8, 4, 64, kVocab), draft(8, 4, 64, kVocab);
  EngineConfig c = fakeConfig(kVocab);
  c.draftExecutor = &draft;
  EXPECT_NE(engineErrorOf([&] {
              Engine engine(target, c);
            }).find("a draft executor without draft-model speculation"),
            std::string::npos);
  c = withDraft(draft, 2);
  c.draftExecutor = nullptr;
  EXPECT_NE(engineErrorOf([&] {
              Engine engine(target, c);
            }).find("a draft model without its executor"),
            std::string::npos);
}

//===- SpeculativeEngineTest.cpp - N-gram speculation in the engine -------===//
//
// The engine with `EngineConfig::speculative` over the fake executor, whose
// model here repeats the context with a period, so that prompt lookup
// proposes tokens the model then draws. The recorded batches show what a
// speculating step carries (the decode token, then the proposed ones at the
// next positions, one logits row each); the outputs must equal plain
// decoding's; a stop inside the accepted tokens ends the request there;
// rejected tokens give their blocks back; steps that speculate are never
// queued ahead; disable_by_batch_size turns speculation off under load.
// Exactness over many requests on a real model (sampling, penalties,
// logprobs, preemption, prefix caching) is ReferenceEngineTest's.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"
#include "FakeExecutor.h"

#include <gtest/gtest.h>

using namespace sol;
using namespace sol::test;

namespace {

constexpr int32_t kVocab = 50;

constexpr auto periodic = &FakeExecutor::periodic;

EngineConfig speculating(int32_t tokens, int32_t disableByBatchSize = 0) {
  EngineConfig c = fakeConfig(kVocab);
  c.speculative.method = SpeculativeConfig::Method::Ngram;
  c.speculative.numSpeculativeTokens = tokens;
  c.speculative.promptLookupMin = 1;
  c.speculative.promptLookupMax = 3;
  c.speculative.disableByBatchSize = disableByBatchSize;
  return c;
}

} // namespace

TEST(SpeculativeEngine, AStepCarriesTheProposedTokensAndAcceptsThem) {
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.model = periodic(3);
  Engine engine(ex, speculating(4));
  const Request r = greedy({5, 6, 7, 5, 6, 7}, 10);
  const int64_t id = engine.submit(r);
  const auto results = runToEnd(engine);
  const Finished want = generateAlone(r, {}, periodic(3));
  EXPECT_EQ(results.at(id).ids, want.ids);
  EXPECT_EQ(want.ids, (std::vector<int32_t>{5, 6, 7, 5, 6, 7, 5, 6, 7, 5}));
  // The prompt; then the first output (5) with the proposal 6 7 5 (what
  // followed the latest earlier "6 7 5", up to the end of the sequence)
  // after it, all accepted, one logits row each; then 6 and the proposal
  // 7 5 6; then the last token alone (max_tokens leaves no room).
  ASSERT_EQ(ex.batches.size(), 4u);
  const RecordedBatch &b = ex.batches[1];
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{5, 6, 7, 5}));
  EXPECT_EQ(b.positions, (std::vector<int32_t>{6, 7, 8, 9}));
  EXPECT_EQ(b.logitRows, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(ex.batches[2].tokens, (std::vector<int32_t>{6, 7, 5, 6}));
  EXPECT_EQ(ex.batches[3].tokens, (std::vector<int32_t>{7}));
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.specDrafts, 2);
  EXPECT_EQ(s.specProposedTokens, 6);
  EXPECT_EQ(s.specAcceptedTokens, 6);
  EXPECT_EQ(s.kvBlocksUsed, 0);
}

TEST(SpeculativeEngine, RejectedTokensAreDroppedWithTheirBlocks) {
  FakeExecutor ex(32, 4, 64, kVocab);
  // The prompt repeats with period 2; the model continues with period 3.
  ex.model = periodic(3);
  Engine engine(ex, speculating(4));
  const Request r = greedy({8, 9, 8, 9, 8, 9, 8}, 12);
  const int64_t id = engine.submit(r);
  const auto results = runToEnd(engine);
  EXPECT_EQ(results.at(id).ids, generateAlone(r, {}, periodic(3)).ids);
  const EngineStats s = engine.stats();
  EXPECT_GT(s.specProposedTokens, s.specAcceptedTokens);
  EXPECT_EQ(s.kvBlocksUsed, 0);
  EXPECT_NO_THROW(engine.blockManager().checkConsistency());
  EXPECT_EQ(engine.blockManager().numFree(), 32);
}

TEST(SpeculativeEngine, AStopInsideTheAcceptedTokensEndsTheRequestThere) {
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.model = periodic(4);
  EngineConfig c = speculating(4);
  c.eosTokenIds = {3};
  Engine engine(ex, c);
  // Period 4 with EOS (3) in it: the proposal after the prompt holds it.
  const Request r = greedy({1, 2, 3, 4, 1, 2, 3, 4, 1}, 20);
  const int64_t id = engine.submit(r);
  const auto results = runToEnd(engine);
  const std::vector<int32_t> eos = {3};
  const Finished want = generateAlone(r, eos, periodic(4));
  EXPECT_EQ(results.at(id).ids, want.ids);
  EXPECT_EQ(results.at(id).ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(results.at(id).reason, FinishReason::Stop);
  EXPECT_EQ(engine.stats().kvBlocksUsed, 0);
}

TEST(SpeculativeEngine, SpeculatingStepsAreNotQueuedAhead) {
  FakeExecutor ex(64, 4, 64, kVocab);
  ex.chains = true;
  ex.model = periodic(3);
  Engine engine(ex, speculating(2));
  const Request r = greedy({4, 5, 6, 4, 5, 6}, 9);
  const int64_t id = engine.submit(r);
  const auto results = runToEnd(engine);
  EXPECT_EQ(results.at(id).ids, generateAlone(r, {}, periodic(3)).ids);
  EXPECT_EQ(engine.stats().chainedSteps, 0);
  EXPECT_GT(engine.stats().specAcceptedTokens, 0);
}

TEST(SpeculativeEngine, DisableByBatchSizeTurnsItOffUnderLoad) {
  FakeExecutor ex(256, 4, 256, kVocab);
  ex.chains = true;
  ex.model = periodic(3);
  // Speculation only while at most 2 sequences run: with 8 running the
  // decode steps are plain (and chained), and the outputs are the same.
  Engine engine(ex, speculating(3, 2));
  std::vector<Request> requests;
  std::vector<int64_t> ids;
  for (int32_t i = 0; i < 8; ++i) {
    requests.push_back(greedy({10 + i, 20 + i, 30 + i, 10 + i}, 8 + 4 * i));
    ids.push_back(engine.submit(requests.back()));
  }
  const auto results = runToEnd(engine);
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(results.at(ids[i]).ids,
              generateAlone(requests[i], {}, periodic(3)).ids)
        << i;
  const EngineStats s = engine.stats();
  EXPECT_GT(s.chainedSteps, 0);
  // The longest requests run alone at the end, and speculate then.
  EXPECT_GT(s.specDrafts, 0);
  bool plainWithMany = false;
  for (const RecordedBatch &b : ex.batches)
    plainWithMany |=
        b.numSeqs > 2 && b.tokens.size() == static_cast<size_t>(b.numSeqs);
  EXPECT_TRUE(plainWithMany);
  for (const RecordedBatch &b : ex.batches)
    if (b.numSeqs > 2) {
      EXPECT_LE(b.logitRows.size(), static_cast<size_t>(b.numSeqs));
    }
}

//===- LogitBiasEngineTest.cpp - min_tokens bans and Request::logitBias ---===//
//
// Below min_tokens the engine bans the request's EOS and stop ids with a
// -inf logit bias (vLLM), so an executor that honours bans never draws them
// early; Request::logitBias reaches the executor row by row and is checked
// at submission.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"
#include "FakeExecutor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace sol;
using namespace sol::test;

namespace {

constexpr int32_t kVocab = 60;

EngineConfig configOf(std::vector<int32_t> eos) {
  EngineConfig c;
  c.vocabSize = kVocab;
  c.maxModelLen = 256;
  c.seed = 7;
  c.eosTokenIds = std::move(eos);
  return c;
}

/// Mostly EOS (3 or 4) or the stop id 7; otherwise a hash of the context.
int32_t eosHeavy(std::span<const int32_t> context) {
  const int32_t h = FakeExecutor::hashModel(context, 1000);
  if (h < 500)
    return h % 2 ? 3 : 4;
  if (h < 700)
    return 7;
  return h % kVocab;
}

/// The row's bias entries of one recorded batch, as a map.
std::map<int32_t, float> biasOfRow(const RecordedBatch &b, size_t row) {
  std::map<int32_t, float> m;
  if (b.biasOffsets.empty())
    return m;
  for (auto e = static_cast<size_t>(b.biasOffsets[row]);
       e < static_cast<size_t>(b.biasOffsets[row + 1]); ++e)
    m[b.biasIds[e]] = b.biasValues[e];
  return m;
}

TEST(MinTokens, EosAndStopIdsAreBannedUntilMinTokens) {
  FakeExecutor ex(64, 4, 64, kVocab);
  ex.model = eosHeavy;
  ex.honorBans = true;
  ex.record = false;
  Engine engine(ex, configOf({3, 4}));
  std::mt19937 rng(11);
  std::map<int64_t, Request> requests;
  for (int i = 0; i < 200; ++i) {
    Request r;
    r.promptIds = randomIds(rng, size_t(uniform(rng, 1, 12)), kVocab);
    r.maxTokens = uniform(rng, 1, 24);
    r.minTokens = uniform(rng, 0, r.maxTokens);
    r.ignoreEos = i % 7 == 0;
    if (i % 3 == 0)
      r.stopTokenIds = {7};
    requests.emplace(engine.submit(r), r);
  }
  const auto results = runToEnd(engine);
  ASSERT_EQ(results.size(), requests.size());
  int stoppedAtMin = 0;
  for (const auto &[id, r] : requests) {
    const Finished &f = results.at(id);
    std::set<int32_t> stops(r.stopTokenIds.begin(), r.stopTokenIds.end());
    if (!r.ignoreEos)
      stops.insert({3, 4});
    // The standalone rule: the model's token, moved past banned ids while
    // fewer than min_tokens tokens exist; the first stop id after that ends.
    std::vector<int32_t> context = r.promptIds, want;
    FinishReason reason = FinishReason::None;
    for (int32_t n = 0; reason == FinishReason::None; ++n) {
      int32_t t = eosHeavy(context);
      while (n < r.minTokens && stops.count(t))
        t = (t + 1) % kVocab;
      context.push_back(t);
      want.push_back(t);
      if (stops.count(t))
        reason = FinishReason::Stop;
      else if (n + 1 >= r.maxTokens)
        reason = FinishReason::Length;
    }
    EXPECT_EQ(f.ids, want) << "request " << id;
    EXPECT_EQ(f.reason, reason) << "request " << id;
    for (size_t k = 0; k < f.ids.size() && k < size_t(r.minTokens); ++k)
      ASSERT_FALSE(stops.count(f.ids[k]))
          << "request " << id << " drew stop id " << f.ids[k] << " as token "
          << k + 1 << " of min_tokens " << r.minTokens;
    if (f.reason == FinishReason::Stop) {
      EXPECT_GT(f.ids.size(), size_t(r.minTokens));
      stoppedAtMin += f.ids.size() == size_t(r.minTokens) + 1;
    } else {
      EXPECT_EQ(f.ids.size(), size_t(r.maxTokens));
    }
  }
  EXPECT_GT(stoppedAtMin, 20) << "the model is EOS-heavy: most requests "
                                 "should stop right after min_tokens";
}

TEST(MinTokens, BansOverrideTheRequestsBiasAndEndAtMinTokens) {
  FakeExecutor ex(32, 4, 64, kVocab);
  ex.model = [](std::span<const int32_t>) { return 3; };
  ex.honorBans = true;
  Engine engine(ex, configOf({3, 4}));
  Request a;
  a.promptIds = {1, 2};
  a.maxTokens = 8;
  a.minTokens = 3;
  a.stopTokenIds = {9, 3};
  a.logitBias = {{3, 5.0f}, {20, -1.5f}};
  Request b; // no bias, no min_tokens: its rows have empty lists
  b.promptIds = {5};
  b.maxTokens = 4;
  b.ignoreEos = true;
  Request c; // ignore_eos: only the stop ids are banned
  c.promptIds = {6};
  c.maxTokens = 2;
  c.minTokens = 2;
  c.ignoreEos = true;
  c.stopTokenIds = {8};
  const int64_t ia = engine.submit(a), ib = engine.submit(b),
                ic = engine.submit(c);
  const auto results = runToEnd(engine);
  // 3 banned -> 4 banned -> 5, three times; then the EOS 3 stops a.
  EXPECT_EQ(results.at(ia).ids, (std::vector<int32_t>{5, 5, 5, 3}));
  EXPECT_EQ(results.at(ia).reason, FinishReason::Stop);
  EXPECT_EQ(results.at(ib).ids, (std::vector<int32_t>{3, 3, 3, 3}));
  EXPECT_EQ(results.at(ic).ids, (std::vector<int32_t>{3, 3}));
  ASSERT_EQ(ex.batches.size(), 4u);
  for (size_t step = 0; step < 4; ++step) {
    const RecordedBatch &batch = ex.batches[step];
    const size_t rows = batch.logitRows.size();
    ASSERT_EQ(batch.biasOffsets.size(), rows + 1) << "step " << step;
    const float inf = -INFINITY;
    if (step < 3) {
      EXPECT_EQ(
          biasOfRow(batch, 0),
          (std::map<int32_t, float>{{3, inf}, {4, inf}, {9, inf}, {20, -1.5f}}))
          << "step " << step;
    } else {
      EXPECT_EQ(biasOfRow(batch, 0),
                (std::map<int32_t, float>{{3, 5.0f}, {20, -1.5f}}));
    }
    EXPECT_TRUE(biasOfRow(batch, 1).empty());
    if (step < 2) {
      EXPECT_EQ(biasOfRow(batch, 2), (std::map<int32_t, float>{{8, inf}}));
    }
  }
  (void)ic;
}

TEST(MinTokens, NoBiasListsWithoutBiasOrMinTokens) {
  FakeExecutor ex(32, 4, 64, kVocab);
  Engine engine(ex, configOf({3}));
  Request r;
  r.promptIds = {1, 2};
  r.maxTokens = 3;
  r.ignoreEos = true;
  engine.submit(r);
  runToEnd(engine);
  for (const RecordedBatch &b : ex.batches) {
    EXPECT_TRUE(b.biasOffsets.empty());
    EXPECT_TRUE(b.biasIds.empty());
  }
}

TEST(LogitBias, ValidatedAtSubmission) {
  FakeExecutor ex(32, 4, 64, kVocab);
  Engine engine(ex, configOf({3}));
  auto err = [&](std::map<int32_t, float> bias) {
    Request r;
    r.promptIds = {1};
    r.maxTokens = 2;
    r.logitBias = std::move(bias);
    return engineErrorOf([&] { engine.submit(std::move(r)); });
  };
  EXPECT_EQ(err({{0, -100.0f}, {59, 100.0f}}), "");
  EXPECT_EQ(err({{60, 1.0f}}),
            "logit_bias names token id 60, outside the vocabulary [0, 60)");
  EXPECT_EQ(err({{-1, 1.0f}}),
            "logit_bias names token id -1, outside the vocabulary [0, 60)");
  EXPECT_EQ(err({{5, 100.5f}}),
            "logit_bias of token 5 is 100.5; biases must be in [-100, 100]");
  EXPECT_EQ(err({{5, -INFINITY}}),
            "logit_bias of token 5 is -inf; biases must be in [-100, 100]");
  EXPECT_EQ(err({{5, NAN}}).find("logit_bias of token 5 is "), 0u);
  Request r;
  r.promptIds = {1};
  r.maxTokens = 2;
  r.eosTokenIds = std::vector<int32_t>{60};
  EXPECT_EQ(engineErrorOf([&] { engine.submit(r); }),
            "EOS token id 60 is outside the vocabulary [0, 60)");
  EXPECT_EQ(engine.stats().numRequests, 1);
}

} // namespace

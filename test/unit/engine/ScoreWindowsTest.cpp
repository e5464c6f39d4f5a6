//===- ScoreWindowsTest.cpp - Scoring windows on the reference executor ---===//
//
// A perplexity pass over the tiny two-layer model of test/unit/reference:
// windows batched several to a step, chunked when longer than the step
// budget, and row-limited steps all give each scored position the logits
// promptLogits gives it when its window runs alone, and the target's
// log-softmax of those logits. The steps respect the budget, the sequence
// limit and the logits limit; no block leaks; a queued generation step is
// retired first and its request ends as if nothing had happened.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"

#include "../reference/TinyModel.h"

#include "runtime/engine/PerplexityWindows.h"
#include "runtime/reference/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>

using namespace sol;
using namespace sol::test;

namespace {

constexpr int32_t kMaxLen = 64;

ReferenceExecutor::Options optionsOf(int32_t blocks) {
  ReferenceExecutor::Options o;
  o.numKvBlocks = blocks;
  o.numThreads = 1;
  return o;
}

/// Forwards to an executor and records the shape of every step.
class RecordingExecutor final : public Executor {
public:
  struct Step {
    size_t tokens, rows, logits;
    int32_t numSeqs;
  };
  explicit RecordingExecutor(Executor &inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  int32_t numKvBlocks() const override { return inner_.numKvBlocks(); }
  int32_t blockSize() const override { return inner_.blockSize(); }
  int32_t maxTokensPerStep() const override {
    return inner_.maxTokensPerStep();
  }
  bool chainsSteps() const override { return inner_.chainsSteps(); }
  void step(const StepBatch &b, const StepOutput &out) override {
    steps.push_back(
        {b.tokens.size(), b.logitRows.size(), out.logits.size(), b.numSeqs});
    inner_.step(b, out);
  }
  std::vector<Step> steps;

private:
  Executor &inner_;
};

EngineConfig configOf(int64_t vocab, int32_t maxNumSeqs, int32_t budget) {
  EngineConfig c;
  c.vocabSize = vocab;
  c.maxModelLen = kMaxLen;
  c.maxNumSeqs = maxNumSeqs;
  c.maxNumBatchedTokens = budget;
  c.seed = 1;
  return c;
}

struct Row {
  int64_t index;
  int32_t target;
  double logprob;
  std::vector<float> logits;
};
using Rows = std::map<std::pair<int32_t, int32_t>, Row>; // (window, t)

/// Scores `windows` and checks what every scoring must hold: each
/// (window, position) once, in increasing order within its window, ranked
/// by `index`; no block kept.
Rows score(Engine &engine, std::span<const ScoreWindow> windows,
           ScoreOptions options = {}, ScoreSummary *summary = nullptr) {
  const int32_t referenced = engine.blockManager().numReferenced();
  Rows rows;
  std::map<int32_t, int32_t> lastPosition;
  const ScoreSummary s = engine.scoreWindows(
      windows,
      [&](const ScoredToken &t) {
        const ScoreWindow &w = windows[size_t(t.window)];
        EXPECT_GE(t.position, w.firstScored);
        EXPECT_LT(size_t(t.position), w.ids.size());
        EXPECT_EQ(t.target, w.ids[size_t(t.position)]);
        EXPECT_EQ(t.logits.size(), size_t(engine.config().vocabSize));
        auto [it, fresh] = lastPosition.try_emplace(t.window, t.position);
        if (!fresh) {
          EXPECT_GT(t.position, it->second) << "window " << t.window;
          it->second = t.position;
        }
        const bool inserted =
            rows.emplace(
                    std::pair(t.window, t.position),
                    Row{t.index, t.target, t.logprob,
                        std::vector<float>(t.logits.begin(), t.logits.end())})
                .second;
        EXPECT_TRUE(inserted) << "window " << t.window << " position "
                              << t.position << " scored twice";
      },
      options);
  int64_t index = 0, want = 0;
  for (size_t i = 0; i < windows.size(); ++i)
    for (size_t t = size_t(windows[i].firstScored); t < windows[i].ids.size();
         ++t, ++index) {
      ++want;
      auto it = rows.find({int32_t(i), int32_t(t)});
      if (it == rows.end()) {
        ADD_FAILURE() << "window " << i << " position " << t << " unscored";
        continue;
      }
      EXPECT_EQ(it->second.index, index);
    }
  EXPECT_EQ(int64_t(rows.size()), want);
  EXPECT_EQ(s.scored, want);
  EXPECT_EQ(engine.blockManager().numReferenced(), referenced);
  engine.blockManager().checkConsistency();
  if (summary)
    *summary = s;
  return rows;
}

double logSoftmaxAt(std::span<const float> row, int32_t target) {
  double max = -INFINITY, sum = 0;
  for (float v : row)
    max = std::max(max, double(v));
  for (float v : row)
    sum += std::exp(double(v) - max);
  return double(row[size_t(target)]) - max - std::log(sum);
}

/// Every row of `got` equals the promptLogits row of its window run alone
/// (float32 tolerance), and its logprob is the target's log-softmax.
void expectAloneRows(const Rows &got, std::span<const ScoreWindow> windows,
                     Engine &alone) {
  const size_t V = size_t(alone.config().vocabSize);
  for (size_t i = 0; i < windows.size(); ++i) {
    const std::vector<float> logits = alone.promptLogits(windows[i].ids);
    for (size_t t = size_t(windows[i].firstScored); t < windows[i].ids.size();
         ++t) {
      const Row &row = got.at({int32_t(i), int32_t(t)});
      const std::span<const float> want =
          std::span<const float>(logits).subspan((t - 1) * V, V);
      for (size_t v = 0; v < V; ++v)
        ASSERT_NEAR(row.logits[v], want[v], 1e-5f * (1.0f + std::abs(want[v])))
            << "window " << i << " position " << t << " logit " << v;
      EXPECT_NEAR(row.logprob, logSoftmaxAt(want, windows[i].ids[t]), 1e-5);
      EXPECT_NEAR(row.logprob, logSoftmaxAt(row.logits, row.target), 1e-12);
    }
  }
}

/// Windows of Transformers' recipe over `n` random ids.
struct Pass {
  std::vector<int32_t> ids;
  std::vector<ScoreWindow> windows;
};
Pass strided(int64_t n, int64_t window, int64_t stride, int32_t vocab,
             uint32_t seed) {
  Pass p;
  std::mt19937 rng(seed);
  p.ids = randomIds(rng, size_t(n), vocab);
  for (const PerplexityWindow &w : perplexityWindows(n, window, stride))
    p.windows.push_back({std::span<const int32_t>(p.ids).subspan(
                             size_t(w.begin), size_t(w.end - w.begin)),
                         int32_t(w.scoreFrom - w.begin)});
  return p;
}

TEST(ScoreWindows, BatchedWindowsMatchEachWindowAlone) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  const int32_t vocab = int32_t(model.config().vocab);
  const Pass pass = strided(90, 24, 10, vocab, 7); // 7 windows
  ASSERT_GE(pass.windows.size(), 6u);

  ReferenceExecutor ex(plan, optionsOf(64));
  RecordingExecutor rec(ex);
  Engine engine(rec, configOf(vocab, 8, 64));
  ScoreSummary summary;
  const Rows rows = score(engine, pass.windows, {}, &summary);
  // Several windows shared steps: 7 windows of 23 inputs in 64-token steps.
  EXPECT_GE(summary.maxWindowsPerStep, 3);
  EXPECT_LT(summary.steps, int64_t(pass.windows.size()));
  EXPECT_EQ(summary.steps, int64_t(rec.steps.size()));
  int64_t tokens = 0;
  for (const RecordingExecutor::Step &s : rec.steps) {
    EXPECT_LE(s.tokens, 64u);
    EXPECT_LE(s.numSeqs, 8);
    tokens += int64_t(s.tokens);
  }
  // Each window's last id is only a target: never computed.
  int64_t inputs = 0;
  for (const ScoreWindow &w : pass.windows)
    inputs += int64_t(w.ids.size()) - 1;
  EXPECT_EQ(tokens, inputs);
  EXPECT_EQ(summary.computedTokens, inputs);

  ReferenceExecutor aloneEx(plan, optionsOf(64));
  Engine alone(aloneEx, configOf(vocab, 8, 64));
  expectAloneRows(rows, pass.windows, alone);
}

TEST(ScoreWindows, ChunkingAndRowLimitsChangeNothing) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  const int32_t vocab = int32_t(model.config().vocab);
  // Windows of 30 ids with 20 of context after the first: steps of 5
  // tokens run some windows' context alone.
  const Pass pass = strided(75, 30, 10, vocab, 11);
  ReferenceExecutor ex(plan, optionsOf(64));
  Engine whole(ex, configOf(vocab, 8, 64));
  const Rows want = score(whole, pass.windows);

  for (const auto &[budget, maxSeqs, maxRows] :
       {std::tuple{5, 3, 64}, std::tuple{7, 2, 3}, std::tuple{64, 8, 1},
        std::tuple{1, 1, 64}}) {
    SCOPED_TRACE(testing::Message() << "budget " << budget << ", seqs "
                                    << maxSeqs << ", rows " << maxRows);
    ReferenceExecutor chunkedEx(plan, optionsOf(64));
    RecordingExecutor rec(chunkedEx);
    Engine chunked(rec, configOf(vocab, maxSeqs, budget));
    ScoreOptions options;
    options.maxLogitsBytesPerStep = size_t(maxRows) * size_t(vocab) * 4;
    ScoreSummary summary;
    const Rows got = score(chunked, pass.windows, options, &summary);
    int contextOnly = 0;
    for (const RecordingExecutor::Step &s : rec.steps) {
      EXPECT_LE(s.tokens, size_t(budget));
      EXPECT_LE(s.numSeqs, maxSeqs);
      EXPECT_LE(s.rows, size_t(maxRows));
      EXPECT_GE(s.rows, 1u); // the CUDA executor needs a row
      // A step of context only takes no logits back.
      EXPECT_TRUE(s.logits == s.rows * size_t(vocab) || s.logits == 0);
      contextOnly += s.logits == 0;
    }
    if (budget < 20) {
      EXPECT_GT(contextOnly, 0);
    }
    ASSERT_EQ(got.size(), want.size());
    for (const auto &[key, row] : want) {
      const Row &g = got.at(key);
      EXPECT_EQ(g.index, row.index);
      EXPECT_NEAR(g.logprob, row.logprob, 1e-5);
      for (size_t v = 0; v < row.logits.size(); ++v)
        ASSERT_NEAR(g.logits[v], row.logits[v],
                    1e-5f * (1.0f + std::abs(row.logits[v])));
    }
  }
}

TEST(ScoreWindows, NllMatchesTheDenseModelInDouble) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  const int32_t vocab = int32_t(model.config().vocab);
  const Pass pass = strided(50, 16, 6, vocab, 3);
  ReferenceExecutor ex(plan, optionsOf(32));
  Engine engine(ex, configOf(vocab, 4, 32));
  const Rows rows = score(engine, pass.windows);
  double got = 0, want = 0;
  for (size_t i = 0; i < pass.windows.size(); ++i) {
    const ScoreWindow &w = pass.windows[i];
    const std::vector<double> naive =
        model.naiveLogits(std::vector<int32_t>(w.ids.begin(), w.ids.end()));
    for (size_t t = size_t(w.firstScored); t < w.ids.size(); ++t) {
      const double *row = naive.data() + (t - 1) * size_t(vocab);
      double max = -INFINITY, sum = 0;
      for (int32_t v = 0; v < vocab; ++v)
        max = std::max(max, row[v]);
      for (int32_t v = 0; v < vocab; ++v)
        sum += std::exp(row[v] - max);
      want -= row[w.ids[t]] - max - std::log(sum);
      got -= rows.at({int32_t(i), int32_t(t)}).logprob;
    }
  }
  EXPECT_EQ(rows.size(), 49u); // positions 1..49, once each
  EXPECT_NEAR(got / 49, want / 49, 1e-4 * want / 49);
}

TEST(ScoreWindows, RetiresAQueuedStepAndLeavesRequestsAsTheyWere) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  const int32_t vocab = int32_t(model.config().vocab);
  const Request request = greedy({1, 2, 3, 4, 5, 6, 7, 8, 9}, 12);
  std::map<int64_t, Finished> want;
  {
    ReferenceExecutor ex(plan, optionsOf(64));
    Engine engine(ex, configOf(vocab, 8, 64));
    engine.submit(request);
    want = runToEnd(engine);
  }
  ReferenceExecutor ex(plan, optionsOf(64));
  Engine engine(ex, configOf(vocab, 8, 64));
  const int64_t id = engine.submit(request);
  std::map<int64_t, Finished> got;
  // Prefill, then decodes: with async scheduling a step is queued ahead.
  for (int i = 0; i < 3; ++i)
    for (const RequestOutput &o : engine.step())
      accumulate(got, o);
  EXPECT_GT(engine.blockManager().numReferenced(), 0);
  EXPECT_GT(engine.stats().chainedSteps, 0); // a step is queued
  const Pass pass = strided(40, 16, 8, vocab, 5);
  score(engine, pass.windows);
  for (auto &[rid, f] : runToEnd(engine)) {
    Finished &g = got[rid];
    g.ids.insert(g.ids.end(), f.ids.begin(), f.ids.end());
    g.reason = f.reason;
  }
  EXPECT_EQ(got.at(id).ids, want.begin()->second.ids);
  EXPECT_EQ(got.at(id).reason, FinishReason::Length);
  EXPECT_EQ(engine.blockManager().numReferenced(), 0);
}

TEST(ScoreWindows, RejectsWindowsBeforeRunningAnything) {
  TinyModel model;
  const PlanFile plan = model.plan.write();
  const int32_t vocab = int32_t(model.config().vocab);
  ReferenceExecutor ex(plan, optionsOf(4)); // 16 tokens of KV cache
  RecordingExecutor rec(ex);
  Engine engine(rec, configOf(vocab, 4, 32));
  const std::vector<int32_t> good = {1, 2, 3, 4, 5};
  const std::vector<int32_t> outside = {1, 2, 3, 29, 5};
  const std::vector<int32_t> longer(20, 1);
  const std::vector<int32_t> tooLong(kMaxLen + 1, 1);
  int calls = 0;
  auto count = [&](const ScoredToken &) { ++calls; };
  auto run = [&](std::vector<ScoreWindow> windows) {
    return engineErrorOf([&] { engine.scoreWindows(windows, count); });
  };
  EXPECT_EQ(run({{good, 1}, {outside, 2}}),
            "scoring window 1 has id 29 at position 3, outside the "
            "vocabulary [0, 29)");
  EXPECT_EQ(run({{good, 0}}), "scoring window 0 of 5 ids: its first scored "
                              "position 0 is outside 1..5");
  EXPECT_EQ(run({{good, 6}}), "scoring window 0 of 5 ids: its first scored "
                              "position 6 is outside 1..5");
  EXPECT_EQ(run({{good, 1}, {tooLong, 1}}),
            "scoring window 1 holds 65 ids, beyond the maximum model length "
            "of 64 tokens (--max-model-len)");
  EXPECT_EQ(run({{longer, 1}}),
            "a scoring window needs 5 KV-cache blocks of 4 tokens but 4 of 4 "
            "are available; use a shorter window or wait for running "
            "requests to finish");
  // Nothing ran, nothing is held.
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(rec.steps.empty());
  EXPECT_EQ(engine.blockManager().numReferenced(), 0);
  // A window of 17 ids computes 16: it fits. One of 5 ids scoring nothing
  // runs nothing.
  const std::vector<int32_t> fits(17, 2);
  EXPECT_EQ(run({{fits, 1}, {good, 5}}), "");
  EXPECT_EQ(calls, 16);
}

} // namespace

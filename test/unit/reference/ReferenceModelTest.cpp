//===- ReferenceModelTest.cpp - A whole small model, step by step ---------===//
//
// The tiny two-layer model against a dense double-precision recomputation,
// and the properties an engine relies on: prefill + decode steps give the
// logits of one long prefill; sequences batched together, interleaved and
// scattered over non-contiguous blocks, give the logits they give alone.
//
//===----------------------------------------------------------------------===//

#include "TinyModel.h"

#include "runtime/reference/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

using namespace sol;
using namespace sol::test;

namespace {

std::vector<int32_t> randomTokens(size_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0,
                                              static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> out(n);
  for (int32_t &t : out)
    t = dist(rng);
  return out;
}

double relativeL2(const std::vector<float> &a, const std::vector<double> &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

void expectClose(const std::vector<float> &a, const std::vector<float> &b,
                 float tol = 1e-5f) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol) << "at index " << i;
}

/// Rows [begin, end) of a row-major [rows x vocab] matrix.
std::vector<float> rowsOf(const std::vector<float> &m, int64_t vocab,
                          size_t begin, size_t end) {
  return {m.begin() + static_cast<int64_t>(begin) * vocab,
          m.begin() + static_cast<int64_t>(end) * vocab};
}

ReferenceExecutor::Options cacheOf(int32_t blocks) {
  ReferenceExecutor::Options o;
  o.numKvBlocks = blocks;
  return o;
}

} // namespace

TEST(ReferenceModel, MatchesDenseDoubleComputation) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor ex(f, cacheOf(8));
  const int64_t V = model.config().vocab;
  const auto tokens = randomTokens(13, V, 3);
  const auto logits = runStep(ex, TestStep::sequence(tokens, 0, 4), V);
  const auto expected = model.naiveLogits(tokens);
  ASSERT_EQ(logits.size(), expected.size());
  EXPECT_LT(relativeL2(logits, expected), 1e-5);
  for (size_t i = 0; i < logits.size(); ++i)
    ASSERT_NEAR(logits[i], expected[i], 1e-4) << "at index " << i;
}

TEST(ReferenceModel, DenseTwinSeesTheSlidingWindow) {
  // Guards the test itself: the window of layer 1 must change the logits,
  // or the comparison above would not cover it.
  TinyModelConfig noWindow;
  noWindow.slidingWindow = {0, 0};
  TinyModel windowed, full(noWindow);
  const auto tokens = randomTokens(13, windowed.config().vocab, 3);
  const auto a = windowed.naiveLogits(tokens);
  const auto b = full.naiveLogits(tokens);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::abs(a[i] - b[i]));
  EXPECT_GT(diff, 1e-3);
}

TEST(ReferenceModel, PrefillThenDecodeMatchesOneLongPrefill) {
  TinyModel model;
  PlanFile f = model.plan.write();
  const int64_t V = model.config().vocab;
  const auto tokens = randomTokens(12, V, 5);

  ReferenceExecutor once(f, cacheOf(4));
  std::vector<int32_t> fullArgmax;
  const auto full =
      runStep(once, TestStep::sequence(tokens, 0, 4), V, &fullArgmax);

  // Prefill 5, a chunk of 4, then three single-token decode steps.
  ReferenceExecutor inc(f, cacheOf(4));
  std::vector<float> pieces;
  std::vector<int32_t> argmax;
  size_t begin = 0;
  for (size_t end : {5u, 9u, 10u, 11u, 12u}) {
    std::vector<int32_t> chunk(tokens.begin() + static_cast<int64_t>(begin),
                               tokens.begin() + static_cast<int64_t>(end));
    std::vector<int32_t> ids;
    const auto part =
        runStep(inc, TestStep::sequence(chunk, static_cast<int32_t>(begin), 4),
                V, &ids);
    pieces.insert(pieces.end(), part.begin(), part.end());
    argmax.insert(argmax.end(), ids.begin(), ids.end());
    begin = end;
  }
  expectClose(pieces, full);
  EXPECT_EQ(argmax, fullArgmax);
}

TEST(ReferenceModel, LogitRowsSelectTokens) {
  TinyModel model;
  PlanFile f = model.plan.write();
  const int64_t V = model.config().vocab;
  const auto tokens = randomTokens(7, V, 9);
  ReferenceExecutor ex(f, cacheOf(4));
  const auto full = runStep(ex, TestStep::sequence(tokens, 0, 2), V);
  TestStep last = TestStep::sequence(tokens, 0, 2);
  last.logitRows = {6, 2};
  const auto picked = runStep(ex, last, V);
  std::vector<float> expected = rowsOf(full, V, 6, 7);
  const auto row2 = rowsOf(full, V, 2, 3);
  expected.insert(expected.end(), row2.begin(), row2.end());
  expectClose(picked, expected);
}

TEST(ReferenceModel, BatchedInterleavedSequencesMatchRunningAlone) {
  TinyModel model;
  PlanFile f = model.plan.write();
  const int64_t V = model.config().vocab;
  const int32_t bs = model.config().blockSize;
  const auto a = randomTokens(10, V, 11);
  const auto b = randomTokens(7, V, 12);

  // Alone: contiguous blocks 0, 1, 2.
  ReferenceExecutor aloneA(f, cacheOf(3)), aloneB(f, cacheOf(3));
  const auto refA = runStep(aloneA, TestStep::sequence(a, 0, 3), V);
  const auto refB = runStep(aloneB, TestStep::sequence(b, 0, 3), V);

  // Together: scattered, non-contiguous blocks.
  ReferenceExecutor ex(f, cacheOf(12));
  const std::vector<int32_t> tables = {9, 3, 7, /*b*/ 2, 10, 0};
  struct Piece {
    int32_t seq, begin, end;
  };
  // Step 1: a[0..6) and b[0..4), interleaved. Step 2: a[6..9) with b[4..7).
  // Step 3: decode of a[9] alone.
  const std::vector<std::vector<Piece>> steps = {
      {{0, 0, 6}, {1, 0, 4}}, {{1, 4, 7}, {0, 6, 9}}, {{0, 9, 10}}};
  std::vector<float> gotA(refA.size()), gotB(refB.size());
  for (const auto &pieces : steps) {
    TestStep s;
    s.numSeqs = 2;
    s.maxBlocksPerSeq = 3;
    s.blockTables = tables;
    // Round-robin over the pieces so the sequences' tokens interleave.
    std::vector<std::pair<int32_t, int32_t>> order; // (seq, position)
    for (int32_t i = 0;; ++i) {
      bool any = false;
      for (const Piece &p : pieces)
        if (p.begin + i < p.end) {
          order.emplace_back(p.seq, p.begin + i);
          any = true;
        }
      if (!any)
        break;
    }
    for (const auto &[seq, pos] : order) {
      s.tokens.push_back(seq == 0 ? a[static_cast<size_t>(pos)]
                                  : b[static_cast<size_t>(pos)]);
      s.positions.push_back(pos);
      s.tokenSeq.push_back(seq);
      s.logitRows.push_back(static_cast<int32_t>(s.logitRows.size()));
    }
    const auto logits = runStep(ex, s, V);
    for (size_t r = 0; r < order.size(); ++r) {
      auto &dst = order[r].first == 0 ? gotA : gotB;
      std::copy_n(logits.begin() + static_cast<int64_t>(r) * V, V,
                  dst.begin() + static_cast<int64_t>(order[r].second) * V);
    }
  }
  EXPECT_GT(bs, 1) << "blocks of 1 token would not test slots";
  expectClose(gotA, refA);
  expectClose(gotB, refB);
}

TEST(ReferenceModel, PlanFileMayBeClosedAfterConstruction) {
  TinyModel model;
  const int64_t V = model.config().vocab;
  const TestStep step = TestStep::sequence({3, 1, 4}, 0, 1);
  PlanFile open = model.plan.write();
  ReferenceExecutor kept(open, cacheOf(2));
  std::optional<PlanFile> f(model.plan.write());
  ReferenceExecutor closed(*f, cacheOf(2));
  f.reset(); // unmaps that copy of the plan
  EXPECT_EQ(runStep(closed, step, V), runStep(kept, step, V));
}

TEST(ReferenceModel, DefaultCacheSizeFollowsOptions) {
  TinyModel model;
  model.plan.maxPositionEmbeddings = 100000;
  PlanFile f = model.plan.write();
  const int32_t bs = model.config().blockSize;
  ReferenceExecutor byDefault(f);
  EXPECT_EQ(byDefault.name(), "cpu");
  EXPECT_EQ(byDefault.blockSize(), bs);
  EXPECT_EQ(byDefault.numKvBlocks(), 4096 / bs); // capped at 4096 positions
  EXPECT_EQ(byDefault.maxTokensPerStep(), 64);   // the plan's value

  ReferenceExecutor::Options o;
  o.maxModelLen = 101;
  o.maxSeqs = 3;
  o.maxTokensPerStep = 5;
  ReferenceExecutor sized(f, o);
  EXPECT_EQ(sized.numKvBlocks(), (101 + bs - 1) / bs * 3);
  EXPECT_EQ(sized.maxTokensPerStep(), 5);
  const auto &c = model.config();
  EXPECT_EQ(sized.kvCacheBytes(),
            static_cast<uint64_t>(2 * c.layers * sized.numKvBlocks() * bs *
                                  c.kvHeads * c.headDim * 4));
  EXPECT_GT(sized.weightBytes(), 0u);
}

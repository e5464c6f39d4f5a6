//===- ReferenceSamplingTest.cpp - The reference executor samples ---------===//
//
// Steps with StepBatch::sampling / penalties / numTopLogprobs on the tiny
// model: the chosen ids, logprobs and top logprobs are CpuSampler's on the
// step's own logits; top-k 1 is greedy; a seed repeats its tokens; bad
// sampling inputs are refused with the validation's message.
//
//===----------------------------------------------------------------------===//

#include "TinyModel.h"

#include "runtime/reference/ReferenceExecutor.h"
#include "runtime/sampling/CpuSampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace sol;
using namespace sol::test;

namespace {

ReferenceExecutor::Options cacheOf(int32_t blocks) {
  ReferenceExecutor::Options o;
  o.numKvBlocks = blocks;
  return o;
}

const std::vector<int32_t> kTokens = {3, 14, 15, 9, 2, 6, 5};

/// One prefill step of kTokens (logits for every token) with `sampling`
/// rows; returns the chosen ids (and logits, logprobs, top logprobs).
struct Sampled {
  std::vector<float> logits;
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  std::vector<int32_t> topIds;
  std::vector<float> topLogprobs;
};

Sampled runSampled(Executor &ex, int64_t vocab,
                   const std::vector<SamplingRow> &sampling, int32_t numTop = 0,
                   const PenaltyTokens &penalties = {}, bool logprobs = false,
                   const LogitBias &bias = {}) {
  const TestStep step = TestStep::sequence(kTokens, 0, 2);
  StepBatch batch = step.view();
  batch.sampling = sampling;
  batch.penalties = penalties;
  batch.logitBias = bias;
  batch.numTopLogprobs = numTop;
  const size_t R = step.logitRows.size();
  Sampled s;
  s.logits.resize(R * static_cast<size_t>(vocab));
  s.ids.assign(R, -1);
  s.logprobs.resize(logprobs ? R : 0);
  s.topIds.resize(R * static_cast<size_t>(numTop));
  s.topLogprobs.resize(s.topIds.size());
  StepOutput out;
  out.logits = s.logits;
  out.argmax = s.ids;
  out.logprobs = s.logprobs;
  out.topIds = s.topIds;
  out.topLogprobs = s.topLogprobs;
  ex.step(batch, out);
  return s;
}

std::vector<SamplingRow> rows(size_t n, float temperature, int32_t topK,
                              uint64_t seed, int32_t counter = 0) {
  std::vector<SamplingRow> v(n);
  for (size_t r = 0; r < n; ++r) {
    v[r].temperature = temperature;
    v[r].topK = topK;
    v[r].seed = seed + r;
    v[r].counter = counter;
  }
  return v;
}

} // namespace

TEST(ReferenceSampling, TopK1IsGreedy) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor ex(f, cacheOf(4));
  const int64_t V = model.config().vocab;
  const Sampled greedy = runSampled(ex, V, {});
  for (uint64_t seed : {1u, 2u, 3u}) {
    const Sampled k1 = runSampled(ex, V, rows(kTokens.size(), 1.5f, 1, seed));
    EXPECT_EQ(k1.ids, greedy.ids) << "seed " << seed;
  }
  // Temperature 0 rows are greedy whatever the other parameters say.
  EXPECT_EQ(runSampled(ex, V, rows(kTokens.size(), 0.0f, 5, 9)).ids,
            greedy.ids);
}

TEST(ReferenceSampling, SeedsRepeatAndCountersVary) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor a(f, cacheOf(4)), b(f, cacheOf(4));
  const int64_t V = model.config().vocab;
  const auto sampling = rows(kTokens.size(), 5.0f, 0, 42);
  const Sampled first = runSampled(a, V, sampling);
  EXPECT_EQ(runSampled(a, V, sampling).ids, first.ids);
  EXPECT_EQ(runSampled(b, V, sampling).ids, first.ids);
  // A hot distribution over 29 tokens: new counters give other draws.
  std::set<std::vector<int32_t>> seen;
  for (int32_t counter = 0; counter < 8; ++counter)
    seen.insert(
        runSampled(a, V, rows(kTokens.size(), 5.0f, 0, 42, counter)).ids);
  EXPECT_GT(seen.size(), 4u);
}

TEST(ReferenceSampling, ResultsAreCpuSamplersOnTheStepLogits) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor ex(f, cacheOf(4));
  const int64_t V = model.config().vocab;
  std::vector<SamplingRow> sampling = rows(kTokens.size(), 0.9f, 10, 7);
  sampling[1].topP = 0.8f;
  sampling[2].minP = 0.1f;
  sampling[3].temperature = 0.0f;
  sampling[4].repetitionPenalty = 1.3f;
  sampling[4].presencePenalty = 0.4f;
  sampling[4].frequencyPenalty = 0.2f;
  sampling[5].repetitionPenalty = 2.0f;
  sampling[5].temperature = 0.0f; // greedy over penalised logits
  // Penalties for rows 4 and 5 only.
  const std::vector<int32_t> offsets = {0, 0, 0, 0, 0, 3, 5, 5};
  const std::vector<int32_t> ids = {3, 14, 20, 1, 2};
  const std::vector<int32_t> counts = {2, 0, 1, 0, 4};
  const std::vector<uint8_t> inPrompt = {1, 1, 0, 1, 0};
  const PenaltyTokens penalties{offsets, ids, counts, inPrompt};
  const Sampled s = runSampled(ex, V, sampling, 4, penalties, true);

  sampling::CpuSampler cpu;
  for (size_t r = 0; r < kTokens.size(); ++r) {
    const std::span<const float> row(s.logits.data() + r * V,
                                     static_cast<size_t>(V));
    EXPECT_EQ(s.ids[r], cpu.sample(row, sampling[r],
                                   sampling::rowPenalties(penalties, r)))
        << "row " << r;
    EXPECT_EQ(s.logprobs[r], sampling::CpuSampler::logprob(row, s.ids[r]));
    std::vector<int32_t> topIds(4);
    std::vector<float> topLps(4);
    sampling::CpuSampler::topLogprobs(row, topIds, topLps);
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(s.topIds[r * 4 + j], topIds[j]);
      EXPECT_EQ(s.topLogprobs[r * 4 + j], topLps[j]);
    }
    // The raw logits come back, not the penalised ones.
    EXPECT_LE(s.topLogprobs[r * 4], 0.0f);
  }
  // The logits are unpenalised: the same as a plain step's.
  const Sampled plain = runSampled(ex, V, {});
  EXPECT_EQ(plain.logits, s.logits);
}

TEST(ReferenceSampling, LogprobsOfGreedyIds) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor ex(f, cacheOf(4));
  const int64_t V = model.config().vocab;
  const Sampled plain = runSampled(ex, V, {});
  const Sampled s = runSampled(ex, V, {}, 0, {}, true);
  EXPECT_EQ(s.ids, plain.ids);
  for (size_t r = 0; r < kTokens.size(); ++r) {
    const std::span<const float> row(s.logits.data() + r * V,
                                     static_cast<size_t>(V));
    EXPECT_EQ(s.logprobs[r], sampling::CpuSampler::logprob(row, s.ids[r]));
  }
}

TEST(ReferenceSampling, LogitBiasBansAndBoostsPerRow) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor ex(f, cacheOf(4));
  const int64_t V = model.config().vocab;
  const size_t R = kTokens.size();
  const Sampled plain = runSampled(ex, V, {});
  // Each row bans its greedy id; row 1 also forces id 7; the last row has
  // no bias.
  std::vector<int32_t> offsets = {0}, ids;
  std::vector<float> values;
  for (size_t r = 0; r < R; ++r) {
    if (r + 1 < R) {
      ids.push_back(plain.ids[r]);
      values.push_back(-INFINITY);
      if (r == 1 && plain.ids[r] != 7) {
        ids.push_back(7);
        values.push_back(100.0f);
      }
    }
    offsets.push_back(static_cast<int32_t>(ids.size()));
  }
  const LogitBias bias{offsets, ids, values};
  for (const std::vector<SamplingRow> &sampling :
       {std::vector<SamplingRow>{}, rows(R, 1.0f, 0, 3), rows(R, 0.8f, 3, 5)}) {
    const Sampled s = runSampled(ex, V, sampling, 0, {}, true, bias);
    sampling::CpuSampler cpu;
    for (size_t r = 0; r < R; ++r) {
      const std::span<const float> row(
          s.logits.data() + r * static_cast<size_t>(V), static_cast<size_t>(V));
      const SamplingRow p = sampling.empty() ? SamplingRow{} : sampling[r];
      EXPECT_EQ(s.ids[r], cpu.sample(row, p, {}, sampling::rowBias(bias, r)));
      if (r + 1 < R) {
        EXPECT_NE(s.ids[r], plain.ids[r]) << "row " << r << " drew its ban";
      }
      // Logprobs are of the raw logits.
      EXPECT_EQ(s.logprobs[r], sampling::CpuSampler::logprob(row, s.ids[r]));
    }
    EXPECT_EQ(s.ids[1], plain.ids[1] != 7 ? 7 : s.ids[1]);
    if (sampling.empty()) {
      EXPECT_EQ(s.ids[R - 1], plain.ids[R - 1]);
    }
  }
  const std::vector<int32_t> badIds = {3};
  const std::vector<float> nan = {NAN};
  const std::vector<int32_t> badOffsets = {0, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_NE(errorOf([&] {
              runSampled(ex, V, {}, 0, {}, false, {badOffsets, badIds, nan});
            }).find("logitBias row 0 entry 0 (token 3): the bias is"),
            std::string::npos);
}

TEST(ReferenceSampling, BadSamplingInputsAreRefused) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor ex(f, cacheOf(4));
  const int64_t V = model.config().vocab;
  std::vector<SamplingRow> sampling = rows(kTokens.size(), 1.0f, 0, 1);
  sampling[2].topP = 0.0f;
  EXPECT_NE(errorOf([&] {
              runSampled(ex, V, sampling);
            }).find("sampling row 2: topP must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              runSampled(ex, V, rows(2, 1.0f, 0, 1));
            }).find("sampling holds 2 rows"),
            std::string::npos);
  const std::vector<int32_t> offsets = {0, 1, 1, 1, 1, 1, 1, 1};
  const std::vector<int32_t> ids = {29};
  const std::vector<int32_t> counts = {1};
  const std::vector<uint8_t> inPrompt = {0};
  EXPECT_NE(errorOf([&] {
              runSampled(ex, V, {}, 0, {offsets, ids, counts, inPrompt});
            }).find("token id 29 is outside the vocabulary of 29 ids"),
            std::string::npos);
}

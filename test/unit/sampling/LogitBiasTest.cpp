//===- LogitBiasTest.cpp - Logit bias and bans in CpuSampler --------------===//
//
// The logit bias is added to the raw logits before the penalties; -inf bans
// a token for greedy and sampled rows alike; logprobs stay those of the raw
// logits.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/CpuSampler.h"
#include "runtime/sampling/StepSampling.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace sol;
using namespace sol::sampling;

namespace {

std::vector<float> randomLogits(size_t n, uint32_t seed, float scale = 2.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

SamplingRow sampled(float temperature, int32_t topK = 0, float topP = 1.0f,
                    float minP = 0.0f, uint64_t seed = 1) {
  SamplingRow s;
  s.temperature = temperature;
  s.topK = topK;
  s.topP = topP;
  s.minP = minP;
  s.seed = seed;
  return s;
}

int32_t argmaxOf(const std::vector<float> &v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(LogitBias, ABannedArgmaxIsNeverChosen) {
  std::vector<float> logits = randomLogits(500, 3);
  logits[42] = 30.0f; // all but certain without the ban
  const std::vector<int32_t> ids = {42};
  const std::vector<float> ban = {-INFINITY};
  const RowBias bias{ids, ban};
  CpuSampler sampler;
  EXPECT_EQ(sampler.sample(logits, SamplingRow{}), 42);
  std::vector<float> rest = logits;
  rest[42] = -INFINITY;
  EXPECT_EQ(sampler.sample(logits, SamplingRow{}, {}, bias), argmaxOf(rest));
  for (const SamplingRow &base :
       {sampled(1.0f), sampled(2.0f, 1), sampled(0.5f, 0, 0.3f),
        sampled(1.0f, 0, 1.0f, 0.9f), sampled(3.0f, 20, 0.99f, 0.01f)}) {
    SamplingRow s = base;
    for (int32_t c = 0; c < 300; ++c) {
      s.counter = c;
      ASSERT_NE(sampler.sample(logits, s, {}, bias), 42) << "counter " << c;
    }
    const std::vector<double> p = sampler.distribution(logits, s, {}, bias);
    EXPECT_EQ(p[42], 0.0);
  }
}

TEST(LogitBias, GreedyFollowsTheBias) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.5f, -1.0f};
  CpuSampler sampler;
  const std::vector<int32_t> ids = {2, 3};
  const std::vector<float> up = {0.75f, 0.0f};
  EXPECT_EQ(sampler.sample(logits, SamplingRow{}), 1);
  EXPECT_EQ(sampler.sample(logits, SamplingRow{}, {}, {ids, up}), 2);
  const std::vector<float> force = {0.0f, 100.0f};
  EXPECT_EQ(sampler.sample(logits, SamplingRow{}, {}, {ids, force}), 3);
  // A tie made by the bias goes to the lower id.
  const std::vector<float> tie = {0.5f, 4.0f};
  EXPECT_EQ(sampler.sample(logits, SamplingRow{}, {}, {ids, tie}), 1);
  // Everything banned: the greedy limit, id 0, as for an all -inf row.
  const std::vector<int32_t> all = {0, 1, 2, 3};
  const std::vector<float> bans(4, -INFINITY);
  EXPECT_EQ(sampler.sample(logits, SamplingRow{}, {}, {all, bans}), 0);
  EXPECT_EQ(sampler.sample(logits, sampled(1.0f), {}, {all, bans}), 0);
}

TEST(LogitBias, IsAddedBeforeThePenalties) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f};
  SamplingRow s;
  s.repetitionPenalty = 2.0f;
  s.frequencyPenalty = 0.25f;
  const std::vector<int32_t> pids = {0, 1};
  const std::vector<int32_t> counts = {1, 0};
  const std::vector<uint8_t> prompt = {0, 1};
  const std::vector<int32_t> bids = {1, 0, 2};
  const std::vector<float> values = {3.0f, -2.5f, -INFINITY};
  const std::vector<float> out =
      CpuSampler::penalized(logits, s, {pids, counts, prompt}, {bids, values});
  EXPECT_EQ(out[0], (2.0f - 2.5f) * 2.0f - 0.25f); // biased, then penalised
  EXPECT_EQ(out[1], (-1.0f + 3.0f) / 2.0f);
  EXPECT_EQ(out[2], -INFINITY);
  EXPECT_EQ(out[3], 3.0f);
}

TEST(LogitBias, TheDistributionIsThatOfTheBiasedLogits) {
  const std::vector<float> logits = randomLogits(2000, 9, 3.0f);
  std::mt19937 rng(5);
  std::vector<int32_t> ids;
  std::vector<float> values;
  std::vector<float> biased = logits;
  for (int32_t id = 0; id < 2000; id += 7) {
    const float b = std::uniform_real_distribution<float>(-100, 100)(rng);
    ids.push_back(id);
    values.push_back(id % 3 == 0 ? -INFINITY : b);
    biased[static_cast<size_t>(id)] += values.back();
  }
  CpuSampler sampler;
  for (const SamplingRow &base :
       {SamplingRow{}, sampled(1.0f), sampled(0.7f, 40), sampled(1.3f, 0, 0.9f),
        sampled(1.0f, 100, 0.95f, 0.02f)}) {
    SamplingRow s = base;
    EXPECT_EQ(sampler.distribution(logits, s, {}, {ids, values}),
              sampler.distribution(biased, s));
    for (int32_t c = 0; c < 50; ++c) {
      s.counter = c;
      const int32_t id = sampler.sample(logits, s, {}, {ids, values});
      EXPECT_EQ(id, sampler.sample(biased, s));
      EXPECT_TRUE(std::isfinite(biased[static_cast<size_t>(id)]));
    }
  }
}

TEST(LogitBias, StepAppliesEachRowsBiasAndReportsRawLogprobs) {
  const int64_t V = 40;
  std::vector<float> logits;
  for (uint32_t r = 0; r < 3; ++r) {
    const std::vector<float> row = randomLogits(V, 200 + r);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  const std::vector<int32_t> rows = {0, 1, 2};
  const std::vector<SamplingRow> params = {SamplingRow{}, sampled(1.0f, 5),
                                           sampled(0.8f, 0, 0.9f)};
  const std::vector<int32_t> offsets = {0, 2, 2, 5};
  const std::vector<int32_t> ids = {3, 9, 1, 2, 30};
  const std::vector<float> values = {-INFINITY, 50.0f, 1.0f, -INFINITY, 7.0f};
  StepBatch batch;
  batch.logitRows = rows;
  batch.sampling = params;
  batch.logitBias = {offsets, ids, values};
  std::vector<int32_t> chosen(3, -1);
  std::vector<float> lps(3);
  StepOutput out;
  out.argmax = chosen;
  out.logprobs = lps;
  ASSERT_NO_THROW(validateSampling(batch, out, V));
  EXPECT_TRUE(stepNeedsSampling(batch, StepOutput{{}, chosen}));
  CpuSampler sampler;
  sampler.sampleStep(logits, V, batch, out);
  EXPECT_EQ(chosen[0], 9);
  for (size_t r = 0; r < 3; ++r) {
    const std::span<const float> row(logits.data() + r * V,
                                     static_cast<size_t>(V));
    CpuSampler alone;
    EXPECT_EQ(chosen[r],
              alone.sample(row, params[r], {}, rowBias(batch.logitBias, r)));
    EXPECT_EQ(lps[r], CpuSampler::logprob(row, chosen[r])) << "raw logits";
  }
}

std::string biasError(std::vector<int32_t> offsets, std::vector<int32_t> ids,
                      std::vector<float> values) {
  const std::vector<int32_t> rows = {0, 1};
  StepBatch b;
  b.logitRows = rows;
  b.logitBias = {offsets, ids, values};
  try {
    validateSampling(b, StepOutput{}, 100);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(LogitBias, MalformedListsAreRefusedByName) {
  EXPECT_EQ(biasError({0, 1, 2}, {5, 5}, {1.0f, -INFINITY}), "");
  EXPECT_EQ(biasError({0, 1}, {5}, {1.0f}),
            "logitBias.offsets holds 2 entries, expected R + 1 = 3");
  EXPECT_EQ(biasError({1, 1, 1}, {5}, {1.0f}),
            "logitBias.offsets[0] must be 0, got 1");
  EXPECT_EQ(biasError({0, 2, 1}, {5, 6}, {1.0f, 2.0f}),
            "logitBias.offsets decreases at row 1: 2 then 1");
  EXPECT_EQ(biasError({0, 1, 1}, {5, 6}, {1.0f, 2.0f}),
            "logitBias.offsets[2] is 1 but logitBias.ids holds 2 entries");
  EXPECT_EQ(biasError({0, 1, 2}, {5, 6}, {1.0f}),
            "logitBias.values holds 1 entries but logitBias.ids holds 2");
  EXPECT_EQ(biasError({0, 1, 2}, {5, 100}, {1.0f, 2.0f}),
            "logitBias row 1 entry 1: token id 100 is outside the vocabulary "
            "of 100 ids");
  EXPECT_EQ(biasError({0, 2, 2}, {5, 5}, {1.0f, 2.0f}),
            "logitBias row 0 lists token id 5 twice; each token may appear "
            "once per row");
  EXPECT_EQ(biasError({0, 1, 2}, {5, 6}, {1.0f, NAN})
                .find("logitBias row 1 entry 1 (token 6): the bias is "),
            0u);
  EXPECT_NE(biasError({0, 1, 2}, {5, 6}, {INFINITY, 0.0f})
                .find("it must be finite, or -inf to ban the token"),
            std::string::npos);
}

} // namespace

//===- StatsTest.cpp - Percentiles as numpy computes them -----------------===//
#include "tools/solbench/Stats.h"

#include "runtime/support/Error.h"

#include <gtest/gtest.h>

using namespace sol::bench;

TEST(Stats, PercentileInterpolatesLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], [0, 50, 90, 99, 100])
  //   -> [1.0, 2.5, 3.7, 3.97, 4.0]
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4.0);
  // numpy.percentile([10, 20, 40, 80, 160], 90) -> 128.0 (rank 3.6)
  EXPECT_DOUBLE_EQ(percentile({10, 20, 40, 80, 160}, 90), 128.0);
  EXPECT_DOUBLE_EQ(percentile({5}, 99), 5.0);
}

TEST(Stats, PercentileRejectsBadInput) {
  EXPECT_THROW(percentile({}, 50), sol::Error);
  EXPECT_THROW(percentile({1, 2}, 101), sol::Error);
  EXPECT_THROW(percentile({1, 2}, -1), sol::Error);
}

TEST(Stats, SummarizeSortsFirst) {
  // 1..100 shuffled: numpy gives p50 50.5, p90 90.1, p99 99.01.
  std::vector<double> v;
  for (int i = 0; i < 100; ++i)
    v.push_back((i * 37) % 100 + 1); // 37 is prime to 100: a permutation
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.p50, 50.5);
  EXPECT_NEAR(s.p90, 90.1, 1e-9);
  EXPECT_NEAR(s.p99, 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
}

TEST(Stats, SummaryOfNothing) { EXPECT_EQ(summarize({}).count, 0u); }

//===- StepPaddingTest.cpp - Steps padded to their CUDA-graph bucket ------===//

#include "runtime/cuda/StepPadding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace sol::cuda {
namespace {

TEST(GraphBucket, Sizes) {
  const int expected[] = {1,  1,  2,  4,  4,  8,  8,  8,  8,  16, 16,
                          16, 16, 16, 16, 16, 16, 24, 24, 24, 24, 24};
  for (int n = 0; n <= 21; ++n)
    EXPECT_EQ(graphBucket(n), expected[n]) << n;
  EXPECT_EQ(graphBucket(57), 64);
  EXPECT_EQ(graphBucket(64), 64);
  EXPECT_EQ(graphBucket(65), 65);
  std::set<int> buckets;
  for (int n = 1; n <= 64; ++n) {
    EXPECT_GE(graphBucket(n), n);
    buckets.insert(graphBucket(n));
  }
  EXPECT_EQ(buckets.size(), 11u); // 1 2 4 8 16 24 32 40 48 56 64
}

TEST(PaddedStep, DecodeOfThreeSequences) {
  const std::vector<int32_t> tokens = {5, 6, 7}, positions = {10, 20, 30},
                             seq = {0, 1, 2}, rows = {0, 1, 2},
                             tables = {1, 2, 3, 4, 5, 6};
  const std::vector<SamplingRow> sampling(3, SamplingRow{0.7f, 5});
  const std::vector<int32_t> penaltyOffsets = {0, 1, 1, 3},
                             penaltyIds = {9, 8, 7}, counts = {1, 2, 3};
  const std::vector<uint8_t> inPrompt = {0, 1, 0};
  const std::vector<int32_t> biasOffsets = {0, 0, 2, 2}, biasIds = {4, 5};
  const std::vector<float> biasValues = {1.0f, -INFINITY};
  StepBatch in;
  in.tokens = tokens;
  in.positions = positions;
  in.tokenSeq = seq;
  in.logitRows = rows;
  in.blockTables = tables;
  in.numSeqs = 3;
  in.maxBlocksPerSeq = 2;
  in.sampling = sampling;
  in.penalties = {penaltyOffsets, penaltyIds, counts, inPrompt};
  in.logitBias = {biasOffsets, biasIds, biasValues};
  in.numTopLogprobs = 2;

  PaddedStep padded;
  padded.pad(in);
  const StepBatch &b = padded.batch();
  ASSERT_EQ(b.tokens.size(), 4u);
  EXPECT_EQ(b.tokens[3], 0);
  EXPECT_EQ(b.tokenSeq[3], -1); // padding
  EXPECT_EQ(b.positions[3], 0);
  ASSERT_EQ(b.logitRows.size(), 4u);
  EXPECT_EQ(b.logitRows[3], 2); // repeats a real token
  EXPECT_EQ(b.numSeqs, 4);
  ASSERT_EQ(b.blockTables.size(), 8u);
  EXPECT_EQ(b.blockTables[5], 6);
  EXPECT_EQ(b.blockTables[6], 0);
  ASSERT_EQ(b.sampling.size(), 4u);
  EXPECT_EQ(b.sampling[2].topK, 5);
  EXPECT_EQ(b.sampling[3].temperature, 0.0f); // greedy padding row
  ASSERT_EQ(b.penalties.offsets.size(), 5u);
  EXPECT_EQ(b.penalties.offsets[4], 3);
  EXPECT_EQ(b.penalties.ids.data(), penaltyIds.data()); // viewed, not copied
  ASSERT_EQ(b.logitBias.offsets.size(), 5u);
  EXPECT_EQ(b.logitBias.offsets[4], 2);
  EXPECT_EQ(b.numTopLogprobs, 2);
  EXPECT_EQ(b.maxBlocksPerSeq, 2);
}

TEST(PaddedStep, BucketSizedStepsAndEmptyListsStayAsTheyAre) {
  std::vector<int32_t> tokens(16, 1), positions(16), seq(16, 0), rows = {15},
                                                                 tables = {0};
  for (int i = 0; i < 16; ++i)
    positions[i] = i;
  StepBatch in;
  in.tokens = tokens;
  in.positions = positions;
  in.tokenSeq = seq;
  in.logitRows = rows;
  in.blockTables = tables;
  in.numSeqs = 1;
  in.maxBlocksPerSeq = 1;
  PaddedStep padded;
  padded.pad(in);
  const StepBatch &b = padded.batch();
  EXPECT_EQ(b.tokens.size(), 16u);
  EXPECT_EQ(b.logitRows.size(), 1u);
  EXPECT_EQ(b.numSeqs, 1);
  EXPECT_TRUE(b.sampling.empty());
  EXPECT_TRUE(b.penalties.offsets.empty());
  EXPECT_TRUE(b.logitBias.offsets.empty());
  // A second, smaller step reuses the object.
  in.tokens = std::span<const int32_t>(tokens).first(9);
  in.positions = std::span<const int32_t>(positions).first(9);
  in.tokenSeq = std::span<const int32_t>(seq).first(9);
  std::vector<int32_t> row8 = {8};
  in.logitRows = row8;
  padded.pad(in);
  EXPECT_EQ(padded.batch().tokens.size(), 16u);
  EXPECT_EQ(padded.batch().tokenSeq[9], -1);
  EXPECT_EQ(padded.batch().tokenSeq[8], 0);
}

} // namespace
} // namespace sol::cuda

//===- NgramProposerTest.cpp - Prompt lookup drafts -----------------------===//
//
// proposeNgram on small sequences written out (longest n first, the most
// recent occurrence, occurrences overlapping the suffix, drafts cut at the
// end of the sequence, no match), and against a direct transcription of the
// definition on many random sequences.
//
//===----------------------------------------------------------------------===//
#include "runtime/engine/NgramProposer.h"

#include <gtest/gtest.h>

#include <random>

using namespace sol;

namespace {

using Ids = std::vector<int32_t>;

Ids propose(const Ids &tokens, int32_t minN, int32_t maxN, int32_t numTokens) {
  return proposeNgram(tokens, minN, maxN, numTokens);
}

TEST(NgramProposer, LongestNWinsOverShorter) {
  // The last 3 tokens (1 2 3) occur at 0, followed by 7 8; their last 2
  // (2 3) also occur more recently at 6, followed by 9.
  const Ids tokens = {1, 2, 3, 7, 8, 5, 2, 3, 9, 4, 1, 2, 3};
  EXPECT_EQ(propose(tokens, 1, 3, 2), (Ids{7, 8}));
  // With n at most 2, the more recent 2-gram wins.
  EXPECT_EQ(propose(tokens, 1, 2, 2), (Ids{9, 4}));
}

TEST(NgramProposer, MostRecentOccurrenceChosen) {
  const Ids tokens = {5, 6, 10, 5, 6, 11, 5, 6, 12, 0, 5, 6};
  EXPECT_EQ(propose(tokens, 2, 2, 1), (Ids{12}));
  EXPECT_EQ(propose(tokens, 2, 2, 3), (Ids{12, 0, 5}));
}

TEST(NgramProposer, OccurrenceMayOverlapTheSuffix) {
  const Ids tokens = {1, 2, 1, 2, 1, 2};
  // "1 2" at 2 overlaps nothing but is followed by the suffix itself.
  EXPECT_EQ(propose(tokens, 2, 2, 2), (Ids{1, 2}));
  // "1 2 1 2" at 0 overlaps the suffix (at 2); only 2 tokens follow it.
  EXPECT_EQ(propose(tokens, 1, 5, 4), (Ids{1, 2}));
  EXPECT_EQ(propose({7, 7, 7, 7}, 1, 3, 5), (Ids{7}));
  EXPECT_EQ(propose({7, 7, 7, 7}, 1, 1, 5), (Ids{7}));
  // The 7 7 at 2 (not the one at 5, which overlaps a 8) is the match.
  EXPECT_EQ(propose({7, 7, 7, 7, 8, 7, 7}, 2, 2, 5), (Ids{8, 7, 7}));
}

TEST(NgramProposer, DraftsAreCutAtTheEndOfTheSequence) {
  const Ids tokens = {3, 4, 5, 6, 3, 4};
  EXPECT_EQ(propose(tokens, 2, 2, 10), (Ids{5, 6, 3, 4}));
  EXPECT_EQ(propose({9, 1, 9}, 1, 1, 10), (Ids{1, 9}));
}

TEST(NgramProposer, NoMatchIsEmpty) {
  EXPECT_TRUE(propose({1, 2, 3, 4, 5}, 1, 3, 4).empty());
  // 3 4 occurs, but not 2 3 4 nor with minN 3.
  EXPECT_TRUE(propose({3, 4, 9, 2, 3, 4}, 3, 3, 4).empty());
  EXPECT_EQ(propose({3, 4, 9, 2, 3, 4}, 2, 3, 4), (Ids{9, 2, 3, 4}));
  EXPECT_TRUE(propose({}, 1, 3, 4).empty());
  EXPECT_TRUE(propose({1}, 1, 3, 4).empty());
}

TEST(NgramProposer, MinNBeyondTheLengthIsEmpty) {
  EXPECT_TRUE(propose({1, 1, 1}, 3, 5, 2).empty());
  EXPECT_TRUE(propose({1, 1, 1}, 4, 5, 2).empty());
  EXPECT_EQ(propose({1, 1, 1}, 2, 5, 2), (Ids{1}));
  // maxN below minN proposes nothing.
  EXPECT_TRUE(propose({1, 1, 1}, 2, 1, 2).empty());
}

TEST(NgramProposer, NumTokensLimitsTheDraft) {
  const Ids tokens = {1, 2, 3, 4, 5, 6, 7, 1, 2};
  EXPECT_EQ(propose(tokens, 2, 2, 1), (Ids{3}));
  EXPECT_EQ(propose(tokens, 2, 2, 3), (Ids{3, 4, 5}));
  EXPECT_EQ(propose(tokens, 2, 2, 5), (Ids{3, 4, 5, 6, 7}));
  EXPECT_TRUE(propose(tokens, 2, 2, 0).empty());
  EXPECT_TRUE(propose(tokens, 2, 2, -1).empty());
}

TEST(NgramProposer, TheSuffixItselfIsNeverMatched) {
  // Each suffix trivially matches itself; nothing else does.
  EXPECT_TRUE(propose({1, 2, 3}, 1, 2, 3).empty());
  EXPECT_TRUE(propose({5, 6}, 1, 1, 3).empty());
  // The only 1 2 before the end overlaps nothing and is found.
  EXPECT_EQ(propose({1, 2, 1, 2}, 2, 3, 3), (Ids{1, 2}));
}

// The definition, written directly: for n from maxN down, the most recent
// start i < len - n with tokens[i, i+n) == the last n tokens.
Ids reference(const Ids &t, int32_t minN, int32_t maxN, int32_t numTokens) {
  const int64_t len = int64_t(t.size());
  if (numTokens <= 0)
    return {};
  for (int64_t n = maxN; n >= std::max<int64_t>(minN, 1); --n) {
    if (n >= len)
      continue;
    for (int64_t i = len - n - 1; i >= 0; --i)
      if (std::equal(t.begin() + i, t.begin() + i + n, t.end() - n)) {
        const int64_t from = i + n;
        return Ids(t.begin() + from,
                   t.begin() + std::min(len, from + numTokens));
      }
  }
  return {};
}

TEST(NgramProposer, MatchesTheDefinitionOnRandomSequences) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const int len = int(rng() % 40);
    const int vocab = 1 + int(rng() % 4);
    Ids t(len);
    for (int32_t &x : t)
      x = int32_t(rng() % vocab);
    const int32_t minN = int32_t(rng() % 4), maxN = int32_t(rng() % 7);
    const int32_t k = int32_t(rng() % 6);
    ASSERT_EQ(propose(t, minN, maxN, k), reference(t, minN, maxN, k))
        << "trial " << trial << " minN " << minN << " maxN " << maxN << " k "
        << k;
  }
}

TEST(NgramProposer, LongSequencesAreScannedQuickly) {
  // 64K tokens with no repeated last token, and with all tokens the same.
  Ids distinct(1 << 16);
  for (size_t i = 0; i < distinct.size(); ++i)
    distinct[i] = int32_t(i);
  for (int step = 0; step < 200; ++step)
    ASSERT_TRUE(proposeNgram(distinct, 1, 8, 5).empty());
  Ids same(1 << 16, 3);
  EXPECT_EQ(proposeNgram(same, 1, 8, 5), (Ids{3}));
}

} // namespace

//===- PerplexityWindowsTest.cpp - Strided perplexity windows -------------===//
//
// The windows of Transformers' strided perplexity recipe: their bounds on
// small cases written out, and for many (N, W, S) the property that each
// position is scored once, in increasing order, from the window that gives
// it the most context the recipe allows.
//
//===----------------------------------------------------------------------===//
#include "EngineTestSupport.h"

#include "runtime/engine/PerplexityWindows.h"

#include <gtest/gtest.h>

using namespace sol;
using namespace sol::test;

namespace {

using W = PerplexityWindow;

TEST(PerplexityWindows, OneWindowWhenTheIdsFit) {
  EXPECT_EQ(perplexityWindows(10, 16, 8), (std::vector<W>{{0, 10, 1}}));
  EXPECT_EQ(perplexityWindows(16, 16, 8), (std::vector<W>{{0, 16, 1}}));
  EXPECT_EQ(perplexityWindows(2, 2, 1), (std::vector<W>{{0, 2, 1}}));
}

TEST(PerplexityWindows, OverlappingWindowsScoreWhatThePreviousDidNotReach) {
  // W 8, S 4 over 20 ids: [0,8) scores 1..7, [4,12) scores 8..11, ...
  EXPECT_EQ(perplexityWindows(20, 8, 4),
            (std::vector<W>{{0, 8, 1}, {4, 12, 8}, {8, 16, 12}, {12, 20, 16}}));
  // The last window is cut at N and stops the walk.
  EXPECT_EQ(perplexityWindows(13, 8, 3),
            (std::vector<W>{{0, 8, 1}, {3, 11, 8}, {6, 13, 11}}));
}

TEST(PerplexityWindows, StrideEqualToTheWindowSkipsEachWindowsFirstId) {
  // As in Transformers: a window's first id has no context in its window.
  EXPECT_EQ(perplexityWindows(10, 4, 4),
            (std::vector<W>{{0, 4, 1}, {4, 8, 5}, {8, 10, 9}}));
  // A last window of one id would score nothing: it is left out.
  EXPECT_EQ(perplexityWindows(9, 4, 4), (std::vector<W>{{0, 4, 1}, {4, 8, 5}}));
}

TEST(PerplexityWindows, StrideOneSlidesByOneId) {
  EXPECT_EQ(perplexityWindows(6, 3, 1),
            (std::vector<W>{{0, 3, 1}, {1, 4, 3}, {2, 5, 4}, {3, 6, 5}}));
}

TEST(PerplexityWindows, EveryPositionOnceInOrder) {
  for (int64_t n = 2; n <= 40; ++n)
    for (int64_t w = 2; w <= 12; ++w)
      for (int64_t s = 1; s <= w; ++s) {
        const auto windows = perplexityWindows(n, w, s);
        std::vector<int64_t> scored;
        int64_t previousEnd = 0;
        for (size_t i = 0; i < windows.size(); ++i) {
          const W &x = windows[i];
          ASSERT_EQ(x.begin, int64_t(i) * s);
          ASSERT_EQ(x.end, std::min(x.begin + w, n));
          ASSERT_LT(x.scoreFrom, x.end) << "a window that scores nothing";
          ASSERT_GE(x.scoreFrom, x.begin + 1);
          ASSERT_EQ(x.scoreFrom, std::max(previousEnd, x.begin + 1));
          for (int64_t t = x.scoreFrom; t < x.end; ++t)
            scored.push_back(t);
          previousEnd = x.end;
        }
        // The walk ends at N (S = W may leave out a last window of one id).
        ASSERT_GE(windows.back().end, n - (s == w ? 1 : 0));
        std::vector<int64_t> want;
        for (int64_t t = 1; t < n; ++t)
          if (s < w || n <= w || t % w != 0) // S = W: window starts skipped
            want.push_back(t);
        ASSERT_EQ(scored, want) << "N " << n << " W " << w << " S " << s;
      }
}

TEST(PerplexityWindows, RejectsWindowsThatCannotScore) {
  EXPECT_EQ(engineErrorOf([] { perplexityWindows(10, 4, 5); }),
            "the stride (--stride) must be in 1..4 (the window), got 5: a "
            "stride beyond the window would leave ids unscored");
  EXPECT_EQ(engineErrorOf([] { perplexityWindows(10, 4, 0); }),
            "the stride (--stride) must be in 1..4 (the window), got 0: a "
            "stride beyond the window would leave ids unscored");
  EXPECT_EQ(engineErrorOf([] { perplexityWindows(10, 1, 1); }),
            "the window (--window) must be at least 2 ids (one of context, "
            "one scored), got 1");
  EXPECT_EQ(engineErrorOf([] { perplexityWindows(1, 4, 2); }),
            "perplexity needs at least 2 token ids (one scored), got 1");
}

} // namespace

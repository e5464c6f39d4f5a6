//===- PerplexityWindows.cpp - Strided windows of a perplexity pass -------===//
#include "runtime/engine/PerplexityWindows.h"

#include "runtime/support/Error.h"

#include <algorithm>

namespace sol {

std::vector<PerplexityWindow> perplexityWindows(int64_t numIds, int64_t window,
                                                int64_t stride) {
  if (window < 2)
    fail("the window (--window) must be at least 2 ids (one of context, one "
         "scored), got ",
         window);
  if (stride < 1 || stride > window)
    fail("the stride (--stride) must be in 1..", window, " (the window), got ",
         stride, ": a stride beyond the window would leave ids unscored");
  if (numIds < 2)
    fail("perplexity needs at least 2 token ids (one scored), got ", numIds);
  std::vector<PerplexityWindow> windows;
  int64_t previousEnd = 0;
  for (int64_t begin = 0;; begin += stride) {
    const int64_t end = std::min(begin + window, numIds);
    const int64_t scoreFrom = std::max(previousEnd, begin + 1);
    // With S = W the last window may hold a single id: nothing to score.
    if (scoreFrom < end)
      windows.push_back({begin, end, scoreFrom});
    if (end == numIds)
      return windows;
    previousEnd = end;
  }
}

} // namespace sol

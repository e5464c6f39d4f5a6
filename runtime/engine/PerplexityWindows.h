//===- PerplexityWindows.h - Windows of a perplexity pass -------*- C++ -*-===//
//
// Transformers' strided perplexity recipe: windows of at most W ids begin
// every S ids; each window scores the positions the previous one did not
// reach, with W - S ids of context carried over. With S < W every position
// 1..N-1 is scored exactly once, in increasing order; with S = W, as in
// Transformers, a window's first id has no context and is not scored
// (docs/engine.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace sol {

/// One window over ids[begin, end): the positions t in [scoreFrom, end) are
/// scored, ids[t] under the logits of position t - 1 of this window.
/// Positions are absolute (indices into the whole id list).
struct PerplexityWindow {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t scoreFrom = 0;
  bool operator==(const PerplexityWindow &) const = default;
};

/// The windows of `numIds` ids, `window` ids long at most, beginning every
/// `stride` ids: b = 0, S, 2S, ... covering [b, min(b + W, N)) and scoring
/// [max(previous end, b + 1), end), until the window whose end is N; a
/// window that would score nothing (S = W, one id left) is left out. Throws
/// sol::Error unless W >= 2, 1 <= S <= W and N >= 2.
std::vector<PerplexityWindow> perplexityWindows(int64_t numIds, int64_t window,
                                                int64_t stride);

} // namespace sol

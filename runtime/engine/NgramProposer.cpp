//===- NgramProposer.cpp - Draft tokens by prompt lookup ------------------===//
#include "runtime/engine/NgramProposer.h"

#include <algorithm>

namespace sol {

std::vector<int32_t> proposeNgram(std::span<const int32_t> tokens, int32_t minN,
                                  int32_t maxN, int32_t numTokens) {
  const size_t len = tokens.size();
  minN = std::max(minN, int32_t(1));
  if (numTokens <= 0 || maxN < minN || len < 2)
    return {};
  // A pattern of n tokens needs an earlier start: n < len.
  const size_t cap = std::min(size_t(maxN), len - 1);
  if (cap < size_t(minN))
    return {};

  // One backward scan over the end positions `end` of candidate occurrences
  // (end <= len - 2, so the occurrence starts before the suffix does and a
  // token follows it). At each, `k` is how many tokens before and including
  // `end` agree with the sequence's last ones (capped at `cap`): `end` ends an
  // occurrence of every n <= k. The longest n with an occurrence is the
  // largest k; its most recent occurrence is the first `end` reaching it, so
  // only a strictly longer match replaces the best, and a match of `cap`
  // tokens ends the scan.
  const int32_t *t = tokens.data();
  const int32_t last = t[len - 1];
  size_t bestK = 0, bestEnd = 0;
  for (size_t end = len - 1; end-- > 0;) {
    if (t[end] != last)
      continue;
    const size_t most = std::min(cap, end + 1);
    size_t k = 1;
    while (k < most && t[end - k] == t[len - 1 - k])
      ++k;
    if (k > bestK) {
      bestK = k;
      bestEnd = end;
      if (k == cap)
        break;
    }
  }
  if (bestK < size_t(minN))
    return {};
  const size_t from = bestEnd + 1;
  const size_t to = std::min(len, from + size_t(numTokens));
  return std::vector<int32_t>(t + from, t + to);
}

} // namespace sol

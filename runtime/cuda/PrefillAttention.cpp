//===- PrefillAttention.cpp - Tensor-core attention of prompt chunks ------===//
#include "runtime/cuda/PrefillAttention.h"

#include "runtime/support/Error.h"

#include <algorithm>

namespace sol::cuda {

bool PrefillAttentionSpec::supported() const {
  return (headDim == 64 || headDim == 80 || headDim == 96 || headDim == 128 ||
          headDim == 256) &&
         kvHeads > 0 && qHeads % kvHeads == 0 && blockSize > 0;
}

KernelInstance PrefillAttentionSpec::instance() const {
  if (!supported())
    fail("prefill_attention: ", qHeads, " query heads over ", kvHeads,
         " kv heads of head_dim ", headDim,
         " is not supported (head_dim 64, 80, 96, 128 or 256, query heads a "
         "multiple of kv heads)");
  return {"PrefillAttention.cuh",
          cat("sol::kernels::",
              kvFp8 ? "prefill_attention_fp8<" : "prefill_attention<", qHeads,
              ", ", kvHeads, ", ", headDim, ", ", blockSize,
              softcap ? ", true>" : ">")};
}

int PrefillAttentionSpec::rowStride() const {
  return headDim % 64 == 0 ? headDim : headDim + 8;
}

unsigned PrefillAttentionSpec::sharedBytes() const {
  // PrefillAttentionShape<HD>::kSharedBytes / kFp8SharedBytes.
  const int bf16Bytes = 5 * kRows * rowStride() * 2;
  if (!kvFp8)
    return static_cast<unsigned>(bf16Bytes);
  return static_cast<unsigned>(bf16Bytes + 2 * kKeys * headDim +
                               2 * 2 * kKeys * 4);
}

LaunchDims PrefillAttentionSpec::dims(int tiles) const {
  LaunchDims d;
  d.grid.x = static_cast<unsigned>(std::max(tiles, 1));
  d.grid.y = static_cast<unsigned>(qHeads);
  d.block.x = kThreads;
  d.sharedBytes = sharedBytes();
  return d;
}

namespace {

/// Calls f(begin, end) for each maximal run [begin, end) of tokens of one
/// sequence at consecutive positions (padding tokens: runs of their own).
template <typename F>
void forEachRun(std::span<const int32_t> tokenSeq,
                std::span<const int32_t> positions, F f) {
  const std::size_t t = tokenSeq.size();
  std::size_t begin = 0;
  for (std::size_t i = 1; i <= t; ++i) {
    const bool breaks = i == t || tokenSeq[i] != tokenSeq[i - 1] ||
                        tokenSeq[i] < 0 || positions[i] != positions[i - 1] + 1;
    if (breaks) {
      f(begin, i);
      begin = i;
    }
  }
}

} // namespace

std::vector<PrefillTile> planPrefillTiles(std::span<const int32_t> tokenSeq,
                                          std::span<const int32_t> positions,
                                          int maxRows) {
  if (tokenSeq.size() != positions.size())
    fail("planPrefillTiles: ", tokenSeq.size(), " sequence indices but ",
         positions.size(), " positions");
  if (maxRows < 1)
    fail("planPrefillTiles: tiles need at least one row, got ", maxRows);
  struct Ranked {
    PrefillTile tile;
    int32_t lastPosition;
  };
  std::vector<Ranked> ranked;
  forEachRun(tokenSeq, positions, [&](std::size_t begin, std::size_t end) {
    const int64_t n = static_cast<int64_t>(end - begin);
    const int64_t tiles = (n + maxRows - 1) / maxRows;
    // Even split: no tail tile of a few rows beside full ones.
    int64_t at = static_cast<int64_t>(begin);
    for (int64_t i = 0; i < tiles; ++i) {
      const int64_t rows = n / tiles + (i < n % tiles ? 1 : 0);
      const int64_t last = at + rows - 1;
      ranked.push_back({{static_cast<int32_t>(at), static_cast<int32_t>(rows)},
                        tokenSeq[last] < 0 ? -1 : positions[last]});
      at += rows;
    }
  });
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked &a, const Ranked &b) {
                     return a.lastPosition > b.lastPosition;
                   });
  std::vector<PrefillTile> tiles;
  tiles.reserve(ranked.size());
  for (const Ranked &r : ranked)
    tiles.push_back(r.tile);
  return tiles;
}

int longestPromptRun(std::span<const int32_t> tokenSeq,
                     std::span<const int32_t> positions) {
  std::size_t longest = 0;
  forEachRun(tokenSeq, positions, [&](std::size_t begin, std::size_t end) {
    if (tokenSeq[begin] >= 0)
      longest = std::max(longest, end - begin);
  });
  return static_cast<int>(longest);
}

bool usePrefillAttention(std::span<const int32_t> tokenSeq,
                         std::span<const int32_t> positions) {
  return longestPromptRun(tokenSeq, positions) >= PrefillAttentionSpec::kRows;
}

} // namespace sol::cuda

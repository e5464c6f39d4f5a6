//===- ChunkAttention.cpp - Tensor-core attention of short chunks ---------===//
#include "runtime/cuda/ChunkAttention.h"

#include "runtime/support/Error.h"

#include <algorithm>

namespace sol::cuda {

bool ChunkAttentionSpec::supported() const {
  return PrefillAttentionSpec{qHeads, kvHeads, headDim, blockSize, kvFp8}
             .supported() &&
         qHeads / kvHeads <= kRows;
}

bool ChunkAttentionSpec::planned() const {
  return supported() && headDim <= 128;
}

int ChunkAttentionSpec::tokensPerTile() const {
  if (!supported())
    fail("chunk_attention: ", qHeads, " query heads over ", kvHeads,
         " kv heads of head_dim ", headDim, " is not supported");
  return kRows / (qHeads / kvHeads);
}

KernelInstance ChunkAttentionSpec::instance() const {
  if (!supported())
    fail("chunk_attention: ", qHeads, " query heads over ", kvHeads,
         " kv heads of head_dim ", headDim,
         " is not supported (head_dim 64, 80, 96, 128 or 256, query heads "
         "a multiple of kv heads, at most ",
         kRows, " per kv head)");
  return {
      "ChunkAttention.cuh",
      cat("sol::kernels::", kvFp8 ? "chunk_attention_fp8<" : "chunk_attention<",
          qHeads, ", ", kvHeads, ", ", headDim, ", ", blockSize,
          softcap ? ", true>" : ">")};
}

unsigned ChunkAttentionSpec::sharedBytes() const {
  return PrefillAttentionSpec{qHeads, kvHeads, headDim, blockSize, kvFp8}
      .sharedBytes();
}

int ChunkAttentionSpec::chooseSplits(int tiles, int multiprocessors,
                                     bool clusters) const {
  const int blocks = std::max(tiles, 1) * kvHeads;
  if (!clusters || blocks <= 0)
    return 1;
  return std::clamp(multiprocessors / blocks, 1, kMaxSplits);
}

LaunchDims ChunkAttentionSpec::dims(int tiles, int splits) const {
  if (splits < 1 || splits > kMaxSplits)
    fail("chunk_attention: ", splits, " splits (1 to ", kMaxSplits, ")");
  LaunchDims d;
  d.grid.x = static_cast<unsigned>(std::max(tiles, 1) * kvHeads);
  d.grid.y = static_cast<unsigned>(splits);
  d.block.x = PrefillAttentionSpec::kThreads;
  d.sharedBytes = sharedBytes();
  d.clusterY = static_cast<unsigned>(splits);
  return d;
}

bool ChunkAttentionSpec::fits(int tiles, int splits, int maxContext,
                              int pagedSplits, int multiprocessors) const {
  if (tiles <= 0 || tiles * kvHeads > multiprocessors || splits < 1 ||
      pagedSplits < 1)
    return false;
  const int keyTiles = (std::max(maxContext, 1) + kRows - 1) / kRows;
  const int chunkWalk = (keyTiles + splits - 1) / splits;
  const int pagedPositions = (maxContext + pagedSplits - 1) / pagedSplits;
  const int pagedWalk = (pagedPositions + kRows - 1) / kRows;
  return chunkWalk <= pagedWalk;
}

std::vector<PrefillTile> planChunkTiles(std::span<const int32_t> tokenSeq,
                                        std::span<const int32_t> positions,
                                        int tokensPerTile) {
  std::vector<PrefillTile> tiles;
  for (const PrefillTile &t :
       planPrefillTiles(tokenSeq, positions, tokensPerTile)) {
    const bool padding = tokenSeq[static_cast<std::size_t>(t.firstToken)] < 0;
    if (padding && !tiles.empty()) {
      PrefillTile &last = tiles.back();
      if (tokenSeq[static_cast<std::size_t>(last.firstToken)] < 0 &&
          last.firstToken + last.rows == t.firstToken &&
          last.rows + t.rows <= tokensPerTile) {
        last.rows += t.rows;
        continue;
      }
    }
    tiles.push_back(t);
  }
  return tiles;
}

} // namespace sol::cuda

//===- PagedBatch.h - A batch of sequences over a paged KV cache -*- C++
//-*-===//
//
// Builds the step inputs the attention kernels read (positions, token_seq,
// block tables) for a set of sequences, with blocks assigned in random order
// so paging bugs show. Table entries past a sequence's context point at a
// block full of NaN, so any read past the context poisons the output.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "CheckSupport.h"

#include <vector>

namespace sol::check {

struct SequenceSpec {
  int context;   // cached positions after this step
  int newTokens; // the step's tokens are positions [context - newTokens,
                 // context)
};

struct PagedBatch {
  int blockSize = 16;
  int maxBlocks = 0;
  int numBlocks = 0; // including the NaN block
  int nanBlock = 0;
  int tokens = 0;
  std::vector<int> positions, tokenSeq, blockTables, contexts;

  /// Sequence `s`'s cache slot of `position` (block * blockSize + offset).
  long long slot(int s, int position) const;
  /// Whether slot `slotIndex` holds a position below some sequence's context.
  std::vector<bool> liveSlots() const;
};

/// `paddingTokens` extra tokens with token_seq = -1 are appended.
PagedBatch makePagedBatch(Rng &rng, const std::vector<SequenceSpec> &seqs,
                          int paddingTokens, int blockSize = 16);

} // namespace sol::check

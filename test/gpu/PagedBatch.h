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

#include <cstdint>
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

/// The fused qkv rows [tokens, (qHeads + 2 kvHeads) hd] of an attention
/// problem: uniform in [-1, 1], q times 3 (a peakier softmax).
std::vector<Bf16> attentionQkv(Rng &rng, const PagedBatch &batch, int qHeads,
                               int kvHeads, int hd);

/// A bf16 cache [blocks, blockSize, kvHeads, hd] of values in [-1, 1]; slots
/// no sequence attends to are NaN, so that reading one poisons the output.
struct Bf16Cache {
  std::vector<Bf16> k, v;
};
Bf16Cache makeBf16Cache(Rng &rng, const PagedBatch &batch, int kvHeads, int hd);

/// An fp8 cache as rope_kv_write_fp8 leaves it, and what it stands for.
struct Fp8Cache {
  std::vector<uint8_t> kBytes, vBytes;
  std::vector<float> kScales, vScales;
  std::vector<float> kDeq, vDeq; // e4m3 x scale (float32); NaN rows dead
};

/// Random rows of varied magnitude quantized by the host rule; rows no
/// sequence attends to are NaN (byte 0x7F, scale NaN), so that reading one
/// poisons the output. With exactCodes, V rows hold the finite codes in
/// turn and power-of-two scales.
Fp8Cache makeFp8Cache(Rng &rng, const PagedBatch &batch, int kvHeads, int hd,
                      bool exactCodes);

} // namespace sol::check

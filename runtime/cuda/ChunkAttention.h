//===- ChunkAttention.h - Tensor-core attention of short chunks -*- C++ -*-===//
//
// The host half of codegen/kernels/ChunkAttention.cuh: its instance name,
// launch geometry, split count, tiles, and when a step uses it. Graph-sized
// steps in which some sequence has more than one token (a short prompt
// chunk, a prompt's last chunk) and whose tiles times kv heads fit one wave
// of blocks take it; decode steps keep paged_attention with the rope fused,
// long prompt chunks prefill_attention. No CUDA header needed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/PrefillAttention.h"

namespace sol::cuda {

/// chunk_attention<Hq, Hkv, HD, BS>(out, qkv, k_cache, v_cache, positions,
/// token_seq, block_tables, max_blocks, scale, sliding_window, tiles); with
/// kvFp8, chunk_attention_fp8 (k_scales and v_scales after v_cache), as
/// prefill_attention's.
struct ChunkAttentionSpec {
  int qHeads = 0;
  int kvHeads = 0;
  int headDim = 0;
  int blockSize = 16;
  bool kvFp8 = false;
  /// The variant that soft-caps the scores (TiledAttentionArgs::softcap).
  bool softcap = false;

  /// Rows of a tile (the kernel's kPrefillRows) and the most splits of a
  /// tile (kMaxChunkSplits: one thread-block cluster).
  static constexpr int kRows = PrefillAttentionSpec::kRows;
  static constexpr int kMaxSplits = 8;

  /// prefill_attention's shapes (head dims 64, 80, 96, 128 and 256, GQA),
  /// at most kRows query heads per kv head.
  bool supported() const;
  /// Whether plans run it (else such steps keep paged_attention): supported
  /// head dims up to 128. At 256 a block's tiles take 160 KB of shared
  /// memory and its accumulators spill; measured on the H200, 8 tokens
  /// after 1,024 cached positions of Gemma-2-2B's heads took 21.4 us
  /// against paged_attention's 13.6.
  bool planned() const;
  /// Tokens of one sequence per tile: the query heads of a kv head times
  /// the tokens fill at most kRows rows.
  int tokensPerTile() const;
  KernelInstance instance() const;
  /// prefill_attention's (the kernels share its main loop and layout).
  unsigned sharedBytes() const;
  /// Splits per tile: as many as keep tiles * kv heads * splits within one
  /// block per multiprocessor, at most kMaxSplits; 1 without clusters.
  int chooseSplits(int tiles, int multiprocessors, bool clusters) const;
  /// Grid (tiles * kv heads, splits), a cluster of the splits.
  LaunchDims dims(int tiles, int splits) const;
  /// Whether a step of `tiles` tiles at `splits` splits, whose longest
  /// context is `maxContext` positions, should use it rather than
  /// paged_attention at `pagedSplits`: every (tile, kv head) has a
  /// multiprocessor to itself, and no block walks more 64-key tiles than
  /// paged_attention's blocks walk 64 positions (both walks are latency
  /// bound; this kernel reads the K/V once for all of a tile's tokens).
  /// Batched decode with a chunk at long contexts, where this kernel would
  /// get one split, stays with paged_attention.
  bool fits(int tiles, int splits, int maxContext, int pagedSplits,
            int multiprocessors) const;
};

/// A step's tiles for chunk_attention: planPrefillTiles with at most
/// `tokensPerTile` tokens a tile, with runs of consecutive padding tokens
/// joined into tiles of up to `tokensPerTile` (their rows get zeros).
std::vector<PrefillTile> planChunkTiles(std::span<const int32_t> tokenSeq,
                                        std::span<const int32_t> positions,
                                        int tokensPerTile);

} // namespace sol::cuda

//===- PrefillAttention.h - Tensor-core attention of prompt chunks -*- C++ -*-//
//
// The host half of codegen/kernels/PrefillAttention.cuh: its instance name
// and launch geometry, and the tiles a step's tokens are cut into. Steps
// holding a long prompt chunk use it for every token (decode tokens become
// one-row tiles); other steps keep paged_attention (paged_attention_fp8 with
// an fp8 cache). No CUDA header needed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/KernelSpecs.h"

#include <cstdint>
#include <span>
#include <vector>

namespace sol::cuda {

/// prefill_attention<Hq, Hkv, HD, BS>(out, qkv, k_cache, v_cache, positions,
/// token_seq, block_tables, max_blocks, scale, sliding_window, tiles); with
/// kvFp8, prefill_attention_fp8<Hq, Hkv, HD, BS>(out, qkv, k_cache, v_cache,
/// k_scales, v_scales, positions, ...): an E4M3 cache with a float32 scale
/// per (block, slot, kv head) for K and for V, as paged_attention_fp8 reads.
struct PrefillAttentionSpec {
  int qHeads = 0;
  int kvHeads = 0;
  int headDim = 0;
  int blockSize = 16;
  bool kvFp8 = false;
  /// The variant that soft-caps the scores (TiledAttentionArgs::softcap).
  bool softcap = false;

  /// Query tokens per tile, K/V positions per step, threads: the kernel's
  /// kPrefillRows, kPrefillKeys and kPrefillThreads.
  static constexpr int kRows = 64;
  static constexpr int kKeys = 64;
  static constexpr int kThreads = 128;

  /// Whether the kernel handles this shape (head dims 64, 80, 96, 128 and
  /// 256; GQA).
  bool supported() const;
  KernelInstance instance() const;
  /// Elements from one row of a shared-memory tile to the next
  /// (PrefillAttentionShape::kRowStride): the head dim, padded by one
  /// 16-byte chunk when it is not a multiple of 64 (80, 96).
  int rowStride() const;
  /// Bytes of dynamic shared memory: Q and two stages of bf16 K and V tiles;
  /// fp8 adds a staging tile of E4M3 K and V rows and two stages of their
  /// scales. Head dim 256: 160 KB (194 KB with fp8), one block an SM.
  unsigned sharedBytes() const;
  LaunchDims dims(int tiles) const;
};

/// One tile: `rows` consecutive tokens of the step from `firstToken`, all of
/// one sequence at consecutive positions (an int2 on the device).
struct PrefillTile {
  int32_t firstToken = 0;
  int32_t rows = 0;
  friend bool operator==(const PrefillTile &, const PrefillTile &) = default;
};

/// Cuts a step's tokens into tiles of at most `maxRows` tokens: each run of
/// tokens of one sequence at consecutive positions is split evenly into the
/// fewest tiles; padding tokens (tokenSeq < 0) form runs of their own. Every
/// token lands in exactly one tile. Tiles are ordered by decreasing last
/// position (the longest K/V walks start first).
std::vector<PrefillTile> planPrefillTiles(std::span<const int32_t> tokenSeq,
                                          std::span<const int32_t> positions,
                                          int maxRows);

/// The length of the longest run (as above) among the step's tokens.
int longestPromptRun(std::span<const int32_t> tokenSeq,
                     std::span<const int32_t> positions);

/// Whether a step should run prefill_attention rather than paged_attention:
/// it holds a run of at least `kRows` tokens (a prompt chunk long enough to
/// fill a tile).
bool usePrefillAttention(std::span<const int32_t> tokenSeq,
                         std::span<const int32_t> positions);

} // namespace sol::cuda

//===- BlockManager.h - Paged KV-cache blocks and the prefix cache -*- C++
//-*-===//
//
// Owns the ids of the executor's KV-cache blocks. A block is in exactly one
// of three states:
//   free        no sequence uses it and it holds nothing worth keeping;
//   cached      no sequence uses it, but it is a full block registered in the
//               prefix cache: a new sequence whose tokens start the same way
//               may take it instead of recomputing it;
//   referenced  one or more sequences use it (reference count > 0).
// free + cached + referenced == numBlocks at all times.
//
// Prefix caching: a full block is identified by
//   hash(block) = XXH3-64(hash(previous block of the sequence), its tokens)
// (a fixed seed stands in for the previous hash of a sequence's first block),
// so equal hashes mean equal token prefixes up to and including the block. A
// lookup also compares the block's stored tokens and parent hash, so a hash
// collision can only cost a cache miss, never wrong KV values. Unreferenced
// cached blocks stay cached; a block is evicted, least recently released
// first, only when an allocation finds no free block.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace sol {

/// The KV-cache blocks of one sequence in position order (position p lives in
/// blocks[p / blockSize]) and the prefix-cache hashes of its leading full
/// blocks (hashes.size() <= blocks.size(); kept only with prefix caching).
struct BlockTable {
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;
};

/// The longest run of cached full blocks that starts a token sequence.
struct PrefixMatch {
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;
};

/// The width of a step's block tables whose longest holds `longest` blocks:
/// rounded up to a power of two, capped at `cap` (the blocks of the longest
/// sequence) but never below `longest`. Executors that key CUDA graphs on the
/// step's shape then see few widths, not a new one every block.
inline int32_t blockTableWidth(int32_t longest, int32_t cap) {
  int32_t width = 1;
  while (width < longest)
    width *= 2;
  return std::max(longest, std::min(width, cap));
}

class BlockManager {
public:
  /// Throws sol::Error unless numBlocks >= 1 and blockSize >= 1.
  BlockManager(int32_t numBlocks, int32_t blockSize, bool enablePrefixCaching);

  int32_t numBlocks() const { return numBlocks_; }
  int32_t blockSize() const { return blockSize_; }
  bool prefixCaching() const { return prefixCaching_; }

  /// Blocks holding nothing.
  int32_t numFree() const { return static_cast<int32_t>(free_.size()); }
  /// Unreferenced blocks kept by the prefix cache (evictable).
  int32_t numCached() const { return static_cast<int32_t>(lru_.size()); }
  /// Blocks some sequence references.
  int32_t numReferenced() const { return numReferenced_; }
  /// Blocks an allocation may take: free ones, then evicted cached ones.
  int32_t numAvailable() const { return numFree() + numCached(); }
  int32_t refCount(int32_t block) const;
  /// Whether `block` is registered in the prefix cache (referenced or not).
  bool isCached(int32_t block) const;

  /// Blocks needed to hold `tokens` positions.
  int32_t blocksFor(int64_t tokens) const {
    return static_cast<int32_t>((tokens + blockSize_ - 1) / blockSize_);
  }

  /// The hash of a full block of `blockSize` tokens following a block whose
  /// hash is `parent` (kRootHash for a sequence's first block).
  static uint64_t hashBlock(uint64_t parent, std::span<const int32_t> tokens);
  static constexpr uint64_t kRootHash = 0x5eed5eed5eed5eedULL;

  /// The longest chain of cached full blocks that starts `tokens`, at most
  /// `maxBlocks` long. Takes no references and changes nothing (empty
  /// without prefix caching).
  PrefixMatch findPrefix(std::span<const int32_t> tokens,
                         int32_t maxBlocks) const;

  /// Blocks an allocation would take from numAvailable() to give a sequence
  /// the blocks of `match` plus `newBlocks` fresh ones: matched blocks that
  /// are unreferenced leave the evictable pool when referenced again.
  int32_t blocksToTake(const PrefixMatch &match, int32_t newBlocks) const;

  /// Starts an empty `table` with the blocks of `match` (taking a reference
  /// on each) and counts `queriedTokens` prompt tokens, of which the match
  /// covers match.blocks.size() * blockSize, in the hit-rate counters.
  void takePrefix(BlockTable &table, const PrefixMatch &match,
                  int64_t queriedTokens);

  /// Grows `table` to hold `tokens` positions. Returns false and changes
  /// nothing when too few blocks are available.
  bool grow(BlockTable &table, int64_t tokens);

  /// Registers in the prefix cache every block of `table` that is full of
  /// computed tokens (the first `numComputed` of `tokens`, the sequence's
  /// ids from position 0) and not yet hashed. A block whose hash is already
  /// cached (another sequence computed the same tokens) stays private and
  /// goes back to the free list when released. No-op without prefix caching.
  void commitFullBlocks(BlockTable &table, std::span<const int32_t> tokens,
                        int64_t numComputed);

  /// Drops the references of `table` (last block first, so that the tail of
  /// a cached chain is evicted before its head) and empties it. Throws
  /// sol::Error, before changing anything, on an id out of range or a block
  /// with no reference left (a double free would corrupt two caches).
  void release(BlockTable &table);
  /// Releases the blocks of `table` past those that hold `tokens` positions
  /// (speculative tokens that were rejected). Those blocks hold no full
  /// block of computed tokens, so none of them is in the prefix cache.
  void shrink(BlockTable &table, int64_t tokens);

  /// Fresh blocks outside any sequence (a caller-managed table, e.g. for a
  /// teacher-forced prompt). Returns false and takes nothing when too few are
  /// available.
  bool allocate(int32_t n, std::vector<int32_t> &blocks);
  /// Drops one reference of each id, as release(BlockTable&).
  void release(std::span<const int32_t> blocks);

  /// Hit-rate counters: prompt tokens looked up and tokens found cached.
  int64_t queriedTokens() const { return queriedTokens_; }
  int64_t hitTokens() const { return hitTokens_; }
  /// Blocks evicted from the prefix cache so far.
  int64_t numEvictions() const { return numEvictions_; }

  /// Throws sol::Error describing the first inconsistency of the internal
  /// state (for tests): the state counts, the LRU list and the hash map.
  void checkConsistency() const;

private:
  struct Block {
    int32_t refCount = 0;
    bool cached = false; // registered in hashToBlock_
    uint64_t hash = 0;
    uint64_t parentHash = 0;
    std::list<int32_t>::iterator lruPos; // valid when cached && refCount == 0
  };

  int32_t takeBlock(); // a free block, else the LRU cached one, evicted
  void reference(int32_t block);
  void checkRelease(std::span<const int32_t> blocks) const;
  void dropReference(int32_t block);
  std::span<const int32_t> storedTokens(int32_t block) const;

  int32_t numBlocks_, blockSize_;
  bool prefixCaching_;
  std::vector<Block> blocks_;
  /// Tokens of cached blocks: numBlocks x blockSize (empty without prefix
  /// caching).
  std::vector<int32_t> tokens_;
  std::vector<int32_t> free_; // a stack: the last freed is reused first
  std::list<int32_t> lru_;    // unreferenced cached blocks, oldest first
  std::unordered_map<uint64_t, int32_t> hashToBlock_;
  int32_t numReferenced_ = 0;
  int64_t queriedTokens_ = 0, hitTokens_ = 0, numEvictions_ = 0;
};

} // namespace sol

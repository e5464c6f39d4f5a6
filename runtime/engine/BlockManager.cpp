//===- BlockManager.cpp - Paged KV-cache blocks and the prefix cache ------===//
#include "runtime/engine/BlockManager.h"

#include "runtime/support/Error.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace sol {

BlockManager::BlockManager(int32_t numBlocks, int32_t blockSize,
                           bool enablePrefixCaching)
    : numBlocks_(numBlocks), blockSize_(blockSize),
      prefixCaching_(enablePrefixCaching) {
  if (numBlocks < 1)
    fail("the KV cache has ", numBlocks,
         " blocks; it needs at least one (raise --gpu-memory-utilization or "
         "lower --max-model-len)");
  if (blockSize < 1)
    fail("the KV cache's block size is ", blockSize, "; it must be >= 1");
  blocks_.resize(static_cast<size_t>(numBlocks));
  if (prefixCaching_)
    tokens_.resize(static_cast<size_t>(numBlocks) *
                   static_cast<size_t>(blockSize));
  free_.reserve(static_cast<size_t>(numBlocks));
  // Pop from the back: block 0 first.
  for (int32_t b = numBlocks - 1; b >= 0; --b)
    free_.push_back(b);
}

int32_t BlockManager::refCount(int32_t block) const {
  if (block < 0 || block >= numBlocks_)
    fail("KV cache: block ", block, " outside [0, ", numBlocks_, ")");
  return blocks_[static_cast<size_t>(block)].refCount;
}

bool BlockManager::isCached(int32_t block) const {
  if (block < 0 || block >= numBlocks_)
    fail("KV cache: block ", block, " outside [0, ", numBlocks_, ")");
  return blocks_[static_cast<size_t>(block)].cached;
}

uint64_t BlockManager::hashBlock(uint64_t parent,
                                 std::span<const int32_t> tokens) {
  // One XXH3-64 over (parent hash, token ids): 8 + 4 * blockSize bytes.
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, &parent, sizeof parent);
  XXH3_64bits_update(&state, tokens.data(), tokens.size_bytes());
  return XXH3_64bits_digest(&state);
}

std::span<const int32_t> BlockManager::storedTokens(int32_t block) const {
  return {tokens_.data() +
              static_cast<size_t>(block) * static_cast<size_t>(blockSize_),
          static_cast<size_t>(blockSize_)};
}

PrefixMatch BlockManager::findPrefix(std::span<const int32_t> tokens,
                                     int32_t maxBlocks) const {
  PrefixMatch match;
  if (!prefixCaching_)
    return match;
  const size_t bs = static_cast<size_t>(blockSize_);
  const size_t limit =
      std::min(static_cast<size_t>(std::max(maxBlocks, 0)), tokens.size() / bs);
  uint64_t parent = kRootHash;
  for (size_t i = 0; i < limit; ++i) {
    std::span<const int32_t> chunk = tokens.subspan(i * bs, bs);
    const uint64_t h = hashBlock(parent, chunk);
    auto it = hashToBlock_.find(h);
    if (it == hashToBlock_.end())
      break;
    const int32_t b = it->second;
    const Block &block = blocks_[static_cast<size_t>(b)];
    // A 64-bit collision must not hand out another prefix's KV values.
    if (block.parentHash != parent ||
        !std::equal(chunk.begin(), chunk.end(), storedTokens(b).begin()))
      break;
    match.blocks.push_back(b);
    match.hashes.push_back(h);
    parent = h;
  }
  return match;
}

int32_t BlockManager::blocksToTake(const PrefixMatch &match,
                                   int32_t newBlocks) const {
  int32_t n = newBlocks;
  for (int32_t b : match.blocks)
    if (blocks_[static_cast<size_t>(b)].refCount == 0)
      ++n;
  return n;
}

void BlockManager::reference(int32_t b) {
  Block &block = blocks_[static_cast<size_t>(b)];
  if (block.refCount == 0) {
    // Only cached blocks are referenced from refCount 0 here (takeBlock
    // hands out the others).
    lru_.erase(block.lruPos);
    ++numReferenced_;
  }
  ++block.refCount;
}

void BlockManager::takePrefix(BlockTable &table, const PrefixMatch &match,
                              int64_t queriedTokens) {
  if (!table.blocks.empty())
    fail("KV cache: a prefix can only start an empty block table");
  for (int32_t b : match.blocks)
    reference(b);
  table.blocks = match.blocks;
  table.hashes = match.hashes;
  queriedTokens_ += queriedTokens;
  hitTokens_ += static_cast<int64_t>(match.blocks.size()) * blockSize_;
}

int32_t BlockManager::takeBlock() {
  int32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    // Evict the least recently released cached block.
    b = lru_.front();
    lru_.pop_front();
    Block &block = blocks_[static_cast<size_t>(b)];
    hashToBlock_.erase(block.hash);
    block.cached = false;
    ++numEvictions_;
  }
  Block &block = blocks_[static_cast<size_t>(b)];
  block.refCount = 1;
  ++numReferenced_;
  return b;
}

bool BlockManager::allocate(int32_t n, std::vector<int32_t> &blocks) {
  if (n < 0 || n > numAvailable())
    return false;
  for (int32_t i = 0; i < n; ++i)
    blocks.push_back(takeBlock());
  return true;
}

bool BlockManager::grow(BlockTable &table, int64_t tokens) {
  const int32_t need = blocksFor(tokens);
  const int32_t have = static_cast<int32_t>(table.blocks.size());
  if (need <= have)
    return true;
  return allocate(need - have, table.blocks);
}

void BlockManager::commitFullBlocks(BlockTable &table,
                                    std::span<const int32_t> tokens,
                                    int64_t numComputed) {
  if (!prefixCaching_)
    return;
  const size_t bs = static_cast<size_t>(blockSize_);
  const size_t full =
      std::min(static_cast<size_t>(std::max<int64_t>(numComputed, 0)),
               tokens.size()) /
      bs;
  for (size_t i = table.hashes.size(); i < full && i < table.blocks.size();
       ++i) {
    const uint64_t parent = i == 0 ? kRootHash : table.hashes[i - 1];
    std::span<const int32_t> chunk = tokens.subspan(i * bs, bs);
    const uint64_t h = hashBlock(parent, chunk);
    table.hashes.push_back(h);
    const int32_t b = table.blocks[i];
    Block &block = blocks_[static_cast<size_t>(b)];
    if (block.cached || hashToBlock_.count(h))
      continue; // already shared, or a twin (or a collision) is cached
    block.cached = true;
    block.hash = h;
    block.parentHash = parent;
    std::copy(chunk.begin(), chunk.end(),
              tokens_.begin() +
                  static_cast<int64_t>(b) * static_cast<int64_t>(bs));
    hashToBlock_.emplace(h, b);
  }
}

void BlockManager::checkRelease(std::span<const int32_t> blocks) const {
  for (int32_t b : blocks)
    if (b < 0 || b >= numBlocks_)
      fail("KV cache: releasing block ", b, " outside [0, ", numBlocks_, ")");
  std::vector<int32_t> sorted(blocks.begin(), blocks.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i])
      ++j;
    const int32_t refs = blocks_[static_cast<size_t>(sorted[i])].refCount;
    if (static_cast<int32_t>(j - i) > refs)
      fail("KV cache: block ", sorted[i], " released ", j - i,
           " time(s) but it has ", refs, " reference(s) (released twice?)");
    i = j;
  }
}

void BlockManager::dropReference(int32_t b) {
  Block &block = blocks_[static_cast<size_t>(b)];
  if (--block.refCount > 0)
    return;
  --numReferenced_;
  if (block.cached)
    block.lruPos = lru_.insert(lru_.end(), b);
  else
    free_.push_back(b);
}

void BlockManager::release(std::span<const int32_t> blocks) {
  checkRelease(blocks);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
    dropReference(*it);
}

void BlockManager::release(BlockTable &table) {
  release(std::span<const int32_t>(table.blocks));
  table.blocks.clear();
  table.hashes.clear();
}

void BlockManager::shrink(BlockTable &table, int64_t tokens) {
  const size_t keep = static_cast<size_t>(blocksFor(tokens));
  if (keep >= table.blocks.size())
    return;
  if (table.hashes.size() > keep)
    fail("internal error: shrinking a block table below its cached blocks");
  release(std::span<const int32_t>(table.blocks).subspan(keep));
  table.blocks.resize(keep);
}

void BlockManager::checkConsistency() const {
  int32_t referenced = 0, freeCount = 0, cachedFree = 0;
  std::vector<char> onFree(static_cast<size_t>(numBlocks_), 0);
  for (int32_t b : free_) {
    if (b < 0 || b >= numBlocks_ || onFree[static_cast<size_t>(b)])
      fail("KV cache: free list holds block ", b, " twice or out of range");
    onFree[static_cast<size_t>(b)] = 1;
  }
  std::vector<char> onLru(static_cast<size_t>(numBlocks_), 0);
  for (int32_t b : lru_) {
    if (b < 0 || b >= numBlocks_ || onLru[static_cast<size_t>(b)])
      fail("KV cache: LRU list holds block ", b, " twice or out of range");
    onLru[static_cast<size_t>(b)] = 1;
  }
  for (int32_t b = 0; b < numBlocks_; ++b) {
    const Block &block = blocks_[static_cast<size_t>(b)];
    const bool f = onFree[static_cast<size_t>(b)] != 0;
    const bool l = onLru[static_cast<size_t>(b)] != 0;
    if (block.refCount < 0)
      fail("KV cache: block ", b, " has reference count ", block.refCount);
    if (block.refCount > 0) {
      ++referenced;
      if (f || l)
        fail("KV cache: referenced block ", b, " is on the free/LRU list");
    } else if (block.cached) {
      ++cachedFree;
      if (!l || f)
        fail("KV cache: unreferenced cached block ", b,
             " is not (only) on the LRU list");
    } else {
      ++freeCount;
      if (!f || l)
        fail("KV cache: unreferenced block ", b,
             " is not (only) on the free list");
    }
    if (block.cached) {
      auto it = hashToBlock_.find(block.hash);
      if (it == hashToBlock_.end() || it->second != b)
        fail("KV cache: cached block ", b, " is missing from the hash map");
    }
  }
  for (const auto &[h, b] : hashToBlock_)
    if (!blocks_[static_cast<size_t>(b)].cached ||
        blocks_[static_cast<size_t>(b)].hash != h)
      fail("KV cache: hash map names block ", b, " which is not cached");
  if (referenced != numReferenced_ || freeCount != numFree() ||
      cachedFree != numCached() ||
      referenced + freeCount + cachedFree != numBlocks_)
    fail("KV cache: ", referenced, " referenced + ", freeCount, " free + ",
         cachedFree, " cached != ", numBlocks_, " blocks (counters say ",
         numReferenced_, " + ", numFree(), " + ", numCached(), ")");
}

} // namespace sol

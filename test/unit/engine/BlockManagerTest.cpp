//===- BlockManagerTest.cpp - Reference counts and the prefix cache -------===//
#include "runtime/engine/BlockManager.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

using namespace sol;

namespace {

template <typename Body> std::string errorOf(Body &&body) {
  try {
    body();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

void expectNoLeak(const BlockManager &m) {
  EXPECT_EQ(m.numFree() + m.numCached() + m.numReferenced(), m.numBlocks());
  EXPECT_NO_THROW(m.checkConsistency());
}

std::vector<int32_t> iota(int32_t n, int32_t from = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

/// A table for `tokens`, all computed and committed.
BlockTable computed(BlockManager &m, const std::vector<int32_t> &tokens) {
  BlockTable t;
  const PrefixMatch match = m.findPrefix(
      tokens, (static_cast<int32_t>(tokens.size()) - 1) / m.blockSize());
  m.takePrefix(t, match, static_cast<int64_t>(tokens.size()));
  EXPECT_TRUE(m.grow(t, static_cast<int64_t>(tokens.size())));
  m.commitFullBlocks(t, tokens, static_cast<int64_t>(tokens.size()));
  return t;
}

} // namespace

TEST(BlockManager, RejectsEmptyCache) {
  EXPECT_NE(errorOf([] { BlockManager(0, 4, false); }).find("at least one"),
            std::string::npos);
  EXPECT_NE(errorOf([] { BlockManager(4, 0, false); }).find("block size"),
            std::string::npos);
}

TEST(BlockManager, AllocatesAndReleasesWithReferenceCounts) {
  BlockManager m(6, 4, /*enablePrefixCaching=*/true);
  BlockTable a;
  ASSERT_TRUE(m.grow(a, 9)); // 3 blocks
  EXPECT_EQ(a.blocks, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(m.numReferenced(), 3);
  EXPECT_EQ(m.numFree(), 3);
  ASSERT_TRUE(m.grow(a, 12)); // still 3
  EXPECT_EQ(a.blocks.size(), 3u);
  for (int32_t b : a.blocks)
    EXPECT_EQ(m.refCount(b), 1);

  // Share the two full blocks with a second table.
  const std::vector<int32_t> tokens = iota(9);
  m.commitFullBlocks(a, tokens, 9);
  EXPECT_EQ(a.hashes.size(), 2u);
  BlockTable b;
  const PrefixMatch hit = m.findPrefix(tokens, 2);
  ASSERT_EQ(hit.blocks, (std::vector<int32_t>{0, 1}));
  m.takePrefix(b, hit, 9);
  EXPECT_EQ(m.refCount(0), 2);
  EXPECT_EQ(m.refCount(1), 2);
  EXPECT_EQ(m.numReferenced(), 3);
  m.release(a);
  EXPECT_TRUE(a.blocks.empty());
  EXPECT_EQ(m.refCount(0), 1);
  EXPECT_EQ(m.refCount(2), 0);
  EXPECT_EQ(m.numFree(), 4); // block 2 was never full: free, not cached
  m.release(b);
  EXPECT_EQ(m.numReferenced(), 0);
  EXPECT_EQ(m.numCached(), 2);
  expectNoLeak(m);
}

TEST(BlockManager, DoubleFreeIsAnErrorAndChangesNothing) {
  BlockManager m(4, 2, false);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(m.allocate(2, blocks));
  m.release(std::span<const int32_t>(blocks));
  const std::string err =
      errorOf([&] { m.release(std::span<const int32_t>(blocks)); });
  EXPECT_NE(err.find("released twice"), std::string::npos) << err;
  expectNoLeak(m);

  // The same id twice in one release, holding one reference: nothing moves.
  std::vector<int32_t> one;
  ASSERT_TRUE(m.allocate(1, one));
  const std::vector<int32_t> twice = {one[0], one[0]};
  EXPECT_NE(errorOf([&] {
              m.release(std::span<const int32_t>(twice));
            }).find("released 2 time(s)"),
            std::string::npos);
  EXPECT_EQ(m.refCount(one[0]), 1);
  const std::vector<int32_t> outside = {7};
  EXPECT_NE(errorOf([&] {
              m.release(std::span<const int32_t>(outside));
            }).find("outside [0, 4)"),
            std::string::npos);
  m.release(std::span<const int32_t>(one));
  expectNoLeak(m);
}

TEST(BlockManager, AllocationFailsWholeOrNotAtAll) {
  BlockManager m(3, 4, false);
  BlockTable t;
  EXPECT_FALSE(m.grow(t, 13)); // 4 blocks
  EXPECT_TRUE(t.blocks.empty());
  EXPECT_EQ(m.numFree(), 3);
  EXPECT_TRUE(m.grow(t, 12));
  std::vector<int32_t> more;
  EXPECT_FALSE(m.allocate(1, more));
  EXPECT_TRUE(more.empty());
  m.release(t);
  expectNoLeak(m);
}

TEST(BlockManager, PrefixHitsOnlyFullBlocksAndNeverPastTheLimit) {
  BlockManager m(16, 4, true);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  BlockTable a = computed(m, tokens);
  EXPECT_EQ(a.hashes.size(), 2u); // 10 tokens: 2 full blocks + 2 tokens
  EXPECT_TRUE(m.isCached(a.blocks[0]));
  EXPECT_TRUE(m.isCached(a.blocks[1]));
  EXPECT_FALSE(m.isCached(a.blocks[2]));

  EXPECT_EQ(m.findPrefix(tokens, 5).blocks.size(), 2u);
  EXPECT_EQ(m.findPrefix(tokens, 1).blocks.size(), 1u);
  // A prompt of exactly 8 tokens may reuse only (8 - 1) / 4 = 1 block: the
  // last token must be computed for its logits.
  const std::vector<int32_t> eight(tokens.begin(), tokens.begin() + 8);
  EXPECT_EQ(m.findPrefix(eight, (8 - 1) / 4).blocks.size(), 1u);
  // The second block differs: only the first is shared.
  std::vector<int32_t> other = tokens;
  other[5] = 99;
  EXPECT_EQ(m.findPrefix(other, 5).blocks, (std::vector<int32_t>{a.blocks[0]}));
  // The first block differs: nothing, even though the second block matches.
  other = tokens;
  other[0] = 99;
  EXPECT_TRUE(m.findPrefix(other, 5).blocks.empty());
  m.release(a);
  expectNoLeak(m);
}

TEST(BlockManager, HashesChainThroughTheParent) {
  const std::vector<int32_t> b0 = {1, 2, 3, 4}, b1 = {5, 6, 7, 8};
  const uint64_t h0 = BlockManager::hashBlock(BlockManager::kRootHash, b0);
  const uint64_t h1 = BlockManager::hashBlock(h0, b1);
  EXPECT_NE(h0, h1);
  EXPECT_NE(h1, BlockManager::hashBlock(BlockManager::kRootHash, b1));
  EXPECT_EQ(h1, BlockManager::hashBlock(h0, b1)); // deterministic

  BlockManager m(8, 4, true);
  BlockTable t = computed(m, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_EQ(t.hashes.size(), 2u);
  EXPECT_EQ(t.hashes[0], h0);
  EXPECT_EQ(t.hashes[1], h1);
  m.release(t);
}

TEST(BlockManager, CountsQueriedAndHitTokens) {
  BlockManager m(16, 4, true);
  BlockTable a = computed(m, iota(12));
  EXPECT_EQ(m.queriedTokens(), 12);
  EXPECT_EQ(m.hitTokens(), 0);
  BlockTable b = computed(m, iota(12)); // hits (12 - 1) / 4 = 2 blocks
  EXPECT_EQ(m.queriedTokens(), 24);
  EXPECT_EQ(m.hitTokens(), 8);
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  EXPECT_EQ(b.blocks[1], a.blocks[1]);
  EXPECT_NE(b.blocks[2], a.blocks[2]);
  // b's third block holds the same tokens as a's: it stays private.
  EXPECT_TRUE(m.isCached(a.blocks[2]));
  EXPECT_FALSE(m.isCached(b.blocks[2]));
  m.release(b);
  EXPECT_EQ(m.numCached(), 0); // a still references the shared ones
  m.release(a);
  EXPECT_EQ(m.numCached(), 3);
  expectNoLeak(m);
}

TEST(BlockManager, UnreferencedBlocksStayCachedAndEvictLeastRecentFirst) {
  BlockManager m(6, 2, true);
  BlockTable a = computed(m, {1, 2, 3, 4}); // blocks 0, 1
  BlockTable b = computed(m, {5, 6, 7, 8}); // blocks 2, 3
  m.release(a);                             // LRU: 1, 0 (tail of a chain first)
  m.release(b);                             // LRU: 1, 0, 3, 2
  EXPECT_EQ(m.numCached(), 4);
  EXPECT_EQ(m.numFree(), 2);

  // Free blocks go first: nothing is evicted.
  std::vector<int32_t> got;
  ASSERT_TRUE(m.allocate(2, got));
  EXPECT_EQ(m.numEvictions(), 0);
  EXPECT_EQ(m.findPrefix(std::vector<int32_t>{1, 2, 3, 4}, 2).blocks.size(),
            2u);
  // Then least recently released first: 1 (a's tail), then 0, then 3.
  ASSERT_TRUE(m.allocate(1, got));
  EXPECT_EQ(got.back(), 1);
  EXPECT_FALSE(m.isCached(1));
  EXPECT_EQ(m.findPrefix(std::vector<int32_t>{1, 2, 3, 4}, 2).blocks,
            (std::vector<int32_t>{0}));
  ASSERT_TRUE(m.allocate(1, got));
  EXPECT_EQ(got.back(), 0);
  // A cached block in use leaves the LRU list; released again, it rejoins
  // at the back (tail of the chain first: 3, then 2).
  BlockTable c;
  const PrefixMatch hit = m.findPrefix(std::vector<int32_t>{5, 6, 7, 8}, 2);
  ASSERT_EQ(hit.blocks, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(m.blocksToTake(hit, 1), 3);
  m.takePrefix(c, hit, 4);
  EXPECT_EQ(m.numAvailable(), 0);
  EXPECT_FALSE(m.allocate(1, got));
  m.release(c); // LRU: 3, 2
  ASSERT_TRUE(m.allocate(1, got));
  EXPECT_EQ(got.back(), 3);
  EXPECT_EQ(m.numEvictions(), 3);
  m.release(std::span<const int32_t>(got));
  expectNoLeak(m);
}

TEST(BlockManager, WithoutPrefixCachingNothingIsCached) {
  BlockManager m(4, 2, false);
  BlockTable a = computed(m, {1, 2, 3, 4});
  EXPECT_TRUE(a.hashes.empty());
  EXPECT_TRUE(m.findPrefix(std::vector<int32_t>{1, 2, 3, 4}, 2).blocks.empty());
  m.release(a);
  EXPECT_EQ(m.numFree(), 4);
  EXPECT_EQ(m.numCached(), 0);
  EXPECT_EQ(m.queriedTokens(), 4);
  EXPECT_EQ(m.hitTokens(), 0);
}

TEST(BlockManager, RandomUseNeverLeaks) {
  BlockManager m(40, 3, true);
  std::mt19937 rng(7);
  std::vector<BlockTable> live;
  std::vector<std::vector<int32_t>> tokens;
  for (int iter = 0; iter < 3000; ++iter) {
    const int op = static_cast<int>(rng() % 3);
    if (op < 2 || live.empty()) {
      // A sequence over a small alphabet (so prefixes repeat), grown in
      // chunks, committed as it goes.
      std::vector<int32_t> t(1 + rng() % 20);
      for (int32_t &x : t)
        x = static_cast<int32_t>(rng() % 3);
      BlockTable table;
      const PrefixMatch match =
          m.findPrefix(t, (static_cast<int32_t>(t.size()) - 1) / m.blockSize());
      const int32_t fresh =
          m.blocksFor(int64_t(t.size())) - int32_t(match.blocks.size());
      if (m.blocksToTake(match, fresh) > m.numAvailable())
        continue;
      m.takePrefix(table, match, int64_t(t.size()));
      ASSERT_TRUE(m.grow(table, int64_t(t.size())));
      m.commitFullBlocks(table, t, int64_t(t.size()));
      live.push_back(std::move(table));
      tokens.push_back(std::move(t));
    } else {
      const size_t i = rng() % live.size();
      m.release(live[i]);
      live.erase(live.begin() + int64_t(i));
      tokens.erase(tokens.begin() + int64_t(i));
    }
    ASSERT_NO_THROW(m.checkConsistency()) << "iteration " << iter;
  }
  for (BlockTable &t : live)
    m.release(t);
  EXPECT_EQ(m.numReferenced(), 0);
  EXPECT_GT(m.hitTokens(), 0);
  EXPECT_GT(m.numEvictions(), 0);
  expectNoLeak(m);
}

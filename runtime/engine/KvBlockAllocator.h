//===- KvBlockAllocator.h - Free list of paged KV-cache blocks --*- C++ -*-===//
#pragma once

#include <cstdint>
#include <vector>

namespace sol {

/// Hands out KV-cache block ids in [0, numBlocks). Freed blocks are reused
/// first (they are likely still in the GPU's L2).
class KvBlockAllocator {
public:
  explicit KvBlockAllocator(int32_t numBlocks);

  int32_t numBlocks() const { return numBlocks_; }
  int32_t numFree() const { return static_cast<int32_t>(free_.size()); }

  /// Appends `n` block ids to `blocks`; returns false (and allocates
  /// nothing) when fewer than `n` are free.
  bool allocate(int32_t n, std::vector<int32_t> &blocks);
  /// Returns `blocks` to the free list. Throws sol::Error on an id that is
  /// out of range or already free (a double free would corrupt two
  /// sequences' caches).
  void release(const std::vector<int32_t> &blocks);

private:
  int32_t numBlocks_;
  std::vector<int32_t> free_;
  std::vector<bool> inUse_;
};

} // namespace sol

//===- PagedKvCache.h - The reference executor's float32 KV cache -*- C++
//-*-===//
//
// Paged exactly as the plan's KvCacheLayout says, but in float32 whatever
// dtype the layout names: a bf16 cache keeps full precision (the oracle), an
// fp8 cache holds e4m3 * scale, the exact values the GPU's fp8 cache stands
// for (ropeKvWriteRows rounds them, Fp8E4M3.h). Per layer one K
// and one V array of [numBlocks, blockSize, numKvHeads, headDim]. Position p
// of a sequence lives in block blockTable[p / blockSize], slot
// p % blockSize. Memory: 2 * layers * blocks * blockSize * kvHeads * headDim
// * 4 bytes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/reference/ReferencePlan.h"

#include <cstdint>
#include <span>
#include <vector>

namespace sol::reference {

class PagedKvCache {
public:
  /// Allocates a zeroed cache. Throws sol::Error when it does not fit in
  /// memory, with the size it asked for.
  PagedKvCache(const KvLayoutInfo &layout, int32_t numBlocks);

  int32_t numBlocks() const { return numBlocks_; }
  const KvLayoutInfo &layout() const { return layout_; }
  uint64_t bytes() const;

  /// The headDim values of kv head `head` at (block, slot) of `layer`.
  std::span<float> key(int64_t layer, int64_t block, int64_t slot,
                       int64_t head) {
    return {keys_[static_cast<size_t>(layer)].data() +
                offset(block, slot, head),
            static_cast<size_t>(layout_.headDim)};
  }
  std::span<float> value(int64_t layer, int64_t block, int64_t slot,
                         int64_t head) {
    return {values_[static_cast<size_t>(layer)].data() +
                offset(block, slot, head),
            static_cast<size_t>(layout_.headDim)};
  }
  std::span<const float> key(int64_t layer, int64_t block, int64_t slot,
                             int64_t head) const {
    return {keys_[static_cast<size_t>(layer)].data() +
                offset(block, slot, head),
            static_cast<size_t>(layout_.headDim)};
  }
  std::span<const float> value(int64_t layer, int64_t block, int64_t slot,
                               int64_t head) const {
    return {values_[static_cast<size_t>(layer)].data() +
                offset(block, slot, head),
            static_cast<size_t>(layout_.headDim)};
  }

private:
  size_t offset(int64_t block, int64_t slot, int64_t head) const {
    return static_cast<size_t>(
        ((block * layout_.blockSize + slot) * layout_.numKvHeads + head) *
        layout_.headDim);
  }

  KvLayoutInfo layout_;
  int32_t numBlocks_ = 0;
  std::vector<std::vector<float>> keys_;   // per layer
  std::vector<std::vector<float>> values_; // per layer
};

} // namespace sol::reference

//===- PagedKvCache.cpp - The reference executor's float32 KV cache -------===//

#include "runtime/reference/PagedKvCache.h"

#include "runtime/support/Error.h"

#include <limits>
#include <new>

namespace sol::reference {

PagedKvCache::PagedKvCache(const KvLayoutInfo &layout, int32_t numBlocks)
    : layout_(layout), numBlocks_(numBlocks) {
  if (numBlocks < 0)
    fail("the KV cache needs a non-negative number of blocks, got ", numBlocks);
  const uint64_t perLayer = static_cast<uint64_t>(numBlocks) *
                            static_cast<uint64_t>(layout.blockSize) *
                            static_cast<uint64_t>(layout.numKvHeads) *
                            static_cast<uint64_t>(layout.headDim);
  const uint64_t total = perLayer * 2 * static_cast<uint64_t>(layout.numLayers);
  const auto gib = [&] {
    return static_cast<double>(total) * sizeof(float) / (1u << 30);
  };
  if (perLayer > std::numeric_limits<size_t>::max() / sizeof(float) ||
      total > std::numeric_limits<size_t>::max() / sizeof(float))
    fail("the float32 KV cache for ", numBlocks, " blocks is too large; ",
         "ask for fewer KV-cache blocks");
  try {
    keys_.resize(static_cast<size_t>(layout.numLayers));
    values_.resize(static_cast<size_t>(layout.numLayers));
    for (int32_t l = 0; l < layout.numLayers; ++l) {
      keys_[static_cast<size_t>(l)].assign(static_cast<size_t>(perLayer), 0.0f);
      values_[static_cast<size_t>(l)].assign(static_cast<size_t>(perLayer),
                                             0.0f);
    }
  } catch (const std::bad_alloc &) {
    fail("out of memory allocating the reference executor's float32 KV cache (",
         gib(), " GiB for ", numBlocks, " blocks of ", layout.blockSize,
         " tokens); ask for fewer KV-cache blocks or a shorter max model "
         "length");
  }
}

uint64_t PagedKvCache::bytes() const {
  uint64_t total = 0;
  for (const auto &k : keys_)
    total += k.size() * sizeof(float);
  for (const auto &v : values_)
    total += v.size() * sizeof(float);
  return total;
}

} // namespace sol::reference

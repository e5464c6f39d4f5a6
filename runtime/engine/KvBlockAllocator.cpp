//===- KvBlockAllocator.cpp - Free list of paged KV-cache blocks ----------===//
#include "runtime/engine/KvBlockAllocator.h"

#include "runtime/support/Error.h"

namespace sol {

KvBlockAllocator::KvBlockAllocator(int32_t numBlocks)
    : numBlocks_(numBlocks), inUse_(static_cast<size_t>(numBlocks), false) {
  if (numBlocks < 0)
    fail("KV cache: negative block count ", numBlocks);
  free_.reserve(static_cast<size_t>(numBlocks));
  // Pop from the back: block 0 first.
  for (int32_t b = numBlocks - 1; b >= 0; --b)
    free_.push_back(b);
}

bool KvBlockAllocator::allocate(int32_t n, std::vector<int32_t> &blocks) {
  if (n < 0 || n > numFree())
    return false;
  for (int32_t i = 0; i < n; ++i) {
    int32_t b = free_.back();
    free_.pop_back();
    inUse_[static_cast<size_t>(b)] = true;
    blocks.push_back(b);
  }
  return true;
}

void KvBlockAllocator::release(const std::vector<int32_t> &blocks) {
  for (int32_t b : blocks) {
    if (b < 0 || b >= numBlocks_)
      fail("KV cache: releasing block ", b, " outside [0, ", numBlocks_, ")");
    if (!inUse_[static_cast<size_t>(b)])
      fail("KV cache: block ", b, " released twice");
    inUse_[static_cast<size_t>(b)] = false;
    free_.push_back(b);
  }
}

} // namespace sol

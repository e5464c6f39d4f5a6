//===- PagedBatch.cpp - A batch of sequences over a paged KV cache --------===//

#include "PagedBatch.h"

#include <algorithm>

namespace sol::check {

long long PagedBatch::slot(int s, int position) const {
  const int block = blockTables[static_cast<std::size_t>(s) * maxBlocks +
                                position / blockSize];
  return static_cast<long long>(block) * blockSize + position % blockSize;
}

std::vector<bool> PagedBatch::liveSlots() const {
  std::vector<bool> live(static_cast<std::size_t>(numBlocks) * blockSize,
                         false);
  for (std::size_t s = 0; s < contexts.size(); ++s)
    for (int p = 0; p < contexts[s]; ++p)
      live[slot(static_cast<int>(s), p)] = true;
  return live;
}

PagedBatch makePagedBatch(Rng &rng, const std::vector<SequenceSpec> &seqs,
                          int paddingTokens, int blockSize) {
  PagedBatch b;
  b.blockSize = blockSize;
  int needed = 0;
  for (const SequenceSpec &s : seqs) {
    const int blocks = (s.context + blockSize - 1) / blockSize;
    needed += blocks;
    b.maxBlocks = std::max(b.maxBlocks, blocks);
  }
  b.maxBlocks += 1; // one spare entry per table, pointing at the NaN block
  b.numBlocks = needed + 3;
  std::vector<int> order(b.numBlocks);
  for (int i = 0; i < b.numBlocks; ++i)
    order[i] = i;
  for (int i = b.numBlocks - 1; i > 0; --i)
    std::swap(order[i], order[rng.uniformInt(0, i)]);
  b.nanBlock = order.back();
  b.blockTables.assign(seqs.size() * b.maxBlocks, b.nanBlock);
  int next = 0;
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    const int blocks = (seqs[s].context + blockSize - 1) / blockSize;
    for (int i = 0; i < blocks; ++i)
      b.blockTables[s * b.maxBlocks + i] = order[next++];
    b.contexts.push_back(seqs[s].context);
    for (int p = seqs[s].context - seqs[s].newTokens; p < seqs[s].context;
         ++p) {
      b.positions.push_back(p);
      b.tokenSeq.push_back(static_cast<int>(s));
    }
  }
  for (int i = 0; i < paddingTokens; ++i) {
    b.positions.push_back(0);
    b.tokenSeq.push_back(-1);
  }
  b.tokens = static_cast<int>(b.positions.size());
  return b;
}

} // namespace sol::check

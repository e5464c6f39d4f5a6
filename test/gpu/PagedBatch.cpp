//===- PagedBatch.cpp - A batch of sequences over a paged KV cache --------===//

#include "PagedBatch.h"

#include "runtime/reference/Fp8E4M3.h"

#include <algorithm>
#include <cmath>

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

std::vector<Bf16> attentionQkv(Rng &rng, const PagedBatch &batch, int qHeads,
                               int kvHeads, int hd) {
  const int rowElems = (qHeads + 2 * kvHeads) * hd;
  std::vector<Bf16> qkv =
      randomBf16(rng, static_cast<std::size_t>(batch.tokens) * rowElems, -1, 1);
  for (int t = 0; t < batch.tokens; ++t)
    for (int i = 0; i < qHeads * hd; ++i) {
      Bf16 &v = qkv[static_cast<std::size_t>(t) * rowElems + i];
      v = floatToBf16(bf16ToFloat(v) * 3.0f);
    }
  return qkv;
}

Bf16Cache makeBf16Cache(Rng &rng, const PagedBatch &batch, int kvHeads,
                        int hd) {
  const std::size_t slotElems = static_cast<std::size_t>(kvHeads) * hd;
  const std::size_t cacheElems =
      static_cast<std::size_t>(batch.numBlocks) * batch.blockSize * slotElems;
  Bf16Cache c{randomBf16(rng, cacheElems, -1, 1),
              randomBf16(rng, cacheElems, -1, 1)};
  const std::vector<bool> live = batch.liveSlots();
  for (std::size_t s = 0; s < live.size(); ++s)
    if (!live[s])
      for (std::size_t i = 0; i < slotElems; ++i) {
        c.k[s * slotElems + i] = kPoisonBf16;
        c.v[s * slotElems + i] = kPoisonBf16;
      }
  return c;
}

using reference::e4m3ToFloat;
using reference::floatToE4M3;
using reference::kvRowScale;

Fp8Cache makeFp8Cache(Rng &rng, const PagedBatch &batch, int kvHeads, int hd,
                      bool exactCodes) {
  const std::size_t rows =
      static_cast<std::size_t>(batch.numBlocks) * batch.blockSize * kvHeads;
  Fp8Cache c;
  c.kBytes.resize(rows * hd);
  c.vBytes.resize(rows * hd);
  c.kScales.resize(rows);
  c.vScales.resize(rows);
  c.kDeq.resize(rows * hd);
  c.vDeq.resize(rows * hd);
  std::vector<uint8_t> finiteCodes;
  for (int b = 0; b < 256; ++b)
    if (b != 0x7F && b != 0xFF)
      finiteCodes.push_back(static_cast<uint8_t>(b));
  std::size_t nextCode = 0;
  const std::vector<bool> live = batch.liveSlots();
  for (std::size_t r = 0; r < rows; ++r) {
    const bool isLive = live[r / kvHeads];
    for (int isV = 0; isV < 2; ++isV) {
      std::vector<uint8_t> &bytes = isV ? c.vBytes : c.kBytes;
      std::vector<float> &scales = isV ? c.vScales : c.kScales;
      std::vector<float> &deq = isV ? c.vDeq : c.kDeq;
      if (!isLive) {
        std::fill_n(bytes.begin() + r * hd, hd, uint8_t{0x7F});
        std::fill_n(deq.begin() + r * hd, hd, NAN);
        scales[r] = NAN;
        continue;
      }
      if (isV && exactCodes) {
        const float scale = std::ldexp(1.0f, rng.uniformInt(-4, 4));
        scales[r] = scale;
        for (int d = 0; d < hd; ++d) {
          const uint8_t b = finiteCodes[nextCode++ % finiteCodes.size()];
          bytes[r * hd + d] = b;
          deq[r * hd + d] = e4m3ToFloat(b) * scale;
        }
        continue;
      }
      const float magnitude = rng.uniform(0.05f, 4.0f);
      std::vector<float> x(hd);
      for (float &v : x)
        v = rng.uniform(-magnitude, magnitude);
      const float scale = kvRowScale(x);
      scales[r] = scale;
      for (int d = 0; d < hd; ++d) {
        const uint8_t b = floatToE4M3(x[d] / scale);
        bytes[r * hd + d] = b;
        deq[r * hd + d] = e4m3ToFloat(b) * scale;
      }
    }
  }
  return c;
}

} // namespace sol::check

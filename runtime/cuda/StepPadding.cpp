//===- StepPadding.cpp - Steps padded to their CUDA-graph bucket ----------===//
#include "runtime/cuda/StepPadding.h"

#include <algorithm>

namespace sol::cuda {

int graphBucket(int n) {
  if (n <= 1)
    return 1;
  if (n <= 8) {
    int b = 1;
    while (b < n)
      b *= 2;
    return b;
  }
  if (n > 64)
    return n;
  return (n + 7) / 8 * 8;
}

namespace {

/// `offsets` (R + 1 entries, or empty) extended to `rows` + 1 entries; the
/// padding rows own no entries.
std::span<const int32_t> padOffsets(std::span<const int32_t> offsets,
                                    std::size_t rows,
                                    std::vector<int32_t> &storage) {
  if (offsets.empty())
    return offsets;
  storage.assign(offsets.begin(), offsets.end());
  storage.resize(rows + 1, offsets.back());
  return storage;
}

} // namespace

void PaddedStep::pad(const StepBatch &in) {
  const std::size_t t = in.tokens.size(), r = in.logitRows.size();
  const std::size_t paddedT =
      static_cast<std::size_t>(graphBucket(static_cast<int>(t)));
  const std::size_t paddedR =
      static_cast<std::size_t>(graphBucket(static_cast<int>(r)));
  const int paddedSeqs = graphBucket(in.numSeqs);

  tokens_.assign(in.tokens.begin(), in.tokens.end());
  tokens_.resize(paddedT, 0);
  positions_.assign(in.positions.begin(), in.positions.end());
  positions_.resize(paddedT, 0);
  tokenSeq_.assign(in.tokenSeq.begin(), in.tokenSeq.end());
  tokenSeq_.resize(paddedT, -1);
  logitRows_.assign(in.logitRows.begin(), in.logitRows.end());
  logitRows_.resize(paddedR, in.logitRows.empty() ? 0 : in.logitRows.back());
  blockTables_.assign(in.blockTables.begin(), in.blockTables.end());
  blockTables_.resize(static_cast<std::size_t>(paddedSeqs) *
                          static_cast<std::size_t>(in.maxBlocksPerSeq),
                      0);

  batch_ = in;
  batch_.tokens = tokens_;
  batch_.positions = positions_;
  batch_.tokenSeq = tokenSeq_;
  batch_.logitRows = logitRows_;
  batch_.blockTables = blockTables_;
  batch_.numSeqs = paddedSeqs;
  if (!in.sampling.empty()) {
    sampling_.assign(in.sampling.begin(), in.sampling.end());
    sampling_.resize(paddedR, SamplingRow{}); // greedy
    batch_.sampling = sampling_;
  }
  batch_.penalties.offsets =
      padOffsets(in.penalties.offsets, paddedR, penaltyOffsets_);
  batch_.logitBias.offsets =
      padOffsets(in.logitBias.offsets, paddedR, biasOffsets_);
}

} // namespace sol::cuda

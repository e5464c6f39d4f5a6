//===- StepPadding.h - Steps padded to their CUDA-graph bucket --*- C++ -*-===//
//
// Decode steps replay CUDA graphs captured per step shape. Keyed by the exact
// shape, a server whose batch drifts between 1 and 64 sequences would
// capture a graph for nearly every size it meets; padded to a few buckets
// (1, 2, 4, 8, 16, 24, ..., 64, as vLLM does) it captures at most 11 per
// block-table width and sampling mode. Padding tokens (token_seq = -1) are
// skipped by every kernel that touches the KV cache and give zero
// attention; padding logits rows repeat a real token and are never returned.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/Executor.h"

#include <cstdint>
#include <vector>

namespace sol::cuda {

/// The graph bucket of a step dimension n (1..64): 1, 2, 4, 8, then the next
/// multiple of 8. Values above 64 are returned as they are.
int graphBucket(int n);

/// A step padded to graphBucket(T) tokens, graphBucket(R) logits rows and
/// graphBucket(numSeqs) sequences. `batch` views this object's vectors, so
/// it is valid until the next pad() and must not outlive the object; the
/// vectors keep their capacity between steps.
class PaddedStep {
public:
  /// Pads `in` (validated by the caller). Spans of `in` that need no padding
  /// (penalty and bias entries) are viewed, not copied.
  void pad(const StepBatch &in);
  const StepBatch &batch() const { return batch_; }

private:
  StepBatch batch_;
  std::vector<int32_t> tokens_, positions_, tokenSeq_, logitRows_, blockTables_,
      penaltyOffsets_, biasOffsets_;
  std::vector<SamplingRow> sampling_;
};

} // namespace sol::cuda

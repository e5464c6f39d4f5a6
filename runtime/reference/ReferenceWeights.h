//===- ReferenceWeights.h - The plan's weights in float32 -------*- C++ -*-===//
//
// The reference executor computes in float32, so it converts every weight an
// op reads (BF16, F16 or F32 in the plan) to float32 once, at construction,
// in the plan's layout (Linear weights stay [N, K] row-major). This costs
// 4 bytes per parameter: a tiny test model needs a few MB, a 1B-parameter
// model about 5 GB. Weights no op reads are never converted.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sol {
class PlanFile;
} // namespace sol

namespace sol::reference {

class ReferencePlan;

class ReferenceWeights {
public:
  /// Converts the used weights of `file` that tensor-parallel rank `rank`
  /// holds. Throws sol::Error naming the weight when its bytes do not match
  /// its dtype and shape.
  ReferenceWeights(const PlanFile &file, const ReferencePlan &plan,
                   int rank = 0);

  /// Weight `index` as float32, row-major in its plan shape.
  std::span<const float> get(int index) const {
    return values_[static_cast<size_t>(index)];
  }
  /// Total bytes held.
  uint64_t bytes() const { return bytes_; }

private:
  std::vector<std::vector<float>> values_;
  uint64_t bytes_ = 0;
};

} // namespace sol::reference

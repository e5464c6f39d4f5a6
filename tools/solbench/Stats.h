//===- Stats.h - solbench: means and percentiles ----------------*- C++ -*-===//
#pragma once

#include <cstddef>
#include <vector>

namespace sol::bench {

/// The p-th percentile (0 <= p <= 100) of `sorted` (ascending, non-empty),
/// interpolating linearly between the two nearest ranks as numpy.percentile
/// does by default, so figures match vLLM's benchmark scripts.
double percentile(const std::vector<double> &sorted, double p);

struct Summary {
  size_t count = 0; ///< 0: no values, the other fields are meaningless
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};

/// Mean, p50, p90, p99, min and max of `values` (in any order).
Summary summarize(std::vector<double> values);

} // namespace sol::bench

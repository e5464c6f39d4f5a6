//===- Stats.cpp - solbench: means and percentiles ------------------------===//
#include "tools/solbench/Stats.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sol::bench {

double percentile(const std::vector<double> &sorted, double p) {
  if (sorted.empty())
    fail("percentile of no values");
  if (!(p >= 0 && p <= 100))
    fail("percentile ", p, " is outside 0..100");
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty())
    return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) /
           static_cast<double>(values.size());
  s.p50 = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  s.min = values.front();
  s.max = values.back();
  return s;
}

} // namespace sol::bench

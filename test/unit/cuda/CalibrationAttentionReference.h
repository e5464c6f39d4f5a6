//===- CalibrationAttentionReference.h - Calibration attention in double --===//
//
// What both calibration attention kernels compute (TensorEvaluator's
// attendRowBody), in double: token t's query heads attend to keys
// first(t) .. t of its sequence (first(t) = seqStart[t], or the last
// `window` positions when window > 0), scores times `scale`, softcap *
// tanh(score / softcap) when softcap > 0, an exact softmax; query head h
// reads kv head h / (heads / kvHeads). q is [tokens, heads * dim], k and v
// [tokens, kvHeads * dim]; the result is [tokens, heads * dim].
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace sol::test {

struct CalibAttentionShape {
  int heads = 0, kvHeads = 0, dim = 0, window = 0;
  float scale = 0.0f, softcap = 0.0f;
};

inline std::vector<double>
referenceCalibAttention(const CalibAttentionShape &c,
                        const std::vector<int> &seqStart,
                        const std::vector<float> &q,
                        const std::vector<float> &k,
                        const std::vector<float> &v) {
  const int tokens = static_cast<int>(seqStart.size());
  const int qCols = c.heads * c.dim, kvCols = c.kvHeads * c.dim;
  std::vector<double> out(static_cast<size_t>(tokens) * qCols);
  for (int t = 0; t < tokens; ++t) {
    const int first =
        c.window > 0 ? std::max(seqStart[t], t - c.window + 1) : seqStart[t];
    for (int h = 0; h < c.heads; ++h) {
      const int g = h / (c.heads / c.kvHeads);
      std::vector<double> p;
      double best = -INFINITY;
      for (int j = first; j <= t; ++j) {
        double dot = 0.0;
        for (int d = 0; d < c.dim; ++d)
          dot += static_cast<double>(q[t * qCols + h * c.dim + d]) *
                 k[j * kvCols + g * c.dim + d];
        double s = dot * c.scale;
        if (c.softcap > 0)
          s = c.softcap * std::tanh(s / c.softcap);
        p.push_back(s);
        best = std::max(best, s);
      }
      double total = 0.0;
      for (double &x : p)
        total += (x = std::exp(x - best));
      for (int d = 0; d < c.dim; ++d) {
        double acc = 0.0;
        for (int j = first; j <= t; ++j)
          acc += p[j - first] * v[j * kvCols + g * c.dim + d];
        out[static_cast<size_t>(t) * qCols + h * c.dim + d] = acc / total;
      }
    }
  }
  return out;
}

} // namespace sol::test

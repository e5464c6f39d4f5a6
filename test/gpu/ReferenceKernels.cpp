//===- ReferenceKernels.cpp - CPU references for the GPU kernels ----------===//

#include "ReferenceKernels.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>

namespace sol::check {
namespace {

// Runs body(begin, end) over [0, n) on all hardware threads.
void parallelFor(std::size_t n,
                 const std::function<void(std::size_t, std::size_t)> &body) {
  const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t chunk = (n + threads - 1) / threads;
  std::vector<std::jthread> pool;
  for (std::size_t begin = 0; begin < n; begin += chunk)
    pool.emplace_back(body, begin, std::min(n, begin + chunk));
}

std::vector<float> widen(std::span<const Bf16> v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = bf16ToFloat(v[i]);
  return out;
}

} // namespace

std::vector<double> referenceLinearRows(std::span<const Bf16> x,
                                        std::span<const Bf16> w,
                                        std::span<const Bf16> bias,
                                        std::span<const int> rowIds, int n,
                                        int k) {
  const std::vector<float> xf = widen(x);
  std::vector<double> y(rowIds.size() * static_cast<std::size_t>(n));
  parallelFor(static_cast<std::size_t>(n), [&](std::size_t b, std::size_t e) {
    std::vector<float> wRow(k);
    for (std::size_t j = b; j < e; ++j) {
      for (int i = 0; i < k; ++i)
        wRow[i] = bf16ToFloat(w[j * k + i]);
      const double bj = bias.empty() ? 0.0 : bf16ToFloat(bias[j]);
      for (std::size_t r = 0; r < rowIds.size(); ++r) {
        const float *xr = xf.data() + static_cast<std::size_t>(rowIds[r]) * k;
        double acc = 0.0;
        for (int i = 0; i < k; ++i)
          acc += static_cast<double>(xr[i]) * wRow[i];
        y[r * n + j] = acc + bj;
      }
    }
  });
  return y;
}

std::vector<double> referenceLinear(std::span<const Bf16> x,
                                    std::span<const Bf16> w,
                                    std::span<const Bf16> bias, int rows, int n,
                                    int k) {
  std::vector<int> ids(rows);
  for (int r = 0; r < rows; ++r)
    ids[r] = r;
  return referenceLinearRows(x, w, bias, ids, n, k);
}

std::vector<double> referenceRmsNormRow(std::span<const float> h,
                                        std::span<const Bf16> w, float eps) {
  double sumSquares = 0.0;
  for (float v : h)
    sumSquares += static_cast<double>(v) * v;
  const double inv = 1.0 / std::sqrt(sumSquares / h.size() + eps);
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    const float normed = roundBf16(static_cast<float>(h[i] * inv));
    out[i] = static_cast<double>(bf16ToFloat(w[i])) * normed;
  }
  return out;
}

std::vector<Bf16> referenceNormRows(std::span<const Bf16> x,
                                    std::span<const Bf16> w, int rows, int k,
                                    float eps) {
  std::vector<Bf16> out(static_cast<std::size_t>(rows) * k);
  for (int t = 0; t < rows; ++t) {
    const std::vector<float> h =
        widen(x.subspan(static_cast<std::size_t>(t) * k, k));
    // w * bf16(normed) is a product of two bf16 values, exact in float.
    const std::vector<double> row = referenceRmsNormRow(h, w, eps);
    for (int i = 0; i < k; ++i)
      out[static_cast<std::size_t>(t) * k + i] =
          floatToBf16(static_cast<float>(row[i]));
  }
  return out;
}

std::vector<double> referenceResidualEpilogue(std::span<const Bf16> residual,
                                              std::span<const double> y) {
  std::vector<double> out(y.size());
  for (std::size_t i = 0; i < y.size(); ++i)
    out[i] = static_cast<double>(bf16ToFloat(residual[i])) +
             roundBf16(static_cast<float>(y[i]));
  return out;
}

std::vector<double> referenceSwigluEpilogue(std::span<const double> y, int rows,
                                            int n) {
  const int half = n / 2;
  std::vector<double> out(static_cast<std::size_t>(rows) * half);
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < half; ++i) {
      const std::size_t at = static_cast<std::size_t>(t) * n + 2 * i;
      const double g = roundBf16(static_cast<float>(y[at]));
      const double u = roundBf16(static_cast<float>(y[at + 1]));
      const float act = roundBf16(static_cast<float>(g / (1.0 + std::exp(-g))));
      out[static_cast<std::size_t>(t) * half + i] = act * u;
    }
  return out;
}

std::vector<double> referenceSwiglu(std::span<const Bf16> gateUp, int tokens,
                                    int intermediate) {
  std::vector<double> out(static_cast<std::size_t>(tokens) * intermediate);
  for (int t = 0; t < tokens; ++t) {
    const Bf16 *row =
        gateUp.data() + static_cast<std::size_t>(t) * 2 * intermediate;
    for (int i = 0; i < intermediate; ++i) {
      const double g = bf16ToFloat(row[i]);
      const double u = bf16ToFloat(row[intermediate + i]);
      const float act = roundBf16(static_cast<float>(g / (1.0 + std::exp(-g))));
      out[static_cast<std::size_t>(t) * intermediate + i] = act * u;
    }
  }
  return out;
}

int referenceArgmax(std::span<const float> row) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(row.size()); ++i) {
    const float v = row[i], b = row[best];
    if (std::isnan(b))
      break;
    if (std::isnan(v) || v > b)
      best = i;
  }
  return best;
}

std::vector<float> llamaInvFreq(int headDim, double theta) {
  std::vector<float> f(static_cast<std::size_t>(headDim / 2));
  for (int i = 0; i < headDim / 2; ++i)
    f[static_cast<std::size_t>(i)] =
        static_cast<float>(1.0 / std::pow(theta, 2.0 * i / headDim));
  return f;
}

std::vector<float> referenceRope(std::span<const float> head, int position,
                                 std::span<const float> invFreq,
                                 float attentionScaling) {
  const std::size_t half = head.size() / 2;
  std::vector<float> out(head.size());
  for (std::size_t i = 0; i < half; ++i) {
    // fp32 angle as in HF (inv_freq @ position in fp32), accurate cos/sin;
    // a pass-through pair is concatenated unrotated and unscaled.
    const float angle = static_cast<float>(position) * invFreq[i];
    const bool pass = invFreq[i] == 0.0f;
    const float c = pass ? 1.0f
                         : roundBf16(static_cast<float>(
                                         std::cos(static_cast<double>(angle))) *
                                     attentionScaling);
    const float s = pass ? 0.0f
                         : roundBf16(static_cast<float>(
                                         std::sin(static_cast<double>(angle))) *
                                     attentionScaling);
    const float x1 = head[i], x2 = head[i + half];
    out[i] = roundBf16(roundBf16(x1 * c) + roundBf16(-x2 * s));
    out[i + half] = roundBf16(roundBf16(x2 * c) + roundBf16(x1 * s));
  }
  return out;
}

std::span<const float> RopeTable::at(int position, int headDim) const {
  const std::size_t half = static_cast<std::size_t>(headDim / 2);
  return std::span<const float>(invFreq).subspan(
      position >= longFrom ? half : 0, half);
}

RopeTable llamaRopeTable(int headDim) {
  return {"llama", llamaInvFreq(headDim), 1.0f};
}

RopeTable partialRopeTable(int headDim, float scaling) {
  RopeTable t{sol::cat("partial scaling=", scaling),
              llamaInvFreq(headDim, 10000.0), scaling};
  const std::size_t half = t.invFreq.size();
  for (std::size_t i = half - half / 4; i < half; ++i)
    t.invFreq[i] = 0.0f;
  return t;
}

RopeTable longRopeTable(int headDim, int longFrom, float scaling) {
  RopeTable t = partialRopeTable(headDim, scaling);
  t.label = sol::cat("longrope from ", longFrom, " scaling=", scaling);
  const std::size_t half = t.invFreq.size();
  for (std::size_t i = 0; i < half; ++i)
    t.invFreq.push_back(t.invFreq[i] / (1.0f + 3.0f * static_cast<float>(i) /
                                                   static_cast<float>(half)));
  t.longFrom = longFrom;
  return t;
}

std::vector<float> referenceRope(std::span<const float> head, int position,
                                 const RopeTable &table) {
  return referenceRope(head, position,
                       table.at(position, static_cast<int>(head.size())),
                       table.attentionScaling);
}

std::vector<double> referenceAttention(const AttentionProblem &p) {
  const int hd = p.headDim;
  const int group = p.qHeads / p.kvHeads;
  const std::size_t rowElems =
      static_cast<std::size_t>(p.qHeads + 2 * p.kvHeads) * hd;
  std::vector<double> out(static_cast<std::size_t>(p.tokens) * p.qHeads * hd,
                          0.0);
  parallelFor(static_cast<std::size_t>(p.tokens), [&](std::size_t b,
                                                      std::size_t e) {
    std::vector<double> scores, acc(hd);
    for (std::size_t t = b; t < e; ++t) {
      const int seq = p.tokenSeq[t];
      if (seq < 0)
        continue;
      const int pos = p.positions[t];
      const int lo =
          p.slidingWindow > 0 ? std::max(0, pos - p.slidingWindow + 1) : 0;
      auto rowOffset = [&](int position, int g) {
        const int block =
            p.blockTables[static_cast<std::size_t>(seq) * p.maxBlocks +
                          position / p.blockSize];
        const std::size_t slot =
            (static_cast<std::size_t>(block) * p.blockSize +
             position % p.blockSize) *
                p.kvHeads +
            g;
        return slot * hd;
      };
      const bool f32 = !p.kCacheF32.empty();
      // Element d of the K (or V) row of `position`, as a float.
      auto cached = [&](bool isV, int position, int g, int d) -> float {
        const std::size_t at = rowOffset(position, g) + d;
        if (f32)
          return (isV ? p.vCacheF32 : p.kCacheF32)[at];
        return bf16ToFloat((isV ? p.vCache : p.kCache)[at]);
      };
      for (int h = 0; h < p.qHeads; ++h) {
        const int g = h / group;
        const Bf16 *q =
            p.qkv.data() + t * rowElems + static_cast<std::size_t>(h) * hd;
        scores.assign(pos - lo + 1, 0.0);
        double maxScore = -INFINITY;
        for (int j = lo; j <= pos; ++j) {
          double dot = 0.0;
          for (int d = 0; d < hd; ++d)
            dot +=
                static_cast<double>(bf16ToFloat(q[d])) * cached(false, j, g, d);
          scores[j - lo] = dot * p.scale;
          if (p.softcap > 0.0)
            scores[j - lo] = p.softcap * std::tanh(scores[j - lo] / p.softcap);
          maxScore = std::max(maxScore, scores[j - lo]);
        }
        const double sink =
            p.sinks.empty() ? -INFINITY : double(p.sinks[size_t(h)]);
        maxScore = std::max(maxScore, sink);
        double sum = p.sinks.empty() ? 0.0 : std::exp(sink - maxScore);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int j = lo; j <= pos; ++j) {
          const double w = std::exp(scores[j - lo] - maxScore);
          sum += w;
          for (int d = 0; d < hd; ++d)
            acc[d] += w * cached(true, j, g, d);
        }
        double *o =
            out.data() + (t * p.qHeads + h) * static_cast<std::size_t>(hd);
        for (int d = 0; d < hd; ++d)
          o[d] = acc[d] / sum;
      }
    }
  });
  return out;
}

} // namespace sol::check

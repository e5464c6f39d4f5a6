//===- ReferenceKernels.cpp - Float32 math of the row-wise plan ops -------===//

#include "runtime/reference/ReferenceKernels.h"

#include "runtime/support/Activations.h"

#include "runtime/reference/ParallelFor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

namespace sol::reference {

void embeddingRows(std::span<float> out, std::span<const int32_t> ids,
                   std::span<const float> table, int64_t width, float scale) {
  for (size_t t = 0; t < ids.size(); ++t) {
    float *row = out.data() + static_cast<int64_t>(t) * width;
    std::memcpy(row, table.data() + static_cast<int64_t>(ids[t]) * width,
                static_cast<size_t>(width) * sizeof(float));
    if (scale != 1.0f)
      for (int64_t j = 0; j < width; ++j)
        row[j] *= scale;
  }
}

namespace {

/// 1 / sqrt(mean(x^2) + eps), accumulated in double.
double inverseRms(const float *x, int64_t n, float eps) {
  double sumSquares = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sumSquares += static_cast<double>(x[i]) * x[i];
  return 1.0 / std::sqrt(sumSquares / static_cast<double>(n) + eps);
}

} // namespace

void rmsNormRows(std::span<float> out, std::span<const float> in,
                 std::span<float> residual, std::span<const float> weight,
                 int64_t rows, float eps) {
  const int64_t width = static_cast<int64_t>(weight.size());
  std::vector<float> r(static_cast<size_t>(width));
  for (int64_t t = 0; t < rows; ++t) {
    const float *x = in.data() + t * width;
    for (int64_t j = 0; j < width; ++j)
      r[static_cast<size_t>(j)] = x[j];
    if (!residual.empty()) {
      float *res = residual.data() + t * width;
      for (int64_t j = 0; j < width; ++j) {
        r[static_cast<size_t>(j)] += res[j];
        res[j] = r[static_cast<size_t>(j)];
      }
    }
    const double inv = inverseRms(r.data(), width, eps);
    float *y = out.data() + t * width;
    for (int64_t j = 0; j < width; ++j)
      y[j] = static_cast<float>(r[static_cast<size_t>(j)] * inv) * weight[j];
  }
}

void headRmsNormRows(std::span<float> buf, int64_t rows, int64_t width,
                     int64_t col, int64_t heads, int64_t headDim,
                     std::span<const float> weight, float eps) {
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      float *x = buf.data() + t * width + col + h * headDim;
      const double inv = inverseRms(x, headDim, eps);
      for (int64_t j = 0; j < headDim; ++j)
        x[j] = static_cast<float>(x[j] * inv) * weight[j];
    }
  }
}

namespace {

// Each output is a dot product of an input row and a weight row (both
// contiguous) with kLanes independent partial sums, a loop compilers turn
// into vector code without reassociating anything. Columns go in blocks of
// kColumnBlock weight rows, so the block stays in cache while every input
// row passes over it. (Measured on SSE2 builds: this beat tiling several
// input rows per weight load, whose accumulators spill.)
constexpr int kLanes = 16;
constexpr int64_t kColumnBlock = 16;

// Built for AVX2 too, picked at load time where the CPU has it: wider
// vectors over the same kLanes partial sums give the same bits, faster.
__attribute__((target_clones("avx2", "default"))) void
linearColumns(float *out, const float *in, const float *w, const float *bias,
              int64_t rows, int64_t n, int64_t k, int64_t nBegin,
              int64_t nEnd) {
  for (int64_t nb = nBegin; nb < nEnd; nb += kColumnBlock) {
    const int64_t ne = std::min(nb + kColumnBlock, nEnd);
    for (int64_t t = 0; t < rows; ++t) {
      const float *x = in + t * k;
      for (int64_t col = nb; col < ne; ++col) {
        const float *wr = w + col * k;
        float acc[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= k; i += kLanes)
          for (int j = 0; j < kLanes; ++j)
            acc[j] += x[i + j] * wr[i + j];
        float sum = 0.0f;
        for (int j = 0; j < kLanes; ++j)
          sum += acc[j];
        for (; i < k; ++i)
          sum += x[i] * wr[i];
        if (bias)
          sum += bias[col];
        out[t * n + col] = sum;
      }
    }
  }
}

} // namespace

void linearRows(std::span<float> out, std::span<const float> in,
                std::span<const float> w, std::span<const float> bias,
                int64_t rows, int64_t n, int64_t k, int numThreads) {
  if (rows <= 0)
    return;
  const int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
  const float *biasData = bias.empty() ? nullptr : bias.data();
  parallelFor(
      blocks, numThreads, rows * n * k, [&](int64_t begin, int64_t end) {
        linearColumns(out.data(), in.data(), w.data(), biasData, rows, n, k,
                      begin * kColumnBlock, std::min(end * kColumnBlock, n));
      });
}

void swigluRows(std::span<float> out, std::span<const float> in, int64_t rows,
                int64_t width, bool geluTanhGate) {
  for (int64_t t = 0; t < rows; ++t) {
    const float *gate = in.data() + t * 2 * width;
    const float *up = gate + width;
    float *y = out.data() + t * width;
    for (int64_t j = 0; j < width; ++j)
      y[j] = (geluTanhGate ? geluTanh(gate[j]) : silu(gate[j])) * up[j];
  }
}

float gatedValue(GateFunction fn, float gate, float up, float limit) {
  switch (fn) {
  case GateFunction::Silu:
    return silu(gate) * up;
  case GateFunction::GeluTanh:
    return geluTanh(gate) * up;
  case GateFunction::ClampedSilu: {
    const float g = std::min(gate, limit);
    const float u = std::clamp(up, -limit, limit);
    return (u + 1.0f) * (g / (1.0f + std::exp(-1.702f * g)));
  }
  }
  return 0.0f;
}

void moeRows(std::span<float> out, std::span<const float> in,
             const MoeWeights &w, int64_t rows, int64_t hidden, int64_t experts,
             int64_t topK, bool normalizeTopK, GateFunction fn, float limit) {
  const int64_t width = static_cast<int64_t>(w.gate.size()) / hidden / experts;
  const bool biased = !w.routerBias.empty();
  auto dot = [](const float *a, const float *b, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i)
      s += a[i] * b[i];
    return s;
  };
  auto bias = [biased](std::span<const float> b, int64_t i) {
    return biased ? b[static_cast<size_t>(i)] : 0.0f;
  };
  std::vector<float> p(static_cast<size_t>(experts));
  std::vector<int64_t> order(static_cast<size_t>(experts));
  std::vector<float> h(static_cast<size_t>(width));
  for (int64_t t = 0; t < rows; ++t) {
    const float *x = in.data() + t * hidden;
    float *y = out.data() + t * hidden;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t e = 0; e < experts; ++e) {
      p[size_t(e)] =
          dot(x, w.router.data() + e * hidden, hidden) + bias(w.routerBias, e);
      top = std::max(top, p[size_t(e)]);
    }
    float sum = 0.0f;
    for (float &v : p)
      sum += (v = std::exp(v - top));
    for (float &v : p)
      v /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + topK, order.end(),
                      [&](int64_t a, int64_t b) {
                        return p[size_t(a)] > p[size_t(b)] ||
                               (p[size_t(a)] == p[size_t(b)] && a < b);
                      });
    float chosen = 0.0f;
    for (int64_t k = 0; k < topK; ++k)
      chosen += p[size_t(order[size_t(k)])];
    std::fill(y, y + hidden, 0.0f);
    for (int64_t k = 0; k < topK; ++k) {
      const int64_t e = order[size_t(k)];
      const float weight = normalizeTopK ? p[size_t(e)] / chosen : p[size_t(e)];
      for (int64_t i = 0; i < width; ++i) {
        const int64_t row = e * width + i;
        const float g = dot(x, w.gate.data() + row * hidden, hidden) +
                        bias(w.gateBias, row);
        const float u =
            dot(x, w.up.data() + row * hidden, hidden) + bias(w.upBias, row);
        h[size_t(i)] = gatedValue(fn, g, u, limit);
      }
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t row = e * hidden + j;
        y[j] += weight * (dot(h.data(), w.down.data() + row * width, width) +
                          bias(w.downBias, row));
      }
    }
  }
}

void sigmoidGateRows(std::span<float> out, std::span<const float> value,
                     std::span<const float> in, std::span<const float> weight,
                     int64_t rows, int64_t width, int64_t hidden) {
  for (int64_t t = 0; t < rows; ++t) {
    float z = 0.0f;
    for (int64_t i = 0; i < hidden; ++i)
      z += in[static_cast<size_t>(t * hidden + i)] *
           weight[static_cast<size_t>(i)];
    const float g = 1.0f / (1.0f + std::exp(-z));
    for (int64_t j = 0; j < width; ++j)
      out[static_cast<size_t>(t * width + j)] =
          g * value[static_cast<size_t>(t * width + j)];
  }
}

void softcapValues(std::span<float> values, float cap) {
  for (float &v : values)
    v = cap * std::tanh(v / cap);
}

void addValues(std::span<float> out, std::span<const float> a,
               std::span<const float> b, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[static_cast<size_t>(i)] =
        a[static_cast<size_t>(i)] + b[static_cast<size_t>(i)];
}

void gatherRows(std::span<float> out, std::span<const float> in,
                std::span<const int32_t> rows, int64_t width) {
  for (size_t r = 0; r < rows.size(); ++r)
    std::memcpy(out.data() + static_cast<int64_t>(r) * width,
                in.data() + static_cast<int64_t>(rows[r]) * width,
                static_cast<size_t>(width) * sizeof(float));
}

void rotateHalf(std::span<float> head, std::span<const float> invFreq,
                float scaling, int32_t position) {
  const size_t half = invFreq.size();
  for (size_t i = 0; i < half; ++i) {
    // transformers: freqs = inv_freq (f32) x position (f32), then cos/sin in
    // f32, times attention_scaling. Rounding the angle to float matters at
    // large positions, so it is kept; cos/sin of that angle are exact.
    const float angle = static_cast<float>(position) * invFreq[i];
    // A pair of frequency 0 passes through (partial rotary): no scaling.
    const float sc = invFreq[i] == 0.0f ? 1.0f : scaling;
    const float c =
        static_cast<float>(std::cos(static_cast<double>(angle))) * sc;
    const float s =
        static_cast<float>(std::sin(static_cast<double>(angle))) * sc;
    const float x1 = head[i];
    const float x2 = head[i + half];
    head[i] = x1 * c - x2 * s;
    head[i + half] = x2 * c + x1 * s;
  }
}

int32_t argmaxIndex(std::span<const float> row) {
  int32_t best = 0;
  float bestValue = -INFINITY;
  bool found = false;
  for (size_t i = 0; i < row.size(); ++i) {
    const float v = row[i];
    if (std::isnan(v))
      continue;
    if (!found || v > bestValue) {
      best = static_cast<int32_t>(i);
      bestValue = v;
      found = true;
    }
  }
  return best;
}

} // namespace sol::reference

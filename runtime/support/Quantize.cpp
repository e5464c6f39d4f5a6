//===- Quantize.cpp - Weight quantization formats and their math ----------===//

#include "runtime/support/Quantize.h"

#include "runtime/support/Error.h"
#include "runtime/support/Fp8.h"
#include "runtime/support/ParallelChunks.h"

#include <algorithm>
#include <array>
#include <exception>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>

namespace sol::quant {
namespace {

void checkCount(std::string_view what, size_t have, int64_t rows,
                int64_t cols) {
  if (static_cast<int64_t>(have) != rows * cols)
    fail(what, " has ", have, " values but its shape [", rows, ", ", cols,
         "] needs ", rows * cols);
}

void checkFiniteRow(const float *row, int64_t cols, int64_t n,
                    std::string_view what) {
  for (int64_t k = 0; k < cols; ++k)
    if (!std::isfinite(row[k]))
      fail(what, " element [", n, ", ", k, "] is ", row[k],
           "; quantization needs finite values (check the checkpoint for "
           "NaN or infinity)");
}

/// Dot product in 8 independent lanes so that it vectorizes without
/// reassociating a single sum.
float dot(const float *a, const float *b, int64_t n) {
  std::array<float, 8> lanes{};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l)
      lanes[l] += a[k + l] * b[k + l];
  float sum = 0.0f;
  for (float lane : lanes)
    sum += lane;
  for (; k < n; ++k)
    sum += a[k] * b[k];
  return sum;
}

} // namespace

std::string_view schemeName(Scheme scheme) {
  switch (scheme) {
  case Scheme::None:
    return "none";
  case Scheme::Int8:
    return "int8";
  case Scheme::Fp8:
    return "fp8";
  case Scheme::Int4:
    return "int4";
  }
  return "unknown";
}

std::optional<Scheme> parseScheme(std::string_view name) {
  for (Scheme scheme : {Scheme::None, Scheme::Int8, Scheme::Fp8, Scheme::Int4})
    if (schemeName(scheme) == name)
      return scheme;
  return std::nullopt;
}

void checkShape(Scheme scheme, int64_t rows, int64_t cols, int64_t groupSize,
                std::string_view what) {
  if (scheme != Scheme::Int8 && scheme != Scheme::Fp8 && scheme != Scheme::Int4)
    fail(what, ": scheme '", schemeName(scheme),
         "' has no quantized layout (expected int8, fp8 or int4)");
  if (rows <= 0 || cols <= 0 ||
      rows > std::numeric_limits<int64_t>::max() / cols)
    fail(what, ": shape [", rows, ", ", cols,
         "] is not a valid [N, K] weight shape");
  if (scheme != Scheme::Int4) {
    if (groupSize != 0)
      fail(what, ": ", schemeName(scheme),
           " is quantized per output row, so its group size must be 0, not ",
           groupSize);
    return;
  }
  if (cols % 2 != 0)
    fail(what,
         ": int4 packs two values per byte along K, so K must be "
         "even, but it is ",
         cols);
  if (groupSize <= 0 || cols % groupSize != 0)
    fail(what, ": int4 group size ", groupSize,
         " must be positive and divide K (", cols,
         "); use a divisor such as 128, or K itself for one group per row");
}

int64_t codeBytes(Scheme scheme, int64_t rows, int64_t cols) {
  return scheme == Scheme::Int4 ? rows * (cols / 2) : rows * cols;
}

int64_t scaleCount(Scheme scheme, int64_t rows, int64_t cols,
                   int64_t groupSize) {
  return scheme == Scheme::Int4 ? rows * (cols / groupSize) : rows;
}

int64_t zeroCount(Scheme scheme, int64_t rows, int64_t cols,
                  int64_t groupSize) {
  return scheme == Scheme::Int4 ? rows * (cols / groupSize) : 0;
}

Int4Group int4GroupParams(float minv, float maxv, float clipRatio) {
  maxv *= clipRatio;
  minv *= clipRatio;
  const float scale =
      std::fmax(maxv - minv, kInt4MinRange) / static_cast<float>(kInt4Max);
  const float zero = std::nearbyint(-minv / scale);
  return {scale, static_cast<uint8_t>(std::fmin(std::fmax(zero, 0.0f),
                                                static_cast<float>(kInt4Max)))};
}

float fp8RowScale(std::span<const float> x) {
  float amax = 0.0f;
  for (float v : x)
    amax = std::fmax(amax, std::fabs(v));
  const float scale = amax / kE4M3Max;
  return scale == 0.0f ? 1.0f : scale;
}

float quantizeActivationRowFp8(std::span<const float> x, std::span<uint8_t> q) {
  if (q.size() != x.size())
    fail("fp8 activation row has ", x.size(), " values but its code buffer ",
         q.size());
  const float scale = fp8RowScale(x);
  for (size_t i = 0; i < x.size(); ++i)
    q[i] = floatToE4M3(x[i] / scale);
  return scale;
}

float roundTripRowFp8(std::span<float> row) {
  const float scale = fp8RowScale(row);
  for (float &v : row)
    v = e4m3ToFloat(floatToE4M3(v / scale)) * scale;
  return scale;
}

QuantizedWeight quantizeInt8(std::span<const float> w, int64_t rows,
                             int64_t cols) {
  checkShape(Scheme::Int8, rows, cols, 0, "int8 weight");
  checkCount("int8 weight", w.size(), rows, cols);
  QuantizedWeight q{Scheme::Int8, rows, cols, 0, {}, {}, {}};
  q.codes.resize(codeBytes(Scheme::Int8, rows, cols));
  q.scales.resize(rows);
  parallelChunks(rows, rows * cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float *row = w.data() + n * cols;
      checkFiniteRow(row, cols, n, "int8 weight");
      float amax = 0.0f;
      for (int64_t k = 0; k < cols; ++k)
        amax = std::fmax(amax, std::fabs(row[k]));
      float scale = amax / static_cast<float>(kInt8Max);
      if (scale == 0.0f)
        scale = 1.0f;
      q.scales[n] = scale;
      uint8_t *codes = q.codes.data() + n * cols;
      constexpr float kMax = static_cast<float>(kInt8Max);
      for (int64_t k = 0; k < cols; ++k) {
        const float v = std::nearbyint(row[k] / scale);
        codes[k] = static_cast<uint8_t>(
            static_cast<int8_t>(std::fmin(std::fmax(v, -kMax), kMax)));
      }
    }
  });
  return q;
}

QuantizedWeight quantizeFp8(std::span<const float> w, int64_t rows,
                            int64_t cols) {
  checkShape(Scheme::Fp8, rows, cols, 0, "fp8 weight");
  checkCount("fp8 weight", w.size(), rows, cols);
  QuantizedWeight q{Scheme::Fp8, rows, cols, 0, {}, {}, {}};
  q.codes.resize(codeBytes(Scheme::Fp8, rows, cols));
  q.scales.resize(rows);
  parallelChunks(rows, rows * cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float *row = w.data() + n * cols;
      checkFiniteRow(row, cols, n, "fp8 weight");
      q.scales[n] = quantizeActivationRowFp8(
          {row, static_cast<size_t>(cols)},
          {q.codes.data() + n * cols, static_cast<size_t>(cols)});
    }
  });
  return q;
}

QuantizedWeight quantizeInt4(std::span<const float> w, int64_t rows,
                             int64_t cols, int64_t groupSize,
                             std::span<const float> clipRatios) {
  checkShape(Scheme::Int4, rows, cols, groupSize, "int4 weight");
  checkCount("int4 weight", w.size(), rows, cols);
  const int64_t groups = cols / groupSize;
  if (!clipRatios.empty())
    checkCount("int4 clip ratio array", clipRatios.size(), rows, groups);
  QuantizedWeight q{Scheme::Int4, rows, cols, groupSize, {}, {}, {}};
  q.codes.assign(codeBytes(Scheme::Int4, rows, cols), 0);
  q.scales.resize(rows * groups);
  q.zeros.resize(rows * groups);
  parallelChunks(rows, rows * cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float *row = w.data() + n * cols;
      checkFiniteRow(row, cols, n, "int4 weight");
      for (int64_t g = 0; g < groups; ++g) {
        const float *group = row + g * groupSize;
        const auto [minIt, maxIt] =
            std::minmax_element(group, group + groupSize);
        float ratio = 1.0f;
        if (!clipRatios.empty()) {
          ratio = clipRatios[n * groups + g];
          if (!(ratio > 0.0f && ratio <= 1.0f))
            fail("int4 clip ratio ", ratio, " of row ", n, ", group ", g,
                 " is outside (0, 1]");
        }
        const Int4Group params = int4GroupParams(*minIt, *maxIt, ratio);
        q.scales[n * groups + g] = params.scale;
        q.zeros[n * groups + g] = params.zero;
        for (int64_t i = 0; i < groupSize; ++i)
          setInt4CodeAt(q.codes, cols, n, g * groupSize + i,
                        int4Quantize(group[i], params));
      }
    }
  });
  return q;
}

void dequantize(const QuantizedWeight &q, std::span<float> out) {
  dequantizeInto(q.scheme, q.rows, q.cols, q.groupSize,
                 std::as_bytes(std::span<const uint8_t>(q.codes)), q.scales,
                 q.zeros, out);
}

void dequantizeInto(Scheme scheme, int64_t rows, int64_t cols,
                    int64_t groupSize, std::span<const std::byte> codeSpan,
                    std::span<const float> scales,
                    std::span<const uint8_t> zeros, std::span<float> out) {
  checkShape(scheme, rows, cols, groupSize, "quantized weight");
  const std::string_view name = schemeName(scheme);
  auto checkSize = [&](std::string_view what, size_t have, int64_t want) {
    if (static_cast<int64_t>(have) != want)
      fail(name, " weight [", rows, ", ", cols, "]: ", what, " has ", have,
           " elements, expected ", want);
  };
  checkSize("the code array", codeSpan.size(), codeBytes(scheme, rows, cols));
  checkSize("the scale array", scales.size(),
            scaleCount(scheme, rows, cols, groupSize));
  checkSize("the zero-point array", zeros.size(),
            zeroCount(scheme, rows, cols, groupSize));
  checkSize("the output", out.size(), rows * cols);
  for (size_t i = 0; i < zeros.size(); ++i)
    if (zeros[i] > kInt4Max)
      fail("int4 zero point ", int{zeros[i]}, " (entry ", i,
           ") is outside 0..15");

  const std::span<const uint8_t> codes(
      reinterpret_cast<const uint8_t *>(codeSpan.data()), codeSpan.size());
  parallelChunks(rows, rows * cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      float *row = out.data() + n * cols;
      if (scheme == Scheme::Int8) {
        for (int64_t k = 0; k < cols; ++k)
          row[k] = static_cast<int8_t>(codes[n * cols + k]) * scales[n];
      } else if (scheme == Scheme::Fp8) {
        for (int64_t k = 0; k < cols; ++k)
          row[k] = e4m3ToFloat(codes[n * cols + k]) * scales[n];
      } else {
        const int64_t groups = cols / groupSize;
        for (int64_t k = 0; k < cols; ++k) {
          const int64_t g = n * groups + k / groupSize;
          row[k] = int4Dequantize(int4CodeAt(codes, cols, n, k),
                                  {scales[g], zeros[g]});
        }
      }
    }
  });
}

std::vector<float> searchInt4Clip(std::span<const float> w, int64_t rows,
                                  int64_t cols, int64_t groupSize,
                                  std::span<const float> x, int64_t xRows,
                                  int gridPoints, float maxShrink) {
  checkShape(Scheme::Int4, rows, cols, groupSize, "int4 clip search weight");
  checkCount("int4 clip search weight", w.size(), rows, cols);
  if (x.empty() != (xRows == 0) || xRows < 0)
    fail("int4 clip search: ", x.size(), " calibration values for ", xRows,
         " rows; pass both or neither");
  if (xRows > 0) {
    checkCount("int4 clip search calibration input", x.size(), xRows, cols);
    for (int64_t t = 0; t < xRows; ++t)
      checkFiniteRow(x.data() + t * cols, cols, t,
                     "int4 clip search calibration input");
  }
  if (gridPoints < 1 || !(maxShrink >= 0.0f && maxShrink < 1.0f))
    fail("int4 clip search: grid of ", gridPoints, " points and max shrink ",
         maxShrink, " are invalid (need at least 1 point, shrink in [0, 1))");
  const int candidates =
      std::max(1, static_cast<int>(static_cast<float>(gridPoints) * maxShrink));
  const int64_t groups = cols / groupSize;

  // With more calibration rows than group members, the error is cheaper as
  // d^T G d with each group's Gram matrix G = X_g^T X_g (shared by all rows
  // of W) than as xRows dot products.
  const bool useGram = xRows > groupSize;
  std::vector<float> gram;
  if (useGram) {
    gram.assign(groups * groupSize * groupSize, 0.0f);
    parallelChunks(groups, xRows * groupSize * cols,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t g = begin; g < end; ++g) {
                       float *G = gram.data() + g * groupSize * groupSize;
                       for (int64_t t = 0; t < xRows; ++t) {
                         const float *xg = x.data() + t * cols + g * groupSize;
                         for (int64_t i = 0; i < groupSize; ++i) {
                           const float xi = xg[i];
                           float *Gi = G + i * groupSize;
                           for (int64_t j = 0; j < groupSize; ++j)
                             Gi[j] += xi * xg[j];
                         }
                       }
                     }
                   });
  }

  std::vector<float> ratios(rows * groups, 1.0f);
  const int64_t perCandidate =
      xRows == 0 ? groupSize : groupSize * std::min(xRows, groupSize);
  parallelChunks(
      rows, rows * groups * candidates * perCandidate,
      [&](int64_t begin, int64_t end) {
        std::vector<float> diff(groupSize);
        for (int64_t n = begin; n < end; ++n) {
          const float *row = w.data() + n * cols;
          checkFiniteRow(row, cols, n, "int4 clip search weight");
          for (int64_t g = 0; g < groups; ++g) {
            const float *wg = row + g * groupSize;
            const auto [minIt, maxIt] = std::minmax_element(wg, wg + groupSize);
            double bestError = std::numeric_limits<double>::infinity();
            float bestRatio = 1.0f;
            for (int i = 0; i < candidates; ++i) {
              const float ratio =
                  1.0f - static_cast<float>(i) / static_cast<float>(gridPoints);
              const Int4Group params = int4GroupParams(*minIt, *maxIt, ratio);
              for (int64_t k = 0; k < groupSize; ++k)
                diff[k] =
                    wg[k] - int4Dequantize(int4Quantize(wg[k], params), params);
              double error = 0.0;
              if (xRows == 0) {
                for (int64_t k = 0; k < groupSize; ++k)
                  error += static_cast<double>(diff[k]) * diff[k];
              } else if (useGram) {
                const float *G = gram.data() + g * groupSize * groupSize;
                for (int64_t k = 0; k < groupSize; ++k)
                  error += static_cast<double>(diff[k]) *
                           dot(G + k * groupSize, diff.data(), groupSize);
              } else {
                for (int64_t t = 0; t < xRows; ++t) {
                  const double out =
                      dot(diff.data(), x.data() + t * cols + g * groupSize,
                          groupSize);
                  error += out * out;
                }
              }
              if (error < bestError) {
                bestError = error;
                bestRatio = ratio;
              }
            }
            ratios[n * groups + g] = bestRatio;
          }
        }
      });
  return ratios;
}

} // namespace sol::quant

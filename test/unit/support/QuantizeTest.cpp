//===- QuantizeTest.cpp - Weight quantization formats and checkpoints -----===//
//
// The int8, fp8 and int4 formats of runtime/support/Quantize.h against an
// independent float64 implementation of their definitions (bit for bit),
// their error bounds, the int4 nibble layout, AutoAWQ's and GPTQ's packings
// rebuilt here the way those projects pack, the int4 clipping search, the
// fp8 activation rows, and the errors bad shapes and sizes raise.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/Quantize.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"
#include "runtime/support/Fp8.h"
#include "runtime/support/QuantizedCheckpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace sol;
using namespace sol::quant;

namespace {

// ---------------------------------------------------------------------------
// Helpers: test matrices and the float64 reference of the formats.
// ---------------------------------------------------------------------------

/// Gaussian [rows, cols] with the rows the formats find hard: row 0 all
/// zero, row 1 one large outlier, row 2's first group positive only, row 3's
/// first group negative only (when there are that many rows).
std::vector<float> testMatrix(int64_t rows, int64_t cols, int64_t group,
                              uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> w(rows * cols);
  for (float &v : w)
    v = normal(rng);
  if (rows > 0)
    std::fill(w.begin(), w.begin() + cols, 0.0f);
  if (rows > 1)
    w[cols + cols / 3] = 0.9f;
  if (rows > 2)
    for (int64_t k = 0; k < group; ++k)
      w[2 * cols + k] = std::fabs(w[2 * cols + k]) + 0.01f;
  if (rows > 3)
    for (int64_t k = 0; k < group; ++k)
      w[3 * cols + k] = -std::fabs(w[3 * cols + k]) - 0.01f;
  return w;
}

/// a / b rounded to float32: the spec divides in float32, and a float64
/// quotient of two floats rounded to float is that division exactly.
float div32(double a, double b) { return static_cast<float>(a / b); }

struct RefPerRow {
  std::vector<int> codes; // int8 values or E4M3 bits
  std::vector<float> scales;
};

RefPerRow refInt8(const std::vector<float> &w, int64_t rows, int64_t cols) {
  RefPerRow r;
  for (int64_t n = 0; n < rows; ++n) {
    double amax = 0.0;
    for (int64_t k = 0; k < cols; ++k)
      amax = std::max(amax, std::fabs(static_cast<double>(w[n * cols + k])));
    float scale = div32(amax, 127.0);
    if (scale == 0.0f)
      scale = 1.0f;
    r.scales.push_back(scale);
    for (int64_t k = 0; k < cols; ++k) {
      double q =
          std::nearbyint(static_cast<double>(div32(w[n * cols + k], scale)));
      r.codes.push_back(static_cast<int>(std::clamp(q, -127.0, 127.0)));
    }
  }
  return r;
}

RefPerRow refFp8(const std::vector<float> &w, int64_t rows, int64_t cols) {
  RefPerRow r;
  for (int64_t n = 0; n < rows; ++n) {
    double amax = 0.0;
    for (int64_t k = 0; k < cols; ++k)
      amax = std::max(amax, std::fabs(static_cast<double>(w[n * cols + k])));
    float scale = div32(amax, 448.0);
    if (scale == 0.0f)
      scale = 1.0f;
    r.scales.push_back(scale);
    for (int64_t k = 0; k < cols; ++k)
      r.codes.push_back(floatToE4M3(div32(w[n * cols + k], scale)));
  }
  return r;
}

struct RefGroup {
  float scale;
  int zero;
};

RefGroup refInt4Group(const float *g, int64_t size, double ratio) {
  double maxv = -std::numeric_limits<double>::infinity();
  double minv = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < size; ++i) {
    maxv = std::max(maxv, static_cast<double>(g[i]));
    minv = std::min(minv, static_cast<double>(g[i]));
  }
  // Each float32 operation of the spec, done in float64 and rounded once.
  const float maxc = static_cast<float>(maxv * static_cast<float>(ratio));
  const float minc = static_cast<float>(minv * static_cast<float>(ratio));
  float range = static_cast<float>(static_cast<double>(maxc) - minc);
  if (range < 1e-5f)
    range = 1e-5f;
  const float scale = div32(range, 15.0);
  const double zero = std::nearbyint(static_cast<double>(div32(-minc, scale)));
  return {scale, static_cast<int>(std::clamp(zero, 0.0, 15.0))};
}

int refInt4Code(float w, RefGroup g) {
  const double q =
      std::nearbyint(static_cast<double>(div32(w, g.scale))) + g.zero;
  return static_cast<int>(std::clamp(q, 0.0, 15.0));
}

struct RefInt4 {
  std::vector<int> codes; // [rows, cols], unpacked
  std::vector<float> scales;
  std::vector<int> zeros;
};

RefInt4 refInt4(const std::vector<float> &w, int64_t rows, int64_t cols,
                int64_t group, const std::vector<float> &ratios = {}) {
  RefInt4 r;
  r.codes.resize(rows * cols);
  const int64_t groups = cols / group;
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const float *wg = w.data() + n * cols + g * group;
      const RefGroup p = refInt4Group(
          wg, group, ratios.empty() ? 1.0 : ratios[n * groups + g]);
      r.scales.push_back(p.scale);
      r.zeros.push_back(p.zero);
      for (int64_t i = 0; i < group; ++i)
        r.codes[n * cols + g * group + i] = refInt4Code(wg[i], p);
    }
  return r;
}

/// Our packed layout read independently of int4CodeAt.
int packedNibble(const std::vector<uint8_t> &codes, int64_t cols, int64_t n,
                 int64_t k) {
  const uint8_t byte = codes[n * (cols / 2) + k / 2];
  return k % 2 == 0 ? byte & 0xF : byte >> 4;
}

std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a sol::Error";
  return "";
}

#define EXPECT_ERROR_HAS(body, text)                                           \
  do {                                                                         \
    const std::string message_ = errorOf([&] { body; });                       \
    EXPECT_NE(message_.find(text), std::string::npos)                          \
        << "message: '" << message_ << "'\nexpected to contain: '" << (text)   \
        << "'";                                                                \
  } while (0)

struct Shape {
  int64_t rows, cols, group;
};

const Shape kShapes[] = {{6, 128, 32},    {5, 256, 64}, {7, 384, 128},
                         {4, 96, 96},     {1, 2, 2},    {9, 1024, 128},
                         {300, 2048, 128}}; // the last one runs threaded

// ---------------------------------------------------------------------------
// Fp8.h and scheme names.
// ---------------------------------------------------------------------------

TEST(Fp8, ConversionLivesInSupport) {
  EXPECT_EQ(kE4M3Max, 448.0f);
  EXPECT_EQ(floatToE4M3(1.0f), 0x38);
  EXPECT_EQ(floatToE4M3(1000.0f), 0x7E);  // saturates
  EXPECT_EQ(floatToE4M3(-1000.0f), 0xFE); // saturates
  EXPECT_EQ(floatToE4M3(NAN), 0x7F);
  EXPECT_EQ(floatToE4M3(1.0625f), 0x38); // tie to even mantissa 0
  EXPECT_EQ(floatToE4M3(1.1875f), 0x3A); // tie to even mantissa 2
  EXPECT_EQ(e4m3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3ToFloat(0x7E), 448.0f);
}

TEST(Quantize, SchemeNamesRoundTrip) {
  for (Scheme s : {Scheme::None, Scheme::Int8, Scheme::Fp8, Scheme::Int4})
    EXPECT_EQ(parseScheme(schemeName(s)), s);
  EXPECT_EQ(schemeName(Scheme::Int4), "int4");
  EXPECT_FALSE(parseScheme("int3").has_value());
}

// ---------------------------------------------------------------------------
// int8 and fp8 weights.
// ---------------------------------------------------------------------------

TEST(Quantize, Int8MatchesReferenceAndBound) {
  uint32_t seed = 1;
  for (const Shape &s : kShapes) {
    SCOPED_TRACE(testing::Message() << s.rows << "x" << s.cols);
    const std::vector<float> w = testMatrix(s.rows, s.cols, s.group, seed++);
    const QuantizedWeight q = quantizeInt8(w, s.rows, s.cols);
    const RefPerRow ref = refInt8(w, s.rows, s.cols);
    ASSERT_EQ(q.scheme, Scheme::Int8);
    ASSERT_EQ(q.codes.size(), w.size());
    ASSERT_EQ(q.scales, ref.scales);
    EXPECT_TRUE(q.zeros.empty());
    std::vector<float> deq(w.size());
    dequantize(q, deq);
    for (size_t i = 0; i < w.size(); ++i) {
      const int code = static_cast<int8_t>(q.codes[i]);
      ASSERT_EQ(code, ref.codes[i]) << "element " << i;
      const float scale = q.scales[i / s.cols];
      ASSERT_EQ(deq[i], code * scale);
      ASSERT_LE(std::fabs(w[i] - deq[i]), scale * (0.5f + 1e-5f));
    }
    if (s.rows > 1) {
      EXPECT_EQ(q.scales[0], 1.0f); // the zero row
      EXPECT_EQ(static_cast<int8_t>(q.codes[s.cols + s.cols / 3]), 127);
    }
  }
}

TEST(Quantize, RoundingTiesGoToEven) {
  // Scale 1 in both formats, so the quotients are the values themselves.
  const std::vector<float> w8 = {127.0f, 0.5f, 1.5f, 2.5f, -2.5f, -3.5f};
  const QuantizedWeight q8 = quantizeInt8(w8, 1, 6);
  EXPECT_EQ(q8.scales[0], 1.0f);
  EXPECT_EQ(q8.codes, (std::vector<uint8_t>{127, 0, 2, 2, 0xFE, 0xFC}));
  const std::vector<float> w4 = {0.0f, 15.0f, 2.5f, 3.5f};
  const QuantizedWeight q4 = quantizeInt4(w4, 1, 4, 4);
  EXPECT_EQ(q4.scales[0], 1.0f);
  EXPECT_EQ(q4.codes, (std::vector<uint8_t>{0xF0, 0x42}));
}

// int4Quantize rounds as nearbyint(w / scale) + zero, clamped to 0..15:
// ties to even, values far outside the range, every zero point.
TEST(Quantize, Int4QuantizeIsNearbyintClamped) {
  auto reference = [](float w, quant::Int4Group g) {
    const float q = std::nearbyint(w / g.scale) + g.zero;
    return static_cast<uint8_t>(std::fmin(std::fmax(q, 0.0f), 15.0f));
  };
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-40.0f, 40.0f);
  for (uint8_t zero = 0; zero <= 15; ++zero)
    for (float scale : {1.0f, 0.5f, 0.0625f, 3.0f, 1e-3f}) {
      const quant::Int4Group g{scale, zero};
      std::vector<float> ws = {0.0f, -0.0f, 1e30f, -1e30f};
      for (int i = -80; i <= 80; ++i)
        ws.push_back(0.5f * static_cast<float>(i) * scale); // ties
      for (int i = 0; i < 2000; ++i)
        ws.push_back(value(rng) * scale);
      for (float w : ws)
        ASSERT_EQ(quant::int4Quantize(w, g), reference(w, g))
            << "w " << w << ", scale " << scale << ", zero " << int{zero};
    }
}

TEST(Quantize, Fp8MatchesReferenceAndBound) {
  uint32_t seed = 100;
  for (const Shape &s : kShapes) {
    SCOPED_TRACE(testing::Message() << s.rows << "x" << s.cols);
    const std::vector<float> w = testMatrix(s.rows, s.cols, s.group, seed++);
    const QuantizedWeight q = quantizeFp8(w, s.rows, s.cols);
    const RefPerRow ref = refFp8(w, s.rows, s.cols);
    ASSERT_EQ(q.scales, ref.scales);
    std::vector<float> deq(w.size());
    dequantize(q, deq);
    for (size_t i = 0; i < w.size(); ++i) {
      ASSERT_EQ(q.codes[i], ref.codes[i]) << "element " << i;
      const float scale = q.scales[i / s.cols];
      ASSERT_EQ(deq[i], e4m3ToFloat(q.codes[i]) * scale);
      // Half a step of 3 mantissa bits, or of the subnormal spacing 2^-9.
      const float bound =
          std::max(std::ldexp(std::fabs(w[i]), -4), std::ldexp(scale, -10));
      ASSERT_LE(std::fabs(w[i] - deq[i]), bound * (1.0f + 1e-5f));
    }
  }
}

// ---------------------------------------------------------------------------
// int4 weights.
// ---------------------------------------------------------------------------

void expectInt4MatchesReference(const std::vector<float> &w, const Shape &s,
                                const std::vector<float> &ratios) {
  const QuantizedWeight q = quantizeInt4(w, s.rows, s.cols, s.group, ratios);
  const RefInt4 ref = refInt4(w, s.rows, s.cols, s.group, ratios);
  ASSERT_EQ(q.scheme, Scheme::Int4);
  ASSERT_EQ(q.groupSize, s.group);
  ASSERT_EQ(q.codes.size(), static_cast<size_t>(s.rows * s.cols / 2));
  ASSERT_EQ(q.scales, ref.scales);
  ASSERT_EQ(std::vector<int>(q.zeros.begin(), q.zeros.end()), ref.zeros);
  std::vector<float> deq(w.size());
  dequantize(q, deq);
  const int64_t groups = s.cols / s.group;
  for (int64_t n = 0; n < s.rows; ++n)
    for (int64_t k = 0; k < s.cols; ++k) {
      const int code = packedNibble(q.codes, s.cols, n, k);
      ASSERT_EQ(code, ref.codes[n * s.cols + k]) << n << ", " << k;
      ASSERT_EQ(int4CodeAt(q.codes, s.cols, n, k), code);
      const int64_t g = n * groups + k / s.group;
      ASSERT_EQ(deq[n * s.cols + k], (code - ref.zeros[g]) * ref.scales[g]);
    }
}

TEST(Quantize, Int4MatchesReference) {
  uint32_t seed = 200;
  for (const Shape &s : kShapes) {
    SCOPED_TRACE(testing::Message()
                 << s.rows << "x" << s.cols << " g" << s.group);
    expectInt4MatchesReference(testMatrix(s.rows, s.cols, s.group, seed++), s,
                               {});
  }
}

TEST(Quantize, Int4WithClipRatiosMatchesReference) {
  uint32_t seed = 300;
  const float choices[] = {1.0f, 0.95f, 0.8f, 0.55f};
  for (const Shape &s : kShapes) {
    SCOPED_TRACE(testing::Message()
                 << s.rows << "x" << s.cols << " g" << s.group);
    std::vector<float> ratios(s.rows * (s.cols / s.group));
    for (size_t i = 0; i < ratios.size(); ++i)
      ratios[i] = choices[(i * 7 + seed) % 4];
    expectInt4MatchesReference(testMatrix(s.rows, s.cols, s.group, seed++), s,
                               ratios);
  }
}

TEST(Quantize, Int4ErrorWithinHalfAStep) {
  uint32_t seed = 400;
  for (const Shape &s : kShapes) {
    const std::vector<float> w = testMatrix(s.rows, s.cols, s.group, seed++);
    const QuantizedWeight q = quantizeInt4(w, s.rows, s.cols, s.group);
    std::vector<float> deq(w.size());
    dequantize(q, deq);
    const int64_t groups = s.cols / s.group;
    int64_t checked = 0;
    for (int64_t n = 0; n < s.rows; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        const float *wg = w.data() + n * s.cols + g * s.group;
        const auto [lo, hi] = std::minmax_element(wg, wg + s.group);
        if (*lo > 0.0f || *hi < 0.0f)
          continue; // one-signed groups lose range by design (Quantize.h)
        const float scale = q.scales[n * groups + g];
        for (int64_t i = 0; i < s.group; ++i, ++checked)
          ASSERT_LE(std::fabs(wg[i] - deq[n * s.cols + g * s.group + i]),
                    scale * (0.5f + 1e-5f))
              << "row " << n << " group " << g;
      }
    EXPECT_GT(checked, 0);
  }
}

TEST(Quantize, Int4OneSignedGroupsFollowAutoAwq) {
  // All positive: zero clamps to 0, values above 15 * scale saturate.
  std::vector<float> w = {2.0f, 3.0f, 4.0f, 5.0f};
  QuantizedWeight q = quantizeInt4(w, 1, 4, 4);
  EXPECT_EQ(q.scales[0], 3.0f / 15.0f);
  EXPECT_EQ(q.zeros[0], 0);
  EXPECT_EQ(int4CodeAt(q.codes, 4, 0, 0), 10);
  EXPECT_EQ(int4CodeAt(q.codes, 4, 0, 3), 15);
  // All negative: zero clamps to 15.
  w = {-5.0f, -4.0f, -3.0f, -2.0f};
  q = quantizeInt4(w, 1, 4, 4);
  EXPECT_EQ(q.zeros[0], 15);
  EXPECT_EQ(int4CodeAt(q.codes, 4, 0, 0), 0);
  // An all-zero group: the range floor keeps the scale positive.
  w = {0.0f, 0.0f, 0.0f, 0.0f};
  q = quantizeInt4(w, 1, 4, 4);
  EXPECT_EQ(q.scales[0], 1e-5f / 15.0f);
  EXPECT_EQ(q.zeros[0], 0);
  EXPECT_EQ(q.codes, std::vector<uint8_t>(2, 0));
}

TEST(Quantize, Int4PackingIsLowNibbleFirst) {
  // One group per row with min 0 and max 15: scale 1, zero 0, so each code
  // is its value and the packed bytes are predictable.
  std::vector<float> w(32);
  for (int k = 0; k < 16; ++k) {
    w[k] = static_cast<float>(k);
    w[16 + k] = static_cast<float>(15 - k);
  }
  const QuantizedWeight q = quantizeInt4(w, 2, 16, 16);
  EXPECT_EQ(q.scales, (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(q.zeros, (std::vector<uint8_t>{0, 0}));
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{0x10, 0x32, 0x54, 0x76, 0x98, 0xBA,
                                           0xDC, 0xFE, 0xEF, 0xCD, 0xAB, 0x89,
                                           0x67, 0x45, 0x23, 0x01}));
  std::vector<uint8_t> packed(4, 0);
  setInt4CodeAt(packed, 4, 1, 1, 0xA);
  setInt4CodeAt(packed, 4, 1, 0, 0x5);
  EXPECT_EQ(packed, (std::vector<uint8_t>{0, 0, 0xA5, 0}));
}

TEST(Quantize, DequantizeIntoRawBytes) {
  const Shape s{5, 256, 64};
  const std::vector<float> w = testMatrix(s.rows, s.cols, s.group, 7);
  for (const QuantizedWeight &q :
       {quantizeInt8(w, s.rows, s.cols), quantizeFp8(w, s.rows, s.cols),
        quantizeInt4(w, s.rows, s.cols, s.group)}) {
    std::vector<float> a(w.size()), b(w.size());
    dequantize(q, a);
    dequantizeInto(q.scheme, q.rows, q.cols, q.groupSize,
                   std::as_bytes(std::span<const uint8_t>(q.codes)), q.scales,
                   q.zeros, b);
    EXPECT_EQ(a, b) << schemeName(q.scheme);
  }
}

// ---------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------

TEST(Quantize, BadArgumentsNameTheProblem) {
  const std::vector<float> w(4 * 130, 0.1f);
  EXPECT_ERROR_HAS(quantizeInt4(w, 4, 130, 128), "group size 128");
  EXPECT_ERROR_HAS(quantizeInt4(w, 4, 130, 128), "divide K (130)");
  EXPECT_ERROR_HAS(quantizeInt4(w, 4, 130, 0), "group size 0");
  const std::vector<float> odd(4 * 127, 0.1f);
  EXPECT_ERROR_HAS(quantizeInt4(odd, 4, 127, 127), "must be even");
  EXPECT_ERROR_HAS(quantizeInt4(w, 4, 128, 64), "has 520 values");
  EXPECT_ERROR_HAS(quantizeInt8(w, 5, 130), "needs 650");
  EXPECT_ERROR_HAS(quantizeFp8(w, 0, 130), "not a valid [N, K]");
  const std::vector<float> ratios(3, 1.0f);
  EXPECT_ERROR_HAS(quantizeInt4(w, 4, 130, 65, ratios), "clip ratio array");
  const std::vector<float> zeroRatio = {1.0f, 0.0f, 1.0f, 1.0f,
                                        1.0f, 1.0f, 1.0f, 1.0f};
  EXPECT_ERROR_HAS(quantizeInt4(w, 4, 130, 65, zeroRatio), "outside (0, 1]");
  EXPECT_ERROR_HAS(checkShape(Scheme::Int8, 4, 130, 32),
                   "group size must be 0");
  EXPECT_ERROR_HAS(checkShape(Scheme::None, 4, 130, 0), "no quantized layout");

  // A NaN found by a worker thread still reaches the caller.
  std::vector<float> big(300 * 2048, 0.5f);
  big[299 * 2048 + 5] = NAN;
  EXPECT_ERROR_HAS(quantizeInt8(big, 300, 2048), "element [299, 5]");
  EXPECT_ERROR_HAS(quantizeInt4(big, 300, 2048, 128), "finite");

  const QuantizedWeight q = quantizeInt4(w, 4, 130, 65);
  std::vector<float> out(w.size());
  auto codes = std::as_bytes(std::span<const uint8_t>(q.codes));
  EXPECT_ERROR_HAS(dequantizeInto(Scheme::Int4, 4, 130, 65, codes.first(10),
                                  q.scales, q.zeros, out),
                   "code array has 10 elements, expected 260");
  EXPECT_ERROR_HAS(dequantizeInto(Scheme::Int4, 4, 130, 65, codes,
                                  std::span(q.scales).first(7), q.zeros, out),
                   "scale array");
  EXPECT_ERROR_HAS(
      dequantizeInto(Scheme::Int4, 4, 130, 65, codes, q.scales, {}, out),
      "zero-point array");
  EXPECT_ERROR_HAS(dequantizeInto(Scheme::Int4, 4, 130, 65, codes, q.scales,
                                  q.zeros, std::span(out).first(9)),
                   "the output");
  std::vector<uint8_t> badZeros = q.zeros;
  badZeros[3] = 16;
  EXPECT_ERROR_HAS(
      dequantizeInto(Scheme::Int4, 4, 130, 65, codes, q.scales, badZeros, out),
      "outside 0..15");
  EXPECT_ERROR_HAS(searchInt4Clip(w, 4, 130, 65, w, 3), "calibration input");
  EXPECT_ERROR_HAS(searchInt4Clip(w, 4, 130, 65, {}, 0, 20, 1.0f),
                   "shrink in [0, 1)");
}

// ---------------------------------------------------------------------------
// fp8 activations.
// ---------------------------------------------------------------------------

TEST(Quantize, Fp8ActivationRows) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> x(64 + trial);
    for (float &v : x)
      v = normal(rng) * std::exp2(static_cast<float>(trial - 10));
    double amax = 0.0;
    for (float v : x)
      amax = std::max(amax, std::fabs(static_cast<double>(v)));
    std::vector<uint8_t> q(x.size());
    const float scale = quantizeActivationRowFp8(x, q);
    ASSERT_EQ(scale, div32(amax, 448.0));
    std::vector<float> round = x;
    ASSERT_EQ(roundTripRowFp8(round), scale);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(q[i], floatToE4M3(x[i] / scale));
      const float back = e4m3ToFloat(q[i]) * scale;
      ASSERT_EQ(round[i], back);
      ASSERT_LE(
          std::fabs(back - x[i]),
          std::max(std::ldexp(std::fabs(x[i]), -4), std::ldexp(scale, -10)) *
              (1.0f + 1e-5f));
    }
    EXPECT_EQ(e4m3ToFloat(q[std::max_element(x.begin(), x.end(),
                                             [](float a, float b) {
                                               return std::fabs(a) <
                                                      std::fabs(b);
                                             }) -
                            x.begin()] &
                          0x7F),
              448.0f); // the largest |x| maps to +-448
  }
  std::vector<float> zeros(8, 0.0f);
  std::vector<uint8_t> q(8, 0xFF);
  EXPECT_EQ(quantizeActivationRowFp8(zeros, q), 1.0f);
  EXPECT_EQ(q, std::vector<uint8_t>(8, 0));
  EXPECT_ERROR_HAS(quantizeActivationRowFp8(zeros, std::span(q).first(3)),
                   "code buffer");
}

// ---------------------------------------------------------------------------
// Int4 clipping search.
// ---------------------------------------------------------------------------

/// The error the search minimises, in float64 with the reference quantizer.
double groupError(const float *wg, int64_t group, double ratio, const float *x,
                  int64_t xRows, int64_t cols) {
  const RefGroup p = refInt4Group(wg, group, ratio);
  std::vector<double> d(group);
  for (int64_t i = 0; i < group; ++i)
    d[i] =
        wg[i] - (refInt4Code(wg[i], p) - p.zero) * static_cast<double>(p.scale);
  double error = 0.0;
  if (xRows == 0) {
    for (double v : d)
      error += v * v;
    return error;
  }
  for (int64_t t = 0; t < xRows; ++t) {
    double out = 0.0;
    for (int64_t i = 0; i < group; ++i)
      out += d[i] * x[t * cols + i];
    error += out * out;
  }
  return error;
}

void expectSearchPicksTheBest(int64_t xRows) {
  SCOPED_TRACE(testing::Message() << xRows << " calibration rows");
  const int64_t rows = 8, cols = 512, group = 128, groups = cols / group;
  std::mt19937 rng(static_cast<uint32_t>(xRows) + 5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(rows * cols), x(xRows * cols);
  for (float &v : w)
    v = normal(rng);
  for (float &v : x)
    v = normal(rng);
  w[3 * cols + 2 * group + 17] = 12.0f; // an outlier in row 3, group 2
  const std::vector<float> ratios =
      searchInt4Clip(w, rows, cols, group, x, xRows);
  ASSERT_EQ(ratios.size(), static_cast<size_t>(rows * groups));
  int shrunk = 0;
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const float *wg = w.data() + n * cols + g * group;
      const float *xg = x.data() + g * group;
      const float chosen = ratios[n * groups + g];
      bool onGrid = false;
      for (int i = 0; i < 10; ++i)
        onGrid = onGrid || chosen == 1.0f - i / 20.0f;
      EXPECT_TRUE(onGrid) << chosen;
      const double got = groupError(wg, group, chosen, xg, xRows, cols);
      EXPECT_LE(got,
                groupError(wg, group, 1.0, xg, xRows, cols) * (1.0 + 1e-4));
      for (int i = 0; i < 10; ++i)
        EXPECT_LE(got,
                  groupError(wg, group, 1.0f - i / 20.0f, xg, xRows, cols) *
                      (1.0 + 1e-4))
            << "row " << n << " group " << g << " ratio " << chosen;
      shrunk += chosen < 1.0f;
    }
  EXPECT_LT(ratios[3 * groups + 2], 1.0f);
  EXPECT_GT(shrunk, 0);

  // The chosen ratios lower the linear's output error against x overall.
  if (xRows > 0) {
    std::vector<float> plain(w.size()), clipped(w.size());
    dequantize(quantizeInt4(w, rows, cols, group), plain);
    dequantize(quantizeInt4(w, rows, cols, group, ratios), clipped);
    auto outputError = [&](const std::vector<float> &deq) {
      double e = 0.0;
      for (int64_t t = 0; t < xRows; ++t)
        for (int64_t n = 0; n < rows; ++n) {
          double y = 0.0;
          for (int64_t k = 0; k < cols; ++k)
            y += (w[n * cols + k] - deq[n * cols + k]) *
                 static_cast<double>(x[t * cols + k]);
          e += y * y;
        }
      return e;
    };
    EXPECT_LT(outputError(clipped), outputError(plain));
  }
}

TEST(Int4ClipSearch, WeightMseWithoutInputs) { expectSearchPicksTheBest(0); }
TEST(Int4ClipSearch, FewInputsDirectDots) { expectSearchPicksTheBest(24); }
TEST(Int4ClipSearch, ManyInputsGramMatrix) { expectSearchPicksTheBest(200); }

TEST(Int4ClipSearch, GridAndShrinkBoundTheRatios) {
  const std::vector<float> w = testMatrix(4, 64, 32, 9);
  for (float r : searchInt4Clip(w, 4, 64, 32, {}, 0, 4, 0.5f))
    EXPECT_TRUE(r == 1.0f || r == 0.75f) << r;
  for (float r : searchInt4Clip(w, 4, 64, 32, {}, 0, 20, 0.0f))
    EXPECT_EQ(r, 1.0f);
}

// ---------------------------------------------------------------------------
// AutoAWQ.
// ---------------------------------------------------------------------------

/// AutoAWQ's GEMM packing: intweight is [K, N]; word c of row k gets
/// intweight[k][c*8 + order[i]] << 4i.
std::vector<int32_t> packAwq(const std::vector<int> &intweight, int64_t K,
                             int64_t N) {
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  std::vector<int32_t> packed(K * N / 8, 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < N / 8; ++c) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i)
        word |= static_cast<uint32_t>(intweight[k * N + c * 8 + order[i]])
                << (i * 4);
      packed[k * N / 8 + c] = static_cast<int32_t>(word);
    }
  return packed;
}

TEST(QuantizedCheckpoint, AwqHandPackedWord) {
  // K = 2, N = 8, one group. Row k = 0's word has nibble i = i, row 1's
  // nibble i = 8 + i; nibble i belongs to column order[i].
  const std::vector<int32_t> qweight = {0x76543210,
                                        static_cast<int32_t>(0xFEDCBA98u)};
  const std::vector<int32_t> qzeros = {static_cast<int32_t>(0x87654321u)};
  std::vector<uint16_t> scales(8);
  for (int n = 0; n < 8; ++n)
    scales[n] = floatToHalf(0.5f + 0.25f * n);
  const QuantizedWeight q = unpackAutoAwq(qweight, qzeros, scales, 2, 8, 2);
  const int k0[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const int zero[8] = {1, 5, 2, 6, 3, 7, 4, 8};
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(q.codes[n], k0[n] | (k0[n] + 8) << 4) << "row " << n;
    EXPECT_EQ(q.zeros[n], zero[n]) << "row " << n;
    EXPECT_EQ(q.scales[n], 0.5f + 0.25f * n);
  }
  std::vector<float> deq(16);
  dequantize(q, deq);
  EXPECT_EQ(deq[3 * 2 + 1], (13 - 6) * 1.25f); // row 3, k = 1
}

TEST(QuantizedCheckpoint, AwqRoundTripsOurInt4) {
  // Quantize here, pack as AutoAWQ would, unpack: the same codes and zeros.
  const int64_t N = 24, K = 256, g = 64, groups = K / g;
  const std::vector<float> w = testMatrix(N, K, g, 21);
  const QuantizedWeight ours = quantizeInt4(w, N, K, g);
  std::vector<int> intweight(K * N), intzeros(groups * N);
  std::vector<uint16_t> scales(groups * N);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k)
      intweight[k * N + n] = packedNibble(ours.codes, K, n, k);
    for (int64_t j = 0; j < groups; ++j) {
      intzeros[j * N + n] = ours.zeros[n * groups + j];
      scales[j * N + n] = floatToHalf(ours.scales[n * groups + j]);
    }
  }
  const QuantizedWeight q = unpackAutoAwq(
      packAwq(intweight, K, N), packAwq(intzeros, groups, N), scales, K, N, g);
  EXPECT_EQ(q.rows, N);
  EXPECT_EQ(q.cols, K);
  EXPECT_EQ(q.groupSize, g);
  EXPECT_EQ(q.codes, ours.codes);
  EXPECT_EQ(q.zeros, ours.zeros);
  for (int64_t i = 0; i < N * groups; ++i)
    EXPECT_EQ(q.scales[i], halfToFloat(floatToHalf(ours.scales[i])));
}

TEST(QuantizedCheckpoint, AwqBadShapes) {
  std::vector<int32_t> qweight(16), qzeros(1);
  std::vector<uint16_t> scales(8);
  EXPECT_ERROR_HAS(unpackAutoAwq(qweight, qzeros, scales, 16, 12, 16),
                   "N = 12 is not a multiple of 8");
  EXPECT_ERROR_HAS(unpackAutoAwq(qweight, qzeros, scales, 15, 8, 15),
                   "must be even");
  EXPECT_ERROR_HAS(unpackAutoAwq(qweight, qzeros, scales, 16, 8, 6),
                   "group size 6");
  EXPECT_ERROR_HAS(unpackAutoAwq(qweight, qzeros, scales, 32, 8, 16),
                   "'qweight' has 16 elements, expected [32, 1]");
  EXPECT_ERROR_HAS(unpackAutoAwq(qweight, qzeros, scales, 16, 8, 8),
                   "'qzeros'");
  EXPECT_ERROR_HAS(
      unpackAutoAwq(qweight, qzeros, std::span(scales).first(4), 16, 8, 16),
      "'scales'");
  scales[2] = 0x7C00; // +inf
  EXPECT_ERROR_HAS(unpackAutoAwq(qweight, qzeros, scales, 16, 8, 16),
                   "corrupt");
}

// ---------------------------------------------------------------------------
// GPTQ.
// ---------------------------------------------------------------------------

/// GPTQ's packings: qweight [K/8, N] with nibble j of word (r, n) = input
/// r*8 + j; qzeros [groups, N/8] with nibble j of word (g, c) = column
/// c*8 + j. codes are [N, K], zeros [groups, N] as stored.
std::vector<int32_t> packGptqWeight(const std::vector<int> &codes, int64_t K,
                                    int64_t N) {
  std::vector<int32_t> packed(K / 8 * N);
  for (int64_t r = 0; r < K / 8; ++r)
    for (int64_t n = 0; n < N; ++n) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j)
        word |= static_cast<uint32_t>(codes[n * K + r * 8 + j]) << (4 * j);
      packed[r * N + n] = static_cast<int32_t>(word);
    }
  return packed;
}

std::vector<int32_t> packGptqZeros(const std::vector<int> &stored,
                                   int64_t groups, int64_t N) {
  std::vector<int32_t> packed(groups * N / 8);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < N / 8; ++c) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j)
        word |= static_cast<uint32_t>(stored[g * N + c * 8 + j]) << (4 * j);
      packed[g * (N / 8) + c] = static_cast<int32_t>(word);
    }
  return packed;
}

TEST(QuantizedCheckpoint, GptqHandPackedWords) {
  // K = 8, N = 8, one group; column 0 holds 0..7 along k, column 1 7..0,
  // the rest 15. Zeros stored as 7: sym=true's zero 8.
  std::vector<int32_t> qweight(8, -1);
  qweight[0] = 0x76543210;
  qweight[1] = 0x01234567;
  const std::vector<int32_t> qzeros = {0x77777777};
  const std::vector<uint16_t> scales(8, floatToHalf(0.125f));
  const GptqWeight r = unpackGptq(qweight, qzeros, scales, {}, 8, 8, 8);
  EXPECT_TRUE(r.inputPermutation.empty());
  const QuantizedWeight &q = r.weight;
  EXPECT_EQ(
      std::vector<uint8_t>(q.codes.begin(), q.codes.begin() + 8),
      (std::vector<uint8_t>{0x10, 0x32, 0x54, 0x76, 0x67, 0x45, 0x23, 0x01}));
  EXPECT_EQ(q.codes[8], 0xFF);
  EXPECT_EQ(q.zeros, std::vector<uint8_t>(8, 8));
  std::vector<float> deq(64);
  dequantize(q, deq);
  EXPECT_EQ(deq[0], -1.0f);       // (0 - 8) / 8
  EXPECT_EQ(deq[8 + 0], -0.125f); // row 1, k 0: (7 - 8) / 8

  // gptq_v2 stores the zero itself.
  EXPECT_EQ(unpackGptq(qweight, qzeros, scales, {}, 8, 8, 8, GptqZeros::Stored)
                .weight.zeros,
            std::vector<uint8_t>(8, 7));
  // A trivial g_idx is the same as none.
  const std::vector<int32_t> trivial(8, 0);
  EXPECT_EQ(unpackGptq(qweight, qzeros, scales, trivial, 8, 8, 8).weight.codes,
            q.codes);
  // Stored 15 would be zero 16 in the classic format.
  const std::vector<int32_t> wrapped = {0x777F7777};
  EXPECT_ERROR_HAS(unpackGptq(qweight, wrapped, scales, {}, 8, 8, 8),
                   "group 0, column 4 is stored as 15");
}

struct GptqCase {
  int64_t K, N, g;
  std::vector<int> codes;       // [N, K]
  std::vector<int> zeros;       // [groups, N], the real zero points 1..15
  std::vector<uint16_t> scales; // [groups, N]
  std::vector<int32_t> gIdx;
};

GptqCase randomGptq(int64_t K, int64_t N, int64_t g, bool descAct,
                    uint32_t seed) {
  std::mt19937 rng(seed);
  GptqCase c{K, N, g, {}, {}, {}, {}};
  const int64_t groups = K / g;
  c.codes.resize(N * K);
  for (int &v : c.codes)
    v = static_cast<int>(rng() % 16);
  c.zeros.resize(groups * N);
  for (int &v : c.zeros)
    v = 1 + static_cast<int>(rng() % 15);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  c.scales.resize(groups * N);
  for (uint16_t &v : c.scales)
    v = floatToHalf(scale(rng));
  c.gIdx.resize(K);
  for (int64_t k = 0; k < K; ++k)
    c.gIdx[k] = static_cast<int32_t>(k / g);
  if (descAct)
    std::shuffle(c.gIdx.begin(), c.gIdx.end(), rng);
  return c;
}

GptqWeight unpack(const GptqCase &c) {
  std::vector<int> stored(c.zeros);
  for (int &v : stored)
    v -= 1;
  return unpackGptq(packGptqWeight(c.codes, c.K, c.N),
                    packGptqZeros(stored, c.K / c.g, c.N), c.scales, c.gIdx,
                    c.K, c.N, c.g);
}

TEST(QuantizedCheckpoint, GptqContiguousGroups) {
  const GptqCase c = randomGptq(256, 16, 64, false, 31);
  const GptqWeight r = unpack(c);
  EXPECT_TRUE(r.inputPermutation.empty());
  const int64_t groups = c.K / c.g;
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t k = 0; k < c.K; ++k)
      ASSERT_EQ(packedNibble(r.weight.codes, c.K, n, k), c.codes[n * c.K + k]);
    for (int64_t j = 0; j < groups; ++j) {
      EXPECT_EQ(r.weight.zeros[n * groups + j], c.zeros[j * c.N + n]);
      EXPECT_EQ(r.weight.scales[n * groups + j],
                halfToFloat(c.scales[j * c.N + n]));
    }
  }
}

TEST(QuantizedCheckpoint, GptqDescActPermutesInputs) {
  const GptqCase c = randomGptq(128, 8, 32, true, 41);
  const GptqWeight r = unpack(c);
  // The permutation: inputs stably sorted by group.
  std::vector<int32_t> expected(c.K);
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(),
                   [&](int32_t a, int32_t b) { return c.gIdx[a] < c.gIdx[b]; });
  ASSERT_EQ(r.inputPermutation, expected);
  for (int64_t j = 0; j < c.K; ++j)
    ASSERT_EQ(c.gIdx[expected[j]], j / c.g); // groups now contiguous

  // W x with the checkpoint's own groups equals W' x' with x permuted.
  std::vector<float> deq(c.N * c.K);
  dequantize(r.weight, deq);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> x(c.K);
  for (float &v : x)
    v = normal(rng);
  for (int64_t n = 0; n < c.N; ++n) {
    double original = 0.0, permuted = 0.0;
    for (int64_t k = 0; k < c.K; ++k) {
      const int64_t slot = c.gIdx[k] * c.N + n;
      original += (c.codes[n * c.K + k] - c.zeros[slot]) *
                  static_cast<double>(halfToFloat(c.scales[slot])) * x[k];
      permuted +=
          static_cast<double>(deq[n * c.K + k]) * x[r.inputPermutation[k]];
    }
    EXPECT_NEAR(permuted, original, 1e-5 * (1.0 + std::fabs(original)));
  }
}

TEST(QuantizedCheckpoint, GptqInconsistentGIdx) {
  GptqCase c = randomGptq(64, 8, 16, true, 51);
  const int32_t moved = c.gIdx[0];
  c.gIdx[0] = (moved + 1) % 4; // one group gets 17 members, another 15
  EXPECT_ERROR_HAS(unpack(c), "g_idx puts");
  c.gIdx[0] = 4;
  EXPECT_ERROR_HAS(unpack(c), "g_idx[0] = 4 is not a group of 4");
  c.gIdx.resize(10);
  EXPECT_ERROR_HAS(unpack(c), "g_idx has 10 elements");
  GptqCase odd = randomGptq(64, 8, 16, false, 52);
  EXPECT_ERROR_HAS(unpackGptq(packGptqWeight(odd.codes, 64, 8), {}, odd.scales,
                              {}, 60, 8, 12),
                   "K = 60 is not a multiple of 8");
}

} // namespace

// onnxruntime's MatMulNBits layout, packed here as its quantizer packs it:
// code k of a row at bit k*bits of the row's bytes, zero points per block
// packed the same way with each row padded to whole bytes.
namespace {
struct NBitsFixture {
  int64_t rows, cols, bits, block;
  std::vector<uint8_t> codes;      ///< one per (row, k), unpacked
  std::vector<uint8_t> zeroValues; ///< one per (row, block), unpacked
  std::vector<float> scales;
  std::vector<uint8_t> packed, packedZeros;

  NBitsFixture(int64_t rows, int64_t cols, int64_t bits, int64_t block,
               uint32_t seed)
      : rows(rows), cols(cols), bits(bits), block(block) {
    std::mt19937 rng(seed);
    const int64_t blocks = (cols + block - 1) / block;
    const int max = (1 << bits) - 1;
    codes.resize(rows * cols);
    for (uint8_t &c : codes)
      c = static_cast<uint8_t>(rng() % (max + 1));
    zeroValues.resize(rows * blocks);
    for (uint8_t &z : zeroValues)
      z = static_cast<uint8_t>(rng() % (max + 1));
    scales.resize(rows * blocks);
    for (float &s : scales)
      s = 0.01f + static_cast<float>(rng() % 100) / 1000.0f;
    const int64_t rowBytes = blocks * block * bits / 8;
    packed.assign(rows * rowBytes, 0);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t k = 0; k < cols; ++k) {
        const int64_t bit = k * bits;
        packed[n * rowBytes + bit / 8] |=
            static_cast<uint8_t>(codes[n * cols + k] << (bit % 8));
      }
    const int64_t zeroBytes = (blocks * bits + 7) / 8;
    packedZeros.assign(rows * zeroBytes, 0);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t bit = b * bits;
        packedZeros[n * zeroBytes + bit / 8] |=
            static_cast<uint8_t>(zeroValues[n * blocks + b] << (bit % 8));
      }
  }

  NBitsWeight weight(bool withZeros) const {
    NBitsWeight w;
    w.rows = rows;
    w.cols = cols;
    w.bits = bits;
    w.blockSize = block;
    w.packed = packed;
    w.scales = scales;
    if (withZeros)
      w.zeroCodes = packedZeros;
    return w;
  }

  float value(int64_t n, int64_t k, bool withZeros) const {
    const int64_t blocks = (cols + block - 1) / block, b = k / block;
    const float zero = withZeros ? zeroValues[n * blocks + b]
                                 : static_cast<float>(1 << (bits - 1));
    return (static_cast<float>(codes[n * cols + k]) - zero) *
           scales[n * blocks + b];
  }
};
} // namespace

TEST(QuantizedCheckpoint, NBitsDequantizeEveryWidth) {
  for (int64_t bits : {2, 4, 8})
    for (bool zeros : {false, true}) {
      // K not a multiple of the block: the last block is padded.
      NBitsFixture f(6, 80, bits, 32, 7 + bits);
      const std::vector<float> w = dequantizeNBits(f.weight(zeros));
      ASSERT_EQ(w.size(), size_t(6 * 80));
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t k = 0; k < 80; ++k)
          ASSERT_EQ(w[n * 80 + k], f.value(n, k, zeros))
              << "bits " << bits << " zeros " << zeros << " at " << n << ","
              << k;
    }
}

TEST(QuantizedCheckpoint, NBitsInt4IsSolsInt4) {
  for (bool zeros : {false, true}) {
    NBitsFixture f(8, 96, 4, 32, 3);
    const QuantizedWeight q = unpackNBits(f.weight(zeros));
    EXPECT_EQ(q.scheme, Scheme::Int4);
    EXPECT_EQ(q.groupSize, 32);
    const std::vector<float> want = dequantizeNBits(f.weight(zeros));
    for (int64_t n = 0; n < 8; ++n)
      for (int64_t k = 0; k < 96; ++k) {
        const int64_t g = n * 3 + k / 32;
        const Int4Group group{q.scales[g], q.zeros[g]};
        ASSERT_EQ(int4Dequantize(int4CodeAt(q.codes, 96, n, k), group),
                  want[n * 96 + k]);
      }
  }
}

// Act-order (g_idx): result column j is stored column columns[j], in block
// j / block, for the dequantized weight and Sol's int4 alike.
TEST(QuantizedCheckpoint, NBitsColumnsGatherStoredColumns) {
  NBitsFixture f(5, 96, 4, 32, 11);
  std::vector<int32_t> columns(96);
  std::iota(columns.begin(), columns.end(), 0);
  std::shuffle(columns.begin(), columns.end(), std::mt19937(4));
  for (bool zeros : {false, true}) {
    NBitsWeight w = f.weight(zeros);
    w.columns = columns;
    const std::vector<float> got = dequantizeNBits(w);
    const QuantizedWeight q = unpackNBits(w);
    for (int64_t n = 0; n < 5; ++n)
      for (int64_t j = 0; j < 96; ++j) {
        const int64_t b = j / 32;
        const float zero = zeros ? f.zeroValues[n * 3 + b] : 8.0f;
        const float want =
            (static_cast<float>(f.codes[n * 96 + columns[j]]) - zero) *
            f.scales[n * 3 + b];
        ASSERT_EQ(got[n * 96 + j], want) << n << "," << j;
        const Int4Group group{q.scales[n * 3 + b], q.zeros[n * 3 + b]};
        ASSERT_EQ(int4Dequantize(int4CodeAt(q.codes, 96, n, j), group), want);
      }
  }
  NBitsWeight w = f.weight(false);
  columns[1] = columns[0];
  w.columns = columns;
  EXPECT_ERROR_HAS(dequantizeNBits(w), "not a permutation of its 96 inputs");
}

// One block a whole row (QMoE's per-row scales) may have any width; other
// blocks are powers of two.
TEST(QuantizedCheckpoint, NBitsWholeRowBlock) {
  NBitsFixture f(3, 48, 4, 48, 5);
  const std::vector<float> w = dequantizeNBits(f.weight(false));
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 48; ++k)
      ASSERT_EQ(w[n * 48 + k], f.value(n, k, false));
  NBitsFixture g(3, 96, 4, 48, 5);
  EXPECT_ERROR_HAS(dequantizeNBits(g.weight(false)), "power of two");
}

TEST(QuantizedCheckpoint, NBitsBadShapes) {
  NBitsFixture f(4, 64, 4, 32, 1);
  NBitsWeight w = f.weight(true);
  w.packed = std::span(f.packed).first(f.packed.size() - 1);
  EXPECT_ERROR_HAS(dequantizeNBits(w), "codes");
  w = f.weight(true);
  w.scales = std::span(f.scales).first(3);
  EXPECT_ERROR_HAS(dequantizeNBits(w), "scales");
  w = f.weight(true);
  w.bits = 3;
  EXPECT_ERROR_HAS(dequantizeNBits(w), "3 bits");
  NBitsFixture padded(4, 48, 4, 32, 2);
  EXPECT_ERROR_HAS(unpackNBits(padded.weight(false)), "multiple of block_size");
  NBitsFixture eight(4, 64, 8, 32, 2);
  EXPECT_ERROR_HAS(unpackNBits(eight.weight(false)), "4-bit codes");
}

// ONNX DequantizeLinear weights: codes [rows, cols] (a MatMul's [in, out]),
// scales per tensor, per index of an axis or in blocks along it, written
// here element by element from a list of code values.
namespace {
struct LinearQuantFixture {
  int64_t rows, cols, bits, axis, block;
  bool isSigned;
  std::vector<int> codes, zeroValues;
  std::vector<float> scales;
  std::vector<uint8_t> packed, packedZeros;

  static std::vector<uint8_t> pack(const std::vector<int> &values,
                                   int64_t bits) {
    if (bits == 8) {
      std::vector<uint8_t> out(values.size());
      for (size_t i = 0; i < values.size(); ++i)
        out[i] = static_cast<uint8_t>(values[i]);
      return out;
    }
    std::vector<uint8_t> out((values.size() + 1) / 2, 0);
    for (size_t i = 0; i < values.size(); ++i)
      out[i / 2] |= static_cast<uint8_t>((values[i] & 0xF) << (i % 2 * 4));
    return out;
  }

  LinearQuantFixture(int64_t rows, int64_t cols, int64_t bits, bool isSigned,
                     int64_t axis, int64_t block, int64_t scaleCount,
                     bool withZeros, uint32_t seed)
      : rows(rows), cols(cols), bits(bits), axis(axis), block(block),
        isSigned(isSigned) {
    std::mt19937 rng(seed);
    const int lo = isSigned ? -(1 << (bits - 1)) : 0;
    const int span = 1 << bits;
    auto code = [&] { return lo + static_cast<int>(rng() % span); };
    codes.resize(rows * cols);
    for (int &c : codes)
      c = code();
    scales.resize(scaleCount);
    for (float &s : scales)
      s = 0.01f + static_cast<float>(rng() % 100) / 1000.0f;
    if (withZeros) {
      zeroValues.resize(scaleCount);
      for (int &z : zeroValues)
        z = code();
      packedZeros = pack(zeroValues, bits);
    }
    packed = pack(codes, bits);
  }

  LinearQuantWeight weight() const {
    LinearQuantWeight w;
    w.rows = rows;
    w.cols = cols;
    w.bits = bits;
    w.isSigned = isSigned;
    w.axis = axis;
    w.blockSize = block;
    w.codes = packed;
    w.scales = scales;
    w.zeros = packedZeros;
    return w;
  }

  float value(int64_t r, int64_t c) const {
    int64_t p = 0;
    if (scales.size() > 1) {
      if (block == 0)
        p = axis == 0 ? r : c;
      else if (axis == 0)
        p = (r / block) * cols + c;
      else
        p = r * ((cols + block - 1) / block) + c / block;
    }
    const int zero = zeroValues.empty() ? 0 : zeroValues[p];
    return static_cast<float>(codes[r * cols + c] - zero) * scales[p];
  }
};
} // namespace

TEST(QuantizedCheckpoint, LinearQuantDequantizeEveryLayout) {
  struct Case {
    int64_t bits;
    bool isSigned;
    int64_t axis, block, scaleCount;
    bool zeros;
  };
  const Case cases[] = {
      {8, true, 1, 0, 1, false},      {8, true, 1, 0, 12, true},
      {8, false, 0, 0, 10, true},     {4, false, 0, 4, 3 * 12, true},
      {4, true, 0, 4, 3 * 12, false}, {4, true, 1, 5, 10 * 3, true},
      {8, true, 1, 8, 10 * 2, true}};
  for (const Case &c : cases) {
    LinearQuantFixture f(10, 12, c.bits, c.isSigned, c.axis, c.block,
                         c.scaleCount, c.zeros, 11);
    const std::vector<float> w = dequantizeLinear(f.weight());
    ASSERT_EQ(w.size(), size_t(120));
    for (int64_t r = 0; r < 10; ++r)
      for (int64_t col = 0; col < 12; ++col)
        ASSERT_EQ(w[r * 12 + col], f.value(r, col))
            << c.bits << " bits, axis " << c.axis << ", block " << c.block
            << " at " << r << "," << col;
  }
}

TEST(QuantizedCheckpoint, LinearQuantInt8IsSolsInt8Transposed) {
  for (int64_t scaleCount : {1, 12}) {
    LinearQuantFixture f(10, 12, 8, true, 1, 0, scaleCount, false, 5);
    ASSERT_TRUE(isSolInt8(f.weight()));
    const QuantizedWeight q = toSolInt8(f.weight());
    EXPECT_EQ(q.scheme, Scheme::Int8);
    EXPECT_EQ(q.rows, 12);
    EXPECT_EQ(q.cols, 10);
    std::vector<float> got(120);
    dequantize(q, got);
    // Row n of Sol's weight is column n of the stored one.
    for (int64_t n = 0; n < 12; ++n)
      for (int64_t k = 0; k < 10; ++k)
        ASSERT_EQ(got[n * 10 + k], f.value(k, n));
  }
  // Zero points that are all zero are no zero points.
  LinearQuantFixture zero(10, 12, 8, true, 1, 0, 12, true, 6);
  std::fill(zero.zeroValues.begin(), zero.zeroValues.end(), 0);
  zero.packedZeros = LinearQuantFixture::pack(zero.zeroValues, 8);
  EXPECT_TRUE(isSolInt8(zero.weight()));
  LinearQuantFixture shifted(10, 12, 8, true, 1, 0, 12, true, 7);
  shifted.zeroValues[3] = 1;
  shifted.packedZeros = LinearQuantFixture::pack(shifted.zeroValues, 8);
  EXPECT_FALSE(isSolInt8(shifted.weight()));
  EXPECT_ERROR_HAS(toSolInt8(shifted.weight()), "not Sol's int8");
  EXPECT_FALSE(isSolInt8(
      LinearQuantFixture(10, 12, 8, false, 1, 0, 12, false, 8).weight()));
  EXPECT_FALSE(isSolInt8(
      LinearQuantFixture(10, 12, 8, true, 0, 0, 10, false, 8).weight()));
}

TEST(QuantizedCheckpoint, LinearQuantInt4BlocksAreSolsInt4) {
  for (bool isSigned : {false, true})
    for (bool zeros : {false, true}) {
      LinearQuantFixture f(16, 6, 4, isSigned, 0, 8, 2 * 6, zeros, 9);
      ASSERT_TRUE(isSolInt4(f.weight()));
      const QuantizedWeight q = toSolInt4(f.weight());
      EXPECT_EQ(q.scheme, Scheme::Int4);
      EXPECT_EQ(q.groupSize, 8);
      EXPECT_EQ(q.rows, 6);
      EXPECT_EQ(q.cols, 16);
      std::vector<float> got(96);
      dequantize(q, got);
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t k = 0; k < 16; ++k)
          ASSERT_EQ(got[n * 16 + k], f.value(k, n))
              << "signed " << isSigned << " zeros " << zeros;
    }
  // Blocks along the outputs, or ones that do not divide the inputs.
  EXPECT_FALSE(isSolInt4(
      LinearQuantFixture(16, 6, 4, false, 1, 3, 16 * 2, false, 1).weight()));
  EXPECT_FALSE(isSolInt4(
      LinearQuantFixture(15, 6, 4, false, 0, 8, 2 * 6, false, 1).weight()));
}

TEST(QuantizedCheckpoint, LinearQuantBadShapes) {
  LinearQuantFixture f(10, 12, 8, true, 1, 0, 12, true, 2);
  LinearQuantWeight w = f.weight();
  w.codes = std::span(f.packed).first(119);
  EXPECT_ERROR_HAS(dequantizeLinear(w), "bytes of codes");
  w = f.weight();
  w.scales = std::span(f.scales).first(11);
  EXPECT_ERROR_HAS(dequantizeLinear(w), "11 scales where 12");
  w = f.weight();
  w.zeros = std::span(f.packedZeros).first(5);
  EXPECT_ERROR_HAS(dequantizeLinear(w), "zero points");
  w = f.weight();
  w.bits = 2;
  EXPECT_ERROR_HAS(dequantizeLinear(w), "2-bit codes");
}

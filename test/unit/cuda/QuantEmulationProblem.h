//===- QuantEmulationProblem.h - Quantized linears on the CPU ---*- C++ -*-===//
//
// What the CPU emulation tests of the quantized linears share
// (QuantGemvEmulationTest.cpp, QuantSkinnyEmulationTest.cpp): a problem
// with its weights in one of the formats of runtime/support/Quantize.h,
// the float64 reference from the dequantized weights rounded where the
// kernels round, and the comparison. The reference is written
// independently of the kernels' bit tricks; E4M3 values come from the
// host's one definition (runtime/support/Fp8.h, tested on its own).
//
// With `exact` data the inputs are chosen so that every sum is exact in
// fp32 (small integers, power-of-two scales; for fp8 rows whose max |x| is
// 7, so that sx = 1/64 and x / sx is exact in E4M3), and without the norm
// prologue outputs must equal the reference rounded as the epilogue
// rounds. With the norm prologue (fp32 rsqrt) they are held to bf16
// accuracy. Outputs start as NaN poison: an element still NaN was never
// written.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearGemvQuant.cuh"
#include "runtime/support/Fp8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

namespace quant_emulation {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

inline constexpr float kEps = 1e-5f;

inline float bf(float f) { return roundToBf16(f); }

/// A problem of `rows` rows: x [rows, k], quantized W [n, k] in `format`,
/// bias [n], norm weight [k], residual [rows, n]. `exact`: integer x,
/// power-of-two scales, fp8 weights on a coarse grid; else real x and any
/// finite fp8 code.
struct Problem {
  WeightFormat format;
  int rows = 0, n = 0, k = 0, group = 0;
  std::vector<Bf16> x, bias, normW, residual;
  std::vector<std::uint8_t> codes, zeros;
  std::vector<float> scales;
  std::vector<double> w; // dequantized [n, k]

  Problem(WeightFormat format, int rows, int n, int k, int group, bool exact,
          std::uint32_t seed)
      : format(format), rows(rows), n(n), k(k), group(group) {
    std::mt19937 rng(seed);
    auto uniformInt = [&](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    auto real = [&](float lo, float hi) {
      return std::uniform_real_distribution<float>(lo, hi)(rng);
    };
    const bool fp8 = format == WeightFormat::Fp8;
    // fp8 rows span +-7 with a 7 in them (sx = 7 / 448 = 1/64).
    const int xRange = fp8 ? 7 : 3;
    for (int t = 0; t < rows; ++t)
      for (int i = 0; i < k; ++i) {
        float v = exact ? static_cast<float>(uniformInt(-xRange, xRange))
                        : real(-2.0f, 2.0f);
        if (exact && fp8 && i == t % k)
          v = t % 2 ? -7.0f : 7.0f;
        // Some tiny values: E4M3 subnormals once divided by an fp8 sx.
        if (!exact && i % 8 == 3)
          v = std::ldexp(v, -12);
        x.push_back(__float2bfloat16_rn(v));
      }
    for (int i = 0; i < n; ++i)
      bias.push_back(
          __float2bfloat16_rn(static_cast<float>(uniformInt(-3, 3))));
    for (int i = 0; i < k; ++i)
      normW.push_back(__float2bfloat16_rn(real(0.5f, 1.5f)));
    for (int i = 0; i < rows * n; ++i)
      residual.push_back(
          __float2bfloat16_rn(static_cast<float>(uniformInt(-8, 8))));

    auto powerOfTwoScale = [&] { return std::ldexp(1.0f, -uniformInt(0, 2)); };
    w.resize(static_cast<std::size_t>(n) * k);
    if (format == WeightFormat::Int4) {
      const int groups = k / group;
      codes.assign(static_cast<std::size_t>(n) * k / 2, 0);
      for (int j = 0; j < n * groups; ++j) {
        scales.push_back(exact ? powerOfTwoScale() : real(0.001f, 0.1f));
        zeros.push_back(static_cast<std::uint8_t>(uniformInt(0, 15)));
      }
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < k; ++i) {
          const int q = uniformInt(0, 15);
          std::uint8_t &byte = codes[(static_cast<std::size_t>(j) * k + i) / 2];
          byte |= static_cast<std::uint8_t>(i % 2 ? q << 4 : q);
          const int g = j * groups + i / group;
          w[static_cast<std::size_t>(j) * k + i] =
              static_cast<double>(q - zeros[g]) * scales[g];
        }
      return;
    }
    for (int j = 0; j < n; ++j) {
      scales.push_back(exact ? powerOfTwoScale() : real(0.001f, 0.1f));
      for (int i = 0; i < k; ++i) {
        std::uint8_t code;
        double value;
        if (format == WeightFormat::Int8) {
          const int q = uniformInt(-127, 127);
          code = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
          value = q;
        } else {
          // Exact: subnormals m * 2^-9 and multiples of 1/2 up to 4 (the
          // sums stay below 2^24 units of 1/8); else any finite code.
          if (exact) {
            const int pick = uniformInt(-15, 15);
            const float v = std::abs(pick) <= 7
                                ? std::ldexp(static_cast<float>(pick), -9)
                                : 0.5f * (pick > 0 ? pick - 7 : pick + 7);
            code = sol::floatToE4M3(v);
          } else {
            do
              code = static_cast<std::uint8_t>(uniformInt(0, 255));
            while ((code & 0x7f) == 0x7f);
          }
          value = sol::e4m3ToFloat(code);
        }
        codes.push_back(code);
        w[static_cast<std::size_t>(j) * k + i] = value * scales[j];
      }
    }
  }

  /// Row t of x before any fp8 quantization: x, or with `norm` its RMS
  /// norm times normW, bf16(normW * bf16(x * rsqrt(mean(x^2) + eps))) (the
  /// sum of squares in double).
  std::vector<float> row(int t, bool norm) const {
    double ss = 0.0;
    for (int i = 0; i < k; ++i) {
      const double v = __bfloat162float(x[t * k + i]);
      ss += v * v;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / k + kEps));
    std::vector<float> out(k);
    for (int i = 0; i < k; ++i) {
      const float v = __bfloat162float(x[t * k + i]);
      out[i] = norm ? bf(__bfloat162float(normW[i]) * bf(v * inv)) : v;
    }
    return out;
  }

  /// The rows of x the linear sees, as floats: row(t, norm); for fp8 then
  /// quantized, e4m3(x / sx) * sx.
  std::vector<double> input(bool norm) const {
    std::vector<double> out(x.size());
    for (int t = 0; t < rows; ++t) {
      const std::vector<float> row = this->row(t, norm);
      float amax = 0.0f;
      for (float v : row)
        amax = std::max(amax, std::fabs(v));
      float sx = amax / 448.0f;
      sx = sx == 0.0f ? 1.0f : sx;
      for (int i = 0; i < k; ++i)
        out[t * k + i] =
            format == WeightFormat::Fp8
                ? sol::e4m3ToFloat(sol::floatToE4M3(row[i] / sx)) * sx
                : row[i];
    }
    return out;
  }

  /// x . W'^T (+ bias) [rows, n], in double.
  std::vector<double> product(bool norm, bool withBias) const {
    const std::vector<double> xs = input(norm);
    std::vector<double> y(static_cast<std::size_t>(rows) * n);
    for (int t = 0; t < rows; ++t)
      for (int j = 0; j < n; ++j) {
        double s = withBias ? __bfloat162float(bias[j]) : 0.0;
        for (int i = 0; i < k; ++i)
          s += xs[t * k + i] * w[static_cast<std::size_t>(j) * k + i];
        y[static_cast<std::size_t>(t) * n + j] = s;
      }
    return y;
  }
};

/// The launch arguments of a quantized linear over all of `p` into `y`
/// (zero points for int4, the bias and the norm weight where asked).
template <WeightFormat F, typename OutT>
QuantLinearArgs launchArgs(const Problem &p, std::vector<OutT> &y, int k,
                           bool hasBias, bool norm) {
  return {.y = y.data(),
          .x = p.x.data(),
          .w = p.codes.data(),
          .scales = p.scales.data(),
          .zeros = F == WeightFormat::Int4 ? p.zeros.data() : nullptr,
          .bias = hasBias ? p.bias.data() : nullptr,
          .normWeight = norm ? p.normW.data() : nullptr,
          .rows = p.rows,
          .n = p.n,
          .k = k,
          .eps = kEps};
}

/// A NaN that no kernel computes: an element still holding it was never
/// written.
template <typename T> T poison() {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<float>(0x7fc00001u);
  else
    return Bf16{0x7fc1};
}

inline const char *formatName(WeightFormat f) {
  return f == WeightFormat::Int8  ? "int8"
         : f == WeightFormat::Fp8 ? "fp8"
                                  : "int4";
}

/// What a launch over all rows of `p` should write ([rows, cols]; cols =
/// n / 2 for swiglu): the product through the epilogue, rounded where the
/// kernels round; with the norm prologue or inexact data, swiglu's silu in
/// float64.
template <int Epilogue>
std::vector<double> reference(const Problem &p, bool norm, bool withBias,
                              bool exact) {
  const std::vector<double> prod = p.product(norm, withBias);
  const int n = p.n;
  const int cols = Epilogue == kEpilogueSwiglu ? n / 2 : n;
  std::vector<double> ref(static_cast<std::size_t>(p.rows) * cols);
  for (int t = 0; t < p.rows; ++t)
    for (int i = 0; i < cols; ++i) {
      double &out = ref[static_cast<std::size_t>(t) * cols + i];
      if constexpr (Epilogue == kEpilogueSwiglu) {
        const float g = bf(static_cast<float>(prod[t * n + 2 * i]));
        const float u = static_cast<float>(prod[t * n + 2 * i + 1]);
        out = norm || !exact
                  ? g / (1.0 + std::exp(-static_cast<double>(g))) * bf(u)
                  : bf(bf(silu(g)) * bf(u));
      } else if constexpr (Epilogue == kEpilogueResidual) {
        out = asFloat(p.residual[t * n + i]) +
              bf(static_cast<float>(prod[t * n + i]));
      } else {
        out = prod[t * n + i];
      }
    }
  return ref;
}

/// The first ref.size() elements of y (rows of `cols`) against `ref`: none
/// still NaN, each equal to the reference rounded to OutT when `equal`, and
/// within 1e-2 relative L2 error in any case.
template <typename OutT>
void expectOutput(std::span<const OutT> y, std::span<const double> ref,
                  int cols, bool equal) {
  ASSERT_GE(y.size(), ref.size());
  double err = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const float got = asFloat(y[i]);
    ASSERT_FALSE(std::isnan(got)) << "element " << i << " not written";
    if (equal) {
      const float want = std::is_same_v<OutT, float>
                             ? static_cast<float>(ref[i])
                             : bf(static_cast<float>(ref[i]));
      ASSERT_EQ(got, want) << "row " << i / cols << ", column " << i % cols;
    }
    err += (got - ref[i]) * (got - ref[i]);
    norm += ref[i] * ref[i];
  }
  EXPECT_LT(std::sqrt(err / norm), 1e-2);
}

} // namespace quant_emulation

//===- QuantGemvEmulationTest.cpp - linear_gemv_quant on the CPU ----------===//
//
// codegen/kernels/LinearGemvQuant.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation (emulation/CudaEmulation.h, and
// emulation/cuda_fp8.h for the E4M3 conversion), so the kernel's own code
// decides which codes, scales, zeros and activations each lane reads and
// how it dequantizes them. References are float64 from the dequantized
// weights, written independently of the kernel's bit tricks (E4M3 decoded
// arithmetically, encoded by nearest-value search).
//
// Without the norm prologue the inputs are chosen so that every sum is
// exact in fp32 (small integers, power-of-two scales; for fp8 rows whose
// max |x| is 7, so that sx = 1/64 and x / sx is exact in E4M3), and the
// outputs must equal the reference rounded as the epilogue rounds. With
// the norm prologue (fp32 rsqrt) they are held to bf16 accuracy. Outputs
// start as NaN: an element still NaN was never written. Built with
// AddressSanitizer where the build has it, with every array at its exact
// size, so a read of x past `rows`, of codes past the last row, or a write
// past y's end fails.
//
//===----------------------------------------------------------------------===//

#include "LinearGemvQuant.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

constexpr float kEps = 1e-5f;

float bf(float f) { return roundToBf16(f); }

/// The value of E4M3 code `code` (0x7f / 0xff are NaN, never used here).
double e4m3Value(std::uint8_t code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double v =
      e == 0 ? m * std::ldexp(1.0, -9) : (8 + m) * std::ldexp(1.0, e - 10);
  return code & 0x80 ? -v : v;
}

/// The E4M3 code nearest to f (ties to the even code), saturating at 448.
std::uint8_t e4m3Nearest(float f) {
  const double a = std::fabs(static_cast<double>(f));
  int best = 0;
  double bestErr = std::numeric_limits<double>::infinity();
  for (int code = 0; code <= 0x7e; ++code) {
    const double err =
        std::fabs(e4m3Value(static_cast<std::uint8_t>(code)) - a);
    if (err < bestErr || (err == bestErr && code % 2 == 0)) {
      best = code;
      bestErr = err;
    }
  }
  return static_cast<std::uint8_t>((std::signbit(f) ? 0x80 : 0) | best);
}

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
            code = e4m3Nearest(v);
          } else {
            do
              code = static_cast<std::uint8_t>(uniformInt(0, 255));
            while ((code & 0x7f) == 0x7f);
          }
          value = e4m3Value(code);
        }
        codes.push_back(code);
        w[static_cast<std::size_t>(j) * k + i] = value * scales[j];
      }
    }
  }

  /// The rows of x the linear sees, as floats: x, or its RMS norm times
  /// normW; for fp8 then quantized, e4m3(x / sx) * sx.
  std::vector<double> input(bool norm) const {
    std::vector<double> out(x.size());
    for (int t = 0; t < rows; ++t) {
      double ss = 0.0;
      for (int i = 0; i < k; ++i) {
        const double v = __bfloat162float(x[t * k + i]);
        ss += v * v;
      }
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / k + kEps));
      std::vector<float> row(k);
      float amax = 0.0f;
      for (int i = 0; i < k; ++i) {
        const float v = __bfloat162float(x[t * k + i]);
        row[i] = norm ? bf(__bfloat162float(normW[i]) * bf(v * inv)) : v;
        amax = std::max(amax, std::fabs(row[i]));
      }
      float sx = amax / 448.0f;
      sx = sx == 0.0f ? 1.0f : sx;
      for (int i = 0; i < k; ++i)
        out[t * k + i] = format == WeightFormat::Fp8
                             ? e4m3Value(e4m3Nearest(row[i] / sx)) * sx
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

/// A NaN that no kernel computes: an element still holding it was never
/// written.
template <typename T> T poison() {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<float>(0x7fc00001u);
  else
    return Bf16{0x7fc1};
}

/// Runs linear_gemv_quant<...> over all of `p` on the emulated GPU.
template <WeightFormat F, int K, int MaxRows, int R, int WK, typename OutT,
          bool HasBias, int Epilogue, bool Norm, int G>
void launch(const Problem &p, std::vector<OutT> &y) {
  ASSERT_EQ(p.k, K);
  ASSERT_LE(p.rows, MaxRows);
  // Shared memory starts as NaNs: what the kernel reads before writing
  // would poison its results.
  const bool shared = Norm || F == WeightFormat::Fp8;
  std::vector<uint4> sharedMemory(shared ? MaxRows * K * 2 / 16 : 0,
                                  uint4{~0u, ~0u, ~0u, ~0u});
  cuda_emulation::dynamicShared =
      reinterpret_cast<unsigned char *>(sharedMemory.data());
  const int blocks = ceilDiv(p.n, (8 / WK) * R);
  const QuantLinearArgs args{.y = y.data(),
                             .x = p.x.data(),
                             .w = p.codes.data(),
                             .scales = p.scales.data(),
                             .zeros = F == WeightFormat::Int4 ? p.zeros.data()
                                                              : nullptr,
                             .bias = HasBias ? p.bias.data() : nullptr,
                             .normWeight = Norm ? p.normW.data() : nullptr,
                             .rows = p.rows,
                             .n = p.n,
                             .k = K,
                             .eps = kEps};
  cuda_emulation::launch(blocks, kGemvThreads, [&] {
    linear_gemv_quant<F, K, MaxRows, R, WK, OutT, HasBias, Epilogue, Norm, G>(
        args);
  });
}

const char *formatName(WeightFormat f) {
  return f == WeightFormat::Int8  ? "int8"
         : f == WeightFormat::Fp8 ? "fp8"
                                  : "int4";
}

/// One launch against the reference: exact equality without the norm
/// prologue (and `exact` data), bf16 accuracy with it.
template <WeightFormat F, int K, int MaxRows, int R, int WK, typename OutT,
          bool HasBias, int Epilogue, bool Norm, int G>
void expectLinear(int rows, int n, bool exact, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << formatName(F) << " K " << K << " G " << G << " MaxRows "
               << MaxRows << " R " << R << " WK " << WK << " rows " << rows
               << " N " << n << " bias " << HasBias << " epilogue " << Epilogue
               << " norm " << Norm << " fp32 "
               << (std::is_same_v<OutT, float>) << " exact " << exact);
  const Problem p(F, rows, n, K, G, exact, seed);
  const int cols = Epilogue == kEpilogueSwiglu ? n / 2 : n;
  std::vector<OutT> y(static_cast<std::size_t>(rows) * cols, poison<OutT>());
  if constexpr (Epilogue == kEpilogueResidual)
    y = p.residual;
  launch<F, K, MaxRows, R, WK, OutT, HasBias, Epilogue, Norm, G>(p, y);
  const std::vector<double> prod = p.product(Norm, HasBias);

  // The reference rounded where the kernel rounds.
  std::vector<double> ref(y.size());
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < cols; ++i) {
      double &out = ref[static_cast<std::size_t>(t) * cols + i];
      if constexpr (Epilogue == kEpilogueSwiglu) {
        const float g = bf(static_cast<float>(prod[t * n + 2 * i]));
        const float u = static_cast<float>(prod[t * n + 2 * i + 1]);
        out = Norm || !exact
                  ? g / (1.0 + std::exp(-static_cast<double>(g))) * bf(u)
                  : bf(bf(silu(g)) * bf(u));
      } else if constexpr (Epilogue == kEpilogueResidual) {
        out = asFloat(p.residual[t * n + i]) +
              bf(static_cast<float>(prod[t * n + i]));
      } else {
        out = prod[t * n + i];
      }
    }

  double err = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const float got = asFloat(y[i]);
    ASSERT_FALSE(std::isnan(got)) << "element " << i << " not written";
    if (exact && !Norm) {
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

/// Every epilogue x norm prologue x bias of one layout.
template <WeightFormat F, int K, int MaxRows, int R, int WK, int G>
void expectAllVariants(int rows, int n, std::uint32_t seed) {
  using B = Bf16;
  expectLinear<F, K, MaxRows, R, WK, B, false, kEpilogueNone, false, G>(
      rows, n, true, seed);
  expectLinear<F, K, MaxRows, R, WK, B, true, kEpilogueNone, false, G>(
      rows, n, true, seed + 1);
  expectLinear<F, K, MaxRows, R, WK, B, false, kEpilogueResidual, false, G>(
      rows, n, true, seed + 2);
  expectLinear<F, K, MaxRows, R, WK, B, true, kEpilogueResidual, false, G>(
      rows, n, true, seed + 3);
  expectLinear<F, K, MaxRows, R, WK, B, false, kEpilogueSwiglu, false, G>(
      rows, n, true, seed + 4);
  expectLinear<F, K, MaxRows, R, WK, B, true, kEpilogueSwiglu, false, G>(
      rows, n, true, seed + 5);
  expectLinear<F, K, MaxRows, R, WK, B, false, kEpilogueNone, true, G>(
      rows, n, true, seed + 6);
  expectLinear<F, K, MaxRows, R, WK, B, true, kEpilogueNone, true, G>(
      rows, n, true, seed + 7);
  expectLinear<F, K, MaxRows, R, WK, B, false, kEpilogueResidual, true, G>(
      rows, n, true, seed + 8);
  expectLinear<F, K, MaxRows, R, WK, B, true, kEpilogueResidual, true, G>(
      rows, n, true, seed + 9);
  expectLinear<F, K, MaxRows, R, WK, B, false, kEpilogueSwiglu, true, G>(
      rows, n, true, seed + 10);
  expectLinear<F, K, MaxRows, R, WK, B, true, kEpilogueSwiglu, true, G>(
      rows, n, true, seed + 11);
}

// One row: 2 weight rows a warp, K over 4 warps (K = 256 is 16 int8
// vectors: four lanes a warp); N = 72 leaves a partial last block.
TEST(QuantGemvEmulation, Int8OneRow) {
  expectAllVariants<WeightFormat::Int8, 256, 1, 2, 4, 0>(1, 72, 100);
}
// Three rows of at most four: 4 warps along N, K over 2 warps.
TEST(QuantGemvEmulation, Int8ThreeRows) {
  expectAllVariants<WeightFormat::Int8, 512, 4, 2, 2, 0>(3, 64, 200);
}
TEST(QuantGemvEmulation, Int8EightRows) {
  expectAllVariants<WeightFormat::Int8, 256, 8, 2, 1, 0>(8, 100, 300);
}

TEST(QuantGemvEmulation, Fp8OneRow) {
  expectAllVariants<WeightFormat::Fp8, 512, 1, 2, 4, 0>(1, 72, 400);
}
TEST(QuantGemvEmulation, Fp8ThreeRows) {
  expectAllVariants<WeightFormat::Fp8, 256, 4, 2, 2, 0>(3, 64, 500);
}
TEST(QuantGemvEmulation, Fp8EightRows) {
  expectAllVariants<WeightFormat::Fp8, 512, 8, 2, 1, 0>(8, 100, 600);
}

// int4: groups of 128 and of 64 (a vector of 32 values never straddles
// two).
TEST(QuantGemvEmulation, Int4OneRow) {
  expectAllVariants<WeightFormat::Int4, 512, 1, 2, 4, 128>(1, 72, 700);
}
TEST(QuantGemvEmulation, Int4ThreeRows) {
  expectAllVariants<WeightFormat::Int4, 256, 4, 2, 2, 64>(3, 64, 800);
}
TEST(QuantGemvEmulation, Int4EightRows) {
  expectAllVariants<WeightFormat::Int4, 512, 8, 2, 1, 128>(8, 100, 900);
}

// Long K: several passes of the unrolled loop, a slice whose last pass has
// one lane (fp8: 129 vectors over 2 warps), int4 groups of 416 = 13 * 32
// (not a power of two) and one group a row (G = K).
TEST(QuantGemvEmulation, LongSlicesAndOddGroups) {
  using B = Bf16;
  // 128 vectors, one warp along K, 8 rows a warp: 4 passes, 2 unrolled.
  expectLinear<WeightFormat::Int8, 2048, 1, 8, 1, B, true, kEpilogueNone, false,
               0>(1, 40, true, 1000);
  expectLinear<WeightFormat::Fp8, 2064, 2, 4, 2, B, false, kEpilogueResidual,
               false, 0>(2, 24, true, 1001);
  expectLinear<WeightFormat::Int4, 2080, 1, 4, 1, B, false, kEpilogueNone,
               false, 416>(1, 36, true, 1002);
  expectLinear<WeightFormat::Int4, 384, 2, 4, 1, B, true, kEpilogueSwiglu, true,
               384>(2, 48, true, 1003);
  expectLinear<WeightFormat::Int4, 384, 8, 4, 2, B, false, kEpilogueNone, false,
               384>(5, 40, true, 1004);
}

// fp32 outputs (an LM head behind the final norm), and random reals with
// any fp8 code (subnormals included), where the fp32 sums are not exact:
// held to 1e-5 of the sum of magnitudes.
TEST(QuantGemvEmulation, Fp32OutputAndInexactData) {
  expectLinear<WeightFormat::Int8, 256, 4, 4, 2, float, false, kEpilogueNone,
               true, 0>(4, 40, true, 1100);
  expectLinear<WeightFormat::Fp8, 256, 8, 2, 4, float, true, kEpilogueNone,
               true, 0>(7, 40, true, 1101);
  expectLinear<WeightFormat::Int4, 512, 1, 2, 2, float, false, kEpilogueNone,
               true, 128>(1, 40, true, 1102);

  const int rows = 3, n = 33, k = 512;
  Problem p(WeightFormat::Fp8, rows, n, k, 0, false, 1103);
  // Row 2: one large value against zero weights, the rest small enough to
  // become E4M3 subnormals (|x / sx| < 2^-6) or small normals.
  for (int i = 0; i < k; ++i)
    p.x[2 * k + i] = __float2bfloat16_rn(
        i == 0 ? 2.0f : std::ldexp(__bfloat162float(p.x[2 * k + i]), -7));
  for (int j = 0; j < n; ++j) {
    p.codes[j * k] = 0;
    p.w[j * k] = 0.0;
  }
  std::vector<float> y(static_cast<std::size_t>(rows) * n, poison<float>());
  launch<WeightFormat::Fp8, 512, 4, 2, 2, float, true, kEpilogueNone, false, 0>(
      p, y);
  const std::vector<double> ref = p.product(false, true);
  const std::vector<double> xs = p.input(false);
  for (int t = 0; t < rows; ++t)
    for (int j = 0; j < n; ++j) {
      double magnitude = std::fabs(__bfloat162float(p.bias[j]));
      for (int i = 0; i < k; ++i)
        magnitude += std::fabs(xs[t * k + i] * p.w[j * k + i]);
      ASSERT_NEAR(y[t * n + j], ref[t * n + j], 1e-5 * magnitude)
          << "row " << t << ", column " << j;
    }
}

} // namespace

//===- QuantGemvEmulationTest.cpp - linear_gemv_quant on the CPU ----------===//
//
// codegen/kernels/LinearGemvQuant.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation (emulation/CudaEmulation.h, and
// emulation/cuda_fp8.h for the E4M3 conversion), so the kernel's own code
// decides which codes, scales, zeros and activations each lane reads and
// how it dequantizes them. The problems, their float64 references and the
// comparison (exact where the data makes every sum exact, bf16 accuracy
// under the norm prologue, outputs poisoned with NaN) are
// QuantEmulationProblem.h's. Built with AddressSanitizer where the build
// has it, with every array at its exact size, so a read of x past `rows`,
// of codes past the last row, or a write past y's end fails.
//
//===----------------------------------------------------------------------===//

#include "LinearGemvQuant.cuh"
#include "QuantEmulationProblem.h"
#include "QuantizeActivations.cuh"

#include <gtest/gtest.h>

#include <bit>
#include <random>

namespace {

using namespace quant_emulation;

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
  const QuantLinearArgs args = launchArgs<F>(p, y, K, HasBias, Norm);
  cuda_emulation::launch(blocks, kGemvThreads, [&] {
    linear_gemv_quant<F, K, MaxRows, R, WK, OutT, HasBias, Epilogue, Norm, G>(
        args);
  });
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
  expectOutput<OutT>(y, reference<Epilogue>(p, Norm, HasBias, exact), cols,
                     exact && !Norm);
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

// The fp8 activation rule divides x by its row's scale; the kernels
// multiply by the reciprocal and correct with one FMA. The same E4M3 code
// for every bf16 x within the row's amax and the scales of every bf16
// amax, bit for bit the same quotient wherever E4M3 rounding could tell
// them apart (|x / scale| >= 2^-11; far below, the FMA's remainder or the
// quotient can underflow) and for zeros (their sign), and a plain division
// outside the fast range.
TEST(QuantGemvEmulation, Fp8DividerMatchesDivision) {
  std::mt19937 rng(1200);
  auto bf16 = [](std::uint32_t bits) {
    return std::bit_cast<float>((bits & 0xffffu) << 16);
  };
  long long checked = 0;
  for (int trial = 0; trial < 40000; ++trial) {
    const float amax = std::fabs(bf16(rng()));
    if (!(amax > 0.0f) || !std::isfinite(amax))
      continue;
    const float scale = amax / 448.0f;
    if (!quant_gemv::hasFastFp8Division(scale))
      continue; // the kernels divide
    const quant_gemv::Fp8FastDivision divide(scale);
    for (int i = 0; i < 64; ++i) {
      // Any bf16 of at most amax, scaled down now and then to reach
      // subnormal quotients.
      float x = bf16(rng());
      if (!std::isfinite(x))
        continue;
      if (std::fabs(x) > amax || i % 4 == 0)
        x = std::ldexp(x, -static_cast<int>(rng() % 140));
      if (std::fabs(x) > amax)
        continue;
      const float q = divide(x);
      ASSERT_EQ(sol::floatToE4M3(q), sol::floatToE4M3(x / scale))
          << "x " << x << " scale " << scale;
      if (std::fabs(x / scale) >= 0x1p-11f)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(q),
                  std::bit_cast<std::uint32_t>(x / scale))
            << "x " << x << " scale " << scale;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000000);
  // Outside the fast range the kernels divide.
  for (float scale : {0x1p-120f, 0x1p120f, INFINITY})
    EXPECT_FALSE(quant_gemv::hasFastFp8Division(scale)) << scale;
  EXPECT_TRUE(std::signbit(quant_gemv::Fp8FastDivision(0.5f)(-0.0f)));
}

// quantize_rows_fp8 (the activations of fp8 plans' W8A8 GEMMs on cuBLASLt):
// every code is the host rule's e4m3(x / s), a zero row takes scale 1, and
// each row's scale sits once in every 128-k block, rows fastest; and
// repeat_scales lays the weights' per-row scales out the same way.
TEST(QuantGemvEmulation, QuantizeRowsFp8AndRepeatScales) {
  constexpr int K = 384, kBlocks = K / 128, rows = 5;
  std::mt19937 rng(1300);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<bf16> x(rows * K);
  for (bf16 &v : x)
    v = __float2bfloat16_rn(dist(rng));
  for (int i = 0; i < K; ++i)
    x[3 * K + i] = __float2bfloat16_rn(i % 2 ? 0.0f : -0.0f);
  std::vector<unsigned char> codes(rows * K, 0xAA);
  std::vector<float> scales(kBlocks * rows, std::nanf(""));
  const QuantizeRowsArgs args{.codes = codes.data(),
                              .scales = scales.data(),
                              .x = x.data(),
                              .rows = rows};
  cuda_emulation::launch(rows, kGemvThreads,
                         [&] { quantize_rows_fp8<K>(args); });
  for (int t = 0; t < rows; ++t) {
    float amax = 0.0f;
    for (int k = 0; k < K; ++k)
      amax = std::max(amax, std::fabs(__bfloat162float(x[t * K + k])));
    const float s = amax == 0.0f ? 1.0f : amax / 448.0f;
    for (int b = 0; b < kBlocks; ++b)
      EXPECT_EQ(scales[b * rows + t], s) << "row " << t << " block " << b;
    for (int k = 0; k < K; ++k)
      ASSERT_EQ(codes[t * K + k],
                sol::floatToE4M3(__bfloat162float(x[t * K + k]) / s))
          << "row " << t << " k " << k;
  }

  // A row of more vectors than the block has threads (the second pass of
  // each thread's registers covers part of the row only).
  constexpr int kLong = 2176, kLongBlocks = kLong / 128, kLongRows = 3;
  std::vector<bf16> xl(kLongRows * kLong);
  for (bf16 &v : xl)
    v = __float2bfloat16_rn(dist(rng));
  xl[kLong + 2175] = __float2bfloat16_rn(900.0f); // the row's maximum, last
  std::vector<unsigned char> longCodes(kLongRows * kLong, 0xAA);
  std::vector<float> longScales(kLongBlocks * kLongRows, std::nanf(""));
  const QuantizeRowsArgs longArgs{.codes = longCodes.data(),
                                  .scales = longScales.data(),
                                  .x = xl.data(),
                                  .rows = kLongRows};
  cuda_emulation::launch(kLongRows, kGemvThreads,
                         [&] { quantize_rows_fp8<kLong>(longArgs); });
  for (int t = 0; t < kLongRows; ++t) {
    float amax = 0.0f;
    for (int k = 0; k < kLong; ++k)
      amax = std::max(amax, std::fabs(__bfloat162float(xl[t * kLong + k])));
    const float s = amax / 448.0f;
    for (int b = 0; b < kLongBlocks; ++b)
      EXPECT_EQ(longScales[b * kLongRows + t], s) << "row " << t;
    for (int k = 0; k < kLong; ++k)
      ASSERT_EQ(longCodes[t * kLong + k],
                sol::floatToE4M3(__bfloat162float(xl[t * kLong + k]) / s))
          << "row " << t << " k " << k;
  }

  const std::vector<float> rowScales = {0.5f, 2.0f, 3.0f, 0.25f, 7.0f};
  std::vector<float> repeated(rowScales.size() * 3, std::nanf(""));
  const RepeatScalesArgs repeat{.out = repeated.data(),
                                .in = rowScales.data(),
                                .count = static_cast<int>(rowScales.size()),
                                .repeats = 3};
  cuda_emulation::launch(1, 256, [&] { repeat_scales(repeat); });
  for (int r = 0; r < 3; ++r)
    for (std::size_t n = 0; n < rowScales.size(); ++n)
      EXPECT_EQ(repeated[r * rowScales.size() + n], rowScales[n]);
}

// rms_norm_quantize_fp8 (a NormLinear's rows for the W8A8 GEMM): the codes
// and scales of quantize_rows_fp8 over the normalised rows of the problem's
// reference (Problem::row, its sum of squares in float64). The kernel sums
// in float32 in its own order, so a normalised value may round to the
// neighbouring bf16 now and then: at most 1% of the codes may differ, by
// one step of the same sign, and the scales by one bf16 step.
TEST(QuantGemvEmulation, RmsNormQuantizeFp8) {
  for (const int rows : {1, 5}) {
    constexpr int K = 2176, kBlocks = K / 128;
    const Problem p(WeightFormat::Fp8, rows, 8, K, 0, false, 1400 + rows);
    std::vector<unsigned char> codes(rows * K, 0xAA);
    std::vector<float> scales(kBlocks * rows, std::nanf(""));
    const NormQuantizeRowsArgs args{.codes = codes.data(),
                                    .scales = scales.data(),
                                    .x = p.x.data(),
                                    .weight = p.normW.data(),
                                    .eps = kEps,
                                    .rows = rows};
    cuda_emulation::launch(rows, kGemvThreads,
                           [&] { rms_norm_quantize_fp8<K>(args); });
    int differing = 0;
    for (int t = 0; t < rows; ++t) {
      const std::vector<float> normed = p.row(t, true);
      float amax = 0.0f;
      for (float v : normed)
        amax = std::max(amax, std::fabs(v));
      const float s = amax / 448.0f;
      for (int b = 0; b < kBlocks; ++b)
        EXPECT_NEAR(scales[b * rows + t], s, s / 128.0f) << "row " << t;
      for (int k = 0; k < K; ++k) {
        const unsigned char want = sol::floatToE4M3(normed[k] / s);
        const unsigned char got = codes[t * K + k];
        if (got == want)
          continue;
        ++differing;
        ASSERT_EQ(got & 0x80, want & 0x80) << "row " << t << " k " << k;
        ASSERT_LE(std::abs((got & 0x7f) - (want & 0x7f)), 1)
            << "row " << t << " k " << k;
      }
    }
    EXPECT_LE(differing, rows * K / 100) << rows << " rows";
  }
}

} // namespace

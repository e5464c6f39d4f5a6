//===- QuantSkinnyEmulationTest.cpp - linear_skinny_quant on the CPU ------===//
//
// codegen/kernels/LinearSkinnyQuant.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation (emulation/CudaEmulation.h), with the
// mma stand-ins of emulation/TensorCore.cuh (bf16 m16n8k16 and E4M3
// m16n8k32, whole matrices gathered from the 32 lanes' registers by the PTX
// ISA's fragment tables) and emulation/cuda_fp8.h for the activation
// quantization. So the kernel's own code decides which codes, scales,
// zeros and activations each lane loads, how it dequantizes them and where
// its products land: a wrong k permutation, nibble order, group or token
// scale, partial k step, ring slot, clamped row, reduction index or
// epilogue shows up as a wrong output. The problems, their float64
// references and the comparison are QuantEmulationProblem.h's (exact
// equality where the data makes every sum exact, bf16 accuracy under the
// norm prologue). Outputs start as NaN poison and have a poisoned guard row
// after the last, which must stay untouched; shared memory starts as NaNs.
// Built with AddressSanitizer where the build has it, with x and the codes
// at their exact sizes, so a read of x past `rows` or of codes past the
// last row fails. The GPU's arithmetic is checked by sol-kernel-check
// --only quant_skinny.
//
//===----------------------------------------------------------------------===//

#include "LinearSkinnyQuant.cuh"
#include "QuantEmulationProblem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace {

using namespace quant_emulation;

/// Runs linear_skinny_quant<...> over all of `p` on the emulated GPU.
template <WeightFormat F, int K, int MaxRows, int Tiles, int WK, typename OutT,
          bool HasBias, int Epilogue, bool Norm, int G>
void launch(const Problem &p, std::vector<OutT> &y) {
  using Shape = QuantSkinnyShape<F, K, MaxRows, Tiles, WK, Norm>;
  ASSERT_EQ(p.k, K);
  ASSERT_LE(p.rows, MaxRows);
  std::vector<uint4> shared(ceilDiv(Shape::kSharedBytes, 16),
                            uint4{~0u, ~0u, ~0u, ~0u});
  cuda_emulation::dynamicShared =
      reinterpret_cast<unsigned char *>(shared.data());
  const QuantLinearArgs args = launchArgs<F>(p, y, K, HasBias, Norm);
  cuda_emulation::launch(ceilDiv(p.n, Shape::kFeatures), kSkinnyThreads, [&] {
    linear_skinny_quant<F, K, MaxRows, Tiles, WK, OutT, HasBias, Epilogue, Norm,
                        G>(args);
  });
}

/// One launch against the reference: exact equality without the norm
/// prologue (and `exact` data), bf16 accuracy otherwise; the guard row
/// after the last keeps its poison.
template <WeightFormat F, int K, int MaxRows, int Tiles, int WK, typename OutT,
          bool HasBias, int Epilogue, bool Norm, int G>
void expectLinear(int rows, int n, bool exact, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << formatName(F) << " K " << K << " G " << G << " MaxRows "
               << MaxRows << " Tiles " << Tiles << " WK " << WK << " rows "
               << rows << " N " << n << " bias " << HasBias << " epilogue "
               << Epilogue << " norm " << Norm << " fp32 "
               << (std::is_same_v<OutT, float>) << " exact " << exact);
  const Problem p(F, rows, n, K, G, exact, seed);
  const int cols = Epilogue == kEpilogueSwiglu ? n / 2 : n;
  const std::size_t used = static_cast<std::size_t>(rows) * cols;
  std::vector<OutT> y(used + cols, poison<OutT>());
  if constexpr (Epilogue == kEpilogueResidual)
    std::copy(p.residual.begin(), p.residual.end(), y.begin());
  launch<F, K, MaxRows, Tiles, WK, OutT, HasBias, Epilogue, Norm, G>(p, y);
  const OutT guard = poison<OutT>();
  for (int i = 0; i < cols; ++i)
    ASSERT_EQ(std::memcmp(&y[used + i], &guard, sizeof(OutT)), 0)
        << "guard row, column " << i << " written";
  expectOutput<OutT>(std::span<const OutT>(y).first(used),
                     reference<Epilogue>(p, Norm, HasBias, exact), cols,
                     exact && !Norm);
}

/// Every epilogue, with and without the norm prologue, bias on half of them.
template <WeightFormat F, int K, int MaxRows, int Tiles, int WK, int G>
void expectAllVariants(int rows, int n, std::uint32_t seed) {
  using B = Bf16;
  constexpr int kNone = kEpilogueNone, kRes = kEpilogueResidual,
                kSwiglu = kEpilogueSwiglu;
  expectLinear<F, K, MaxRows, Tiles, WK, B, false, kNone, false, G>(rows, n,
                                                                    true, seed);
  expectLinear<F, K, MaxRows, Tiles, WK, B, true, kRes, false, G>(rows, n, true,
                                                                  seed + 1);
  expectLinear<F, K, MaxRows, Tiles, WK, B, false, kSwiglu, false, G>(
      rows, n, true, seed + 2);
  expectLinear<F, K, MaxRows, Tiles, WK, B, true, kNone, true, G>(rows, n, true,
                                                                  seed + 3);
  expectLinear<F, K, MaxRows, Tiles, WK, B, false, kRes, true, G>(rows, n, true,
                                                                  seed + 4);
  expectLinear<F, K, MaxRows, Tiles, WK, B, true, kSwiglu, true, G>(
      rows, n, true, seed + 5);
}

/// Rows 1 and 8 (MaxRows 8) and 16 (MaxRows 16), with and without the norm
/// prologue, fp32 output among them.
template <WeightFormat F, int K, int Tiles, int WK, int G>
void expectRowCounts(int n, std::uint32_t seed) {
  using B = Bf16;
  expectLinear<F, K, 8, Tiles, WK, float, true, kEpilogueNone, false, G>(
      1, n, true, seed);
  expectLinear<F, K, 8, Tiles, WK, B, false, kEpilogueSwiglu, true, G>(
      1, n, true, seed + 1);
  expectLinear<F, K, 8, Tiles, WK, B, false, kEpilogueResidual, false, G>(
      8, n, true, seed + 2);
  expectLinear<F, K, 8, Tiles, WK, float, false, kEpilogueNone, true, G>(
      8, n, true, seed + 3);
  expectLinear<F, K, 16, Tiles, WK, B, true, kEpilogueSwiglu, false, G>(
      16, n, true, seed + 4);
  expectLinear<F, K, 16, Tiles, WK, B, false, kEpilogueResidual, true, G>(
      16, n, true, seed + 5);
}

// int8: 3 rows of 8 over K = 256 (one 64-k step a warp, K over 4 warps,
// 32 features a block, N = 72 three blocks, the last partial); 9 rows of
// 16 over K = 208 (13 vectors of 16 codes: the second warp along K has a
// partial step), two tiles a warp, 128 features a block for N = 100.
TEST(QuantSkinnyEmulation, Int8) {
  expectAllVariants<WeightFormat::Int8, 256, 8, 1, 4, 0>(3, 72, 100);
  expectAllVariants<WeightFormat::Int8, 208, 16, 2, 2, 0>(9, 100, 110);
  expectRowCounts<WeightFormat::Int8, 256, 2, 8, 0>(40, 120);
}

// int4: groups of 128 (a step each) and 256 (two steps), one group a row
// (G = K); K = 384 over 8 warps leaves five warps without a step.
TEST(QuantSkinnyEmulation, Int4) {
  expectAllVariants<WeightFormat::Int4, 512, 8, 1, 2, 128>(3, 72, 200);
  expectAllVariants<WeightFormat::Int4, 384, 16, 2, 8, 128>(9, 40, 210);
  expectRowCounts<WeightFormat::Int4, 512, 1, 1, 256>(24, 220);
  expectLinear<WeightFormat::Int4, 256, 16, 1, 4, Bf16, true, kEpilogueNone,
               false, 256>(13, 40, true, 230);
}

// fp8 on the E4M3 mma: x quantized in the kernel, from global memory or
// from the norm prologue's rows.
TEST(QuantSkinnyEmulation, Fp8) {
  expectAllVariants<WeightFormat::Fp8, 256, 8, 1, 4, 0>(3, 72, 300);
  expectAllVariants<WeightFormat::Fp8, 208, 16, 2, 2, 0>(9, 100, 310);
  expectRowCounts<WeightFormat::Fp8, 512, 2, 4, 0>(72, 320);
}

// Long K slices through the ring: refills of codes and of x, and a last
// pass shorter than the ring (int8 and fp8 K = 1216, 19 steps on one warp
// along K; int4 K = 1280, 10 steps), at 8 and 16 rows.
TEST(QuantSkinnyEmulation, RingRefillsAndPartialPasses) {
  using B = Bf16;
  expectLinear<WeightFormat::Int8, 1216, 8, 1, 1, float, true, kEpilogueNone,
               false, 0>(5, 24, true, 400);
  expectLinear<WeightFormat::Int8, 1216, 16, 1, 1, B, false, kEpilogueResidual,
               false, 0>(14, 24, true, 401);
  expectLinear<WeightFormat::Int4, 1280, 8, 1, 1, float, false, kEpilogueNone,
               false, 128>(6, 24, true, 402);
  expectLinear<WeightFormat::Int4, 1280, 16, 2, 2, B, true, kEpilogueSwiglu,
               false, 640>(16, 32, true, 403);
  expectLinear<WeightFormat::Fp8, 1216, 8, 1, 1, float, false, kEpilogueNone,
               false, 0>(8, 24, true, 404);
  expectLinear<WeightFormat::Fp8, 1216, 16, 2, 1, B, true, kEpilogueResidual,
               true, 0>(11, 40, true, 405);
}

// Random reals (any finite fp8 code, E4M3 subnormal activations, int4
// scales that are not powers of two): held to bf16 accuracy.
TEST(QuantSkinnyEmulation, InexactData) {
  expectLinear<WeightFormat::Int8, 512, 16, 1, 8, float, true, kEpilogueNone,
               false, 0>(10, 40, false, 500);
  expectLinear<WeightFormat::Int4, 512, 8, 2, 4, float, false, kEpilogueNone,
               true, 128>(7, 40, false, 501);
  expectLinear<WeightFormat::Fp8, 512, 16, 1, 2, float, false, kEpilogueNone,
               false, 0>(12, 40, false, 502);
}

} // namespace

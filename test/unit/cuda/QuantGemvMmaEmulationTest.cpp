//===- QuantGemvMmaEmulationTest.cpp - linear_gemv_quant_mma on the CPU ---===//
//
// codegen/kernels/LinearGemvQuantMma.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation and the mma.sync stand-in built from the
// PTX fragment tables (emulation/TensorCore.cuh), on QuantEmulationProblem.h's
// int4 problems and references: exact equality where the data makes every
// sum exact, bf16 accuracy under the norm prologue, outputs poisoned with
// NaN and a guard element past them, shared memory filled with NaN before
// the launch. The cases cover every split of a block's warps into tiles and
// slices of K, slices of unequal length, a ring deeper than a slice, groups
// of several 128-k blocks, and a partial last tile.
//
//===----------------------------------------------------------------------===//

#include "LinearGemvQuantMma.cuh"
#include "QuantEmulationProblem.h"

#include <gtest/gtest.h>

namespace {

using namespace quant_emulation;

template <int K, int T, int S, int D, typename OutT, bool HasBias, int Epilogue,
          bool Norm, int G>
void expectMma(int n, bool exact, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "K " << K << " G " << G << " tiles " << T << " slices " << S
               << " depth " << D << " N " << n << " bias " << HasBias
               << " epilogue " << Epilogue << " norm " << Norm << " fp32 "
               << (std::is_same_v<OutT, float>) << " exact " << exact);
  const Problem p(WeightFormat::Int4, 1, n, K, G, exact, seed);
  const int cols = Epilogue == kEpilogueSwiglu ? n / 2 : n;
  std::vector<OutT> y(static_cast<std::size_t>(cols) + 1, poison<OutT>());
  if constexpr (Epilogue == kEpilogueResidual) {
    std::copy(p.residual.begin(), p.residual.end(), y.begin());
  }
  constexpr int kBytes = quant_gemv_mma::sharedBytes<K, Norm>();
  std::vector<uint4> sharedMemory(kBytes / 16, uint4{~0u, ~0u, ~0u, ~0u});
  cuda_emulation::dynamicShared =
      reinterpret_cast<unsigned char *>(sharedMemory.data());
  const QuantLinearArgs args =
      launchArgs<WeightFormat::Int4>(p, y, K, HasBias, Norm);
  cuda_emulation::launch(ceilDiv(n, 16 * T), kGemvThreads, [&] {
    linear_gemv_quant_mma<K, T, S, D, OutT, HasBias, Epilogue, Norm, G>(args);
  });
  expectOutput<OutT>(y, reference<Epilogue>(p, Norm, HasBias, exact), cols,
                     exact && !Norm);
  EXPECT_TRUE(std::isnan(asFloat(y.back()))) << "wrote past the output";
}

/// Every epilogue x norm prologue x bias of one block geometry.
template <int K, int T, int S, int D, int G>
void expectAllVariants(int n, std::uint32_t seed) {
  using B = Bf16;
  expectMma<K, T, S, D, B, false, kEpilogueNone, false, G>(n, true, seed);
  expectMma<K, T, S, D, B, true, kEpilogueNone, false, G>(n, true, seed + 1);
  expectMma<K, T, S, D, B, false, kEpilogueResidual, false, G>(n, true,
                                                               seed + 2);
  expectMma<K, T, S, D, B, true, kEpilogueSwiglu, false, G>(n, true, seed + 3);
  expectMma<K, T, S, D, B, false, kEpilogueNone, true, G>(n, true, seed + 4);
  expectMma<K, T, S, D, B, true, kEpilogueResidual, true, G>(n, true, seed + 5);
  expectMma<K, T, S, D, B, false, kEpilogueSwiglu, true, G>(n, true, seed + 6);
}

// K = 1,024 (8 blocks of 128): one tile of 8 slices (one block each), two
// tiles of 4 (two each), four tiles of 2 (four each, a ring deeper than
// the slice); N = 72 leaves a partial last tile.
TEST(QuantGemvMmaEmulation, EverySplitOfTheWarps) {
  expectAllVariants<1024, 1, 8, 2, 128>(72, 100);
  expectAllVariants<1024, 2, 4, 4, 128>(72, 200);
  expectAllVariants<1024, 4, 2, 6, 128>(72, 300);
}

// 1,408 = 11 blocks: slices of 1 and 2 blocks over 8 warps, 5 and 6 over 2;
// groups of 128 and of 384 (three blocks a group, K = 1,152).
TEST(QuantGemvMmaEmulation, UnevenSlicesAndLongGroups) {
  expectMma<1408, 1, 8, 4, Bf16, true, kEpilogueNone, false, 128>(40, true,
                                                                  400);
  expectMma<1408, 4, 2, 2, Bf16, false, kEpilogueResidual, true, 128>(70, true,
                                                                      410);
  expectMma<1152, 2, 4, 1, Bf16, false, kEpilogueSwiglu, false, 384>(48, true,
                                                                     420);
  expectMma<1152, 8, 1, 3, Bf16, true, kEpilogueNone, false, 384>(130, true,
                                                                  430);
}

// fp32 output (an LM head behind the final norm) and random reals, where
// the sums are not exact: within 1e-2 relative L2 error of float64.
TEST(QuantGemvMmaEmulation, Fp32OutputAndInexactData) {
  expectMma<1024, 1, 8, 4, float, false, kEpilogueNone, true, 128>(40, true,
                                                                   500);
  expectMma<1024, 2, 4, 2, float, true, kEpilogueNone, false, 128>(33, false,
                                                                   510);
  expectMma<2048, 1, 8, 4, Bf16, false, kEpilogueResidual, false, 128>(
      24, false, 520);
}

TEST(QuantGemvMmaEmulation, SharedBytes) {
  EXPECT_EQ((quant_gemv_mma::sharedBytes<4096, true>()), 4096 * 4);
  EXPECT_EQ((quant_gemv_mma::sharedBytes<14336, false>()), 14336 * 2);
}

} // namespace

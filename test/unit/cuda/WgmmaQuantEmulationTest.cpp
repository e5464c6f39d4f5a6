//===- WgmmaQuantEmulationTest.cpp - linear_wgmma_quant on the CPU --------===//
//
// codegen/kernels/LinearWgmmaQuant.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation, with the cp.async and ldmatrix
// stand-ins of emulation/TensorCore.cuh and the wgmma stand-in of
// emulation/Wgmma.cuh (A gathered from the warpgroup's registers, B read
// through the descriptor, both by the PTX ISA's layouts). So the kernel's
// own code decides which codes each lane dequantizes into which A slot, in
// which order it stores x for the tensor cores, what its descriptors
// address, which group's scale and zero apply where and how its lanes pair the
// output columns: a wrong permutation, descriptor stride, group boundary,
// split-K slice, partial tile or epilogue shows up as a wrong output.
// Problems, references and the comparison are QuantEmulationProblem.h's
// (exact equality on data whose sums are exact: int4 scales are powers of
// two, so W' is exact in bf16), outputs start as NaN poison
// with a poisoned guard row after the last, shared memory as NaNs. The GPU's
// arithmetic and speed: sol-kernel-check --only quant_gemm.
//
//===----------------------------------------------------------------------===//

#include "LinearWgmmaQuant.cuh"
#include "QuantEmulationProblem.h"
#include "runtime/cuda/KernelSpecs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace {

using namespace quant_emulation;

/// Runs linear_wgmma_quant<...> over all of `p` on the emulated GPU.
template <WeightFormat F, int T, int WG, int S, int KS, typename OutT,
          bool HasBias, int Epilogue, bool SplitK, int G>
void launch(const Problem &p, std::vector<OutT> &y, int splits) {
  using Shape = QuantWgmmaShape<F, T, WG, S, KS>;
  // The executor launches with the spec's dynamic shared memory.
  const sol::cuda::QuantWgmmaSpec spec{
      .format = F == WeightFormat::Int4 ? sol::cuda::WeightFormat::Int4
                                        : sol::cuda::WeightFormat::Int8,
      .tokens = T,
      .warpGroups = WG,
      .stages = S,
      .kSub = KS};
  ASSERT_EQ(spec.sharedBytes(), Shape::kSharedBytes);
  std::vector<uint4> shared(ceilDiv(Shape::kSharedBytes, 16),
                            uint4{~0u, ~0u, ~0u, ~0u});
  cuda_emulation::dynamicShared =
      reinterpret_cast<unsigned char *>(shared.data());
  const QuantGemmArgs args{.y = y.data(),
                           .x = p.x.data(),
                           .w = p.codes.data(),
                           .scales = p.scales.data(),
                           .zeros = F == WeightFormat::Int4 ? p.zeros.data()
                                                            : nullptr,
                           .bias = HasBias ? p.bias.data() : nullptr,
                           .rows = p.rows,
                           .n = p.n,
                           .k = p.k};
  const int blocks = ceilDiv(p.rows, T) * ceilDiv(p.n, Shape::kTileN) * splits;
  cuda_emulation::launch(blocks, Shape::kThreads, [&] {
    linear_wgmma_quant<F, T, WG, S, KS, OutT, HasBias, Epilogue, SplitK, G>(
        args);
  });
}

/// One launch against the reference; the guard row keeps its poison.
template <WeightFormat F, int T, int WG, int S, int KS, typename OutT,
          bool HasBias, int Epilogue, int G>
void expectLinear(int rows, int n, int k, bool exact, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << formatName(F) << " tokens " << T << " warpgroups " << WG
               << " stages " << S << " ksub " << KS << " G " << G << " rows "
               << rows << " N " << n << " K " << k << " bias " << HasBias
               << " epilogue " << Epilogue << " fp32 "
               << (std::is_same_v<OutT, float>) << " exact " << exact);
  const Problem p(F, rows, n, k, G, exact, seed);
  const int cols = Epilogue == kEpilogueSwiglu ? n / 2 : n;
  const std::size_t used = static_cast<std::size_t>(rows) * cols;
  std::vector<OutT> y(used + cols, poison<OutT>());
  if constexpr (Epilogue == kEpilogueResidual)
    std::copy(p.residual.begin(), p.residual.end(), y.begin());
  launch<F, T, WG, S, KS, OutT, HasBias, Epilogue, false, G>(p, y, 1);
  const OutT guard = poison<OutT>();
  for (int i = 0; i < cols; ++i)
    ASSERT_EQ(std::memcmp(&y[used + i], &guard, sizeof(OutT)), 0)
        << "guard row, column " << i << " written";
  expectOutput<OutT>(std::span<const OutT>(y).first(used),
                     reference<Epilogue>(p, false, HasBias, exact), cols,
                     exact);
}

/// Split K into `splits` slices adding into a zeroed fp32 workspace.
template <WeightFormat F, int T, int WG, int S, int KS, int G>
void expectSplitK(int rows, int n, int k, int splits, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << formatName(F) << " split-K " << splits << " tokens " << T
               << " rows " << rows << " N " << n << " K " << k << " G " << G);
  const Problem p(F, rows, n, k, G, true, seed);
  std::vector<float> y(static_cast<std::size_t>(rows) * n, 0.0f);
  launch<F, T, WG, S, KS, float, false, kEpilogueNone, true, G>(p, y, splits);
  expectOutput<float>(y, reference<kEpilogueNone>(p, false, false, true), n,
                      true);
}

/// Every epilogue, bias on some, fp32 output once.
template <WeightFormat F, int T, int WG, int S, int KS, int G>
void expectAllVariants(int rows, int n, int k, std::uint32_t seed) {
  using B = Bf16;
  expectLinear<F, T, WG, S, KS, B, false, kEpilogueNone, G>(rows, n, k, true,
                                                            seed);
  expectLinear<F, T, WG, S, KS, B, true, kEpilogueResidual, G>(rows, n, k, true,
                                                               seed + 1);
  expectLinear<F, T, WG, S, KS, B, true, kEpilogueSwiglu, G>(rows, n, k, true,
                                                             seed + 2);
  expectLinear<F, T, WG, S, KS, float, true, kEpilogueNone, G>(rows, n, k, true,
                                                               seed + 3);
}

// 40 rows over 32-token tiles (the second partial), N = 136 over 128-column
// tiles (the second partial, 8 columns), K = 320 (5 sub-tiles through a
// 4-stage ring, so slots are reused); one warpgroup of 64 tokens over 70
// rows (two blocks along M) and K = 448 in 2 sub-tiles a stage (the last
// stage short); 16 tokens with 4 sub-tiles a stage.
TEST(WgmmaQuantEmulation, Int8) {
  expectAllVariants<WeightFormat::Int8, 32, 2, 4, 1, 0>(40, 136, 320, 10);
  expectAllVariants<WeightFormat::Int8, 64, 1, 3, 2, 0>(70, 72, 448, 20);
  expectAllVariants<WeightFormat::Int8, 16, 2, 3, 4, 0>(9, 128, 448, 25);
}

// int4 groups of 64 (a sub-tile each), 128 (two: over two stages of one
// sub-tile, K = 384 through a 4-stage ring) and K (one a row).
TEST(WgmmaQuantEmulation, Int4) {
  expectAllVariants<WeightFormat::Int4, 32, 2, 4, 1, 128>(40, 136, 384, 30);
  expectAllVariants<WeightFormat::Int4, 64, 1, 3, 2, 64>(70, 72, 448, 40);
  expectAllVariants<WeightFormat::Int4, 16, 2, 4, 2, 128>(11, 128, 512, 45);
  expectLinear<WeightFormat::Int4, 16, 1, 3, 1, Bf16, false, kEpilogueNone,
               448>(9, 64, 448, true, 50);
}

// Four warpgroups (256 columns a block, the second block partial).
TEST(WgmmaQuantEmulation, FourWarpgroups) {
  expectLinear<WeightFormat::Int8, 32, 4, 3, 2, Bf16, true, kEpilogueSwiglu, 0>(
      20, 264, 192, true, 57);
  expectLinear<WeightFormat::Int4, 32, 4, 3, 2, float, false, kEpilogueNone,
               64>(33, 264, 256, true, 58);
}

// 128 tokens (the largest n), one block along M.
TEST(WgmmaQuantEmulation, HundredTwentyEightTokens) {
  expectLinear<WeightFormat::Int8, 128, 2, 3, 1, Bf16, true, kEpilogueSwiglu,
               0>(100, 128, 192, true, 55);
  expectLinear<WeightFormat::Int4, 128, 1, 3, 1, float, false, kEpilogueNone,
               64>(128, 64, 192, true, 56);
}

// Split K: int8's 7 sub-tiles over 3 slices (3, 3, 1); int4's 8 (3, 3,
// 2), its groups of 128 straddling the first two slices; 2 sub-tiles a stage
// over 3 slices of 4 stages (2, 2, 0: an idle block).
TEST(WgmmaQuantEmulation, SplitK) {
  expectSplitK<WeightFormat::Int8, 32, 1, 3, 1, 0>(20, 64, 448, 3, 60);
  expectSplitK<WeightFormat::Int4, 32, 1, 3, 1, 128>(20, 64, 512, 3, 61);
  expectSplitK<WeightFormat::Int8, 16, 2, 3, 2, 0>(12, 128, 448, 3, 63);
  expectSplitK<WeightFormat::Int4, 16, 2, 3, 2, 128>(12, 128, 512, 3, 64);
}

// Random reals (int4 scales that are not powers of two: W' rounds to bf16
// once): bf16 accuracy.
TEST(WgmmaQuantEmulation, InexactData) {
  expectLinear<WeightFormat::Int8, 64, 2, 4, 2, float, true, kEpilogueNone, 0>(
      33, 128, 256, false, 70);
  expectLinear<WeightFormat::Int4, 64, 2, 4, 2, float, false, kEpilogueNone,
               128>(33, 128, 256, false, 71);
}

} // namespace

//===- QuantGemmEmulationTest.cpp - linear_gemm_quant on the CPU ----------===//
//
// codegen/kernels/LinearGemmQuant.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation (emulation/CudaEmulation.h), with the
// cp.async, ldmatrix and bf16 mma stand-ins of emulation/TensorCore.cuh
// (whole matrices gathered from the 32 lanes' registers by the PTX ISA's
// tables). So the kernel's own code decides which codes and activations
// each lane reads from its swizzled tiles, how it dequantizes them, where
// its products land and which group scale folds them in: a wrong chunk
// swizzle, k correspondence between A and B, nibble order, zero, group
// boundary, split-K slice, partial tile or epilogue shows up as a wrong
// output. Problems, float64 references and the comparison are
// QuantEmulationProblem.h's (exact equality on data whose sums are exact).
// Outputs start as NaN poison with a poisoned guard row after the last;
// shared memory starts as NaNs. The GPU's arithmetic and speed are checked
// by sol-kernel-check --only quant_gemm.
//
//===----------------------------------------------------------------------===//

#include "LinearGemmQuant.cuh"
#include "QuantEmulationProblem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace {

using namespace quant_emulation;

/// Runs linear_gemm_quant<...> over all of `p` on the emulated GPU.
template <WeightFormat F, int BM, int BN, int WM, int WN, int S, int KS,
          typename OutT, bool HasBias, int Epilogue, bool SplitK, int G>
void launch(const Problem &p, std::vector<OutT> &y, int splits) {
  using Shape = QuantGemmShape<F, BM, BN, WM, WN, S, KS>;
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
  const int blocks = ceilDiv(p.rows, BM) * ceilDiv(p.n, BN) * splits;
  cuda_emulation::launch(blocks, Shape::kThreads, [&] {
    linear_gemm_quant<F, BM, BN, WM, WN, S, KS, OutT, HasBias, Epilogue, SplitK,
                      G>(args);
  });
}

/// One launch against the reference (exact equality on exact data, bf16
/// accuracy otherwise); the guard row after the last keeps its poison.
template <WeightFormat F, int BM, int BN, int WM, int WN, int S, int KS,
          typename OutT, bool HasBias, int Epilogue, int G>
void expectLinear(int rows, int n, int k, bool exact, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << formatName(F) << " BM " << BM << " BN " << BN << " warps "
               << WM << "x" << WN << " stages " << S << " ksub " << KS << " G "
               << G << " rows " << rows << " N " << n << " K " << k << " bias "
               << HasBias << " epilogue " << Epilogue << " fp32 "
               << (std::is_same_v<OutT, float>) << " exact " << exact);
  const Problem p(F, rows, n, k, G, exact, seed);
  const int cols = Epilogue == kEpilogueSwiglu ? n / 2 : n;
  const std::size_t used = static_cast<std::size_t>(rows) * cols;
  std::vector<OutT> y(used + cols, poison<OutT>());
  if constexpr (Epilogue == kEpilogueResidual)
    std::copy(p.residual.begin(), p.residual.end(), y.begin());
  launch<F, BM, BN, WM, WN, S, KS, OutT, HasBias, Epilogue, false, G>(p, y, 1);
  const OutT guard = poison<OutT>();
  for (int i = 0; i < cols; ++i)
    ASSERT_EQ(std::memcmp(&y[used + i], &guard, sizeof(OutT)), 0)
        << "guard row, column " << i << " written";
  expectOutput<OutT>(std::span<const OutT>(y).first(used),
                     reference<Epilogue>(p, false, HasBias, exact), cols,
                     exact);
}

/// Split K into `splits` slices adding into a zeroed fp32 workspace: the
/// sums, without bias or epilogue.
template <WeightFormat F, int BM, int BN, int WM, int WN, int S, int KS, int G>
void expectSplitK(int rows, int n, int k, int splits, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << formatName(F) << " split-K " << splits << " rows " << rows
               << " N " << n << " K " << k << " G " << G);
  const Problem p(F, rows, n, k, G, true, seed);
  std::vector<float> y(static_cast<std::size_t>(rows) * n, 0.0f);
  launch<F, BM, BN, WM, WN, S, KS, float, false, kEpilogueNone, true, G>(
      p, y, splits);
  expectOutput<float>(y, reference<kEpilogueNone>(p, false, false, true), n,
                      true);
}

/// Every epilogue, bias on some, fp32 output once.
template <WeightFormat F, int BM, int BN, int WM, int WN, int S, int KS, int G>
void expectAllVariants(int rows, int n, int k, std::uint32_t seed) {
  using B = Bf16;
  expectLinear<F, BM, BN, WM, WN, S, KS, B, false, kEpilogueNone, G>(
      rows, n, k, true, seed);
  expectLinear<F, BM, BN, WM, WN, S, KS, B, true, kEpilogueResidual, G>(
      rows, n, k, true, seed + 1);
  expectLinear<F, BM, BN, WM, WN, S, KS, B, true, kEpilogueSwiglu, G>(
      rows, n, k, true, seed + 2);
  expectLinear<F, BM, BN, WM, WN, S, KS, float, true, kEpilogueNone, G>(
      rows, n, k, true, seed + 3);
}

// 70 rows over 64-row tiles (the second partial), N = 136 over 128-column
// tiles (the second partial), K = 256 (4 k tiles through a 4-stage ring);
// then 32 x 64 tiles, 3 stages, K = 448 (7 tiles, the ring wrapping);
// then 16 x 128 tiles over one warp along M; then 2 and 4 sub-tiles a
// stage over K = 448, the last stage short (1 and 3 sub-tiles).
TEST(QuantGemmEmulation, Int8) {
  expectAllVariants<WeightFormat::Int8, 64, 128, 2, 4, 4, 1, 0>(70, 136, 256,
                                                                10);
  expectAllVariants<WeightFormat::Int8, 32, 64, 2, 2, 3, 1, 0>(17, 64, 448, 20);
  expectAllVariants<WeightFormat::Int8, 16, 128, 1, 8, 4, 1, 0>(13, 136, 256,
                                                                25);
  expectAllVariants<WeightFormat::Int8, 32, 128, 1, 8, 3, 2, 0>(20, 136, 448,
                                                                27);
  expectAllVariants<WeightFormat::Int8, 16, 64, 1, 4, 2, 4, 0>(9, 64, 448, 28);
}

// int4 groups of 64 (a sub-tile each), 128 (two) and K (one a row); two
// groups in one stage of 4 sub-tiles (K = 384: stages of 4 and 2
// sub-tiles), a short last stage (K = 448).
TEST(QuantGemmEmulation, Int4) {
  expectAllVariants<WeightFormat::Int4, 64, 128, 2, 4, 4, 1, 128>(70, 136, 256,
                                                                  30);
  expectAllVariants<WeightFormat::Int4, 32, 64, 2, 2, 3, 1, 64>(17, 64, 448,
                                                                40);
  expectAllVariants<WeightFormat::Int4, 16, 128, 1, 8, 4, 1, 128>(13, 136, 256,
                                                                  45);
  expectAllVariants<WeightFormat::Int4, 16, 128, 1, 8, 3, 4, 128>(11, 128, 384,
                                                                  47);
  expectAllVariants<WeightFormat::Int4, 16, 128, 1, 8, 3, 4, 64>(11, 128, 448,
                                                                 46);
  expectAllVariants<WeightFormat::Int4, 32, 128, 1, 8, 2, 2, 64>(21, 136, 448,
                                                                 48);
  expectLinear<WeightFormat::Int4, 32, 64, 2, 2, 3, 1, Bf16, false,
               kEpilogueNone, 448>(9, 48, 448, true, 50);
}

// Split K: 7 sub-tiles over 3 slices (3, 3, 1); int4 groups of 128
// straddle the first two slices, which fold their parts at the slice end;
// with 2 sub-tiles a stage, 4 stages over 3 slices (2, 2, 0: an idle
// block; K = 448 for int8, the last stage short, 512 for int4).
TEST(QuantGemmEmulation, SplitK) {
  expectSplitK<WeightFormat::Int8, 32, 64, 2, 2, 3, 1, 0>(20, 64, 448, 3, 60);
  expectSplitK<WeightFormat::Int4, 32, 64, 2, 2, 3, 1, 128>(20, 64, 512, 3, 61);
  expectSplitK<WeightFormat::Int4, 64, 128, 2, 4, 4, 1, 64>(40, 128, 448, 3,
                                                            62);
  expectSplitK<WeightFormat::Int8, 16, 128, 1, 8, 3, 2, 0>(12, 128, 448, 3, 63);
  expectSplitK<WeightFormat::Int4, 16, 128, 1, 8, 3, 2, 128>(12, 128, 512, 3,
                                                             64);
}

// Random reals (int4 scales that are not powers of two): bf16 accuracy.
TEST(QuantGemmEmulation, InexactData) {
  expectLinear<WeightFormat::Int8, 64, 128, 2, 4, 4, 2, float, true,
               kEpilogueNone, 0>(33, 128, 256, false, 70);
  expectLinear<WeightFormat::Int4, 64, 128, 2, 4, 4, 4, float, false,
               kEpilogueNone, 128>(33, 128, 256, false, 71);
}

} // namespace

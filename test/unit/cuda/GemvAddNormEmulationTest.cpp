//===- GemvAddNormEmulationTest.cpp - linear_gemv's AddNorm on the CPU ----===//
//
// The AddNorm variants of linear_gemv (LinearGemv.cuh) do the work of the
// RmsNorm op with a residual that one-row steps fold into the linear after
// it (StaticLowering::linearAddNorm): every block adds the sub-layer output
// (normalised by its own weight for Gemma) to the residual, normalises the
// sum in its prologue, and the block that reads the residual last writes
// the sum back. Compiled as host C++ against the thread-per-CUDA-thread
// emulation (emulation/CudaEmulation.h), the fused launch must give the bits
// of rms_norm followed by the plain linear_gemv, both emulated, on random
// fractions: the same outputs, the same residual afterwards, and the arrival
// counter back at zero. Blocks run one after another here, so a block that
// wrote the residual before a later block read it would change that block's
// outputs. The GPU's side (rsqrtf, the atomics, blocks at once) is
// sol-kernel-check's and the GPU comparisons' (scripts/gpu-check).
//
//===----------------------------------------------------------------------===//

#include "LinearGemv.cuh"
#include "RmsNorm.cuh"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

constexpr Bf16 kGuard{0x7fc2}; // past y's last output: never written

std::vector<Bf16> randomRow(std::mt19937 &rng, std::size_t count, float lo,
                            float hi) {
  std::uniform_real_distribution<float> reals(lo, hi);
  std::vector<Bf16> v(count);
  for (Bf16 &e : v)
    e = __float2bfloat16_rn(reals(rng));
  return v;
}

template <int K, int R, int WarpsK, int Epilogue, int AddNorm>
void expectFusedEqualsUnfused(int n, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "K " << K << " rows a warp " << R << " warps along K "
               << WarpsK << " epilogue " << Epilogue << " add " << AddNorm
               << " N " << n);
  constexpr bool kInputNorm = AddNorm == kAddNormInputNorm;
  std::mt19937 rng(seed);
  const std::vector<Bf16> x = randomRow(rng, K, -2.0f, 2.0f),
                          residual = randomRow(rng, K, -4.0f, 4.0f),
                          normW = randomRow(rng, K, 0.5f, 1.5f),
                          inputW = randomRow(rng, K, 0.5f, 1.5f),
                          w = randomRow(rng, static_cast<std::size_t>(n) * K,
                                        -1.0f, 1.0f);
  const int outputs = isGatedEpilogue(Epilogue) ? n / 2 : n;
  const int blocks = ceilDiv(n, (8 / WarpsK) * R);
  ASSERT_GE(blocks, 3) << "too few blocks to tell the last one";
  constexpr float kEps = 1e-6f, kInputEps = 1e-5f;

  // Unfused: rms_norm (the residual updated in place), then linear_gemv
  // over the normalised row.
  std::vector<Bf16> normed(K), residualA = residual;
  std::vector<Bf16> yA(outputs + 1, kGuard);
  RmsNormArgs norm;
  norm.out = normed.data();
  norm.x = x.data();
  norm.residual = residualA.data();
  norm.weight = normW.data();
  norm.eps = kEps;
  norm.rows = 1;
  norm.xStride = K;
  norm.outStride = K;
  norm.inputWeight = kInputNorm ? inputW.data() : nullptr;
  norm.inputEps = kInputEps;
  using Shape = RmsNormShape<K>;
  cuda_emulation::launch(1, Shape::kBlockThreads, [&] { rms_norm<K>(norm); });
  const LinearArgs plain{
      .y = yA.data(), .x = normed.data(), .w = w.data(), .rows = 1, .n = n};
  cuda_emulation::launch(blocks, kGemvThreads, [&] {
    linear_gemv<K, 1, R, WarpsK, bf16, false, Epilogue, false>(plain);
  });

  // Fused: x and the residual straight into linear_gemv's prologue. Shared
  // memory starts as NaNs, which a read before its write would spread.
  std::vector<Bf16> residualB = residual;
  std::vector<Bf16> yB(outputs + 1, kGuard);
  std::vector<uint4> shared(ceilDiv(2 * K * 2, 16));
  std::memset(shared.data(), 0xff, shared.size() * sizeof(uint4));
  cuda_emulation::dynamicShared =
      reinterpret_cast<unsigned char *>(shared.data());
  unsigned arrivals = 0;
  const LinearArgs fused{.y = yB.data(),
                         .x = x.data(),
                         .w = w.data(),
                         .normWeight = normW.data(),
                         .rows = 1,
                         .n = n,
                         .k = K,
                         .eps = kEps,
                         .residual = residualB.data(),
                         .inputNormWeight =
                             kInputNorm ? inputW.data() : nullptr,
                         .arrivals = &arrivals,
                         .inputEps = kInputEps};
  cuda_emulation::launch(blocks, kGemvThreads, [&] {
    linear_gemv<K, 1, R, WarpsK, bf16, false, Epilogue, true, false, AddNorm>(
        fused);
  });
  cuda_emulation::dynamicShared = nullptr;

  for (int i = 0; i <= outputs; ++i)
    ASSERT_EQ(yB[i].bits, yA[i].bits)
        << "output " << i << ": " << __bfloat162float(yB[i]) << " vs "
        << __bfloat162float(yA[i]);
  for (int i = 0; i < K; ++i)
    ASSERT_EQ(residualB[i].bits, residualA[i].bits) << "residual " << i;
  // The sum differs from the residual before (the test would not see a
  // missing write-back otherwise).
  EXPECT_NE(std::memcmp(residualB.data(), residual.data(), K * 2), 0);
  EXPECT_EQ(arrivals, 0u) << "the last block resets the counter";
}

// Gemma-3-4B's QKV (K over 4 warps, 2 rows a warp) and gate/up (GeGLU
// pairs, 4 rows a warp, all of K in the warp, a partial last block): hidden
// 2,560 gives threads 0..63 a second, partly inactive vector.
TEST(GemvAddNorm, GemmaInputNormMatchesRmsNormThenGemv) {
  expectFusedEqualsUnfused<2560, 2, 4, kEpilogueNone, kAddNormInputNorm>(40, 1);
  expectFusedEqualsUnfused<2560, 4, 1, kEpilogueGeglu, kAddNormInputNorm>(72,
                                                                          2);
}

// Gemma-2-2B's hidden size (2,304) and a row shorter than the block's
// threads (1,024: 128 vectors), with a plain residual add.
TEST(GemvAddNorm, OtherWidthsAndThePlainAdd) {
  expectFusedEqualsUnfused<2304, 4, 1, kEpilogueGeglu, kAddNormInputNorm>(80,
                                                                          3);
  expectFusedEqualsUnfused<1024, 2, 4, kEpilogueNone, kAddNormResidual>(20, 4);
  expectFusedEqualsUnfused<1024, 2, 2, kEpilogueSwiglu, kAddNormResidual>(36,
                                                                          5);
}

} // namespace

//===- SkinnyEmulationTest.cpp - linear_skinny on the CPU -----------------===//
//
// codegen/kernels/LinearSkinny.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation (emulation/CudaEmulation.h), with an
// mma.sync stand-in that assembles whole matrices from the 32 lanes'
// registers by the PTX ISA's fragment layouts (emulation/TensorCore.cuh).
// So the kernel's own code decides which weights and activations each lane
// loads and where its products land; a wrong register mapping, k
// permutation, reduction index, partial k step, clamped tile or epilogue
// shows up as a wrong output. Small integer inputs make every sum exact, so
// most checks are equalities; the norm prologue's rsqrt is checked to bf16
// accuracy. The test is built with AddressSanitizer where the build has it:
// x, W, bias and y are allocated at their exact sizes, so a read of x past
// `rows` or a write past y's last row fails. The GPU's arithmetic is
// checked by sol-kernel-check --only skinny.
//
//===----------------------------------------------------------------------===//

#include "LinearSkinny.cuh"

#include <gtest/gtest.h>

#include <random>
#include <type_traits>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

constexpr float kEps = 1e-5f;

float bf(float f) { return roundToBf16(f); }

/// A problem of `rows` rows: x [rows, k], W [n, k], bias [n], norm weight
/// [k] and a residual [rows, n], integers in [-range, range] (exact in bf16
/// and in every fp32 sum here) or, with `fractions`, random reals.
struct Problem {
  int rows = 0, n = 0, k = 0;
  std::vector<Bf16> x, w, bias, normW, residual;

  Problem(int rows, int n, int k, int range, bool fractions, std::uint32_t seed)
      : rows(rows), n(n), k(k) {
    std::mt19937 rng(seed);
    auto fill = [&](std::size_t count, float lo, float hi) {
      std::vector<Bf16> v(count);
      std::uniform_int_distribution<int> ints(static_cast<int>(lo),
                                              static_cast<int>(hi));
      std::uniform_real_distribution<float> reals(lo, hi);
      for (Bf16 &e : v)
        e = __float2bfloat16_rn(fractions ? reals(rng)
                                          : static_cast<float>(ints(rng)));
      return v;
    };
    const float r = static_cast<float>(range);
    x = fill(static_cast<std::size_t>(rows) * k, -r, r);
    w = fill(static_cast<std::size_t>(n) * k, -r, r);
    bias = fill(n, -r, r);
    normW = fill(k, 0.5f, 1.5f);
    residual = fill(static_cast<std::size_t>(rows) * n, -8, 8);
  }

  /// The rows of x the linear sees: x, or its RMS norm times normW
  /// (bf16(w * bf16(x * rsqrt(mean(x^2) + eps)))), as floats.
  std::vector<float> input(bool norm) const {
    std::vector<float> out(x.size());
    for (int t = 0; t < rows; ++t) {
      double ss = 0.0;
      for (int i = 0; i < k; ++i) {
        const double v = __bfloat162float(x[t * k + i]);
        ss += v * v;
      }
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / k + kEps));
      for (int i = 0; i < k; ++i) {
        const float v = __bfloat162float(x[t * k + i]);
        out[t * k + i] =
            norm ? bf(__bfloat162float(normW[i]) * bf(v * inv)) : v;
      }
    }
    return out;
  }

  /// x . W^T (+ bias) [rows, n], in double.
  std::vector<double> product(bool norm, bool withBias) const {
    const std::vector<float> xs = input(norm);
    std::vector<double> y(static_cast<std::size_t>(rows) * n);
    for (int t = 0; t < rows; ++t)
      for (int j = 0; j < n; ++j) {
        double s = withBias ? __bfloat162float(bias[j]) : 0.0;
        for (int i = 0; i < k; ++i)
          s += static_cast<double>(xs[t * k + i]) *
               __bfloat162float(w[static_cast<std::size_t>(j) * k + i]);
        y[static_cast<std::size_t>(t) * n + j] = s;
      }
    return y;
  }
};

/// Runs linear_skinny<...> over all of `p` on the emulated GPU.
template <int K, int MaxRows, int Tiles, int WarpsK, typename OutT,
          bool HasBias, int Epilogue, bool Norm>
void launch(const Problem &p, std::vector<OutT> &y) {
  using Shape = SkinnyShape<K, MaxRows, Tiles, WarpsK, Norm>;
  ASSERT_EQ(p.k, K);
  ASSERT_LE(p.rows, MaxRows);
  // Shared memory starts as NaNs: what the kernel reads before writing
  // would poison its results.
  std::vector<uint4> shared(ceilDiv(Shape::kSharedBytes, 16));
  std::memset(shared.data(), 0xff, shared.size() * sizeof(uint4));
  cuda_emulation::dynamicShared =
      reinterpret_cast<unsigned char *>(shared.data());
  const int blocks = ceilDiv(p.n, Shape::kFeatures);
  const LinearArgs args{.y = y.data(),
                        .x = p.x.data(),
                        .w = p.w.data(),
                        .bias = HasBias ? p.bias.data() : nullptr,
                        .normWeight = Norm ? p.normW.data() : nullptr,
                        .rows = p.rows,
                        .n = p.n,
                        .eps = kEps};
  cuda_emulation::launch(blocks, kSkinnyThreads, [&] {
    linear_skinny<K, MaxRows, Tiles, WarpsK, OutT, HasBias, Epilogue, Norm>(
        args);
  });
}

/// A NaN that no kernel computes: an element still holding it was never
/// written.
template <typename T> T poison() {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<float>(0x7fc00001u);
  else
    return Bf16{0x7fc1};
}

template <typename T> std::vector<float> asFloats(const std::vector<T> &v) {
  std::vector<float> out;
  for (const T &e : v)
    out.push_back(asFloat(e));
  return out;
}

/// fp32 output without epilogue: with integer inputs every element equals
/// the exact product.
template <int K, int MaxRows, int Tiles, int WarpsK, bool HasBias>
void expectExactProduct(int rows, int n, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "K " << K << " MaxRows " << MaxRows << " Tiles " << Tiles
               << " WarpsK " << WarpsK << " bias " << HasBias << " rows "
               << rows << " N " << n);
  const Problem p(rows, n, K, 3, false, seed);
  std::vector<float> y(static_cast<std::size_t>(rows) * n, poison<float>());
  launch<K, MaxRows, Tiles, WarpsK, float, HasBias, kEpilogueNone, false>(p, y);
  const std::vector<double> ref = p.product(false, HasBias);
  for (std::size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y[i], ref[i]) << "row " << i / n << ", feature " << i % n;
}

TEST(SkinnyEmulation, ProductIsExact) {
  // One warp along K (128 features a block), 8 rows, N inside one block.
  for (int rows : {1, 3, 8})
    expectExactProduct<64, 8, 1, 1, false>(rows, 40, 1 + rows);
  // K = 72: nine 16-byte vectors, so the second warp's slice has one valid
  // lane; two tiles a warp, 16 rows (two n8 mmas), a partial second block.
  for (int rows : {9, 13, 16})
    expectExactProduct<72, 16, 2, 2, true>(rows, 136, 10 + rows);
  // Two warps along N of two tiles each: 64 features a block, 3 blocks.
  expectExactProduct<512, 8, 2, 4, false>(5, 130, 20);
  // 32 k steps through a ring of 6: refills and a partial last pass.
  expectExactProduct<1024, 16, 1, 1, true>(10, 20, 21);
  // All 8 warps along K, one step each.
  expectExactProduct<256, 16, 1, 8, true>(16, 50, 22);
}

TEST(SkinnyEmulation, ResidualEpilogueAddsInPlace) {
  for (int rows : {2, 11}) {
    const Problem p(rows, 50, 256, 2, false, 30 + rows);
    std::vector<Bf16> y = p.residual;
    launch<256, 16, 1, 8, Bf16, false, kEpilogueResidual, false>(p, y);
    const std::vector<double> ref = p.product(false, false);
    for (std::size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(__bfloat162float(y[i]), bf(__bfloat162float(p.residual[i]) +
                                           bf(static_cast<float>(ref[i]))))
          << "rows " << rows << ", element " << i;
  }
}

/// A gated epilogue over interleaved (gate, up) rows: out = bf16(bf16(act(g))
/// * bf16(u)), act silu (SwiGLU) or tanh GELU (GeGLU).
template <int Epilogue> void expectGatedEpilogue(std::uint32_t seed) {
  for (int rows : {1, 4, 8}) {
    const Problem p(rows, 96, 64, 1, false, seed + rows);
    std::vector<Bf16> y(static_cast<std::size_t>(rows) * 48, poison<Bf16>());
    launch<64, 8, 2, 8, Bf16, true, Epilogue, false>(p, y);
    const std::vector<double> ref = p.product(false, true);
    for (int t = 0; t < rows; ++t)
      for (int i = 0; i < 48; ++i) {
        const float g = bf(static_cast<float>(ref[t * 96 + 2 * i]));
        const float u = static_cast<float>(ref[t * 96 + 2 * i + 1]);
        const float act = Epilogue == kEpilogueGeglu ? geluTanh(g) : silu(g);
        ASSERT_EQ(__bfloat162float(y[t * 48 + i]), bf(bf(act) * bf(u)))
            << "rows " << rows << ", row " << t << ", pair " << i;
      }
  }
}

TEST(SkinnyEmulation, SwigluEpilogueOverInterleavedRows) {
  expectGatedEpilogue<kEpilogueSwiglu>(40);
}

TEST(SkinnyEmulation, GegluEpilogueOverInterleavedRows) {
  expectGatedEpilogue<kEpilogueGeglu>(60);
}

/// The norm prologue against the double-precision norm: the kernel's fp32
/// rsqrt may round an element of the normalised x the other way, so the
/// outputs are held to bf16 accuracy.
template <int K, int MaxRows, int Tiles, int WarpsK, typename OutT,
          bool HasBias, int Epilogue>
void expectNormLinear(int rows, int n, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "K " << K << " rows " << rows << " N "
                                    << n << " epilogue " << Epilogue);
  const Problem p(rows, n, K, 2, true, seed);
  const int cols = Epilogue == kEpilogueSwiglu ? n / 2 : n;
  std::vector<OutT> y(static_cast<std::size_t>(rows) * cols, poison<OutT>());
  launch<K, MaxRows, Tiles, WarpsK, OutT, HasBias, Epilogue, true>(p, y);
  const std::vector<double> prod = p.product(true, HasBias);
  std::vector<double> ref(y.size());
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < cols; ++i) {
      if constexpr (Epilogue == kEpilogueSwiglu) {
        const double g = bf(static_cast<float>(prod[t * n + 2 * i]));
        const double u = bf(static_cast<float>(prod[t * n + 2 * i + 1]));
        ref[t * cols + i] = g / (1.0 + std::exp(-g)) * u;
      } else {
        ref[t * cols + i] = prod[t * n + i];
      }
    }
  const std::vector<float> got = asFloats(y);
  double err = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << "element " << i << " not written";
    err += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  EXPECT_LT(std::sqrt(err / norm), 1e-2);
}

TEST(SkinnyEmulation, NormPrologue) {
  // 7 of 16 rows (the second n8 group is all padding), swiglu with bias,
  // a partial second block.
  expectNormLinear<128, 16, 1, 4, Bf16, true, kEpilogueSwiglu>(7, 48, 50);
  // fp32 logits, two tiles a warp, fewer 16-byte vectors than threads.
  expectNormLinear<256, 8, 2, 8, float, false, kEpilogueNone>(8, 96, 51);
  // K = 2,176: two vectors for some threads in the prologue, one for others.
  expectNormLinear<2176, 16, 1, 8, Bf16, false, kEpilogueNone>(16, 16, 52);
}

} // namespace

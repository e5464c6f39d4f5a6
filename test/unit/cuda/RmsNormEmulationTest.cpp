//===- RmsNormEmulationTest.cpp - rms_norm on the CPU ---------------------===//
//
// codegen/kernels/RmsNorm.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation (emulation/CudaEmulation.h), so the
// kernel's own code decides which rows and 16-byte vectors each thread
// loads, how the rows' sums meet (a shuffle group for head-sized rows that
// share a warp, shared memory across warps for hidden-sized ones) and where
// the results land. Covered: a plain norm with a thread holding two vectors,
// the second partly inactive (D = 2560, Gemma-3-4B's hidden size), strided
// rows, the fused residual add (residual updated in place), Gemma's sandwich
// norm (x normalised by inputWeight before the add) and the per-head q / k
// norm in place on a packed QKV buffer whose v heads stay untouched, with
// secondWeight for the k heads and rows sharing a block, the last one partly
// inactive. The reference follows the kernel's documented rounding; x and
// the residual are small integers, so the residual (and every sum of squares
// of integers) is exact and compared for equality, as are the outputs
// (the emulation's rsqrtf is the reference's), except after inputWeight,
// where the kernel sums fractions in another order: 1 bf16 ulp there (and
// on a GPU, whose rsqrtf differs: sol-kernel-check --only rms_norm). Everything
// outside the rows must keep its bits: out's gaps hold a NaN guard, x's gaps a
// NaN that a stray read would spread. Built with AddressSanitizer where the
// build has it, with x, out and the residual at their exact sizes, so reading
// or writing past the last row fails.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "RmsNorm.cuh"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

float bf(float f) { return roundToBf16(f); }
float val(Bf16 v) { return __bfloat162float(v); }

constexpr Bf16 kGuard{0x7fc2};  // out's gaps: never computed
constexpr Bf16 kPoison{0x7fc1}; // out's rows before the launch
constexpr Bf16 kNan{0x7fc3};    // x's gaps: a read would spread it

/// One launch: `rows` rows of D in groups of rowGroup; out and x share one
/// buffer when `inPlace` (the per-head norm on QKV).
struct Case {
  int rows = 1, rowGroup = 1, xStride = 0, outStride = 0, secondFrom = 0;
  bool inPlace = false, residual = false, inputWeight = false,
       secondWeight = false;
  float eps = 1e-6f, inputEps = 1e-6f;
};

/// The elements from the first row's start to the last row's end.
std::size_t extent(const Case &c, int D, int stride) {
  const int lastGroup = (c.rows - 1) / c.rowGroup;
  return static_cast<std::size_t>(lastGroup) * stride +
         static_cast<std::size_t>(c.rows - lastGroup * c.rowGroup) * D;
}

/// bf16 values as integers that are consecutive along the real line.
int ordered(Bf16 v) {
  return (v.bits & 0x8000) ? -(v.bits & 0x7fff) : (v.bits & 0x7fff);
}

/// dst = bf16(w * bf16(v * rsqrt(mean(v^2) + eps))), the kernel's float
/// operations over a sum taken in double.
template <int D>
void normalise(const float *v, const Bf16 *w, float eps, float *dst) {
  double ss = 0.0;
  for (int j = 0; j < D; ++j)
    ss += static_cast<double>(v[j]) * v[j];
  const float inv =
      1.0f / std::sqrt(static_cast<float>(ss) / static_cast<float>(D) + eps);
  for (int j = 0; j < D; ++j)
    dst[j] = bf(val(w[j]) * bf(v[j] * inv));
}

template <int D> void expectRmsNorm(const Case &c, std::uint32_t seed) {
  using Shape = RmsNormShape<D>;
  SCOPED_TRACE(::testing::Message()
               << "D " << D << " rows " << c.rows << " group " << c.rowGroup
               << " strides " << c.xStride << "/" << c.outStride << " residual "
               << c.residual << " inputWeight " << c.inputWeight
               << " secondWeight " << c.secondWeight);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ints(-8, 8);
  std::uniform_real_distribution<float> reals(0.5f, 1.5f);
  auto weights = [&] {
    std::vector<Bf16> w(D);
    for (Bf16 &e : w)
      e = __float2bfloat16_rn(reals(rng));
    return w;
  };
  auto integer = [&] { return __float2bfloat16_rn(ints(rng)); };
  const std::vector<Bf16> w = weights(), w2 = weights(), wIn = weights();

  // Row r's offsets in x and out; `inRow` marks the elements of rows.
  auto xAt = [&](int r) {
    return static_cast<std::size_t>(r / c.rowGroup) * c.xStride +
           static_cast<std::size_t>(r % c.rowGroup) * D;
  };
  auto outAt = [&](int r) {
    return static_cast<std::size_t>(r / c.rowGroup) * c.outStride +
           static_cast<std::size_t>(r % c.rowGroup) * D;
  };
  std::vector<bool> inRow(extent(c, D, c.xStride), false);
  for (int r = 0; r < c.rows; ++r)
    std::fill_n(inRow.begin() + xAt(r), D, true);
  std::vector<Bf16> x(inRow.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = inRow[i] || c.inPlace ? integer() : kNan;
  std::vector<Bf16> residual(c.residual ? c.rows * D : 0);
  for (Bf16 &e : residual)
    e = integer();
  std::vector<Bf16> out(c.inPlace ? 0 : extent(c, D, c.outStride), kGuard);
  for (int r = 0; r < c.rows && !c.inPlace; ++r)
    std::fill_n(out.begin() + outAt(r), D, kPoison);

  // The reference, from the inputs before the launch.
  std::vector<Bf16> wantOut = c.inPlace ? x : out, wantRes = residual;
  std::vector<float> h(D), o(D);
  for (int r = 0; r < c.rows; ++r) {
    for (int j = 0; j < D; ++j)
      h[j] = val(x[xAt(r) + j]);
    if (c.inputWeight)
      normalise<D>(h.data(), wIn.data(), c.inputEps, h.data());
    for (int j = 0; j < D && c.residual; ++j) {
      h[j] = bf(h[j] + val(residual[r * D + j]));
      wantRes[r * D + j] = __float2bfloat16_rn(h[j]);
    }
    const bool second = c.secondWeight && r % c.rowGroup >= c.secondFrom;
    normalise<D>(h.data(), (second ? w2 : w).data(), c.eps, o.data());
    for (int j = 0; j < D; ++j)
      wantOut[outAt(r) + j] = __float2bfloat16_rn(o[j]);
  }

  RmsNormArgs args;
  args.out = c.inPlace ? x.data() : out.data();
  args.x = x.data();
  args.residual = c.residual ? residual.data() : nullptr;
  args.weight = w.data();
  args.eps = c.eps;
  args.rows = c.rows;
  args.xStride = c.xStride;
  args.outStride = c.outStride;
  args.rowGroup = c.rowGroup;
  args.inputWeight = c.inputWeight ? wIn.data() : nullptr;
  args.secondWeight = c.secondWeight ? w2.data() : nullptr;
  args.inputEps = c.inputEps;
  args.secondFrom = c.secondFrom;
  cuda_emulation::launch(ceilDiv(c.rows, Shape::kRowsPerBlock),
                         Shape::kBlockThreads, [&] { rms_norm<D>(args); });

  // Sums of squares of integers are exact and rsqrtf is the reference's, so
  // only the norm after inputWeight (of fractions) may round differently.
  const int tolerance = c.inputWeight ? 1 : 0;
  const std::vector<Bf16> &got = c.inPlace ? x : out;
  std::vector<bool> written(got.size(), false);
  for (int r = 0; r < c.rows; ++r)
    std::fill_n(written.begin() + outAt(r), D, true);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (written[i])
      ASSERT_LE(std::abs(ordered(got[i]) - ordered(wantOut[i])), tolerance)
          << "out " << i << ": " << val(got[i]) << " vs " << val(wantOut[i]);
    else
      ASSERT_EQ(got[i].bits, wantOut[i].bits) << "out " << i << " changed";
  }
  for (std::size_t i = 0; i < residual.size(); ++i)
    ASSERT_EQ(residual[i].bits, wantRes[i].bits) << "residual " << i;
}

/// A plain [rows, D] norm, contiguous and with gaps between rows.
template <int D> void expectPlain(std::uint32_t seed) {
  for (int rows : {1, 3}) {
    expectRmsNorm<D>({.rows = rows, .xStride = D, .outStride = D}, seed++);
    expectRmsNorm<D>({.rows = rows, .xStride = D + 16, .outStride = D + 8},
                     seed++);
  }
}

// 2560: 320 vectors over 256 threads, so the second vector of each thread
// is active in 64 of them; 2048: one vector each, all eight warps meet in
// shared memory.
TEST(RmsNormEmulation, PlainNorm) {
  static_assert(RmsNormShape<2560>::kVecsPerThread == 2);
  expectPlain<2560>(1);
  expectPlain<2048>(10);
}

TEST(RmsNormEmulation, ResidualIsAddedAndUpdated) {
  expectRmsNorm<2048>(
      {.rows = 5, .xStride = 2048, .outStride = 2048, .residual = true}, 20);
  expectRmsNorm<2560>({.rows = 2,
                       .xStride = 2560 + 8,
                       .outStride = 2560,
                       .residual = true,
                       .eps = 1e-5f},
                      21);
}

// Gemma's sandwich norm: two sums of squares in one kernel. inputEps is
// large so that swapping it with eps changes the results.
TEST(RmsNormEmulation, InputWeightNormalisesBeforeTheAdd) {
  for (int rows : {1, 2})
    expectRmsNorm<2560>({.rows = rows,
                         .xStride = 2560,
                         .outStride = 2560,
                         .residual = true,
                         .inputWeight = true,
                         .eps = 1e-6f,
                         .inputEps = 4.0f},
                        30 + rows);
}

/// q_norm / k_norm in place on [tokens, (q + k + v) * D]: rowGroup = q + k
/// rows per token, k's heads (from secondFrom = q) by secondWeight or not.
template <int D> void expectPerHead(int q, int k, int v, std::uint32_t seed) {
  for (int tokens : {1, 3})
    for (bool second : {true, false})
      expectRmsNorm<D>({.rows = tokens * (q + k),
                        .rowGroup = q + k,
                        .xStride = (q + k + v) * D,
                        .outStride = (q + k + v) * D,
                        .secondFrom = q,
                        .inPlace = true,
                        .secondWeight = second},
                       seed++);
}

// D = 256: a warp a row, 4 rows a block; D = 128: half a warp a row, 8 rows
// a block. Groups of 12 leave 4 of D = 128's 8 last rows idle, groups of 7
// (7 and 21 rows) 1 and 3 of D = 256's 4, and groups of 3 leave 5 and 7 idle.
TEST(RmsNormEmulation, PerHeadNormInPlaceOnQkv) {
  static_assert(RmsNormShape<256>::kRowsPerBlock == 4);
  static_assert(RmsNormShape<128>::kRowsPerBlock == 8);
  expectPerHead<256>(8, 4, 4, 40);
  expectPerHead<256>(6, 1, 1, 50);
  expectPerHead<128>(8, 4, 4, 60);
  expectPerHead<128>(2, 1, 1, 70);
}

} // namespace

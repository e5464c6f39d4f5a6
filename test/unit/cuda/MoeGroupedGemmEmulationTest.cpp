//===- MoeGroupedGemmEmulationTest.cpp - the grouped expert GEMMs on the CPU =//
//
// codegen/kernels/MoeGroupedGemm.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation, with the cp.async, ldmatrix and bf16 mma
// stand-ins of emulation/TensorCore.cuh: moe_sort's grouping, then
// moe_grouped_gemm for gate/up and down over a step where one expert has
// more slots than a tile holds (two tiles, the second partial), another
// none, gate/up's outputs span two N tiles and both GEMMs end in a
// partial K tile. Its act and
// out must be those of the decode kernels (moe_gate_up, moe_down, checked
// against float64 in MoeEmulationTest) to a bf16 ulp, since only the order
// of the float sums differs; plain SwiGLU and gpt-oss's biased, clamped
// variant. Outputs start as NaN, so a slot no block writes fails.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "MoeGroupedGemm.cuh"
#include "MoeQuantExperts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

constexpr Bf16 kNan{0x7fc1};
constexpr int E = 6, K = 2, H = 72, I = 72, kRows = 70;
constexpr int kSlots = kRows * K;

float val(Bf16 v) { return __bfloat162float(v); }

std::vector<Bf16> randomBf16(std::mt19937 &rng, std::size_t n, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<Bf16> v(n);
  for (Bf16 &x : v)
    x = __float2bfloat16_rn(d(rng));
  return v;
}

// Every row picks expert 1 (70 slots: a full tile of 64 and 6 more), first
// or second, and one of 0, 2, 3, 4; expert 5 gets none.
std::vector<int> routing() {
  std::vector<int> ids(kSlots);
  const int others[] = {0, 2, 3, 4};
  for (int r = 0; r < kRows; ++r) {
    ids[r * K + r % 2] = 1;
    ids[r * K + 1 - r % 2] = others[r % 4];
  }
  return ids;
}

// The slots a tile holds in the sort and the GEMMs below: 64, or also 16
// (runSmallAndLargeTiles: one and two warps along M; 32 differs from 16 in
// its warp tile only, compiled by sol_nvrtc_tests and run by sol-kernel-check
// on the GPU). The tile size changes the A loads, the warps' layout and the
// epilogue's rows, not the B loads, biases or decoders, so the formats run
// with tiles of 64 only.
int tileRows = 64;

template <typename Check> void runSmallAndLargeTiles(Check &&check) {
  for (int rows : {16, 64}) {
    SCOPED_TRACE(::testing::Message() << "tiles of " << rows << " slots");
    tileRows = rows;
    check();
  }
  tileRows = 64;
}

template <int BM> void sortWith(MoeSortArgs &args) {
  cuda_emulation::launch(1, kMoeSortThreads, [&] { moe_sort<E, BM>(args); });
}

// moe_sort over the step's slots: order, expert starts, tile starts.
std::vector<int> sortSlots(const std::vector<int> &ids) {
  std::vector<int> sorted(kSlots + 2 * (E + 1), -1);
  MoeSortArgs args;
  args.sorted = sorted.data();
  args.ids = ids.data();
  args.rows = kRows;
  args.topK = K;
  if (tileRows == 16)
    sortWith<16>(args);
  else if (tileRows == 32)
    sortWith<32>(args);
  else
    sortWith<64>(args);
  return sorted;
}

template <int KD, int N, bool GateUp, int Format, int BM>
void groupedWith(const MoeGroupedGemmArgs &args, int rows) {
  using Shape = MoeGemmShape<BM>;
  std::vector<uint4> shared(ceilDiv(Shape::kSharedBytes, 16),
                            uint4{~0u, ~0u, ~0u, ~0u});
  cuda_emulation::dynamicShared =
      reinterpret_cast<unsigned char *>(shared.data());
  const int blocks = moeGemmTileBound(rows * K, E, BM) * ceilDiv(N, Shape::kBN);
  cuda_emulation::launch(blocks, Shape::kThreads, [&] {
    moe_grouped_gemm<E, KD, N, GateUp, Format, BM>(args);
  });
}

template <int KD, int N, bool GateUp, int Format = kMoeBf16>
void grouped(const MoeGroupedGemmArgs &args, int rows) {
  if (tileRows == 16)
    groupedWith<KD, N, GateUp, Format, 16>(args, rows);
  else if (tileRows == 32)
    groupedWith<KD, N, GateUp, Format, 32>(args, rows);
  else
    groupedWith<KD, N, GateUp, Format, 64>(args, rows);
}

// A bf16 ulp of slack (the float sums differ in order), of the sum before
// a bias is added where there is one (`absolute`).
void expectClose(const std::vector<Bf16> &got, const std::vector<Bf16> &want,
                 int width, float absolute, const char *what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    const float w = val(want[i]), g = val(got[i]);
    ASSERT_NEAR(g, w, 8e-3f * std::abs(w) + absolute)
        << what << " slot " << i / width << " column " << i % width;
  }
}

TEST(MoeGroupedGemmEmulation, SortGroupsSlotsByExpert) {
  runSmallAndLargeTiles([] {
    const std::vector<int> ids = routing();
    const std::vector<int> sorted = sortSlots(ids);
    const int *starts = sorted.data() + kSlots, *tiles = starts + E + 1;
    std::vector<int> counts(E, 0);
    for (int id : ids)
      ++counts[id];
    int start = 0, tile = 0;
    for (int e = 0; e <= E; ++e) {
      EXPECT_EQ(starts[e], start) << "expert " << e;
      EXPECT_EQ(tiles[e], tile) << "expert " << e;
      if (e == E)
        break;
      for (int p = start; p < start + counts[e]; ++p)
        EXPECT_EQ(ids[sorted[p]], e) << "position " << p;
      start += counts[e];
      tile += ceilDiv(counts[e], tileRows);
    }
    EXPECT_EQ(tiles[1] - tiles[0], ceilDiv(18, tileRows)); // expert 0
    EXPECT_EQ(tiles[2] - tiles[1], ceilDiv(70, tileRows)); // expert 1
    EXPECT_EQ(tiles[6] - tiles[5], 0);                     // expert 5: none
    std::vector<int> order(sorted.begin(), sorted.begin() + kSlots);
    std::sort(order.begin(), order.end());
    for (int s = 0; s < kSlots; ++s)
      ASSERT_EQ(order[s], s) << "order is not a permutation of the slots";
  });
}

class MoeGroupedGemmEmulation : public ::testing::TestWithParam<bool> {};

// The grouped GEMMs against the decode kernels: SwiGLU without biases, and
// (gptOss) gpt-oss's biases with the clamped SwiGLU.
void checkBf16(bool gptOss) {
  std::mt19937 rng(gptOss ? 23 : 3);
  const std::vector<int> ids = routing();
  const std::vector<Bf16> x = randomBf16(rng, kRows * H, 1.0f);
  const float scale = gptOss ? 0.6f : 0.2f; // past the limit of 7
  const std::vector<Bf16> gate = randomBf16(rng, E * I * H, scale);
  const std::vector<Bf16> up = randomBf16(rng, E * I * H, scale);
  const std::vector<Bf16> down = randomBf16(rng, E * H * I, 0.1f);
  const std::vector<Bf16> gateBias = randomBf16(rng, E * I, 2.0f);
  const std::vector<Bf16> upBias = randomBf16(rng, E * I, 6.0f);
  const std::vector<Bf16> downBias = randomBf16(rng, E * H, 0.5f);
  const int activation = gptOss ? 2 : 0;
  const float limit = 7.0f;

  // The decode kernels' act and out.
  std::vector<Bf16> wantAct(kSlots * I, kNan), wantOut(kSlots * H, kNan);
  MoeGateUpArgs g;
  g.act = wantAct.data();
  g.x = x.data();
  g.gate = gate.data();
  g.up = up.data();
  g.ids = ids.data();
  g.rows = kRows;
  g.topK = K;
  g.activation = activation;
  g.limit = limit;
  g.gateBias = gptOss ? gateBias.data() : nullptr;
  g.upBias = gptOss ? upBias.data() : nullptr;
  cuda_emulation::launch(E * ceilDiv(I, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_gate_up<E, H, I>(g); });
  MoeDownArgs d;
  d.out = wantOut.data();
  d.act = wantAct.data();
  d.down = down.data();
  d.ids = ids.data();
  d.rows = kRows;
  d.topK = K;
  d.bias = gptOss ? downBias.data() : nullptr;
  cuda_emulation::launch(E * ceilDiv(H, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_down<E, H, I>(d); });

  const std::vector<int> sorted = sortSlots(ids);
  std::vector<Bf16> act(kSlots * I, kNan), out(kSlots * H, kNan);
  MoeGroupedGemmArgs a;
  a.y = act.data();
  a.x = x.data();
  a.w0 = gate.data();
  a.w1 = up.data();
  a.sorted = sorted.data();
  a.bias0 = g.gateBias;
  a.bias1 = g.upBias;
  a.rows = kRows;
  a.topK = K;
  a.activation = activation;
  a.limit = limit;
  grouped<H, 2 * I, true>(a, kRows);
  const float slack = gptOss ? 1e-2f : 1e-5f;
  expectClose(act, wantAct, I, slack, "act");
  // down from the decode kernels' act, so that a difference is down's own.
  MoeGroupedGemmArgs b;
  b.y = out.data();
  b.x = wantAct.data();
  b.w0 = down.data();
  b.sorted = sorted.data();
  b.bias0 = d.bias;
  b.rows = kRows;
  b.topK = K;
  grouped<I, H, false>(b, kRows);
  expectClose(out, wantOut, H, slack, "out");
}

TEST_P(MoeGroupedGemmEmulation, MatchesTheDecodeKernels) {
  if (GetParam())
    checkBf16(true);
  else
    runSmallAndLargeTiles([] { checkBf16(false); });
}

INSTANTIATE_TEST_SUITE_P(Activations, MoeGroupedGemmEmulation,
                         ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "BiasedClampedSwiglu" : "Swiglu";
                         });

} // namespace

namespace {

// gpt-oss's MXFP4 experts (with its biases and clamp): the codes decoded into
// the B tiles must give the decode kernels' act and out. H = I = 96: groups
// of 32, a second K tile that ends after one group (its other group zero),
// gate/up over two N tiles, down's tile partly past H.
void checkMxfp4() {
  constexpr int H4 = 96, I4 = 96;
  std::mt19937 rng(31);
  std::uniform_int_distribution<int> byte(0, 255), exponent(121, 124);
  auto codes = [&](int n) {
    std::vector<unsigned char> v(static_cast<std::size_t>(n) / 2);
    for (unsigned char &b : v)
      b = static_cast<unsigned char>(byte(rng));
    return v;
  };
  auto exponents = [&](int n) {
    std::vector<unsigned char> v(static_cast<std::size_t>(n) / 32);
    for (unsigned char &b : v)
      b = static_cast<unsigned char>(exponent(rng));
    return v;
  };
  const std::vector<int> ids = routing();
  const std::vector<Bf16> x = randomBf16(rng, kRows * H4, 1.0f);
  const std::vector<unsigned char> gate = codes(E * I4 * H4),
                                   up = codes(E * I4 * H4),
                                   down = codes(E * H4 * I4);
  const std::vector<unsigned char> gateS = exponents(E * I4 * H4),
                                   upS = exponents(E * I4 * H4),
                                   downS = exponents(E * H4 * I4);
  const std::vector<Bf16> gateBias = randomBf16(rng, E * I4, 2.0f);
  const std::vector<Bf16> upBias = randomBf16(rng, E * I4, 6.0f);
  const std::vector<Bf16> downBias = randomBf16(rng, E * H4, 0.5f);
  auto bf16s = [](const std::vector<unsigned char> &v) {
    return reinterpret_cast<const Bf16 *>(v.data());
  };

  std::vector<Bf16> wantAct(kSlots * I4, kNan), wantOut(kSlots * H4, kNan);
  MoeGateUpArgs g;
  g.act = wantAct.data();
  g.x = x.data();
  g.gate = bf16s(gate);
  g.up = bf16s(up);
  g.ids = ids.data();
  g.rows = kRows;
  g.topK = K;
  g.activation = 2;
  g.limit = 7.0f;
  g.gateBias = gateBias.data();
  g.upBias = upBias.data();
  g.gateScales = gateS.data();
  g.upScales = upS.data();
  cuda_emulation::launch(E * ceilDiv(I4, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_gate_up<E, H4, I4, true>(g); });
  MoeDownArgs d;
  d.out = wantOut.data();
  d.act = wantAct.data();
  d.down = bf16s(down);
  d.ids = ids.data();
  d.rows = kRows;
  d.topK = K;
  d.bias = downBias.data();
  d.scales = downS.data();
  cuda_emulation::launch(E * ceilDiv(H4, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_down<E, H4, I4, true>(d); });

  const std::vector<int> sorted = sortSlots(ids);
  std::vector<Bf16> act(kSlots * I4, kNan), out(kSlots * H4, kNan);
  MoeGroupedGemmArgs a;
  a.y = act.data();
  a.x = x.data();
  a.w0 = bf16s(gate);
  a.w1 = bf16s(up);
  a.sorted = sorted.data();
  a.bias0 = gateBias.data();
  a.bias1 = upBias.data();
  a.rows = kRows;
  a.topK = K;
  a.activation = 2;
  a.limit = 7.0f;
  a.w0Scales = gateS.data();
  a.w1Scales = upS.data();
  grouped<H4, 2 * I4, true, kMoeMxfp4>(a, kRows);
  expectClose(act, wantAct, I4, 1e-2f, "act");
  MoeGroupedGemmArgs b;
  b.y = out.data();
  b.x = wantAct.data();
  b.w0 = bf16s(down);
  b.sorted = sorted.data();
  b.bias0 = downBias.data();
  b.rows = kRows;
  b.topK = K;
  b.w0Scales = downS.data();
  grouped<I4, H4, false, kMoeMxfp4>(b, kRows);
  expectClose(out, wantOut, H4, 1e-2f, "out");
}

TEST(MoeGroupedGemmEmulationMxfp4, MatchesTheDecodeKernels) { checkMxfp4(); }

} // namespace

namespace {

// sol-quantize's int8, fp8 and int4 experts: the codes decoded into the B
// tiles must give the decode kernels' act and out: int8's and fp8's exactly
// (codes exact in bf16, row scales applied in the epilogue), int4's those of
// the bf16 decode kernels over the weights rounded as the tiles hold them,
// bf16((q - zero) * scale). H = I = 96: a second K tile half past the end,
// gate/up over two N tiles, int4 groups of 32 (three a row).
template <int Format> void checkGroupedQuantized(unsigned seed) {
  constexpr int H4 = 96, I4 = 96, kGroup = 32;
  std::mt19937 rng(seed);
  const std::vector<int> ids = routing();
  const std::vector<Bf16> x = randomBf16(rng, kRows * H4, 1.0f);
  using sol::test::QuantExperts;
  const QuantExperts gate =
      sol::test::randomQuantExperts(rng, Format, E * I4, H4, kGroup, 0.2f);
  const QuantExperts up =
      sol::test::randomQuantExperts(rng, Format, E * I4, H4, kGroup, 0.2f);
  const QuantExperts down =
      sol::test::randomQuantExperts(rng, Format, E * H4, I4, kGroup, 0.2f);
  auto codes = [](const QuantExperts &m) {
    return reinterpret_cast<const Bf16 *>(m.codes.data());
  };
  auto zeros = [](const QuantExperts &m) {
    return m.zeros.empty() ? nullptr : m.zeros.data();
  };
  // int4 weights as moeLoadQuantRow rounds them.
  auto rounded = [](const QuantExperts &m, int rows) {
    std::vector<Bf16> w(static_cast<std::size_t>(rows) * m.cols);
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < m.cols; ++k) {
        const unsigned byte = m.codes[(r * m.cols + k) / 2];
        const int q = static_cast<int>(k % 2 ? byte >> 4 : byte & 15u);
        const int g = r * (m.cols / m.group) + k / m.group;
        w[r * m.cols + k] = __float2bfloat16_rn(
            static_cast<float>(q - m.zeros[g]) * m.scales[g]);
      }
    return w;
  };
  constexpr bool kInt4 = Format == kMoeInt4;
  const std::vector<Bf16> gate16 = kInt4 ? rounded(gate, E * I4)
                                         : std::vector<Bf16>(),
                          up16 =
                              kInt4 ? rounded(up, E * I4) : std::vector<Bf16>(),
                          down16 = kInt4 ? rounded(down, E * H4)
                                         : std::vector<Bf16>();

  std::vector<Bf16> wantAct(kSlots * I4, kNan), wantOut(kSlots * H4, kNan);
  MoeGateUpArgs g;
  g.act = wantAct.data();
  g.x = x.data();
  g.gate = kInt4 ? gate16.data() : codes(gate);
  g.up = kInt4 ? up16.data() : codes(up);
  g.ids = ids.data();
  g.rows = kRows;
  g.topK = K;
  g.gateScales = gate.scales.data();
  g.upScales = up.scales.data();
  cuda_emulation::launch(E * ceilDiv(I4, kMoeRowsPerBlock), kMoeThreads, [&] {
    moe_gate_up<E, H4, I4, kInt4 ? kMoeBf16 : Format>(g);
  });
  MoeDownArgs d;
  d.out = wantOut.data();
  d.act = wantAct.data();
  d.down = kInt4 ? down16.data() : codes(down);
  d.ids = ids.data();
  d.rows = kRows;
  d.topK = K;
  d.scales = down.scales.data();
  cuda_emulation::launch(E * ceilDiv(H4, kMoeRowsPerBlock), kMoeThreads, [&] {
    moe_down<E, H4, I4, kInt4 ? kMoeBf16 : Format>(d);
  });

  const std::vector<int> sorted = sortSlots(ids);
  std::vector<Bf16> act(kSlots * I4, kNan), out(kSlots * H4, kNan);
  MoeGroupedGemmArgs a;
  a.y = act.data();
  a.x = x.data();
  a.w0 = codes(gate);
  a.w1 = codes(up);
  a.sorted = sorted.data();
  a.rows = kRows;
  a.topK = K;
  a.w0Scales = gate.scales.data();
  a.w1Scales = up.scales.data();
  a.w0Zeros = zeros(gate);
  a.w1Zeros = zeros(up);
  a.groupSize = kGroup;
  grouped<H4, 2 * I4, true, Format>(a, kRows);
  expectClose(act, wantAct, I4, 1e-5f, "act");
  MoeGroupedGemmArgs b;
  b.y = out.data();
  b.x = wantAct.data();
  b.w0 = codes(down);
  b.sorted = sorted.data();
  b.rows = kRows;
  b.topK = K;
  b.w0Scales = down.scales.data();
  b.w0Zeros = zeros(down);
  b.groupSize = kGroup;
  grouped<I4, H4, false, Format>(b, kRows);
  expectClose(out, wantOut, H4, 1e-5f, "out");
}

TEST(MoeGroupedGemmEmulationQuantized, Int8MatchesTheDecodeKernels) {
  checkGroupedQuantized<kMoeInt8>(41);
}
TEST(MoeGroupedGemmEmulationQuantized, Fp8MatchesTheDecodeKernels) {
  checkGroupedQuantized<kMoeFp8>(42);
}
TEST(MoeGroupedGemmEmulationQuantized, Int4MatchesTheDecodeKernels) {
  checkGroupedQuantized<kMoeInt4>(43);
}

} // namespace

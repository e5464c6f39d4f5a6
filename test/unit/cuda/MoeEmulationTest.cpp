//===- MoeEmulationTest.cpp - the MoE decode kernels on the CPU -----------===//
//
// codegen/kernels/MoeDecode.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation: moe_route's softmax and top-k (ties to
// the lower expert, with and without renormalisation), then moe_gate_up,
// moe_down and moe_combine over a step where several rows pick the same
// expert, more rows than one pass takes (kMoeSlots) share one expert, and
// some experts get no row, against a float64 reference that rounds where
// the kernels document (bf16 after each projection, activation, product and
// sum); MXFP4 and sol-quantize's int8, fp8 and int4 experts against the
// float64 products of their values; and the one-row kernels
// (MoeDecodeRow.cuh) against that chain, bit for bit. The outputs start as
// NaN, so an element no kernel writes fails.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "MoeDecode.cuh"
#include "MoeDecodeRow.cuh"
#include "MoeQuantExperts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

Bf16 toBf16(float f) { return __float2bfloat16_rn(f); }
float val(Bf16 v) { return __bfloat162float(v); }
float bf(float f) { return roundToBf16(f); }

constexpr Bf16 kNan{0x7fc1};

std::vector<Bf16> randomBf16(std::mt19937 &rng, std::size_t n, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<Bf16> v(n);
  for (Bf16 &x : v)
    x = toBf16(d(rng));
  return v;
}

/// moe_route over `logits` ([rows, E]); returns ids and weights.
template <int E, int K>
void route(const std::vector<Bf16> &logits, int rows, bool normalize,
           std::vector<int> &ids, std::vector<float> &weights) {
  ids.assign(static_cast<std::size_t>(rows) * K, -7);
  weights.assign(ids.size(), -7.0f);
  MoeRouteArgs args;
  args.ids = ids.data();
  args.weights = weights.data();
  args.logits = logits.data();
  args.rows = rows;
  args.normalize = normalize;
  cuda_emulation::launch(ceilDiv(rows, kMoeRouteThreads / 32), kMoeRouteThreads,
                         [&] { moe_route<E, K>(args); });
}

TEST(MoeEmulation, RouteSoftmaxTopKTies) {
  constexpr int E = 40, K = 3; // two values per lane, the second partly idle
  std::mt19937 rng(1);
  const int rows = 5;
  std::vector<Bf16> logits = randomBf16(rng, rows * E, 4.0f);
  // Row 1: a tie between experts 7 and 33 at the top, and 2, 12 next.
  for (int e = 0; e < E; ++e)
    logits[E + e] = toBf16(-1.0f);
  logits[E + 33] = logits[E + 7] = toBf16(3.0f);
  logits[E + 12] = logits[E + 2] = toBf16(2.0f);
  for (bool normalize : {false, true}) {
    std::vector<int> ids;
    std::vector<float> weights;
    route<E, K>(logits, rows, normalize, ids, weights);
    for (int r = 0; r < rows; ++r) {
      double max = -1e30, sum = 0;
      for (int e = 0; e < E; ++e)
        max = std::max<double>(max, val(logits[r * E + e]));
      std::vector<double> p(E);
      for (int e = 0; e < E; ++e)
        sum += p[e] = std::exp(val(logits[r * E + e]) - max);
      std::vector<int> order(E);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return p[a] > p[b]; });
      double chosen = 0;
      for (int k = 0; k < K; ++k)
        chosen += p[order[k]] / sum;
      for (int k = 0; k < K; ++k) {
        SCOPED_TRACE(testing::Message() << "row " << r << " choice " << k);
        EXPECT_EQ(ids[r * K + k], order[k]);
        const double want = p[order[k]] / sum / (normalize ? chosen : 1.0);
        EXPECT_NEAR(weights[r * K + k], want, 1e-6 * std::max(1.0, want));
      }
    }
    EXPECT_EQ(ids[K + 0], 7); // the tie: the lower expert first
    EXPECT_EQ(ids[K + 1], 33);
    EXPECT_EQ(ids[K + 2], 2);
  }
}

TEST(MoeEmulation, RoutedExpertsAndCombine) {
  constexpr int E = 6, K = 2, H = 64, I = 40; // I: a partial last tile
  std::mt19937 rng(7);
  const int rows = 11, slots = rows * K;
  const std::vector<Bf16> x = randomBf16(rng, rows * H, 1.0f);
  const std::vector<Bf16> gate = randomBf16(rng, E * I * H, 0.2f);
  const std::vector<Bf16> up = randomBf16(rng, E * I * H, 0.2f);
  const std::vector<Bf16> down = randomBf16(rng, E * H * I, 0.2f);
  // Expert 1 takes 10 slots (more than one pass), expert 5 none, rows pick
  // the same expert twice never (top-k picks distinct experts), and the
  // choices come in both orders.
  std::vector<int> ids(slots);
  std::vector<float> weights(slots);
  const int pattern[][2] = {{1, 0}, {1, 2}, {3, 1}, {1, 4}, {0, 1}, {2, 1},
                            {1, 3}, {4, 1}, {1, 0}, {2, 3}, {1, 2}};
  std::uniform_real_distribution<float> w(0.05f, 0.95f);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < K; ++k) {
      ids[r * K + k] = pattern[r][k];
      weights[r * K + k] = w(rng);
    }
  std::vector<Bf16> act(static_cast<std::size_t>(slots) * I, kNan);
  std::vector<Bf16> out(static_cast<std::size_t>(slots) * H, kNan);
  std::vector<Bf16> y(static_cast<std::size_t>(rows) * H, kNan);
  // GeGLU's gate first (moe_gate_up alone), then SwiGLU through all three.
  for (bool gelu : {true, false}) {
    MoeGateUpArgs g;
    g.act = act.data();
    g.x = x.data();
    g.gate = gate.data();
    g.up = up.data();
    g.ids = ids.data();
    g.rows = rows;
    g.topK = K;
    g.activation = gelu ? 1 : 0;
    cuda_emulation::launch(E * ceilDiv(I, kMoeRowsPerBlock), kMoeThreads,
                           [&] { moe_gate_up<E, H, I>(g); });
    for (int s = 0; s < slots; ++s) {
      const int e = ids[s], r = s / K;
      for (int j = 0; j < I; ++j) {
        double gs = 0, us = 0;
        for (int h = 0; h < H; ++h) {
          gs += double(val(gate[(e * I + j) * H + h])) * val(x[r * H + h]);
          us += double(val(up[(e * I + j) * H + h])) * val(x[r * H + h]);
        }
        const float gv = bf(static_cast<float>(gs));
        const float av = bf(gelu ? geluTanh(gv) : silu(gv));
        const float a = bf(av * bf(static_cast<float>(us)));
        // The kernel sums in float: a bf16 ulp of slack.
        EXPECT_NEAR(val(act[s * I + j]), a, 1e-2f * std::abs(a) + 1e-6f)
            << "act slot " << s << " row " << j << (gelu ? " (GeGLU)" : "");
      }
    }
    if (gelu)
      continue;
    MoeDownArgs d;
    d.out = out.data();
    d.act = act.data();
    d.down = down.data();
    d.ids = ids.data();
    d.rows = rows;
    d.topK = K;
    cuda_emulation::launch(E * ceilDiv(H, kMoeRowsPerBlock), kMoeThreads,
                           [&] { moe_down<E, H, I>(d); });
    MoeCombineArgs c;
    c.y = y.data();
    c.out = out.data();
    c.weights = weights.data();
    c.ids = ids.data();
    c.rows = rows;
    cuda_emulation::launch(2, kMoeThreads, [&] { moe_combine<H, K>(c); });

    for (int s = 0; s < slots; ++s) {
      const int e = ids[s];
      for (int j = 0; j < H; ++j) {
        double ds = 0;
        for (int i = 0; i < I; ++i)
          ds += double(val(down[(e * H + j) * I + i])) * val(act[s * I + i]);
        EXPECT_NEAR(val(out[s * H + j]), ds, 1e-2 * std::abs(ds) + 1e-6)
            << "out slot " << s << " row " << j;
      }
    }
    for (int r = 0; r < rows; ++r) {
      const int first = ids[r * K] < ids[r * K + 1] ? 0 : 1;
      for (int j = 0; j < H; ++j) {
        float sum = 0;
        for (int k : {first, 1 - first}) {
          const int s = r * K + k;
          sum = bf(sum + bf(val(out[s * H + j]) * bf(weights[s])));
        }
        EXPECT_EQ(val(y[r * H + j]), sum) << "y row " << r << " column " << j;
      }
    }
  }
}

// A step of fewer slots than experts launches a unit of blocks per slot
// (moeBlockExpert): the block of a slot whose expert an earlier slot chose
// returns, the earlier one's takes both; act and out must equal those of
// the grid of every expert.
TEST(MoeEmulation, SlotGridForFewSlots) {
  constexpr int E = 6, K = 2, H = 64, I = 40;
  std::mt19937 rng(9);
  const int rows = 2, slots = rows * K;
  const std::vector<Bf16> x = randomBf16(rng, rows * H, 1.0f);
  const std::vector<Bf16> gate = randomBf16(rng, E * I * H, 0.2f);
  const std::vector<Bf16> up = randomBf16(rng, E * I * H, 0.2f);
  const std::vector<Bf16> down = randomBf16(rng, E * H * I, 0.2f);
  const std::vector<int> ids = {1, 4, 4, 2}; // expert 4 twice
  auto run = [&](int units, std::vector<Bf16> &act, std::vector<Bf16> &out) {
    act.assign(static_cast<std::size_t>(slots) * I, kNan);
    out.assign(static_cast<std::size_t>(slots) * H, kNan);
    MoeGateUpArgs g;
    g.act = act.data();
    g.x = x.data();
    g.gate = gate.data();
    g.up = up.data();
    g.ids = ids.data();
    g.rows = rows;
    g.topK = K;
    cuda_emulation::launch(units * ceilDiv(I, kMoeRowsPerBlock), kMoeThreads,
                           [&] { moe_gate_up<E, H, I>(g); });
    MoeDownArgs d;
    d.out = out.data();
    d.act = act.data();
    d.down = down.data();
    d.ids = ids.data();
    d.rows = rows;
    d.topK = K;
    cuda_emulation::launch(units * ceilDiv(H, kMoeRowsPerBlock), kMoeThreads,
                           [&] { moe_down<E, H, I>(d); });
  };
  std::vector<Bf16> act, out, slotAct, slotOut;
  run(E, act, out);
  run(slots, slotAct, slotOut);
  for (std::size_t i = 0; i < act.size(); ++i) {
    ASSERT_FALSE(std::isnan(val(slotAct[i]))) << "act " << i << " unwritten";
    EXPECT_EQ(val(slotAct[i]), val(act[i])) << "act " << i;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(std::isnan(val(slotOut[i]))) << "out " << i << " unwritten";
    EXPECT_EQ(val(slotOut[i]), val(out[i])) << "out " << i;
  }
}

// gpt-oss's experts: gate, up and down biases and the clamped SwiGLU
// (limit 7; the weights are large enough that gate and up pass the limit),
// against a float64 reference rounding where Transformers' bf16 ops round.
TEST(MoeEmulation, BiasedExpertsWithClampedSwiglu) {
  constexpr int E = 4, K = 2, H = 64, I = 32;
  constexpr float kLimit = 7.0f;
  std::mt19937 rng(11);
  const int rows = 3, slots = rows * K;
  const std::vector<Bf16> x = randomBf16(rng, rows * H, 1.0f);
  const std::vector<Bf16> gate = randomBf16(rng, E * I * H, 1.0f);
  const std::vector<Bf16> up = randomBf16(rng, E * I * H, 1.0f);
  const std::vector<Bf16> down = randomBf16(rng, E * H * I, 0.05f);
  const std::vector<Bf16> gateBias = randomBf16(rng, E * I, 2.0f);
  const std::vector<Bf16> upBias = randomBf16(rng, E * I, 6.0f);
  const std::vector<Bf16> downBias = randomBf16(rng, E * H, 0.5f);
  const std::vector<int> ids = {2, 0, 1, 2, 3, 1};
  std::vector<Bf16> act(static_cast<std::size_t>(slots) * I, kNan);
  std::vector<Bf16> out(static_cast<std::size_t>(slots) * H, kNan);
  MoeGateUpArgs g;
  g.act = act.data();
  g.x = x.data();
  g.gate = gate.data();
  g.up = up.data();
  g.ids = ids.data();
  g.rows = rows;
  g.topK = K;
  g.activation = 2;
  g.limit = kLimit;
  g.gateBias = gateBias.data();
  g.upBias = upBias.data();
  cuda_emulation::launch(E * ceilDiv(I, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_gate_up<E, H, I>(g); });
  int clampedGate = 0, clampedUpHigh = 0, clampedUpLow = 0;
  for (int s = 0; s < slots; ++s) {
    const int e = ids[s], r = s / K;
    for (int j = 0; j < I; ++j) {
      double gs = 0, us = 0;
      for (int h = 0; h < H; ++h) {
        gs += double(val(gate[(e * I + j) * H + h])) * val(x[r * H + h]);
        us += double(val(up[(e * I + j) * H + h])) * val(x[r * H + h]);
      }
      float gv = bf(bf(static_cast<float>(gs)) + val(gateBias[e * I + j]));
      float uv = bf(bf(static_cast<float>(us)) + val(upBias[e * I + j]));
      clampedGate += gv > kLimit;
      clampedUpHigh += uv > kLimit;
      clampedUpLow += uv < -kLimit;
      gv = std::min(gv, kLimit);
      uv = std::clamp(uv, -kLimit, kLimit);
      const float sig = bf(1.0f / (1.0f + std::exp(-bf(gv * 1.702f))));
      const float a = bf(bf(uv + 1.0f) * bf(gv * sig));
      // The kernel sums in float: a few bf16 ulps of slack.
      EXPECT_NEAR(val(act[s * I + j]), a, 3e-2f * std::abs(a) + 1e-2f)
          << "act slot " << s << " row " << j;
    }
  }
  EXPECT_GT(clampedGate, 0); // the limit was exercised on every side
  EXPECT_GT(clampedUpHigh, 0);
  EXPECT_GT(clampedUpLow, 0);
  MoeDownArgs d;
  d.out = out.data();
  d.act = act.data();
  d.down = down.data();
  d.ids = ids.data();
  d.rows = rows;
  d.topK = K;
  d.bias = downBias.data();
  cuda_emulation::launch(E * ceilDiv(H, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_down<E, H, I>(d); });
  for (int s = 0; s < slots; ++s) {
    const int e = ids[s];
    for (int j = 0; j < H; ++j) {
      double ds = 0;
      for (int i = 0; i < I; ++i)
        ds += double(val(down[(e * H + j) * I + i])) * val(act[s * I + i]);
      const float want =
          bf(bf(static_cast<float>(ds)) + val(downBias[e * H + j]));
      EXPECT_NEAR(val(out[s * H + j]), want, 1e-2f * std::abs(want) + 1e-2f)
          << "out slot " << s << " row " << j;
    }
  }
}

// MXFP4 experts (moe_gate_up<E, H, I, true>, moe_down<E, H, I, true>): random
// codes and exponents against the float64 products of their values, every
// code and a spread of exponents exercised.
TEST(MoeEmulation, Mxfp4Experts) {
  constexpr int E = 3, K = 2, H = 96, I = 64;
  std::mt19937 rng(5);
  const int rows = 4, slots = rows * K;
  const std::vector<Bf16> x = randomBf16(rng, rows * H, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), exponent(120, 126);
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
  const std::vector<unsigned char> gate = codes(E * I * H),
                                   up = codes(E * I * H),
                                   down = codes(E * H * I);
  const std::vector<unsigned char> gateS = exponents(E * I * H),
                                   upS = exponents(E * I * H),
                                   downS = exponents(E * H * I);
  // Value k of row r of a [rows, n] MXFP4 matrix.
  auto value = [](const std::vector<unsigned char> &c,
                  const std::vector<unsigned char> &s, int n, int r, int k) {
    static const double kFp4[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    const unsigned b = c[static_cast<std::size_t>(r) * (n / 2) + k / 2];
    const unsigned code = k % 2 ? b >> 4 : b & 15;
    const double v = (code & 8 ? -1 : 1) * kFp4[code & 7];
    return std::ldexp(v,
                      s[static_cast<std::size_t>(r) * (n / 32) + k / 32] - 127);
  };
  const std::vector<int> ids = {0, 2, 1, 0, 2, 1, 0, 1};
  std::vector<Bf16> act(static_cast<std::size_t>(slots) * I, kNan);
  std::vector<Bf16> out(static_cast<std::size_t>(slots) * H, kNan);
  MoeGateUpArgs g;
  g.act = act.data();
  g.x = x.data();
  g.gate = reinterpret_cast<const Bf16 *>(gate.data());
  g.up = reinterpret_cast<const Bf16 *>(up.data());
  g.ids = ids.data();
  g.rows = rows;
  g.topK = K;
  g.gateScales = gateS.data();
  g.upScales = upS.data();
  cuda_emulation::launch(E * ceilDiv(I, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_gate_up<E, H, I, true>(g); });
  for (int s = 0; s < slots; ++s) {
    const int e = ids[s], r = s / K;
    for (int j = 0; j < I; ++j) {
      double gs = 0, us = 0;
      for (int h = 0; h < H; ++h) {
        gs += value(gate, gateS, H, e * I + j, h) * val(x[r * H + h]);
        us += value(up, upS, H, e * I + j, h) * val(x[r * H + h]);
      }
      const float gv = bf(static_cast<float>(gs));
      const float a = bf(bf(silu(gv)) * bf(static_cast<float>(us)));
      EXPECT_NEAR(val(act[s * I + j]), a, 1e-2f * std::abs(a) + 1e-5f)
          << "act slot " << s << " row " << j;
    }
  }
  MoeDownArgs d;
  d.out = out.data();
  d.act = act.data();
  d.down = reinterpret_cast<const Bf16 *>(down.data());
  d.ids = ids.data();
  d.rows = rows;
  d.topK = K;
  d.scales = downS.data();
  cuda_emulation::launch(E * ceilDiv(H, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_down<E, H, I, true>(d); });
  for (int s = 0; s < slots; ++s) {
    const int e = ids[s];
    for (int j = 0; j < H; ++j) {
      double ds = 0;
      for (int i = 0; i < I; ++i)
        ds += value(down, downS, I, e * H + j, i) * val(act[s * I + i]);
      EXPECT_NEAR(val(out[s * H + j]), ds, 1e-2 * std::abs(ds) + 1e-5)
          << "out slot " << s << " row " << j;
    }
  }
}

// sol-quantize's experts (moe_gate_up<E, H, I, Format>, moe_down<...>):
// random int8, fp8 or int4 codes with their scales (and zero points; groups
// of 32, so H and I hold several) against the float64 products of their
// values. Expert 1 has four slots, 0 and 2 two, 3 none.
template <int Format> void checkQuantizedExperts(unsigned seed) {
  constexpr int E = 4, K = 2, H = 128, I = 64, kGroup = 32;
  std::mt19937 rng(seed);
  const int rows = 4, slots = rows * K;
  const std::vector<Bf16> x = randomBf16(rng, rows * H, 1.0f);
  using sol::test::QuantExperts;
  const QuantExperts gate =
      sol::test::randomQuantExperts(rng, Format, E * I, H, kGroup, 0.2f);
  const QuantExperts up =
      sol::test::randomQuantExperts(rng, Format, E * I, H, kGroup, 0.2f);
  const QuantExperts down =
      sol::test::randomQuantExperts(rng, Format, E * H, I, kGroup, 0.2f);
  const std::vector<int> ids = {0, 1, 2, 1, 1, 0, 2, 1};
  std::vector<Bf16> act(static_cast<std::size_t>(slots) * I, kNan);
  std::vector<Bf16> out(static_cast<std::size_t>(slots) * H, kNan);
  MoeGateUpArgs g;
  g.act = act.data();
  g.x = x.data();
  g.gate = reinterpret_cast<const Bf16 *>(gate.codes.data());
  g.up = reinterpret_cast<const Bf16 *>(up.codes.data());
  g.ids = ids.data();
  g.rows = rows;
  g.topK = K;
  g.gateScales = gate.scales.data();
  g.upScales = up.scales.data();
  g.gateZeros = gate.zeros.empty() ? nullptr : gate.zeros.data();
  g.upZeros = up.zeros.empty() ? nullptr : up.zeros.data();
  g.groupSize = kGroup;
  cuda_emulation::launch(E * ceilDiv(I, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_gate_up<E, H, I, Format>(g); });
  for (int s = 0; s < slots; ++s) {
    const int e = ids[s], r = s / K;
    for (int j = 0; j < I; ++j) {
      double gs = 0, us = 0;
      for (int h = 0; h < H; ++h) {
        gs += gate.at(e * I + j, h) * val(x[r * H + h]);
        us += up.at(e * I + j, h) * val(x[r * H + h]);
      }
      const float gv = bf(static_cast<float>(gs));
      const float a = bf(bf(silu(gv)) * bf(static_cast<float>(us)));
      ASSERT_NEAR(val(act[s * I + j]), a, 1e-2f * std::abs(a) + 1e-5f)
          << "act slot " << s << " row " << j;
    }
  }
  MoeDownArgs d;
  d.out = out.data();
  d.act = act.data();
  d.down = reinterpret_cast<const Bf16 *>(down.codes.data());
  d.ids = ids.data();
  d.rows = rows;
  d.topK = K;
  d.scales = down.scales.data();
  d.zeros = down.zeros.empty() ? nullptr : down.zeros.data();
  d.groupSize = kGroup;
  cuda_emulation::launch(E * ceilDiv(H, kMoeRowsPerBlock), kMoeThreads,
                         [&] { moe_down<E, H, I, Format>(d); });
  for (int s = 0; s < slots; ++s) {
    const int e = ids[s];
    for (int j = 0; j < H; ++j) {
      double ds = 0;
      for (int i = 0; i < I; ++i)
        ds += down.at(e * H + j, i) * val(act[s * I + i]);
      ASSERT_NEAR(val(out[s * H + j]), ds, 1e-2 * std::abs(ds) + 1e-5)
          << "out slot " << s << " row " << j;
    }
  }
}

TEST(MoeEmulation, Int8Experts) { checkQuantizedExperts<kMoeInt8>(11); }
TEST(MoeEmulation, Fp8Experts) { checkQuantizedExperts<kMoeFp8>(12); }
TEST(MoeEmulation, Int4Experts) { checkQuantizedExperts<kMoeInt4>(13); }

// Expert matrices of any format for the one-row tests: bf16 values, MXFP4
// codes with E8M0 exponents, or sol-quantize's codes (MoeQuantExperts.h).
struct AnyExperts {
  std::vector<unsigned char> codes, zeros, exponents;
  std::vector<float> scales;
  const Bf16 *w() const { return reinterpret_cast<const Bf16 *>(codes.data()); }
  const void *scaleData() const {
    if (!exponents.empty())
      return exponents.data();
    return scales.empty() ? nullptr : scales.data();
  }
  const unsigned char *zeroData() const {
    return zeros.empty() ? nullptr : zeros.data();
  }
};
AnyExperts randomExperts(std::mt19937 &rng, int format, int rows, int cols,
                         int group, float scale) {
  AnyExperts m;
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  if (format == kMoeBf16) {
    const std::vector<Bf16> v = randomBf16(rng, count, scale);
    m.codes.resize(count * 2);
    std::memcpy(m.codes.data(), v.data(), m.codes.size());
  } else if (format == kMoeMxfp4) {
    std::uniform_int_distribution<int> byte(0, 255), exponent(120, 126);
    m.codes.resize(count / 2);
    for (unsigned char &b : m.codes)
      b = static_cast<unsigned char>(byte(rng));
    m.exponents.resize(count / 32);
    for (unsigned char &b : m.exponents)
      b = static_cast<unsigned char>(exponent(rng));
  } else {
    sol::test::QuantExperts q =
        sol::test::randomQuantExperts(rng, format, rows, cols, group, scale);
    m.codes = std::move(q.codes);
    m.zeros = std::move(q.zeros);
    m.scales = std::move(q.scales);
  }
  return m;
}

// moe_gate_up_row and moe_down_row for a step of one row against moe_route,
// moe_gate_up, moe_down and moe_combine (checked above against float64):
// the same ids, weights, act and y, bit for bit, every element written.
// Parts: kGateUp checks moe_gate_up_row alone, kDown moe_down_row alone
// (over random activations), both the whole step.
enum RowParts { kGateUp = 1, kDown = 2, kBoth = 3 };
template <int Format, int E, int K, int H, int I>
void checkRowKernels(unsigned seed, bool biased, bool normalize,
                     RowParts parts = kBoth) {
  std::mt19937 rng(seed);
  constexpr int kGroup = 32;
  const std::vector<Bf16> x = randomBf16(rng, H, 1.0f);
  const std::vector<Bf16> logits = randomBf16(rng, E, 3.0f);
  const float big = biased ? 1.0f : 0.2f; // biased: the clamp is reached
  const AnyExperts gate = randomExperts(rng, Format, E * I, H, kGroup, big);
  const AnyExperts up = randomExperts(rng, Format, E * I, H, kGroup, big);
  const AnyExperts down = randomExperts(rng, Format, E * H, I, kGroup, 0.05f);
  const std::vector<Bf16> gateBias = randomBf16(rng, E * I, 2.0f);
  const std::vector<Bf16> upBias = randomBf16(rng, E * I, 6.0f);
  const std::vector<Bf16> downBias = randomBf16(rng, E * H, 0.5f);
  const int activation = biased ? 2 : 0;

  // The chain of four kernels.
  std::vector<int> ids;
  std::vector<float> weights;
  route<E, K>(logits, 1, normalize, ids, weights);
  std::vector<Bf16> act(static_cast<std::size_t>(K) * I, kNan);
  std::vector<Bf16> out(static_cast<std::size_t>(K) * H, kNan);
  std::vector<Bf16> y(H, kNan);
  MoeGateUpArgs g;
  g.act = act.data();
  g.x = x.data();
  g.gate = gate.w();
  g.up = up.w();
  g.ids = ids.data();
  g.rows = 1;
  g.topK = K;
  g.activation = activation;
  g.limit = 7.0f;
  g.gateBias = biased ? gateBias.data() : nullptr;
  g.upBias = biased ? upBias.data() : nullptr;
  g.gateScales = gate.scaleData();
  g.upScales = up.scaleData();
  g.gateZeros = gate.zeroData();
  g.upZeros = up.zeroData();
  g.groupSize = kGroup;
  if (parts & kGateUp)
    cuda_emulation::launch(K * ceilDiv(I, kMoeRowsPerBlock), kMoeThreads,
                           [&] { moe_gate_up<E, H, I, Format>(g); });
  else
    act = randomBf16(rng, act.size(), 2.0f);
  MoeDownArgs d;
  d.out = out.data();
  d.act = act.data();
  d.down = down.w();
  d.ids = ids.data();
  d.rows = 1;
  d.topK = K;
  d.bias = biased ? downBias.data() : nullptr;
  d.scales = down.scaleData();
  d.zeros = down.zeroData();
  d.groupSize = kGroup;
  MoeCombineArgs c;
  c.y = y.data();
  c.out = out.data();
  c.weights = weights.data();
  c.ids = ids.data();
  c.rows = 1;
  if (parts & kDown) {
    cuda_emulation::launch(K * ceilDiv(H, kMoeRowsPerBlock), kMoeThreads,
                           [&] { moe_down<E, H, I, Format>(d); });
    cuda_emulation::launch(1, kMoeThreads, [&] { moe_combine<H, K>(c); });
  }

  // The two one-row kernels; their choices come in increasing expert
  // order: choice p is the chain's sorted[p].
  std::vector<int> sorted(K);
  std::iota(sorted.begin(), sorted.end(), 0);
  std::sort(sorted.begin(), sorted.end(),
            [&](int a, int b) { return ids[a] < ids[b]; });
  std::vector<Bf16> rowAct(static_cast<std::size_t>(K) * I, kNan);
  std::vector<Bf16> rowY(H, kNan);
  MoeGateUpRowArgs gr;
  gr.act = rowAct.data();
  gr.x = x.data();
  gr.logits = logits.data();
  gr.gate = g.gate;
  gr.up = g.up;
  gr.normalize = normalize;
  gr.activation = activation;
  gr.limit = g.limit;
  gr.groupSize = kGroup;
  gr.gateBias = g.gateBias;
  gr.upBias = g.upBias;
  gr.gateScales = g.gateScales;
  gr.upScales = g.upScales;
  gr.gateZeros = g.gateZeros;
  gr.upZeros = g.upZeros;
  constexpr int kRows = moeRowPairsPerWarp(Format, H) * kMoeThreads / 32;
  if (parts & kGateUp) {
    cuda_emulation::launch(K * ceilDiv(I, kRows), kMoeThreads,
                           [&] { moe_gate_up_row<E, K, H, I, Format>(gr); });
  } else {
    // moe_down_row reads the choices in increasing expert order.
    for (int p = 0; p < K; ++p)
      std::copy_n(act.begin() + sorted[p] * I, I, rowAct.begin() + p * I);
  }
  MoeDownRowArgs dr;
  dr.y = rowY.data();
  dr.act = rowAct.data();
  dr.down = d.down;
  dr.logits = logits.data(); // it routes the row again
  dr.normalize = normalize;
  dr.bias = d.bias;
  dr.scales = d.scales;
  dr.zeros = d.zeros;
  dr.groupSize = kGroup;
  if (parts & kDown)
    cuda_emulation::launch(ceilDiv(H, kMoeThreads / 32), kMoeThreads,
                           [&] { moe_down_row<E, K, H, I, Format>(dr); });

  for (int p = 0; p < K; ++p) {
    for (int j = 0; j < I; ++j) {
      const float a = val(rowAct[p * I + j]);
      ASSERT_FALSE(std::isnan(a)) << "act " << p << ", " << j << " unwritten";
      ASSERT_EQ(a, val(act[sorted[p] * I + j])) << "act " << p << ", " << j;
    }
  }
  for (int j = 0; j < H && (parts & kDown); ++j) {
    ASSERT_FALSE(std::isnan(val(rowY[j]))) << "y " << j << " unwritten";
    ASSERT_EQ(val(rowY[j]), val(y[j])) << "y " << j;
  }
}

TEST(MoeEmulation, RowKernelsBf16) {
  checkRowKernels<kMoeBf16, 12, 4, 64, 48>(21, false, true);
}
// Gate and up rows of 288 vectors: two rounds of loads a warp, the second
// partial.
TEST(MoeEmulation, RowKernelsBf16LongRows) {
  checkRowKernels<kMoeBf16, 4, 2, 2304, 8>(27, false, true, kGateUp);
}
// Down rows of 3 vectors a lane: the 8 choices in four batches of 2.
TEST(MoeEmulation, RowKernelsBf16DownInBatches) {
  checkRowKernels<kMoeBf16, 12, 8, 32, 768>(28, false, true, kDown);
}
// gpt-oss's biases and clamp; 4 pairs a warp, the last tile partial.
TEST(MoeEmulation, RowKernelsBiasedClampedSwiglu) {
  checkRowKernels<kMoeBf16, 8, 4, 64, 40>(22, true, true);
}
TEST(MoeEmulation, RowKernelsMxfp4) {
  checkRowKernels<kMoeMxfp4, 8, 4, 96, 64>(23, true, true);
}
TEST(MoeEmulation, RowKernelsInt8) {
  checkRowKernels<kMoeInt8, 8, 3, 128, 48>(24, false, false);
}
TEST(MoeEmulation, RowKernelsFp8) {
  checkRowKernels<kMoeFp8, 8, 4, 128, 64>(25, false, true);
}
// int4 groups of 32 (one vector each), 4 pairs a warp.
TEST(MoeEmulation, RowKernelsInt4) {
  checkRowKernels<kMoeInt4, 8, 2, 128, 64>(26, false, true);
}

} // namespace

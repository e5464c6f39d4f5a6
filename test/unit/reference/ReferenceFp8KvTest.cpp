//===- ReferenceFp8KvTest.cpp - fp8 E4M3 rounding and the fp8 KV cache ----===//
//
// The host E4M3 conversion against known values and a brute-force nearest
// search, the per-row scale rule, and the reference executor with an fp8
// KV cache: exactly the rounded rows where they can be observed, and logits
// close to (but not equal to) the bf16 cache's on a tiny model.
//
//===----------------------------------------------------------------------===//

#include "TinyModel.h"

#include "runtime/reference/Fp8E4M3.h"
#include "runtime/reference/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace sol;
using namespace sol::reference;
using namespace sol::test;

namespace {

TEST(Fp8E4M3, KnownValues) {
  EXPECT_EQ(floatToE4M3(0.0f), 0x00);
  EXPECT_EQ(floatToE4M3(-0.0f), 0x80);
  EXPECT_EQ(floatToE4M3(1.0f), 0x38);
  EXPECT_EQ(floatToE4M3(-2.0f), 0xC0);
  EXPECT_EQ(floatToE4M3(448.0f), 0x7E);
  EXPECT_EQ(floatToE4M3(-448.0f), 0xFE);
  EXPECT_EQ(floatToE4M3(0.875f), 0x36);      // 1.110b x 2^-1
  EXPECT_EQ(floatToE4M3(0x1p-6f), 0x08);     // smallest normal
  EXPECT_EQ(floatToE4M3(0x1p-9f), 0x01);     // smallest subnormal
  EXPECT_EQ(floatToE4M3(7 * 0x1p-9f), 0x07); // largest subnormal
  EXPECT_FLOAT_EQ(e4m3ToFloat(0x7E), 448.0f);
  EXPECT_FLOAT_EQ(e4m3ToFloat(0x01), 0x1p-9f);
  EXPECT_FLOAT_EQ(e4m3ToFloat(0x07), 7 * 0x1p-9f);
  EXPECT_FLOAT_EQ(e4m3ToFloat(0xB8), -1.0f);
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xFF)));
  EXPECT_FALSE(std::isnan(e4m3ToFloat(0x7E)));
}

TEST(Fp8E4M3, TiesGoToEven) {
  // Between 1.0 (mantissa 0) and 1.125 (1): even is 1.0.
  EXPECT_EQ(floatToE4M3(1.0625f), 0x38);
  // Between 1.125 (1) and 1.25 (2): even is 1.25.
  EXPECT_EQ(floatToE4M3(1.1875f), 0x3A);
  // Just above a tie rounds up.
  EXPECT_EQ(floatToE4M3(std::nextafter(1.0625f, 2.0f)), 0x39);
  // Subnormals: 0.5 x 2^-9 -> 0, 1.5 x 2^-9 -> 2, 2.5 x 2^-9 -> 2.
  EXPECT_EQ(floatToE4M3(0x1p-10f), 0x00);
  EXPECT_EQ(floatToE4M3(-0x1p-10f), 0x80);
  EXPECT_EQ(floatToE4M3(1.5f * 0x1p-9f), 0x02);
  EXPECT_EQ(floatToE4M3(2.5f * 0x1p-9f), 0x02);
  // 7.5 x 2^-9 ties between the largest subnormal and the smallest normal.
  EXPECT_EQ(floatToE4M3(7.5f * 0x1p-9f), 0x08);
  // Between 416 (mantissa 5) and 448 (6): 432 goes to 448.
  EXPECT_EQ(floatToE4M3(432.0f), 0x7E);
  EXPECT_EQ(floatToE4M3(424.0f), 0x7D);
}

TEST(Fp8E4M3, SaturatesAndKeepsNaN) {
  // __NV_SATFINITE: beyond 448, infinities included, is +-448.
  EXPECT_EQ(floatToE4M3(449.0f), 0x7E);
  EXPECT_EQ(floatToE4M3(464.0f), 0x7E);
  EXPECT_EQ(floatToE4M3(1e30f), 0x7E);
  EXPECT_EQ(floatToE4M3(-1e30f), 0xFE);
  EXPECT_EQ(floatToE4M3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(floatToE4M3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(floatToE4M3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(floatToE4M3(-std::numeric_limits<float>::quiet_NaN()), 0x7F);
}

TEST(Fp8E4M3, EveryCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F)
      continue; // NaN
    const float v = e4m3ToFloat(static_cast<uint8_t>(code));
    EXPECT_EQ(floatToE4M3(v), code) << "code " << code << " value " << v;
  }
}

TEST(Fp8E4M3, RoundsToTheNearestCode) {
  // Brute force: the nearest finite code, ties to the even mantissa.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-14.0f, 9.5f);
  std::uniform_int_distribution<int> sign(0, 1);
  for (int i = 0; i < 20000; ++i) {
    const float x = (sign(rng) ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    int best = -1;
    double bestDistance = 0;
    for (int code = 0; code < 256; ++code) {
      if ((code & 0x7F) == 0x7F)
        continue;
      const double d = std::fabs(
          static_cast<double>(e4m3ToFloat(static_cast<uint8_t>(code))) -
          static_cast<double>(x));
      if (best < 0 || d < bestDistance ||
          (d == bestDistance && (code & 1) == 0)) {
        best = code;
        bestDistance = d;
      }
    }
    // Zero has two codes: the sign of x decides.
    if ((best & 0x7F) == 0)
      best = std::signbit(x) ? 0x80 : 0x00;
    ASSERT_EQ(floatToE4M3(x), best) << "x = " << x;
  }
}

TEST(Fp8E4M3, RowScaleRule) {
  std::vector<float> row = {0.5f, -3.5f, 1.0f, 2.0f};
  EXPECT_FLOAT_EQ(kvRowScale(row), 3.5f / 448.0f);
  std::vector<float> zeros(8, 0.0f);
  EXPECT_EQ(kvRowScale(zeros), 1.0f);
  EXPECT_EQ(quantizeKvRow(zeros), 1.0f);
  for (float z : zeros)
    EXPECT_EQ(z, 0.0f);
  // NaNs do not set the scale (fmaxf ignores them) and stay NaN.
  std::vector<float> withNaN = {1.0f, NAN, -2.0f};
  EXPECT_FLOAT_EQ(quantizeKvRow(withNaN), 2.0f / 448.0f);
  EXPECT_TRUE(std::isnan(withNaN[1]));
  // The amax element maps onto 448 and comes back (nearly) exactly; every
  // element is within half an E4M3 step of its value.
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> values(128);
  for (float &v : values)
    v = dist(rng);
  std::vector<float> q = values;
  const float scale = quantizeKvRow(q);
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = values[i] / scale;
    const float step = std::fabs(x) < 0x1p-6f
                           ? 0x1p-9f
                           : std::exp2(std::floor(std::log2(std::fabs(x))) - 3);
    EXPECT_LE(std::fabs(q[i] / scale - x), 0.5f * step * 1.0001f) << i;
    EXPECT_EQ(q[i], e4m3ToFloat(floatToE4M3(x)) * scale);
  }
}

ReferenceExecutor::Options blocks(int32_t n) {
  ReferenceExecutor::Options o;
  o.numKvBlocks = n;
  return o;
}

TEST(ReferenceFp8Kv, AttentionReadsTheRoundedRows) {
  // One head of dim 16, no rotation (inv_freq 0): the first token attends
  // only to itself, so its output is its V row as the fp8 cache holds it.
  const int64_t hd = 16, width = 3 * hd;
  std::vector<float> rows(static_cast<size_t>(2 * width));
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float &r : rows)
    r = dist(rng);
  TestPlan p;
  p.kvCache(1, 1, static_cast<int32_t>(hd), 8, /*fp8=*/true);
  const int rope = p.rope(std::vector<float>(hd / 2, 0.0f));
  const int e = p.weight("embed", {2, width}, rows);
  const int qkv = p.buffer("qkv", width);
  const int out = p.buffer("attn", hd);
  p.op(OpKind::Embedding, "embed", {qkv, 0}, {e});
  p.op(OpKind::RopeKvWrite, "rope", {qkv}, {}, {0, 1, 1, hd, rope});
  p.op(OpKind::Attention, "attn", {out, qkv}, {}, {0, 1, 1, hd, 0}, {0.25f});
  p.observe(out);
  PlanFile f = p.write();
  ReferenceExecutor ex(f, blocks(4));
  const auto got = runStep(ex, TestStep::sequence({0, 1}, 0, 1), hd);

  // The embedding table is F32, so rows arrive unchanged.
  std::vector<float> v0(rows.begin() + 2 * hd, rows.begin() + 3 * hd);
  std::vector<float> expected = v0;
  quantizeKvRow(expected);
  for (int64_t d = 0; d < hd; ++d)
    EXPECT_FLOAT_EQ(got[static_cast<size_t>(d)],
                    expected[static_cast<size_t>(d)])
        << d;
  // Rounding changed something, or the test would not see the cache.
  double diff = 0;
  for (int64_t d = 0; d < hd; ++d)
    diff = std::max(
        diff, static_cast<double>(std::fabs(expected[static_cast<size_t>(d)] -
                                            v0[static_cast<size_t>(d)])));
  EXPECT_GT(diff, 0.0);
}

double relativeL2(const std::vector<float> &a, const std::vector<float> &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num +=
        (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

TEST(ReferenceFp8Kv, LogitsStayCloseToTheBf16Cache) {
  // Head dim 16 (a head dim the fp8 kernels take), two layers, GQA, a
  // sliding window on layer 1, blocks of 8, 24 tokens.
  //
  // Tolerance: E4M3 keeps 3 mantissa bits, so each cached K/V value is off
  // by at most 2^-4 of its binade (6.25%) and typically ~2% of the row's
  // scale. Scores q.k sum 16 such independent errors (relative error
  // ~2%/sqrt-ish), softmax and V's weighted sum average more, and the
  // residual stream carries attention as one of several terms, so the
  // logits move by about 2% (relative L2) on this model; 5% leaves room for
  // seeds, and 1e-4 below guards against an fp8 path that does nothing.
  TinyModelConfig config;
  config.hidden = 32;
  config.headDim = 16;
  config.blockSize = 8;
  config.slidingWindow = {0, 6};
  TinyModel bf16(config);
  config.fp8Kv = true;
  TinyModel fp8(config);
  PlanFile fb = bf16.plan.write();
  PlanFile f8 = fp8.plan.write();
  ReferenceExecutor exBf16(fb, blocks(4)), exFp8(f8, blocks(4));
  const int64_t V = config.vocab;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(V - 1));
  std::vector<int32_t> tokens(24);
  for (int32_t &t : tokens)
    t = tok(rng);
  const auto a = runStep(exBf16, TestStep::sequence(tokens, 0, 3), V);
  const auto b = runStep(exFp8, TestStep::sequence(tokens, 0, 3), V);
  ASSERT_EQ(a.size(), b.size());
  const double rel = relativeL2(b, a);
  RecordProperty("fp8_vs_bf16_rel_l2", std::to_string(rel));
  EXPECT_LT(rel, 5e-2);
  EXPECT_GT(rel, 1e-4);

  // Prefill then decode reads the same rounded rows as one prefill.
  ReferenceExecutor inc(f8, blocks(4));
  std::vector<float> pieces;
  size_t begin = 0;
  for (size_t end : {17u, 20u, 21u, 24u}) {
    std::vector<int32_t> chunk(tokens.begin() + static_cast<int64_t>(begin),
                               tokens.begin() + static_cast<int64_t>(end));
    const auto part = runStep(
        inc, TestStep::sequence(chunk, static_cast<int32_t>(begin), 3), V);
    pieces.insert(pieces.end(), part.begin(), part.end());
    begin = end;
  }
  ASSERT_EQ(pieces.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i)
    ASSERT_NEAR(pieces[i], b[i], 1e-5f) << i;
}

} // namespace

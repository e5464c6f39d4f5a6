//===- ReferenceOpsTest.cpp - Each plan op against hand-computed values ---===//
//
// Every test builds a plan of one or two ops, observes a buffer through a
// final GatherRows into the logits, and compares it with values worked out
// by hand from the op's definition in Plan.fbs.
//
//===----------------------------------------------------------------------===//

#include "TestPlan.h"

#include "runtime/reference/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace sol;
using namespace sol::test;

namespace {

ReferenceExecutor::Options smallCache() {
  ReferenceExecutor::Options o;
  o.numKvBlocks = 16;
  return o;
}

void expectNear(const std::vector<float> &actual,
                const std::vector<double> &expected, double tol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol) << "at index " << i;
}

} // namespace

TEST(ReferenceOps, EmbeddingCopiesTableRows) {
  TestPlan p;
  std::vector<float> table(15);
  for (int i = 0; i < 15; ++i)
    table[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i);
  const int w = p.weight("embed", {5, 3}, table);
  const int h = p.buffer("h", 3);
  p.op(OpKind::Embedding, "model.embed_tokens", {h, 0}, {w});
  p.observe(h);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  EXPECT_EQ(ex.vocabSize(), 3);
  const auto logits = runStep(ex, TestStep::sequence({4, 0, 2}, 0, 1), 3);
  expectNear(logits, {6, 6.5, 7, 0, 0.5, 1, 3, 3.5, 4});
}

TEST(ReferenceOps, ConvertsBf16AndF16Weights) {
  TestPlan p;
  const int wb = p.weight("bf16", {1, 2}, {3.14159f, -0.1f}, DType::BF16);
  const int wh = p.weight("f16", {1, 2}, {3.14159f, 0.1f}, DType::F16);
  const int a = p.buffer("a", 2);
  const int b = p.buffer("b", 2);
  const int sum = p.buffer("sum", 2);
  p.op(OpKind::Embedding, "e1", {a, 0}, {wb});
  p.op(OpKind::Embedding, "e2", {b, 0}, {wh});
  p.op(OpKind::Add, "add", {sum, a, b});
  p.observe(sum);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto logits = runStep(ex, TestStep::sequence({0}, 0, 1), 2);
  // bf16(3.14159) = 3.140625, bf16(-0.1) = -0.10009765625;
  // f16(3.14159) = 3.140625, f16(0.1) = 0.0999755859375.
  ASSERT_EQ(logits.size(), 2u);
  EXPECT_EQ(logits[0], 3.140625f + 3.140625f);
  EXPECT_EQ(logits[1], -0.10009765625f + 0.0999755859375f);
}

TEST(ReferenceOps, RmsNormOfKnownVector) {
  TestPlan p;
  const int e = p.weight("embed", {1, 4}, {1, 2, 3, 4});
  const int g = p.weight("norm", {4}, {1, 0.5f, 2, 1});
  const int x = p.buffer("x", 4);
  const int y = p.buffer("y", 4);
  p.op(OpKind::Embedding, "embed", {x, 0}, {e});
  p.op(OpKind::RmsNorm, "norm", {y, x}, {g}, {}, {1e-5f});
  p.observe(y);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto logits = runStep(ex, TestStep::sequence({0}, 0, 1), 4);
  // mean(x^2) = 30 / 4 = 7.5
  const double inv = 1.0 / std::sqrt(7.5 + 1e-5);
  expectNear(logits, {1 * inv, 2 * inv * 0.5, 3 * inv * 2, 4 * inv});
}

// r = in + residual; residual <- r; out = rmsnorm(r) * weight. Observes the
// residual or the output.
static std::vector<float> runResidualNorm(bool observeResidual) {
  TestPlan p;
  const int ta = p.weight("a", {1, 2}, {3, 1});
  const int tb = p.weight("b", {1, 2}, {1, -5});
  const int g = p.weight("norm", {2}, {2, 1});
  const int h = p.buffer("h", 2);
  const int x = p.buffer("x", 2);
  const int y = p.buffer("y", 2);
  p.op(OpKind::Embedding, "ea", {h, 0}, {ta});
  p.op(OpKind::Embedding, "eb", {x, 0}, {tb});
  p.op(OpKind::RmsNorm, "norm", {y, x, h}, {g}, {}, {0.0f});
  p.observe(observeResidual ? h : y);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  return runStep(ex, TestStep::sequence({0}, 0, 1), 2);
}

TEST(ReferenceOps, RmsNormWithResidualUpdatesResidual) {
  // r = (3 + 1, 1 - 5) = (4, -4); rms = 4.
  expectNear(runResidualNorm(true), {4, -4});
  expectNear(runResidualNorm(false), {2 * 1.0, 1 * -1.0});
}

TEST(ReferenceOps, HeadRmsNormTouchesOnlyItsColumns) {
  TestPlan p;
  const int e = p.weight("embed", {1, 10}, {9, -9, 1, 2, 3, 4, 0, 0, 0, 2});
  const int g = p.weight("q_norm", {4}, {1, 1, 1, 2});
  const int qkv = p.buffer("qkv", 10);
  p.op(OpKind::Embedding, "embed", {qkv, 0}, {e});
  p.op(OpKind::HeadRmsNorm, "q_norm", {qkv}, {g}, {2, 2, 4}, {0.0f});
  p.observe(qkv);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto logits = runStep(ex, TestStep::sequence({0}, 0, 1), 10);
  const double inv0 = 1.0 / std::sqrt(7.5); // head 0: (1, 2, 3, 4)
  // head 1: (0, 0, 0, 2), mean square 1
  expectNear(logits,
             {9, -9, inv0, 2 * inv0, 3 * inv0, 4 * inv0 * 2, 0, 0, 0, 4});
}

TEST(ReferenceOps, LinearWithBias) {
  TestPlan p;
  const int e = p.weight("embed", {2, 3}, {1, 2, 3, 0, -1, 2});
  const int w = p.weight("proj", {2, 3}, {1, 0, 1, 2, 1, 0});
  const int b = p.weight("proj.bias", {2}, {0.5f, -1});
  const int x = p.buffer("x", 3);
  const int y = p.buffer("y", 2);
  p.op(OpKind::Embedding, "embed", {x, 0}, {e});
  p.op(OpKind::Linear, "proj", {y, x}, {w, b});
  p.observe(y);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto logits = runStep(ex, TestStep::sequence({0, 1}, 0, 1), 2);
  expectNear(logits, {4.5, 3, 2.5, -2});
}

// Odd sizes (tails of every tile) and the threaded path against a plain
// double-precision product.
TEST(ReferenceOps, LinearMatchesNaiveProductOnOddShapesAndThreads) {
  const int64_t rows = 6, n = 521, k = 1003;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> in(static_cast<size_t>(rows * k)),
      w(static_cast<size_t>(n * k)), bias(static_cast<size_t>(n));
  for (float &v : in)
    v = dist(rng);
  for (float &v : w)
    v = dist(rng);
  for (float &v : bias)
    v = dist(rng);
  TestPlan p;
  p.maxTokensPerStep = 8;
  const int e = p.weight("embed", {rows, k}, in);
  const int wi = p.weight("proj", {n, k}, w);
  const int bi = p.weight("proj.bias", {n}, bias);
  const int x = p.buffer("x", k);
  const int y = p.buffer("y", n);
  p.op(OpKind::Embedding, "embed", {x, 0}, {e});
  p.op(OpKind::Linear, "proj", {y, x}, {wi, bi});
  p.observe(y);
  PlanFile f = p.write();
  std::vector<double> expected;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t j = 0; j < n; ++j) {
      double s = bias[static_cast<size_t>(j)];
      for (int64_t i = 0; i < k; ++i)
        s += static_cast<double>(in[static_cast<size_t>(t * k + i)]) *
             w[static_cast<size_t>(j * k + i)];
      expected.push_back(s);
    }
  const TestStep step = TestStep::sequence({0, 1, 2, 3, 4, 5}, 0, 1);
  ReferenceExecutor::Options one;
  one.numThreads = 1;
  ReferenceExecutor::Options four;
  four.numThreads = 4;
  ReferenceExecutor single(f, one);
  ReferenceExecutor threaded(f, four);
  const auto a = runStep(single, step, n);
  const auto b = runStep(threaded, step, n);
  expectNear(a, expected, 1e-4);
  EXPECT_EQ(a, b) << "threads must not change the result";
}

TEST(ReferenceOps, SwigluAndAdd) {
  TestPlan p;
  const int e = p.weight("embed", {1, 4}, {1, -2, 3, 0.5f});
  const int in = p.buffer("gate_up", 4);
  const int act = p.buffer("act", 2);
  p.op(OpKind::Embedding, "embed", {in, 0}, {e});
  p.op(OpKind::Swiglu, "mlp.act", {act, in});
  p.observe(act);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto logits = runStep(ex, TestStep::sequence({0}, 0, 1), 2);
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  expectNear(logits, {silu(1) * 3, silu(-2) * 0.5});
}

// Three experts of width 1 over hidden 2; x = [1, 0] gives router logits 1,
// 1, 0: experts 0 and 1 tie.
TEST(ReferenceOps, MixtureOfExpertsRoutesAndWeighs) {
  TestPlan p;
  const int e = p.weight("embed", {1, 2}, {1, 0});
  const int router = p.weight("router", {3, 2}, {1, 0, 1, 0, 0, 0});
  const int gate = p.weight("gate", {3, 2}, {1, 0, 2, 0, 0, 0});
  const int up = p.weight("up", {3, 2}, {1, 0, 1, 0, 1, 0});
  const int down = p.weight("down", {6, 1}, {1, 2, 10, 20, 100, 200});
  const int x = p.buffer("x", 2);
  const int top1 = p.buffer("top1", 2), top2 = p.buffer("top2", 2);
  const int both = p.buffer("both", 4);
  p.op(OpKind::Embedding, "embed", {x, 0}, {e});
  // top_k 1: the tie goes to expert 0, weighed by its softmax probability.
  p.op(OpKind::Moe, "moe1", {top1, x}, {router, gate, up, down}, {1, 0});
  // top_k 2, renormalised: experts 0 and 1 at 1/2 each.
  p.op(OpKind::Moe, "moe2", {top2, x}, {router, gate, up, down}, {2, 1});
  p.op(OpKind::ConcatColumns, "both", {both, top1, top2}, {}, {0, 2, 0, 2});
  p.observe(both);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto out = runStep(ex, TestStep::sequence({0}, 0, 1), 4);
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  const double p0 = std::exp(1.0) / (2 * std::exp(1.0) + 1);
  const double h0 = silu(1), h1 = silu(2);
  expectNear(out, {p0 * h0, p0 * 2 * h0, 0.5 * (h0 + 10 * h1),
                   0.5 * (2 * h0 + 20 * h1)});
}

// gpt-oss's experts: router bias, experts' biases, clamped SwiGLU. The
// router's weights are zero, so its bias alone picks expert 1; x = (1, 0.5).
TEST(ReferenceOps, MixtureOfExpertsWithBiasesAndClampedSwiglu) {
  TestPlan p;
  const int e = p.weight("embed", {1, 2}, {1, 0.5f});
  const int router = p.weight("router", {2, 2}, {0, 0, 0, 0});
  const int gate = p.weight("gate", {2, 2}, {5, 5, 1, 0});
  const int up = p.weight("up", {2, 2}, {5, 5, 0, 1});
  const int down = p.weight("down", {4, 1}, {3, 3, 1, 2});
  const int routerBias = p.weight("router_bias", {2}, {0, 1});
  const int gateBias = p.weight("gate_bias", {2}, {0, 9});
  const int upBias = p.weight("up_bias", {2}, {0, -20});
  const int downBias = p.weight("down_bias", {4}, {7, 7, 0.5f, -0.5f});
  const int x = p.buffer("x", 2), y = p.buffer("y", 2);
  p.op(OpKind::Embedding, "embed", {x, 0}, {e});
  p.op(OpKind::Moe, "moe", {y, x},
       {router, gate, up, down, routerBias, gateBias, upBias, downBias},
       {1, 1, static_cast<int64_t>(fb::GateActivation::ClampedSilu)}, {7.0f});
  p.observe(y);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto out = runStep(ex, TestStep::sequence({0}, 0, 1), 2);
  // Expert 1: gate = 1 + 9 clamped to 7, up = 0.5 - 20 clamped to -7;
  // h = (up + 1) * gate * sigmoid(1.702 * gate); weight 1 (top-1).
  const double h = -6.0 * 7.0 / (1 + std::exp(-1.702 * 7.0));
  expectNear(out, {h * 1 + 0.5, h * 2 - 0.5}, 1e-4);
}

// sol-quantize's experts: int8 codes with a scale a row, and int4 codes
// (two a byte, the low nibble first) with a scale and a zero point a group
// of 2 inputs, give the outputs of float experts holding their values.
TEST(ReferenceOps, MixtureOfExpertsWithQuantizedExperts) {
  constexpr int E = 3, H = 4, I = 4;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> code(-8, 7), nibble(0, 15);
  std::uniform_real_distribution<float> scale(0.05f, 0.2f);
  auto raw = [](TestPlan &p, const std::string &name, DType dtype,
                std::vector<int64_t> shape, const std::vector<std::byte> &b) {
    p.weights.push_back({name, dtype, std::move(shape), b});
    return static_cast<int>(p.weights.size()) - 1;
  };
  auto floats = [](const std::vector<float> &v) {
    std::vector<std::byte> b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  for (fb::ExpertFormat format :
       {fb::ExpertFormat::Int8, fb::ExpertFormat::Int4}) {
    const bool int4 = format == fb::ExpertFormat::Int4;
    const int64_t rows[] = {E * I, E * I, E * H}, cols[] = {H, H, I};
    TestPlan quantized, plain;
    std::vector<int> q, f; // the experts' weights in each plan
    std::vector<int> quantWeights;
    for (int j = 0; j < 3; ++j) {
      const int64_t n = rows[j] * cols[j], groups = int4 ? n / 2 : rows[j];
      std::vector<std::byte> codes(static_cast<size_t>(int4 ? n / 2 : n));
      std::vector<float> scales(static_cast<size_t>(groups)), values(n);
      std::vector<std::byte> zeros(int4 ? static_cast<size_t>(groups) : 0);
      for (float &v : scales)
        v = scale(rng);
      for (std::byte &z : zeros)
        z = static_cast<std::byte>(nibble(rng));
      for (int64_t k = 0; k < n; ++k) {
        if (int4) {
          const int c = nibble(rng);
          codes[k / 2] |= static_cast<std::byte>(k % 2 ? c << 4 : c);
          values[k] =
              static_cast<float>(c - std::to_integer<int>(zeros[k / 2])) *
              scales[k / 2];
        } else {
          const int c = code(rng);
          codes[k] = static_cast<std::byte>(static_cast<int8_t>(c));
          values[k] = static_cast<float>(c) * scales[k / cols[j]];
        }
      }
      const std::string name = std::string("expert") + char('0' + j);
      q.push_back(raw(quantized, name, int4 ? DType::I4 : DType::I8,
                      {rows[j], cols[j]}, codes));
      quantWeights.push_back(
          raw(quantized, name + ".scales", DType::F32,
              int4 ? std::vector<int64_t>{rows[j], cols[j] / 2}
                   : std::vector<int64_t>{rows[j]},
              floats(scales)));
      if (int4)
        quantWeights.push_back(raw(quantized, name + ".zeros", DType::U8,
                                   {rows[j], cols[j] / 2}, zeros));
      f.push_back(plain.weight(name, {rows[j], cols[j]}, values));
    }
    // Scales first (gate, up, down), then int4's zero points.
    std::vector<int> extras;
    for (int j = 0; j < 3; ++j)
      extras.push_back(quantWeights[int4 ? 2 * j : j]);
    if (int4)
      for (int j = 0; j < 3; ++j)
        extras.push_back(quantWeights[2 * j + 1]);
    auto finish = [&](TestPlan &p, std::vector<int> experts, bool isQuant) {
      const int e = p.weight("embed", {2, H}, {1, 0.5f, -1, 2, -2, 1, 0.5f, 1});
      const int router =
          p.weight("router", {E, H}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1});
      const int x = p.buffer("x", H), y = p.buffer("y", H);
      p.op(OpKind::Embedding, "embed", {x, 0}, {e});
      std::vector<int32_t> weights = {router, experts[0], experts[1],
                                      experts[2]};
      if (isQuant)
        weights.insert(weights.end(), extras.begin(), extras.end());
      p.op(OpKind::Moe, "moe", {y, x}, weights, {2, 1});
      if (isQuant) {
        p.ops.back().expertFormat = format;
        p.ops.back().groupSize = int4 ? 2 : 0;
      }
      p.observe(y);
    };
    finish(quantized, q, true);
    finish(plain, f, false);
    PlanFile qf = quantized.write(), pf = plain.write();
    ReferenceExecutor qx(qf), px(pf);
    const TestStep step = TestStep::sequence({0, 1}, 0, 1);
    const std::vector<float> want = runStep(px, step, H);
    expectNear(runStep(qx, step, H),
               std::vector<double>(want.begin(), want.end()), 1e-6);
  }
}

// A GPTQ act-order linear's inputs: each row's columns in the named order;
// columns that are not a permutation are refused when the plan loads.
TEST(ReferenceOps, GatherColumnsPermutesEachRow) {
  auto plan = [](std::vector<int64_t> columns) {
    TestPlan p;
    const int e = p.weight("embed", {2, 3}, {1, 2, 3, 4, 5, 6});
    const int x = p.buffer("x", 3), y = p.buffer("y", 3);
    p.op(OpKind::Embedding, "embed", {x, 0}, {e});
    p.op(OpKind::GatherColumns, "gather", {y, x});
    p.ops.back().columns = std::move(columns);
    p.observe(y);
    return p;
  };
  PlanFile f = plan({2, 0, 1}).write();
  ReferenceExecutor ex(f);
  expectNear(runStep(ex, TestStep::sequence({0, 1}, 0, 1), 3),
             {3, 1, 2, 6, 4, 5});
  PlanFile bad = plan({2, 2, 1}).write();
  EXPECT_NE(errorOf([&] {
              ReferenceExecutor rejected(bad);
            }).find("the columns must be a permutation"),
            std::string::npos);
}

// Qwen2-MoE's shared-expert gate: value * sigmoid(x . w).
TEST(ReferenceOps, SigmoidGateScalesRows) {
  TestPlan p;
  const int values = p.weight("values", {1, 3}, {2, -4, 8});
  const int inputs = p.weight("inputs", {1, 2}, {1, 2});
  const int w = p.weight("gate", {1, 2}, {0.5f, -1});
  const int v = p.buffer("v", 3), x = p.buffer("x", 2), y = p.buffer("y", 3);
  p.op(OpKind::Embedding, "values", {v, 0}, {values});
  p.op(OpKind::Embedding, "inputs", {x, 0}, {inputs});
  p.op(OpKind::SigmoidGate, "gate", {y, v, x}, {w});
  p.observe(y);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  const auto out = runStep(ex, TestStep::sequence({0}, 0, 1), 3);
  const double g = 1 / (1 + std::exp(1.5)); // x . w = 0.5 - 2
  expectNear(out, {2 * g, -4 * g, 8 * g});
}

TEST(ReferenceOps, GatherRowsPicksRequestedRows) {
  TestPlan p;
  const int e = p.weight("embed", {3, 2}, {0, 1, 10, 11, 20, 21});
  const int h = p.buffer("h", 2);
  p.op(OpKind::Embedding, "embed", {h, 0}, {e});
  p.observe(h);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  TestStep s = TestStep::sequence({0, 1, 2}, 0, 1);
  s.logitRows = {2, 0, 2};
  expectNear(runStep(ex, s, 2), {20, 21, 0, 1, 20, 21});
  s.logitRows = {};
  EXPECT_TRUE(runStep(ex, s, 2).empty());
}

TEST(ReferenceOps, ArgmaxTakesLowestIndexOnTies) {
  TestPlan p;
  const float nan = std::nanf("");
  const float inf = INFINITY;
  const int e = p.weight("embed", {4, 4},
                         {1, 3, 3, 2,             // tie between 1 and 2
                          -inf, -inf, -inf, -inf, // all equal: 0
                          nan, 1, nan, 1,         // NaN never wins
                          0, 0, 0, 5});
  const int h = p.buffer("h", 4);
  p.op(OpKind::Embedding, "embed", {h, 0}, {e});
  p.observe(h);
  PlanFile f = p.write();
  ReferenceExecutor ex(f);
  std::vector<int32_t> argmax;
  runStep(ex, TestStep::sequence({0, 1, 2, 3}, 0, 1), 4, &argmax);
  EXPECT_EQ(argmax, (std::vector<int32_t>{1, 0, 1, 3}));

  // Argmax alone, without copying logits back.
  const TestStep s = TestStep::sequence({3, 0}, 0, 1);
  std::vector<int32_t> ids(2, -1);
  StepOutput out;
  out.argmax = ids;
  ex.step(s.view(), out);
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 1}));
}

//===----------------------------------------------------------------------===//
// RoPE, KV cache and attention. Tokens write q|k|v rows straight into the
// qkv buffer through an Embedding, so each row is chosen by hand.
//===----------------------------------------------------------------------===//

namespace {

struct AttentionPlan {
  TestPlan plan;
  int qkv = 0;
  int out = 0;
};

/// Embedding -> RopeKvWrite -> Attention over one layer.
AttentionPlan attentionPlan(int64_t heads, int64_t kvHeads, int64_t hd,
                            const std::vector<float> &rows, int64_t window,
                            float scale, std::vector<float> invFreq,
                            float scaling = 1.0f, int32_t blockSize = 4,
                            const std::vector<float> &sinks = {}) {
  AttentionPlan a;
  TestPlan &p = a.plan;
  const int64_t width = (heads + 2 * kvHeads) * hd;
  const int64_t vocab = static_cast<int64_t>(rows.size()) / width;
  p.kvCache(1, static_cast<int32_t>(kvHeads), static_cast<int32_t>(hd),
            blockSize);
  const int r = p.rope(std::move(invFreq), scaling);
  const int e = p.weight("embed", {vocab, width}, rows);
  a.qkv = p.buffer("qkv", width);
  a.out = p.buffer("attn", heads * hd);
  p.op(OpKind::Embedding, "embed", {a.qkv, 0}, {e});
  p.op(OpKind::RopeKvWrite, "layers.0.rope", {a.qkv}, {},
       {0, heads, kvHeads, hd, r});
  std::vector<int32_t> weights;
  if (!sinks.empty())
    weights.push_back(p.weight("sinks", {heads}, sinks));
  p.op(OpKind::Attention, "layers.0.attn", {a.out, a.qkv}, weights,
       {0, heads, kvHeads, hd, window}, {scale});
  return a;
}

} // namespace

TEST(ReferenceOps, RopeRotatesQAndKButNotV) {
  // head_dim 4: pairs (0, 2) and (1, 3), inv_freq (1, 0.5).
  const std::vector<float> rows = {
      1, 0, 0, 0, /*k*/ 0, 1, 0, 0, /*v*/ 5, 6, 7, 8, // token 0
      0, 0, 1, 0, /*k*/ 0, 0, 0, 1, /*v*/ 1, 2, 3, 4, // token 1
  };
  for (float scaling : {1.0f, 2.0f}) {
    AttentionPlan a =
        attentionPlan(1, 1, 4, rows, 0, 1.0f, {1.0f, 0.5f}, scaling);
    a.plan.observe(a.qkv);
    PlanFile f = a.plan.write();
    ReferenceExecutor ex(f, smallCache());
    // token 0 at position 1, token 1 at position 2
    const auto logits = runStep(ex, TestStep::sequence({0, 1}, 1, 1), 12);
    const double c1 = std::cos(1.0) * scaling, s1 = std::sin(1.0) * scaling;
    const double c05 = std::cos(0.5) * scaling, s05 = std::sin(0.5) * scaling;
    const double c2 = std::cos(2.0) * scaling, s2 = std::sin(2.0) * scaling;
    const double c1b = std::cos(1.0) * scaling, s1b = std::sin(1.0) * scaling;
    expectNear(logits, {
                           // q = e0 at angle 1: (cos, 0, sin, 0)
                           c1,
                           0,
                           s1,
                           0,
                           // k = e1, pair 1 at angle 0.5
                           0,
                           c05,
                           0,
                           s05,
                           // v untouched
                           5,
                           6,
                           7,
                           8,
                           // q = e2 (second half of pair 0) at angle 2:
                           // x0 = -sin, x2 = cos
                           -s2,
                           0,
                           c2,
                           0,
                           // k = e3, pair 1 at angle 2 * 0.5 = 1
                           0,
                           -s1b,
                           0,
                           c1b,
                           //
                           1,
                           2,
                           3,
                           4,
                       });
  }
}

TEST(ReferenceOps, RopeAngleIsFloatProductLikeTransformers) {
  // At position 100000 with inv_freq 0.1f the float product differs from the
  // exact one; transformers computes it in float32.
  const float invFreq = 0.1f;
  const int32_t pos = 100000;
  const std::vector<float> rows = {1, 0, 0, 0, 0, 0};
  AttentionPlan a = attentionPlan(1, 1, 2, rows, 0, 1.0f, {invFreq}, 1.0f, 4);
  a.plan.maxPositionEmbeddings = 200000;
  a.plan.observe(a.qkv);
  PlanFile f = a.plan.write();
  ReferenceExecutor::Options o;
  o.numKvBlocks = pos / 4 + 1;
  ReferenceExecutor ex(f, o);
  TestStep s = TestStep::sequence({0}, pos, pos / 4 + 1);
  const auto logits = runStep(ex, s, 6);
  const float angle = static_cast<float>(pos) * invFreq;
  EXPECT_NEAR(logits[0], static_cast<float>(std::cos(double{angle})), 1e-6);
  EXPECT_NEAR(logits[1], static_cast<float>(std::sin(double{angle})), 1e-6);
}

TEST(ReferenceOps, AttentionOverTwoKeys) {
  // head_dim 2, inv_freq 0: RoPE is the identity. Scale 0.5.
  const double ln3 = std::log(3.0);
  const std::vector<float> rows = {
      0, 0,        /*k0*/ 0,
      0, /*v0*/ 4, 0, // token 0
      1, 0,        /*k1*/ static_cast<float>(2 * ln3),
      0, /*v1*/ 0, 8, // token 1
  };
  AttentionPlan a = attentionPlan(1, 1, 2, rows, 0, 0.5f, {0.0f});
  a.plan.observe(a.out);
  PlanFile f = a.plan.write();
  ReferenceExecutor ex(f, smallCache());
  const auto logits = runStep(ex, TestStep::sequence({0, 1}, 0, 1), 2);
  // token 0 sees only itself; token 1: scores (0, ln 3) -> p = (1/4, 3/4).
  expectNear(logits, {4, 0, 1, 6});
}

TEST(ReferenceOps, AttentionSinkJoinsTheSoftmax) {
  // As AttentionOverTwoKeys, with a sink logit ln 4: one more term in the
  // denominator that belongs to no key.
  const double ln3 = std::log(3.0);
  const std::vector<float> rows = {
      0, 0,        /*k0*/ 0,
      0, /*v0*/ 4, 0, // token 0
      1, 0,        /*k1*/ static_cast<float>(2 * ln3),
      0, /*v1*/ 0, 8, // token 1
  };
  AttentionPlan a = attentionPlan(1, 1, 2, rows, 0, 0.5f, {0.0f}, 1.0f, 4,
                                  {static_cast<float>(std::log(4.0))});
  a.plan.observe(a.out);
  PlanFile f = a.plan.write();
  ReferenceExecutor ex(f, smallCache());
  const auto logits = runStep(ex, TestStep::sequence({0, 1}, 0, 1), 2);
  // token 0: weights (1, sink 4) / 5; token 1: (1, 3, sink 4) / 8.
  expectNear(logits, {0.8, 0, 0.5, 3});
}

TEST(ReferenceOps, GroupedQueryHeadsShareTheirKvHead) {
  // 4 q heads, 2 kv heads: q heads 0, 1 use kv head 0; 2, 3 use kv head 1.
  const double ln3 = std::log(3.0);
  const auto l3 = static_cast<float>(ln3);
  const std::vector<float> rows = {
      // token 0: q (4 heads), k (2 heads), v (2 heads)
      0, 0, 0, 0, 0, 0, 0, 0, /*k*/ 0, 0, l3, 0, /*v*/ 4, 0, 4, 0,
      // token 1
      1, 0, 1, 0, 1, 0, 1, 0, /*k*/ l3, 0, 0, 0, /*v*/ 0, 8, 0, 8};
  AttentionPlan a = attentionPlan(4, 2, 2, rows, 0, 1.0f, {0.0f});
  a.plan.observe(a.out);
  PlanFile f = a.plan.write();
  ReferenceExecutor ex(f, smallCache());
  const auto logits = runStep(ex, TestStep::sequence({0, 1}, 0, 1), 8);
  // token 1, kv head 0: scores (0, ln 3) -> (1, 6); kv head 1: (ln 3, 0) ->
  // 3/4 v0 + 1/4 v1 = (3, 2).
  expectNear(logits, {4, 0, 4, 0, 4, 0, 4, 0, //
                      1, 6, 1, 6, 3, 2, 3, 2});
}

TEST(ReferenceOps, SlidingWindowExcludesOldKeys) {
  // q = 0: uniform weights over the attended positions; v_j = (j + 1, 0).
  std::vector<float> rows;
  for (int j = 0; j < 4; ++j)
    rows.insert(rows.end(), {0, 0, 0, 0, static_cast<float>(j + 1), 0});
  const std::vector<std::pair<int64_t, std::vector<double>>> cases = {
      {0, {1, 1.5, 2, 2.5}},   // no window: all previous positions
      {2, {1, 1.5, 2.5, 3.5}}, // itself and one before
      {3, {1, 1.5, 2, 3}},
      {1, {1, 2, 3, 4}}, // only itself
  };
  for (const auto &[window, expected] : cases) {
    AttentionPlan a = attentionPlan(1, 1, 2, rows, window, 1.0f, {0.0f});
    a.plan.observe(a.out);
    PlanFile f = a.plan.write();
    ReferenceExecutor ex(f, smallCache());
    const auto logits = runStep(ex, TestStep::sequence({0, 1, 2, 3}, 0, 1), 2);
    std::vector<double> withZeros;
    for (double v : expected)
      withZeros.insert(withZeros.end(), {v, 0});
    expectNear(logits, withZeros);
  }
}

TEST(ReferenceOps, SlidingWindowDoesNotNeedBlocksBehindTheWindow) {
  std::vector<float> rows;
  for (int j = 0; j < 4; ++j)
    rows.insert(rows.end(), {0, 0, 0, 0, static_cast<float>(j + 1), 0});
  // Block size 1; the decode step's table no longer names blocks 0 and 1.
  for (int64_t window : {2, 0}) {
    AttentionPlan a = attentionPlan(1, 1, 2, rows, window, 1.0f, {0.0f}, 1.0f,
                                    /*blockSize=*/1);
    a.plan.observe(a.out);
    PlanFile f = a.plan.write();
    ReferenceExecutor ex(f, smallCache());
    runStep(ex, TestStep::sequence({0, 1, 2}, 0, 4), 2);
    TestStep decode = TestStep::sequence({3}, 3, 4);
    decode.blockTables = {-1, -1, 2, 3};
    if (window == 2) {
      expectNear(runStep(ex, decode, 2), {3.5, 0});
    } else {
      EXPECT_NE(errorOf([&] {
                  runStep(ex, decode, 2);
                }).find("has block id -1 in block-table entry 0"),
                std::string::npos);
    }
  }
}

TEST(ReferenceOps, KvCacheFollowsTheBlockTable) {
  // Two sequences in one step, interleaved, each in non-contiguous blocks of
  // size 2; q = 0, so each token's output is the mean of its sequence's v.
  std::vector<float> rows;
  for (int j = 0; j < 6; ++j)
    rows.insert(rows.end(), {0, 0, 0, 0, static_cast<float>(j), 0});
  AttentionPlan a = attentionPlan(1, 1, 2, rows, 0, 1.0f, {0.0f}, 1.0f, 2);
  a.plan.observe(a.out);
  PlanFile f = a.plan.write();
  ReferenceExecutor::Options o;
  o.numKvBlocks = 8;
  ReferenceExecutor ex(f, o);
  TestStep s;
  // seq 0: tokens 0, 2, 4; seq 1: tokens 1, 3, 5 (ids = v values).
  s.tokens = {0, 1, 2, 3, 4, 5};
  s.positions = {0, 0, 1, 1, 2, 2};
  s.tokenSeq = {0, 1, 0, 1, 0, 1};
  s.logitRows = {0, 1, 2, 3, 4, 5};
  s.numSeqs = 2;
  s.maxBlocksPerSeq = 2;
  s.blockTables = {5, 2, /*seq 1*/ 0, 7};
  expectNear(runStep(ex, s, 2), {0, 0, 1, 0, 1, 0, 2, 0, 2, 0, 3, 0});

  // A decode step of sequence 1 alone reads what the first step stored.
  TestStep d;
  d.tokens = {0};
  d.positions = {3};
  d.tokenSeq = {0};
  d.logitRows = {0};
  d.numSeqs = 1;
  d.maxBlocksPerSeq = 2;
  d.blockTables = {0, 7};
  expectNear(runStep(ex, d, 2), {(1 + 3 + 5 + 0) / 4.0, 0});

  // A sequence whose table starts with sequence 0's block 5 reads what
  // sequence 0 stored there (positions 0 and 1: v = 0 and 2), which holds
  // only if the cache is addressed through the table.
  TestStep shared = d;
  shared.tokens = {5};
  shared.positions = {2};
  shared.blockTables = {5, 6};
  expectNear(runStep(ex, shared, 2), {(0 + 2 + 5) / 3.0, 0});
}

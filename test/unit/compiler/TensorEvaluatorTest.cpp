//===- TensorEvaluatorTest.cpp - calibration's float32 evaluation ---------===//
//
// linearFloat (packed panels, tiles of 6 x 16, FMA where the CPU has it)
// against a double-precision reference on shapes that leave partial tiles,
// panels and row chunks, with and without bias; every output is written.
// A sol.moe evaluated as calibration runs it (experts stacked by
// sol.concat_weights, read one at a time, and one stacked weight read
// whole) against a double-precision mixture, and the routing both
// calibration evaluators share (routeMixture) on ties. The CPU calibration
// evaluator's searches through a mixture (candidates replacing the stacked
// gate and up; each expert's down projection) against double precision.
//
//===----------------------------------------------------------------------===//
#include "passes/TensorEvaluator.h"
#include "passes/CalibrationEvaluator.h"

#include "runtime/support/Quantize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include <cmath>
#include <random>

namespace sol {
namespace {

void checkLinear(int64_t rows, int64_t n, int64_t k, bool withBias) {
  SCOPED_TRACE(testing::Message() << rows << "x" << n << "x" << k
                                  << (withBias ? " with bias" : ""));
  std::mt19937 rng(static_cast<unsigned>(rows * 131 + n * 7 + k));
  std::normal_distribution<float> normal;
  std::vector<float> x(rows * k), w(n * k), bias;
  for (float &v : x)
    v = normal(rng);
  for (float &v : w)
    v = normal(rng);
  if (withBias)
    for (int64_t i = 0; i < n; ++i)
      bias.push_back(normal(rng));
  std::vector<float> out(rows * n, NAN);
  linearFloat(out, x, w, bias, rows, n, k);
  double errSquared = 0.0, refSquared = 0.0;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = 0; c < n; ++c) {
      double ref = withBias ? bias[c] : 0.0;
      for (int64_t i = 0; i < k; ++i)
        ref += static_cast<double>(x[t * k + i]) * w[c * k + i];
      const float got = out[t * n + c];
      ASSERT_TRUE(std::isfinite(got)) << "output " << t << ", " << c;
      errSquared += (got - ref) * (got - ref);
      refSquared += ref * ref;
    }
  EXPECT_LT(std::sqrt(errSquared / refSquared), 1e-6);
}

TEST(TensorEvaluatorTest, LinearFloatMatchesDouble) {
  checkLinear(1, 1, 1, false);
  checkLinear(5, 15, 7, true);
  checkLinear(13, 37, 29, true);
  checkLinear(97, 16, 64, false); // two row chunks, one full panel
  checkLinear(200, 33, 384, true);
}

// routeMixture, which both calibration evaluators route with: the softmax's
// top k, the lower index first on ties, renormalised over the chosen ones
// when the model says so, each expert's tokens in token order.
TEST(TensorEvaluatorTest, RouteMixtureTakesTheLowerIndexOnTies) {
  mlir::MLIRContext context;
  context.loadDialect<SolDialect, mlir::func::FuncDialect>();
  for (bool normalize : {true, false}) {
    SCOPED_TRACE(normalize ? "normalize_top_k" : "softmax weights");
    const std::string ir =
        std::string(R"mlir(
func.func @f(%x: tensor<?x2xf32>, %r: tensor<4x2xf32>, %g: tensor<8x2xf32>, %d: tensor<8x2xf32>) -> tensor<?x2xf32> {
  %y = sol.moe %x, %r, %g, %g, %d {top_k = 2 : i64, normalize_top_k = )mlir") +
        (normalize ? "true" : "false") +
        R"mlir(} : (tensor<?x2xf32>, tensor<4x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}
)mlir";
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
    ASSERT_TRUE(module);
    MoeOp moe;
    module->walk([&](MoeOp op) { moe = op; });
    ASSERT_TRUE(moe);
    // Token 0: experts 1 and 2 tie above the rest; token 1: all four tie;
    // token 2: expert 3, then 0.
    std::vector<float> logits = {1, 3, 3, 0, 0, 0, 0, 0, 2, -1, -1, 4};
    const MixtureRouting routed = routeMixture(moe, logits, 3);
    ASSERT_EQ(routed.size(), 4u);
    auto tokensOf = [&](int e) {
      std::vector<int64_t> t;
      for (auto [token, w] : routed[e])
        t.push_back(token);
      return t;
    };
    EXPECT_EQ(tokensOf(0), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(tokensOf(1), (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(tokensOf(2), (std::vector<int64_t>{0}));
    EXPECT_EQ(tokensOf(3), (std::vector<int64_t>{2}));
    // Weights: p / (sum of the chosen) or p / (sum of all).
    const double e1 = std::exp(-2.0);
    const double tie =
        normalize ? 0.5 : 1 / (2 + std::exp(-2.0) + std::exp(-3.0));
    EXPECT_NEAR(routed[1][0].second, tie, 1e-6);
    EXPECT_NEAR(routed[2][0].second, tie, 1e-6);
    EXPECT_NEAR(routed[0][0].second, normalize ? 0.5 : 0.25, 1e-6);
    const double all = 1 + e1 + 2 * std::exp(-5.0);
    EXPECT_NEAR(routed[3][0].second, normalize ? 1 / (1 + e1) : 1 / all, 1e-6);
    EXPECT_NEAR(routed[0][1].second, normalize ? e1 / (1 + e1) : e1 / all,
                1e-6);
  }
}

} // namespace
} // namespace sol

namespace sol {
namespace {

// Three experts of width 2 over hidden 4, top 2 without renormalisation:
// gate and down stacked from per-expert weights, up one weight.
struct Mixture {
  static constexpr int64_t E = 3, H = 4, I = 2, K = 2, V = 5;
  std::vector<float> embed, router, up;
  std::vector<std::vector<float>> gate, down;
  WeightStore store;
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  const std::vector<std::vector<int32_t>> sequences = {{0, 1, 2, 3, 4, 2}};

  Mixture() {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    auto random = [&](size_t n) {
      std::vector<float> v(n);
      for (float &x : v)
        x = normal(rng);
      return v;
    };
    embed = random(V * H);
    router = random(E * H);
    up = random(E * I * H);
    auto add = [&](const std::string &name, std::vector<int64_t> shape,
                   const std::vector<float> &v) {
      store.addView(name, DType::F32, std::move(shape),
                    std::as_bytes(std::span(v)));
    };
    add("embed", {V, H}, embed);
    add("router", {E, H}, router);
    add("up", {E * I, H}, up);
    for (int64_t e = 0; e < E; ++e) {
      gate.push_back(random(I * H));
      down.push_back(random(H * I));
    }
    for (int64_t e = 0; e < E; ++e) {
      add("gate" + std::to_string(e), {I, H}, gate[e]);
      add("down" + std::to_string(e), {H, I}, down[e]);
    }
    const std::string ir = R"mlir(
func.func @f(%tok: tensor<?xi32> {sol.name = "tokens"}) -> tensor<?x4xf32> {
  %emb = sol.weight @embed : tensor<5x4xf32>
  %x = sol.embedding %tok, %emb : (tensor<?xi32>, tensor<5x4xf32>) -> tensor<?x4xf32>
  %r = sol.weight @router : tensor<3x4xf32>
  %g0 = sol.weight @gate0 : tensor<2x4xf32>
  %g1 = sol.weight @gate1 : tensor<2x4xf32>
  %g2 = sol.weight @gate2 : tensor<2x4xf32>
  %g = sol.concat_weights %g0, %g1, %g2 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<6x4xf32>
  %u = sol.weight @up : tensor<6x4xf32>
  %d0 = sol.weight @down0 : tensor<4x2xf32>
  %d1 = sol.weight @down1 : tensor<4x2xf32>
  %d2 = sol.weight @down2 : tensor<4x2xf32>
  %d = sol.concat_weights %d0, %d1, %d2 : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<12x2xf32>
  %y = sol.moe %x, %r, %g, %u, %d {top_k = 2 : i64, normalize_top_k = false} : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<12x2xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
)mlir";
    context.loadDialect<SolDialect, mlir::func::FuncDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
  }
  mlir::func::FuncOp fn() {
    return *module->getOps<mlir::func::FuncOp>().begin();
  }
  MoeOp moe() { return *fn().getOps<MoeOp>().begin(); }
  const float *x(int64_t t) const { return embed.data() + sequences[0][t] * H; }
  /// Token t's routing: the top K experts and their weights, in double.
  std::vector<std::pair<int64_t, double>> route(int64_t t) const {
    std::vector<double> p(E);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t h = 0; h < H; ++h)
        p[e] += double(x(t)[h]) * router[e * H + h];
    const double top = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double &v : p)
      sum += (v = std::exp(v - top));
    std::vector<int64_t> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    std::vector<std::pair<int64_t, double>> chosen;
    for (int64_t k = 0; k < K; ++k)
      chosen.push_back({order[k], p[order[k]] / sum});
    return chosen;
  }
  /// Expert e's down-projection input for token t, in double.
  std::vector<double> hidden(int64_t t, int64_t e, std::span<const float> gateE,
                             std::span<const float> upE) const {
    std::vector<double> h(I);
    for (int64_t i = 0; i < I; ++i) {
      double g = 0, u = 0;
      for (int64_t j = 0; j < H; ++j) {
        g += double(gateE[i * H + j]) * x(t)[j];
        u += double(upE[i * H + j]) * x(t)[j];
      }
      h[i] = g / (1 + std::exp(-g)) * u;
    }
    return h;
  }
  std::span<const float> upOf(int64_t e) const {
    return std::span(up).subspan(e * I * H, I * H);
  }
};

TEST(TensorEvaluatorTest, MixtureOfExpertsMatchesDouble) {
  Mixture m;
  ASSERT_TRUE(m.module);
  auto fn = m.fn();
  TensorEvaluator evaluator(fn, m.store, m.sequences);
  mlir::Operation *ret = fn.getBody().front().getTerminator();
  ASSERT_TRUE(mlir::succeeded(evaluator.runUntil(ret)));
  const Activation &y = evaluator.value(ret->getOperand(0));
  ASSERT_EQ(y.rows, 6);
  constexpr int64_t H = Mixture::H, I = Mixture::I;
  for (int64_t t = 0; t < y.rows; ++t)
    for (int64_t j = 0; j < H; ++j) {
      double want = 0;
      for (auto [e, p] : m.route(t)) {
        const std::vector<double> h = m.hidden(t, e, m.gate[e], m.upOf(e));
        double sumDown = 0;
        for (int64_t i = 0; i < I; ++i)
          sumDown += m.down[e][j * I + i] * h[i];
        want += p * sumDown;
      }
      EXPECT_NEAR(y.row(t)[j], want, 1e-5 * (1 + std::abs(want)))
          << "token " << t << " column " << j;
    }
}

/// Q(W · s) / s of an [n, k] weight in int4 groups of g, in double from
/// quant::quantizeInt4's codes.
std::vector<double> awqReference(std::span<const float> w, int64_t n,
                                 std::span<const float> s, int64_t g) {
  const int64_t k = static_cast<int64_t>(s.size());
  std::vector<float> scaled(w.size());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      scaled[r * k + c] = w[r * k + c] * s[c];
  std::vector<float> q(w.size());
  quant::dequantize(quant::quantizeInt4(scaled, n, k, g), q);
  std::vector<double> out(w.size());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      out[r * k + c] = double(q[r * k + c]) / s[c];
  return out;
}

// What AWQ asks of a mixture on the CPU: a candidate that replaces the
// stacked gate and up changes the mixture's output as those weights would,
// and an expert's own search sees the rows routed to it, their down input
// and the error of its down projection alone.
TEST(TensorEvaluatorTest, CalibrationSearchesThroughMixtures) {
  Mixture m;
  ASSERT_TRUE(m.module);
  constexpr int64_t E = Mixture::E, H = Mixture::H, I = Mixture::I;
  MoeOp moe = m.moe();
  std::unique_ptr<CalibrationEvaluator> evaluator =
      createCpuCalibrationEvaluator(m.fn(), m.store, m.sequences);
  ASSERT_TRUE(mlir::succeeded(evaluator->runUntil(moe)));

  // Gate and up quantized with scales s in groups of 2.
  const std::vector<float> s = {1.5f, 0.5f, 2.0f, 1.0f};
  std::vector<float> gateAll;
  for (const auto &g : m.gate)
    gateAll.insert(gateAll.end(), g.begin(), g.end());
  const std::vector<std::vector<float>> values = {gateAll, m.up};
  const llvm::SmallVector<mlir::Value> weights = {moe.getGate(), moe.getUp()};
  mlir::Operation *ops[] = {moe};
  mlir::Value outputs[] = {moe.getResult()};
  ASSERT_TRUE(
      mlir::succeeded(evaluator->setReference(ops, outputs, weights, values)));
  mlir::FailureOr<double> error =
      evaluator->candidateError(weights, values, s, 2);
  ASSERT_TRUE(mlir::succeeded(error));
  const std::vector<double> gateQ = awqReference(gateAll, E * I, s, 2);
  const std::vector<double> upQ = awqReference(m.up, E * I, s, 2);
  double want = 0;
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t j = 0; j < H; ++j) {
      double ref = 0, got = 0;
      for (auto [e, p] : m.route(t)) {
        std::vector<float> gq(I * H), uq(I * H);
        for (int64_t i = 0; i < I * H; ++i) {
          gq[i] = static_cast<float>(gateQ[e * I * H + i]);
          uq[i] = static_cast<float>(upQ[e * I * H + i]);
        }
        const std::vector<double> h = m.hidden(t, e, m.gate[e], m.upOf(e));
        const std::vector<double> hq = m.hidden(t, e, gq, uq);
        for (int64_t i = 0; i < I; ++i) {
          ref += p * m.down[e][j * I + i] * h[i];
          got += p * m.down[e][j * I + i] * hq[i];
        }
      }
      want += (got - ref) * (got - ref);
    }
  want /= 6 * H;
  EXPECT_GT(want, 0.0);
  EXPECT_NEAR(*error, want, 1e-4 * want);

  // Each expert: its tokens, |h| per column, and the candidate error of
  // its down projection alone.
  int64_t routedRows = 0;
  for (int64_t e = 0; e < E; ++e) {
    SCOPED_TRACE(testing::Message() << "expert " << e);
    std::vector<int64_t> tokens;
    for (int64_t t = 0; t < 6; ++t)
      for (auto [chosen, p] : m.route(t))
        if (chosen == e)
          tokens.push_back(t);
    mlir::FailureOr<int64_t> rows =
        evaluator->selectExpert(moe, e, m.gate[e], m.upOf(e), m.down[e]);
    ASSERT_TRUE(mlir::succeeded(rows));
    ASSERT_EQ(*rows, static_cast<int64_t>(tokens.size()));
    routedRows += *rows;
    if (tokens.empty())
      continue;
    const std::vector<double> sums = evaluator->expertHiddenAbsSums();
    ASSERT_EQ(sums.size(), static_cast<size_t>(I));
    const std::vector<float> hs = {0.75f, 2.0f};
    const std::vector<double> downQ = awqReference(m.down[e], H, hs, 2);
    double wantSums[I] = {}, wantError = 0;
    for (int64_t t : tokens) {
      const std::vector<double> h = m.hidden(t, e, m.gate[e], m.upOf(e));
      for (int64_t i = 0; i < I; ++i)
        wantSums[i] += std::abs(h[i]);
      for (int64_t j = 0; j < H; ++j) {
        double d = 0;
        for (int64_t i = 0; i < I; ++i)
          d += (downQ[j * I + i] - m.down[e][j * I + i]) * h[i];
        wantError += d * d;
      }
    }
    for (int64_t i = 0; i < I; ++i)
      EXPECT_NEAR(sums[i], wantSums[i], 1e-5 * (1 + wantSums[i]));
    wantError /= static_cast<double>(tokens.size() * H);
    mlir::FailureOr<double> expertError =
        evaluator->expertCandidateError(hs, 2);
    ASSERT_TRUE(mlir::succeeded(expertError));
    EXPECT_NEAR(*expertError, wantError, 1e-4 * wantError + 1e-12);
    // The input rows it samples are its tokens' rows.
    const std::vector<float> sampled =
        evaluator->sampleExpertRows(false, static_cast<int64_t>(tokens.size()));
    for (size_t r = 0; r < tokens.size(); ++r)
      for (int64_t j = 0; j < H; ++j)
        EXPECT_EQ(sampled[r * H + j], m.x(tokens[r])[j]);
  }
  EXPECT_EQ(routedRows, 6 * Mixture::K);
}

} // namespace
} // namespace sol

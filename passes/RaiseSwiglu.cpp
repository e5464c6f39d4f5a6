//===- RaiseSwiglu.cpp - sol-raise-swiglu ---------------------------------===//
//
// The gated MLP's activation, silu(gate) * up. ONNX has no SiLU, so
// exporters write it as Mul(g, Sigmoid(g)) (either operand order). Raised
// once the gate and up projections are Sol linears.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISESWIGLU
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// The g of silu(g) = g * sigmoid(g), or null.
Value siluInput(Value v) {
  OnnxOp mul = producer(skipFloatCasts(v), "Mul");
  if (!mul)
    return {};
  for (int i = 0; i < 2; ++i)
    if (OnnxOp sigmoid = producer(mul.getInputs()[1 - i], "Sigmoid"))
      if (skipFloatCasts(sigmoid.getInputs()[0]) ==
          skipFloatCasts(mul.getInputs()[i]))
        return skipFloatCasts(mul.getInputs()[i]);
  return {};
}

/// silu(gate) * up -> sol.swiglu(gate, up), both raised values.
struct RaiseSwiglu : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getOpType() != "Mul" || !mul.getDomain().empty())
      return failure();
    for (int i = 0; i < 2; ++i) {
      Value gate = siluInput(mul.getInputs()[i]);
      if (!gate)
        continue;
      Value g = viewedSolValue(gate);
      Value u = viewedSolValue(skipFloatCasts(mul.getInputs()[1 - i]));
      if (!g || !u || g.getType() != u.getType())
        return nearMiss(rewriter, mul,
                        "gate and up are not raised values of one width");
      rewriter.setInsertionPoint(mul);
      Value act = rewriter.create<SwigluOp>(mul.getLoc(), g.getType(), g, u);
      replaceWithView(rewriter, mul, act);
      return success();
    }
    return failure();
  }
};

struct SolRaiseSwigluPass : sol::impl::SolRaiseSwigluBase<SolRaiseSwigluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseSwiglu>(&getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-swiglu")))
      signalPassFailure();
  }
};

} // namespace

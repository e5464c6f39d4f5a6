//===- RaiseSwiglu.cpp - sol-raise-swiglu ---------------------------------===//
//
// The gated MLP's activation, act(gate) * up. ONNX has no SiLU, so
// exporters write silu as Mul(g, Sigmoid(g)) (either operand order);
// Gemma's gelu_tanh is opset 20's Gelu(approximate = "tanh") or
// com.microsoft FastGelu. Raised once the gate and up projections are Sol
// linears.
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

/// The g of gelu_tanh(g): opset 20's Gelu with approximate = "tanh"
/// (onnxruntime-genai's FastGelu for gelu_pytorch_tanh) or com.microsoft
/// FastGelu without a bias; null otherwise.
Value geluTanhInput(Value v) {
  auto op = skipFloatCasts(v).getDefiningOp<OnnxOp>();
  if (!op || op.getInputs().empty())
    return {};
  if (op.getOpType() == "Gelu" && op.getDomain().empty()) {
    auto approximate =
        dyn_cast_or_null<StringAttr>(op.getOnnxAttr("approximate"));
    if (approximate && approximate.getValue() == "tanh")
      return skipFloatCasts(op.getInputs()[0]);
  }
  if (op.getOpType() == "FastGelu" && op.getDomain() == "com.microsoft" &&
      (op.getInputs().size() < 2 || isa<NoneType>(op.getInputs()[1].getType())))
    return skipFloatCasts(op.getInputs()[0]);
  return {};
}

/// act(gate) * up -> sol.swiglu(gate, up), both raised values: silu, or
/// gelu_tanh (Gemma's gated MLP).
struct RaiseSwiglu : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getOpType() != "Mul" || !mul.getDomain().empty())
      return failure();
    for (int i = 0; i < 2; ++i) {
      GateActivation act = GateActivation::Silu;
      Value gate = siluInput(mul.getInputs()[i]);
      if (!gate && (gate = geluTanhInput(mul.getInputs()[i])))
        act = GateActivation::GeluTanh;
      if (!gate)
        continue;
      Value g = viewedSolValue(gate);
      Value u = viewedSolValue(skipFloatCasts(mul.getInputs()[1 - i]));
      if (!g || !u || g.getType() != u.getType())
        return nearMiss(rewriter, mul,
                        "gate and up are not raised values of one width");
      rewriter.setInsertionPoint(mul);
      Value gated = rewriter.create<SwigluOp>(
          mul.getLoc(), g.getType(), g, u,
          GateActivationAttr::get(rewriter.getContext(), act));
      replaceWithView(rewriter, mul, gated);
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

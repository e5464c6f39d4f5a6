//===- FuseNormLinear.cpp - sol-fuse-norm-linear --------------------------===//
//
// A decoder layer normalises the residual stream before the QKV and the
// gate/up projections. With the norm in the projection's prologue, a
// few-row GEMV recomputes it in each block (the rows are small) instead of
// launching a norm kernel and reading its output back.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/WeightOrder.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLFUSENORMLINEAR
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// linear(rms_norm(h, w), W) -> norm_linear(h, w, W).
struct FuseNormLinear : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp linear,
                                PatternRewriter &rewriter) const override {
    auto norm = linear.getInput().getDefiningOp<RmsNormOp>();
    if (!norm || !norm->hasOneUse())
      return rewriter.notifyMatchFailure(linear, "not the norm's only user");
    Value h = norm.getInput();
    if (norm.getWeight().getType().getDimSize(0) !=
        norm.getType().getDimSize(1))
      return rewriter.notifyMatchFailure(linear, "a per-head norm");
    if (h.getDefiningOp<AddOp>())
      return rewriter.notifyMatchFailure(linear, "sol-fuse-add-norm's case");
    // The linear recomputes the norm from h where it runs: h must not change
    // in between (only weights between), nor be the buffer it adds into.
    if (!onlyWeightsBetween(norm, linear))
      return rewriter.notifyMatchFailure(linear, "ops between norm and linear");
    if (linear.getResidual() &&
        storageRoot(linear.getResidual()) == storageRoot(h))
      return rewriter.notifyMatchFailure(linear, "adds into the norm's input");
    rewriter.setInsertionPoint(linear);
    auto fused = rewriter.create<NormLinearOp>(
        linear.getLoc(), linear.getType(), h, norm.getWeight(),
        norm.getEpsilonAttr(), linear.getWeight(), linear.getBias(),
        linear.getResidual(), linear.getWeightScales(), linear.getWeightZeros(),
        linear.getEpilogueAttr(), linear.getQuantAttr(),
        linear.getGroupSizeAttr());
    rewriter.replaceOp(linear, fused.getResult());
    rewriter.eraseOp(norm);
    return success();
  }
};

struct SolFuseNormLinearPass
    : sol::impl::SolFuseNormLinearBase<SolFuseNormLinearPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseNormLinear>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

//===- FuseAddNorm.cpp - sol-fuse-add-norm --------------------------------===//
//
// A residual add whose sum is normalised right away (the next sub-layer's
// input norm) runs as one kernel that writes the sum into the residual's
// buffer and the normalised rows beside it: one launch and one read of the
// rows instead of two. A norm of the added rows (Gemma's sandwich norms)
// joins the same kernel.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/WeightOrder.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLFUSEADDNORM
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// rms_norm(add(r, x)) -> add_rms_norm(x, r): the sum in r's buffer.
struct FuseAddNorm : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RmsNormOp norm,
                                PatternRewriter &rewriter) const override {
    auto add = norm.getInput().getDefiningOp<AddOp>();
    if (!add)
      return rewriter.notifyMatchFailure(norm, "the input is not an add");
    if (norm.getWeight().getType().getDimSize(0) !=
        norm.getType().getDimSize(1))
      return rewriter.notifyMatchFailure(norm, "a per-head norm");
    // The norm computes the sum where the add was: nothing but weights may
    // run in between, and the norm must be the sum's first reader.
    if (!onlyWeightsBetween(add, norm))
      return rewriter.notifyMatchFailure(norm, "ops between add and norm");
    // The kernel reads whole rows of both addends and writes the sum over
    // the residual's, which must be dead after the add.
    Value residual = add.getLhs(), x = add.getRhs();
    if (residual.getDefiningOp<SplitOp>() || x.getDefiningOp<SplitOp>())
      return rewriter.notifyMatchFailure(norm, "an addend is a column slice");
    if (isa<BlockArgument>(residual) || !unusedAfter(residual, add) ||
        storageRoot(residual) == storageRoot(x))
      return rewriter.notifyMatchFailure(norm, "the residual stays live");
    rewriter.setInsertionPoint(norm);
    auto fused = rewriter.create<AddRmsNormOp>(
        norm.getLoc(), norm.getType(), add.getType(), x, residual,
        norm.getWeight(), norm.getEpsilonAttr(), /*input_weight=*/Value(),
        /*input_epsilon=*/nullptr);
    rewriter.replaceOp(norm, fused.getNormed());
    rewriter.replaceOp(add, fused.getSum());
    return success();
  }
};

/// add_rms_norm(rms_norm(x, w1), r, w2) -> add_rms_norm(x, r, w2,
/// input_norm w1): a norm of the sub-layer's output before the residual add
/// (Gemma's post-attention and post-MLP norms) runs in the add's kernel.
struct FoldInputNorm : OpRewritePattern<AddRmsNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddRmsNormOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getInputWeight())
      return rewriter.notifyMatchFailure(op, "the input is normalised already");
    auto norm = op.getInput().getDefiningOp<RmsNormOp>();
    if (!norm || !norm->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the input is not a norm's alone");
    if (norm.getWeight().getType().getDimSize(0) !=
        norm.getType().getDimSize(1))
      return rewriter.notifyMatchFailure(op, "a per-head norm");
    Value x = norm.getInput();
    if (x.getDefiningOp<SplitOp>() ||
        storageRoot(x) == storageRoot(op.getResidual()))
      return rewriter.notifyMatchFailure(op, "the norm's input is a column "
                                             "slice or the residual");
    rewriter.setInsertionPoint(op);
    auto fused = rewriter.create<AddRmsNormOp>(
        op.getLoc(), op.getNormed().getType(), op.getSum().getType(), x,
        op.getResidual(), op.getWeight(), op.getEpsilonAttr(), norm.getWeight(),
        norm.getEpsilonAttr());
    rewriter.replaceOp(op, fused.getResults());
    rewriter.eraseOp(norm);
    return success();
  }
};

struct SolFuseAddNormPass : sol::impl::SolFuseAddNormBase<SolFuseAddNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAddNorm, FoldInputNorm>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

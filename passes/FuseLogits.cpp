//===- FuseLogits.cpp - sol-fuse-logits -----------------------------------===//
//
// A decode step wants logits for one token per sequence, a prompt chunk for
// its last token only: gathering those rows first runs the final norm and
// the LM head (the largest GEMM of a small model) on R rows instead of T.
// The norm then goes into the LM head's prologue.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLFUSELOGITS
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

struct FuseLogits : OpRewritePattern<LogitsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LogitsOp logits,
                                PatternRewriter &rewriter) const override {
    Location loc = logits.getLoc();
    Value rows = logits.getRows();
    auto rowsType = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      return RankedTensorType::get({ShapedType::kDynamic, t.getDimSize(1)},
                                   t.getElementType());
    };
    rewriter.setInsertionPoint(logits);
    // The last residual add, when it is still separate: gather its addends
    // and add them on the gathered rows, in the norm's kernel.
    if (auto add = logits.getHidden().getDefiningOp<AddOp>();
        add && add->hasOneUse()) {
      Value lhs = rewriter.create<GatherRowsOp>(loc, rowsType(add.getLhs()),
                                                add.getLhs(), rows);
      Value rhs = rewriter.create<GatherRowsOp>(loc, rowsType(add.getRhs()),
                                                add.getRhs(), rows);
      auto norm = rewriter.create<AddRmsNormOp>(
          loc, lhs.getType(), lhs.getType(), rhs, lhs, logits.getNormWeight(),
          logits.getEpsilonAttr(), /*input_weight=*/Value(),
          /*input_epsilon=*/nullptr);
      Value head = rewriter.create<LinearOp>(
          loc, logits.getType(), norm.getNormed(), logits.getLmHead(), Value());
      rewriter.replaceOp(logits, softcapLogits(rewriter, logits, head));
      rewriter.eraseOp(add);
      return success();
    }
    Value hidden = logits.getHidden();
    Value gathered =
        rewriter.create<GatherRowsOp>(loc, rowsType(hidden), hidden, rows);
    Value head = rewriter.create<NormLinearOp>(
        loc, logits.getType(), gathered, logits.getNormWeight(),
        logits.getEpsilonAttr(), logits.getLmHead(), Value(), Value(),
        LinearEpilogueAttr::get(getContext(), LinearEpilogue::None));
    rewriter.replaceOp(logits, softcapLogits(rewriter, logits, head));
    return success();
  }
};

struct SolFuseLogitsPass : sol::impl::SolFuseLogitsBase<SolFuseLogitsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLogits>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

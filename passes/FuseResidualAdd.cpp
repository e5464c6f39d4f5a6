//===- FuseResidualAdd.cpp - sol-fuse-residual-add ------------------------===//
//
// The residual stream of a decoder layer is updated twice (after attention
// and after the MLP) by adding a projection's output. Done in the
// projection's epilogue, the add costs neither a launch nor a round trip of
// the activations through memory.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLFUSERESIDUALADD
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// add(r, linear(x)) -> linear(x) residual(r), in place on r's buffer.
struct FuseResidualAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (Value y : {add.getRhs(), add.getLhs()}) {
      auto linear = y.getDefiningOp<LinearOp>();
      Value residual = y == add.getRhs() ? add.getLhs() : add.getRhs();
      if (!linear || linear.getEpilogue() != LinearEpilogue::None ||
          !y.hasOneUse() || linear->getBlock() != add->getBlock() ||
          residual == y)
        continue;
      // The sum is written where r lives when the linear runs: r must exist
      // by then, be a whole buffer of its own, and nothing may read it after
      // the linear.
      if (isa<BlockArgument>(residual) || residual.getDefiningOp<SplitOp>() ||
          residual.getDefiningOp()->getBlock() != linear->getBlock() ||
          !residual.getDefiningOp()->isBeforeInBlock(linear))
        continue;
      if (!llvm::all_of(residual.getUsers(), [&](Operation *user) {
            return user == add.getOperation() ||
                   (user->getBlock() == linear->getBlock() &&
                    user->isBeforeInBlock(linear));
          }))
        continue;
      // Blocks read all of x while others write their part of the output.
      if (storageRoot(linear.getInput()) == storageRoot(residual))
        continue;
      rewriter.setInsertionPoint(linear);
      auto fused = rewriter.create<LinearOp>(
          linear.getLoc(), add.getType(), linear.getInput(), linear.getWeight(),
          linear.getBias(), residual, linear.getWeightScales(),
          linear.getWeightZeros(),
          LinearEpilogueAttr::get(getContext(), LinearEpilogue::Residual),
          linear.getQuantAttr(), linear.getGroupSizeAttr());
      rewriter.replaceOp(add, fused.getResult());
      rewriter.eraseOp(linear);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "no linear to fold the add into");
  }
};

struct SolFuseResidualAddPass
    : sol::impl::SolFuseResidualAddBase<SolFuseResidualAddPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseResidualAdd>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

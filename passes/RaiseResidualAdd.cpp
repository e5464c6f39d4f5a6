//===- RaiseResidualAdd.cpp - sol-raise-residual-add ----------------------===//
//
// The residual stream's Adds: an Add of two raised values of one width
// (the embedding or a previous sum, and a projection's output). Adds of
// anything else (masks, rope halves, epsilons) are other idioms'.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISERESIDUALADD
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

struct RaiseResidualAdd : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp add,
                                PatternRewriter &rewriter) const override {
    if (add.getOpType() != "Add" || !add.getDomain().empty() ||
        add.getInputs().size() != 2)
      return failure();
    Value a = viewedSolValue(skipFloatCasts(add.getInputs()[0]));
    Value b = viewedSolValue(skipFloatCasts(add.getInputs()[1]));
    if (!a || !b || a.getType() != b.getType())
      return failure();
    rewriter.setInsertionPoint(add);
    Value sum = rewriter.create<AddOp>(add.getLoc(), a, b);
    replaceWithView(rewriter, add, sum);
    return success();
  }
};

struct SolRaiseResidualAddPass
    : sol::impl::SolRaiseResidualAddBase<SolRaiseResidualAddPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseResidualAdd>(&getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-residual-add")))
      signalPassFailure();
  }
};

} // namespace

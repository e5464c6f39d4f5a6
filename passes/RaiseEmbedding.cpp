//===- RaiseEmbedding.cpp - sol-raise-embedding ---------------------------===//
//
// An ONNX embedding lookup is a Gather of a weight's rows by token ids.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISEEMBEDDING
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// Gather(table [V, H], ids, axis 0) -> sol.embedding.
struct RaiseEmbedding : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp gather,
                                PatternRewriter &rewriter) const override {
    if (gather.getOpType() != "Gather" || !gather.getDomain().empty() ||
        gather.getInputs().size() != 2)
      return failure();
    if (intAttr(gather, "axis", 0) != 0)
      return nearMiss(rewriter, gather, "not along the rows");
    std::optional<SmallVector<int64_t>> shape =
        weightShape(gather.getInputs()[0]);
    if (!shape || shape->size() != 2)
      return failure();
    Value ids = gather.getInputs()[1];
    auto idsType = dyn_cast<ShapedType>(ids.getType());
    if (!idsType || !isa<IntegerType>(idsType.getElementType()))
      return nearMiss(rewriter, gather, "the ids are not integers");

    rewriter.setInsertionPoint(gather);
    Value table = weightOf(rewriter, gather.getInputs()[0]);
    auto idsFlat =
        RankedTensorType::get({ShapedType::kDynamic}, rewriter.getI32Type());
    Value flat =
        ids.getType() == idsFlat
            ? ids
            : rewriter.create<BatchViewOp>(gather.getLoc(), idsFlat, ids);
    Value hidden = rewriter.create<EmbeddingOp>(
        gather.getLoc(), activationType(getContext(), (*shape)[1]), flat,
        table);
    std::optional<SmallVector<int64_t>> viewShape;
    if (auto ranked = dyn_cast<RankedTensorType>(ids.getType())) {
      viewShape = SmallVector<int64_t>(ranked.getShape());
      viewShape->push_back((*shape)[1]);
    }
    replaceWithView(rewriter, gather, hidden, viewShape);
    return success();
  }
};

struct SolRaiseEmbeddingPass
    : sol::impl::SolRaiseEmbeddingBase<SolRaiseEmbeddingPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseEmbedding>(&getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-embedding")))
      signalPassFailure();
  }
};

} // namespace

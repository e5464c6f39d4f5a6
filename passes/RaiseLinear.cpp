//===- RaiseLinear.cpp - sol-raise-linear ---------------------------------===//
//
// Exporters write a linear layer as MatMul(x, Wᵀ) with the transposed weight
// stored as an initializer (or as a Transpose of the original), and its
// bias as an Add. Sol's linear takes the weight in Hugging Face's
// [out, in] layout, so a stored Wᵀ becomes sol.transpose_weight.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISELINEAR
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// The weight a MatMul multiplies by, in [out, in] layout and bf16, with
/// its [in, out] dimensions; null when the right operand is not a weight.
Value outInWeight(PatternRewriter &rewriter, Value b, int64_t &in,
                  int64_t &out) {
  // Transpose(W [out, in]): the original weight.
  if (OnnxOp t = producer(skipFloatCasts(b), "Transpose")) {
    auto perm = dyn_cast_or_null<DenseI64ArrayAttr>(t.getOnnxAttr("perm"));
    std::optional<SmallVector<int64_t>> shape = weightShape(t.getInputs()[0]);
    if (!shape || shape->size() != 2 ||
        (perm && perm.asArrayRef() != ArrayRef<int64_t>{1, 0}))
      return {};
    out = (*shape)[0];
    in = (*shape)[1];
    return weightOf(rewriter, t.getInputs()[0]);
  }
  std::optional<SmallVector<int64_t>> shape = weightShape(b);
  if (!shape || shape->size() != 2)
    return {};
  in = (*shape)[0];
  out = (*shape)[1];
  Value w = weightOf(rewriter, b);
  return rewriter.create<TransposeWeightOp>(
      w.getLoc(), RankedTensorType::get({out, in}, rewriter.getBF16Type()), w);
}

/// MatMul(x, Wᵀ) [+ b] -> sol.linear(x, W, b).
struct RaiseLinear : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp matmul,
                                PatternRewriter &rewriter) const override {
    if (matmul.getOpType() != "MatMul" || !matmul.getDomain().empty())
      return failure();
    Value b = skipFloatCasts(matmul.getInputs()[1]);
    bool isWeight = weightShape(b).has_value();
    if (OnnxOp t = producer(b, "Transpose"))
      isWeight = weightShape(t.getInputs()[0]).has_value();
    if (!isWeight)
      return failure();

    // A bias added right after: Add(b, y) or Add(y, b) of a [out] weight.
    OnnxOp root = matmul;
    Value bias;
    if (matmul->hasOneUse())
      if (auto add = dyn_cast<OnnxOp>(*matmul->user_begin());
          add && add.getOpType() == "Add" && add.getDomain().empty())
        for (Value operand : add.getInputs())
          if (operand != matmul.getResult(0))
            if (std::optional<SmallVector<int64_t>> s = weightShape(operand);
                s && s->size() == 1) {
              root = add;
              bias = operand;
            }

    rewriter.setInsertionPoint(root);
    int64_t in = 0, out = 0;
    Value w = outInWeight(rewriter, b, in, out);
    if (!w)
      return nearMiss(rewriter, matmul, "an unreadable weight");
    if (bias && (*weightShape(bias))[0] != out)
      return nearMiss(rewriter, matmul, "a bias of another size");
    Value biasWeight = bias ? weightOf(rewriter, bias) : Value();
    Value x = tokenMajor(rewriter, matmul.getInputs()[0], in);
    Value y = rewriter.create<LinearOp>(
        matmul.getLoc(), activationType(getContext(), out), x, w, biasWeight);
    std::optional<SmallVector<int64_t>> shape;
    if (auto ranked =
            dyn_cast<RankedTensorType>(matmul.getInputs()[0].getType())) {
      shape = SmallVector<int64_t>(ranked.getShape().drop_back());
      shape->push_back(out);
    }
    replaceWithView(rewriter, root, y, shape);
    if (root != matmul && matmul->use_empty())
      rewriter.eraseOp(matmul);
    return success();
  }
};

struct SolRaiseLinearPass : sol::impl::SolRaiseLinearBase<SolRaiseLinearPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseLinear>(&getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-linear")))
      signalPassFailure();
  }
};

} // namespace

//===- FuseProjections.cpp - sol-fuse-projections: one GEMM per input -----===//
//
// Batch-1 decode is bound by weight bandwidth and kernel launches: reading
// Q, K and V (or gate and up) in one GEMM saves launches and lets the GEMV
// cover every SM. The fused weights are weight transforms
// (sol.concat_weights, sol.interleave_rows) that sol-materialize-weights
// computes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/WeightOrder.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLFUSEPROJECTIONS
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// A linear without an epilogue whose weight (and bias, scales, zeros) are
/// weights.
bool plainLinear(LinearOp op) {
  return op.getEpilogue() == LinearEpilogue::None && isWeight(op.getWeight()) &&
         llvm::all_of(ValueRange{op.getBias(), op.getWeightScales(),
                                 op.getWeightZeros()},
                      [](Value v) { return !v || isWeight(v); });
}

/// Fused rows must be read with one scheme: codes, scales and zero points
/// are stacked alike only when every part has the same scheme and group.
bool sameQuantization(LinearOp a, LinearOp b) {
  return a.getQuant() == b.getQuant() && a.getGroupSize() == b.getGroupSize();
}

/// True if all values have the same element type and trailing shape, so
/// they can be stacked along dimension 0.
bool stackable(ArrayRef<Value> values) {
  auto first = cast<RankedTensorType>(values.front().getType());
  return llvm::all_of(values, [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getElementType() == first.getElementType() &&
           t.getShape().drop_front() == first.getShape().drop_front();
  });
}

Value concatWeights(PatternRewriter &rewriter, Location loc,
                    ArrayRef<Value> parts) {
  auto first = cast<RankedTensorType>(parts.front().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[0] = 0;
  for (Value v : parts)
    shape[0] += cast<RankedTensorType>(v.getType()).getDimSize(0);
  return rewriter.create<ConcatWeightsOp>(
      loc, RankedTensorType::get(shape, first.getElementType()), parts);
}

Value interleaveRows(PatternRewriter &rewriter, Location loc, Value a,
                     Value b) {
  auto type = cast<RankedTensorType>(a.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] *= 2;
  return rewriter.create<InterleaveRowsOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), a, b);
}

/// swiglu(linear(x, Wg), linear(x, Wu)) -> linear(x, Wg ⋈ Wu, swiglu), the
/// gate and up rows interleaved as the epilogue pairs them; GeGLU the same
/// with the geglu epilogue.
struct FuseGateUp : OpRewritePattern<SwigluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SwigluOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getUp())
      return rewriter.notifyMatchFailure(op, "already fused");
    auto gate = op.getGate().getDefiningOp<LinearOp>();
    auto up = op.getUp().getDefiningOp<LinearOp>();
    if (!gate || !up || gate.getInput() != up.getInput() ||
        !plainLinear(gate) || !plainLinear(up) || !gate->hasOneUse() ||
        !up->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not two plain linears of one x");
    if (gate.getWeight().getType() != up.getWeight().getType())
      return rewriter.notifyMatchFailure(op, "gate and up weights differ");
    if (!sameQuantization(gate, up))
      return rewriter.notifyMatchFailure(op, "gate and up are quantized "
                                             "differently");
    if (bool(gate.getBias()) != bool(up.getBias()))
      return rewriter.notifyMatchFailure(op, "only one projection has a bias");
    if (gate.getBias() && gate.getBias().getType() != up.getBias().getType())
      return rewriter.notifyMatchFailure(op, "gate and up biases differ");
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value weight =
        interleaveRows(rewriter, loc, gate.getWeight(), up.getWeight());
    auto interleaved = [&](Value a, Value b) {
      return a ? interleaveRows(rewriter, loc, a, b) : Value();
    };
    Value bias = interleaved(gate.getBias(), up.getBias());
    Value scales = interleaved(gate.getWeightScales(), up.getWeightScales());
    Value zeros = interleaved(gate.getWeightZeros(), up.getWeightZeros());
    auto fused = rewriter.create<LinearOp>(
        loc, op.getType(), gate.getInput(), weight, bias, Value(), scales,
        zeros,
        LinearEpilogueAttr::get(getContext(),
                                op.getActivation() == GateActivation::GeluTanh
                                    ? LinearEpilogue::Geglu
                                    : LinearEpilogue::Swiglu),
        gate.getQuantAttr(), gate.getGroupSizeAttr());
    rewriter.replaceOp(op, fused.getResult());
    rewriter.eraseOp(gate);
    rewriter.eraseOp(up);
    return success();
  }
};

/// Several plain linears of one input (Q, K, V) -> one linear + sol.split.
/// Linears feeding a swiglu are left to FuseGateUp.
struct FuseSiblingLinears : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool candidate(LinearOp op) {
    return plainLinear(op) &&
           llvm::none_of(op->getUsers(),
                         [](Operation *user) { return isa<SwigluOp>(user); });
  }

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (!candidate(op))
      return rewriter.notifyMatchFailure(op, "not a plain linear");
    // Siblings in program order, all in op's block.
    SmallVector<LinearOp> group;
    for (Operation *user : op.getInput().getUsers()) {
      auto sibling = dyn_cast<LinearOp>(user);
      if (sibling && sibling->getBlock() == op->getBlock() &&
          candidate(sibling) && bool(sibling.getBias()) == bool(op.getBias()) &&
          sibling.getType().getElementType() == op.getType().getElementType())
        group.push_back(sibling);
    }
    if (group.size() < 2)
      return rewriter.notifyMatchFailure(op, "no sibling linears");
    llvm::sort(group,
               [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
    if (group.front() != op)
      return rewriter.notifyMatchFailure(op, "fused from the first sibling");
    if (!llvm::all_of(group,
                      [&](LinearOp l) { return sameQuantization(l, op); }))
      return rewriter.notifyMatchFailure(op, "siblings quantized differently");
    SmallVector<Value> weights, biases, scales, zeros;
    for (LinearOp l : group) {
      weights.push_back(l.getWeight());
      if (l.getBias())
        biases.push_back(l.getBias());
      if (l.getWeightScales())
        scales.push_back(l.getWeightScales());
      if (l.getWeightZeros())
        zeros.push_back(l.getWeightZeros());
    }
    auto stackableOrNone = [](ArrayRef<Value> parts) {
      return parts.empty() || stackable(parts);
    };
    if (!stackable(weights) || !stackableOrNone(biases) ||
        !stackableOrNone(scales) || !stackableOrNone(zeros))
      return rewriter.notifyMatchFailure(op, "weights cannot be stacked");

    // The fused linear replaces the first sibling: the later siblings'
    // weights move up to it.
    for (Value w : llvm::concat<Value>(weights, biases, scales, zeros))
      hoistWeightBefore(rewriter, w, op);
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto stacked = [&](ArrayRef<Value> parts) {
      return parts.empty() ? Value() : concatWeights(rewriter, loc, parts);
    };
    Value weight = concatWeights(rewriter, loc, weights);
    Value bias = stacked(biases);
    Value fusedScales = stacked(scales);
    Value fusedZeros = stacked(zeros);
    int64_t n = cast<RankedTensorType>(weight.getType()).getDimSize(0);
    auto fusedType = RankedTensorType::get({ShapedType::kDynamic, n},
                                           op.getType().getElementType());
    auto fused = rewriter.create<LinearOp>(
        loc, fusedType, op.getInput(), weight, bias, Value(), fusedScales,
        fusedZeros, LinearEpilogueAttr::get(getContext(), LinearEpilogue::None),
        op.getQuantAttr(), op.getGroupSizeAttr());
    SmallVector<Type> partTypes;
    for (LinearOp l : group)
      partTypes.push_back(l.getType());
    auto split = rewriter.create<SplitOp>(loc, partTypes, fused.getResult());
    for (auto [l, part] : llvm::zip(group, split.getResults()))
      rewriter.replaceOp(l, part);
    return success();
  }
};

struct SolFuseProjectionsPass
    : sol::impl::SolFuseProjectionsBase<SolFuseProjectionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGateUp, FuseSiblingLinears>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

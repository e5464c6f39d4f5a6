//===- FuseProjections.cpp - sol-fuse: one GEMM per shared input ----------===//
//
// Batch-1 decode is bound by weight bandwidth and kernel launches: reading
// Q, K and V (or gate and up) in one GEMM saves launches and lets the GEMV
// cover every SM. The fused weight is a new `sol.weight` that names its
// sources with `concat`; the plan writer materialises it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLFUSE
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// The name of a fused weight: the shared prefix and suffix of the sources'
/// names around their differing parts, e.g.
/// `model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight`.
std::string fusedWeightName(ArrayRef<StringRef> names) {
  StringRef first = names.front();
  size_t prefix = first.size(), suffix = first.size();
  for (StringRef name : names.drop_front()) {
    size_t p = 0;
    while (p < std::min(prefix, name.size()) && first[p] == name[p])
      ++p;
    prefix = p;
    size_t s = 0;
    while (s < std::min(suffix, name.size()) &&
           first[first.size() - 1 - s] == name[name.size() - 1 - s])
      ++s;
    suffix = s;
  }
  // Cut at dots so that the parts are whole name components.
  prefix = first.substr(0, prefix).rfind('.') + 1; // npos + 1 == 0
  size_t dot = first.substr(first.size() - suffix).find('.');
  suffix = dot == StringRef::npos ? 0 : suffix - dot;
  if (prefix + suffix > first.size())
    suffix = 0;
  std::string result = first.substr(0, prefix).str() + "{";
  for (auto [i, name] : llvm::enumerate(names)) {
    if (i)
      result += ",";
    result += name.substr(prefix, name.size() - prefix - suffix).str();
  }
  return result + "}" + first.substr(first.size() - suffix).str();
}

/// A `sol.weight` read straight from the store (not itself a concatenation).
WeightOp plainWeight(Value v) {
  auto op = v.getDefiningOp<WeightOp>();
  return op && !op.getConcat() ? op : WeightOp();
}

/// Builds `sol.weight @fused concat [...]` over `sources`, which must all be
/// plain weights of the same element type and trailing shape.
Value concatWeights(PatternRewriter &rewriter, Location loc,
                    ArrayRef<WeightOp> sources) {
  SmallVector<StringRef> names;
  SmallVector<Attribute> refs;
  int64_t rows = 0;
  for (WeightOp w : sources) {
    // ArrayRef hands out const ops; op handles are cheap value types.
    names.push_back(w.getName());
    refs.push_back(w.getNameAttr());
    rows += w.getResult().getType().getDimSize(0);
  }
  auto first = WeightOp(sources.front()).getResult().getType();
  SmallVector<int64_t> shape(first.getShape());
  shape[0] = rows;
  auto type = RankedTensorType::get(shape, first.getElementType());
  return rewriter.create<WeightOp>(
      loc, type,
      FlatSymbolRefAttr::get(rewriter.getContext(), fusedWeightName(names)),
      rewriter.getArrayAttr(refs));
}

/// Returns true if all weights have the same element type and trailing
/// shape, so they can be stacked along dimension 0.
bool stackable(ArrayRef<WeightOp> weights) {
  auto first = WeightOp(weights.front()).getResult().getType();
  return llvm::all_of(weights, [&](WeightOp w) {
    auto t = w.getResult().getType();
    return t.getElementType() == first.getElementType() &&
           t.getShape().drop_front() == first.getShape().drop_front();
  });
}

/// swiglu(linear(x, Wg), linear(x, Wu)) -> linear(x, [Wg; Wu], swiglu).
struct FuseGateUp : OpRewritePattern<SwigluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SwigluOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getUp())
      return rewriter.notifyMatchFailure(op, "already fused");
    auto gate = op.getGate().getDefiningOp<LinearOp>();
    auto up = op.getUp().getDefiningOp<LinearOp>();
    if (!gate || !up || gate.getInput() != up.getInput() ||
        gate.getEpilogue() != LinearEpilogue::None ||
        up.getEpilogue() != LinearEpilogue::None || !gate->hasOneUse() ||
        !up->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not two plain linears of one x");
    WeightOp wg = plainWeight(gate.getWeight()),
             wu = plainWeight(up.getWeight());
    if (!wg || !wu || !stackable({wg, wu}))
      return rewriter.notifyMatchFailure(op, "weights cannot be stacked");
    if (bool(gate.getBias()) != bool(up.getBias()))
      return rewriter.notifyMatchFailure(op, "only one projection has a bias");
    Value bias;
    if (gate.getBias()) {
      WeightOp bg = plainWeight(gate.getBias()), bu = plainWeight(up.getBias());
      if (!bg || !bu || !stackable({bg, bu}))
        return rewriter.notifyMatchFailure(op, "biases cannot be stacked");
      rewriter.setInsertionPoint(op);
      bias = concatWeights(rewriter, op.getLoc(), {bg, bu});
    }
    rewriter.setInsertionPoint(op);
    Value weight = concatWeights(rewriter, op.getLoc(), {wg, wu});
    auto fused = rewriter.create<LinearOp>(
        op.getLoc(), op.getType(), gate.getInput(), weight, bias,
        LinearEpilogueAttr::get(getContext(), LinearEpilogue::SwiGLU));
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
    return op.getEpilogue() == LinearEpilogue::None &&
           plainWeight(op.getWeight()) &&
           (!op.getBias() || plainWeight(op.getBias())) &&
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
          candidate(sibling) && bool(sibling.getBias()) == bool(op.getBias()))
        group.push_back(sibling);
    }
    if (group.size() < 2)
      return rewriter.notifyMatchFailure(op, "no sibling linears");
    llvm::sort(group,
               [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
    if (group.front() != op)
      return rewriter.notifyMatchFailure(op, "fused from the first sibling");
    SmallVector<WeightOp> weights, biases;
    for (LinearOp l : group) {
      weights.push_back(plainWeight(l.getWeight()));
      if (l.getBias())
        biases.push_back(plainWeight(l.getBias()));
    }
    if (!stackable(weights) || (!biases.empty() && !stackable(biases)))
      return rewriter.notifyMatchFailure(op, "weights cannot be stacked");

    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value weight = concatWeights(rewriter, loc, weights);
    Value bias =
        biases.empty() ? Value() : concatWeights(rewriter, loc, biases);
    auto inputType = op.getInput().getType();
    int64_t n = cast<RankedTensorType>(weight.getType()).getDimSize(0);
    auto fusedType = RankedTensorType::get({ShapedType::kDynamic, n},
                                           inputType.getElementType());
    auto fused = rewriter.create<LinearOp>(
        loc, fusedType, op.getInput(), weight, bias,
        LinearEpilogueAttr::get(getContext(), LinearEpilogue::None));
    SmallVector<Type> partTypes;
    for (LinearOp l : group)
      partTypes.push_back(l.getType());
    auto split = rewriter.create<SplitOp>(loc, partTypes, fused.getResult());
    for (auto [l, part] : llvm::zip(group, split.getResults()))
      rewriter.replaceOp(l, part);
    return success();
  }
};

struct SolFusePass : sol::impl::SolFuseBase<SolFusePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGateUp, FuseSiblingLinears>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

//===- LowerToKernels.cpp - sol-lower-to-kernels --------------------------===//
//
// What is left of the tensor level after the fusions becomes kernel-level
// ops, so that code generation translates one op to one plan op. Runs at
// every -O level: at -O0 it is the only lowering, and the unfused forms
// (separate Q, K and V projections, gate and up apart) are packed with
// sol.concat_columns, since the attention and SwiGLU kernels read packed
// rows.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLLOWERTOKERNELS
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

Value sol::softcapLogits(OpBuilder &b, LogitsOp logits, Value result) {
  if (!logits.getSoftcap())
    return result;
  return b.create<SoftcapOp>(logits.getLoc(), result.getType(), result,
                             logits.getSoftcapAttr());
}

namespace {

RankedTensorType rowsOf(Type element, int64_t width) {
  return RankedTensorType::get({ShapedType::kDynamic, width}, element);
}

/// A per-head RMS norm of part `index` of `split`, with its weight covering
/// one head of `headDim`, that only the rope reads (and only it reads the
/// part).
RmsNormOp headNormOfSplitPart(Value v, SplitOp split, unsigned index,
                              int64_t headDim) {
  auto norm = v.getDefiningOp<RmsNormOp>();
  if (!norm || !norm->hasOneUse() ||
      norm.getInput() != split.getResult(index) ||
      !split.getResult(index).hasOneUse() ||
      norm.getWeight().getType().getDimSize(0) != headDim)
    return nullptr;
  return norm;
}

/// Why `op` has no kernel-level form, or nullptr when it has one.
const char *whyNotLowerable(AttentionOp op) {
  auto q = op.getQuery().getDefiningOp<RopeOp>();
  auto k = op.getKey().getDefiningOp<RopeOp>();
  if (!q || !k)
    return "needs sol.rope on its query and key: the attention kernels "
           "rotate them as K is cached";
  if (q.getRope() != k.getRope())
    return "has query and key rotated with different rope parameters";
  if (q.getPositions() != op.getPositions() ||
      k.getPositions() != op.getPositions())
    return "must rotate query and key at its own positions";
  if (q.getNumHeads() != op.getNumHeads() ||
      k.getNumHeads() != op.getNumKvHeads() ||
      q.getHeadDim() != op.getHeadDim() || k.getHeadDim() != op.getHeadDim())
    return "has query and key rotated in heads other than its own";
  if (!op.getCausal())
    return "is not causal; only causal attention is generated";
  return nullptr;
}

/// attention(rope(q), rope(k), v) -> rope_kv_write(qkv) + kv_attention.
struct LowerAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (const char *why = whyNotLowerable(op))
      return rewriter.notifyMatchFailure(op, why);
    auto q = op.getQuery().getDefiningOp<RopeOp>();
    auto k = op.getKey().getDefiningOp<RopeOp>();
    const int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads(),
                  headDim = op.getHeadDim();
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);

    // Q, K and V as consecutive parts of one tensor (sol-fuse-projections),
    // maybe through per-head norms: the packed tensor is at hand. Else pack.
    Value qkv;
    Value qIn = q.getInput(), kIn = k.getInput(), v = op.getValue();
    // The packed tensor is then rotated (and normalised) in place: nothing
    // else may read it or its parts.
    auto split = v.getDefiningOp<SplitOp>();
    if (split && split.getNumResults() == 3 && split.getResult(2) == v &&
        v.hasOneUse() && split.getInput().hasOneUse() && q->hasOneUse() &&
        k->hasOneUse()) {
      RmsNormOp qNorm = headNormOfSplitPart(qIn, split, 0, headDim);
      RmsNormOp kNorm = headNormOfSplitPart(kIn, split, 1, headDim);
      bool qDirect = (qIn == split.getResult(0) && qIn.hasOneUse()) || qNorm;
      bool kDirect = (kIn == split.getResult(1) && kIn.hasOneUse()) || kNorm;
      if (qDirect && kDirect) {
        qkv = split.getInput();
        auto headNorm = [&](RmsNormOp norm, int64_t column, int64_t count,
                            RmsNormOp second) {
          return rewriter.create<HeadRmsNormOp>(
              norm.getLoc(), qkv.getType(), qkv, norm.getWeight(),
              rewriter.getI64IntegerAttr(column),
              rewriter.getI64IntegerAttr(count), norm.getEpsilonAttr(),
              second ? second.getWeight() : Value(),
              rewriter.getI64IntegerAttr(second ? kvHeads : 0));
        };
        // q's and k's heads are adjacent: one kernel normalises both when
        // their norms differ only in the weight.
        if (qNorm && kNorm &&
            qNorm.getWeight().getType() == kNorm.getWeight().getType() &&
            qNorm.getEpsilon() == kNorm.getEpsilon()) {
          qkv = headNorm(qNorm, 0, heads, kNorm);
        } else {
          if (qNorm)
            qkv = headNorm(qNorm, 0, heads, {});
          if (kNorm)
            qkv = headNorm(kNorm, heads * headDim, kvHeads, {});
        }
      }
    }
    if (!qkv) {
      auto element = op.getType().getElementType();
      qkv = rewriter.create<ConcatColumnsOp>(
          loc, rowsOf(element, (heads + 2 * kvHeads) * headDim),
          ValueRange{qIn, kIn, v});
    }
    auto layer = rewriter.getI64IntegerAttr(op.getLayer());
    auto h = rewriter.getI64IntegerAttr(heads);
    auto hkv = rewriter.getI64IntegerAttr(kvHeads);
    auto d = rewriter.getI64IntegerAttr(headDim);
    Value rotated = rewriter.create<RopeKvWriteOp>(
        loc, qkv.getType(), qkv, op.getPositions(), op.getTokenSeq(), layer, h,
        hkv, d, q.getRopeAttr());
    rewriter.replaceOpWithNewOp<KvAttentionOp>(
        op, op.getType(), rotated, op.getPositions(), op.getTokenSeq(),
        op.getSinks(), layer, h, hkv, d, op.getScaleAttr(),
        op.getSlidingWindowAttr(), op.getSoftcapAttr());
    return success();
  }
};

/// swiglu(gate, up) -> swiglu(concat_columns(gate, up)), or of the tensor
/// gate and up were split from when they are its two halves.
struct LowerSwiglu : OpRewritePattern<SwigluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SwigluOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getUp())
      return rewriter.notifyMatchFailure(op, "already kernel-level");
    auto gate = op.getGate().getType();
    Value packed;
    if (auto split = op.getGate().getDefiningOp<SplitOp>();
        split && split.getNumResults() == 2 &&
        split.getResult(0) == op.getGate() && split.getResult(1) == op.getUp())
      packed = split.getInput();
    else
      packed = rewriter.create<ConcatColumnsOp>(
          op.getLoc(), rowsOf(gate.getElementType(), 2 * gate.getDimSize(1)),
          ValueRange{op.getGate(), op.getUp()});
    rewriter.replaceOpWithNewOp<SwigluOp>(op, op.getType(), packed, Value(),
                                          op.getActivationAttr());
    return success();
  }
};

/// logits -> gather_rows, rms_norm, linear with f32 results (and softcap).
struct LowerLogits : OpRewritePattern<LogitsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LogitsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value hidden = op.getHidden();
    Value gathered = rewriter.create<GatherRowsOp>(loc, hidden.getType(),
                                                   hidden, op.getRows());
    Value normed =
        rewriter.create<RmsNormOp>(loc, hidden.getType(), gathered,
                                   op.getNormWeight(), op.getEpsilonAttr());
    Value head = rewriter.create<LinearOp>(loc, op.getType(), normed,
                                           op.getLmHead(), Value());
    rewriter.replaceOp(op, softcapLogits(rewriter, op, head));
    return success();
  }
};

struct SolLowerToKernelsPass
    : sol::impl::SolLowerToKernelsBase<SolLowerToKernelsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerAttention, LowerSwiglu, LowerLogits>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns)))) {
      signalPassFailure();
      return;
    }
    // Whatever is left has no kernel: say which op it is (an attention
    // before the ropes it left behind).
    WalkResult walk = getOperation().walk([](AttentionOp op) {
      const char *why = whyNotLowerable(op);
      op.emitOpError() << (why ? why : "could not be lowered to kernels");
      return WalkResult::interrupt();
    });
    if (!walk.wasInterrupted())
      walk = getOperation().walk([](Operation *op) {
        if (isa<RopeOp>(op)) {
          op->emitOpError("is generated only as part of the KV-cache append "
                          "of the sol.attention that reads it");
          return WalkResult::interrupt();
        }
        if (isa<LogitsOp>(op)) {
          op->emitOpError("could not be lowered to kernels");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

//===- RaiseRope.cpp - sol-raise-rope -------------------------------------===//
//
// Rotary embeddings as Hugging Face code exports them:
//
//   x * cos + rotate_half(x) * sin,
//   rotate_half(x) = Concat(Neg(x[..., d/2:]), x[..., :d/2])
//
// on the [batch, heads, sequence, head_dim] view of a projection, with cos
// and sin computed from the positions at run time (inv_freq × positions,
// Cos, Sin) or gathered from cached tables. How exporters build cos and sin
// varies, so the pattern evaluates them (OnnxEvaluator) for a few
// positions instead of matching their nodes: the angle at position 1 is
// inv_freq, every other position must agree with it, and inv_freq must be
// one that Sol's #sol.rope computes (config.json's rope parameters when the
// graph came with one, else plain or linearly scaled theta fitted from it).
// Opset 23's RotaryEmbedding op is checked the same way (its tables hold
// each frequency once).
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxEvaluator.h"
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace sol {
#define GEN_PASS_DEF_SOLRAISEROPE
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// Positions the cos/sin subgraph is evaluated at: 1 gives inv_freq, the
/// others (out of order, far apart) check that the table is read by
/// position.
const std::vector<int64_t> kProbePositions = {0, 1, 5, 2, 11, 3, 37, 100};

/// True when `v` is x[..., lo:hi] on the last axis.
bool isLastAxisSlice(Value v, Value x, int64_t lo, int64_t hi, int64_t rank) {
  OnnxOp slice = producer(v, "Slice");
  if (!slice || slice.getInputs().size() < 3 ||
      skipFloatCasts(slice.getInputs()[0]) != x)
    return false;
  auto starts = intValues(slice.getInputs()[1]);
  auto ends = intValues(slice.getInputs()[2]);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1)
    return false;
  if (slice.getInputs().size() > 3 &&
      !isa<NoneType>(slice.getInputs()[3].getType())) {
    auto axes = intValues(slice.getInputs()[3]);
    if (!axes || axes->size() != 1 ||
        !((*axes)[0] == -1 || (*axes)[0] == rank - 1))
      return false;
  } else if (rank != 1) {
    return false;
  }
  if (slice.getInputs().size() > 4 &&
      !isa<NoneType>(slice.getInputs()[4].getType())) {
    auto steps = intValues(slice.getInputs()[4]);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1)
      return false;
  }
  return (*starts)[0] == lo && ((*ends)[0] == hi || (*ends)[0] >= (1LL << 31));
}

/// True when `v` is rotate_half(x) for heads of `dim`.
bool isRotateHalf(Value v, Value x, int64_t dim, int64_t rank) {
  OnnxOp concat = producer(skipFloatCasts(v), "Concat");
  if (!concat || concat.getInputs().size() != 2)
    return false;
  int64_t axis = intAttr(concat, "axis", 0);
  if (!(axis == -1 || axis == rank - 1))
    return false;
  OnnxOp neg = producer(concat.getInputs()[0], "Neg");
  return neg && isLastAxisSlice(neg.getInputs()[0], x, dim / 2, dim, rank) &&
         isLastAxisSlice(concat.getInputs()[1], x, 0, dim / 2, rank);
}

/// The rope parameters whose table is `invFreq`: the hint (config.json's)
/// when it matches, else plain or linear scaling fitted from it.
std::optional<RopeAttr> fitRope(MLIRContext *ctx, ArrayRef<double> invFreq,
                                int64_t dim, RopeAttr hint) {
  auto matches = [&](const RopeParameters &p) {
    try {
      RopeTable table = RopeTable::compute(p, dim);
      for (size_t i = 0; i < invFreq.size(); ++i)
        if (std::fabs(table.invFreq[i] - invFreq[i]) >
            1e-5 * std::fabs(invFreq[i]) + 1e-12)
          return false;
      return std::fabs(table.attentionScaling - 1.0f) < 1e-6;
    } catch (const std::exception &) {
      return false;
    }
  };
  if (hint && matches(ropeParameters(hint)))
    return hint;
  if (invFreq.size() < 2 || invFreq[0] <= 0 || invFreq[1] <= 0)
    return std::nullopt;
  // inv_freq[i] = theta^(-2i/dim) / factor; theta and factor are round
  // numbers in every config, so try them rounded first.
  auto rounded = [](double x, int digits) {
    if (x <= 0)
      return x;
    double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(x)));
    return std::round(x * scale) / scale;
  };
  const double rawFactor = 1.0 / invFreq[0];
  const double rawTheta = std::pow(invFreq[1] * rawFactor, -double(dim) / 2.0);
  RopeParameters p;
  RopeScalingKind kind = RopeScalingKind::None;
  bool found = false;
  for (int digits : {3, 4, 6, 0}) {
    p.theta = digits ? rounded(rawTheta, digits) : rawTheta;
    p.factor = digits ? rounded(rawFactor, digits) : rawFactor;
    p.scaling = std::fabs(p.factor - 1.0) > 1e-6 ? RopeScaling::Linear
                                                 : RopeScaling::None;
    if (p.scaling == RopeScaling::None)
      p.factor = 1.0;
    if (matches(p)) {
      found = true;
      break;
    }
  }
  if (!found)
    return std::nullopt;
  if (p.scaling == RopeScaling::Linear)
    kind = RopeScalingKind::Linear;
  return RopeAttr::get(ctx, APFloat(p.theta), kind, APFloat(p.factor),
                       APFloat(1.0), APFloat(4.0), 0, APFloat(32.0),
                       APFloat(1.0), APFloat(0.0));
}

/// The #sol.rope whose cos and sin the subgraphs `cos` and `sin` compute
/// for heads of `dim` (tables of dim/2 columns when `halfTables`, as opset
/// 23's RotaryEmbedding takes them, else both halves repeated), evaluated
/// at the probe positions; nullopt with `why` set otherwise.
std::optional<RopeAttr> ropeFromTables(Operation *at, Value cos, Value sin,
                                       int64_t dim, bool halfTables,
                                       std::string &why) {
  auto fn = at->getParentOfType<func::FuncOp>();
  OnnxEvaluator eval;
  if (!bindStep(eval, fn, 0, kProbePositions)) {
    why = "the graph's inputs have sizes the probe cannot set";
    return std::nullopt;
  }
  std::optional<EvalTensor> c = eval.evaluate(cos), s = eval.evaluate(sin);
  const int64_t n = kProbePositions.size(), half = dim / 2;
  const int64_t cols = halfTables ? half : dim;
  if (!c || !s) {
    why = "cannot evaluate cos and sin: " + eval.reason();
    return std::nullopt;
  }
  if (c->shapeOnly || s->shapeOnly || c->size() != n * cols ||
      s->size() != n * cols) {
    why = "cos and sin are not tables of one row per position";
    return std::nullopt;
  }
  // Position 1 (row 1) holds inv_freq as angles.
  SmallVector<double> invFreq(half);
  for (int64_t i = 0; i < half; ++i)
    invFreq[i] = std::atan2(s->data[cols + i], c->data[cols + i]);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t i = 0; i < cols; ++i) {
      double angle = double(kProbePositions[row]) * invFreq[i % half];
      if (std::fabs(c->data[row * cols + i] - std::cos(angle)) > 2e-3 ||
          std::fabs(s->data[row * cols + i] - std::sin(angle)) > 2e-3) {
        why = "cos and sin are not those of position x inv_freq";
        return std::nullopt;
      }
    }
  RopeAttr hint;
  if (auto source =
          fn->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
              "sol.onnx_source"))
    hint = dyn_cast_or_null<RopeAttr>(source.get("rope"));
  std::optional<RopeAttr> rope = fitRope(at->getContext(), invFreq, dim, hint);
  if (!rope)
    why = "the rotary frequencies fit no scaling Sol knows";
  return rope;
}

/// Replaces `root` (a rotation of the head view `heads` of the raised
/// projection `sol`, transposed to [batch, heads, seq, dim] when
/// `transpose` is set) by sol.rope and a view of it in the root's layout.
LogicalResult replaceWithRope(PatternRewriter &rewriter, OnnxOp root, Value sol,
                              Value heads, OnnxOp transpose, RopeAttr rope,
                              int64_t dim) {
  Value positions = solArgument(root, "positions");
  if (!positions)
    return nearMiss(rewriter, root, "no positions argument");
  const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
  rewriter.setInsertionPoint(root);
  Value rotated = rewriter.create<RopeOp>(
      root.getLoc(), sol.getType(), sol, positions, rope,
      rewriter.getI64IntegerAttr(width / dim), rewriter.getI64IntegerAttr(dim));
  Type headsType = heads.getType();
  if (auto unranked = dyn_cast<UnrankedTensorType>(headsType))
    headsType = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, width / dim, dim},
        unranked.getElementType());
  Type rootType = root.getResult(0).getType();
  Value result =
      rewriter.create<BatchViewOp>(root.getLoc(), headsType, rotated);
  if (transpose)
    result =
        createOnnx(rewriter, root.getLoc(), "Transpose", rootType, {result},
                   {rewriter.getNamedAttr(
                       "perm", rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}))})
            .getResult(0);
  else if (result.getType() != rootType)
    result = rewriter.create<BatchViewOp>(root.getLoc(), rootType, rotated);
  rewriter.replaceOp(root, result);
  return success();
}

/// x * cos + rotate_half(x) * sin -> sol.rope.
struct RaiseRope : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp add,
                                PatternRewriter &rewriter) const override {
    if (add.getOpType() != "Add" || !add.getDomain().empty() ||
        add.getInputs().size() != 2)
      return failure();
    OnnxOp m0 = producer(add.getInputs()[0], "Mul");
    OnnxOp m1 = producer(add.getInputs()[1], "Mul");
    if (!m0 || !m1)
      return failure();
    // Find x, cos (in x's product) and sin (in rotate_half(x)'s).
    for (auto [xm, rm] : {std::pair(m0, m1), std::pair(m1, m0)})
      for (int xi = 0; xi < 2; ++xi)
        for (int ri = 0; ri < 2; ++ri) {
          Value x = skipFloatCasts(xm.getInputs()[xi]);
          LogicalResult r =
              tryRaise(add, x, xm.getInputs()[1 - xi], rm.getInputs()[ri],
                       rm.getInputs()[1 - ri], rewriter);
          if (succeeded(r))
            return r;
        }
    return failure();
  }

  LogicalResult tryRaise(OnnxOp add, Value x, Value cos, Value rotated,
                         Value sin, PatternRewriter &rewriter) const {
    // x is [batch, heads, seq, dim] (a Transpose of the projection's
    // [batch, seq, heads, dim] view) or that view itself.
    Value heads = x;
    OnnxOp transpose = producer(x, "Transpose");
    if (transpose) {
      if (!isPermutation(transpose, {0, 2, 1, 3}))
        return failure();
      heads = transpose.getInputs()[0];
    }
    Value sol = viewedSolValue(heads);
    if (!sol)
      return failure();
    // head_dim from the split view's type or the Reshape's target.
    int64_t dim = 0;
    if (auto t = dyn_cast<RankedTensorType>(heads.getType());
        t && t.getRank() == 4 && !t.isDynamicDim(3))
      dim = t.getDimSize(3);
    else if (OnnxOp reshape = producer(heads, "Reshape"))
      if (auto shape = intValuesOfShape(reshape.getInputs()[1]);
          shape && shape->size() == 4 && shape->back() > 0)
        dim = shape->back();
    const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
    if (dim <= 0 || dim % 2 != 0 || width % dim != 0)
      return failure();
    if (!isRotateHalf(rotated, x, dim, 4))
      return failure();

    std::string why;
    std::optional<RopeAttr> rope =
        ropeFromTables(add, cos, sin, dim, /*halfTables=*/false, why);
    if (!rope)
      return nearMiss(rewriter, add, why);
    return replaceWithRope(rewriter, add, sol, heads, transpose, *rope, dim);
  }

  /// The target of a Reshape when its last entries are constants (the
  /// exporters' Concat of computed and constant pieces).
  static std::optional<SmallVector<int64_t>> intValuesOfShape(Value shape) {
    if (auto all = intValues(shape))
      return all;
    OnnxOp concat = producer(shape, "Concat");
    if (!concat)
      return std::nullopt;
    SmallVector<int64_t> out;
    for (Value piece : concat.getInputs()) {
      auto v = intValues(piece);
      if (v)
        out.append(v->begin(), v->end());
      else
        out.push_back(-2); // computed at run time
    }
    return out;
  }
};

/// Opset 23's RotaryEmbedding(x, cos, sin) (rotate-half, whole heads).
struct RaiseRotaryEmbedding : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "RotaryEmbedding" || !op.getDomain().empty())
      return failure();
    if (op.getInputs().size() != 3)
      return nearMiss(rewriter, op, "cos/sin caches indexed by position_ids");
    if (intAttr(op, "interleaved", 0) != 0)
      return nearMiss(rewriter, op, "interleaved pairs (not rotate-half)");
    Value x = skipFloatCasts(op.getInputs()[0]);
    Value heads = x;
    OnnxOp transpose = producer(x, "Transpose");
    if (transpose) {
      if (!isPermutation(transpose, {0, 2, 1, 3}))
        return nearMiss(rewriter, op, "heads in an unknown order");
      heads = transpose.getInputs()[0];
    }
    Value sol = viewedSolValue(heads);
    if (!sol)
      return nearMiss(rewriter, op, "the input is not a raised projection");
    const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
    int64_t dim = 0;
    if (auto t = dyn_cast<RankedTensorType>(heads.getType());
        t && t.getRank() == 4 && !t.isDynamicDim(3))
      dim = t.getDimSize(3);
    else if (int64_t h = intAttr(op, "num_heads", 0); h > 0 && width % h == 0)
      dim = width / h;
    const int64_t partial = intAttr(op, "rotary_embedding_dim", 0);
    if (dim <= 0 || dim % 2 != 0 || width % dim != 0 ||
        (partial != 0 && partial != dim))
      return nearMiss(rewriter, op, "cannot tell whole heads");
    std::string why;
    std::optional<RopeAttr> rope =
        ropeFromTables(op, op.getInputs()[1], op.getInputs()[2], dim,
                       /*halfTables=*/true, why);
    if (!rope)
      return nearMiss(rewriter, op, why);
    return replaceWithRope(rewriter, op, sol, heads, transpose, *rope, dim);
  }
};

struct SolRaiseRopePass : sol::impl::SolRaiseRopeBase<SolRaiseRopePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseRope, RaiseRotaryEmbedding>(&getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-rope")))
      signalPassFailure();
  }
};

} // namespace

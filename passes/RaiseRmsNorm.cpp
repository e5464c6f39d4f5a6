//===- RaiseRmsNorm.cpp - sol-raise-rms-norm ------------------------------===//
//
// ONNX has no RMSNorm before opset 23, so exporters spell it out:
//
//   w * (x / sqrt(mean(x^2, axis -1) + eps))
//
// with x^2 as Pow(x, 2) or Mul(x, x), the division as Div(x, s),
// Mul(x, Div(1, s)) or Mul(x, Reciprocal(s)), and Casts to float32 and back
// around it (Hugging Face computes norms in float32). Opset 23's
// RMSNormalization is the same op written once, raised too. A norm over the
// last axis of a [batch, sequence, heads, head_dim] value (Qwen3's q/k norm) is
// Sol's per-group norm of the token-major rows.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISERMSNORM
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// Epsilons outside this range are not a norm's (a near-miss pattern).
constexpr double kMaxEpsilon = 1e-2;

/// The rank of `v`'s type, or -1 when unranked.
int64_t rankOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? type.getRank() : -1;
}

/// The x of mean(x^2) over the last axis, or null.
Value meanSquareInput(Value v) {
  OnnxOp mean = producer(skipFloatCasts(v), "ReduceMean");
  if (!mean || intAttr(mean, "keepdims", 1) != 1)
    return {};
  Value sq = mean.getInputs()[0], x;
  if (OnnxOp pow = producer(sq, "Pow")) {
    std::optional<double> exponent = splatValue(pow.getInputs()[1]);
    if (exponent && *exponent == 2.0)
      x = pow.getInputs()[0];
  } else if (OnnxOp mul = producer(sq, "Mul")) {
    if (mul.getInputs()[0] == mul.getInputs()[1])
      x = mul.getInputs()[0];
  }
  if (!x)
    return {};
  // Over the last axis: -1, or rank - 1 where a type tells the rank.
  std::optional<SmallVector<int64_t>> axes = axesOf(mean);
  int64_t rank = std::max(rankOf(sq), rankOf(skipFloatCasts(x)));
  if (!axes || axes->size() != 1 ||
      !((*axes)[0] == -1 || (rank > 0 && (*axes)[0] == rank - 1)))
    return {};
  return x;
}

/// sqrt(mean(x^2) + eps): sets `x` and `eps`.
bool matchRms(Value v, Value &x, double &eps) {
  OnnxOp sqrt = producer(v, "Sqrt");
  if (!sqrt)
    return false;
  OnnxOp add = producer(sqrt.getInputs()[0], "Add");
  if (!add)
    return false;
  for (int i = 0; i < 2; ++i) {
    std::optional<double> e = splatValue(add.getInputs()[1 - i]);
    Value input = meanSquareInput(add.getInputs()[i]);
    if (e && input) {
      x = input;
      eps = *e;
      return true;
    }
  }
  return false;
}

/// x / rms(x) in any of its spellings: sets the normalised `x` (as the
/// graph names it before any cast) and `eps`.
bool matchNormalized(Value v, Value &x, double &eps) {
  v = skipFloatCasts(v);
  Value numerator, rmsInput;
  if (OnnxOp div = producer(v, "Div")) {
    numerator = div.getInputs()[0];
    if (!matchRms(div.getInputs()[1], rmsInput, eps))
      return false;
  } else if (OnnxOp mul = producer(v, "Mul")) {
    bool found = false;
    for (int i = 0; i < 2 && !found; ++i) {
      Value r = mul.getInputs()[1 - i];
      Value s;
      if (OnnxOp recip = producer(r, "Reciprocal"))
        s = recip.getInputs()[0];
      else if (OnnxOp div = producer(r, "Div");
               div && splatValue(div.getInputs()[0]) == 1.0)
        s = div.getInputs()[1];
      if (s && matchRms(s, rmsInput, eps)) {
        numerator = mul.getInputs()[i];
        found = true;
      }
    }
    if (!found)
      return false;
  } else {
    return false;
  }
  // The norm's input and the value it divides must be one value.
  if (skipFloatCasts(numerator) != skipFloatCasts(rmsInput))
    return false;
  x = skipFloatCasts(numerator);
  return true;
}

/// The token-major width of `x` for a norm over groups of `group`: the
/// width of the Sol value it views, possibly split into heads by a
/// Reshape, or its declared last dimensions.
std::optional<int64_t> rowWidth(Value x, int64_t group) {
  if (Value sol = viewedSolValue(x))
    return cast<RankedTensorType>(sol.getType()).getDimSize(1);
  if (OnnxOp reshape = producer(x, "Reshape"))
    if (Value sol = viewedSolValue(reshape.getInputs()[0]))
      return cast<RankedTensorType>(sol.getType()).getDimSize(1);
  // Unknown shape: the weight scales the normalised axis, so rows of one
  // group. Row-wise ops are right whatever the rows are; if the graph's
  // rows are wider, the views around the norm do not meet their neighbours'
  // and sol-raise-check says so.
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type || type.getRank() < 2)
    return group;
  if (type.getRank() == 3 && !type.isDynamicDim(2))
    return type.getDimSize(2);
  if (type.getRank() == 4 && !type.isDynamicDim(2) && !type.isDynamicDim(3))
    return type.getDimSize(2) * type.getDimSize(3);
  return std::nullopt;
}

/// Replaces `root` by sol.rms_norm of `x` (the graph's value before any
/// cast) scaled by the weight `w` of `group` elements, and a view of it.
LogicalResult replaceWithNorm(PatternRewriter &rewriter, OnnxOp root, Value x,
                              Value w, int64_t group, double eps) {
  if (!(eps > 0 && eps <= kMaxEpsilon))
    return nearMiss(rewriter, root, "epsilon out of range");
  // A per-head norm reads the value before the heads were split off.
  Value input = x;
  if (OnnxOp reshape = producer(x, "Reshape"))
    if (viewedSolValue(reshape.getInputs()[0]))
      input = reshape.getInputs()[0];
  std::optional<int64_t> width = rowWidth(x, group);
  if (!width || *width % group != 0)
    return nearMiss(rewriter, root, "cannot tell the row width");
  rewriter.setInsertionPoint(root);
  Value weight = normWeightOf(rewriter, w);
  Value normed = rewriter.create<RmsNormOp>(
      root.getLoc(), activationType(root.getContext(), *width),
      tokenMajor(rewriter, input, *width), weight,
      rewriter.getF32FloatAttr(float(eps)));
  std::optional<SmallVector<int64_t>> viewShape;
  if (auto ranked = dyn_cast<RankedTensorType>(x.getType()))
    viewShape = SmallVector<int64_t>(ranked.getShape());
  else if (input != x)
    viewShape = SmallVector<int64_t>{ShapedType::kDynamic, ShapedType::kDynamic,
                                     *width / group, group};
  replaceWithView(rewriter, root, normed, viewShape);
  return success();
}

/// w * normalized(x) -> sol.rms_norm(x, w, eps).
struct RaiseRmsNorm : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getOpType() != "Mul" || !mul.getDomain().empty())
      return failure();
    for (int i = 0; i < 2; ++i) {
      Value w = mul.getInputs()[i];
      std::optional<SmallVector<int64_t>> shape = weightShape(w);
      if (!shape || shape->size() != 1)
        continue;
      Value x;
      double eps = 0;
      if (!matchNormalized(mul.getInputs()[1 - i], x, eps))
        continue;
      return replaceWithNorm(rewriter, mul, x, w, (*shape)[0], eps);
    }
    return failure();
  }
};

/// Opset 23's RMSNormalization(x, scale) over the last axis.
struct RaiseRmsNormalization : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    // onnxruntime's SimplifiedLayerNormalization (in the default domain as
    // onnxruntime-genai writes it, or com.microsoft) is the same norm.
    const bool simplified =
        op.getOpType() == "SimplifiedLayerNormalization" &&
        (op.getDomain().empty() || op.getDomain() == "com.microsoft");
    if (!(simplified ||
          (op.getOpType() == "RMSNormalization" && op.getDomain().empty())) ||
        op.getInputs().size() != 2)
      return failure();
    for (unsigned i = 1; i < op->getNumResults(); ++i)
      if (!op->getResult(i).use_empty())
        return nearMiss(rewriter, op, "its mean / inv_std_var output is read");
    Value x = skipFloatCasts(op.getInputs()[0]);
    std::optional<SmallVector<int64_t>> shape = weightShape(op.getInputs()[1]);
    auto type = dyn_cast<RankedTensorType>(x.getType());
    const int64_t axis = intAttr(op, "axis", -1);
    if (!shape || shape->size() != 1)
      return nearMiss(rewriter, op, "the scale is not a 1-D weight");
    if (!(axis == -1 || (type && axis == type.getRank() - 1)))
      return nearMiss(rewriter, op, "not over the last axis");
    auto eps = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("epsilon"));
    double epsilon = eps ? eps.getValueAsDouble() : 1e-5;
    return replaceWithNorm(rewriter, op, x, op.getInputs()[1], (*shape)[0],
                           epsilon);
  }
};

/// com.microsoft SkipSimplifiedLayerNormalization(input, skip, gamma): the
/// residual sum input + skip (output 3) and its RMS norm (output 0), as
/// onnxruntime-genai writes every norm after the first: sol.add and
/// sol.rms_norm.
struct RaiseSkipSimplifiedLayerNorm : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "SkipSimplifiedLayerNormalization" ||
        op.getDomain() != "com.microsoft")
      return failure();
    auto inputs = op.getInputs();
    if (inputs.size() < 3)
      return nearMiss(rewriter, op, "not (input, skip, gamma)");
    if (inputs.size() > 3 && !isa<NoneType>(inputs[3].getType()))
      return nearMiss(rewriter, op, "a bias input is not supported");
    for (unsigned i = 1; i < 3 && i < op->getNumResults(); ++i)
      if (!op->getResult(i).use_empty())
        return nearMiss(rewriter, op, "its mean / inv_std_var output is read");
    Value a = viewedSolValue(skipFloatCasts(inputs[0]));
    Value b = viewedSolValue(skipFloatCasts(inputs[1]));
    if (!a || !b)
      return failure(); // Raised neighbours first.
    std::optional<SmallVector<int64_t>> shape = weightShape(inputs[2]);
    const int64_t width = cast<RankedTensorType>(a.getType()).getDimSize(1);
    if (a.getType() != b.getType() || !shape || shape->size() != 1 ||
        (*shape)[0] != width)
      return nearMiss(rewriter, op, "input, skip and gamma sizes differ");
    auto eps = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("epsilon"));
    const double epsilon = eps ? eps.getValueAsDouble() : 1e-5;
    if (!(epsilon > 0 && epsilon <= kMaxEpsilon))
      return nearMiss(rewriter, op, "epsilon out of range");
    rewriter.setInsertionPoint(op);
    Value sum = rewriter.create<AddOp>(op.getLoc(), a, b);
    Value normed = rewriter.create<RmsNormOp>(
        op.getLoc(), sum.getType(), sum, normWeightOf(rewriter, inputs[2]),
        rewriter.getF32FloatAttr(float(epsilon)));
    if (op->getNumResults() > 3 && !op->getResult(3).use_empty()) {
      Type type = op->getResult(3).getType();
      if (isa<UnrankedTensorType>(type))
        type = inputs[0].getType();
      rewriter.replaceAllUsesWith(
          op->getResult(3),
          rewriter.create<BatchViewOp>(op.getLoc(), type, sum).getResult());
    }
    replaceWithView(rewriter, op, normed);
    return success();
  }
};

struct SolRaiseRmsNormPass
    : sol::impl::SolRaiseRmsNormBase<SolRaiseRmsNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns
        .add<RaiseRmsNorm, RaiseRmsNormalization, RaiseSkipSimplifiedLayerNorm>(
            &getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-rms-norm")))
      signalPassFailure();
  }
};

} // namespace

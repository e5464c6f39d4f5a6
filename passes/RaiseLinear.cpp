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
/// (codes - zero) * scale of a stored [in, out] integer weight, in bf16
/// [in, out]: a DequantizeLinear's inputs (or MatMulInteger's), per tensor
/// or per index of `axis`; null when they are not initializers of those
/// shapes.
Value dequantizedWeight(PatternRewriter &rewriter, Location loc, Value codes,
                        Value scales, Value zeros, int64_t axis) {
  std::optional<SmallVector<int64_t>> shape = weightShape(codes);
  std::optional<SmallVector<int64_t>> scaleShape = weightShape(scales);
  if (!shape || shape->size() != 2 || !scaleShape ||
      !getElementTypeOrSelf(codes.getType()).isInteger(8))
    return {};
  if (axis < 0)
    axis += 2;
  int64_t count = 1;
  for (int64_t d : *scaleShape)
    count *= d;
  if ((axis != 0 && axis != 1) || scaleShape->size() > 1 ||
      (count != 1 && count != (*shape)[axis]))
    return {};
  if (zeros && (!weightShape(zeros) || *weightShape(zeros) != *scaleShape))
    return {};
  Value z = zeros ? storedWeight(rewriter, zeros) : Value();
  return rewriter.create<DequantizeWeightOp>(
      loc, RankedTensorType::get(*shape, rewriter.getBF16Type()),
      storedWeight(rewriter, codes), storedWeight(rewriter, scales), z,
      rewriter.getI64IntegerAttr(axis));
}

Value outInWeight(PatternRewriter &rewriter, Value b, int64_t &in,
                  int64_t &out) {
  // DequantizeLinear(Wq [in, out], scale, zero): QDQ weights.
  if (OnnxOp dq = producer(skipFloatCasts(b), "DequantizeLinear")) {
    auto inputs = dq.getInputs();
    if (intAttr(dq, "block_size", 0) != 0 || inputs.size() < 2)
      return {};
    Value zeros = inputs.size() > 2 && !isa<NoneType>(inputs[2].getType())
                      ? inputs[2]
                      : Value();
    Value w = dequantizedWeight(rewriter, dq.getLoc(), inputs[0], inputs[1],
                                zeros, intAttr(dq, "axis", 1));
    if (!w)
      return {};
    auto type = cast<RankedTensorType>(w.getType());
    in = type.getDimSize(0);
    out = type.getDimSize(1);
    return rewriter.create<TransposeWeightOp>(
        w.getLoc(), RankedTensorType::get({out, in}, rewriter.getBF16Type()),
        w);
  }
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

/// A linear's weight operands as sol.linear takes them.
struct LinearWeight {
  Value weight, scales, zeros;
  QuantScheme scheme = QuantScheme::None;
  int64_t groupSize = 0;
  int64_t in = 0, out = 0;
};

/// The bias Add right after `matmul`: Add(b, y) or Add(y, b) of an [out]
/// weight; null when there is none.
OnnxOp biasAddOf(OnnxOp matmul, Value &bias) {
  if (!matmul->hasOneUse())
    return {};
  auto add = dyn_cast<OnnxOp>(*matmul->user_begin());
  if (!add || add.getOpType() != "Add" || !add.getDomain().empty())
    return {};
  for (Value operand : add.getInputs())
    if (operand != matmul.getResult(0))
      if (std::optional<SmallVector<int64_t>> s = weightShape(operand);
          s && s->size() == 1) {
        bias = operand;
        return add;
      }
  return {};
}

/// Replaces `matmul` (and the bias Add after it, if any; `bias` is the op's
/// own bias input otherwise) by sol.linear of `x` and `w`.
LogicalResult replaceWithLinear(PatternRewriter &rewriter, OnnxOp matmul,
                                Value x, const LinearWeight &w, Value bias) {
  OnnxOp root = matmul;
  if (!bias)
    if (OnnxOp add = biasAddOf(matmul, bias))
      root = add;
  if (bias && (*weightShape(bias))[0] != w.out)
    return nearMiss(rewriter, matmul, "a bias of another size");
  rewriter.setInsertionPoint(root);
  Value biasWeight = bias ? weightOf(rewriter, bias) : Value();
  Value input = tokenMajor(rewriter, x, w.in);
  Value y = rewriter.create<LinearOp>(
      matmul.getLoc(), activationType(rewriter.getContext(), w.out), input,
      w.weight, biasWeight, /*residual=*/Value(), w.scales, w.zeros,
      LinearEpilogue::None, w.scheme, w.groupSize);
  std::optional<SmallVector<int64_t>> shape;
  if (auto ranked = dyn_cast<RankedTensorType>(x.getType())) {
    shape = SmallVector<int64_t>(ranked.getShape().drop_back());
    shape->push_back(w.out);
  }
  replaceWithView(rewriter, root, y, shape);
  if (root != matmul && matmul->use_empty())
    rewriter.eraseOp(matmul);
  return success();
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
    if (OnnxOp dq = producer(b, "DequantizeLinear"))
      isWeight = weightShape(dq.getInputs()[0]).has_value();
    if (!isWeight)
      return failure();
    rewriter.setInsertionPoint(matmul);
    LinearWeight w;
    w.weight = outInWeight(rewriter, b, w.in, w.out);
    if (!w.weight)
      return nearMiss(rewriter, matmul, "an unreadable weight");
    return replaceWithLinear(rewriter, matmul, matmul.getInputs()[0], w, {});
  }
};

/// com.microsoft MatMulNBits(A, B, scales[, zero_points, g_idx, bias]):
/// block-quantized weights become Sol's int4 linear (4 bits, integer zero
/// points, K a multiple of block_size), or are dequantized to bf16 at
/// compile time (other bit widths, float zero points), with a note.
struct RaiseMatMulNBits : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "MatMulNBits" || op.getDomain() != "com.microsoft")
      return failure();
    auto inputs = op.getInputs();
    auto present = [&](unsigned i) {
      return i < inputs.size() && !isa<NoneType>(inputs[i].getType());
    };
    if (intAttr(op, "weight_prepacked", 0) != 0)
      return nearMiss(rewriter, op,
                      "weight_prepacked = " +
                          std::to_string(intAttr(op, "weight_prepacked", 0)) +
                          ": the weights are in a GPU kernel's prepacked "
                          "layout; export them unpacked (onnxruntime-genai's "
                          "matmulnbits_weights_prepacked=0)");
    if (present(4))
      return nearMiss(rewriter, op,
                      "a g_idx input (act-order groups) is not supported");
    const int64_t k = intAttr(op, "K", 0), n = intAttr(op, "N", 0),
                  bits = intAttr(op, "bits", 4),
                  block = intAttr(op, "block_size", 0);
    auto packed = weightShape(inputs[1]);
    if (!packed || inputs.size() < 3 || !weightShape(inputs[2]) ||
        (present(3) && !weightShape(inputs[3])))
      return nearMiss(rewriter, op,
                      "B, scales or zero_points is not an "
                      "initializer");
    const int64_t blocks = block > 0 ? (k + block - 1) / block : 0;
    if (k <= 0 || n <= 0 || block < 16 || packed->size() != 3 ||
        (*packed)[0] != n || (*packed)[1] != blocks ||
        (*packed)[2] != block * bits / 8)
      return nearMiss(rewriter, op,
                      "B is not [N, blocks, block_size·bits/8] "
                      "for its K, N, bits and block_size");
    auto raw = [&](Value v) { return storedWeight(rewriter, v); };
    Value zeros = present(3) ? raw(inputs[3]) : Value();
    const bool floatZeros =
        zeros && isa<FloatType>(getElementTypeOrSelf(zeros.getType()));
    const bool asInt4 = bits == 4 && k == blocks * block && !floatZeros;
    rewriter.setInsertionPoint(op);
    LinearWeight w;
    w.in = k;
    w.out = n;
    Location loc = op.getLoc();
    auto f32 = rewriter.getF32Type();
    if (asInt4) {
      SmallVector<Type> types = {
          RankedTensorType::get({n, k}, rewriter.getIntegerType(4)),
          RankedTensorType::get({n, blocks}, f32),
          RankedTensorType::get({n, blocks},
                                rewriter.getIntegerType(8, false))};
      auto unpack = rewriter.create<UnpackNBitsOp>(
          loc, types, raw(inputs[1]), raw(inputs[2]), zeros,
          rewriter.getI64IntegerAttr(bits), rewriter.getI64IntegerAttr(block));
      w.weight = unpack.getResult(0);
      w.scales = unpack.getResult(1);
      w.zeros = unpack.getResult(2);
      w.scheme = QuantScheme::Int4;
      w.groupSize = block;
    } else {
      w.weight =
          rewriter
              .create<UnpackNBitsOp>(loc,
                                     TypeRange{RankedTensorType::get(
                                         {n, k}, rewriter.getBF16Type())},
                                     raw(inputs[1]), raw(inputs[2]), zeros,
                                     rewriter.getI64IntegerAttr(bits),
                                     rewriter.getI64IntegerAttr(block))
              .getResult(0);
      noteDequantized(op, bits);
    }
    return replaceWithLinear(rewriter, op, inputs[0], w,
                             present(5) ? inputs[5] : Value());
  }

  /// One note per module: the weights lose no precision but the plan
  /// stores them in bf16.
  void noteDequantized(OnnxOp op, int64_t bits) const {
    if (noted)
      return;
    noted = true;
    emitRemark(op.getLoc())
        << "MatMulNBits weights of " << bits
        << " bits (or with float zero points) are dequantized to bf16: Sol's "
           "quantized linears take 4-bit codes with integer zero points";
  }

  /// One note per pass run (the patterns are made for each run).
  mutable bool noted = false;
};

/// onnxruntime's dynamic quantization of a MatMul by a constant
/// (quantize_dynamic; transformers.js's model_int8 / model_quantized.onnx):
///
///   xq, xs, xz = DynamicQuantizeLinear(x)
///   y = Mul(Cast(MatMulInteger(xq, Wq, xz, Wz), FLOAT), Mul(xs, Ws))
///
/// is x · dequantize(Wq) up to the rounding of x to 8 bits, which Sol does
/// not repeat: sol.linear of x and the dequantized weight (bf16).
struct RaiseMatMulInteger : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getOpType() != "Mul" || !mul.getDomain().empty() ||
        mul.getInputs().size() != 2)
      return failure();
    for (int i = 0; i < 2; ++i) {
      OnnxOp toFloat = producer(mul.getInputs()[i], "Cast");
      OnnxOp mm = toFloat ? producer(toFloat.getInputs()[0], "MatMulInteger")
                          : OnnxOp();
      if (!mm)
        continue;
      auto in = mm.getInputs();
      auto dql = in[0].getDefiningOp<OnnxOp>();
      if (!dql || dql.getOpType() != "DynamicQuantizeLinear" || in.size() < 3 ||
          in[2] != dql->getResult(2))
        return nearMiss(rewriter, mul,
                        "MatMulInteger of an input other than "
                        "DynamicQuantizeLinear's");
      // The scale: Mul(x_scale, W_scale), either order.
      OnnxOp scales = producer(mul.getInputs()[1 - i], "Mul");
      Value weightScale;
      if (scales)
        for (int j = 0; j < 2; ++j)
          if (scales.getInputs()[j] == dql->getResult(1))
            weightScale = scales.getInputs()[1 - j];
      if (!weightScale)
        return nearMiss(rewriter, mul, "the scale is not x_scale · W_scale");
      Value zeros =
          in.size() > 3 && !isa<NoneType>(in[3].getType()) ? in[3] : Value();
      rewriter.setInsertionPoint(mul);
      Value w = dequantizedWeight(rewriter, mm.getLoc(), in[1], weightScale,
                                  zeros, /*axis=*/1);
      if (!w)
        return nearMiss(rewriter, mul,
                        "the weight, its scales or zero points are not "
                        "initializers of matching shapes");
      auto type = cast<RankedTensorType>(w.getType());
      LinearWeight lw;
      lw.in = type.getDimSize(0);
      lw.out = type.getDimSize(1);
      lw.weight = rewriter.create<TransposeWeightOp>(
          w.getLoc(),
          RankedTensorType::get({lw.out, lw.in}, rewriter.getBF16Type()), w);
      return replaceWithLinear(rewriter, mul, dql.getInputs()[0], lw, {});
    }
    return failure();
  }
};

/// Split(x, sizes) of a raised [batch, seq, width] value along its last
/// axis (onnxruntime-genai's packed QKV before per-head norms) ->
/// sol.split.
struct RaiseSplit : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "Split" || !op.getDomain().empty())
      return failure();
    Value sol = viewedSolValue(skipFloatCasts(op.getInputs()[0]));
    if (!sol)
      return failure();
    auto inType = dyn_cast<RankedTensorType>(op.getInputs()[0].getType());
    const int64_t axis = intAttr(op, "axis", 0);
    if (!(axis == -1 || (inType && axis == inType.getRank() - 1)))
      return nearMiss(rewriter, op, "a split of another axis than the last");
    const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
    std::optional<SmallVector<int64_t>> sizes;
    if (auto attr =
            dyn_cast_or_null<DenseI64ArrayAttr>(op.getOnnxAttr("split")))
      sizes = SmallVector<int64_t>(attr.asArrayRef());
    else if (op.getInputs().size() > 1 &&
             !isa<NoneType>(op.getInputs()[1].getType()))
      sizes = intValues(op.getInputs()[1]);
    else if (op->getNumResults() > 0 && width % op->getNumResults() == 0)
      sizes = SmallVector<int64_t>(op->getNumResults(),
                                   width / op->getNumResults());
    int64_t total = 0;
    if (sizes)
      for (int64_t size : *sizes)
        total += size > 0 ? size : width + 1;
    if (!sizes || sizes->size() != op->getNumResults() || total != width)
      return nearMiss(rewriter, op,
                      "split sizes that do not add up to the "
                      "width");
    rewriter.setInsertionPoint(op);
    SmallVector<Type> types;
    for (int64_t size : *sizes)
      types.push_back(activationType(getContext(), size));
    auto split = rewriter.create<SplitOp>(op.getLoc(), types, sol);
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      Type type = result.getType();
      if (auto unranked = dyn_cast<UnrankedTensorType>(type)) {
        SmallVector<int64_t> shape(inType ? inType.getShape().drop_back()
                                          : ArrayRef<int64_t>{});
        if (!inType)
          shape = {ShapedType::kDynamic, ShapedType::kDynamic};
        shape.push_back((*sizes)[i]);
        type = RankedTensorType::get(shape, unranked.getElementType());
      }
      rewriter.replaceAllUsesWith(
          result,
          rewriter.create<BatchViewOp>(op.getLoc(), type, split.getResult(i)));
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct SolRaiseLinearPass : sol::impl::SolRaiseLinearBase<SolRaiseLinearPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseLinear, RaiseMatMulNBits, RaiseMatMulInteger, RaiseSplit>(
        &getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-linear")))
      signalPassFailure();
  }
};

} // namespace

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
#include "runtime/support/Error.h"
#include "runtime/support/QuantizedCheckpoint.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace sol {
#define GEN_PASS_DEF_SOLRAISELINEAR
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// A linear's weight operands as sol.linear takes them.
struct LinearWeight {
  Value weight, scales, zeros;
  QuantScheme scheme = QuantScheme::None;
  int64_t groupSize = 0;
  int64_t in = 0, out = 0;
};

/// Whether every zero point in `zeros` is 0: a constant is read, a weight
/// through `store`; nullopt when neither can be read.
std::optional<bool> allZero(Value zeros, const WeightStore *store) {
  if (std::optional<SmallVector<int64_t>> values = intValues(zeros))
    return llvm::all_of(*values, [](int64_t z) { return z == 0; });
  auto weight = zeros.getDefiningOp<WeightOp>();
  if (!weight || !store || !store->contains(weight.getName().str()))
    return std::nullopt;
  std::vector<std::byte> scratch;
  auto bytes = store->contiguous(weight.getName().str(), scratch);
  return std::all_of(bytes.begin(), bytes.end(),
                     [](std::byte b) { return b == std::byte{0}; });
}

/// The linear weight of stored integer codes [in, out] (a DequantizeLinear's
/// or MatMulInteger's inputs: per tensor, per index of `axis`, or in blocks
/// of `block` along it): Sol's int8 or int4 where the codes are that as
/// they are, else dequantized to bf16 (`dequantized` set). No weight when
/// they are not initializers of matching shapes.
LinearWeight integerWeight(PatternRewriter &rewriter, Location loc, Value codes,
                           Value scales, Value zeros, int64_t axis,
                           int64_t block, const WeightStore *store,
                           bool &dequantized) {
  LinearWeight w;
  std::optional<SmallVector<int64_t>> shape = weightShape(codes);
  std::optional<SmallVector<int64_t>> scaleShape = weightShape(scales);
  Type element = getElementTypeOrSelf(codes.getType());
  if (axis < 0)
    axis += 2;
  if (!shape || !scaleShape ||
      !(element.isInteger(8) || element.isInteger(4)) ||
      !isa<FloatType>(getElementTypeOrSelf(scales.getType())) ||
      !dequantizeScalesFit(*shape, *scaleShape, axis, block))
    return w;
  if (zeros && (weightShape(zeros) != scaleShape ||
                getElementTypeOrSelf(zeros.getType()) != element))
    return w;
  const int64_t in = (*shape)[0], out = (*shape)[1];
  int64_t count = 1;
  for (int64_t d : *scaleShape)
    count *= d;
  w.in = in;
  w.out = out;
  Value stored = storedWeight(rewriter, codes);
  Value storedScales = storedWeight(rewriter, scales);
  Value storedZeros = zeros ? storedWeight(rewriter, zeros) : Value();
  if (!stored || !storedScales || (zeros && !storedZeros))
    return LinearWeight{};
  auto create = [&](ArrayRef<Type> types) {
    return rewriter.create<DequantizeWeightOp>(
        loc, types, stored, storedScales, storedZeros,
        rewriter.getI64IntegerAttr(axis), rewriter.getI64IntegerAttr(block));
  };
  auto f32 = rewriter.getF32Type();
  if (dequantizesToInt8(element, count, axis, block) &&
      (!zeros || allZero(zeros, store).value_or(false))) {
    auto op = create({RankedTensorType::get({out, in}, element),
                      RankedTensorType::get({out}, f32)});
    w.weight = op.getOutputs()[0];
    w.scales = op.getOutputs()[1];
    w.scheme = QuantScheme::Int8;
    return w;
  }
  if (dequantizesToInt4(element, in, axis, block)) {
    auto op =
        create({RankedTensorType::get({out, in}, rewriter.getIntegerType(4)),
                RankedTensorType::get({out, in / block}, f32),
                RankedTensorType::get({out, in / block},
                                      rewriter.getIntegerType(8, false))});
    w.weight = op.getOutputs()[0];
    w.scales = op.getOutputs()[1];
    w.zeros = op.getOutputs()[2];
    w.scheme = QuantScheme::Int4;
    w.groupSize = block;
    return w;
  }
  dequantized = true;
  Value bf16 =
      create({RankedTensorType::get({in, out}, rewriter.getBF16Type())})
          .getOutputs()[0];
  w.weight = rewriter.create<TransposeWeightOp>(
      loc, RankedTensorType::get({out, in}, rewriter.getBF16Type()), bf16);
  return w;
}

/// The weight a MatMul multiplies by, as a linear takes it ([out, in]),
/// with its [in, out] dimensions; no weight when the right operand is not
/// one.
LinearWeight outInWeight(PatternRewriter &rewriter, Value b,
                         const WeightStore *store, bool &dequantized) {
  // DequantizeLinear(Wq [in, out], scale, zero): QDQ weights.
  if (OnnxOp dq = producer(skipFloatCasts(b), "DequantizeLinear")) {
    auto inputs = dq.getInputs();
    if (inputs.size() < 2)
      return {};
    Value zeros = inputs.size() > 2 && !isa<NoneType>(inputs[2].getType())
                      ? inputs[2]
                      : Value();
    return integerWeight(rewriter, dq.getLoc(), inputs[0], inputs[1], zeros,
                         intAttr(dq, "axis", 1), intAttr(dq, "block_size", 0),
                         store, dequantized);
  }
  LinearWeight w;
  // Transpose(W [out, in]): the original weight.
  if (OnnxOp t = producer(skipFloatCasts(b), "Transpose")) {
    auto perm = dyn_cast_or_null<DenseI64ArrayAttr>(t.getOnnxAttr("perm"));
    std::optional<SmallVector<int64_t>> shape = weightShape(t.getInputs()[0]);
    if (!shape || shape->size() != 2 ||
        (perm && perm.asArrayRef() != ArrayRef<int64_t>{1, 0}))
      return w;
    w.out = (*shape)[0];
    w.in = (*shape)[1];
    w.weight = weightOf(rewriter, t.getInputs()[0]);
    return w;
  }
  std::optional<SmallVector<int64_t>> shape = weightShape(b);
  if (!shape || shape->size() != 2)
    return w;
  w.in = (*shape)[0];
  w.out = (*shape)[1];
  Value stored = weightOf(rewriter, b);
  w.weight = rewriter.create<TransposeWeightOp>(
      stored.getLoc(),
      RankedTensorType::get({w.out, w.in}, rewriter.getBF16Type()), stored);
  return w;
}

/// The bias Add right after `matmul`: Add(b, y) or Add(y, b) of an [out]
/// weight; null when there is none. An Add of a vector of another size (a
/// scalar broadcast, say) is no bias: it stays after the linear.
OnnxOp biasAddOf(OnnxOp matmul, int64_t out, Value &bias) {
  if (!matmul->hasOneUse())
    return {};
  auto add = dyn_cast<OnnxOp>(*matmul->user_begin());
  if (!add || add.getOpType() != "Add" || !add.getDomain().empty())
    return {};
  for (Value operand : add.getInputs())
    if (operand != matmul.getResult(0))
      if (std::optional<SmallVector<int64_t>> s = weightShape(operand);
          s && s->size() == 1 && (*s)[0] == out) {
        bias = operand;
        return add;
      }
  return {};
}

/// Replaces `matmul` (and the bias Add after it, if any; `bias` is the op's
/// own bias input otherwise) by sol.linear of `x` (or of `input`, a Sol
/// value standing for x: its columns gathered) and `w`.
LogicalResult replaceWithLinear(PatternRewriter &rewriter, OnnxOp matmul,
                                Value x, const LinearWeight &w, Value bias,
                                Value input = {}) {
  OnnxOp root = matmul;
  if (!bias)
    if (OnnxOp add = biasAddOf(matmul, w.out, bias))
      root = add;
  rewriter.setInsertionPoint(root);
  Value biasWeight = bias ? weightOf(rewriter, bias) : Value();
  if (!input)
    input = tokenMajor(rewriter, x, w.in);
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

/// One note per pass run that integer weights Sol's quantized linears do
/// not take as they are (zero points, unsigned or per-input codes) are
/// dequantized to bf16: nothing is lost but the plan is larger.
void noteIntegerDequantized(RemarkOnce &note, Operation *op) {
  note.emit(op->getLoc(),
            "integer weights that are not Sol's int8 (signed, symmetric, per "
            "output) or int4 (4-bit blocks along the inputs) are dequantized "
            "to bf16");
}

/// MatMul(x, Wᵀ) [+ b] -> sol.linear(x, W, b).
struct RaiseLinear : OpRewritePattern<OnnxOp> {
  RaiseLinear(MLIRContext *ctx, const WeightStore *store, RemarkOnce &note)
      : OpRewritePattern(ctx), store(store), note(note) {}

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
    bool dequantized = false;
    LinearWeight w = outInWeight(rewriter, b, store, dequantized);
    if (!w.weight)
      return nearMiss(rewriter, matmul, "an unreadable weight");
    if (dequantized)
      noteIntegerDequantized(note, matmul);
    return replaceWithLinear(rewriter, matmul, matmul.getInputs()[0], w, {});
  }

  const WeightStore *store;
  RemarkOnce &note;
};

/// com.microsoft MatMulNBits(A, B, scales[, zero_points, g_idx, bias]):
/// block-quantized weights become Sol's int4 linear (4 bits, integer zero
/// points, K a multiple of block_size), or are dequantized to bf16 at
/// compile time (other bit widths, float zero points), with a note. A
/// g_idx (act-order: each input's block) sorts the codes' columns by block
/// and gathers the linear's inputs in that order, as for GPTQ checkpoints.
struct RaiseMatMulNBits : OpRewritePattern<OnnxOp> {
  RaiseMatMulNBits(MLIRContext *ctx, const WeightStore *store)
      : OpRewritePattern(ctx), store(store) {}

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
    if (present(5)) {
      auto bias = weightShape(inputs[5]);
      if (!bias || bias->size() != 1 || (*bias)[0] != n)
        return nearMiss(rewriter, op, "bias is not an [N] initializer");
    }
    auto raw = [&](Value v) { return storedWeight(rewriter, v); };
    Value zeros = present(3) ? raw(inputs[3]) : Value();
    const bool floatZeros =
        zeros && isa<FloatType>(getElementTypeOrSelf(zeros.getType()));
    // Act-order: the inputs sorted by their block (empty when g_idx is
    // k / block_size or absent).
    std::vector<int32_t> columns;
    if (present(4)) {
      // onnxruntime 1.31's CPU kernel reads g_idx with float zero points
      // or none, but ignores packed ones (it takes 2^(bits-1)).
      if (zeros && !floatZeros)
        return nearMiss(rewriter, op,
                        "g_idx with packed zero points (onnxruntime's CPU "
                        "kernel ignores such zero points when g_idx is "
                        "given, so the graph means two things); re-export "
                        "it without g_idx or with float zero points");
      std::optional<std::vector<int32_t>> groups = int32Weight(inputs[4]);
      if (!groups)
        return nearMiss(rewriter, op, "g_idx is not an int32 initializer");
      if (k % block != 0)
        return nearMiss(rewriter, op,
                        "g_idx with K not a multiple of block_size");
      try {
        columns = quant::gptqInputPermutation(*groups, k, block);
      } catch (const Error &e) {
        return nearMiss(rewriter, op, e.what());
      }
    }
    DenseI32ArrayAttr columnsAttr =
        columns.empty() ? DenseI32ArrayAttr()
                        : rewriter.getDenseI32ArrayAttr(columns);
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
          rewriter.getI64IntegerAttr(bits), rewriter.getI64IntegerAttr(block),
          columnsAttr);
      w.weight = unpack.getResult(0);
      w.scales = unpack.getResult(1);
      w.zeros = unpack.getResult(2);
      w.scheme = QuantScheme::Int4;
      w.groupSize = block;
    } else {
      w.weight = rewriter
                     .create<UnpackNBitsOp>(
                         loc,
                         TypeRange{RankedTensorType::get(
                             {n, k}, rewriter.getBF16Type())},
                         raw(inputs[1]), raw(inputs[2]), zeros,
                         rewriter.getI64IntegerAttr(bits),
                         rewriter.getI64IntegerAttr(block), columnsAttr)
                     .getResult(0);
      noteDequantized(op, bits);
    }
    Value gathered;
    if (columnsAttr)
      gathered = rewriter.create<GatherColumnsOp>(
          loc, activationType(getContext(), k),
          tokenMajor(rewriter, inputs[0], k), columnsAttr);
    return replaceWithLinear(rewriter, op, inputs[0], w,
                             present(5) ? inputs[5] : Value(), gathered);
  }

  /// The int32 values of the initializer `v` (a constant, or read from
  /// the weight store), or nullopt.
  std::optional<std::vector<int32_t>> int32Weight(Value v) const {
    if (std::optional<SmallVector<int64_t>> values = intValues(v))
      return std::vector<int32_t>(values->begin(), values->end());
    auto weight = skipFloatCasts(v).getDefiningOp<WeightOp>();
    if (!weight || !store || !store->contains(weight.getName().str()) ||
        !getElementTypeOrSelf(weight.getType()).isInteger(32))
      return std::nullopt;
    std::vector<std::byte> scratch;
    auto bytes = store->contiguous(weight.getName().str(), scratch);
    std::vector<int32_t> out(bytes.size() / sizeof(int32_t));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(int32_t));
    return out;
  }

  const WeightStore *store;

  /// One note per pass run: the weights lose no precision but the plan
  /// stores them in bf16.
  void noteDequantized(OnnxOp op, int64_t bits) const {
    dequantized.emit(op.getLoc(),
                     "MatMulNBits weights of " + Twine(bits) +
                         " bits (or with float zero points) are dequantized "
                         "to bf16: Sol's quantized linears take 4-bit codes "
                         "with integer zero points");
  }

  mutable RemarkOnce dequantized;
};

/// onnxruntime's dynamic quantization of a MatMul by a constant
/// (quantize_dynamic; transformers.js's model_int8 / model_quantized.onnx):
///
///   xq, xs, xz = DynamicQuantizeLinear(x)
///   y = Mul(Cast(MatMulInteger(xq, Wq, xz, Wz), FLOAT), Mul(xs, Ws))
///
/// is x · dequantize(Wq) up to the rounding of x to 8 bits, which Sol does
/// not repeat: sol.linear of x and Wq (Sol's int8 when symmetric, else the
/// dequantized weight in bf16).
struct RaiseMatMulInteger : OpRewritePattern<OnnxOp> {
  RaiseMatMulInteger(MLIRContext *ctx, const WeightStore *store,
                     RemarkOnce &note)
      : OpRewritePattern(ctx), store(store), note(note) {}

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
      bool dequantized = false;
      LinearWeight lw =
          integerWeight(rewriter, mm.getLoc(), in[1], weightScale, zeros,
                        /*axis=*/1, /*block=*/0, store, dequantized);
      if (!lw.weight)
        return nearMiss(rewriter, mul,
                        "the weight, its scales or zero points are not "
                        "initializers of matching shapes");
      if (dequantized)
        noteIntegerDequantized(note, mul);
      return replaceWithLinear(rewriter, mul, dql.getInputs()[0], lw, {});
    }
    return failure();
  }

  const WeightStore *store;
  RemarkOnce &note;
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
  SolRaiseLinearPass() = default;
  explicit SolRaiseLinearPass(const WeightStore *store) : store(store) {}

  void runOnOperation() override {
    RemarkOnce note;
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseSplit>(&getContext());
    patterns.add<RaiseMatMulNBits>(&getContext(), store);
    patterns.add<RaiseLinear, RaiseMatMulInteger>(&getContext(), store, note);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-linear")))
      signalPassFailure();
  }

  const WeightStore *store = nullptr;
};

} // namespace

std::unique_ptr<Pass> sol::createSolRaiseLinear(const WeightStore *store) {
  return std::make_unique<SolRaiseLinearPass>(store);
}

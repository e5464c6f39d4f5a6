//===- Quantize.cpp - sol-quantize ----------------------------------------===//
//
// Quantization is a weight transform like the others: the linear's weight
// becomes the codes of a sol.quantize_weight, computed by
// sol-materialize-weights when the plan writer reads it, and the linear
// carries the scales, zero points and scheme the kernels need. It runs on
// kernel-level IR so that fused projections (QKV, gate/up) are quantized
// once, as the kernels read them; per-row scales and groups along K are the
// same whether rows are quantized before or after stacking. A mixture's
// experts are quantized the same way, each projection's stacked weight at
// once.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "runtime/support/Quantize.h"

#include "mlir/IR/PatternMatch.h"

#include <map>

namespace sol {
#define GEN_PASS_DEF_SOLQUANTIZE
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

static_assert(static_cast<int>(QuantScheme::Int8) ==
              static_cast<int>(quant::Scheme::Int8));
static_assert(static_cast<int>(QuantScheme::Fp8) ==
              static_cast<int>(quant::Scheme::Fp8));
static_assert(static_cast<int>(QuantScheme::Int4) ==
              static_cast<int>(quant::Scheme::Int4));

namespace {

struct SolQuantizePass : sol::impl::SolQuantizeBase<SolQuantizePass> {
  using SolQuantizeBase::SolQuantizeBase;

  void runOnOperation() override {
    std::optional<QuantScheme> parsed = symbolizeQuantScheme(scheme);
    if (!parsed || *parsed == QuantScheme::None) {
      getOperation().emitError() << "sol-quantize: unknown scheme '" << scheme
                                 << "' (int8, fp8 or int4)";
      return signalPassFailure();
    }
    const QuantScheme target = *parsed;
    if (target == QuantScheme::Int4 && (groupSize <= 0 || groupSize % 2)) {
      getOperation().emitError()
          << "sol-quantize: the int4 group size must be a positive even "
          << "number, got " << groupSize.getValue();
      return signalPassFailure();
    }
    alreadyQuantized.clear();
    SmallVector<Operation *> linears;
    getOperation().walk([&](Operation *op) {
      if (isa<LinearOp, NormLinearOp>(op))
        linears.push_back(op);
    });
    for (Operation *op : linears)
      if (auto linear = dyn_cast<LinearOp>(op))
        quantize(linear, target);
      else
        quantize(cast<NormLinearOp>(op), target);
    // The experts take the scheme too, each projection's stacked [E * rows,
    // K] weight as one linear's (rows and groups are per expert either
    // way); MXFP4 ones (gpt-oss's checkpoints) and int4 ones (an ONNX
    // graph's QMoE) keep their format.
    SmallVector<MoeOp> mixtures;
    getOperation().walk([&](MoeOp m) { mixtures.push_back(m); });
    std::map<std::string, int64_t> kept;
    for (MoeOp m : mixtures) {
      if (m.isMxfp4())
        ++kept["MXFP4"];
      else if (m.getExpertQuant() != QuantScheme::None)
        ++kept[stringifyQuantScheme(m.getExpertQuant()).str()];
      else
        quantize(m, target);
    }
    for (const auto &[format, count] : kept)
      getOperation().emitWarning()
          << "keeps the expert weights of " << count
          << " mixture-of-experts layers in their checkpoint's format ("
          << format << "); " << scheme.getValue()
          << " applies to the other linears";
    // Linears a checkpoint brought quantized keep their format: say so once
    // rather than per layer.
    if (!alreadyQuantized.empty()) {
      std::string schemes;
      for (const auto &[name, count] : alreadyQuantized)
        schemes +=
            (schemes.empty() ? "" : ", ") + std::to_string(count) + " " + name;
      getOperation().emitWarning()
          << "keeps the weights of linears that are already quantized ("
          << schemes << "); " << scheme.getValue()
          << " applies to the float ones only";
    }
  }

  /// Why `weight` of a linear with results `result` stays as it is, or ""
  /// when it takes `target`.
  std::string reasonToKeep(Operation *op, Value weight, RankedTensorType result,
                           QuantScheme target) {
    auto type = cast<RankedTensorType>(weight.getType());
    Type element = type.getElementType();
    QuantScheme current = isa<LinearOp>(op) ? cast<LinearOp>(op).getQuant()
                                            : cast<NormLinearOp>(op).getQuant();
    if (current != QuantScheme::None) {
      const int64_t group = isa<LinearOp>(op)
                                ? cast<LinearOp>(op).getGroupSize()
                                : cast<NormLinearOp>(op).getGroupSize();
      std::string name = stringifyQuantScheme(current).str();
      if (group)
        name += " in groups of " + std::to_string(group);
      ++alreadyQuantized[name];
      return "already " + name;
    }
    if (!element.isBF16() && !element.isF16() && !element.isF32())
      return "already " + printed(element);
    if (result.getElementType().isF32() && !lmHead)
      return "LM head (--quant-lm-head quantizes it)";
    const int64_t k = type.getDimSize(1);
    if (target == QuantScheme::Int4 && k % groupSize != 0) {
      std::string why = std::to_string(k) +
                        " input features are not a multiple of the group "
                        "size " +
                        std::to_string(groupSize.getValue());
      op->emitWarning() << "keeps its weight: " << why;
      return why;
    }
    return "";
  }

  static std::string printed(Type t) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << t;
    return s;
  }

  /// The codes, scales and zeros of `weight` quantized as `target`.
  QuantizeWeightOp quantizeWeight(OpBuilder &b, Location loc, Value weight,
                                  QuantScheme target) {
    auto type = cast<RankedTensorType>(weight.getType());
    MLIRContext *ctx = b.getContext();
    const int64_t n = type.getDimSize(0), k = type.getDimSize(1);
    Type code = target == QuantScheme::Int8  ? Type(IntegerType::get(ctx, 8))
                : target == QuantScheme::Fp8 ? Type(Float8E4M3FNType::get(ctx))
                                             : Type(IntegerType::get(ctx, 4));
    SmallVector<int64_t> scaleShape{n};
    const int64_t group =
        target == QuantScheme::Int4 ? groupSize.getValue() : 0;
    if (group)
      scaleShape.push_back(k / group);
    auto codes = RankedTensorType::get(type.getShape(), code);
    auto scales = RankedTensorType::get(scaleShape, b.getF32Type());
    Type zeros =
        group ? RankedTensorType::get(
                    scaleShape, IntegerType::get(ctx, 8, IntegerType::Unsigned))
              : Type();
    return b.create<QuantizeWeightOp>(
        loc, codes, scales, zeros, weight, QuantSchemeAttr::get(ctx, target),
        b.getI64IntegerAttr(group),
        b.getBoolAttr(clipSearch && target == QuantScheme::Int4));
  }

  /// Already-quantized linears met, by scheme (and group size).
  std::map<std::string, int> alreadyQuantized;

  void quantize(LinearOp op, QuantScheme target) {
    std::string keep =
        reasonToKeep(op, op.getWeight(), op.getResult().getType(), target);
    if (!keep.empty()) {
      op->setAttr("sol.quant_kept", StringAttr::get(&getContext(), keep));
      return;
    }
    OpBuilder b(op);
    QuantizeWeightOp q = quantizeWeight(b, op.getLoc(), op.getWeight(), target);
    auto replacement = b.create<LinearOp>(
        op.getLoc(), op.getType(), op.getInput(), q.getCodes(), op.getBias(),
        op.getResidual(), q.getScales(), q.getZeros(), op.getEpilogueAttr(),
        QuantSchemeAttr::get(&getContext(), target), q.getGroupSizeAttr());
    replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    op.getResult().replaceAllUsesWith(replacement.getResult());
    op.erase();
  }

  void quantize(MoeOp op, QuantScheme target) {
    if (target == QuantScheme::Int4 &&
        (op.getGate().getType().getDimSize(1) % groupSize != 0 ||
         op.getExpertWidth() % groupSize != 0)) {
      std::string why = "the hidden size " +
                        std::to_string(op.getGate().getType().getDimSize(1)) +
                        " or the experts' width " +
                        std::to_string(op.getExpertWidth()) +
                        " is not a multiple of the group size " +
                        std::to_string(groupSize.getValue());
      op->emitWarning() << "keeps its expert weights: " << why;
      op->setAttr("sol.quant_kept", StringAttr::get(&getContext(), why));
      return;
    }
    OpBuilder b(op);
    SmallVector<Value, 3> scales, zeros;
    for (OpOperand *operand :
         {&op.getGateMutable(), &op.getUpMutable(), &op.getDownMutable()}) {
      QuantizeWeightOp q =
          quantizeWeight(b, op.getLoc(), operand->get(), target);
      operand->set(q.getCodes());
      scales.push_back(q.getScales());
      if (q.getZeros())
        zeros.push_back(q.getZeros());
    }
    op.getScalesMutable().assign(scales);
    op.getZerosMutable().assign(zeros);
  }

  void quantize(NormLinearOp op, QuantScheme target) {
    std::string keep =
        reasonToKeep(op, op.getWeight(), op.getResult().getType(), target);
    if (!keep.empty()) {
      op->setAttr("sol.quant_kept", StringAttr::get(&getContext(), keep));
      return;
    }
    OpBuilder b(op);
    QuantizeWeightOp q = quantizeWeight(b, op.getLoc(), op.getWeight(), target);
    auto replacement = b.create<NormLinearOp>(
        op.getLoc(), op.getType(), op.getInput(), op.getNormWeight(),
        op.getEpsilonAttr(), q.getCodes(), op.getBias(), op.getResidual(),
        q.getScales(), q.getZeros(), op.getEpilogueAttr(),
        QuantSchemeAttr::get(&getContext(), target), q.getGroupSizeAttr());
    replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    op.getResult().replaceAllUsesWith(replacement.getResult());
    op.erase();
  }
};

} // namespace

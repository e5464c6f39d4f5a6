//===- RaiseMoe.cpp - sol-raise-moe ---------------------------------------===//
//
// onnxruntime's mixture-of-experts contrib ops, as onnxruntime-genai's model
// builder writes them (gpt-oss): com.microsoft MoE (float experts) and QMoE
// (4- or 8-bit expert codes), fed the router's logits by a MatMul (+ bias
// Add, Reshape to [tokens, experts]) of the same input. Both become
// sol.moe: the router linear's weight and bias, the experts' weights
// taken apart into gate, up and down (the builder's fused fc1 holds gate
// and up interleaved), 4-bit codes as Sol's int4 experts (unpacked as
// MatMulNBits' are), 8-bit ones dequantized.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISEMOE
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// A float attribute of an ONNX op, or nullopt when absent.
std::optional<double> floatAttr(OnnxOp op, StringRef name) {
  if (auto attr = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr(name)))
    return attr.getValueAsDouble();
  return std::nullopt;
}

std::string stringAttr(OnnxOp op, StringRef name, StringRef fallback) {
  if (auto attr = dyn_cast_or_null<StringAttr>(op.getOnnxAttr(name)))
    return attr.getValue().str();
  return fallback.str();
}

/// The three projections of every expert, stacked as sol.moe takes them,
/// with their scales and zero points when they are Sol's int4.
struct Experts {
  Value gate, up, down;
  SmallVector<Value, 3> scales, zeros;
  /// Biases of gate, up and down (all or none).
  Value gateBias, upBias, downBias;
};

/// Weight reshapes and row slices, at one location.
class WeightBuilder {
public:
  WeightBuilder(PatternRewriter &rewriter, Location loc)
      : rewriter(rewriter), loc(loc) {}

  Value reshape(Value w, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(w.getType());
    if (type.getShape() == shape)
      return w;
    return rewriter.create<ReshapeWeightOp>(
        loc, RankedTensorType::get(shape, type.getElementType()), w);
  }

  /// Rows offset, offset + stride, ... of a 1-D or 2-D weight.
  Value rows(Value w, int64_t offset, int64_t stride) {
    auto type = cast<RankedTensorType>(w.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] /= stride;
    return rewriter.create<SliceRowsOp>(
        loc, RankedTensorType::get(shape, type.getElementType()), w,
        rewriter.getI64IntegerAttr(offset), rewriter.getI64IntegerAttr(stride));
  }

  /// The gate (`which` 0) or up (1) rows of a fused fc1 of `experts`
  /// experts, `width` of each per expert (`cols` per row; 0 for a bias),
  /// interleaved (swiglu_fusion 1).
  Value half(Value fused, int64_t experts, int64_t width, int64_t cols,
             int which) {
    return rows(reshape(fused, rowShape(experts * 2 * width, cols)), which, 2);
  }

  PatternRewriter &rewriter;
  Location loc;

private:
  static SmallVector<int64_t, 2> rowShape(int64_t rows, int64_t cols) {
    if (cols == 0)
      return {rows};
    return {rows, cols};
  }
};

/// com.microsoft MoE / QMoE -> sol.moe.
struct RaiseMoe : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    const bool quantized = op.getOpType() == "QMoE";
    if ((!quantized && op.getOpType() != "MoE") ||
        op.getDomain() != "com.microsoft")
      return failure();
    auto inputs = op.getInputs();
    auto present = [&](unsigned i) {
      return i < inputs.size() && !isa<NoneType>(inputs[i].getType());
    };
    // Input positions: MoE (input, router_probs, fc1, fc1_bias, fc2,
    // fc2_bias, fc3, fc3_bias); QMoE with each weight's scales after it and
    // zero points, router weights and global scales from 11 on.
    const unsigned fc1 = 2, fc1Scales = 3, fc1Bias = quantized ? 4 : 3,
                   fc2 = quantized ? 5 : 4, fc2Scales = 6,
                   fc2Bias = quantized ? 7 : 5, fc3 = quantized ? 8 : 6,
                   fc3Scales = 9, fc3Bias = quantized ? 10 : 7;
    if (!present(0) || !present(1) || !present(fc1) || !present(fc2))
      return nearMiss(rewriter, op, "input, router_probs, fc1 or fc2 missing");
    if (intAttr(op, "use_sparse_mixer", 0) != 0)
      return nearMiss(rewriter, op,
                      "use_sparse_mixer (Phi-3.5-MoE's routing) is not "
                      "supported");
    if (present(quantized ? 14 : 8))
      return nearMiss(rewriter, op,
                      "a router_weights input (routing weights other than "
                      "the softmax of router_probs) is not supported");
    const std::string quantType = stringAttr(op, "quant_type", "int");
    if (quantized && quantType != "int")
      return nearMiss(rewriter, op,
                      "quant_type '" + quantType +
                          "' experts (onnxruntime's CUDA FP4 layout) are not "
                          "supported; export integer experts "
                          "(moe_quant_type=int4 or int8)");
    if (quantized && intAttr(op, "weights_prepacked", 0) != 0)
      return nearMiss(rewriter, op,
                      "weights_prepacked: the experts are in the CUTLASS "
                      "layout of onnxruntime's CUDA kernels; export them raw "
                      "(onnxruntime-genai's qmoe_weights_prepacked=0)");
    if (quantized && present(fc1Scales) && exportedPrepacked(op))
      return nearMiss(rewriter, op,
                      "the graph was exported for onnxruntime's CUDA "
                      "execution provider, whose QMoE experts are "
                      "CUTLASS-prepacked; export it for the cpu provider or "
                      "with qmoe_weights_prepacked=0");

    // The router: a linear of the same input, seen as [tokens, experts].
    Value routerLogits = viewedSolValue(skipFloatCasts(inputs[1]));
    auto router =
        routerLogits ? routerLogits.getDefiningOp<LinearOp>() : LinearOp();
    if (!router)
      return nearMiss(rewriter, op,
                      "router_probs is not a raised linear (MatMul [+ bias "
                      "Add]) of the input");
    if (router.getResidual() || router.getEpilogue() != LinearEpilogue::None)
      return nearMiss(rewriter, op, "the router linear has an epilogue");
    if (router.getQuant() != QuantScheme::None) {
      auto unpack = router.getWeight().getDefiningOp<UnpackNBitsOp>();
      if (!unpack || unpack.getColumns())
        return nearMiss(rewriter, op,
                        "the router's weight is quantized in a format Sol "
                        "cannot dequantize here (sol.moe routes with a "
                        "float router)");
    }
    Value x = router.getInput();
    if (onnxSource(x) != onnxSource(inputs[0]))
      return nearMiss(rewriter, op,
                      "the router reads another input than the experts");
    const int64_t hidden = cast<RankedTensorType>(x.getType()).getDimSize(1);
    const int64_t experts =
        cast<RankedTensorType>(router.getType()).getDimSize(1);

    const int64_t topK = intAttr(op, "k", 1);
    if (topK < 1 || topK > experts)
      return nearMiss(rewriter, op,
                      "k = " + std::to_string(topK) + " is not in [1, " +
                          std::to_string(experts) + "]");

    // The activation: a gated MLP whose gate Sol computes.
    const std::string activation = stringAttr(op, "activation_type", "relu");
    const int64_t fusion = intAttr(op, "swiglu_fusion", 0);
    GateActivation act = GateActivation::Silu;
    FloatAttr limit;
    if (activation == "swiglu") {
      const double alpha = floatAttr(op, "activation_alpha").value_or(1.0);
      const double beta = floatAttr(op, "activation_beta").value_or(0.0);
      std::optional<double> clamp = floatAttr(op, "swiglu_limit");
      if (std::fabs(alpha - 1.702) < 1e-6 && beta == 1.0 && clamp) {
        act = GateActivation::ClampedSilu;
        limit = rewriter.getF32FloatAttr(float(*clamp));
      } else if (!(alpha == 1.0 && beta == 0.0 && !clamp)) {
        return nearMiss(
            rewriter, op,
            "swiglu with activation_alpha " + std::to_string(alpha) +
                ", activation_beta " + std::to_string(beta) +
                (clamp ? ", swiglu_limit " + std::to_string(*clamp) : "") +
                ": Sol computes silu(g)·u (alpha 1, beta 0, no limit) and "
                "gpt-oss's clamped form (alpha 1.702, beta 1, a limit)");
      }
      if (fusion == 2)
        return nearMiss(rewriter, op,
                        "swiglu_fusion 2 (gate and up fused, not "
                        "interleaved) is not supported; onnxruntime-genai "
                        "writes 1 (interleaved)");
      if (fusion < 0 || fusion > 1 || (fusion == 0) != present(fc3))
        return nearMiss(rewriter, op,
                        "swiglu_fusion " + std::to_string(fusion) + " with" +
                            (present(fc3) ? "" : "out") +
                            " fc3: gate and up are not where it says");
    } else if (activation == "silu" && present(fc3) && fusion == 0) {
      act = GateActivation::Silu;
    } else {
      return nearMiss(rewriter, op,
                      "activation_type '" + activation + "'" +
                          (present(fc3) ? "" : " without fc3") +
                          ": Sol's experts are gated MLPs (swiglu, or silu "
                          "with fc3)");
    }

    // Expert sizes from fc2 ([E, H, I], its last dim packed when quantized).
    std::optional<SmallVector<int64_t>> fc2Shape = weightShape(inputs[fc2]);
    std::optional<SmallVector<int64_t>> fc1Shape = weightShape(inputs[fc1]);
    if (!fc1Shape || !fc2Shape || fc1Shape->size() != 3 ||
        fc2Shape->size() != 3)
      return nearMiss(rewriter, op, "fc1 and fc2 are not 3-D initializers");
    const int64_t bits = quantized ? intAttr(op, "expert_weight_bits", 4) : 0;
    if (quantized && bits != 4 && bits != 8)
      return nearMiss(rewriter, op,
                      "expert_weight_bits " + std::to_string(bits));
    const int64_t perByte = quantized ? 8 / bits : 1;
    const int64_t gateRows = fusion == 0 ? 1 : 2;
    const int64_t width = (*fc2Shape)[2] * perByte;
    std::optional<SmallVector<int64_t>> fc3Shape =
        fusion == 0 ? weightShape(inputs[fc3]) : fc1Shape;
    if ((*fc1Shape)[0] != experts || (*fc2Shape)[0] != experts ||
        (*fc2Shape)[1] != hidden || (*fc1Shape)[1] != gateRows * width ||
        (*fc1Shape)[2] * perByte != hidden || fc3Shape != fc1Shape)
      return nearMiss(rewriter, op,
                      "the experts' weights are not [experts, " +
                          std::to_string(gateRows) + "·inter, hidden] and " +
                          "[experts, hidden, inter] for the router's " +
                          std::to_string(experts) + " experts of " +
                          std::to_string(hidden));

    // Every check before the first op is built (a failing pattern must
    // leave the IR as it found it).
    const unsigned zeroAt[] = {11, 12, 13};
    const std::pair<unsigned, unsigned> projections[] = {
        {fc1, fc1Scales}, {fc2, fc2Scales}, {fc3, fc3Scales}};
    const int64_t projectionShape[3][2] = {{experts * gateRows * width, hidden},
                                           {experts * hidden, width},
                                           {experts * width, hidden}};
    // Sol's int4 experts when every projection's codes can be; else all
    // are dequantized (sol.moe takes one format).
    bool int4 = bits != 0;
    for (unsigned i = 0; i < (fusion == 0 ? 3u : 2u); ++i) {
      auto [at, scalesAt] = projections[i];
      if (bits && !present(scalesAt))
        return nearMiss(rewriter, op, "expert codes without scales");
      Value scales = bits ? inputs[scalesAt] : Value();
      Value zeros = bits && present(zeroAt[i]) ? inputs[zeroAt[i]] : Value();
      std::string why;
      std::optional<bool> asInt4 =
          checkProjection(op, inputs[at], scales, zeros, bits,
                          projectionShape[i][0], projectionShape[i][1], why);
      if (!asInt4)
        return nearMiss(rewriter, op, why);
      int4 = int4 && *asInt4;
    }
    // Biases: the router's and the experts', all or none.
    const bool expertBiases = present(fc1Bias) || present(fc2Bias);
    auto floatVector = [&](unsigned i) {
      std::optional<SmallVector<int64_t>> shape = weightShape(inputs[i]);
      return shape && isa<FloatType>(getElementTypeOrSelf(inputs[i].getType()));
    };
    if (expertBiases) {
      if (!present(fc1Bias) || !present(fc2Bias) ||
          (fusion == 0 && !present(fc3Bias)) || !router.getBias())
        return nearMiss(rewriter, op,
                        "biases on some of the router, fc1, fc2 (and fc3) "
                        "but not all; Sol's experts take all or none");
      if (!floatVector(fc1Bias) || !floatVector(fc2Bias) ||
          (fusion == 0 && !floatVector(fc3Bias)))
        return nearMiss(rewriter, op,
                        "the experts' biases are not float initializers");
    } else if (router.getBias()) {
      return nearMiss(rewriter, op,
                      "a router bias without expert biases; Sol's experts "
                      "take all or none");
    }

    rewriter.setInsertionPoint(op);
    Value routerWeight = floatLinearWeight(rewriter, router);
    WeightBuilder wb(rewriter, op.getLoc());
    Experts e = expertWeights(wb, op, inputs, fusion, experts, width, bits,
                              int4, projections, zeroAt, projectionShape);
    if (expertBiases) {
      Value b1 = weightOf(rewriter, inputs[fc1Bias]);
      Value b2 = weightOf(rewriter, inputs[fc2Bias]);
      if (fusion == 0) {
        e.gateBias = wb.reshape(b1, {experts * width});
        e.upBias =
            wb.reshape(weightOf(rewriter, inputs[fc3Bias]), {experts * width});
      } else {
        e.gateBias = wb.half(b1, experts, width, 0, 0);
        e.upBias = wb.half(b1, experts, width, 0, 1);
      }
      e.downBias = wb.reshape(b2, {experts * hidden});
    }
    SmallVector<Value, 4> biases;
    if (expertBiases)
      biases = {router.getBias(), e.gateBias, e.upBias, e.downBias};

    Value routed = rewriter.create<MoeOp>(
        op.getLoc(), x.getType(), x, routerWeight, e.gate, e.up, e.down, biases,
        e.scales, e.zeros, rewriter.getI64IntegerAttr(topK),
        rewriter.getBoolAttr(intAttr(op, "normalize_routing_weights", 0) != 0),
        GateActivationAttr::get(getContext(), act), limit);
    replaceWithView(rewriter, op, routed);
    return success();
  }

  /// The ONNX value a Sol value views (through batch views and casts).
  static Value onnxSource(Value v) {
    while (true) {
      v = skipFloatCasts(v);
      if (auto view = v.getDefiningOp<BatchViewOp>())
        v = view.getInput();
      else
        return v;
    }
  }

  /// Whether genai_config.json beside the graph names onnxruntime's CUDA
  /// provider: the builder then ships QMoE experts CUTLASS-prepacked
  /// without saying so in the node.
  static bool exportedPrepacked(OnnxOp op) {
    if (op.getOnnxAttr("weights_prepacked"))
      return false;
    auto source =
        op->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
            "sol.onnx_source");
    auto provider =
        source ? dyn_cast_or_null<StringAttr>(source.get("execution_provider"))
               : StringAttr();
    return provider && provider.getValue() == "cuda";
  }

  /// The block size of QMoE's codes of `cols` inputs (a whole row when
  /// the op has none).
  static int64_t blockSize(OnnxOp op, int64_t cols) {
    const int64_t block = intAttr(op, "block_size", 0);
    return block > 0 ? block : cols;
  }

  /// Whether one projection's 3-D initializer `w` (codes with `scales` and
  /// maybe `zeros` when `bits` is set) can be stacked as [rows, cols]: true
  /// when its codes become Sol's int4, false for a float or dequantized
  /// weight; nullopt with `why` set when it cannot. Builds nothing.
  static std::optional<bool> checkProjection(OnnxOp op, Value w, Value scales,
                                             Value zeros, int64_t bits,
                                             int64_t rows, int64_t cols,
                                             std::string &why) {
    if (!bits) {
      if (!weightShape(w) ||
          !isa<FloatType>(getElementTypeOrSelf(w.getType()))) {
        why = "an expert weight is not a float initializer";
        return std::nullopt;
      }
      return false;
    }
    const int64_t block = blockSize(op, cols);
    if (!weightShape(w) || !weightShape(scales) ||
        (zeros && !weightShape(zeros)) ||
        !getElementTypeOrSelf(w.getType()).isUnsignedInteger(8) ||
        !isa<FloatType>(getElementTypeOrSelf(scales.getType()))) {
      why = "expert codes, scales or zero points are not initializers "
            "(codes uint8, scales float)";
      return std::nullopt;
    }
    if (cols % block != 0 || block < 16) {
      why = "block_size " + std::to_string(block) +
            " does not divide the experts' " + std::to_string(cols) + " inputs";
      return std::nullopt;
    }
    if (cast<RankedTensorType>(scales.getType()).getNumElements() !=
        rows * (cols / block)) {
      why = "expert scales are not one per row and block";
      return std::nullopt;
    }
    if (zeros &&
        cast<RankedTensorType>(zeros.getType()).getNumElements() % rows != 0) {
      why = "expert zero points are not the same number for every row";
      return std::nullopt;
    }
    // Sol's int4 experts take whole groups of 32 (the kernels' unit) and
    // integer zero points.
    return bits == 4 && block % 32 == 0 &&
           (!zeros ||
            getElementTypeOrSelf(zeros.getType()).isUnsignedInteger(8));
  }

  /// One projection's stacked weight ([rows, cols]) as checkProjection
  /// allowed: a float weight, Sol's int4 (`weight`, `scales`, `zeros`)
  /// when `int4`, else the codes dequantized to bf16.
  /// QMoE codes are [E, N, K·bits/8] (low bits first along K) and scales
  /// [E, N, K / block_size] (or [E, N] with one block a row): row by row
  /// the layout of MatMulNBits, whose unpacking they share.
  struct Stacked {
    Value weight, scales, zeros;
  };
  Stacked buildProjection(WeightBuilder &wb, OnnxOp op, Value w, Value scales,
                          Value zeros, int64_t bits, bool int4, int64_t rows,
                          int64_t cols) const {
    PatternRewriter &rewriter = wb.rewriter;
    Stacked out;
    if (!bits) {
      out.weight = wb.reshape(weightOf(rewriter, w), {rows, cols});
      return out;
    }
    const int64_t block = blockSize(op, cols), blocks = cols / block;
    Value packed =
        wb.reshape(storedWeight(rewriter, w), {rows, blocks, block * bits / 8});
    Value flatScales =
        wb.reshape(storedWeight(rewriter, scales), {rows, blocks});
    Value z;
    if (zeros) {
      z = storedWeight(rewriter, zeros);
      z = wb.reshape(
          z,
          {rows, cast<RankedTensorType>(z.getType()).getNumElements() / rows});
    }
    auto create = [&](TypeRange types) {
      return rewriter.create<UnpackNBitsOp>(wb.loc, types, packed, flatScales,
                                            z, rewriter.getI64IntegerAttr(bits),
                                            rewriter.getI64IntegerAttr(block),
                                            /*columns=*/DenseI32ArrayAttr());
    };
    if (int4) {
      auto unpack = create(
          {RankedTensorType::get({rows, cols}, rewriter.getIntegerType(4)),
           RankedTensorType::get({rows, blocks}, rewriter.getF32Type()),
           RankedTensorType::get({rows, blocks},
                                 rewriter.getIntegerType(8, false))});
      out.weight = unpack.getResult(0);
      out.scales = unpack.getResult(1);
      out.zeros = unpack.getResult(2);
      return out;
    }
    noteDequantized(op, bits);
    out.weight =
        create({RankedTensorType::get({rows, cols}, rewriter.getBF16Type())})
            .getResult(0);
    return out;
  }

  /// gate, up and down of every expert (fc1 fused, or fc1 and fc3; fc2),
  /// as the checks allowed.
  Experts expertWeights(WeightBuilder &wb, OnnxOp op, ValueRange inputs,
                        int64_t fusion, int64_t experts, int64_t width,
                        int64_t bits, bool int4,
                        const std::pair<unsigned, unsigned> (&at)[3],
                        const unsigned (&zeroAt)[3],
                        const int64_t (&shape)[3][2]) const {
    auto present = [&](unsigned i) {
      return i < inputs.size() && !isa<NoneType>(inputs[i].getType());
    };
    auto part = [&](unsigned i) {
      Value scales = bits ? inputs[at[i].second] : Value();
      Value zeros = bits && present(zeroAt[i]) ? inputs[zeroAt[i]] : Value();
      return buildProjection(wb, op, inputs[at[i].first], scales, zeros, bits,
                             int4, shape[i][0], shape[i][1]);
    };
    Experts e;
    Stacked first = part(0), down = part(1);
    e.down = down.weight;
    if (fusion == 0) {
      Stacked up = part(2);
      e.gate = first.weight;
      e.up = up.weight;
      if (first.scales)
        e.scales = {first.scales, up.scales, down.scales};
      if (first.zeros)
        e.zeros = {first.zeros, up.zeros, down.zeros};
      return e;
    }
    // Rows of gate and up, interleaved; a projection's scales and zero
    // points have its rows.
    auto half = [&](Value v, int which) {
      const int64_t cols = cast<RankedTensorType>(v.getType()).getDimSize(1);
      return wb.half(v, experts, width, cols, which);
    };
    e.gate = half(first.weight, 0);
    e.up = half(first.weight, 1);
    if (first.scales)
      e.scales = {half(first.scales, 0), half(first.scales, 1), down.scales};
    if (first.zeros)
      e.zeros = {half(first.zeros, 0), half(first.zeros, 1), down.zeros};
    return e;
  }

  /// One note per pass run: codes Sol's int4 experts do not take (8 bits,
  /// blocks that are not whole groups of 32) are dequantized to bf16.
  void noteDequantized(OnnxOp op, int64_t bits) const {
    dequantized.emit(op.getLoc(),
                     "QMoE experts of " + Twine(bits) +
                         " bits (or in blocks that are not multiples of 32) "
                         "are dequantized to bf16: Sol's quantized experts "
                         "take 4-bit codes in groups of 32");
  }

  mutable RemarkOnce dequantized;
};

struct SolRaiseMoePass : sol::impl::SolRaiseMoeBase<SolRaiseMoePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseMoe>(&getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-moe")))
      signalPassFailure();
  }
};

} // namespace

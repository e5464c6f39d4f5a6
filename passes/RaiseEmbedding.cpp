//===- RaiseEmbedding.cpp - sol-raise-embedding ---------------------------===//
//
// An ONNX embedding lookup is a Gather of a weight's rows by token ids (or
// of a transposed LM head's, for tied embeddings), or onnxruntime's
// GatherBlockQuantized of 4-bit rows.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sol {
#define GEN_PASS_DEF_SOLRAISEEMBEDDING
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

bool isIntegerTensor(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  return type && isa<IntegerType>(type.getElementType());
}

/// Replaces `gather` by sol.embedding of `ids` in `table` [V, H].
void replaceWithEmbedding(PatternRewriter &rewriter, OnnxOp gather, Value ids,
                          Value table) {
  const int64_t hidden = cast<RankedTensorType>(table.getType()).getDimSize(1);
  auto idsFlat =
      RankedTensorType::get({ShapedType::kDynamic}, rewriter.getI32Type());
  Value flat =
      ids.getType() == idsFlat
          ? ids
          : rewriter.create<BatchViewOp>(gather.getLoc(), idsFlat, ids);
  Value embedded = rewriter.create<EmbeddingOp>(
      gather.getLoc(), activationType(rewriter.getContext(), hidden), flat,
      table, /*scale=*/FloatAttr());
  std::optional<SmallVector<int64_t>> viewShape;
  if (auto ranked = dyn_cast<RankedTensorType>(ids.getType())) {
    viewShape = SmallVector<int64_t>(ranked.getShape());
    viewShape->push_back(hidden);
  }
  replaceWithView(rewriter, gather, embedded, viewShape);
}

/// Mul(embedding, c) for a scalar constant c (Gemma's sqrt(hidden_size),
/// as onnxruntime-genai writes it) -> the embedding's scale.
struct RaiseEmbeddingScale : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp mul,
                                PatternRewriter &rewriter) const override {
    if (mul.getOpType() != "Mul" || !mul.getDomain().empty() ||
        mul.getInputs().size() != 2)
      return failure();
    for (int i = 0; i < 2; ++i) {
      Value viewed = viewedSolValue(skipFloatCasts(mul.getInputs()[i]));
      auto embedding = viewed ? viewed.getDefiningOp<EmbeddingOp>() : nullptr;
      std::optional<double> scale = splatValue(mul.getInputs()[1 - i]);
      if (!embedding || !scale)
        continue;
      auto type = dyn_cast<ShapedType>(mul.getInputs()[1 - i].getType());
      if (!type || type.getNumElements() != 1 || embedding.getScale() ||
          !embedding->hasOneUse())
        return nearMiss(rewriter, mul,
                        "not one scale of an embedding read only by it");
      rewriter.modifyOpInPlace(embedding, [&] {
        embedding.setScaleAttr(rewriter.getF32FloatAttr(float(*scale)));
      });
      replaceWithView(rewriter, mul, embedding);
      return success();
    }
    return failure();
  }
};

/// Gather(table [V, H], ids, axis 0) -> sol.embedding.
struct RaiseEmbedding : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp gather,
                                PatternRewriter &rewriter) const override {
    if (gather.getOpType() != "Gather" || !gather.getDomain().empty() ||
        gather.getInputs().size() != 2)
      return failure();
    if (intAttr(gather, "axis", 0) != 0)
      return nearMiss(rewriter, gather, "not along the rows");
    // The table, or the LM head's [H, V] weight transposed (tied
    // embeddings, as onnxruntime-genai writes them).
    Value tableInput = gather.getInputs()[0];
    OnnxOp transpose = producer(skipFloatCasts(tableInput), "Transpose");
    if (transpose && !isPermutation(transpose, {1, 0}) &&
        transpose.getOnnxAttr("perm"))
      transpose = {};
    std::optional<SmallVector<int64_t>> shape =
        transpose ? weightShape(transpose.getInputs()[0])
                  : weightShape(tableInput);
    if (!shape || shape->size() != 2)
      return failure();
    if (transpose)
      std::swap((*shape)[0], (*shape)[1]);
    Value ids = gather.getInputs()[1];
    if (!isIntegerTensor(ids))
      return nearMiss(rewriter, gather, "the ids are not integers");

    rewriter.setInsertionPoint(gather);
    Value table;
    if (transpose) {
      Value w = weightOf(rewriter, transpose.getInputs()[0]);
      table = rewriter.create<TransposeWeightOp>(
          gather.getLoc(),
          RankedTensorType::get(*shape, rewriter.getBF16Type()), w);
    } else {
      table = weightOf(rewriter, tableInput);
    }
    replaceWithEmbedding(rewriter, gather, ids, table);
    return success();
  }
};

/// com.microsoft GatherBlockQuantized(data, ids, scales[, zero_points]) of
/// a table of 4-bit codes in blocks along the hidden axis: the table of
/// onnxruntime-genai's int4 models with tied embeddings (the LM head's
/// MatMulNBits codes, reshaped). Sol's embedding reads a bf16 table, so the
/// codes are dequantized (sol.unpack_nbits).
struct RaiseGatherBlockQuantized : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp gather,
                                PatternRewriter &rewriter) const override {
    if (gather.getOpType() != "GatherBlockQuantized" ||
        gather.getDomain() != "com.microsoft")
      return failure();
    auto inputs = gather.getInputs();
    if (inputs.size() < 3)
      return nearMiss(rewriter, gather, "not (data, indices, scales)");
    const int64_t bits = intAttr(gather, "bits", 4);
    const int64_t block = intAttr(gather, "block_size", 128);
    if (intAttr(gather, "gather_axis", 0) != 0 ||
        intAttr(gather, "quantize_axis", 1) != 1)
      return nearMiss(rewriter, gather,
                      "not rows gathered, quantized along the hidden axis");
    if (!isIntegerTensor(inputs[1]))
      return nearMiss(rewriter, gather, "the ids are not integers");
    // data: the [V, blocks, bytes] codes, reshaped to [V, bytes per row].
    Value data = inputs[0];
    if (OnnxOp reshape = producer(data, "Reshape"))
      data = reshape.getInputs()[0];
    std::optional<SmallVector<int64_t>> packed = weightShape(data);
    std::optional<SmallVector<int64_t>> scales = weightShape(inputs[2]);
    if (!packed || packed->size() != 3 || !scales || scales->size() != 2 ||
        (*scales)[0] != (*packed)[0] || (*scales)[1] != (*packed)[1] ||
        (*packed)[2] != block * bits / 8)
      return nearMiss(rewriter, gather,
                      "data is not a [rows, blocks, block_size·bits/8] "
                      "initializer with a scale per block");
    const bool zeros = inputs.size() > 3 && !isa<NoneType>(inputs[3].getType());
    if (zeros && !weightShape(inputs[3]))
      return nearMiss(rewriter, gather, "zero points are not an initializer");
    const int64_t rows = (*packed)[0], hidden = (*packed)[1] * block;
    rewriter.setInsertionPoint(gather);
    Value table =
        rewriter
            .create<UnpackNBitsOp>(
                gather.getLoc(),
                TypeRange{RankedTensorType::get({rows, hidden},
                                                rewriter.getBF16Type())},
                storedWeight(rewriter, data), storedWeight(rewriter, inputs[2]),
                zeros ? storedWeight(rewriter, inputs[3]) : Value(),
                rewriter.getI64IntegerAttr(bits),
                rewriter.getI64IntegerAttr(block),
                /*columns=*/DenseI32ArrayAttr())
            .getResult(0);
    replaceWithEmbedding(rewriter, gather, inputs[1], table);
    return success();
  }
};

struct SolRaiseEmbeddingPass
    : sol::impl::SolRaiseEmbeddingBase<SolRaiseEmbeddingPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns
        .add<RaiseEmbedding, RaiseEmbeddingScale, RaiseGatherBlockQuantized>(
            &getContext());
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-embedding")))
      signalPassFailure();
  }
};

} // namespace

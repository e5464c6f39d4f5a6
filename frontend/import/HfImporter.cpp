//===- HfImporter.cpp - Hugging Face checkpoint -> sol dialect ------------===//
#include "frontend/import/HfImporter.h"

#include "frontend/hf/DerivedRope.h"
#include "ir/SolDialect.h"
#include "runtime/support/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;

namespace sol {

namespace {

Type elementType(OpBuilder &b, DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return b.getBF16Type();
  case DType::F16:
    return b.getF16Type();
  case DType::F32:
    return b.getF32Type();
  default:
    fail("unsupported weight dtype ", dtypeName(dtype),
         " (expected BF16, F16 or F32)");
  }
}

RopeAttr ropeAttr(MLIRContext *ctx, const hf::ModelConfig &config) {
  const hf::RopeScaling &s = config.ropeScaling;
  RopeScalingKind kind = RopeScalingKind::None;
  switch (s.type) {
  case hf::RopeScalingType::None:
    break;
  case hf::RopeScalingType::Linear:
    kind = RopeScalingKind::Linear;
    break;
  case hf::RopeScalingType::Llama3:
    kind = RopeScalingKind::Llama3;
    break;
  case hf::RopeScalingType::Yarn:
    kind = RopeScalingKind::Yarn;
    break;
  }
  int64_t original = s.originalMaxPositionEmbeddings.value_or(
      kind == RopeScalingKind::Yarn ? config.maxPositionEmbeddings : 0);
  return RopeAttr::get(
      ctx, APFloat(config.ropeTheta), kind, APFloat(s.factor),
      APFloat(s.lowFreqFactor), APFloat(s.highFreqFactor), original,
      APFloat(s.betaFast), APFloat(s.betaSlow),
      APFloat(kind == RopeScalingKind::Yarn
                  ? hf::DerivedRope::compute(config).attentionScaling
                  : 0.0));
}

/// Emits the ops of one model, in Hugging Face's order of computation.
class Builder {
public:
  Builder(MLIRContext &ctx, const HfModel &model)
      : ctx(ctx), model(model), config(model.config), b(&ctx) {}

  OwningOpRef<ModuleOp> build();

private:
  Value weight(const std::string &name);
  Value linear(Value x, const std::string &prefix, bool bias);
  Value rmsNorm(Value x, const std::string &weightName);
  RankedTensorType activation(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, actType);
  }
  Value decoderLayer(Value hidden, int64_t layer);

  MLIRContext &ctx;
  const HfModel &model;
  const hf::ModelConfig &config;
  OpBuilder b;
  Location loc = UnknownLoc::get(&ctx);
  Type actType;
  Value positions, tokenSeq;
  RopeAttr rope;
};

Value Builder::weight(const std::string &name) {
  const hf::TensorView &t = model.checkpoint.get(name);
  auto type = RankedTensorType::get(t.shape, elementType(b, t.dtype));
  return b.create<WeightOp>(loc, type, FlatSymbolRefAttr::get(&ctx, name),
                            ArrayAttr());
}

Value Builder::linear(Value x, const std::string &prefix, bool bias) {
  Value w = weight(prefix + ".weight");
  Value bv = bias ? weight(prefix + ".bias") : Value();
  int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
  return b.create<LinearOp>(
      NameLoc::get(b.getStringAttr(prefix)), activation(n), x, w, bv,
      LinearEpilogueAttr::get(&ctx, LinearEpilogue::None));
}

Value Builder::rmsNorm(Value x, const std::string &weightName) {
  Value w = weight(weightName);
  return b.create<RmsNormOp>(loc, x.getType(), x, w,
                             b.getF32FloatAttr(float(config.rmsNormEps)));
}

Value Builder::decoderLayer(Value hidden, int64_t layer) {
  const std::string p = "model.layers." + std::to_string(layer);
  const int64_t heads = config.numAttentionHeads,
                kvHeads = config.numKeyValueHeads, headDim = config.headDim;
  loc = NameLoc::get(b.getStringAttr(p));

  Value x = rmsNorm(hidden, p + ".input_layernorm.weight");
  Value q = linear(x, p + ".self_attn.q_proj", config.qkvBias);
  Value k = linear(x, p + ".self_attn.k_proj", config.qkvBias);
  Value v = linear(x, p + ".self_attn.v_proj", config.qkvBias);
  if (config.qkNorm) {
    q = rmsNorm(q, p + ".self_attn.q_norm.weight");
    k = rmsNorm(k, p + ".self_attn.k_norm.weight");
  }
  q = b.create<RopeOp>(loc, q.getType(), q, positions, rope,
                       b.getI64IntegerAttr(heads),
                       b.getI64IntegerAttr(headDim));
  k = b.create<RopeOp>(loc, k.getType(), k, positions, rope,
                       b.getI64IntegerAttr(kvHeads),
                       b.getI64IntegerAttr(headDim));
  IntegerAttr window;
  if (config.layerUsesSlidingWindow(layer))
    window = b.getI64IntegerAttr(*config.slidingWindow);
  Value attn = b.create<AttentionOp>(
      loc, q.getType(), q, k, v, positions, tokenSeq,
      b.getI64IntegerAttr(layer), b.getI64IntegerAttr(heads),
      b.getI64IntegerAttr(kvHeads), b.getI64IntegerAttr(headDim),
      b.getF32FloatAttr(float(1.0 / std::sqrt(double(headDim)))),
      b.getBoolAttr(true), window);
  Value o = linear(attn, p + ".self_attn.o_proj", config.oProjBias);
  hidden = b.create<AddOp>(loc, hidden, o);

  x = rmsNorm(hidden, p + ".post_attention_layernorm.weight");
  Value gate = linear(x, p + ".mlp.gate_proj", config.mlpBias);
  Value up = linear(x, p + ".mlp.up_proj", config.mlpBias);
  Value act = b.create<SwigluOp>(loc, gate.getType(), gate, up);
  Value down = linear(act, p + ".mlp.down_proj", config.mlpBias);
  return b.create<AddOp>(loc, hidden, down);
}

OwningOpRef<ModuleOp> Builder::build() {
  ctx.loadDialect<SolDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  ModuleOp m = *module;
  m->setAttr("sol.architecture",
             b.getStringAttr(hf::architectureName(config.architecture)));
  m->setAttr("sol.source", b.getStringAttr(model.directory.string()));
  m->setAttr("sol.num_layers", b.getI64IntegerAttr(config.numHiddenLayers));
  m->setAttr("sol.max_position_embeddings",
             b.getI64IntegerAttr(config.maxPositionEmbeddings));
  b.setInsertionPointToEnd(m.getBody());

  const hf::TensorView &embed =
      model.checkpoint.get("model.embed_tokens.weight");
  actType = elementType(b, embed.dtype);
  rope = ropeAttr(&ctx, config);
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  auto logitsType = RankedTensorType::get(
      {ShapedType::kDynamic, config.vocabSize}, b.getF32Type());
  auto fnType = b.getFunctionType({ids, ids, ids, ids}, {logitsType});
  auto fn = b.create<func::FuncOp>(loc, "forward", fnType);
  static const char *const argNames[] = {"tokens", "positions", "token_seq",
                                         "logit_rows"};
  for (unsigned i = 0; i < 4; ++i)
    fn.setArgAttr(i, "sol.name", b.getStringAttr(argNames[i]));
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value tokens = fn.getArgument(0);
  positions = fn.getArgument(1);
  tokenSeq = fn.getArgument(2);
  Value logitRows = fn.getArgument(3);

  loc = NameLoc::get(b.getStringAttr("model.embed_tokens"));
  Value table = weight("model.embed_tokens.weight");
  Value hidden =
      b.create<EmbeddingOp>(loc, activation(config.hiddenSize), tokens, table);
  for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer)
    hidden = decoderLayer(hidden, layer);

  loc = NameLoc::get(b.getStringAttr("lm_head"));
  Value norm = weight("model.norm.weight");
  Value head = config.tieWordEmbeddings ? table : weight("lm_head.weight");
  Value logits =
      b.create<LogitsOp>(loc, logitsType, hidden, norm, head, logitRows,
                         b.getF32FloatAttr(float(config.rmsNormEps)));
  b.create<func::ReturnOp>(loc, logits);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importHfModel(MLIRContext &context,
                                    const HfModel &model) {
  return Builder(context, model).build();
}

} // namespace sol

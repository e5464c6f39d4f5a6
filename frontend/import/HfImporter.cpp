//===- HfImporter.cpp - Hugging Face checkpoint -> sol dialect ------------===//
#include "frontend/import/HfImporter.h"

#include "frontend/hf/DerivedRope.h"
#include "ir/SolDialect.h"
#include "runtime/support/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <fstream>
#include <iterator>

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
  const RopeParameters p = hf::ropeParameters(config);
  RopeScalingKind kind = RopeScalingKind::None;
  switch (p.scaling) {
  case RopeScaling::None:
    break;
  case RopeScaling::Linear:
    kind = RopeScalingKind::Linear;
    break;
  case RopeScaling::Llama3:
    kind = RopeScalingKind::Llama3;
    break;
  case RopeScaling::Yarn:
    kind = RopeScalingKind::Yarn;
    break;
  }
  return RopeAttr::get(
      ctx, APFloat(p.theta), kind, APFloat(p.factor), APFloat(p.lowFreqFactor),
      APFloat(p.highFreqFactor), p.originalMaxPosition, APFloat(p.betaFast),
      APFloat(p.betaSlow),
      APFloat(kind == RopeScalingKind::Yarn ? p.attentionFactor : 0.0));
}

std::string readText(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    fail("cannot read ", p.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

/// The plan's generation defaults: config.json's token ids, overridden by
/// generation_config.json where it sets them.
GenerationDefaults generationDefaults(const HfModel &model) {
  GenerationDefaults gen;
  gen.eosTokenIds = model.config.eosTokenIds;
  gen.bosTokenId = model.config.bosTokenId;
  if (const auto &g = model.generation) {
    if (!g->eosTokenIds.empty())
      gen.eosTokenIds = g->eosTokenIds;
    if (g->bosTokenId)
      gen.bosTokenId = g->bosTokenId;
    gen.padTokenId = g->padTokenId;
    gen.doSample = g->doSample.value_or(false);
    gen.temperature = static_cast<float>(g->temperature.value_or(1.0));
    gen.topK = static_cast<int32_t>(g->topK.value_or(0));
    gen.topP = static_cast<float>(g->topP.value_or(1.0));
    gen.repetitionPenalty =
        static_cast<float>(g->repetitionPenalty.value_or(1.0));
    gen.maxNewTokens = g->maxNewTokens.value_or(-1);
  }
  return gen;
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

/// A checkpoint tensor as a weight of the activation type: f16 and f32
/// tensors are converted (sol.convert_weight), bf16 ones read as they are.
Value Builder::weight(const std::string &name) {
  const hf::TensorView &t = model.checkpoint.get(name);
  auto type = RankedTensorType::get(t.shape, elementType(b, t.dtype));
  Value w = b.create<WeightOp>(loc, type, FlatSymbolRefAttr::get(&ctx, name));
  if (type.getElementType() == actType)
    return w;
  return b.create<ConvertWeightOp>(loc, RankedTensorType::get(t.shape, actType),
                                   w);
}

Value Builder::linear(Value x, const std::string &prefix, bool bias) {
  Value w = weight(prefix + ".weight");
  Value bv = bias ? weight(prefix + ".bias") : Value();
  int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
  return b.create<LinearOp>(NameLoc::get(b.getStringAttr(prefix)),
                            activation(n), x, w, bv);
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
  m->setAttr(ModelAttr::kAttrName,
             ModelAttr::get(&ctx, hf::architectureName(config.architecture),
                            config.vocabSize, config.hiddenSize,
                            config.numHiddenLayers,
                            config.maxPositionEmbeddings));
  b.setInsertionPointToEnd(m.getBody());

  // Sol computes in bf16 whatever the checkpoint stores.
  actType = b.getBF16Type();
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

ImportedModel importHfModel(MLIRContext &context,
                            std::shared_ptr<const HfModel> model) {
  ImportedModel imported;
  imported.module = Builder(context, *model).build();
  for (const hf::SafetensorsFile &file : model->checkpoint.files())
    for (const hf::TensorView &t : file.tensors())
      imported.weights.addView(t.name, t.dtype, t.shape, t.bytes);
  ModelAssets &a = imported.assets;
  a.source = model->directory.string();
  a.sourceConfig = readText(model->directory / "config.json");
  if (model->tokenizerJson)
    a.tokenizerJson = readText(*model->tokenizerJson);
  if (model->tokenizerConfigJson)
    a.tokenizerConfigJson = readText(*model->tokenizerConfigJson);
  a.generation = generationDefaults(*model);
  imported.weights.retain(std::move(model));
  return imported;
}

ImportedModel importModel(MLIRContext &context,
                          const std::filesystem::path &source) {
  if (std::filesystem::is_regular_file(source) && source.extension() == ".onnx")
    fail(source.string(), ": ONNX import is not supported yet; give a "
                          "Hugging Face checkpoint directory (config.json "
                          "and *.safetensors)");
  return importHfModel(context,
                       std::make_shared<const HfModel>(HfModel::open(source)));
}

} // namespace sol

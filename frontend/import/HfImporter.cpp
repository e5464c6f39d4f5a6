//===- HfImporter.cpp - Hugging Face checkpoint -> sol dialect ------------===//
#include "frontend/import/HfImporter.h"

#include "frontend/import/SideFiles.h"
#include "runtime/chat/TokenizerConfigFile.h"

#include "frontend/hf/DerivedRope.h"
#include "ir/QuantizedOutputs.h"
#include "ir/SolDialect.h"
#include "runtime/support/Error.h"
#include "runtime/support/QuantizedCheckpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <array>
#include <cmath>
#include <cstring>
#include <optional>

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

} // namespace

RopeAttr ropeAttrOf(MLIRContext *ctx, const hf::ModelConfig &config,
                    int64_t layer) {
  return ropeAttr(ctx, hf::ropeParameters(config, layer));
}

namespace {

/// The elements of a checkpoint tensor (which may sit at any byte offset).
template <typename T>
std::vector<T> readArray(std::span<const std::byte> bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

template <typename T>
std::vector<T> readArray(const WeightStore &store, const std::string &name) {
  std::vector<std::byte> scratch;
  return readArray<T>(store.contiguous(name, scratch));
}

/// One AutoAWQ or GPTQ linear ([k inputs, n outputs], groups of g) unpacked
/// into Sol's int4 layout (codes, scales, zeros).
quant::QuantizedWeight unpackInt4(const WeightStore &store,
                                  const hf::QuantizationConfig &config,
                                  const std::string &module, int64_t k,
                                  int64_t n, int64_t g) {
  try {
    auto qweight = readArray<int32_t>(store, module + ".qweight");
    auto qzeros = readArray<int32_t>(store, module + ".qzeros");
    auto scales = readArray<uint16_t>(store, module + ".scales");
    if (config.method == hf::QuantMethod::Awq)
      return quant::unpackAutoAwq(qweight, qzeros, scales, k, n, g);
    // With act-order, the codes' columns come sorted by group, as the
    // importer's sol.gather_columns orders the inputs.
    std::vector<int32_t> gIdx;
    if (store.contains(module + ".g_idx"))
      gIdx = readArray<int32_t>(store, module + ".g_idx");
    return quant::unpackGptq(qweight, qzeros, scales, gIdx, k, n, g,
                             config.gptqV2 ? quant::GptqZeros::Stored
                                           : quant::GptqZeros::StoredMinusOne)
        .weight;
  } catch (const Error &e) {
    fail(module, ": ", e.what());
  }
}

/// A linear's weight operands: codes (or the float weight), and for a
/// quantized one its scales, zero points (int4), scheme and group size.
struct LinearWeight {
  Value weight, scales, zeros, bias;

  /// The same linear with `f` applied to each of its tensors that is set
  /// (the rows of codes, scales, zero points and bias go together).
  template <typename F> LinearWeight map(F &&f) const {
    LinearWeight out = *this;
    for (Value *v : {&out.weight, &out.scales, &out.zeros, &out.bias})
      if (*v)
        *v = f(*v);
    return out;
  }
  QuantScheme scheme = QuantScheme::None;
  int64_t groupSize = 0;
  /// A GPTQ act-order linear: its codes' columns are these inputs, in this
  /// order (sol.gather_columns feeds it so); empty otherwise.
  std::vector<int32_t> inputColumns;
};

/// A linear weight's format in words, for messages.
std::string schemeName(const LinearWeight &w) {
  if (w.scheme == QuantScheme::None)
    return "float";
  std::string name = stringifyQuantScheme(w.scheme).str();
  if (w.groupSize)
    name += cat(" in groups of ", w.groupSize);
  return name;
}

/// Emits the ops of one model, in Hugging Face's order of computation.
class Builder {
public:
  Builder(MLIRContext &ctx, const HfModel &model, WeightStore &store)
      : ctx(ctx), model(model), config(model.config), store(store), b(&ctx) {}

  OwningOpRef<ModuleOp> build();

private:
  Value weight(const std::string &name);
  /// A tensor of the store (already there, or produced) as a sol.weight.
  Value storeWeight(const std::string &name, ArrayRef<int64_t> shape,
                    Type element);
  LinearWeight int4Weight(const std::string &module);
  LinearWeight fp8Weight(const std::string &module);
  std::vector<float> fp8Scales(const hf::TensorView &scale);
  Value producedF32(const std::string &name, ArrayRef<int64_t> shape,
                    std::vector<float> values);
  Value fp8BlocksWeight(const hf::TensorView &codes);
  Value fp8BlocksWeight(const hf::TensorView &codes,
                        const hf::TensorView &scale);
  /// A linear's weight (and bias) as the checkpoint stores it.
  LinearWeight linearWeight(const std::string &prefix, bool bias);
  /// Rows [offset, offset + rows) of a fused projection's weight.
  LinearWeight sliceRows(const LinearWeight &w, int64_t offset, int64_t rows);
  /// A query or key projection's heads with the rotated dims of a partial
  /// rotary embedding moved to rotate-half distance (sol.permute_head_dims).
  LinearWeight permuteForRope(const LinearWeight &w);
  /// `v` (rows of heads) with a partial rotary's dims reordered
  /// (sol.permute_head_dims); `v` itself when every dim rotates.
  Value permuteHeadDims(Value v);
  Value linear(Value x, const LinearWeight &w, const std::string &name);
  Value linear(Value x, const std::string &prefix, bool bias) {
    return linear(x, linearWeight(prefix, bias), prefix);
  }
  Value rmsNormWeight(const std::string &name);
  Value rmsNorm(Value x, const std::string &weightName);
  /// The dense MLPs' activation (hidden_act).
  GateActivation denseAct() const {
    return config.hiddenAct == "gelu_pytorch_tanh" ? GateActivation::GeluTanh
                                                   : GateActivation::Silu;
  }
  RankedTensorType activation(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, actType);
  }
  Value decoderLayer(Value hidden, int64_t layer);
  /// act(gate(x)) * up(x) through down: a dense gated MLP's linears.
  Value gatedMlp(Value x, const std::string &prefix, bool bias);
  Value mixtureOfExperts(Value x, const std::string &layerPrefix);
  /// gpt-oss's experts: gate, up and down stacked as sol.moe takes them,
  /// from the [E, H, 2I] / [E, I, H] tensors, or their MXFP4 codes and
  /// (in `scales`) their exponents.
  std::array<Value, 3> stackedExperts(const std::string &prefix,
                                      SmallVectorImpl<Value> &scales);
  Value reshapeWeight(Value w, ArrayRef<int64_t> shape);
  Value everyOtherRow(Value w, int64_t first);
  /// `parts` stacked along their first dimension (sol.concat_weights).
  Value concatRows(ArrayRef<Value> parts);
  LinearWeight stackedExpertLinears(const std::string &layerPrefix,
                                    hf::ModelConfig::ExpertProjection which);
  /// Refuses quantized experts that sol.moe cannot take as they are: one
  /// scheme for gate, up and down, and for int4 one group size that divides
  /// the hidden size and the experts' width.
  void checkQuantizedExperts(const std::string &layerPrefix,
                             const std::array<LinearWeight, 3> &projections);

  MLIRContext &ctx;
  const HfModel &model;
  const hf::ModelConfig &config;
  WeightStore &store;
  OpBuilder b;
  Location loc = UnknownLoc::get(&ctx);
  Type actType;
  Value positions, tokenSeq;
};

/// A checkpoint tensor as a weight of the activation type: f16 and f32
/// tensors are converted (sol.convert_weight), bf16 ones read as they are.
Value Builder::weight(const std::string &name) {
  const hf::TensorView &t = model.checkpoint.get(name);
  if (t.dtype == DType::F8E4M3)
    return fp8BlocksWeight(t);
  auto type = RankedTensorType::get(t.shape, elementType(b, t.dtype));
  Value w = b.create<WeightOp>(loc, type, FlatSymbolRefAttr::get(&ctx, name));
  if (type.getElementType() == actType)
    return w;
  return b.create<ConvertWeightOp>(loc, RankedTensorType::get(t.shape, actType),
                                   w);
}

/// An fp8 weight's scales (f32, f16 or bf16, as hf::checkWeights allows),
/// each positive and finite.
std::vector<float> Builder::fp8Scales(const hf::TensorView &scale) {
  std::vector<float> scales = store.readFloat(scale.name);
  for (float s : scales)
    if (!std::isfinite(s) || s <= 0)
      fail("checkpoint '", model.directory.string(), "': tensor '", scale.name,
           "' holds the scale ", s, "; fp8 scales must be positive and finite");
  return scales;
}

/// `values` as a tensor of the store made by the importer, and its
/// sol.weight.
Value Builder::producedF32(const std::string &name, ArrayRef<int64_t> shape,
                           std::vector<float> values) {
  store.addProduced(name, DType::F32,
                    std::vector<int64_t>(shape.begin(), shape.end()),
                    [values = std::move(values)](const WeightStore &,
                                                 const ByteSink &sink, int) {
                      sink(std::as_bytes(std::span(values)));
                    });
  return storeWeight(name, shape, b.getF32Type());
}

/// A fine-grained fp8 weight (Qwen3-FP8) met where a float one is read: its
/// e4m3 codes and the `<name>_scale_inv` of their blocks.
Value Builder::fp8BlocksWeight(const hf::TensorView &codes) {
  const auto &q = config.quantization;
  const std::string where =
      cat("checkpoint '", model.directory.string(), "': tensor '", codes.name,
          "' is float8_e4m3fn");
  if (!q || q->method != hf::QuantMethod::Fp8Blocks)
    fail(where, ", but config.json's quantization_config does not say how it "
                "is scaled (fp8 weights import with quant_method \"fp8\" and "
                "weight_block_size, or compressed-tensors)");
  const hf::TensorView *scale =
      model.checkpoint.find(codes.name + "_scale_inv");
  if (!scale)
    fail(where, " without its scales '", codes.name, "_scale_inv'");
  return fp8BlocksWeight(codes, *scale);
}

/// Block-scaled fp8 codes times the scale of their block (Transformers'
/// weight_scale_inv, compressed-tensors' weight_scale), in bf16
/// (sol.dequantize_fp8_blocks). Sol's fp8 linears scale per row, not per
/// block, so the weight imports as float; solc --quant quantizes it again.
Value Builder::fp8BlocksWeight(const hf::TensorView &codes,
                               const hf::TensorView &scale) {
  const hf::QuantizationConfig &q = *config.quantization;
  std::vector<float> scales = fp8Scales(scale);
  Value w = b.create<DequantizeFp8BlocksOp>(
      loc, RankedTensorType::get(codes.shape, b.getBF16Type()),
      storeWeight(codes.name, codes.shape, b.getFloat8E4M3FNType()),
      producedF32(codes.name + "~fp8.block_scales", scale.shape,
                  std::move(scales)),
      b.getI64IntegerAttr(q.blockRows), b.getI64IntegerAttr(q.blockCols));
  if (actType.isBF16())
    return w;
  return b.create<ConvertWeightOp>(
      loc, RankedTensorType::get(codes.shape, actType), w);
}

Value Builder::storeWeight(const std::string &name, ArrayRef<int64_t> shape,
                           Type element) {
  return b.create<WeightOp>(loc, RankedTensorType::get(shape, element),
                            FlatSymbolRefAttr::get(&ctx, name));
}

/// An AutoAWQ or GPTQ linear as Sol's int4: the three tensors sol-quantize
/// would make (`<module>.weight~int4`, `~int4.scales`, `~int4.zeros`), which
/// the checkpoint's are unpacked into when the plan writer reads them.
LinearWeight Builder::int4Weight(const std::string &module) {
  const hf::QuantizationConfig &q = *config.quantization;
  const hf::TensorView &packed = model.checkpoint.get(module + ".qweight");
  const hf::TensorView &scales = model.checkpoint.get(module + ".scales");
  // Shapes checked against the config by hf::checkWeights.
  const int64_t n = scales.shape[1];
  const int64_t k =
      q.method == hf::QuantMethod::Awq ? packed.shape[0] : packed.shape[0] * 8;
  const int64_t g = q.groupSizeFor(k);

  std::vector<int32_t> inputColumns;
  if (q.method == hf::QuantMethod::Gptq) {
    // Act-order (desc_act): groups of inputs in g_idx's order, not k / g.
    if (const hf::TensorView *gIdx = model.checkpoint.find(module + ".g_idx")) {
      try {
        inputColumns =
            quant::gptqInputPermutation(readArray<int32_t>(gIdx->bytes), k, g);
      } catch (const Error &e) {
        fail("checkpoint '", model.directory.string(), "': tensor '",
             gIdx->name, "': ", e.what());
      }
    }
    // The classic format stores zero - 1: a stored 15 would be a zero of
    // 16, outside int4 (a sym=false checkpoint whose zero 0 wrapped).
    if (!q.gptqV2)
      for (int32_t word :
           readArray<int32_t>(model.checkpoint.get(module + ".qzeros").bytes))
        for (int i = 0; i < 8; ++i)
          if (((static_cast<uint32_t>(word) >> (4 * i)) & 0xF) == 0xF)
            fail("checkpoint '", model.directory.string(), "': tensor '",
                 module,
                 ".qzeros' stores a zero point of 15, which the classic gptq "
                 "format reads as 16, outside int4's 0..15 (an asymmetric "
                 "checkpoint whose zero point 0 wrapped); re-export it in the "
                 "gptq_v2 format (checkpoint_format \"gptq_v2\")");
  }

  // Unpacked when the plan writer first reads one of the three tensors,
  // dropped after the last.
  const std::string base = module + ".weight~int4";
  const std::vector<int64_t> codeShape = {n, k}, groupShape = {n, k / g};
  QuantizedOutputs::addTo(store, base, DType::I4, codeShape, groupShape,
                          /*withZeros=*/true,
                          [q, module, k, n, g](const WeightStore &s, int) {
                            return unpackInt4(s, q, module, k, n, g);
                          });
  LinearWeight w;
  w.weight = storeWeight(base, codeShape, b.getIntegerType(4));
  w.scales = storeWeight(base + ".scales", groupShape, b.getF32Type());
  w.zeros = storeWeight(base + ".zeros", groupShape,
                        b.getIntegerType(8, /*isSigned=*/false));
  w.scheme = QuantScheme::Int4;
  w.groupSize = g;
  w.inputColumns = std::move(inputColumns);
  return w;
}

/// A compressed-tensors fp8 linear: the E4M3 weight as stored, and its
/// scales as Sol's f32 per row (`<module>.weight~fp8.scales`, a per-tensor
/// scale repeated for every row).
LinearWeight Builder::fp8Weight(const std::string &module) {
  const hf::TensorView &codes = model.checkpoint.get(module + ".weight");
  const hf::TensorView &scale = model.checkpoint.get(module + ".weight_scale");
  if (config.quantization->fp8Strategy == hf::Fp8Strategy::Block) {
    LinearWeight w;
    w.weight = fp8BlocksWeight(codes, scale);
    return w;
  }
  const int64_t n = codes.shape[0];
  std::vector<float> scales = fp8Scales(scale);
  if (scales.size() == 1)
    scales.assign(n, scales[0]);
  LinearWeight w;
  w.weight = storeWeight(codes.name, codes.shape, b.getFloat8E4M3FNType());
  w.scales = producedF32(module + ".weight~fp8.scales", {n}, std::move(scales));
  w.scheme = QuantScheme::Fp8;
  return w;
}

/// A linear as the checkpoint stores it: float weights, or quantized ones
/// already in the form sol-quantize gives them.
LinearWeight Builder::linearWeight(const std::string &prefix, bool bias) {
  const auto &q = config.quantization;
  LinearWeight w;
  if (!q || !q->quantizes(prefix))
    w.weight = weight(prefix + ".weight");
  else if (q->method == hf::QuantMethod::CompressedTensorsFp8)
    w = fp8Weight(prefix);
  else
    w = int4Weight(prefix);
  if (bias)
    w.bias = weight(prefix + ".bias");
  return w;
}

LinearWeight Builder::sliceRows(const LinearWeight &w, int64_t offset,
                                int64_t rows) {
  return w.map([&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = rows;
    return b.create<SliceRowsOp>(
        loc, RankedTensorType::get(shape, type.getElementType()), v,
        b.getI64IntegerAttr(offset), b.getI64IntegerAttr(1));
  });
}

Value Builder::permuteHeadDims(Value v) {
  if (config.rotaryDim == config.headDim)
    return v;
  return b.create<PermuteHeadDimsOp>(loc, v.getType(), v,
                                     b.getI64IntegerAttr(config.headDim),
                                     b.getI64IntegerAttr(config.rotaryDim));
}

LinearWeight Builder::permuteForRope(const LinearWeight &w) {
  return w.map([&](Value v) { return permuteHeadDims(v); });
}

Value Builder::linear(Value x, const LinearWeight &w, const std::string &name) {
  int64_t n = cast<RankedTensorType>(w.weight.getType()).getDimSize(0);
  if (!w.inputColumns.empty())
    x = b.create<GatherColumnsOp>(NameLoc::get(b.getStringAttr(name)),
                                  x.getType(), x,
                                  b.getDenseI32ArrayAttr(w.inputColumns));
  return b.create<LinearOp>(
      NameLoc::get(b.getStringAttr(name)), activation(n), x, w.weight, w.bias,
      /*residual=*/Value(), w.scales, w.zeros,
      LinearEpilogueAttr::get(&ctx, LinearEpilogue::None),
      QuantSchemeAttr::get(&ctx, w.scheme), b.getI64IntegerAttr(w.groupSize));
}

/// Gemma's norms multiply by 1 + w in float32: an f32 weight holding it.
Value Builder::rmsNormWeight(const std::string &name) {
  Value w = weight(name);
  if (!config.normPlusOne)
    return w;
  return b.create<OffsetWeightOp>(
      loc,
      RankedTensorType::get(cast<RankedTensorType>(w.getType()).getShape(),
                            b.getF32Type()),
      w, b.getF32FloatAttr(1.0f));
}

Value Builder::rmsNorm(Value x, const std::string &weightName) {
  return b.create<RmsNormOp>(loc, x.getType(), x, rmsNormWeight(weightName),
                             b.getF32FloatAttr(float(config.rmsNormEps)));
}

Value Builder::decoderLayer(Value hidden, int64_t layer) {
  const std::string p = cat(config.weightPrefix, "layers.", layer);
  const int64_t heads = config.numAttentionHeads,
                kvHeads = config.numKeyValueHeads, headDim = config.headDim;
  loc = NameLoc::get(b.getStringAttr(p));

  Value x = rmsNorm(hidden, p + ".input_layernorm.weight");
  Value q, k, v;
  if (config.fusedProjections) {
    // Phi-3's qkv_proj: the rows of q, then k, then v.
    const std::string name = p + ".self_attn.qkv_proj";
    LinearWeight qkv = linearWeight(name, config.qkvBias);
    q = linear(x, permuteForRope(sliceRows(qkv, 0, heads * headDim)), name);
    k = linear(
        x, permuteForRope(sliceRows(qkv, heads * headDim, kvHeads * headDim)),
        name);
    v = linear(x,
               sliceRows(qkv, (heads + kvHeads) * headDim, kvHeads * headDim),
               name);
  } else {
    // Each projection's weights right before it, as the checkpoint lists
    // them.
    auto projection = [&](const char *which, bool rotated) {
      const std::string name = p + ".self_attn." + which;
      LinearWeight w = linearWeight(name, config.qkvBias);
      return linear(x, rotated ? permuteForRope(w) : w, name);
    };
    q = projection("q_proj", true);
    k = projection("k_proj", true);
    v = projection("v_proj", false);
  }
  if (config.qkNorm) {
    // A per-head norm commutes with the head-dim permutation of a partial
    // rotary embedding when its weight is permuted alike.
    auto headNorm = [&](Value x, const std::string &name) {
      Value w = permuteHeadDims(rmsNormWeight(name));
      return b.create<RmsNormOp>(loc, x.getType(), x, w,
                                 b.getF32FloatAttr(float(config.rmsNormEps)));
    };
    q = headNorm(q, p + ".self_attn.q_norm.weight");
    k = headNorm(k, p + ".self_attn.k_norm.weight");
  }
  RopeAttr rope = ropeAttrOf(&ctx, config, layer);
  q = b.create<RopeOp>(loc, q.getType(), q, positions, rope,
                       b.getI64IntegerAttr(heads),
                       b.getI64IntegerAttr(headDim));
  k = b.create<RopeOp>(loc, k.getType(), k, positions, rope,
                       b.getI64IntegerAttr(kvHeads),
                       b.getI64IntegerAttr(headDim));
  IntegerAttr window;
  if (config.layerUsesSlidingWindow(layer))
    window = b.getI64IntegerAttr(*config.slidingWindow);
  FloatAttr softcap;
  if (config.attnLogitSoftcap)
    softcap = b.getF32FloatAttr(float(*config.attnLogitSoftcap));
  Value sinks;
  if (config.attentionSinks)
    sinks = weight(p + ".self_attn.sinks");
  Value attn = b.create<AttentionOp>(
      loc, q.getType(), q, k, v, positions, tokenSeq, sinks,
      b.getI64IntegerAttr(layer), b.getI64IntegerAttr(heads),
      b.getI64IntegerAttr(kvHeads), b.getI64IntegerAttr(headDim),
      b.getF32FloatAttr(float(config.attentionScale)), b.getBoolAttr(true),
      window, softcap);
  Value o = linear(attn, p + ".self_attn.o_proj", config.oProjBias);
  if (config.sandwichNorms)
    o = rmsNorm(o, p + ".post_attention_layernorm.weight");
  hidden = b.create<AddOp>(loc, hidden, o);

  x = rmsNorm(hidden,
              p + (config.sandwichNorms ? ".pre_feedforward_layernorm.weight"
                                        : ".post_attention_layernorm.weight"));
  if (config.layerIsSparse(layer))
    return b.create<AddOp>(loc, hidden, mixtureOfExperts(x, p));
  Value down;
  if (config.fusedProjections) {
    // Phi-3's gate_up_proj: the gate's rows, then up's.
    const int64_t inter = config.intermediateSize;
    LinearWeight gu = linearWeight(p + ".mlp.gate_up_proj", config.mlpBias);
    Value gate = linear(x, sliceRows(gu, 0, inter), p + ".mlp.gate_up_proj");
    Value up = linear(x, sliceRows(gu, inter, inter), p + ".mlp.gate_up_proj");
    Value h = b.create<SwigluOp>(loc, gate.getType(), gate, up,
                                 GateActivationAttr::get(&ctx, denseAct()));
    down = linear(h, p + ".mlp.down_proj", config.mlpBias);
  } else {
    down = gatedMlp(x, p + ".mlp", config.mlpBias);
  }
  if (config.sandwichNorms)
    down = rmsNorm(down, p + ".post_feedforward_layernorm.weight");
  return b.create<AddOp>(loc, hidden, down);
}

Value Builder::gatedMlp(Value x, const std::string &p, bool bias) {
  Value gate = linear(x, p + ".gate_proj", bias);
  Value up = linear(x, p + ".up_proj", bias);
  Value h = b.create<SwigluOp>(loc, gate.getType(), gate, up,
                               GateActivationAttr::get(&ctx, denseAct()));
  return linear(h, p + ".down_proj", bias);
}

Value Builder::reshapeWeight(Value w, ArrayRef<int64_t> shape) {
  return b.create<ReshapeWeightOp>(
      loc,
      RankedTensorType::get(
          shape, cast<RankedTensorType>(w.getType()).getElementType()),
      w);
}

/// Rows first, first + 2, ... of `w`: gpt-oss's gate (first = 0) or up
/// (first = 1) rows, which its checkpoints interleave.
Value Builder::everyOtherRow(Value w, int64_t first) {
  auto type = cast<RankedTensorType>(w.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] /= 2;
  return b.create<SliceRowsOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), w,
      b.getI64IntegerAttr(first), b.getI64IntegerAttr(2));
}

std::array<Value, 3> Builder::stackedExperts(const std::string &p,
                                             SmallVectorImpl<Value> &scales) {
  const int64_t experts = config.numExperts, hidden = config.hiddenSize,
                width = config.expertIntermediateSize;
  const std::string x = p + ".mlp.experts";
  if (config.quantization && config.quantization->quantizes(x)) {
    // MXFP4, kept packed: each row's codes ([rows, K/2] bytes) and its
    // groups' exponents ([rows, K/32]); the rows are already outputs.
    Type u8 = b.getIntegerType(8, /*isSigned=*/false);
    auto packed = [&](const std::string &name, const char *suffix, int64_t rows,
                      int64_t cols) {
      const hf::TensorView &t = model.checkpoint.get(name + suffix);
      return reshapeWeight(storeWeight(t.name, t.shape, u8), {rows, cols});
    };
    const std::string gu = x + ".gate_up_proj", d = x + ".down_proj";
    Value codes = packed(gu, "_blocks", experts * 2 * width, hidden / 2);
    Value exps = packed(gu, "_scales", experts * 2 * width, hidden / 32);
    scales.assign({everyOtherRow(exps, 0), everyOtherRow(exps, 1),
                   packed(d, "_scales", experts * hidden, width / 32)});
    return {everyOtherRow(codes, 0), everyOtherRow(codes, 1),
            packed(d, "_blocks", experts * hidden, width / 2)};
  }
  // Stored inputs first: each expert's matrix transposed.
  auto weightType = [&](int64_t rows, int64_t cols) {
    return RankedTensorType::get({rows, cols}, actType);
  };
  Value gateUp =
      b.create<TransposeWeightOp>(loc, weightType(experts * 2 * width, hidden),
                                  weight(x + ".gate_up_proj"));
  Value down = b.create<TransposeWeightOp>(
      loc, weightType(experts * hidden, width), weight(x + ".down_proj"));
  return {everyOtherRow(gateUp, 0), everyOtherRow(gateUp, 1), down};
}

Value Builder::concatRows(ArrayRef<Value> parts) {
  auto part = cast<RankedTensorType>(parts.front().getType());
  SmallVector<int64_t> shape(part.getShape());
  shape[0] *= static_cast<int64_t>(parts.size());
  return b.create<ConcatWeightsOp>(
      loc, RankedTensorType::get(shape, part.getElementType()), parts);
}

/// One projection of every expert of layer prefix `p`, stacked: float
/// weights, or the codes, scales and zero points of quantized ones, which
/// must then share one format.
LinearWeight
Builder::stackedExpertLinears(const std::string &p,
                              hf::ModelConfig::ExpertProjection which) {
  SmallVector<LinearWeight> parts;
  for (int64_t e = 0; e < config.numExperts; ++e) {
    const std::string module = p + "." + config.moeExpert(e, which);
    parts.push_back(linearWeight(module, /*bias=*/false));
    const LinearWeight &w = parts.back(), &first = parts.front();
    if (w.scheme != first.scheme || w.groupSize != first.groupSize)
      fail("checkpoint '", model.directory.string(), "': ", module, " is ",
           schemeName(w), " but ", p, ".", config.moeExpert(0, which), " is ",
           schemeName(first),
           "; Sol stacks a layer's experts in one format "
           "(a quantization_config that leaves some experts unquantized is "
           "not supported)");
    if (!w.inputColumns.empty())
      fail("checkpoint '", model.directory.string(), "': ", module,
           " is a GPTQ act-order (desc_act) linear: each expert would read "
           "its inputs in its own order, which Sol's mixture kernels do not "
           "do; quantize the experts without desc_act");
  }
  LinearWeight out;
  out.scheme = parts.front().scheme;
  out.groupSize = parts.front().groupSize;
  for (Value LinearWeight::*field :
       {&LinearWeight::weight, &LinearWeight::scales, &LinearWeight::zeros}) {
    if (!(parts.front().*field))
      continue;
    SmallVector<Value> values;
    for (const LinearWeight &w : parts)
      values.push_back(w.*field);
    out.*field = concatRows(values);
  }
  return out;
}

void Builder::checkQuantizedExperts(const std::string &p,
                                    const std::array<LinearWeight, 3> &w) {
  static const char *const names[] = {"gate", "up", "down"};
  for (int i = 1; i < 3; ++i)
    if (w[i].scheme != w[0].scheme)
      fail("checkpoint '", model.directory.string(), "': the experts' ",
           names[i], " projections of ", p, " are ", schemeName(w[i]),
           " but their gate projections are ", schemeName(w[0]),
           "; Sol's mixture takes one format for all three");
  if (w[0].scheme != QuantScheme::Int4)
    return;
  const int64_t hidden = config.hiddenSize,
                width = config.expertIntermediateSize;
  const int64_t g = w[0].groupSize;
  if (w[1].groupSize != g || w[2].groupSize != g || g % 2 != 0 ||
      hidden % g != 0 || width % g != 0)
    fail("checkpoint '", model.directory.string(), "': the experts of ", p,
         " are int4 in groups of ", g, " (gate, up) and ", w[2].groupSize,
         " (down) inputs; Sol's mixture takes one even group size that "
         "divides both the hidden size (",
         hidden, ") and the experts' width (", width,
         "), which GPTQ's group_size -1 (a group per row) gives only when the "
         "two are equal; quantize the experts in groups of 128 or another "
         "common divisor");
}

/// A mixture-of-experts MLP: each projection's weights of all experts
/// stacked into one (sol.concat_weights), routed by sol.moe; Qwen2-MoE's
/// shared expert beside it, scaled by its sigmoid gate.
Value Builder::mixtureOfExperts(Value x, const std::string &p) {
  using P = hf::ModelConfig::ExpertProjection;
  const std::string router = p + "." + config.moeRouter();
  Value gate, up, down;
  SmallVector<Value, 3> scales, zeros;
  if (config.stackedExperts) {
    auto [g, u, d] = stackedExperts(p, scales);
    gate = g, up = u, down = d;
  } else {
    const std::array<LinearWeight, 3> w = {stackedExpertLinears(p, P::Gate),
                                           stackedExpertLinears(p, P::Up),
                                           stackedExpertLinears(p, P::Down)};
    checkQuantizedExperts(p, w);
    gate = w[0].weight, up = w[1].weight, down = w[2].weight;
    for (const LinearWeight &each : w) {
      if (each.scales)
        scales.push_back(each.scales);
      if (each.zeros)
        zeros.push_back(each.zeros);
    }
  }
  SmallVector<Value, 4> biases;
  if (config.expertBiases) {
    const int64_t experts = config.numExperts;
    const std::string x = p + ".mlp.experts";
    Value gateUp = reshapeWeight(weight(x + ".gate_up_proj_bias"),
                                 {experts * 2 * config.expertIntermediateSize});
    biases = {weight(router + ".bias"), everyOtherRow(gateUp, 0),
              everyOtherRow(gateUp, 1),
              reshapeWeight(weight(x + ".down_proj_bias"),
                            {experts * config.hiddenSize})};
  }
  GateActivation act = denseAct();
  FloatAttr limit;
  if (config.expertActivation == hf::GateActivationKind::ClampedSilu) {
    act = GateActivation::ClampedSilu;
    limit = b.getF32FloatAttr(float(config.swigluLimit));
  }
  Value routed = b.create<MoeOp>(
      loc, x.getType(), x, weight(router + ".weight"), gate, up, down, biases,
      scales, zeros, b.getI64IntegerAttr(config.expertsPerToken),
      b.getBoolAttr(config.normalizeTopK), GateActivationAttr::get(&ctx, act),
      limit);
  if (!config.sharedExpertIntermediateSize)
    return routed;
  Value shared = gatedMlp(x, p + ".mlp.shared_expert", /*bias=*/false);
  Value gated =
      b.create<SigmoidGateOp>(loc, shared.getType(), shared, x,
                              weight(p + ".mlp.shared_expert_gate.weight"));
  return b.create<AddOp>(loc, routed, gated);
}

OwningOpRef<ModuleOp> Builder::build() {
  ctx.loadDialect<SolDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  ModuleOp m = *module;
  m->setAttr(ModelAttr::kAttrName,
             ModelAttr::get(
                 &ctx, hf::architectureName(config.architecture),
                 config.vocabSize, config.hiddenSize, config.numHiddenLayers,
                 config.maxPositionEmbeddings, config.positionLimit()));
  b.setInsertionPointToEnd(m.getBody());

  // Sol computes in bf16 whatever the checkpoint stores.
  actType = b.getBF16Type();
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

  const std::string &prefix = config.weightPrefix;
  loc = NameLoc::get(b.getStringAttr(prefix + "embed_tokens"));
  Value table = weight(prefix + "embed_tokens.weight");
  FloatAttr embedScale;
  if (config.scaleEmbeddings)
    embedScale = b.getF32FloatAttr(float(std::sqrt(double(config.hiddenSize))));
  Value hidden = b.create<EmbeddingOp>(loc, activation(config.hiddenSize),
                                       tokens, table, embedScale);
  for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer)
    hidden = decoderLayer(hidden, layer);

  loc = NameLoc::get(b.getStringAttr("lm_head"));
  Value norm = rmsNormWeight(prefix + "norm.weight");
  Value head = config.tieWordEmbeddings ? table : weight("lm_head.weight");
  FloatAttr softcap;
  if (config.finalLogitSoftcap)
    softcap = b.getF32FloatAttr(float(*config.finalLogitSoftcap));
  Value logits =
      b.create<LogitsOp>(loc, logitsType, hidden, norm, head, logitRows,
                         b.getF32FloatAttr(float(config.rmsNormEps)), softcap);
  b.create<func::ReturnOp>(loc, logits);
  return module;
}

} // namespace

ImportedModel importHfModel(MLIRContext &context,
                            std::shared_ptr<const HfModel> model) {
  ImportedModel imported;
  for (const hf::TensorView *t : model->checkpoint.tensors())
    imported.weights.addView(t->name, t->dtype, t->shape, t->bytes);
  imported.module = Builder(context, *model, imported.weights).build();
  ModelAssets &a = imported.assets;
  a.source = model->directory.string();
  a.sourceConfig = readText(model->directory / "config.json");
  if (model->tokenizerJson)
    a.tokenizerJson = readText(*model->tokenizerJson);
  a.tokenizerConfigJson = readTokenizerConfig(model->directory);
  a.generation = generationDefaults(
      model->config.eosTokenIds, model->config.bosTokenId, model->generation);
  imported.weights.retain(std::move(model));
  return imported;
}

} // namespace sol

//===- ExpectedWeights.cpp - The tensors an architecture needs ------------===//

#include "frontend/hf/ExpectedWeights.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <sstream>

namespace sol::hf {
namespace {

std::string formatShape(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

/// The tensors of linear `module` ([n, k]) as the checkpoint stores it:
/// `.weight`, or its quantization format's tensors.
void addLinear(std::vector<ExpectedTensor> &out, const ModelConfig &config,
               const std::string &module, int64_t n, int64_t k, bool bias) {
  const QuantizationConfig *q =
      config.quantization ? &*config.quantization : nullptr;
  if (!q || !q->quantizes(module)) {
    out.push_back({module + ".weight", {n, k}});
  } else if (q->method == QuantMethod::CompressedTensorsFp8) {
    out.push_back({module + ".weight", {n, k}, {DType::F8E4M3}});
    const std::vector<DType> floats = {DType::BF16, DType::F16, DType::F32};
    if (q->fp8Strategy == Fp8Strategy::Channel)
      out.push_back({module + ".weight_scale", {n, 1}, floats, {{n}}});
    else if (q->fp8Strategy == Fp8Strategy::Block)
      out.push_back({module + ".weight_scale",
                     {(n + q->blockRows - 1) / q->blockRows,
                      (k + q->blockCols - 1) / q->blockCols},
                     floats});
    else
      out.push_back({module + ".weight_scale", {}, floats, {{1}}});
  } else {
    // 4-bit codes, eight to an int32 along N (and along K for GPTQ).
    const int64_t g = q->groupSizeFor(k);
    if (k % g != 0)
      fail("config.json: quantization_config.group_size ", g,
           " does not divide the ", k, " input features of ", module,
           "; the checkpoint and its config disagree");
    if (n % 8 != 0 || (q->method == QuantMethod::Gptq && k % 8 != 0))
      fail(module, " is [", n, ", ", k, "]: ", q->describe(),
           " packs eight 4-bit values into each int32, which needs ",
           q->method == QuantMethod::Gptq ? "both sizes" : "the outputs",
           " to be a multiple of 8");
    const std::vector<DType> i32 = {DType::I32}, f16 = {DType::F16};
    if (q->method == QuantMethod::Awq) {
      out.push_back({module + ".qweight", {k, n / 8}, i32});
    } else {
      out.push_back({module + ".qweight", {k / 8, n}, i32});
      out.push_back({module + ".g_idx", {k}, i32, {}, /*optional=*/true});
    }
    out.push_back({module + ".qzeros", {k / g, n / 8}, i32});
    out.push_back({module + ".scales", {k / g, n}, f16});
  }
  if (bias)
    out.push_back({module + ".bias", {n}});
}

std::string dtypeList(const std::vector<DType> &dtypes) {
  if (dtypes.empty())
    return "BF16, F16 or F32";
  std::string list;
  for (size_t i = 0; i < dtypes.size(); ++i)
    list += cat(i == 0                   ? ""
                : i + 1 == dtypes.size() ? " or "
                                         : ", ",
                dtypes[i]);
  return list;
}

/// Fine-grained fp8: any float matrix but the embedding may instead be
/// e4m3 codes with a `<name>_scale_inv` of a scale per block (the
/// checkpoint's dtypes say which modules were converted).
void allowFp8Blocks(std::vector<ExpectedTensor> &out,
                    const QuantizationConfig &q, const std::string &embedding) {
  std::vector<ExpectedTensor> scales;
  for (ExpectedTensor &e : out) {
    if (e.shape.size() != 2 || !e.dtypes.empty() || e.name == embedding ||
        !e.name.ends_with(".weight"))
      continue;
    e.dtypes = {DType::F8E4M3, DType::BF16, DType::F16, DType::F32};
    scales.push_back({e.name + "_scale_inv",
                      {(e.shape[0] + q.blockRows - 1) / q.blockRows,
                       (e.shape[1] + q.blockCols - 1) / q.blockCols},
                      {DType::F32, DType::BF16, DType::F16},
                      {},
                      /*optional=*/true});
  }
  out.insert(out.end(), scales.begin(), scales.end());
}

} // namespace

std::vector<ExpectedTensor> expectedWeights(const ModelConfig &config) {
  const int64_t hidden = config.hiddenSize;
  const int64_t qWidth = config.numAttentionHeads * config.headDim;
  const int64_t kvWidth = config.numKeyValueHeads * config.headDim;
  const int64_t inter = config.intermediateSize;

  const bool mxfp4 =
      config.quantization && config.quantization->method == QuantMethod::Mxfp4;
  if (mxfp4 && !config.stackedExperts)
    fail("config.json: quantization_config (", config.quantization->describe(),
         ") is gpt-oss's format for its experts; Sol imports it for ",
         "GptOssForCausalLM only, not ", architectureName(config.architecture));
  if (config.quantization && !mxfp4 && config.stackedExperts)
    fail("config.json: quantization_config (", config.quantization->describe(),
         ") on ", architectureName(config.architecture),
         ", whose experts are stacked parameters rather than linears: Sol "
         "imports its experts in bf16 or MXFP4 only; compile the bf16 "
         "checkpoint (solc --quant quantizes the experts too)");
  const std::string &m = config.weightPrefix;
  std::vector<ExpectedTensor> out;
  out.push_back({m + "embed_tokens.weight", {config.vocabSize, hidden}});
  for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer) {
    const std::string p = cat(m, "layers.", layer, ".");
    auto add = [&](std::string_view name, std::vector<int64_t> shape) {
      out.push_back({p + std::string(name), std::move(shape)});
    };
    auto linear = [&](std::string_view name, int64_t n, int64_t k, bool bias) {
      addLinear(out, config, p + std::string(name), n, k, bias);
    };
    add("input_layernorm.weight", {hidden});
    if (config.fusedProjections) {
      linear("self_attn.qkv_proj", qWidth + 2 * kvWidth, hidden,
             config.qkvBias);
    } else {
      linear("self_attn.q_proj", qWidth, hidden, config.qkvBias);
      linear("self_attn.k_proj", kvWidth, hidden, config.qkvBias);
      linear("self_attn.v_proj", kvWidth, hidden, config.qkvBias);
    }
    linear("self_attn.o_proj", hidden, qWidth, config.oProjBias);
    if (config.attentionSinks)
      add("self_attn.sinks", {config.numAttentionHeads});
    if (config.qkNorm) {
      add("self_attn.q_norm.weight", {config.headDim});
      add("self_attn.k_norm.weight", {config.headDim});
    }
    add("post_attention_layernorm.weight", {hidden});
    if (config.sandwichNorms) {
      add("pre_feedforward_layernorm.weight", {hidden});
      add("post_feedforward_layernorm.weight", {hidden});
    }
    if (config.layerIsSparse(layer)) {
      using P = ModelConfig::ExpertProjection;
      const int64_t width = config.expertIntermediateSize,
                    experts = config.numExperts;
      add(config.moeRouter() + ".weight", {experts, hidden});
      if (config.expertBiases)
        add(config.moeRouter() + ".bias", {experts});
      if (config.stackedExperts) {
        // gpt-oss: gate and up interleaved in one [E, H, 2I] tensor (or
        // its MXFP4 blocks, rows = outputs), down [E, I, H].
        const std::string x = "mlp.experts.";
        if (mxfp4 && config.quantization->quantizes(p + "mlp.experts")) {
          if (hidden % 32 != 0 || width % 32 != 0)
            fail("config.json: mxfp4 experts pack 32 values per scale, which "
                 "needs hidden_size (",
                 hidden, ") and intermediate_size (", width,
                 ") to be multiples of 32");
          const std::vector<DType> u8 = {DType::U8};
          out.push_back({p + x + "gate_up_proj_blocks",
                         {experts, 2 * width, hidden / 32, 16},
                         u8});
          out.push_back({p + x + "gate_up_proj_scales",
                         {experts, 2 * width, hidden / 32},
                         u8});
          out.push_back({p + x + "down_proj_blocks",
                         {experts, hidden, width / 32, 16},
                         u8});
          out.push_back(
              {p + x + "down_proj_scales", {experts, hidden, width / 32}, u8});
        } else {
          add(x + "gate_up_proj", {experts, hidden, 2 * width});
          add(x + "down_proj", {experts, width, hidden});
        }
        add(x + "gate_up_proj_bias", {experts, 2 * width});
        add(x + "down_proj_bias", {experts, hidden});
        continue;
      }
      // Each expert's projections are linears: float, or quantized as the
      // checkpoint's quantization_config says.
      for (int64_t e = 0; e < experts; ++e) {
        linear(config.moeExpert(e, P::Gate), width, hidden, false);
        linear(config.moeExpert(e, P::Up), width, hidden, false);
        linear(config.moeExpert(e, P::Down), hidden, width, false);
      }
      if (const int64_t shared = config.sharedExpertIntermediateSize) {
        linear("mlp.shared_expert.gate_proj", shared, hidden, false);
        linear("mlp.shared_expert.up_proj", shared, hidden, false);
        linear("mlp.shared_expert.down_proj", hidden, shared, false);
        add("mlp.shared_expert_gate.weight", {1, hidden});
      }
      continue;
    }
    if (config.fusedProjections) {
      linear("mlp.gate_up_proj", 2 * inter, hidden, config.mlpBias);
    } else {
      linear("mlp.gate_proj", inter, hidden, config.mlpBias);
      linear("mlp.up_proj", inter, hidden, config.mlpBias);
    }
    linear("mlp.down_proj", hidden, inter, config.mlpBias);
  }
  out.push_back({m + "norm.weight", {hidden}});
  if (!config.tieWordEmbeddings)
    out.push_back({"lm_head.weight", {config.vocabSize, hidden}});
  if (config.quantization &&
      config.quantization->method == QuantMethod::Fp8Blocks)
    allowFp8Blocks(out, *config.quantization, m + "embed_tokens.weight");
  return out;
}

void checkWeights(const Checkpoint &checkpoint, const ModelConfig &config) {
  constexpr size_t kMissingNamesShown = 5;
  std::vector<std::string> missing;
  for (const ExpectedTensor &expected : expectedWeights(config)) {
    const TensorView *tensor = checkpoint.find(expected.name);
    if (!tensor) {
      if (!expected.optional)
        missing.push_back(expected.name);
      continue;
    }
    if (tensor->shape != expected.shape &&
        std::find(expected.otherShapes.begin(), expected.otherShapes.end(),
                  tensor->shape) == expected.otherShapes.end())
      fail("checkpoint '", checkpoint.directory().string(), "': tensor '",
           expected.name, "' has shape ", formatShape(tensor->shape),
           " but config.json (", architectureName(config.architecture),
           config.quantization ? cat(", ", config.quantization->describe())
                               : std::string(),
           ") needs ", formatShape(expected.shape),
           "; the weights do not belong to this config");
    const bool dtypeOk =
        expected.dtypes.empty()
            ? tensor->dtype == DType::BF16 || tensor->dtype == DType::F16 ||
                  tensor->dtype == DType::F32
            : std::find(expected.dtypes.begin(), expected.dtypes.end(),
                        tensor->dtype) != expected.dtypes.end();
    if (!dtypeOk) {
      std::string why;
      if (expected.name == "lm_head.weight")
        why = " (a quantized LM head is not supported yet)";
      else if (expected.dtypes.empty() && !config.quantization)
        why = " (config.json has no quantization_config saying how the "
              "weights are quantized)";
      else if (expected.dtypes.empty())
        why = " (quantization_config leaves this module unquantized)";
      else if (isFloatingPoint(tensor->dtype) &&
               expected.dtypes.front() == DType::F8E4M3)
        why = " (quantization_config quantizes this module; if it is left "
              "unquantized, list it in ignore)";
      fail("checkpoint '", checkpoint.directory().string(), "': tensor '",
           expected.name, "' has dtype ", tensor->dtype, "; expected ",
           dtypeList(expected.dtypes), why);
    }
  }
  if (missing.empty())
    return;
  std::string names;
  for (size_t i = 0; i < missing.size() && i < kMissingNamesShown; ++i)
    names += cat(i ? ", " : "", "'", missing[i], "'");
  std::string more =
      missing.size() > kMissingNamesShown
          ? cat(" and ", missing.size() - kMissingNamesShown, " more")
          : "";
  std::string hint;
  if (missing.size() == 1 && missing[0] == "lm_head.weight")
    hint = "; if the model shares its embedding with the LM head, config.json "
           "should say \"tie_word_embeddings\": true";
  // A quantized tensor missing where a float weight is: the module is left
  // in float, but the config does not say so.
  const std::string &first = missing.front();
  const std::string module = first.substr(0, first.rfind('.'));
  if (config.quantization && first != module + ".weight" &&
      checkpoint.find(module + ".weight"))
    hint = cat("; the checkpoint has '", module,
               ".weight' instead: if that module is left unquantized, the "
               "quantization_config should list it in ",
               config.quantization->method == QuantMethod::CompressedTensorsFp8
                   ? "ignore"
                   : "modules_to_not_convert");
  // gpt-oss's float experts under an mxfp4 quantization_config (a
  // dequantized copy that kept the original config).
  if (first.ends_with("_blocks") &&
      checkpoint.find(first.substr(0, first.size() - 7)))
    hint = cat("; the checkpoint has '", first.substr(0, first.size() - 7),
               "' instead: its experts are not MXFP4, so config.json should "
               "have no quantization_config");
  fail("checkpoint '", checkpoint.directory().string(), "' lacks ",
       missing.size(), " tensor", missing.size() == 1 ? "" : "s", " that ",
       architectureName(config.architecture), " needs: ", names, more, hint);
}

} // namespace sol::hf

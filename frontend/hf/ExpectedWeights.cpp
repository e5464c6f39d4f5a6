//===- ExpectedWeights.cpp - The tensors an architecture needs ------------===//

#include "frontend/hf/ExpectedWeights.h"

#include "runtime/support/Error.h"

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

} // namespace

std::vector<ExpectedTensor> expectedWeights(const ModelConfig &config) {
  const int64_t hidden = config.hiddenSize;
  const int64_t qWidth = config.numAttentionHeads * config.headDim;
  const int64_t kvWidth = config.numKeyValueHeads * config.headDim;
  const int64_t inter = config.intermediateSize;

  std::vector<ExpectedTensor> out;
  out.push_back({"model.embed_tokens.weight", {config.vocabSize, hidden}});
  for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer) {
    const std::string p = cat("model.layers.", layer, ".");
    auto add = [&](std::string_view name, std::vector<int64_t> shape) {
      out.push_back({p + std::string(name), std::move(shape)});
    };
    add("input_layernorm.weight", {hidden});
    add("self_attn.q_proj.weight", {qWidth, hidden});
    add("self_attn.k_proj.weight", {kvWidth, hidden});
    add("self_attn.v_proj.weight", {kvWidth, hidden});
    if (config.qkvBias) {
      add("self_attn.q_proj.bias", {qWidth});
      add("self_attn.k_proj.bias", {kvWidth});
      add("self_attn.v_proj.bias", {kvWidth});
    }
    add("self_attn.o_proj.weight", {hidden, qWidth});
    if (config.oProjBias)
      add("self_attn.o_proj.bias", {hidden});
    if (config.qkNorm) {
      add("self_attn.q_norm.weight", {config.headDim});
      add("self_attn.k_norm.weight", {config.headDim});
    }
    add("post_attention_layernorm.weight", {hidden});
    add("mlp.gate_proj.weight", {inter, hidden});
    add("mlp.up_proj.weight", {inter, hidden});
    add("mlp.down_proj.weight", {hidden, inter});
    if (config.mlpBias) {
      add("mlp.gate_proj.bias", {inter});
      add("mlp.up_proj.bias", {inter});
      add("mlp.down_proj.bias", {hidden});
    }
  }
  out.push_back({"model.norm.weight", {hidden}});
  if (!config.tieWordEmbeddings)
    out.push_back({"lm_head.weight", {config.vocabSize, hidden}});
  return out;
}

void checkWeights(const Checkpoint &checkpoint, const ModelConfig &config) {
  constexpr size_t kMissingNamesShown = 5;
  std::vector<std::string> missing;
  for (const ExpectedTensor &expected : expectedWeights(config)) {
    const TensorView *tensor = checkpoint.find(expected.name);
    if (!tensor) {
      missing.push_back(expected.name);
      continue;
    }
    if (tensor->shape != expected.shape)
      fail("checkpoint '", checkpoint.directory().string(), "': tensor '",
           expected.name, "' has shape ", formatShape(tensor->shape),
           " but config.json (", architectureName(config.architecture),
           ") needs ", formatShape(expected.shape),
           "; the weights do not belong to this config");
    if (tensor->dtype != DType::BF16 && tensor->dtype != DType::F16 &&
        tensor->dtype != DType::F32)
      fail("checkpoint '", checkpoint.directory().string(), "': tensor '",
           expected.name, "' has dtype ", tensor->dtype,
           "; expected BF16, F16 or F32 (quantized checkpoints are not read "
           "here)");
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
  fail("checkpoint '", checkpoint.directory().string(), "' lacks ",
       missing.size(), " tensor", missing.size() == 1 ? "" : "s", " that ",
       architectureName(config.architecture), " needs: ", names, more, hint);
}

} // namespace sol::hf

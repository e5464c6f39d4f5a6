//===- ModelConfig.cpp - config.json of a Hugging Face LLM ----------------===//
//
// Defaults are those of transformers' config classes, so a config.json that
// leaves a field out means what it means to transformers:
//
//   field                    Llama        Qwen2        Qwen3        Mistral
//   num_key_value_heads      = heads      32           32           8
//   head_dim                 hidden/heads hidden/heads 128 hidden/heads
//   max_position_embeddings  2048         32768        32768        131072
//   rms_norm_eps             1e-6 everywhere; rope_theta 10000 everywhere
//   tie_word_embeddings      false        false        false        false
//   sliding_window           none         4096 (*)     4096 (*)     4096
//   bos / eos                1 / 2        none         none         1 / 2
//
//   field                    Phi3         Gemma2       Gemma3 (text)
//   num_key_value_heads      = heads      4            4
//   head_dim                 hidden/heads 256          256
//   max_position_embeddings  4096         8192         131072
//   rms_norm_eps             1e-5         1e-6         1e-6
//   tie_word_embeddings      false        true         true
//   sliding_window           none (**)    4096 (***)   4096 (***)
//   bos / eos                1 / 32000    2 / 1        2 / 1
//
// (*) only when use_sliding_window is true (default false), and then only in
// layers >= max_window_layers (default 28) unless layer_types says otherwise.
// (**) every layer when set. (***) in the layers layer_types names
// "sliding_attention"; without layer_types Gemma 2 alternates (layer 0
// slides) and Gemma 3 slides except in every sliding_window_pattern-th
// layer (default 6).
// A null num_key_value_heads means "= heads"; a null sliding_window means no
// window. Small Qwen2/Qwen3 and Llama-3.2 checkpoints tie their embeddings
// by writing tie_word_embeddings: true explicitly.
//
// Unlike transformers, the core sizes (hidden_size, intermediate_size,
// num_hidden_layers, num_attention_heads, vocab_size) are required: a config
// without them is not a real checkpoint's, and silently building a 7B-shaped
// model from defaults would only fail later, less clearly.
//
//===----------------------------------------------------------------------===//

#include "frontend/hf/ModelConfig.h"

#include "frontend/hf/JsonFields.h"
#include "runtime/support/Error.h"

#include <cmath>

namespace sol::hf {
namespace {

using Json = nlohmann::json;
using detail::JsonFields;

struct ArchitectureInfo {
  Architecture arch;
  std::string_view className;
  std::string_view modelType;
  int64_t defaultKvHeads; // 0: same as num_attention_heads
  int64_t defaultHeadDim; // 0: hidden_size / num_attention_heads
  int64_t defaultMaxPositions;
  std::optional<int64_t> defaultBos;
  std::optional<int64_t> defaultEos;
  double defaultEps = 1e-6;
  bool defaultTied = false;
};

constexpr ArchitectureInfo kArchitectures[] = {
    {Architecture::Llama, "LlamaForCausalLM", "llama", 0, 0, 2048, 1, 2},
    {Architecture::Qwen2, "Qwen2ForCausalLM", "qwen2", 32, 0, 32768,
     std::nullopt, std::nullopt},
    {Architecture::Qwen3, "Qwen3ForCausalLM", "qwen3", 32, 128, 32768,
     std::nullopt, std::nullopt},
    {Architecture::Mistral, "MistralForCausalLM", "mistral", 8, 0, 131072, 1,
     2},
    {Architecture::Phi3, "Phi3ForCausalLM", "phi3", 0, 0, 4096, 1, 32000, 1e-5},
    {Architecture::Gemma2, "Gemma2ForCausalLM", "gemma2", 4, 256, 8192, 2, 1,
     1e-6, true},
    {Architecture::Gemma3, "Gemma3ForCausalLM", "gemma3_text", 4, 256, 131072,
     2, 1, 1e-6, true},
    {Architecture::Qwen3Moe, "Qwen3MoeForCausalLM", "qwen3_moe", 4, 128, 32768,
     std::nullopt, std::nullopt},
    {Architecture::Mixtral, "MixtralForCausalLM", "mixtral", 8, 0, 131072, 1, 2,
     1e-5},
    {Architecture::Qwen2Moe, "Qwen2MoeForCausalLM", "qwen2_moe", 16, 0, 32768,
     std::nullopt, std::nullopt},
    {Architecture::GptOss, "GptOssForCausalLM", "gpt_oss", 8, 64, 131072,
     std::nullopt, std::nullopt, 1e-5},
};

/// Gemma 3's multimodal class: its text model is Gemma3ForCausalLM with the
/// settings of config.json's text_config.
constexpr std::string_view kGemma3Multimodal = "Gemma3ForConditionalGeneration";

std::string supportedArchitectures() {
  std::string list;
  for (const ArchitectureInfo &info : kArchitectures)
    list += cat(list.empty() ? "" : ", ", info.className);
  return cat(list, ", ", kGemma3Multimodal, " (its text model)");
}

const ArchitectureInfo &architectureInfo(Architecture arch) {
  for (const ArchitectureInfo &info : kArchitectures)
    if (info.arch == arch)
      return info;
  fail("internal error: unknown Architecture value");
}

/// architectures[0] names the model class (as vLLM reads it); when the list
/// is absent, model_type picks the class as transformers' Auto classes do.
const ArchitectureInfo &readArchitecture(const JsonFields &fields) {
  if (fields.has("architectures")) {
    const Json &list = fields.at("architectures");
    if (!list.is_array() || list.empty() || !list[0].is_string())
      fail(fields.where("architectures"),
           "must be a non-empty list of class names, got ", list.dump());
    std::string name = list[0].get<std::string>();
    for (const ArchitectureInfo &info : kArchitectures)
      if (info.className == name)
        return info;
    fail(fields.source(), ": architecture '", name,
         "' is not supported; Sol supports ", supportedArchitectures());
  }
  std::optional<std::string> modelType = fields.optString("model_type");
  if (!modelType)
    fail(fields.source(),
         ": has neither \"architectures\" nor "
         "\"model_type\"; is this a transformers config.json? "
         "Sol supports ",
         supportedArchitectures());
  for (const ArchitectureInfo &info : kArchitectures)
    if (info.modelType == *modelType)
      return info;
  fail(fields.source(), ": model_type '", *modelType,
       "' is not supported; Sol supports ", supportedArchitectures());
}

int64_t positive(const JsonFields &fields, std::string_view key,
                 int64_t value) {
  if (value <= 0)
    fail(fields.where(key), "must be a positive integer, got ", value);
  return value;
}

double positiveFinite(const JsonFields &fields, std::string_view key,
                      double value) {
  if (!(value > 0) || !std::isfinite(value))
    fail(fields.where(key), "must be a positive number, got ", value);
  return value;
}

/// A list of positive numbers (longrope's factors) of `count` entries.
std::vector<double> readFactors(const JsonFields &params, std::string_view key,
                                int64_t count) {
  if (!params.has(key))
    fail(params.where(key), "is missing; longrope needs short_factor and "
                            "long_factor");
  const Json &list = params.at(key);
  if (!list.is_array() || list.size() != size_t(count))
    fail(params.where(key), "must list ", count,
         " numbers (one per rotated pair of head dims), got ", list.dump());
  std::vector<double> out;
  for (const Json &v : list) {
    if (!v.is_number() || !(v.get<double>() > 0) ||
        !std::isfinite(v.get<double>()))
      fail(params.where(key), "must hold positive numbers, got ", v.dump());
    out.push_back(v.get<double>());
  }
  return out;
}

/// One rope object (rope_scaling, rope_parameters or one layer type's
/// entry of it) into settings; `theta` is the base when it names none.
RopeSettings readRopeObject(const JsonFields &top, const JsonFields &params,
                            double theta, const ModelConfig &config) {
  RopeSettings out;
  out.theta = theta;
  if (std::optional<double> t = params.optNumber("rope_theta"))
    out.theta = *t;
  if (!(out.theta > 0) || !std::isfinite(out.theta))
    fail(params.has("rope_theta") ? params.where("rope_theta")
                                  : top.where("rope_theta"),
         "must be a positive number, got ", out.theta);

  std::string type =
      params.optString("rope_type")
          .value_or(params.optString("type").value_or("default"));
  RopeScaling &scaling = out.scaling;
  if (type == "default")
    return out;
  auto requireFactor = [&] {
    return positiveFinite(params, "factor", params.requireNumber("factor"));
  };
  if (type == "dynamic") {
    // Transformers' dynamic NTK keeps the frequencies up to
    // max_position_embeddings and raises the base per sequence past it.
    scaling.type = RopeScalingType::Dynamic;
    scaling.factor = requireFactor();
    if (params.has("original_max_position_embeddings"))
      fail(params.where("original_max_position_embeddings"),
           "is set with \"dynamic\" scaling; Sol runs dynamic NTK scaling "
           "up to max_position_embeddings, where the frequencies are the "
           "unscaled ones, and supports no other original length");
  } else if (type == "linear") {
    scaling.type = RopeScalingType::Linear;
    scaling.factor = requireFactor();
  } else if (type == "llama3") {
    scaling.type = RopeScalingType::Llama3;
    scaling.factor = requireFactor();
    scaling.lowFreqFactor = positiveFinite(
        params, "low_freq_factor", params.requireNumber("low_freq_factor"));
    scaling.highFreqFactor = positiveFinite(
        params, "high_freq_factor", params.requireNumber("high_freq_factor"));
    if (scaling.highFreqFactor <= scaling.lowFreqFactor)
      fail(params.where("high_freq_factor"), "(", scaling.highFreqFactor,
           ") must be greater than low_freq_factor (", scaling.lowFreqFactor,
           ")");
    scaling.originalMaxPositionEmbeddings =
        positive(params, "original_max_position_embeddings",
                 params.requireInt("original_max_position_embeddings"));
  } else if (type == "yarn") {
    scaling.type = RopeScalingType::Yarn;
    if (std::optional<int64_t> original =
            params.optInt("original_max_position_embeddings"))
      scaling.originalMaxPositionEmbeddings =
          positive(params, "original_max_position_embeddings", *original);
    // transformers 5: an absent factor is the context extension ratio.
    if (params.has("factor"))
      scaling.factor = requireFactor();
    else if (scaling.originalMaxPositionEmbeddings)
      scaling.factor = double(config.maxPositionEmbeddings) /
                       double(*scaling.originalMaxPositionEmbeddings);
    else
      fail(params.where("factor"), "is missing; yarn needs a factor or "
                                   "original_max_position_embeddings");
    // transformers reads these with `or`: 0 and null mean the default.
    if (std::optional<double> beta = params.optNumber("beta_fast");
        beta && *beta)
      scaling.betaFast = *beta;
    if (std::optional<double> beta = params.optNumber("beta_slow");
        beta && *beta)
      scaling.betaSlow = *beta;
    if (!std::isfinite(scaling.betaFast) || !std::isfinite(scaling.betaSlow) ||
        scaling.betaFast <= 0 || scaling.betaSlow <= 0)
      fail(params.where("beta_fast"), "and beta_slow must be positive, got ",
           scaling.betaFast, " and ", scaling.betaSlow);
    if (std::optional<double> factor = params.optNumber("attention_factor"))
      scaling.attentionFactor =
          positiveFinite(params, "attention_factor", *factor);
    scaling.mscale = params.optNumber("mscale");
    scaling.mscaleAllDim = params.optNumber("mscale_all_dim");
    scaling.truncate = params.optBool("truncate").value_or(true);
  } else if (type == "longrope" || type == "su") {
    // Phi-3: the short factors up to original_max_position_embeddings
    // (in the rope object or, as Phi3Config writes it, at the top level),
    // the long ones from there on.
    scaling.type = RopeScalingType::LongRope;
    const int64_t pairs = config.rotaryDim / 2;
    scaling.shortFactor = readFactors(params, "short_factor", pairs);
    scaling.longFactor = readFactors(params, "long_factor", pairs);
    std::optional<int64_t> original =
        params.optInt("original_max_position_embeddings");
    const JsonFields &where = original ? params : top;
    if (!original)
      original = top.optInt("original_max_position_embeddings");
    scaling.originalMaxPositionEmbeddings =
        original
            ? positive(where, "original_max_position_embeddings", *original)
            : config.maxPositionEmbeddings;
    // transformers 5: an explicit factor, else the context extension ratio
    // (which sets the default attention factor).
    scaling.factor = params.has("factor")
                         ? requireFactor()
                         : double(config.maxPositionEmbeddings) /
                               double(*scaling.originalMaxPositionEmbeddings);
    if (std::optional<double> factor = params.optNumber("attention_factor"))
      scaling.attentionFactor =
          positiveFinite(params, "attention_factor", *factor);
  } else {
    fail(params.where("rope_type"), "is \"", type,
         "\", which Sol does not support. Supported: default, linear, "
         "dynamic, llama3, yarn, longrope");
  }
  return out;
}

/// Rope settings: `rope_scaling` (transformers 4) or `rope_parameters`
/// (transformers 5; also holds rope_theta), preferring rope_scaling as
/// transformers does. Per-layer-type rope_parameters ({"full_attention":
/// {...}, "sliding_attention": {...}}) must agree, except for Gemma 3, whose
/// sliding layers have their own (as rope_local_base_freq says in
/// transformers 4's configs).
void readRope(const JsonFields &fields, ModelConfig &config) {
  const bool gptOss = config.architecture == Architecture::GptOss;
  const double topTheta =
      fields.optNumber("rope_theta").value_or(gptOss ? 150000.0 : 10000.0);
  const bool gemma3 = config.architecture == Architecture::Gemma3;
  if (gemma3)
    if (std::optional<double> local = fields.optNumber("rope_local_base_freq"))
      config.slidingRope = RopeSettings{
          positiveFinite(fields, "rope_local_base_freq", *local), {}};
  for (const char *key : {"rope_scaling", "rope_parameters"}) {
    if (!fields.has(key))
      continue;
    const Json &value = fields.at(key);
    if (!value.is_object())
      fail(fields.where(key), "must be an object, got ", value.dump());
    if (value.empty())
      continue;
    bool perLayerType = true;
    for (auto &[layerType, settings] : value.items())
      perLayerType =
          perLayerType && settings.is_object() &&
          (layerType == "full_attention" || layerType == "sliding_attention");
    if (!perLayerType) {
      JsonFields params(value, fields.source(), cat(fields.prefix(), key, "."));
      RopeSettings rope = readRopeObject(fields, params, topTheta, config);
      config.ropeTheta = rope.theta;
      config.ropeScaling = rope.scaling;
      return;
    }
    const Json &first = value.begin().value();
    bool same = true;
    for (auto &[layerType, settings] : value.items())
      same = same && settings == first;
    if (!same && !gemma3)
      fail(fields.where(key),
           "gives different RoPE settings per layer type, which "
           "Sol does not support for this architecture");
    for (auto &[layerType, settings] : value.items()) {
      JsonFields params(settings, fields.source(),
                        cat(fields.prefix(), key, ".", layerType, "."));
      RopeSettings rope = readRopeObject(fields, params, topTheta, config);
      if (layerType == "full_attention" || same) {
        config.ropeTheta = rope.theta;
        config.ropeScaling = rope.scaling;
      }
      if (layerType == "sliding_attention" && gemma3)
        config.slidingRope = rope;
    }
    return;
  }
  config.ropeTheta = topTheta;
  positiveFinite(fields, "rope_theta", config.ropeTheta);
  if (gptOss) {
    // GptOssConfig's default: yarn from 4,096 positions, factor 32.
    RopeScaling &yarn = config.ropeScaling;
    yarn.type = RopeScalingType::Yarn;
    yarn.factor = 32.0;
    yarn.betaFast = 32.0;
    yarn.betaSlow = 1.0;
    yarn.truncate = false;
    yarn.originalMaxPositionEmbeddings = 4096;
  }
}

/// Marks the layers `layer_types` names "sliding_attention"; false when the
/// config has no layer_types.
bool readLayerTypes(const JsonFields &fields, ModelConfig &config) {
  if (!fields.has("layer_types"))
    return false;
  const Json &types = fields.at("layer_types");
  if (!types.is_array() || types.size() != size_t(config.numHiddenLayers))
    fail(fields.where("layer_types"), "must list one entry per layer (",
         config.numHiddenLayers, "), got ", types.dump());
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "sliding_attention")
      config.slidingWindowLayers[i] = true;
    else if (types[i] != "full_attention")
      fail(fields.where("layer_types"), "entry ", i, " is ", types[i].dump(),
           "; expected \"full_attention\" or \"sliding_attention\"");
  }
  return true;
}

void readSlidingWindow(const JsonFields &fields, ModelConfig &config) {
  config.slidingWindowLayers.assign(size_t(config.numHiddenLayers), false);
  const Architecture arch = config.architecture;
  if (arch == Architecture::Llama)
    return;
  const bool windowByDefault =
      arch != Architecture::Phi3 && arch != Architecture::Mixtral;
  if (arch == Architecture::GptOss) {
    // Alternating layers attend within the window (128 by default), the
    // first of them sliding, unless layer_types says otherwise.
    config.slidingWindow =
        positive(fields, "sliding_window",
                 fields.optInt("sliding_window").value_or(128));
    if (!readLayerTypes(fields, config))
      for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer)
        config.slidingWindowLayers[size_t(layer)] = (layer + 1) % 2 != 0;
    return;
  }
  std::optional<int64_t> window =
      fields.contains("sliding_window")
          ? fields.optInt("sliding_window")
          : (windowByDefault ? std::optional<int64_t>(4096) : std::nullopt);
  if (window)
    positive(fields, "sliding_window", *window);
  if (arch == Architecture::Mistral || arch == Architecture::Phi3 ||
      arch == Architecture::Mixtral) {
    config.slidingWindow = window;
    if (window)
      config.slidingWindowLayers.assign(size_t(config.numHiddenLayers), true);
    return;
  }
  if (arch == Architecture::Gemma2 || arch == Architecture::Gemma3) {
    if (!window)
      return;
    config.slidingWindow = window;
    if (readLayerTypes(fields, config))
      return;
    // transformers' defaults without layer_types.
    const int64_t pattern =
        arch == Architecture::Gemma2
            ? 2
            : positive(fields, "sliding_window_pattern",
                       fields.optInt("sliding_window_pattern").value_or(6));
    for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer)
      config.slidingWindowLayers[size_t(layer)] = (layer + 1) % pattern != 0;
    return;
  }
  // Qwen2 / Qwen3: the window only applies with use_sliding_window.
  bool use = fields.optBool("use_sliding_window").value_or(false);
  config.maxWindowLayers = fields.optInt("max_window_layers").value_or(28);
  if (config.maxWindowLayers < 0)
    fail(fields.where("max_window_layers"), "must be >= 0, got ",
         config.maxWindowLayers);
  if (!use || !window)
    return;
  config.slidingWindow = window;
  if (readLayerTypes(fields, config))
    return;
  if (arch == Architecture::Qwen2Moe) {
    // Qwen2MoeConfig: every other layer below max_window_layers.
    for (int64_t layer = 0;
         layer < std::min(config.maxWindowLayers, config.numHiddenLayers);
         ++layer)
      config.slidingWindowLayers[size_t(layer)] = (layer + 1) % 2 != 0;
    return;
  }
  for (int64_t layer = config.maxWindowLayers; layer < config.numHiddenLayers;
       ++layer)
    config.slidingWindowLayers[size_t(layer)] = true;
}

} // namespace

std::string_view architectureName(Architecture arch) {
  return architectureInfo(arch).className;
}

std::string_view ropeScalingTypeName(RopeScalingType type) {
  switch (type) {
  case RopeScalingType::None:
    return "default";
  case RopeScalingType::Linear:
    return "linear";
  case RopeScalingType::Llama3:
    return "llama3";
  case RopeScalingType::Yarn:
    return "yarn";
  case RopeScalingType::LongRope:
    return "longrope";
  case RopeScalingType::Dynamic:
    return "dynamic";
  }
  return "?";
}

namespace {

const ArchitectureInfo *multimodalText(const JsonFields &top) {
  if (top.has("architectures")) {
    const Json &list = top.at("architectures");
    if (list.is_array() && !list.empty() && list[0] == kGemma3Multimodal)
      return &architectureInfo(Architecture::Gemma3);
    return nullptr;
  }
  return top.optString("model_type") == "gemma3"
             ? &architectureInfo(Architecture::Gemma3)
             : nullptr;
}

/// The gated MLP's activation: silu, or Gemma's tanh-approximated GELU
/// (hidden_activation; Gemma configs also carry a hidden_act, which
/// transformers' Gemma 2/3 ignore).
void readActivation(const JsonFields &fields, const ArchitectureInfo &arch,
                    ModelConfig &config) {
  const bool gemma =
      arch.arch == Architecture::Gemma2 || arch.arch == Architecture::Gemma3;
  const char *key = gemma && fields.has("hidden_activation")
                        ? "hidden_activation"
                        : "hidden_act";
  config.hiddenAct =
      fields.optString(key).value_or(gemma ? "gelu_pytorch_tanh" : "silu");
  if (config.hiddenAct == "gelu_new")
    config.hiddenAct = "gelu_pytorch_tanh"; // the same tanh approximation
  if (config.hiddenAct != "silu" && config.hiddenAct != "gelu_pytorch_tanh")
    fail(fields.where(key), "is \"", config.hiddenAct,
         "\"; Sol supports \"silu\" and \"gelu_pytorch_tanh\" for ",
         arch.className);
}

std::optional<double> readSoftcap(const JsonFields &fields,
                                  std::string_view key) {
  std::optional<double> cap = fields.optNumber(key);
  if (cap)
    positiveFinite(fields, key, *cap);
  return cap;
}

/// The mixture-of-experts settings of Qwen3-MoE, Qwen2-MoE, Mixtral and
/// gpt-oss. Routing settings that only training reads
/// (router_aux_loss_coef, output_router_logits, router_jitter_noise) do not
/// change inference.
void readExperts(const JsonFields &fields, ModelConfig &config) {
  const Architecture arch = config.architecture;
  const bool qwen =
      arch == Architecture::Qwen3Moe || arch == Architecture::Qwen2Moe;
  // Qwen3MoeConfig reads num_experts; transformers 5 writes
  // num_local_experts, as Mixtral's configs do.
  const char *expertsKey =
      qwen && fields.has("num_experts") ? "num_experts" : "num_local_experts";
  config.numExperts =
      positive(fields, expertsKey, fields.requireInt(expertsKey));
  config.expertsPerToken = positive(fields, "num_experts_per_tok",
                                    fields.requireInt("num_experts_per_tok"));
  if (config.expertsPerToken > config.numExperts)
    fail(fields.where("num_experts_per_tok"), "(", config.expertsPerToken,
         ") must not exceed the number of experts (", config.numExperts, ")");
  config.expertIntermediateSize =
      qwen ? positive(fields, "moe_intermediate_size",
                      fields.requireInt("moe_intermediate_size"))
           : config.intermediateSize;
  // Mixtral always renormalises the top-k weights; gpt-oss's softmax over
  // the top-k logits is the same.
  config.normalizeTopK =
      !qwen || fields.optBool("norm_topk_prob").value_or(false);
  config.sparseLayers.assign(size_t(config.numHiddenLayers), true);
  if (arch == Architecture::Qwen2Moe)
    config.sharedExpertIntermediateSize = positive(
        fields, "shared_expert_intermediate_size",
        fields.optInt("shared_expert_intermediate_size").value_or(5632));
  if (arch == Architecture::GptOss) {
    config.expertBiases = true;
    config.stackedExperts = true;
    config.expertActivation = GateActivationKind::ClampedSilu;
    config.swigluLimit = positiveFinite(
        fields, "swiglu_limit", fields.optNumber("swiglu_limit").value_or(7.0));
    if (std::optional<double> alpha = fields.optNumber("swiglu_alpha");
        alpha && *alpha != 1.702)
      fail(fields.where("swiglu_alpha"), "is ", *alpha,
           "; Sol implements gpt-oss's clamped SwiGLU with alpha 1.702 only");
  }
  if (!qwen)
    return;
  const int64_t step =
      positive(fields, "decoder_sparse_step",
               fields.optInt("decoder_sparse_step").value_or(1));
  std::vector<bool> dense(size_t(config.numHiddenLayers), false);
  if (fields.has("mlp_only_layers")) {
    const Json &list = fields.at("mlp_only_layers");
    if (!list.is_array())
      fail(fields.where("mlp_only_layers"),
           "must be a list of layer indices, "
           "got ",
           list.dump());
    for (const Json &v : list) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() >= config.numHiddenLayers)
        fail(fields.where("mlp_only_layers"), "holds ", v.dump(),
             ", not a layer index in [0, ", config.numHiddenLayers, ")");
      dense[v.get<size_t>()] = true;
    }
  }
  for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer)
    config.sparseLayers[size_t(layer)] =
        !dense[size_t(layer)] && (layer + 1) % step == 0;
}

} // namespace

std::string ModelConfig::moeRouter() const {
  return architecture == Architecture::Mixtral  ? "block_sparse_moe.gate"
         : architecture == Architecture::GptOss ? "mlp.router"
                                                : "mlp.gate";
}

std::string ModelConfig::moeExpert(int64_t expert,
                                   ExpertProjection which) const {
  if (architecture == Architecture::Mixtral)
    return cat("block_sparse_moe.experts.", expert, ".",
               which == ExpertProjection::Gate ? "w1"
               : which == ExpertProjection::Up ? "w3"
                                               : "w2");
  return cat("mlp.experts.", expert, ".",
             which == ExpertProjection::Gate ? "gate_proj"
             : which == ExpertProjection::Up ? "up_proj"
                                             : "down_proj");
}

ModelConfig parseModelConfig(std::string_view jsonText,
                             std::string_view source) {
  Json json = detail::parseJsonObject(jsonText, source);
  JsonFields top(json, std::string(source));
  // Gemma 3's multimodal checkpoints: the text model's settings are in
  // text_config; bos/eos and tying may be at the top.
  const ArchitectureInfo *multimodal = multimodalText(top);
  if (multimodal &&
      (!top.has("text_config") || !top.at("text_config").is_object()))
    fail(top.where("text_config"),
         "must be an object holding the text "
         "model's settings for ",
         kGemma3Multimodal);
  JsonFields fields = multimodal
                          ? JsonFields(top.at("text_config"),
                                       std::string(source), "text_config.")
                          : top;
  const ArchitectureInfo &arch =
      multimodal ? *multimodal : readArchitecture(fields);

  ModelConfig config;
  config.architecture = arch.arch;
  config.multimodal = multimodal != nullptr;
  config.modelType =
      fields.optString("model_type").value_or(std::string(arch.modelType));

  auto required = [&](std::string_view key) {
    return positive(fields, key, fields.requireInt(key));
  };
  config.hiddenSize = required("hidden_size");
  config.intermediateSize = required("intermediate_size");
  config.numHiddenLayers = required("num_hidden_layers");
  config.numAttentionHeads = required("num_attention_heads");
  config.vocabSize = required("vocab_size");

  if (!fields.contains("num_key_value_heads") && arch.defaultKvHeads)
    config.numKeyValueHeads = arch.defaultKvHeads;
  else
    config.numKeyValueHeads =
        fields.optInt("num_key_value_heads").value_or(config.numAttentionHeads);
  positive(fields, "num_key_value_heads", config.numKeyValueHeads);
  if (config.numAttentionHeads % config.numKeyValueHeads != 0)
    fail(fields.where("num_attention_heads"), "(", config.numAttentionHeads,
         ") must be a multiple of num_key_value_heads (",
         config.numKeyValueHeads, ")");

  if (std::optional<int64_t> headDim = fields.optInt("head_dim")) {
    config.headDim = positive(fields, "head_dim", *headDim);
  } else if (!fields.contains("head_dim") && arch.defaultHeadDim) {
    config.headDim = arch.defaultHeadDim;
  } else {
    if (config.hiddenSize % config.numAttentionHeads != 0)
      fail(fields.where("hidden_size"), "(", config.hiddenSize,
           ") must be a multiple of num_attention_heads (",
           config.numAttentionHeads, ") when head_dim is not given");
    config.headDim = config.hiddenSize / config.numAttentionHeads;
  }
  if (config.headDim % 2 != 0)
    fail(fields.where("head_dim"), "must be even for rotary embeddings, got ",
         config.headDim);
  config.rotaryDim = config.headDim;
  // transformers 5 may keep partial_rotary_factor in rope_parameters.
  const JsonFields *partialAt = &fields;
  std::optional<JsonFields> ropeFields;
  if (!fields.has("partial_rotary_factor"))
    for (const char *key : {"rope_parameters", "rope_scaling"})
      if (fields.has(key) && fields.at(key).is_object() &&
          fields.at(key).contains("partial_rotary_factor")) {
        ropeFields.emplace(fields.at(key), fields.source(),
                           cat(fields.prefix(), key, "."));
        partialAt = &*ropeFields;
        break;
      }
  if (std::optional<double> partial =
          partialAt->optNumber("partial_rotary_factor")) {
    const JsonFields &fields = *partialAt;
    if (!(*partial > 0 && *partial <= 1))
      fail(fields.where("partial_rotary_factor"), "must be in (0, 1], got ",
           *partial);
    // transformers: int(head_dim * partial_rotary_factor).
    config.rotaryDim = int64_t(double(config.headDim) * *partial);
    if (config.rotaryDim < 2 || config.rotaryDim % 2 != 0)
      fail(fields.where("partial_rotary_factor"), "gives ", config.rotaryDim,
           " rotated dims of the ", config.headDim,
           " of a head; rotary embeddings need an even number");
  }

  config.maxPositionEmbeddings =
      positive(fields, "max_position_embeddings",
               fields.optInt("max_position_embeddings")
                   .value_or(arch.defaultMaxPositions));
  config.rmsNormEps = positiveFinite(
      fields, "rms_norm_eps",
      fields.optNumber("rms_norm_eps").value_or(arch.defaultEps));

  readActivation(fields, arch, config);
  readRope(fields, config);

  // Multimodal Gemma 3 ties at the top level (text_config may repeat it).
  config.tieWordEmbeddings =
      fields.optBool("tie_word_embeddings")
          .value_or(
              top.optBool("tie_word_embeddings").value_or(arch.defaultTied));
  config.attentionScale = 1.0 / std::sqrt(double(config.headDim));
  switch (arch.arch) {
  case Architecture::Llama:
    config.qkvBias = config.oProjBias =
        fields.optBool("attention_bias").value_or(false);
    config.mlpBias = fields.optBool("mlp_bias").value_or(false);
    break;
  case Architecture::Qwen2: // q/k/v always biased, o_proj and MLP never
    config.qkvBias = true;
    break;
  case Architecture::Qwen2Moe:
    config.qkvBias = fields.optBool("qkv_bias").value_or(true);
    break;
  case Architecture::GptOss:
    config.qkvBias = config.oProjBias =
        fields.optBool("attention_bias").value_or(true);
    config.attentionSinks = true;
    if (config.hiddenAct != "silu")
      fail(fields.where("hidden_act"), "is \"", config.hiddenAct,
           "\"; gpt-oss's experts use their clamped SwiGLU, which Sol "
           "implements for \"silu\"");
    break;
  case Architecture::Qwen3:
  case Architecture::Qwen3Moe:
    config.qkvBias = config.oProjBias =
        fields.optBool("attention_bias").value_or(false);
    config.qkNorm = true;
    break;
  case Architecture::Mistral:
  case Architecture::Mixtral:
    break;
  case Architecture::Phi3:
    config.fusedProjections = true;
    break;
  case Architecture::Gemma2:
  case Architecture::Gemma3: {
    config.qkvBias = config.oProjBias =
        fields.optBool("attention_bias").value_or(false);
    config.qkNorm = arch.arch == Architecture::Gemma3;
    config.normPlusOne = config.scaleEmbeddings = config.sandwichNorms = true;
    const double scalar =
        positiveFinite(fields, "query_pre_attn_scalar",
                       fields.optNumber("query_pre_attn_scalar").value_or(256));
    config.attentionScale = 1.0 / std::sqrt(scalar);
    config.attnLogitSoftcap = readSoftcap(fields, "attn_logit_softcapping");
    config.finalLogitSoftcap = readSoftcap(fields, "final_logit_softcapping");
    if (fields.optBool("use_bidirectional_attention").value_or(false))
      fail(fields.where("use_bidirectional_attention"),
           "is true (an embedding model's bidirectional attention); Sol "
           "compiles causal decoders only");
    break;
  }
  }
  if (config.multimodal)
    config.weightPrefix = "model.language_model.";

  readSlidingWindow(fields, config);
  if (arch.arch == Architecture::Qwen3Moe ||
      arch.arch == Architecture::Mixtral ||
      arch.arch == Architecture::Qwen2Moe || arch.arch == Architecture::GptOss)
    readExperts(fields, config);

  // transformers 5 writes "dtype", older versions "torch_dtype".
  for (const JsonFields *f : {&fields, &top})
    for (const char *key : {"dtype", "torch_dtype"}) {
      std::optional<std::string> name = f->optString(key);
      if (!name || config.torchDtype)
        continue;
      config.torchDtype = parseTorchDType(*name);
      if (!config.torchDtype)
        fail(f->where(key), "is \"", *name,
             "\", not a dtype Sol knows (e.g. \"bfloat16\", \"float16\", "
             "\"float32\")");
    }

  // A multimodal checkpoint's top-level ids win over text_config's.
  const JsonFields &ids = multimodal && (top.contains("eos_token_id") ||
                                         top.contains("bos_token_id"))
                              ? top
                              : fields;
  config.bosTokenId = ids.contains("bos_token_id") ? ids.optInt("bos_token_id")
                                                   : arch.defaultBos;
  if (ids.contains("eos_token_id"))
    config.eosTokenIds =
        ids.optIntOrList("eos_token_id").value_or(std::vector<int64_t>{});
  else if (arch.defaultEos)
    config.eosTokenIds = {*arch.defaultEos};
  if (config.bosTokenId && *config.bosTokenId < 0)
    fail(ids.where("bos_token_id"), "must be >= 0, got ", *config.bosTokenId);
  for (int64_t id : config.eosTokenIds)
    if (id < 0)
      fail(ids.where("eos_token_id"), "must be >= 0, got ", id);
  for (const JsonFields *f : {&fields, &top})
    if (f->has("quantization_config") && !config.quantization) {
      config.quantization =
          parseQuantizationConfig(f->at("quantization_config"), source);
      // GPTQModel's dynamic rules apply in the order the file lists them,
      // which the parsed object (sorted by key) has lost.
      if (!config.quantization->dynamicRules.empty()) {
        const auto ordered = nlohmann::ordered_json::parse(jsonText);
        const auto &holder =
            multimodal && f == &fields ? ordered.at("text_config") : ordered;
        std::vector<std::string> keys;
        for (const auto &[key, value] :
             holder.at("quantization_config").at("dynamic").items())
          keys.push_back(key);
        orderDynamicRules(*config.quantization, keys);
      }
    }
  return config;
}

ModelConfig loadModelConfig(const std::filesystem::path &path) {
  std::filesystem::path file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    file = path / "config.json";
  if (!std::filesystem::exists(file, ec))
    fail("no config.json at '", file.string(),
         "'; pass a Hugging Face model directory");
  return parseModelConfig(detail::readTextFile(file), file.string());
}

} // namespace sol::hf

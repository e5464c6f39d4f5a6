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
// (*) only when use_sliding_window is true (default false), and then only in
// layers >= max_window_layers (default 28) unless layer_types says otherwise.
// A null num_key_value_heads means "= heads"; a null sliding_window means no
// window. Small Qwen2/Qwen3 and Llama-3.2 checkpoints tie their embeddings
// by writing tie_word_embeddings: true explicitly; no class defaults to true.
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
};

constexpr ArchitectureInfo kArchitectures[] = {
    {Architecture::Llama, "LlamaForCausalLM", "llama", 0, 0, 2048, 1, 2},
    {Architecture::Qwen2, "Qwen2ForCausalLM", "qwen2", 32, 0, 32768,
     std::nullopt, std::nullopt},
    {Architecture::Qwen3, "Qwen3ForCausalLM", "qwen3", 32, 128, 32768,
     std::nullopt, std::nullopt},
    {Architecture::Mistral, "MistralForCausalLM", "mistral", 8, 0, 131072, 1,
     2},
};

std::string supportedArchitectures() {
  std::string list;
  for (const ArchitectureInfo &info : kArchitectures)
    list += cat(list.empty() ? "" : ", ", info.className);
  return list;
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

/// The object holding RoPE settings: `rope_scaling` (transformers 4) or
/// `rope_parameters` (transformers 5; also holds rope_theta). transformers
/// prefers rope_scaling when both are set; so do we. Per-layer-type
/// rope_parameters ({"full_attention": {...}, ...}) are accepted when every
/// layer type uses the same settings, the only case these models produce.
const Json *findRopeObject(const JsonFields &fields, std::string &name) {
  for (const char *key : {"rope_scaling", "rope_parameters"}) {
    if (!fields.has(key))
      continue;
    const Json &value = fields.at(key);
    if (!value.is_object())
      fail(fields.where(key), "must be an object, got ", value.dump());
    if (value.empty())
      continue;
    name = key;
    bool perLayerType = true;
    for (auto &[layerType, settings] : value.items())
      perLayerType =
          perLayerType && settings.is_object() &&
          (layerType == "full_attention" || layerType == "sliding_attention");
    if (!perLayerType)
      return &value;
    const Json &first = value.begin().value();
    for (auto &[layerType, settings] : value.items())
      if (settings != first)
        fail(fields.where(key),
             "gives different RoPE settings per layer type, which "
             "Sol does not support for this architecture");
    name = cat(key, ".", value.begin().key());
    return &first;
  }
  return nullptr;
}

void readRope(const JsonFields &fields, ModelConfig &config) {
  std::string ropeName;
  const Json *rope = findRopeObject(fields, ropeName);
  std::optional<double> topTheta = fields.optNumber("rope_theta");
  config.ropeTheta = topTheta.value_or(10000.0);
  if (!rope) {
    positiveFinite(fields, "rope_theta", config.ropeTheta);
    return;
  }
  JsonFields params(*rope, fields.source(), ropeName + ".");
  if (std::optional<double> theta = params.optNumber("rope_theta")) {
    config.ropeTheta = *theta;
    positiveFinite(params, "rope_theta", *theta);
  } else {
    positiveFinite(fields, "rope_theta", config.ropeTheta);
  }

  std::string type =
      params.optString("rope_type")
          .value_or(params.optString("type").value_or("default"));
  RopeScaling &scaling = config.ropeScaling;
  if (type == "default") {
    scaling.type = RopeScalingType::None;
    return;
  }
  if (type == "dynamic")
    fail(params.where("rope_type"),
         "is \"dynamic\" (dynamic NTK scaling), which recomputes the "
         "frequencies as the sequence grows; Sol bakes a fixed RoPE table "
         "into the plan and cannot run it. Supported: default, linear, "
         "llama3, yarn");
  auto requireFactor = [&] {
    return positiveFinite(params, "factor", params.requireNumber("factor"));
  };
  if (type == "linear") {
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
  } else {
    fail(params.where("rope_type"), "is \"", type,
         "\", which Sol does not support. Supported: default, linear, "
         "llama3, yarn");
  }
}

void readSlidingWindow(const JsonFields &fields, ModelConfig &config) {
  config.slidingWindowLayers.assign(size_t(config.numHiddenLayers), false);
  if (config.architecture == Architecture::Llama)
    return;
  std::optional<int64_t> window = fields.contains("sliding_window")
                                      ? fields.optInt("sliding_window")
                                      : std::optional<int64_t>(4096);
  if (window)
    positive(fields, "sliding_window", *window);
  if (config.architecture == Architecture::Mistral) {
    config.slidingWindow = window;
    if (window)
      config.slidingWindowLayers.assign(size_t(config.numHiddenLayers), true);
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
  if (fields.has("layer_types")) {
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
  }
  return "?";
}

ModelConfig parseModelConfig(std::string_view jsonText,
                             std::string_view source) {
  Json json = detail::parseJsonObject(jsonText, source);
  JsonFields fields(json, std::string(source));
  const ArchitectureInfo &arch = readArchitecture(fields);

  ModelConfig config;
  config.architecture = arch.arch;
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

  config.maxPositionEmbeddings =
      positive(fields, "max_position_embeddings",
               fields.optInt("max_position_embeddings")
                   .value_or(arch.defaultMaxPositions));
  config.rmsNormEps = positiveFinite(
      fields, "rms_norm_eps", fields.optNumber("rms_norm_eps").value_or(1e-6));

  config.hiddenAct = fields.optString("hidden_act").value_or("silu");
  if (config.hiddenAct != "silu")
    fail(fields.where("hidden_act"), "is \"", config.hiddenAct,
         "\"; Sol supports only \"silu\" for ", arch.className);

  readRope(fields, config);

  config.tieWordEmbeddings =
      fields.optBool("tie_word_embeddings").value_or(false);
  switch (arch.arch) {
  case Architecture::Llama:
    config.qkvBias = config.oProjBias =
        fields.optBool("attention_bias").value_or(false);
    config.mlpBias = fields.optBool("mlp_bias").value_or(false);
    break;
  case Architecture::Qwen2: // q/k/v always biased, o_proj and MLP never
    config.qkvBias = true;
    break;
  case Architecture::Qwen3:
    config.qkvBias = config.oProjBias =
        fields.optBool("attention_bias").value_or(false);
    config.qkNorm = true;
    break;
  case Architecture::Mistral:
    break;
  }

  readSlidingWindow(fields, config);

  // transformers 5 writes "dtype", older versions "torch_dtype".
  for (const char *key : {"dtype", "torch_dtype"}) {
    std::optional<std::string> name = fields.optString(key);
    if (!name || config.torchDtype)
      continue;
    config.torchDtype = parseTorchDType(*name);
    if (!config.torchDtype)
      fail(fields.where(key), "is \"", *name,
           "\", not a dtype Sol knows (e.g. \"bfloat16\", \"float16\", "
           "\"float32\")");
  }

  config.bosTokenId = fields.contains("bos_token_id")
                          ? fields.optInt("bos_token_id")
                          : arch.defaultBos;
  if (fields.contains("eos_token_id"))
    config.eosTokenIds =
        fields.optIntOrList("eos_token_id").value_or(std::vector<int64_t>{});
  else if (arch.defaultEos)
    config.eosTokenIds = {*arch.defaultEos};
  if (config.bosTokenId && *config.bosTokenId < 0)
    fail(fields.where("bos_token_id"), "must be >= 0, got ",
         *config.bosTokenId);
  for (int64_t id : config.eosTokenIds)
    if (id < 0)
      fail(fields.where("eos_token_id"), "must be >= 0, got ", id);
  if (fields.has("quantization_config"))
    config.quantization =
        parseQuantizationConfig(fields.at("quantization_config"), source);
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

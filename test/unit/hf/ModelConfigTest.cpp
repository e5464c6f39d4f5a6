//===- ModelConfigTest.cpp - config.json parsing, defaults and errors -----===//

#include "frontend/hf/ModelConfig.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/hf/SafetensorsWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sol::hf {
namespace {

using Json = nlohmann::json;
using test::errorOf;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Field for field as published on the Hugging Face hub.
const char *kLlama31_8B = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
    "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.43.0.dev0",
  "use_cache": true, "vocab_size": 128256})";

const char *kQwen25_05B = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
  "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
  "max_position_embeddings": 32768, "max_window_layers": 21,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 32768, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.43.1",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

const char *kQwen3_06B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
  "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
  "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28,
  "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null,
  "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

const char *kMistral7B_v01 = R"({
  "architectures": ["MistralForCausalLM"], "bos_token_id": 1,
  "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mistral",
  "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
  "sliding_window": 4096, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0",
  "use_cache": true, "vocab_size": 32000})";

// As transformers 5 saves Llama-3.2-1B: "dtype" and "rope_parameters".
const char *kLlama32_1B_transformers5 = R"({
  "architectures": ["LlamaForCausalLM"], "dtype": "bfloat16", "head_dim": 64,
  "hidden_size": 2048, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0,
    "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
    "rope_theta": 500000.0, "rope_type": "llama3"},
  "tie_word_embeddings": true, "vocab_size": 128256, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009]})";

/// `base` with `key` set to `value` (or removed when value is discarded).
std::string edited(const std::string &base, const std::string &key,
                   Json value) {
  Json json = Json::parse(base);
  if (value.is_discarded())
    json.erase(key);
  else
    json[key] = std::move(value);
  return json.dump();
}
std::string without(const std::string &base, const std::string &key) {
  return edited(base, key, Json(Json::value_t::discarded));
}
std::string configError(const std::string &text) {
  return errorOf([&] { parseModelConfig(text, "cfg/config.json"); });
}

TEST(ModelConfigTest, ParsesLlama31) {
  ModelConfig c = parseModelConfig(kLlama31_8B, "config.json");
  EXPECT_EQ(c.architecture, Architecture::Llama);
  EXPECT_EQ(architectureName(c.architecture), "LlamaForCausalLM");
  EXPECT_EQ(c.modelType, "llama");
  EXPECT_EQ(c.hiddenSize, 4096);
  EXPECT_EQ(c.intermediateSize, 14336);
  EXPECT_EQ(c.numHiddenLayers, 32);
  EXPECT_EQ(c.numAttentionHeads, 32);
  EXPECT_EQ(c.numKeyValueHeads, 8);
  EXPECT_EQ(c.headDim, 128);
  EXPECT_EQ(c.vocabSize, 128256);
  EXPECT_EQ(c.maxPositionEmbeddings, 131072);
  EXPECT_DOUBLE_EQ(c.rmsNormEps, 1e-5);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 500000.0);
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Llama3);
  EXPECT_DOUBLE_EQ(c.ropeScaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.ropeScaling.lowFreqFactor, 1.0);
  EXPECT_DOUBLE_EQ(c.ropeScaling.highFreqFactor, 4.0);
  EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 8192);
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_FALSE(c.oProjBias);
  EXPECT_FALSE(c.mlpBias);
  EXPECT_FALSE(c.qkNorm);
  EXPECT_FALSE(c.slidingWindow);
  EXPECT_FALSE(c.layerUsesSlidingWindow(0));
  EXPECT_EQ(c.torchDtype, DType::BF16);
  EXPECT_EQ(c.bosTokenId, 128000);
  EXPECT_THAT(c.eosTokenIds, ElementsAre(128001, 128008, 128009));
}

TEST(ModelConfigTest, ParsesQwen25) {
  ModelConfig c = parseModelConfig(kQwen25_05B, "config.json");
  EXPECT_EQ(c.architecture, Architecture::Qwen2);
  EXPECT_EQ(c.headDim, 64); // 896 / 14
  EXPECT_EQ(c.numKeyValueHeads, 2);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_TRUE(c.qkvBias);    // Qwen2 always biases q/k/v...
  EXPECT_FALSE(c.oProjBias); // ...never o_proj
  EXPECT_FALSE(c.mlpBias);
  EXPECT_FALSE(c.qkNorm);
  EXPECT_FALSE(c.slidingWindow); // use_sliding_window: false
  EXPECT_EQ(c.maxWindowLayers, 21);
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::None);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 1e6);
  EXPECT_THAT(c.eosTokenIds, ElementsAre(151645));
}

TEST(ModelConfigTest, ParsesQwen3) {
  ModelConfig c = parseModelConfig(kQwen3_06B, "config.json");
  EXPECT_EQ(c.architecture, Architecture::Qwen3);
  EXPECT_EQ(c.headDim, 128); // not 1024 / 16
  EXPECT_TRUE(c.qkNorm);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_FALSE(c.slidingWindow);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 1e6); // written as an integer
  EXPECT_EQ(c.maxPositionEmbeddings, 40960);

  ModelConfig biased =
      parseModelConfig(edited(kQwen3_06B, "attention_bias", true), "c");
  EXPECT_TRUE(biased.qkvBias);
  EXPECT_TRUE(biased.oProjBias);
}

// Qwen3-30B-A3B's config.json (abridged to what Sol reads).
const char *kQwen3_30B_A3B = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false,
  "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 2048, "intermediate_size": 6144,
  "max_position_embeddings": 40960, "mlp_only_layers": [],
  "model_type": "qwen3_moe", "moe_intermediate_size": 768,
  "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 48,
  "num_key_value_heads": 4, "output_router_logits": false,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001, "sliding_window": null,
  "tie_word_embeddings": false, "use_sliding_window": false,
  "vocab_size": 151936})";

// Mixtral-8x7B-v0.1's.
const char *kMixtral8x7B = R"({
  "architectures": ["MixtralForCausalLM"], "bos_token_id": 1,
  "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
  "intermediate_size": 14336, "max_position_embeddings": 32768,
  "model_type": "mixtral", "num_attention_heads": 32,
  "num_experts_per_tok": 2, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "num_local_experts": 8,
  "output_router_logits": false, "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
  "sliding_window": null, "tie_word_embeddings": false,
  "vocab_size": 32000})";

TEST(ModelConfigTest, ParsesQwen3Moe) {
  ModelConfig c = parseModelConfig(kQwen3_30B_A3B, "config.json");
  EXPECT_EQ(c.architecture, Architecture::Qwen3Moe);
  EXPECT_TRUE(c.qkNorm);
  EXPECT_EQ(c.numExperts, 128);
  EXPECT_EQ(c.expertsPerToken, 8);
  EXPECT_EQ(c.expertIntermediateSize, 768);
  EXPECT_TRUE(c.normalizeTopK);
  EXPECT_TRUE(c.layerIsSparse(0));
  EXPECT_TRUE(c.layerIsSparse(47));
  EXPECT_EQ(c.moeRouter(), "mlp.gate");
  EXPECT_EQ(c.moeExpert(3, ModelConfig::ExpertProjection::Down),
            "mlp.experts.3.down_proj");

  // mlp_only_layers and decoder_sparse_step keep layers dense; transformers
  // 5 writes num_local_experts; norm_topk_prob defaults to false.
  std::string text = edited(kQwen3_30B_A3B, "mlp_only_layers", {0, 5});
  text = edited(text, "decoder_sparse_step", 2);
  text = edited(without(text, "num_experts"), "num_local_experts", 16);
  c = parseModelConfig(without(text, "norm_topk_prob"), "config.json");
  EXPECT_EQ(c.numExperts, 16);
  EXPECT_FALSE(c.normalizeTopK);
  EXPECT_FALSE(c.layerIsSparse(0)); // (0 + 1) % 2 != 0
  EXPECT_TRUE(c.layerIsSparse(1));
  EXPECT_FALSE(c.layerIsSparse(5)); // mlp_only_layers
  EXPECT_TRUE(c.layerIsSparse(7));
}

TEST(ModelConfigTest, ParsesMixtral) {
  ModelConfig c = parseModelConfig(kMixtral8x7B, "config.json");
  EXPECT_EQ(c.architecture, Architecture::Mixtral);
  EXPECT_EQ(c.numExperts, 8);
  EXPECT_EQ(c.expertsPerToken, 2);
  EXPECT_EQ(c.expertIntermediateSize, 14336);
  EXPECT_TRUE(c.normalizeTopK); // always, in Mixtral
  EXPECT_FALSE(c.slidingWindow);
  EXPECT_TRUE(c.layerIsSparse(31));
  EXPECT_EQ(c.moeRouter(), "block_sparse_moe.gate");
  EXPECT_EQ(c.moeExpert(0, ModelConfig::ExpertProjection::Up),
            "block_sparse_moe.experts.0.w3");
}

// gpt-oss-20b's (layer_types left out: GptOssConfig's default alternation).
const char *kGptOss20B = R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true,
  "attention_dropout": 0.0, "eos_token_id": 200002, "experts_per_token": 4,
  "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "initial_context_length": 4096, "initializer_range": 0.02,
  "intermediate_size": 2880, "max_position_embeddings": 131072,
  "model_type": "gpt_oss", "num_attention_heads": 64,
  "num_experts_per_tok": 4, "num_hidden_layers": 24,
  "num_key_value_heads": 8, "num_local_experts": 32,
  "output_router_logits": false, "pad_token_id": 199999,
  "quantization_config": {"modules_to_not_convert": [
    "model.layers.*.self_attn", "model.layers.*.mlp.router",
    "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
    "original_max_position_embeddings": 4096, "rope_type": "yarn",
    "truncate": false},
  "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128,
  "swiglu_limit": 7.0, "tie_word_embeddings": false, "use_cache": true,
  "vocab_size": 201088})";

// Qwen1.5-MoE-A2.7B's.
const char *kQwen15MoeA27B = R"({
  "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
  "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
  "max_position_embeddings": 8192, "max_window_layers": 21,
  "model_type": "qwen2_moe", "num_attention_heads": 16,
  "num_hidden_layers": 24, "num_key_value_heads": 16, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 32768,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936,
  "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
  "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4,
  "num_experts": 60, "norm_topk_prob": false, "output_router_logits": false,
  "router_aux_loss_coef": 0.001})";

TEST(ModelConfigTest, ParsesGptOss) {
  ModelConfig c = parseModelConfig(kGptOss20B, "config.json");
  EXPECT_EQ(c.architecture, Architecture::GptOss);
  EXPECT_EQ(c.numExperts, 32);
  EXPECT_EQ(c.expertsPerToken, 4);
  EXPECT_EQ(c.expertIntermediateSize, 2880);
  EXPECT_TRUE(c.normalizeTopK); // softmax over the top-k logits
  EXPECT_TRUE(c.expertBiases);
  EXPECT_TRUE(c.stackedExperts);
  EXPECT_EQ(c.expertActivation, GateActivationKind::ClampedSilu);
  EXPECT_EQ(c.swigluLimit, 7.0);
  EXPECT_TRUE(c.attentionSinks);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_TRUE(c.oProjBias);
  EXPECT_EQ(c.headDim, 64);
  EXPECT_EQ(c.moeRouter(), "mlp.router");
  ASSERT_TRUE(c.quantization);
  EXPECT_EQ(c.quantization->method, QuantMethod::Mxfp4);
  EXPECT_TRUE(c.quantization->quantizes("model.layers.3.mlp.experts"));
  EXPECT_FALSE(c.quantization->quantizes("model.layers.3.self_attn.q_proj"));
  EXPECT_FALSE(c.quantization->quantizes("model.layers.3.mlp.router"));
  EXPECT_FALSE(c.quantization->quantizes("lm_head"));
  // Alternating 128-token windows, the first layer sliding.
  EXPECT_EQ(c.slidingWindow, 128);
  EXPECT_TRUE(c.layerUsesSlidingWindow(0));
  EXPECT_FALSE(c.layerUsesSlidingWindow(1));
  EXPECT_TRUE(c.layerUsesSlidingWindow(22));
  EXPECT_FALSE(c.layerUsesSlidingWindow(23));
  EXPECT_EQ(c.ropeTheta, 150000.0);
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Yarn);
  EXPECT_EQ(c.ropeScaling.factor, 32.0);
  EXPECT_FALSE(c.ropeScaling.truncate);
  EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 4096);

  // GptOssConfig's defaults when the config leaves them out.
  std::string text = without(without(kGptOss20B, "rope_scaling"), "rope_theta");
  text = without(without(text, "sliding_window"), "swiglu_limit");
  c = parseModelConfig(without(text, "attention_bias"), "config.json");
  EXPECT_EQ(c.ropeTheta, 150000.0);
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Yarn);
  EXPECT_EQ(c.ropeScaling.factor, 32.0);
  EXPECT_FALSE(c.ropeScaling.truncate);
  EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 4096);
  EXPECT_EQ(c.slidingWindow, 128);
  EXPECT_EQ(c.swigluLimit, 7.0);
  EXPECT_TRUE(c.qkvBias);

  EXPECT_THAT(configError(edited(kGptOss20B, "swiglu_alpha", 2.0)),
              HasSubstr("\"swiglu_alpha\" is 2; Sol implements gpt-oss's "
                        "clamped SwiGLU with alpha 1.702 only"));
  EXPECT_THAT(configError(edited(kGptOss20B, "swiglu_limit", 0)),
              HasSubstr("swiglu_limit"));
  EXPECT_THAT(configError(edited(kGptOss20B, "hidden_act", "gelu")),
              HasSubstr("hidden_act"));
}

TEST(ModelConfigTest, ParsesQwen2Moe) {
  ModelConfig c = parseModelConfig(kQwen15MoeA27B, "config.json");
  EXPECT_EQ(c.architecture, Architecture::Qwen2Moe);
  EXPECT_EQ(c.numExperts, 60);
  EXPECT_EQ(c.expertsPerToken, 4);
  EXPECT_EQ(c.expertIntermediateSize, 1408);
  EXPECT_EQ(c.sharedExpertIntermediateSize, 5632);
  EXPECT_FALSE(c.normalizeTopK);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_FALSE(c.oProjBias);
  EXPECT_FALSE(c.expertBiases);
  EXPECT_FALSE(c.attentionSinks);
  EXPECT_EQ(c.headDim, 128);
  EXPECT_FALSE(c.slidingWindow);
  EXPECT_TRUE(c.layerIsSparse(0));
  EXPECT_EQ(c.moeRouter(), "mlp.gate");

  // Qwen2MoeConfig's window: every other layer below max_window_layers.
  std::string text = edited(kQwen15MoeA27B, "use_sliding_window", true);
  c = parseModelConfig(edited(text, "max_window_layers", 4), "config.json");
  EXPECT_EQ(c.slidingWindow, 32768);
  EXPECT_TRUE(c.layerUsesSlidingWindow(0));
  EXPECT_FALSE(c.layerUsesSlidingWindow(1));
  EXPECT_TRUE(c.layerUsesSlidingWindow(2));
  EXPECT_FALSE(c.layerUsesSlidingWindow(4));
  EXPECT_FALSE(c.layerUsesSlidingWindow(5));
  // qkv_bias may turn the q/k/v biases off.
  c = parseModelConfig(edited(kQwen15MoeA27B, "qkv_bias", false),
                       "config.json");
  EXPECT_FALSE(c.qkvBias);
  EXPECT_THAT(
      configError(edited(kQwen15MoeA27B, "shared_expert_intermediate_size", 0)),
      HasSubstr("shared_expert_intermediate_size"));
}

TEST(ModelConfigTest, RefusesBadExpertSettings) {
  EXPECT_THAT(configError(edited(kMixtral8x7B, "num_experts_per_tok", 9)),
              HasSubstr("\"num_experts_per_tok\" (9) must not exceed the "
                        "number of experts (8)"));
  EXPECT_THAT(configError(without(kMixtral8x7B, "num_local_experts")),
              HasSubstr("num_local_experts"));
  EXPECT_THAT(configError(without(kQwen3_30B_A3B, "moe_intermediate_size")),
              HasSubstr("moe_intermediate_size"));
  EXPECT_THAT(configError(edited(kQwen3_30B_A3B, "mlp_only_layers", {48})),
              HasSubstr("\"mlp_only_layers\" holds 48, not a layer index in "
                        "[0, 48)"));
  EXPECT_THAT(configError(edited(kQwen3_30B_A3B, "decoder_sparse_step", 0)),
              HasSubstr("decoder_sparse_step"));
}

TEST(ModelConfigTest, ParsesMistralSlidingWindow) {
  ModelConfig c = parseModelConfig(kMistral7B_v01, "config.json");
  EXPECT_EQ(c.architecture, Architecture::Mistral);
  EXPECT_EQ(c.slidingWindow, 4096);
  EXPECT_TRUE(c.layerUsesSlidingWindow(0));
  EXPECT_TRUE(c.layerUsesSlidingWindow(31));
  EXPECT_FALSE(c.layerUsesSlidingWindow(32));
  EXPECT_FALSE(c.qkvBias);

  // Mistral v0.2+: "sliding_window": null means full attention.
  ModelConfig v3 =
      parseModelConfig(edited(kMistral7B_v01, "sliding_window", nullptr), "c");
  EXPECT_FALSE(v3.slidingWindow);
  EXPECT_FALSE(v3.layerUsesSlidingWindow(0));
  // Absent: MistralConfig's default of 4096.
  ModelConfig absent =
      parseModelConfig(without(kMistral7B_v01, "sliding_window"), "c");
  EXPECT_EQ(absent.slidingWindow, 4096);
}

TEST(ModelConfigTest, QwenSlidingWindowAppliesFromMaxWindowLayers) {
  Json json = Json::parse(kQwen25_05B);
  json["use_sliding_window"] = true;
  json["sliding_window"] = 4096;
  ModelConfig c = parseModelConfig(json.dump(), "c");
  EXPECT_EQ(c.slidingWindow, 4096);
  EXPECT_FALSE(c.layerUsesSlidingWindow(20));
  EXPECT_TRUE(c.layerUsesSlidingWindow(21));
  EXPECT_TRUE(c.layerUsesSlidingWindow(23));

  // An explicit layer_types list wins over max_window_layers.
  std::vector<std::string> types(24, "full_attention");
  types[3] = "sliding_attention";
  json["layer_types"] = types;
  ModelConfig listed = parseModelConfig(json.dump(), "c");
  EXPECT_TRUE(listed.layerUsesSlidingWindow(3));
  EXPECT_FALSE(listed.layerUsesSlidingWindow(21));

  json["layer_types"] = std::vector<std::string>(3, "full_attention");
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"layer_types\" must list one entry per layer "
                        "(24)"));
}

TEST(ModelConfigTest, ParsesTransformers5RopeParameters) {
  ModelConfig c = parseModelConfig(kLlama32_1B_transformers5, "config.json");
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Llama3);
  EXPECT_DOUBLE_EQ(c.ropeScaling.factor, 32.0);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 500000.0); // from inside rope_parameters
  EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 8192);
  EXPECT_EQ(c.torchDtype, DType::BF16); // from "dtype"
  EXPECT_EQ(c.headDim, 64);
  EXPECT_TRUE(c.tieWordEmbeddings);

  // rope_parameters with the default type only carries rope_theta.
  Json plain = Json::parse(kQwen3_06B);
  plain.erase("rope_theta");
  plain.erase("rope_scaling");
  plain["rope_parameters"] = {{"rope_theta", 1000000.0},
                              {"rope_type", "default"}};
  ModelConfig qwen = parseModelConfig(plain.dump(), "c");
  EXPECT_EQ(qwen.ropeScaling.type, RopeScalingType::None);
  EXPECT_DOUBLE_EQ(qwen.ropeTheta, 1e6);

  // Per-layer-type rope_parameters with identical settings are accepted...
  plain["rope_parameters"] = {
      {"full_attention", {{"rope_theta", 5e6}, {"rope_type", "default"}}}};
  EXPECT_DOUBLE_EQ(parseModelConfig(plain.dump(), "c").ropeTheta, 5e6);
  // ...different ones are not.
  plain["rope_parameters"]["sliding_attention"] = {{"rope_theta", 1e4},
                                                   {"rope_type", "default"}};
  EXPECT_THAT(configError(plain.dump()),
              HasSubstr("different RoPE settings per layer type"));
}

TEST(ModelConfigTest, ParsesLegacyRopeScalingKeys) {
  Json json = Json::parse(kMistral7B_v01);
  json["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ModelConfig c = parseModelConfig(json.dump(), "c");
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Linear);
  EXPECT_DOUBLE_EQ(c.ropeScaling.factor, 2.0);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 10000.0);

  json["rope_scaling"] = {{"rope_type", "yarn"},
                          {"factor", 4.0},
                          {"original_max_position_embeddings", 32768}};
  ModelConfig yarn = parseModelConfig(json.dump(), "c");
  EXPECT_EQ(yarn.ropeScaling.type, RopeScalingType::Yarn);
  EXPECT_DOUBLE_EQ(yarn.ropeScaling.factor, 4.0);
  EXPECT_DOUBLE_EQ(yarn.ropeScaling.betaFast, 32.0);
  EXPECT_DOUBLE_EQ(yarn.ropeScaling.betaSlow, 1.0);
  EXPECT_FALSE(yarn.ropeScaling.attentionFactor);
  EXPECT_TRUE(yarn.ropeScaling.truncate);
  EXPECT_EQ(yarn.positionLimit(), 0);
}

TEST(ModelConfigTest, DynamicNtkRunsUpToMaxPositionEmbeddings) {
  // Transformers' dynamic NTK keeps the unscaled frequencies up to
  // max_position_embeddings: Sol's plan holds those and its sequences stop
  // there.
  Json json = Json::parse(kMistral7B_v01);
  json["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  ModelConfig c = parseModelConfig(json.dump(), "c");
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Dynamic);
  EXPECT_DOUBLE_EQ(c.ropeScaling.factor, 2.0);
  EXPECT_EQ(c.positionLimit(), c.maxPositionEmbeddings);
  EXPECT_EQ(ropeScalingTypeName(c.ropeScaling.type), "dynamic");
  Json plain = Json::parse(kMistral7B_v01);
  EXPECT_EQ(parseModelConfig(plain.dump(), "c").positionLimit(), 0);
}

TEST(ModelConfigTest, AppliesTransformersDefaults) {
  // Llama: num_key_value_heads defaults to num_attention_heads.
  ModelConfig llama =
      parseModelConfig(without(kLlama31_8B, "num_key_value_heads"), "c");
  EXPECT_EQ(llama.numKeyValueHeads, 32);
  // Mistral: defaults to 8 when absent, to the head count when null.
  EXPECT_EQ(
      parseModelConfig(without(kMistral7B_v01, "num_key_value_heads"), "c")
          .numKeyValueHeads,
      8);
  EXPECT_EQ(parseModelConfig(
                edited(kMistral7B_v01, "num_key_value_heads", nullptr), "c")
                .numKeyValueHeads,
            32);
  // Qwen3: head_dim defaults to 128, not hidden / heads.
  ModelConfig qwen3 = parseModelConfig(without(kQwen3_06B, "head_dim"), "c");
  EXPECT_EQ(qwen3.headDim, 128);
  // Others: hidden / heads.
  EXPECT_EQ(
      parseModelConfig(without(kLlama32_1B_transformers5, "head_dim"), "c")
          .headDim,
      64);
  // Qwen2 max_position_embeddings default, rope_theta default, eps default.
  Json minimal = Json::parse(kQwen25_05B);
  for (const char *key : {"max_position_embeddings", "rope_theta",
                          "rms_norm_eps", "tie_word_embeddings", "hidden_act",
                          "eos_token_id", "bos_token_id", "torch_dtype"})
    minimal.erase(key);
  ModelConfig qwen2 = parseModelConfig(minimal.dump(), "c");
  EXPECT_EQ(qwen2.maxPositionEmbeddings, 32768);
  EXPECT_DOUBLE_EQ(qwen2.ropeTheta, 10000.0);
  EXPECT_DOUBLE_EQ(qwen2.rmsNormEps, 1e-6);
  EXPECT_FALSE(qwen2.tieWordEmbeddings);
  EXPECT_EQ(qwen2.hiddenAct, "silu");
  EXPECT_TRUE(qwen2.eosTokenIds.empty());
  EXPECT_FALSE(qwen2.bosTokenId);
  EXPECT_FALSE(qwen2.torchDtype);
  // Llama's class defaults for bos/eos.
  Json llamaIds = Json::parse(kLlama31_8B);
  llamaIds.erase("bos_token_id");
  llamaIds.erase("eos_token_id");
  ModelConfig withIds = parseModelConfig(llamaIds.dump(), "c");
  EXPECT_EQ(withIds.bosTokenId, 1);
  EXPECT_THAT(withIds.eosTokenIds, ElementsAre(2));
}

TEST(ModelConfigTest, PicksArchitectureFromModelTypeWhenListAbsent) {
  ModelConfig c = parseModelConfig(without(kQwen3_06B, "architectures"), "c");
  EXPECT_EQ(c.architecture, Architecture::Qwen3);
  EXPECT_THAT(configError(edited(without(kQwen3_06B, "architectures"),
                                 "model_type", "gemma")),
              AllOf(HasSubstr("model_type 'gemma' is not supported"),
                    HasSubstr("Qwen3ForCausalLM")));
}

TEST(ModelConfigTest, UnknownArchitectureListsSupportedOnes) {
  EXPECT_THAT(
      configError(edited(kLlama31_8B, "architectures", {"GPT2LMHeadModel"})),
      AllOf(HasSubstr("cfg/config.json"),
            HasSubstr("architecture 'GPT2LMHeadModel' is not supported"),
            HasSubstr("LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
                      "MistralForCausalLM")));
  EXPECT_THAT(configError(edited(kLlama31_8B, "architectures", Json::array())),
              HasSubstr("field \"architectures\" must be a non-empty list"));
  Json neither = Json::parse(kLlama31_8B);
  neither.erase("architectures");
  neither.erase("model_type");
  EXPECT_THAT(configError(neither.dump()),
              HasSubstr("has neither \"architectures\" nor \"model_type\""));
}

TEST(ModelConfigTest, MissingRequiredFieldIsNamed) {
  for (const char *key :
       {"hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "vocab_size"})
    EXPECT_THAT(
        configError(without(kLlama31_8B, key)),
        AllOf(HasSubstr("cfg/config.json: field \"" + std::string(key) + "\""),
              HasSubstr("is missing")))
        << key;
}

TEST(ModelConfigTest, BadValuesAreNamed) {
  EXPECT_THAT(configError(edited(kLlama31_8B, "num_attention_heads", 0)),
              HasSubstr("field \"num_attention_heads\" must be a positive "
                        "integer, got 0"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "hidden_size", -4096)),
              HasSubstr("field \"hidden_size\" must be a positive integer"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "num_key_value_heads", 7)),
              HasSubstr("field \"num_attention_heads\" (32) must be a "
                        "multiple of num_key_value_heads (7)"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "hidden_act", "gelu")),
              HasSubstr("field \"hidden_act\" is \"gelu\"; Sol supports "
                        "\"silu\" and \"gelu_pytorch_tanh\""));
  EXPECT_THAT(configError(edited(kLlama31_8B, "vocab_size", "128256")),
              HasSubstr("field \"vocab_size\" must be an integer, got "
                        "\"128256\""));
  EXPECT_THAT(configError(edited(kLlama31_8B, "vocab_size", 1.5)),
              HasSubstr("must be an integer, got 1.5"));
  EXPECT_EQ(parseModelConfig(edited(kLlama31_8B, "vocab_size", 128256.0), "c")
                .vocabSize,
            128256);
  EXPECT_THAT(configError(edited(kLlama31_8B, "tie_word_embeddings", "yes")),
              HasSubstr("field \"tie_word_embeddings\" must be true or false"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "rms_norm_eps", -1e-5)),
              HasSubstr("field \"rms_norm_eps\" must be a positive number"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "rope_theta", 0)),
              HasSubstr("field \"rope_theta\" must be a positive number"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "head_dim", 127)),
              HasSubstr("field \"head_dim\" must be even"));
  EXPECT_THAT(configError(without(edited(kLlama31_8B, "hidden_size", 4001),
                                  "head_dim")),
              HasSubstr("field \"hidden_size\" (4001) must be a multiple of "
                        "num_attention_heads (32)"));
  EXPECT_THAT(configError(edited(kMistral7B_v01, "sliding_window", -1)),
              HasSubstr("field \"sliding_window\" must be a positive"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "torch_dtype", "complex64")),
              HasSubstr("field \"torch_dtype\" is \"complex64\""));
  EXPECT_THAT(configError(edited(kLlama31_8B, "eos_token_id", {1, "two"})),
              HasSubstr("field \"eos_token_id\" must be an integer or a list"));
  EXPECT_THAT(configError(edited(kLlama31_8B, "eos_token_id", -1)),
              HasSubstr("field \"eos_token_id\" must be >= 0"));
  EXPECT_THAT(configError("[1]"), HasSubstr("must be a JSON object"));
  EXPECT_THAT(configError("{\"hidden_size\": "), HasSubstr("not valid JSON"));
}

TEST(ModelConfigTest, RopeScalingErrorsAreNamed) {
  Json json = Json::parse(kLlama31_8B);
  json["rope_scaling"] = {{"rope_type", "ntk"}, {"factor", 2.0}};
  EXPECT_THAT(configError(json.dump()),
              AllOf(HasSubstr("field \"rope_scaling.rope_type\" is "
                              "\"ntk\""),
                    HasSubstr("Supported: default, linear, dynamic, llama3, "
                              "yarn, longrope")));
  json["rope_scaling"] = {{"rope_type", "dynamic"}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.factor\" is missing"));
  json["rope_scaling"] = {{"rope_type", "dynamic"},
                          {"factor", 2.0},
                          {"original_max_position_embeddings", 4096}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.original_max_position_"
                        "embeddings\" is set with \"dynamic\" scaling"));
  json["rope_scaling"] = {{"rope_type", "longrope"}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.short_factor\" is missing"));
  json["rope_scaling"] = {{"rope_type", "longrope"},
                          {"short_factor", {1.0, 2.0}},
                          {"long_factor", {1.0, 2.0}}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.short_factor\" must list 64 "
                        "numbers"));
  json["rope_scaling"] = {{"rope_type", "ntk-by-parts"}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("is \"ntk-by-parts\", which Sol does not support"));
  json["rope_scaling"] = {{"rope_type", "linear"}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.factor\" is missing"));
  json["rope_scaling"] = {{"rope_type", "linear"}, {"factor", -2}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.factor\" must be a positive"));
  json["rope_scaling"] = {{"rope_type", "llama3"},
                          {"factor", 8.0},
                          {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.original_max_position_"
                        "embeddings\" is missing"));
  json["rope_scaling"]["original_max_position_embeddings"] = 8192;
  json["rope_scaling"]["high_freq_factor"] = 1.0;
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.high_freq_factor\" (1) must be "
                        "greater than low_freq_factor (1)"));
  json["rope_scaling"] = "llama3";
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling\" must be an object"));
  json.erase("rope_scaling");
  json["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", -1.0}};
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_parameters.rope_theta\" must be a "
                        "positive number"));
}

// Phi-3.5-mini's fields (factors shortened to the 16 pairs of a head of 32).
std::string phi35Mini() {
  Json json = {{"architectures", {"Phi3ForCausalLM"}},
               {"model_type", "phi3"},
               {"hidden_size", 96},
               {"intermediate_size", 256},
               {"num_hidden_layers", 2},
               {"num_attention_heads", 3},
               {"num_key_value_heads", 3},
               {"vocab_size", 32064},
               {"max_position_embeddings", 131072},
               {"original_max_position_embeddings", 4096},
               {"rms_norm_eps", 1e-05},
               {"rope_theta", 10000.0},
               {"sliding_window", 262144},
               {"eos_token_id", 32000}};
  std::vector<double> shortF(16, 1.0), longF(16, 2.0);
  json["rope_scaling"] = {
      {"type", "longrope"}, {"short_factor", shortF}, {"long_factor", longF}};
  return json.dump();
}

TEST(ModelConfigTest, ParsesPhi3LongRopeAndPartialRotary) {
  ModelConfig c = parseModelConfig(phi35Mini(), "phi3");
  EXPECT_EQ(c.architecture, Architecture::Phi3);
  EXPECT_TRUE(c.fusedProjections);
  EXPECT_EQ(c.headDim, 32);
  EXPECT_EQ(c.rotaryDim, 32);
  EXPECT_EQ(c.ropeScaling.type, RopeScalingType::LongRope);
  EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 4096);
  EXPECT_DOUBLE_EQ(c.ropeScaling.factor, 32.0); // 131072 / 4096
  EXPECT_EQ(c.ropeScaling.longFactor.size(), 16u);
  EXPECT_TRUE(c.layerUsesSlidingWindow(1));
  EXPECT_EQ(*c.slidingWindow, 262144);
  EXPECT_DOUBLE_EQ(c.rmsNormEps, 1e-5);

  // Phi-4-mini: 3/4 of each head rotates, so 12 factors for a head of 32.
  Json json = Json::parse(phi35Mini());
  json["partial_rotary_factor"] = 0.75;
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"rope_scaling.short_factor\" must list 12 "
                        "numbers"));
  std::vector<double> twelve(12, 1.5);
  json["rope_scaling"]["short_factor"] = twelve;
  json["rope_scaling"]["long_factor"] = twelve;
  c = parseModelConfig(json.dump(), "phi4");
  EXPECT_EQ(c.rotaryDim, 24);
  json["partial_rotary_factor"] = 0.1;
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("rotary embeddings need an even number"));
}

TEST(ModelConfigTest, ParsesGemma2) {
  Json json = {{"architectures", {"Gemma2ForCausalLM"}},
               {"model_type", "gemma2"},
               {"hidden_size", 3584},
               {"intermediate_size", 14336},
               {"num_hidden_layers", 4},
               {"num_attention_heads", 16},
               {"num_key_value_heads", 8},
               {"head_dim", 256},
               {"vocab_size", 256000},
               {"query_pre_attn_scalar", 256},
               {"sliding_window", 4096},
               {"attn_logit_softcapping", 50.0},
               {"final_logit_softcapping", 30.0},
               {"hidden_act", "gelu_pytorch_tanh"},
               {"hidden_activation", "gelu_pytorch_tanh"}};
  ModelConfig c = parseModelConfig(json.dump(), "gemma2");
  EXPECT_EQ(c.architecture, Architecture::Gemma2);
  EXPECT_TRUE(c.normPlusOne && c.scaleEmbeddings && c.sandwichNorms);
  EXPECT_FALSE(c.qkNorm);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.hiddenAct, "gelu_pytorch_tanh");
  EXPECT_DOUBLE_EQ(c.attentionScale, 1.0 / 16.0);
  EXPECT_DOUBLE_EQ(*c.attnLogitSoftcap, 50.0);
  EXPECT_DOUBLE_EQ(*c.finalLogitSoftcap, 30.0);
  // Without layer_types, layer 0 slides and layer 1 does not.
  EXPECT_TRUE(c.layerUsesSlidingWindow(0));
  EXPECT_FALSE(c.layerUsesSlidingWindow(1));
  EXPECT_TRUE(c.layerUsesSlidingWindow(2));
  json["attn_logit_softcapping"] = -1;
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"attn_logit_softcapping\" must be a "
                        "positive number"));
}

TEST(ModelConfigTest, ParsesGemma3RopePerLayerTypeAndMultimodalText) {
  Json text = {
      {"model_type", "gemma3_text"},
      {"hidden_size", 2560},
      {"intermediate_size", 10240},
      {"num_hidden_layers", 7},
      {"num_attention_heads", 8},
      {"num_key_value_heads", 4},
      {"head_dim", 256},
      {"vocab_size", 262208},
      {"sliding_window", 1024},
      {"rope_parameters",
       {{"full_attention",
         {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
        {"sliding_attention",
         {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}}};
  Json json = {{"architectures", {"Gemma3ForConditionalGeneration"}},
               {"model_type", "gemma3"},
               {"text_config", text},
               {"eos_token_id", {1, 106}}};
  ModelConfig c = parseModelConfig(json.dump(), "gemma3");
  EXPECT_EQ(c.architecture, Architecture::Gemma3);
  EXPECT_TRUE(c.multimodal && c.qkNorm);
  EXPECT_EQ(c.weightPrefix, "model.language_model.");
  EXPECT_THAT(c.eosTokenIds, ElementsAre(1, 106));
  // Five sliding layers, then a full one (sliding_window_pattern 6).
  for (int64_t layer = 0; layer < 5; ++layer)
    EXPECT_TRUE(c.layerUsesSlidingWindow(layer)) << layer;
  EXPECT_FALSE(c.layerUsesSlidingWindow(5));
  EXPECT_DOUBLE_EQ(c.ropeOf(5).theta, 1e6);
  EXPECT_EQ(c.ropeOf(5).scaling.type, RopeScalingType::Linear);
  EXPECT_DOUBLE_EQ(c.ropeOf(0).theta, 1e4);
  EXPECT_EQ(c.ropeOf(0).scaling.type, RopeScalingType::None);
  json["text_config"]["use_bidirectional_attention"] = true;
  EXPECT_THAT(configError(json.dump()),
              HasSubstr("field \"text_config.use_bidirectional_attention\" is "
                        "true"));
  json.erase("text_config");
  EXPECT_THAT(configError(json.dump()), HasSubstr("text_config"));
}

TEST(ModelConfigTest, LoadsFromDirectoryOrFile) {
  test::TempDir dir;
  EXPECT_THAT(errorOf([&] { loadModelConfig(dir.path()); }),
              HasSubstr("no config.json at"));
  test::writeFile(dir / "config.json", kQwen3_06B);
  EXPECT_EQ(loadModelConfig(dir.path()).architecture, Architecture::Qwen3);
  EXPECT_EQ(loadModelConfig(dir / "config.json").hiddenSize, 1024);
  test::writeFile(dir / "config.json", "{");
  EXPECT_THAT(errorOf([&] { loadModelConfig(dir.path()); }),
              AllOf(HasSubstr((dir / "config.json").string()),
                    HasSubstr("not valid JSON")));
}

} // namespace
} // namespace sol::hf

//===- ModelConfig.h - config.json of a Hugging Face LLM --------*- C++ -*-===//
//
// The subset of a transformers config.json that the importer needs for the
// decoder-only architectures Sol supports, with transformers' per-architecture
// defaults applied and every value validated up front, so the importer never
// sees a half-valid config. Defaults follow transformers' config classes
// (LlamaConfig, Qwen2Config, Qwen3Config, MistralConfig, Phi3Config,
// Gemma2Config, Gemma3TextConfig); see ModelConfig.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/hf/QuantizationConfig.h"
#include "runtime/support/DType.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sol::hf {

enum class Architecture {
  Llama,
  Qwen2,
  Qwen3,
  Mistral,
  Phi3,
  Gemma2,
  Gemma3,
  Qwen3Moe,
  Mixtral,
  Qwen2Moe,
  GptOss
};

/// The activation of a mixture's experts (as sol::GateActivation).
enum class GateActivationKind { Silu, GeluTanh, ClampedSilu };

/// The transformers class name, e.g. "Qwen3ForCausalLM".
std::string_view architectureName(Architecture arch);

enum class RopeScalingType { None, Linear, Llama3, Yarn, LongRope, Dynamic };

std::string_view ropeScalingTypeName(RopeScalingType type);

/// RoPE frequency scaling (`rope_scaling`, or transformers-5
/// `rope_parameters`). "dynamic" NTK scaling leaves the frequencies as they
/// are up to max_position_embeddings and changes them per sequence beyond;
/// Sol runs such models up to that length (ModelConfig::positionLimit).
struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  double factor = 1.0;
  // llama3
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  /// llama3 (required) and yarn (optional: when absent yarn uses
  /// max_position_embeddings and the config's factor).
  std::optional<int64_t> originalMaxPositionEmbeddings;
  // yarn
  double betaFast = 32.0;
  double betaSlow = 1.0;
  std::optional<double> attentionFactor;
  std::optional<double> mscale;
  std::optional<double> mscaleAllDim;
  bool truncate = true;
  // longrope (Phi-3): per-pair divisors of the frequencies below and from
  // originalMaxPositionEmbeddings on; attentionFactor as for yarn.
  std::vector<double> shortFactor, longFactor;
};

/// The rotary embedding of a set of layers: its base and scaling.
struct RopeSettings {
  double theta = 10000.0;
  RopeScaling scaling;
};

struct ModelConfig {
  Architecture architecture = Architecture::Llama;
  std::string modelType; // "llama", "qwen2", "qwen3", "mistral"

  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numHiddenLayers = 0;
  int64_t numAttentionHeads = 0;
  int64_t numKeyValueHeads = 0; // defaults to numAttentionHeads
  int64_t headDim = 0;          // see ModelConfig.cpp for per-arch defaults
  int64_t vocabSize = 0;
  int64_t maxPositionEmbeddings = 0;
  double rmsNormEps = 1e-6;

  double ropeTheta = 10000.0;
  RopeScaling ropeScaling;
  /// Gemma 3: the rope of the sliding-window layers (rope_local_base_freq,
  /// or rope_parameters.sliding_attention); the other layers use ropeTheta
  /// and ropeScaling.
  std::optional<RopeSettings> slidingRope;
  /// Dimensions of each head that rotate: head_dim * partial_rotary_factor
  /// (Phi-4-mini: 0.75); the rest pass through.
  int64_t rotaryDim = 0;

  bool tieWordEmbeddings = false;
  /// Bias on q_proj/k_proj/v_proj (Llama/Qwen3: attention_bias; Qwen2:
  /// always; Mistral: never).
  bool qkvBias = false;
  /// Bias on o_proj (Llama/Qwen3: attention_bias; Qwen2, Mistral: never).
  bool oProjBias = false;
  /// Bias on gate/up/down_proj (Llama: mlp_bias; others: never).
  bool mlpBias = false;
  /// RMSNorm over head_dim on queries and keys before RoPE (Qwen3, Gemma 3).
  bool qkNorm = false;
  /// Phi-3: q/k/v stored as one `qkv_proj`, gate/up as one `gate_up_proj`.
  bool fusedProjections = false;
  /// Gemma: RMSNorms multiply by (1 + weight), computed in float32.
  bool normPlusOne = false;
  /// Gemma: the embeddings are multiplied by sqrt(hidden_size).
  bool scaleEmbeddings = false;
  /// Gemma 2/3: norms after attention and after the MLP as well
  /// (post_attention_layernorm on the attention's output,
  /// pre_feedforward_layernorm, post_feedforward_layernorm).
  bool sandwichNorms = false;
  /// Attention scores are scaled by this (head_dim^-0.5, or Gemma's
  /// query_pre_attn_scalar^-0.5).
  double attentionScale = 0.0;
  /// Gemma 2: scores become cap * tanh(score / cap) (attn_logit_softcapping),
  /// and the logits likewise (final_logit_softcapping).
  std::optional<double> attnLogitSoftcap, finalLogitSoftcap;
  /// Where the decoder's tensors live: "model." (Gemma 3's multimodal
  /// checkpoints: "model.language_model." or "language_model.model.", which
  /// the importer resolves against the checkpoint).
  std::string weightPrefix = "model.";
  /// Gemma3ForConditionalGeneration: the text model of a multimodal
  /// checkpoint (config.json's text_config).
  bool multimodal = false;

  /// Sliding-window attention span in tokens, or nullopt for full attention
  /// in every layer. For Qwen2/Qwen3 only set when use_sliding_window is true.
  std::optional<int64_t> slidingWindow;
  /// Qwen2/Qwen3 `max_window_layers` as written (layers with index >= it
  /// use the window); 0 for Llama/Mistral.
  int64_t maxWindowLayers = 0;
  /// Per layer: true when the layer attends within slidingWindow only.
  std::vector<bool> slidingWindowLayers;

  /// Mixture of experts (Qwen3-MoE, Qwen2-MoE, Mixtral, gpt-oss; 0
  /// experts: dense MLPs):
  /// experts, experts per token, each expert's intermediate size, whether
  /// the top-k routing weights are renormalised to sum to 1, and per layer
  /// whether its MLP is the mixture (Qwen3-MoE's mlp_only_layers and
  /// decoder_sparse_step keep others dense, of intermediate_size).
  int64_t numExperts = 0, expertsPerToken = 0, expertIntermediateSize = 0;
  bool normalizeTopK = false;
  /// Qwen2-MoE: a shared expert of this width beside the routed ones, its
  /// output scaled by sigmoid(shared_expert_gate . x); 0: none.
  int64_t sharedExpertIntermediateSize = 0;
  /// gpt-oss: biases on the router and every expert projection; the experts
  /// stored as 3-D tensors (gate_up_proj [E, H, 2I] with gate and up
  /// interleaved, down_proj [E, I, H], inputs first); the clamped SwiGLU
  /// with swiglu_limit (experts only; dense MLPs use hiddenAct).
  bool expertBiases = false;
  bool stackedExperts = false;
  GateActivationKind expertActivation = GateActivationKind::Silu;
  double swigluLimit = 0.0;
  /// gpt-oss: a learned sink logit per attention head (self_attn.sinks).
  bool attentionSinks = false;
  std::vector<bool> sparseLayers;
  bool layerIsSparse(int64_t layer) const {
    return layer >= 0 && layer < static_cast<int64_t>(sparseLayers.size()) &&
           sparseLayers[static_cast<size_t>(layer)];
  }
  /// A mixture's tensors, relative to its layer: the router's module
  /// ("mlp.gate"; Mixtral "block_sparse_moe.gate") and expert e's gate, up
  /// and down projections ("mlp.experts.e.gate_proj"; Mixtral's w1, w3, w2).
  enum class ExpertProjection { Gate, Up, Down };
  std::string moeRouter() const;
  std::string moeExpert(int64_t expert, ExpertProjection which) const;

  /// "silu" or "gelu_pytorch_tanh" (Gemma's GeGLU).
  std::string hiddenAct = "silu";
  /// `torch_dtype` (transformers 4) or `dtype` (transformers 5), if given.
  std::optional<DType> torchDtype;
  std::optional<int64_t> bosTokenId;
  std::vector<int64_t> eosTokenIds; // int or list in the JSON
  /// `quantization_config` of an already-quantized checkpoint.
  std::optional<QuantizationConfig> quantization;

  /// The longest sequence Sol computes as Transformers does, or 0 for no
  /// limit: max_position_embeddings under dynamic NTK scaling, whose
  /// frequencies past it depend on each sequence's length.
  int64_t positionLimit() const {
    const bool dynamic =
        ropeScaling.type == RopeScalingType::Dynamic ||
        (slidingRope && slidingRope->scaling.type == RopeScalingType::Dynamic);
    return dynamic ? maxPositionEmbeddings : 0;
  }
  /// The rope of `layer` (slidingRope for Gemma 3's sliding layers).
  RopeSettings ropeOf(int64_t layer) const {
    if (slidingRope && layerUsesSlidingWindow(layer))
      return *slidingRope;
    return {ropeTheta, ropeScaling};
  }

  bool layerUsesSlidingWindow(int64_t layer) const {
    return slidingWindow && layer >= 0 &&
           layer < static_cast<int64_t>(slidingWindowLayers.size()) &&
           slidingWindowLayers[static_cast<size_t>(layer)];
  }
};

/// Parses and validates the text of a config.json; `source` names it in
/// error messages (e.g. its path). Throws sol::Error naming the field.
ModelConfig parseModelConfig(std::string_view jsonText,
                             std::string_view source);

/// Reads `path`, which is a config.json file or a model directory holding one.
ModelConfig loadModelConfig(const std::filesystem::path &path);

} // namespace sol::hf

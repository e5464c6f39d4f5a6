//===- ExpectedWeights.h - The tensors an architecture needs ----*- C++ -*-===//
//
// The tensor names and shapes that the importer will read for a config, and
// a check that a checkpoint provides them, so a wrong or mismatched
// checkpoint fails before import with a message naming the tensor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/hf/ModelConfig.h"
#include "frontend/hf/Safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sol::hf {

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  /// The dtypes it may have; empty for a float weight (BF16, F16 or F32).
  std::vector<DType> dtypes = {};
  /// Other shapes holding the same values (an fp8 weight_scale [N, 1] or
  /// [N], a per-tensor scale [] or [1]).
  std::vector<std::vector<int64_t>> otherShapes = {};
  /// May be absent (GPTQ's g_idx).
  bool optional = false;
};

/// Every weight the architecture needs, in model order: embed_tokens, then
/// per layer input_layernorm, q/k/v/o_proj (Phi-3: qkv_proj and o_proj; +
/// biases as configured), q_norm/k_norm (Qwen3, Gemma 3),
/// post_attention_layernorm (Gemma: also pre_ and post_feedforward_layernorm),
/// gate/up/down_proj (Phi-3: gate_up_proj and down_proj; + biases; a
/// mixture's router and experts' projections), then the
/// final norm and lm_head (omitted when tie_word_embeddings); the decoder's
/// tensors under config.weightPrefix. A linear
/// that config.quantization quantizes has its format's tensors instead of
/// `.weight` (QuantizationConfig.h); throws sol::Error when the format cannot
/// hold a linear's shape (a group size that does not divide its inputs).
std::vector<ExpectedTensor> expectedWeights(const ModelConfig &config);

/// Checks that every expected tensor is in `checkpoint` with its shape and
/// dtype (a float one, BF16, F16 or F32, unless the entry says otherwise).
/// Throws sol::Error naming the missing tensors (the first few and how
/// many), or a tensor whose shape (expected and actual) or dtype is wrong.
/// Tensors the checkpoint has beyond the expected ones are ignored (e.g.
/// rotary_emb.inv_freq of old exports, and lm_head.weight of a tied model,
/// which the importer does not read).
void checkWeights(const Checkpoint &checkpoint, const ModelConfig &config);

} // namespace sol::hf

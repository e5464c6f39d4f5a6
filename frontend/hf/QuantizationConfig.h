//===- QuantizationConfig.h - config.json's quantization_config -*- C++ -*-===//
//
// The `quantization_config` of an already-quantized Hugging Face checkpoint,
// for the formats whose weights map exactly onto Sol's quantized linears
// (runtime/support/Quantize.h):
//
//   quant_method         tensors per linear                  Sol's scheme
//   awq (AutoAWQ gemm)   qweight, qzeros, scales             int4, group g
//   gptq (4 bits)        qweight, qzeros, scales, g_idx      int4, group g
//   compressed-tensors   weight (F8_E4M3), weight_scale      fp8, per row
//     (fp8 weights, channel or tensor scales; activations dynamic per token)
//   mxfp4 (gpt-oss)      experts' *_blocks, *_scales         bf16 experts
//     (only the mixture's experts: the rest of the model is float)
//   fp8 (block-scaled,   weight (F8_E4M3), weight_scale_inv  bf16 (dequantized:
//     Qwen3-FP8)           (a scale per block of codes)       Sol's fp8 scales
//                                                             per row)
//
// Everything else (other bit widths, other AWQ kernels' layouts, static
// activation scales, packed int4 compressed-tensors...) is refused here with
// a message naming the field, before any weight is read.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sol::hf {

enum class QuantMethod {
  Awq,                  ///< AutoAWQ, "gemm" packing
  Gptq,                 ///< GPTQ, 4 bits
  CompressedTensorsFp8, ///< compressed-tensors, float8_e4m3fn weights
  Mxfp4, ///< OCP MXFP4 experts (gpt-oss): *_blocks and *_scales, group 32
  /// Transformers' fine-grained fp8 (Qwen3-FP8, DeepSeek-V3): float8_e4m3fn
  /// weights with a weight_scale_inv per block; imported as float.
  Fp8Blocks
};

/// How a compressed-tensors fp8 checkpoint scales its weights.
enum class Fp8Strategy {
  Channel, ///< weight_scale [N, 1]: one scale per output row
  Tensor,  ///< weight_scale [] or [1]: one scale for the whole weight
  /// weight_scale [ceil(N / rows), ceil(K / cols)]: one per block of
  /// block_structure (imported dequantized to bf16, as Fp8Blocks)
  Block,
};

struct QuantizationConfig {
  QuantMethod method = QuantMethod::Awq;
  /// AWQ and GPTQ: inputs per scale and zero point; 0 means a whole row
  /// (GPTQ's group_size -1).
  int64_t groupSize = 0;
  /// GPTQ: checkpoint_format "gptq_v2" stores the zero points themselves,
  /// the classic "gptq" stores them minus one.
  bool gptqV2 = false;
  /// GPTQ: sym (zero point 8 in every group) or not.
  bool gptqSym = true;
  /// GPTQ: desc_act; the importer then checks that g_idx is trivial.
  bool descAct = false;
  Fp8Strategy fp8Strategy = Fp8Strategy::Channel;
  /// Fp8Blocks' weight_block_size and compressed-tensors' block_structure:
  /// the rows and columns of codes a scale.
  int64_t blockRows = 128, blockCols = 128;
  /// Modules left in float: AWQ's and GPTQ's modules_to_not_convert (whole
  /// dotted components of the module name, e.g. "lm_head", "mlp",
  /// "model.layers.0"), compressed-tensors' ignore (module names, or
  /// patterns "re:..." matched from the start of the name).
  std::vector<std::string> notConverted;
  /// compressed-tensors' targets other than the class name "Linear" (names
  /// or "re:" patterns); empty when every linear is a target.
  std::vector<std::string> targets;
  /// GPTQ's modules_in_block_to_quantize, flattened (names within a decoder
  /// layer, e.g. "self_attn.q_proj"); empty when every linear is quantized.
  std::vector<std::string> blockModules;
  /// GPTQModel's `dynamic` per-module rules, in order: a regular expression
  /// matched from the start of the module name, and whether the modules it
  /// matches stay unquantized ("-:"); the others only restate the top-level
  /// settings (any other override is refused when parsing).
  struct DynamicRule {
    std::string key; ///< as config.json spells it, e.g. "-:.*mlp\\.gate$"
    std::string pattern;
    bool skip = false;
  };
  std::vector<DynamicRule> dynamicRules;

  /// The int4 group size of a linear with `inputs` input features.
  int64_t groupSizeFor(int64_t inputs) const {
    return groupSize ? groupSize : inputs;
  }

  /// Whether the linear called `module` (e.g.
  /// "model.layers.0.self_attn.q_proj") has quantized weights in a form
  /// Sol's linears take as they are (never for Fp8Blocks, whose weights the
  /// importer dequantizes wherever the checkpoint holds fp8 codes).
  bool quantizes(std::string_view module) const;

  /// The format in words, for messages: "AutoAWQ (int4, group size 128)".
  std::string describe() const;
};

/// Parses the `quantization_config` object of a config.json; `source` names
/// the file in errors. Throws sol::Error naming the field for a method or
/// setting Sol cannot run.
/// Puts `config.dynamicRules` in the order of `keys` (the dynamic object's
/// keys as the file lists them; a parsed nlohmann::json sorts them).
void orderDynamicRules(QuantizationConfig &config,
                       const std::vector<std::string> &keys);

QuantizationConfig parseQuantizationConfig(const nlohmann::json &object,
                                           std::string_view source);

} // namespace sol::hf

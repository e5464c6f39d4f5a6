//===- QuantizationConfig.cpp - config.json's quantization_config ---------===//
//
// The field names and defaults are those transformers and the quantizers
// write: AwqConfig / AutoAWQ, GPTQConfig / GPTQModel, and compressed-tensors'
// QuantizationConfig (as llm-compressor saves it).
//
//===----------------------------------------------------------------------===//

#include "frontend/hf/QuantizationConfig.h"

#include "frontend/hf/JsonFields.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cctype>
// GCC 12's <regex> trips its own -Wmaybe-uninitialized (a known false
// positive in std::function's move).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop

namespace sol::hf {
namespace {

using Json = nlohmann::json;
using detail::JsonFields;

constexpr std::string_view kSupported =
    "Sol imports awq (AutoAWQ gemm, 4 bits), gptq (4 bits), "
    "compressed-tensors with fp8 weights, fp8 with weight_block_size "
    "(dequantized to bf16) and mxfp4 (gpt-oss's experts); a "
    "float checkpoint compiles with "
    "solc --quant int8|fp8|int4-rtn|int4-awq";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// A list of strings, or null/absent for none.
std::vector<std::string> stringList(const JsonFields &fields,
                                    std::string_view key) {
  std::vector<std::string> out;
  if (!fields.has(key))
    return out;
  const Json &value = fields.at(key);
  if (!value.is_array())
    fail(fields.where(key), "must be a list of module names, got ",
         value.dump());
  for (const Json &item : value) {
    if (!item.is_string())
      fail(fields.where(key), "must be a list of module names, got ",
           value.dump());
    out.push_back(item.get<std::string>());
  }
  return out;
}

void requireFourBits(const JsonFields &fields, std::string_view format) {
  const int64_t bits = fields.requireInt("bits");
  if (bits != 4)
    fail(fields.where("bits"), "is ", bits, "; Sol imports ", format,
         " checkpoints with 4-bit weights only (its int4 format)");
}

/// group_size: a positive even number (Sol's int4 packs pairs of inputs),
/// or -1 for one group per row where `wholeRowAllowed`.
int64_t groupSize(const JsonFields &fields, bool wholeRowAllowed) {
  const int64_t g = fields.requireInt("group_size");
  if (g == -1 && wholeRowAllowed)
    return 0;
  if (g <= 0 || g % 2 != 0)
    fail(fields.where("group_size"), "is ", g,
         "; Sol's int4 needs a positive even group size",
         wholeRowAllowed ? " (or -1 for one group per row)" : "");
  return g;
}

/// The rows and columns of a block of fp8 codes sharing a scale.
void blockSize(const JsonFields &fields, std::string_view key,
               QuantizationConfig &config) {
  if (!fields.has(key))
    fail(fields.where(key), "is missing: block-scaled fp8 weights need the "
                            "rows and columns of a block, e.g. [128, 128]");
  const Json &block = fields.at(key);
  if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() ||
      !block[1].is_number_integer() || block[0].get<int64_t>() <= 0 ||
      block[1].get<int64_t>() <= 0)
    fail(fields.where(key),
         "must be two positive integers (rows and columns of a block), got ",
         block.dump());
  config.blockRows = block[0].get<int64_t>();
  config.blockCols = block[1].get<int64_t>();
}

/// Transformers' fine-grained fp8: e4m3 weights, a scale per block of
/// weight_block_size codes, activations quantized dynamically (which Sol's
/// bf16 activations make moot).
QuantizationConfig parseFp8Blocks(const JsonFields &fields) {
  QuantizationConfig config;
  config.method = QuantMethod::Fp8Blocks;
  const std::string scheme =
      lower(fields.optString("activation_scheme").value_or("dynamic"));
  if (scheme != "dynamic")
    fail(fields.where("activation_scheme"), "is \"", scheme,
         "\"; Sol imports fp8 checkpoints with dynamic activation scales "
         "only (static ones need each layer's input scale)");
  const std::string fmt = lower(fields.optString("fmt").value_or("e4m3"));
  if (fmt != "e4m3")
    fail(fields.where("fmt"), "is \"", fmt,
         "\"; Sol reads float8_e4m3fn weights only");
  blockSize(fields, "weight_block_size", config);
  // modules_to_not_convert needs no reading: each weight's dtype says
  // whether it is fp8.
  return config;
}

QuantizationConfig parseAwq(const JsonFields &fields) {
  QuantizationConfig config;
  config.method = QuantMethod::Awq;
  requireFourBits(fields, "AWQ");
  config.groupSize = groupSize(fields, /*wholeRowAllowed=*/false);
  const std::string version =
      lower(fields.optString("version").value_or("gemm"));
  if (version != "gemm")
    fail(fields.where("version"), "is \"", version,
         "\"; Sol reads the packing of AutoAWQ's \"gemm\" version only "
         "(\"gemv\", \"exllama\", \"marlin\"... lay the int32 words out "
         "differently): re-export the model with version \"gemm\"");
  if (!fields.optBool("zero_point").value_or(true))
    fail(fields.where("zero_point"),
         "is false; Sol's int4 has zero points, and AutoAWQ's gemm "
         "checkpoints without them are not supported");
  config.notConverted = stringList(fields, "modules_to_not_convert");
  return config;
}

/// GPTQModel's `dynamic`: regular expressions over module names, in order,
/// "-:" ones leaving the modules they match unquantized, the others ("+:" or
/// no prefix) overriding the top-level settings, which Sol reads only where
/// they restate them.
std::vector<QuantizationConfig::DynamicRule>
dynamicRules(const JsonFields &fields, const QuantizationConfig &config) {
  const Json &dynamic = fields.at("dynamic");
  if (!dynamic.is_object())
    fail(fields.where("dynamic"), "must be an object of module patterns, got ",
         dynamic.dump());
  std::vector<QuantizationConfig::DynamicRule> rules;
  for (const auto &[key, overrides] : dynamic.items()) {
    QuantizationConfig::DynamicRule rule;
    rule.key = key;
    rule.skip = key.starts_with("-:");
    rule.pattern =
        key.starts_with("-:") || key.starts_with("+:") ? key.substr(2) : key;
    try {
      (void)std::regex(rule.pattern);
    } catch (const std::regex_error &e) {
      fail(fields.where("dynamic"), "has the pattern '", key,
           "', which is not a regular expression Sol can read (", e.what(),
           ")");
    }
    if (!overrides.is_object())
      fail(fields.where("dynamic"), "maps '", key, "' to ", overrides.dump(),
           "; expected an object of overrides");
    if (!rule.skip)
      for (const auto &[name, value] : overrides.items()) {
        const bool same =
            (name == "bits" && value == 4) ||
            (name == "group_size" && value.is_number_integer() &&
             (value.get<int64_t>() == config.groupSize ||
              (value.get<int64_t>() == -1 && config.groupSize == 0))) ||
            (name == "sym" && value == config.gptqSym) ||
            (name == "desc_act" && value == config.descAct);
        if (!same)
          fail(fields.where("dynamic"), "sets \"", name, "\": ", value.dump(),
               " for the modules matching '", key,
               "'; Sol reads one setting for every quantized module (the "
               "top-level bits, group_size, sym and desc_act), and only "
               "\"-:\" patterns that leave modules unquantized");
      }
    rules.push_back(std::move(rule));
  }
  return rules;
}

QuantizationConfig parseGptq(const JsonFields &fields) {
  QuantizationConfig config;
  config.method = QuantMethod::Gptq;
  requireFourBits(fields, "GPTQ");
  config.groupSize = groupSize(fields, /*wholeRowAllowed=*/true);
  const std::string format =
      fields.optString("checkpoint_format").value_or("gptq");
  if (format == "gptq_v2")
    config.gptqV2 = true;
  else if (format != "gptq")
    fail(fields.where("checkpoint_format"), "is \"", format,
         "\"; Sol reads the \"gptq\" and \"gptq_v2\" formats (other formats "
         "repack the weights for one kernel)");
  if (fields.optBool("is_marlin_format").value_or(false))
    fail(fields.where("is_marlin_format"),
         "is true; Sol reads the \"gptq\" and \"gptq_v2\" formats, not "
         "Marlin's repacked weights");
  config.gptqSym = fields.optBool("sym").value_or(true);
  config.descAct = fields.optBool("desc_act").value_or(false);
  if (fields.optBool("lm_head").value_or(false))
    fail(fields.where("lm_head"),
         "is true: the LM head is quantized, which Sol does not support yet "
         "(it runs the LM head in bf16); quantize without lm_head");
  if (fields.has("dynamic") && !fields.at("dynamic").is_null())
    config.dynamicRules = dynamicRules(fields, config);
  config.notConverted = stringList(fields, "modules_to_not_convert");
  if (fields.has("modules_in_block_to_quantize")) {
    const Json &lists = fields.at("modules_in_block_to_quantize");
    auto malformed = [&] {
      fail(fields.where("modules_in_block_to_quantize"),
           "must be a list of lists of module names, got ", lists.dump());
    };
    if (!lists.is_array())
      malformed();
    for (const Json &list : lists) {
      if (!list.is_array())
        malformed();
      for (const Json &name : list) {
        if (!name.is_string())
          malformed();
        config.blockModules.push_back(name.get<std::string>());
      }
    }
  }
  return config;
}

/// One compressed-tensors quantization-args object ("weights",
/// "input_activations").
struct QuantArgs {
  int64_t numBits = 0;
  std::string type, strategy;
  bool dynamic = false, symmetric = true;
};

QuantArgs quantArgs(const JsonFields &fields) {
  QuantArgs args;
  args.numBits = fields.requireInt("num_bits");
  args.type = fields.optString("type").value_or("int");
  args.strategy = fields.optString("strategy").value_or("tensor");
  args.dynamic = fields.optBool("dynamic").value_or(false);
  args.symmetric = fields.optBool("symmetric").value_or(true);
  return args;
}

QuantizationConfig parseCompressedTensors(const JsonFields &fields) {
  QuantizationConfig config;
  config.method = QuantMethod::CompressedTensorsFp8;
  const std::string &src = fields.source();
  const std::string prefix = fields.prefix();

  if (std::optional<std::string> status =
          fields.optString("quantization_status");
      status && *status != "compressed" && *status != "frozen")
    fail(fields.where("quantization_status"), "is \"", *status,
         "\": the weights were not saved quantized; export the model "
         "compressed");
  if (fields.has("sparsity_config") && !fields.at("sparsity_config").empty()) {
    const Json &sparsity = fields.at("sparsity_config");
    const bool dense = sparsity.is_object() && sparsity.contains("format") &&
                       sparsity["format"] == "dense";
    if (!dense)
      fail(fields.where("sparsity_config"),
           "describes sparse weights, which Sol does not import");
  }
  if (fields.has("kv_cache_scheme"))
    fail(fields.where("kv_cache_scheme"),
         "is set: a quantized KV cache with calibrated scales is not "
         "supported; Sol's fp8 KV cache (solc --kv-cache-dtype fp8) computes "
         "its scales at run time");

  const Json &groups = fields.at("config_groups");
  if (!groups.is_object() || groups.empty())
    fail(fields.where("config_groups"),
         "must be an object of config groups, "
         "got ",
         groups.dump());
  if (groups.size() != 1)
    fail(fields.where("config_groups"), "has ", groups.size(),
         " groups; Sol imports checkpoints whose linears share one scheme");
  const std::string groupName = groups.begin().key();
  if (!groups.begin().value().is_object())
    fail(fields.where("config_groups"), "entry \"", groupName,
         "\" must be an object");
  JsonFields group(groups.begin().value(), src,
                   prefix + "config_groups." + groupName + ".");

  const std::string format = fields.optString("format").value_or(
      group.optString("format").value_or("float-quantized"));
  if (format == "pack-quantized")
    fail(fields.where("format"),
         "is \"pack-quantized\" (int4/int8 weights packed into int32), "
         "which Sol does not import yet; supported: fp8 weights "
         "(\"float-quantized\")");
  if (format != "float-quantized" && format != "naive-quantized")
    fail(fields.where("format"), "is \"", format,
         "\", which Sol does not import; supported: fp8 weights "
         "(\"float-quantized\")");

  if (!group.has("weights") || !group.at("weights").is_object())
    fail(group.where("weights"), "must describe the weights' quantization");
  JsonFields weightFields(group.at("weights"), src,
                          group.prefix() + "weights.");
  const QuantArgs weights = quantArgs(weightFields);
  if (weights.type != "float" || weights.numBits != 8)
    fail(weightFields.where("type"), "and num_bits are \"", weights.type,
         "\" and ", weights.numBits,
         "; Sol imports compressed-tensors checkpoints with fp8 weights "
         "(type \"float\", num_bits 8) only");
  if (!weights.symmetric)
    fail(weightFields.where("symmetric"),
         "is false; fp8 weights are symmetric in Sol");
  if (weights.dynamic)
    fail(weightFields.where("dynamic"),
         "is true; Sol reads weights quantized ahead of time");
  if (weights.strategy == "channel") {
    config.fp8Strategy = Fp8Strategy::Channel;
  } else if (weights.strategy == "tensor") {
    config.fp8Strategy = Fp8Strategy::Tensor;
  } else if (weights.strategy == "block") {
    config.fp8Strategy = Fp8Strategy::Block;
    blockSize(weightFields, "block_structure", config);
  } else {
    fail(weightFields.where("strategy"), "is \"", weights.strategy,
         "\"; Sol imports fp8 weights with \"channel\", \"tensor\" or "
         "\"block\" scales (not group scales)");
  }

  if (group.has("input_activations")) {
    JsonFields input(group.at("input_activations"), src,
                     group.prefix() + "input_activations.");
    const QuantArgs act = quantArgs(input);
    if (act.type != "float" || act.numBits != 8)
      fail(input.where("type"), "and num_bits are \"", act.type, "\" and ",
           act.numBits, "; Sol's fp8 linears round activations to fp8");
    if (!act.dynamic)
      fail(input.where("dynamic"),
           "is false: static activation scales (input_scale) are not "
           "supported; Sol scales activations per token at run time "
           "(dynamic, strategy \"token\")");
    // Block-scaled weights import as bf16: the activations' grouping (per
    // token, or per group of a token, as block checkpoints have it) is moot.
    if (act.strategy != "token" &&
        !(config.fp8Strategy == Fp8Strategy::Block && act.strategy == "group"))
      fail(input.where("strategy"), "is \"", act.strategy,
           "\"; Sol scales activations per token (strategy \"token\")");
  }
  if (group.has("output_activations"))
    fail(group.where("output_activations"),
         "is set; Sol does not quantize the linears' outputs");

  for (const std::string &target : stringList(group, "targets"))
    if (target != "Linear")
      config.targets.push_back(target);
  config.notConverted = stringList(fields, "ignore");
  return config;
}

/// compressed-tensors' match of a module name against a target or an
/// ignore entry: the name itself, or "re:" and a pattern matched from the
/// start of the name (Python's re.match).
bool matchesName(std::string_view module, const std::string &entry) {
  if (!entry.starts_with("re:"))
    return module == entry;
  try {
    const std::regex pattern(entry.substr(3));
    return std::regex_search(std::string(module).c_str(), pattern,
                             std::regex_constants::match_continuous);
  } catch (const std::regex_error &e) {
    fail("quantization_config: the pattern '", entry,
         "' is not a regular expression Sol can read (", e.what(), ")");
  }
}

} // namespace

bool QuantizationConfig::quantizes(std::string_view module) const {
  if (method == QuantMethod::Fp8Blocks)
    return false;
  if (method == QuantMethod::Mxfp4) {
    // Transformers' mxfp4 quantizer replaces the experts' tensors only.
    if (!module.ends_with(".mlp.experts"))
      return false;
    const std::string dotted = cat(".", module, ".");
    return std::none_of(
        notConverted.begin(), notConverted.end(), [&](const std::string &key) {
          return dotted.find(cat(".", key, ".")) != std::string::npos;
        });
  }
  if (method == QuantMethod::CompressedTensorsFp8) {
    if (!targets.empty() &&
        std::none_of(targets.begin(), targets.end(),
                     [&](const auto &t) { return matchesName(module, t); }))
      return false;
    return std::none_of(
        notConverted.begin(), notConverted.end(),
        [&](const std::string &entry) { return matchesName(module, entry); });
  }
  // AutoAWQ and GPTQ quantize the decoder layers' linears, never the head.
  if (module == "lm_head")
    return false;
  // GPTQModel's dynamic rules: the first whose pattern matches decides
  // whether the module is left out.
  for (const DynamicRule &rule : dynamicRules)
    if (matchesName(module, "re:" + rule.pattern)) {
      if (rule.skip)
        return false;
      break;
    }
  const std::string dotted = cat(".", module, ".");
  if (!blockModules.empty() &&
      std::none_of(blockModules.begin(), blockModules.end(),
                   [&](const std::string &name) {
                     return dotted.ends_with(cat(".", name, "."));
                   }))
    return false;
  return std::none_of(
      notConverted.begin(), notConverted.end(), [&](const std::string &key) {
        return dotted.find(cat(".", key, ".")) != std::string::npos;
      });
}

std::string QuantizationConfig::describe() const {
  auto group = [&] {
    return groupSize ? cat("group size ", groupSize) : std::string("per row");
  };
  switch (method) {
  case QuantMethod::Awq:
    return cat("AutoAWQ int4 (", group(), ")");
  case QuantMethod::Gptq:
    return cat("GPTQ int4 (", group(), ", ", gptqV2 ? "gptq_v2" : "gptq",
               " format)");
  case QuantMethod::CompressedTensorsFp8:
    return cat("compressed-tensors fp8 (",
               fp8Strategy == Fp8Strategy::Channel ? std::string("per-channel")
               : fp8Strategy == Fp8Strategy::Tensor
                   ? std::string("per-tensor")
                   : cat(blockRows, " x ", blockCols, " block"),
               " weight scales)");
  case QuantMethod::Mxfp4:
    return "mxfp4 (4-bit E2M1 experts, an E8M0 scale per 32)";
  case QuantMethod::Fp8Blocks:
    return cat("fp8 (e4m3, a scale per ", blockRows, " x ", blockCols,
               " block)");
  }
  return "?";
}

void orderDynamicRules(QuantizationConfig &config,
                       const std::vector<std::string> &keys) {
  auto position = [&](const QuantizationConfig::DynamicRule &rule) {
    return std::find(keys.begin(), keys.end(), rule.key) - keys.begin();
  };
  std::stable_sort(
      config.dynamicRules.begin(), config.dynamicRules.end(),
      [&](const auto &a, const auto &b) { return position(a) < position(b); });
}

QuantizationConfig parseQuantizationConfig(const Json &object,
                                           std::string_view source) {
  if (!object.is_object())
    fail(source, ": field \"quantization_config\" must be an object, got ",
         object.dump());
  JsonFields fields(object, std::string(source), "quantization_config.");
  std::optional<std::string> method = fields.optString("quant_method");
  if (!method)
    fail(fields.where("quant_method"), "is missing; ", kSupported);
  if (*method == "awq")
    return parseAwq(fields);
  if (*method == "gptq")
    return parseGptq(fields);
  if (*method == "compressed-tensors")
    return parseCompressedTensors(fields);
  if (*method == "fp8")
    return parseFp8Blocks(fields);
  if (*method == "mxfp4") {
    QuantizationConfig config;
    config.method = QuantMethod::Mxfp4;
    config.groupSize = 32;
    config.notConverted = stringList(fields, "modules_to_not_convert");
    return config;
  }
  fail(fields.where("quant_method"), "is \"", *method,
       "\", which Sol cannot import; ", kSupported);
}

} // namespace sol::hf

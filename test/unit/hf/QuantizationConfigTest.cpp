//===- QuantizationConfigTest.cpp - quantization_config of config.json ----===//
//
// The formats Sol imports parse into QuantizationConfig; everything it
// cannot run is refused with a message naming the field and what would work.
// The quantization_config objects follow what AutoAWQ, GPTQModel and
// llm-compressor write.
//
//===----------------------------------------------------------------------===//

#include "frontend/hf/ModelConfig.h"

#include "test/unit/hf/ErrorMessage.h"

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

const char *kLlama = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
  "intermediate_size": 512, "num_attention_heads": 4, "num_hidden_layers": 2,
  "num_key_value_heads": 2, "vocab_size": 1000, "torch_dtype": "float16"})";

const char *kAwq = R"({"quant_method": "awq", "bits": 4, "group_size": 128,
  "zero_point": true, "version": "gemm", "modules_to_not_convert": null})";

const char *kGptq = R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
  "desc_act": false, "sym": true, "damp_percent": 0.01,
  "true_sequential": true, "checkpoint_format": "gptq", "lm_head": false,
  "meta": {"quantizer": ["gptqmodel:2.0.0"]}})";

const char *kFp8Dynamic = R"({
  "quant_method": "compressed-tensors", "format": "float-quantized",
  "quantization_status": "compressed", "global_compression_ratio": 1.24,
  "config_groups": {"group_0": {
    "targets": ["Linear"], "output_activations": null,
    "input_activations": {"num_bits": 8, "type": "float", "symmetric": true,
      "dynamic": true, "strategy": "token", "group_size": null,
      "observer": null, "actorder": null, "block_structure": null},
    "weights": {"num_bits": 8, "type": "float", "symmetric": true,
      "dynamic": false, "strategy": "channel", "group_size": null,
      "observer": "minmax", "actorder": null, "block_structure": null}}},
  "ignore": ["lm_head"], "kv_cache_scheme": null, "sparsity_config": {}})";

/// kLlama with `quantization` as its quantization_config.
ModelConfig parse(const Json &quantization) {
  Json config = Json::parse(kLlama);
  config["quantization_config"] = quantization;
  return parseModelConfig(config.dump(), "config.json");
}

/// The message parse() throws for `base` with `patch` merged into it.
std::string errorFor(const char *base, const Json &patch) {
  Json q = Json::parse(base);
  q.merge_patch(patch);
  return errorOf([&] { parse(q); });
}

TEST(QuantizationConfigTest, FloatCheckpointHasNone) {
  EXPECT_FALSE(parseModelConfig(kLlama, "config.json").quantization);
}

TEST(QuantizationConfigTest, AutoAwqGemm) {
  std::optional<QuantizationConfig> q = parse(Json::parse(kAwq)).quantization;
  ASSERT_TRUE(q);
  EXPECT_EQ(q->method, QuantMethod::Awq);
  EXPECT_EQ(q->groupSize, 128);
  EXPECT_EQ(q->groupSizeFor(4096), 128);
  EXPECT_TRUE(q->quantizes("model.layers.0.self_attn.q_proj"));
  // AutoAWQ never quantizes the LM head.
  EXPECT_FALSE(q->quantizes("lm_head"));
  EXPECT_EQ(q->describe(), "AutoAWQ int4 (group size 128)");
  // AutoAWQ's own spelling of the version is upper case.
  Json upper = Json::parse(kAwq);
  upper["version"] = "GEMM";
  EXPECT_TRUE(parse(upper).quantization);
}

TEST(QuantizationConfigTest, ModulesToNotConvertMatchWholeComponents) {
  Json awq = Json::parse(kAwq);
  awq["modules_to_not_convert"] = {"mlp.down_proj", "model.layers.1", "gate"};
  QuantizationConfig q = *parse(awq).quantization;
  EXPECT_FALSE(q.quantizes("model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(q.quantizes("model.layers.1.self_attn.q_proj"));
  EXPECT_TRUE(q.quantizes("model.layers.10.self_attn.q_proj"));
  // "gate" names a module (a router), not every name starting with it.
  EXPECT_TRUE(q.quantizes("model.layers.0.mlp.gate_proj"));
  EXPECT_FALSE(q.quantizes("model.layers.0.block_sparse_moe.gate"));
}

TEST(QuantizationConfigTest, AwqErrors) {
  EXPECT_THAT(errorFor(kAwq, {{"bits", 8}}),
              AllOf(HasSubstr("config.json: field "
                              "\"quantization_config.bits\" is 8"),
                    HasSubstr("4-bit weights only")));
  EXPECT_THAT(errorFor(kAwq, {{"version", "gemv"}}),
              AllOf(HasSubstr("\"quantization_config.version\" is \"gemv\""),
                    HasSubstr("\"gemm\" version only")));
  EXPECT_THAT(errorFor(kAwq, {{"zero_point", false}}),
              HasSubstr("\"quantization_config.zero_point\" is false"));
  EXPECT_THAT(errorFor(kAwq, {{"group_size", 7}}),
              AllOf(HasSubstr("\"quantization_config.group_size\" is 7"),
                    HasSubstr("positive even group size")));
  // AWQ has no whole-row groups.
  EXPECT_THAT(errorFor(kAwq, {{"group_size", -1}}),
              HasSubstr("group_size\" is -1"));
  EXPECT_THAT(errorFor(kAwq, {{"bits", nullptr}}),
              HasSubstr("\"quantization_config.bits\" is missing"));
}

TEST(QuantizationConfigTest, Gptq) {
  QuantizationConfig q = *parse(Json::parse(kGptq)).quantization;
  EXPECT_EQ(q.method, QuantMethod::Gptq);
  EXPECT_FALSE(q.gptqV2);
  EXPECT_TRUE(q.gptqSym);
  EXPECT_FALSE(q.descAct);

  Json v2 = Json::parse(kGptq);
  v2["checkpoint_format"] = "gptq_v2";
  v2["group_size"] = -1;
  v2["desc_act"] = true; // accepted here; the importer checks g_idx
  v2["sym"] = false;
  q = *parse(v2).quantization;
  EXPECT_TRUE(q.gptqV2);
  EXPECT_FALSE(q.gptqSym);
  EXPECT_TRUE(q.descAct);
  EXPECT_EQ(q.groupSize, 0);
  EXPECT_EQ(q.groupSizeFor(4096), 4096);
  EXPECT_EQ(q.describe(), "GPTQ int4 (per row, gptq_v2 format)");

  // transformers' modules_in_block_to_quantize: the others stay in float.
  Json some = Json::parse(kGptq);
  some["modules_in_block_to_quantize"] = {
      {"self_attn.q_proj", "self_attn.k_proj"}, {"mlp.down_proj"}};
  q = *parse(some).quantization;
  EXPECT_TRUE(q.quantizes("model.layers.3.self_attn.k_proj"));
  EXPECT_TRUE(q.quantizes("model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(q.quantizes("model.layers.0.self_attn.v_proj"));
  EXPECT_FALSE(q.quantizes("model.layers.0.mlp.up_proj"));

  // transformers' GPTQConfig leaves checkpoint_format out: the classic one.
  Json classic = Json::parse(kGptq);
  classic.erase("checkpoint_format");
  EXPECT_FALSE(parse(classic).quantization->gptqV2);
}

// GPTQModel's dynamic rules: "-:" patterns leave what they match (from the
// start of the name) unquantized, the first matching rule decides, and
// positive rules may restate the top-level settings.
TEST(QuantizationConfigTest, GptqDynamicRules) {
  Json json = Json::parse(kGptq);
  json["dynamic"] = {
      {"+:.*\\.0\\.mlp\\.down_proj", {{"bits", 4}, {"group_size", 128}}},
      {"-:.*mlp\\.(gate|down_proj)$", Json::object()},
      {"-:model\\.layers\\.[1-9]\\d*\\.", Json::object()}};
  const QuantizationConfig q = *parse(json).quantization;
  ASSERT_EQ(q.dynamicRules.size(), 3u);
  EXPECT_TRUE(q.quantizes("model.layers.0.self_attn.q_proj"));
  EXPECT_TRUE(q.quantizes("model.layers.0.mlp.down_proj")); // the first rule
  EXPECT_FALSE(q.quantizes("model.layers.0.mlp.gate"));
  EXPECT_TRUE(q.quantizes("model.layers.0.mlp.gate_proj"));
  EXPECT_FALSE(q.quantizes("model.layers.12.self_attn.q_proj"));
  EXPECT_FALSE(q.quantizes("lm_head"));
  json["dynamic"] = nullptr;
  EXPECT_TRUE(parse(json).quantization->dynamicRules.empty());
}

TEST(QuantizationConfigTest, GptqErrors) {
  EXPECT_THAT(errorFor(kGptq, {{"bits", 3}}),
              AllOf(HasSubstr("\"quantization_config.bits\" is 3"),
                    HasSubstr("GPTQ checkpoints with 4-bit weights only")));
  EXPECT_THAT(errorFor(kGptq, {{"bits", 8}}), HasSubstr("bits\" is 8"));
  EXPECT_THAT(errorFor(kGptq, {{"checkpoint_format", "marlin"}}),
              AllOf(HasSubstr("\"quantization_config.checkpoint_format\" is "
                              "\"marlin\""),
                    HasSubstr("\"gptq\" and \"gptq_v2\"")));
  EXPECT_THAT(errorFor(kGptq, {{"is_marlin_format", true}}),
              HasSubstr("is_marlin_format\" is true"));
  EXPECT_THAT(errorFor(kGptq, {{"lm_head", true}}),
              AllOf(HasSubstr("\"quantization_config.lm_head\" is true"),
                    HasSubstr("LM head is quantized")));
  EXPECT_THAT(
      errorFor(kGptq, {{"dynamic", {{"+:.*down_proj", {{"bits", 8}}}}}}),
      AllOf(HasSubstr("\"quantization_config.dynamic\" sets "
                      "\"bits\": 8 for the modules matching "
                      "'+:.*down_proj'"),
            HasSubstr("only \"-:\" patterns")));
  EXPECT_THAT(errorFor(kGptq, {{"dynamic", {{"-:(", Json::object()}}}}),
              HasSubstr("has the pattern '-:(', which is not a regular "
                        "expression"));
  EXPECT_THAT(errorFor(kGptq, {{"dynamic", {1, 2}}}),
              HasSubstr("must be an object of module patterns"));
  EXPECT_THAT(errorFor(kGptq, {{"group_size", 0}}),
              HasSubstr("(or -1 for one group per row)"));
  EXPECT_THAT(errorFor(kGptq, {{"modules_in_block_to_quantize", {"mlp"}}}),
              HasSubstr("\"quantization_config.modules_in_block_to_quantize\" "
                        "must be a list of lists of module names"));
}

TEST(QuantizationConfigTest, CompressedTensorsFp8) {
  QuantizationConfig q = *parse(Json::parse(kFp8Dynamic)).quantization;
  EXPECT_EQ(q.method, QuantMethod::CompressedTensorsFp8);
  EXPECT_EQ(q.fp8Strategy, Fp8Strategy::Channel);
  EXPECT_THAT(q.notConverted, ElementsAre("lm_head"));
  EXPECT_TRUE(q.quantizes("model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(q.quantizes("lm_head"));
  EXPECT_EQ(q.describe(), "compressed-tensors fp8 (per-channel weight scales)");

  // Weight-only fp8, per-tensor scales; ignore patterns and named targets.
  Json tensor = Json::parse(kFp8Dynamic);
  Json &group = tensor["config_groups"]["group_0"];
  group["weights"]["strategy"] = "tensor";
  group.erase("input_activations");
  group["targets"] = {"re:.*self_attn\\..*_proj$", "Linear"};
  tensor["ignore"] = {"lm_head", "re:.*layers\\.1\\."};
  q = *parse(tensor).quantization;
  EXPECT_EQ(q.fp8Strategy, Fp8Strategy::Tensor);
  EXPECT_TRUE(q.quantizes("model.layers.0.self_attn.q_proj"));
  EXPECT_FALSE(q.quantizes("model.layers.0.mlp.up_proj"));
  EXPECT_FALSE(q.quantizes("model.layers.1.self_attn.q_proj"));

  // Block scales (RedHat's FP8-block checkpoints), activations per group.
  Json block = Json::parse(kFp8Dynamic);
  block["config_groups"]["group_0"]["weights"]["strategy"] = "block";
  block["config_groups"]["group_0"]["weights"]["block_structure"] = {128, 64};
  block["config_groups"]["group_0"]["input_activations"]["strategy"] = "group";
  block["config_groups"]["group_0"]["input_activations"]["group_size"] = 128;
  q = *parse(block).quantization;
  EXPECT_EQ(q.fp8Strategy, Fp8Strategy::Block);
  EXPECT_EQ(q.blockRows, 128);
  EXPECT_EQ(q.blockCols, 64);
  EXPECT_EQ(q.describe(),
            "compressed-tensors fp8 (128 x 64 block weight scales)");
}

TEST(QuantizationConfigTest, CompressedTensorsErrors) {
  auto weights = [](const Json &patch) {
    return Json{{"config_groups", {{"group_0", {{"weights", patch}}}}}};
  };
  auto input = [](const Json &patch) {
    return Json{
        {"config_groups", {{"group_0", {{"input_activations", patch}}}}}};
  };
  EXPECT_THAT(
      errorFor(kFp8Dynamic, {{"format", "pack-quantized"}}),
      AllOf(HasSubstr("\"quantization_config.format\" is \"pack-quantized\""),
            HasSubstr("int4/int8 weights packed into int32")));
  EXPECT_THAT(errorFor(kFp8Dynamic, {{"format", "int-quantized"}}),
              HasSubstr("format\" is \"int-quantized\""));
  EXPECT_THAT(
      errorFor(kFp8Dynamic, weights({{"type", "int"}, {"num_bits", 4}})),
      AllOf(HasSubstr("\"quantization_config.config_groups.group_0."
                      "weights.type\" and num_bits are \"int\" and 4"),
            HasSubstr("fp8 weights")));
  EXPECT_THAT(errorFor(kFp8Dynamic, weights({{"strategy", "group"}})),
              HasSubstr("weights.strategy\" is \"group\""));
  EXPECT_THAT(errorFor(kFp8Dynamic, weights({{"strategy", "block"}})),
              HasSubstr("block_structure\" is missing"));
  EXPECT_THAT(errorFor(kFp8Dynamic,
                       input({{"dynamic", false}, {"strategy", "tensor"}})),
              AllOf(HasSubstr("input_activations.dynamic\" is false"),
                    HasSubstr("static activation scales")));
  EXPECT_THAT(errorFor(kFp8Dynamic, input({{"strategy", "tensor"}})),
              HasSubstr("input_activations.strategy\" is \"tensor\""));
  EXPECT_THAT(errorFor(kFp8Dynamic, {{"kv_cache_scheme",
                                      {{"num_bits", 8}, {"type", "float"}}}}),
              HasSubstr("\"quantization_config.kv_cache_scheme\" is set"));
  EXPECT_THAT(errorFor(kFp8Dynamic, {{"sparsity_config",
                                      {{"format", "sparse-24-bitmask"}}}}),
              HasSubstr("sparse weights"));
  EXPECT_THAT(
      errorFor(kFp8Dynamic, {{"config_groups", {{"group_1", Json::object()}}}}),
      HasSubstr("has 2 groups"));
  EXPECT_THAT(errorFor(kFp8Dynamic, {{"quantization_status", "initialized"}}),
              HasSubstr("quantization_status\" is \"initialized\": the "
                        "weights were not saved quantized"));
}

TEST(QuantizationConfigTest, Mxfp4QuantizesExpertsOnly) {
  QuantizationConfig q =
      *parse(Json{{"quant_method", "mxfp4"},
                  {"modules_to_not_convert",
                   {"model.layers.*.self_attn", "model.layers.*.mlp.router",
                    "lm_head"}}})
           .quantization;
  EXPECT_EQ(q.method, QuantMethod::Mxfp4);
  EXPECT_EQ(q.groupSize, 32);
  EXPECT_TRUE(q.quantizes("model.layers.0.mlp.experts"));
  EXPECT_FALSE(q.quantizes("model.layers.0.mlp.router"));
  EXPECT_FALSE(q.quantizes("model.layers.0.self_attn.q_proj"));
  EXPECT_FALSE(q.quantizes("lm_head"));
  EXPECT_THAT(q.describe(), HasSubstr("mxfp4"));
  // A module named in modules_to_not_convert stays float.
  q = *parse(Json{{"quant_method", "mxfp4"},
                  {"modules_to_not_convert", {"model.layers.1"}}})
           .quantization;
  EXPECT_TRUE(q.quantizes("model.layers.0.mlp.experts"));
  EXPECT_FALSE(q.quantizes("model.layers.1.mlp.experts"));
}

// Transformers' fine-grained fp8 (Qwen3-FP8's config): a scale per block,
// imported as float, so no linear is "quantized" in Sol's sense.
TEST(QuantizationConfigTest, Fp8Blocks) {
  const Json fp8 = {{"quant_method", "fp8"},
                    {"activation_scheme", "dynamic"},
                    {"fmt", "e4m3"},
                    {"weight_block_size", {128, 64}}};
  const QuantizationConfig q = *parse(fp8).quantization;
  EXPECT_EQ(q.method, QuantMethod::Fp8Blocks);
  EXPECT_EQ(q.blockRows, 128);
  EXPECT_EQ(q.blockCols, 64);
  EXPECT_FALSE(q.quantizes("model.layers.0.self_attn.q_proj"));
  EXPECT_THAT(q.describe(), HasSubstr("a scale per 128 x 64 block"));

  auto errorWith = [&](const Json &patch) {
    Json config = fp8;
    config.merge_patch(patch);
    return errorOf([&] { parse(config); });
  };
  EXPECT_THAT(errorWith({{"activation_scheme", "static"}}),
              AllOf(HasSubstr("\"quantization_config.activation_scheme\" is "
                              "\"static\""),
                    HasSubstr("dynamic activation scales only")));
  EXPECT_THAT(errorWith({{"fmt", "e5m2"}}),
              HasSubstr("\"quantization_config.fmt\" is \"e5m2\""));
  EXPECT_THAT(errorWith({{"weight_block_size", nullptr}}),
              AllOf(HasSubstr("weight_block_size\" is missing"),
                    HasSubstr("rows and columns of a block")));
  EXPECT_THAT(errorWith({{"weight_block_size", {128}}}),
              HasSubstr("must be two positive integers"));
  EXPECT_THAT(errorWith({{"weight_block_size", {128, 0}}}),
              HasSubstr("must be two positive integers"));
}

TEST(QuantizationConfigTest, UnknownMethod) {
  EXPECT_THAT(errorOf([] {
                parse(Json{{"quant_method", "bitsandbytes"}});
              }),
              AllOf(HasSubstr("config.json: field "
                              "\"quantization_config.quant_method\" is "
                              "\"bitsandbytes\", which Sol cannot import"),
                    HasSubstr("awq"), HasSubstr("gptq"),
                    HasSubstr("compressed-tensors"),
                    HasSubstr("solc --quant")));
  EXPECT_THAT(errorOf([] {
                parse(Json{{"bits", 4}});
              }),
              HasSubstr("\"quantization_config.quant_method\" is missing"));
  EXPECT_THAT(errorOf([] { parse(Json("awq")); }),
              HasSubstr("\"quantization_config\" must be an object"));
}

} // namespace
} // namespace sol::hf

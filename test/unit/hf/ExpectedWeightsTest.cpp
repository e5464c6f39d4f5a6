//===- ExpectedWeightsTest.cpp - Weight lists and checkpoint checks -------===//

#include "frontend/hf/ExpectedWeights.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/hf/SafetensorsWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace sol::hf {
namespace {

using test::errorOf;
using test::TempDir;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

ModelConfig tinyConfig(Architecture arch) {
  ModelConfig config;
  config.architecture = arch;
  config.hiddenSize = 32;
  config.intermediateSize = 48;
  config.numHiddenLayers = 2;
  config.numAttentionHeads = 4;
  config.numKeyValueHeads = 2;
  config.headDim = 8;
  config.vocabSize = 64;
  config.qkvBias = arch == Architecture::Qwen2;
  config.qkNorm = arch == Architecture::Qwen3;
  return config;
}

const ExpectedTensor *findExpected(const std::vector<ExpectedTensor> &list,
                                   std::string_view name) {
  auto it =
      std::find_if(list.begin(), list.end(),
                   [&](const ExpectedTensor &t) { return t.name == name; });
  return it == list.end() ? nullptr : &*it;
}

std::vector<int64_t> shapeOf(const std::vector<ExpectedTensor> &list,
                             std::string_view name) {
  const ExpectedTensor *tensor = findExpected(list, name);
  EXPECT_NE(tensor, nullptr) << name;
  return tensor ? tensor->shape : std::vector<int64_t>{};
}

using Shape = std::vector<int64_t>;

TEST(ExpectedWeightsTest, LlamaNamesAndShapes) {
  std::vector<ExpectedTensor> list =
      expectedWeights(tinyConfig(Architecture::Llama));
  // embed + 2 x (2 norms + 4 attn + 3 mlp) + norm + lm_head
  EXPECT_EQ(list.size(), 1u + 2u * 9u + 2u);
  EXPECT_EQ(list.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(list.back().name, "lm_head.weight");
  EXPECT_EQ(shapeOf(list, "model.embed_tokens.weight"), (Shape{64, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.1.input_layernorm.weight"),
            (Shape{32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.self_attn.q_proj.weight"),
            (Shape{32, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.self_attn.k_proj.weight"),
            (Shape{16, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.self_attn.v_proj.weight"),
            (Shape{16, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.self_attn.o_proj.weight"),
            (Shape{32, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.1.mlp.gate_proj.weight"),
            (Shape{48, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.1.mlp.up_proj.weight"),
            (Shape{48, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.1.mlp.down_proj.weight"),
            (Shape{32, 48}));
  EXPECT_EQ(shapeOf(list, "model.layers.1.post_attention_layernorm.weight"),
            (Shape{32}));
  EXPECT_EQ(shapeOf(list, "model.norm.weight"), (Shape{32}));
  EXPECT_EQ(shapeOf(list, "lm_head.weight"), (Shape{64, 32}));
  EXPECT_EQ(findExpected(list, "model.layers.2.input_layernorm.weight"),
            nullptr);
  EXPECT_EQ(findExpected(list, "model.layers.0.self_attn.q_proj.bias"),
            nullptr);
}

// Fine-grained fp8: every matrix but the embedding may be e4m3 codes with
// an optional scale per (partial) block; norms stay float.
TEST(ExpectedWeightsTest, Fp8BlocksAllowCodesAndBlockScales) {
  ModelConfig config = tinyConfig(Architecture::Llama);
  QuantizationConfig q;
  q.method = QuantMethod::Fp8Blocks;
  q.blockRows = 16;
  q.blockCols = 24;
  config.quantization = q;
  const std::vector<ExpectedTensor> list = expectedWeights(config);
  const ExpectedTensor *down =
      findExpected(list, "model.layers.1.mlp.down_proj.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_THAT(down->dtypes, Contains(DType::F8E4M3));
  EXPECT_THAT(down->dtypes, Contains(DType::BF16));
  const ExpectedTensor *scales =
      findExpected(list, "model.layers.1.mlp.down_proj.weight_scale_inv");
  ASSERT_NE(scales, nullptr);
  EXPECT_EQ(scales->shape, (Shape{2, 2})); // [32, 48] in blocks of 16 x 24
  EXPECT_TRUE(scales->optional);
  EXPECT_EQ(shapeOf(list, "lm_head.weight_scale_inv"), (Shape{4, 2}));
  EXPECT_TRUE(findExpected(list, "model.embed_tokens.weight")->dtypes.empty());
  EXPECT_EQ(findExpected(list, "model.embed_tokens.weight_scale_inv"), nullptr);
  EXPECT_TRUE(findExpected(list, "model.layers.0.input_layernorm.weight")
                  ->dtypes.empty());
}

TEST(ExpectedWeightsTest, BiasesNormsAndTying) {
  ModelConfig qwen2 = tinyConfig(Architecture::Qwen2);
  qwen2.tieWordEmbeddings = true;
  std::vector<ExpectedTensor> list = expectedWeights(qwen2);
  EXPECT_EQ(shapeOf(list, "model.layers.0.self_attn.q_proj.bias"), (Shape{32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.self_attn.k_proj.bias"), (Shape{16}));
  EXPECT_EQ(findExpected(list, "model.layers.0.self_attn.o_proj.bias"),
            nullptr);
  EXPECT_EQ(findExpected(list, "lm_head.weight"), nullptr);
  EXPECT_EQ(list.back().name, "model.norm.weight");

  ModelConfig qwen3 = tinyConfig(Architecture::Qwen3);
  list = expectedWeights(qwen3);
  EXPECT_EQ(shapeOf(list, "model.layers.1.self_attn.q_norm.weight"),
            (Shape{8}));
  EXPECT_EQ(shapeOf(list, "model.layers.1.self_attn.k_norm.weight"),
            (Shape{8}));

  ModelConfig llama = tinyConfig(Architecture::Llama);
  llama.qkvBias = llama.oProjBias = llama.mlpBias = true;
  list = expectedWeights(llama);
  EXPECT_EQ(shapeOf(list, "model.layers.0.self_attn.o_proj.bias"), (Shape{32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.gate_proj.bias"), (Shape{48}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.down_proj.bias"), (Shape{32}));
}

/// A checkpoint directory holding `tensors` (zero-filled).
class CheckWeightsTest : public ::testing::Test {
protected:
  /// Float tensors get `dtype`, the others the first dtype they may have.
  void write(const std::vector<ExpectedTensor> &tensors,
             const std::string &dtype = "BF16") {
    std::vector<test::TensorData> data;
    for (const ExpectedTensor &tensor : tensors) {
      int64_t elements = 1;
      for (int64_t d : tensor.shape)
        elements *= d;
      const std::string name = tensor.dtypes.empty()
                                   ? dtype
                                   : std::string(dtypeName(tensor.dtypes[0]));
      data.push_back(
          {tensor.name, name, tensor.shape,
           std::string(*dtypeStorageBytes(*parseDType(name), elements), '\0')});
    }
    test::writeFile(dir / "model.safetensors", test::validSafetensors(data));
  }
  std::string checkError(const ModelConfig &config) {
    Checkpoint checkpoint = Checkpoint::open(dir.path());
    return errorOf([&] { checkWeights(checkpoint, config); });
  }

  TempDir dir;
};

TEST_F(CheckWeightsTest, AcceptsMatchingCheckpointWithExtras) {
  ModelConfig config = tinyConfig(Architecture::Qwen3);
  std::vector<ExpectedTensor> tensors = expectedWeights(config);
  tensors.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", {4}});
  write(tensors);
  Checkpoint checkpoint = Checkpoint::open(dir.path());
  EXPECT_NO_THROW(checkWeights(checkpoint, config));

  // A tied model may still ship lm_head.weight; it is ignored.
  config.tieWordEmbeddings = true;
  EXPECT_NO_THROW(checkWeights(checkpoint, config));

  write(expectedWeights(config), "F32");
  EXPECT_NO_THROW(checkWeights(Checkpoint::open(dir.path()), config));
}

TEST_F(CheckWeightsTest, ShapeMismatchNamesTensorAndBothShapes) {
  ModelConfig config = tinyConfig(Architecture::Llama);
  std::vector<ExpectedTensor> tensors = expectedWeights(config);
  for (ExpectedTensor &tensor : tensors)
    if (tensor.name == "model.layers.1.self_attn.k_proj.weight")
      tensor.shape = {32, 32};
  write(tensors);
  EXPECT_THAT(checkError(config),
              AllOf(HasSubstr("tensor 'model.layers.1.self_attn.k_proj.weight' "
                              "has shape [32, 32] but config.json "
                              "(LlamaForCausalLM) needs [16, 32]"),
                    HasSubstr(dir.path().string())));
}

TEST_F(CheckWeightsTest, MissingTensorsAreNamedAndCounted) {
  ModelConfig config = tinyConfig(Architecture::Qwen2);
  std::vector<ExpectedTensor> tensors = expectedWeights(config);
  std::erase_if(tensors, [](const ExpectedTensor &t) {
    return t.name.find(".bias") != std::string::npos;
  });
  write(tensors);
  EXPECT_THAT(checkError(config),
              AllOf(HasSubstr("lacks 6 tensors that Qwen2ForCausalLM needs"),
                    HasSubstr("'model.layers.0.self_attn.q_proj.bias'"),
                    HasSubstr("'model.layers.1.self_attn.k_proj.bias'"),
                    Not(HasSubstr("'model.layers.1.self_attn.v_proj.bias'")),
                    HasSubstr("and 1 more")));
}

TEST_F(CheckWeightsTest, MissingLmHeadSuggestsTying) {
  ModelConfig config = tinyConfig(Architecture::Llama);
  std::vector<ExpectedTensor> tensors = expectedWeights(config);
  tensors.pop_back(); // lm_head.weight
  write(tensors);
  EXPECT_THAT(checkError(config),
              AllOf(HasSubstr("lacks 1 tensor that LlamaForCausalLM needs: "
                              "'lm_head.weight'"),
                    HasSubstr("\"tie_word_embeddings\": true")));
}

TEST_F(CheckWeightsTest, RejectsNonFloatDtype) {
  ModelConfig config = tinyConfig(Architecture::Mistral);
  write(expectedWeights(config), "I8");
  EXPECT_THAT(checkError(config),
              HasSubstr("tensor 'model.embed_tokens.weight' has dtype I8; "
                        "expected BF16, F16 or F32"));
}

// A mixture's router and each expert's projections replace a sparse layer's
// MLP; a dense layer (Qwen3-MoE's mlp_only_layers) keeps gate/up/down.
TEST(ExpectedWeightsTest, MixtureOfExpertsLayers) {
  ModelConfig config = tinyConfig(Architecture::Qwen3Moe);
  config.numExperts = 4, config.expertsPerToken = 2;
  config.expertIntermediateSize = 16;
  config.sparseLayers = {true, false};
  const std::vector<ExpectedTensor> list = expectedWeights(config);
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.gate.weight"), (Shape{4, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.experts.3.gate_proj.weight"),
            (Shape{16, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.experts.0.down_proj.weight"),
            (Shape{32, 16}));
  EXPECT_EQ(findExpected(list, "model.layers.0.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(shapeOf(list, "model.layers.1.mlp.gate_proj.weight"),
            (Shape{48, 32}));
  EXPECT_EQ(findExpected(list, "model.layers.1.mlp.gate.weight"), nullptr);

  config.architecture = Architecture::Mixtral;
  EXPECT_EQ(shapeOf(expectedWeights(config),
                    "model.layers.0.block_sparse_moe.experts.2.w2.weight"),
            (Shape{32, 16}));

  // Quantized experts are linears in the checkpoint's format; the router
  // stays a float weight.
  config.quantization = QuantizationConfig{};
  config.quantization->method = QuantMethod::Awq;
  config.quantization->groupSize = 16;
  const std::vector<ExpectedTensor> awq = expectedWeights(config);
  const std::string w2 = "model.layers.0.block_sparse_moe.experts.2.w2";
  EXPECT_EQ(findExpected(awq, w2 + ".weight"), nullptr);
  EXPECT_EQ(shapeOf(awq, w2 + ".qweight"), (Shape{16, 4}));
  EXPECT_EQ(shapeOf(awq, w2 + ".scales"), (Shape{1, 32}));
  EXPECT_EQ(shapeOf(awq, "model.layers.0.block_sparse_moe.experts.3.w1.qzeros"),
            (Shape{2, 2}));
  const ExpectedTensor *router =
      findExpected(awq, "model.layers.0.block_sparse_moe.gate.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_TRUE(router->dtypes.empty());
}

TEST(ExpectedWeightsTest, GptOssExpertsSinksAndBiases) {
  ModelConfig config = tinyConfig(Architecture::GptOss);
  config.numExperts = 4, config.expertsPerToken = 2;
  config.expertIntermediateSize = 64;
  config.sparseLayers = {true, true};
  config.expertBiases = config.stackedExperts = config.attentionSinks = true;
  config.qkvBias = config.oProjBias = true;
  std::vector<ExpectedTensor> list = expectedWeights(config);
  const std::string p = "model.layers.1.";
  EXPECT_EQ(shapeOf(list, p + "self_attn.sinks"), (Shape{4}));
  EXPECT_EQ(shapeOf(list, p + "self_attn.o_proj.bias"), (Shape{32}));
  EXPECT_EQ(shapeOf(list, p + "mlp.router.weight"), (Shape{4, 32}));
  EXPECT_EQ(shapeOf(list, p + "mlp.router.bias"), (Shape{4}));
  // Inputs first: [E, H, 2I] and [E, I, H].
  EXPECT_EQ(shapeOf(list, p + "mlp.experts.gate_up_proj"), (Shape{4, 32, 128}));
  EXPECT_EQ(shapeOf(list, p + "mlp.experts.down_proj"), (Shape{4, 64, 32}));
  EXPECT_EQ(shapeOf(list, p + "mlp.experts.gate_up_proj_bias"),
            (Shape{4, 128}));
  EXPECT_EQ(shapeOf(list, p + "mlp.experts.down_proj_bias"), (Shape{4, 32}));
  EXPECT_EQ(findExpected(list, p + "mlp.experts.0.gate_proj.weight"), nullptr);

  // MXFP4: rows are outputs, 16 bytes (32 values) per scale.
  QuantizationConfig q;
  q.method = QuantMethod::Mxfp4;
  q.groupSize = 32;
  config.quantization = q;
  list = expectedWeights(config);
  const ExpectedTensor *blocks =
      findExpected(list, p + "mlp.experts.gate_up_proj_blocks");
  ASSERT_NE(blocks, nullptr);
  EXPECT_EQ(blocks->shape, (Shape{4, 128, 1, 16}));
  EXPECT_EQ(blocks->dtypes, std::vector<DType>{DType::U8});
  EXPECT_EQ(shapeOf(list, p + "mlp.experts.down_proj_scales"),
            (Shape{4, 32, 2}));
  EXPECT_EQ(findExpected(list, p + "mlp.experts.gate_up_proj"), nullptr);
  EXPECT_EQ(shapeOf(list, p + "self_attn.q_proj.weight"), (Shape{32, 32}));

  config.expertIntermediateSize = 48;
  EXPECT_THAT(errorOf([&] { expectedWeights(config); }),
              HasSubstr("mxfp4 experts pack 32 values per scale"));
  // Its experts are parameters, not linears: AWQ or GPTQ cannot hold them.
  config.expertIntermediateSize = 64;
  config.quantization->method = QuantMethod::Awq;
  EXPECT_THAT(errorOf([&] { expectedWeights(config); }),
              HasSubstr("whose experts are stacked parameters rather than "
                        "linears"));
  ModelConfig llama = tinyConfig(Architecture::Llama);
  llama.quantization = q;
  EXPECT_THAT(errorOf([&] { expectedWeights(llama); }),
              HasSubstr("is gpt-oss's format for its experts; Sol imports it "
                        "for GptOssForCausalLM only, not LlamaForCausalLM"));
}

TEST(ExpectedWeightsTest, Qwen2MoeSharedExpert) {
  ModelConfig config = tinyConfig(Architecture::Qwen2Moe);
  config.numExperts = 4, config.expertsPerToken = 2;
  config.expertIntermediateSize = 16;
  config.sharedExpertIntermediateSize = 40;
  config.sparseLayers = {true, false};
  const std::vector<ExpectedTensor> list = expectedWeights(config);
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.experts.3.up_proj.weight"),
            (Shape{16, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.shared_expert.gate_proj.weight"),
            (Shape{40, 32}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.shared_expert.down_proj.weight"),
            (Shape{32, 40}));
  EXPECT_EQ(shapeOf(list, "model.layers.0.mlp.shared_expert_gate.weight"),
            (Shape{1, 32}));
  EXPECT_EQ(findExpected(list, "model.layers.1.mlp.shared_expert_gate.weight"),
            nullptr);
}

/// tinyConfig with `method`'s quantization_config (int4 groups of 16).
ModelConfig quantizedConfig(QuantMethod method) {
  ModelConfig config = tinyConfig(Architecture::Llama);
  QuantizationConfig q;
  q.method = method;
  q.groupSize = method == QuantMethod::CompressedTensorsFp8 ? 0 : 16;
  if (method == QuantMethod::CompressedTensorsFp8)
    q.notConverted = {"lm_head"};
  config.quantization = q;
  return config;
}

const ExpectedTensor &expectedTensor(const std::vector<ExpectedTensor> &list,
                                     std::string_view name) {
  const ExpectedTensor *tensor = findExpected(list, name);
  if (!tensor)
    ADD_FAILURE() << name << " is not expected";
  static const ExpectedTensor none;
  return tensor ? *tensor : none;
}

TEST(ExpectedWeightsTest, QuantizedLinearsHaveTheirFormatsTensors) {
  // q_proj: [32, 32]; down_proj: [32, 48].
  std::vector<ExpectedTensor> awq =
      expectedWeights(quantizedConfig(QuantMethod::Awq));
  EXPECT_EQ(findExpected(awq, "model.layers.0.self_attn.q_proj.weight"),
            nullptr);
  const ExpectedTensor &qweight =
      expectedTensor(awq, "model.layers.0.self_attn.q_proj.qweight");
  EXPECT_EQ(qweight.shape, (Shape{32, 4}));
  EXPECT_EQ(qweight.dtypes, std::vector<DType>{DType::I32});
  EXPECT_EQ(shapeOf(awq, "model.layers.0.mlp.down_proj.qzeros"), (Shape{3, 4}));
  EXPECT_EQ(expectedTensor(awq, "model.layers.0.mlp.down_proj.scales").dtypes,
            std::vector<DType>{DType::F16});
  EXPECT_EQ(shapeOf(awq, "model.layers.0.mlp.down_proj.scales"),
            (Shape{3, 32}));
  // Embeddings, norms and the LM head stay in float.
  EXPECT_TRUE(expectedTensor(awq, "lm_head.weight").dtypes.empty());

  std::vector<ExpectedTensor> gptq =
      expectedWeights(quantizedConfig(QuantMethod::Gptq));
  EXPECT_EQ(shapeOf(gptq, "model.layers.0.mlp.down_proj.qweight"),
            (Shape{6, 32}));
  EXPECT_TRUE(
      expectedTensor(gptq, "model.layers.0.mlp.down_proj.g_idx").optional);

  std::vector<ExpectedTensor> fp8 =
      expectedWeights(quantizedConfig(QuantMethod::CompressedTensorsFp8));
  EXPECT_EQ(expectedTensor(fp8, "model.layers.1.mlp.up_proj.weight").dtypes,
            std::vector<DType>{DType::F8E4M3});
  const ExpectedTensor &scale =
      expectedTensor(fp8, "model.layers.1.mlp.up_proj.weight_scale");
  EXPECT_EQ(scale.shape, (Shape{48, 1}));
  EXPECT_EQ(scale.otherShapes, std::vector<Shape>{Shape{48}});
}

TEST(ExpectedWeightsTest, GroupSizeMustFitEveryLinear) {
  ModelConfig config = quantizedConfig(QuantMethod::Awq);
  config.quantization->groupSize = 32;
  EXPECT_THAT(errorOf([&] { expectedWeights(config); }),
              HasSubstr("quantization_config.group_size 32 does not divide "
                        "the 48 input features of "
                        "model.layers.0.mlp.down_proj"));
  // k_proj and v_proj with 4 outputs cannot be packed eight to a word.
  config.quantization->groupSize = 16;
  config.numAttentionHeads = 8;
  config.numKeyValueHeads = 1;
  config.headDim = 4;
  EXPECT_THAT(errorOf([&] { expectedWeights(config); }),
              HasSubstr("model.layers.0.self_attn.k_proj is [4, 32]: AutoAWQ "
                        "int4 (group size 16) packs eight 4-bit values into "
                        "each int32"));
}

TEST_F(CheckWeightsTest, AcceptsQuantizedCheckpoints) {
  for (QuantMethod method : {QuantMethod::Awq, QuantMethod::Gptq,
                             QuantMethod::CompressedTensorsFp8}) {
    ModelConfig config = quantizedConfig(method);
    std::vector<ExpectedTensor> tensors = expectedWeights(config);
    // GPTQ's g_idx is optional.
    std::erase_if(tensors, [](const ExpectedTensor &t) {
      return t.name == "model.layers.0.self_attn.q_proj.g_idx";
    });
    write(tensors);
    EXPECT_NO_THROW(checkWeights(Checkpoint::open(dir.path()), config));
  }
}

TEST_F(CheckWeightsTest, QuantizedTensorErrorsSayWhatToDo) {
  ModelConfig config = quantizedConfig(QuantMethod::Awq);
  std::vector<ExpectedTensor> tensors = expectedWeights(config);
  for (ExpectedTensor &t : tensors)
    if (t.name == "model.layers.1.mlp.up_proj.qweight")
      t.dtypes = {DType::F32};
  write(tensors);
  EXPECT_THAT(checkError(config),
              HasSubstr("tensor 'model.layers.1.mlp.up_proj.qweight' has "
                        "dtype F32; expected I32"));

  // A module the config quantizes but the checkpoint keeps in float.
  tensors = expectedWeights(config);
  std::erase_if(tensors, [](const ExpectedTensor &t) {
    return t.name.starts_with("model.layers.0.mlp.down_proj.");
  });
  tensors.push_back({"model.layers.0.mlp.down_proj.weight", {32, 48}});
  write(tensors);
  EXPECT_THAT(checkError(config),
              AllOf(HasSubstr("lacks 3 tensors"),
                    HasSubstr("'model.layers.0.mlp.down_proj.qweight'"),
                    HasSubstr("the checkpoint has "
                              "'model.layers.0.mlp.down_proj.weight' instead"),
                    HasSubstr("modules_to_not_convert")));

  config = quantizedConfig(QuantMethod::CompressedTensorsFp8);
  tensors = expectedWeights(config);
  for (ExpectedTensor &t : tensors)
    if (t.name == "model.layers.0.mlp.gate_proj.weight")
      t.dtypes = {};
  write(tensors);
  EXPECT_THAT(checkError(config),
              AllOf(HasSubstr("tensor 'model.layers.0.mlp.gate_proj.weight' "
                              "has dtype BF16; expected F8_E4M3"),
                    HasSubstr("list it in ignore")));

  // An fp8 LM head, which the config does not leave out.
  tensors = expectedWeights(config);
  for (ExpectedTensor &t : tensors)
    if (t.name == "lm_head.weight")
      t.dtypes = {DType::F8E4M3};
  write(tensors);
  EXPECT_THAT(checkError(config),
              AllOf(HasSubstr("tensor 'lm_head.weight' has dtype F8_E4M3"),
                    HasSubstr("a quantized LM head is not supported yet")));
}

} // namespace
} // namespace sol::hf

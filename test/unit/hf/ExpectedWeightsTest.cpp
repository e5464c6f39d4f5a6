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
  void write(const std::vector<ExpectedTensor> &tensors,
             const std::string &dtype = "BF16") {
    std::vector<test::TensorData> data;
    int bytesPerElement = dtype == "F32" ? 4 : dtype == "I8" ? 1 : 2;
    for (const ExpectedTensor &tensor : tensors) {
      int64_t elements = 1;
      for (int64_t d : tensor.shape)
        elements *= d;
      data.push_back({tensor.name, dtype, tensor.shape,
                      std::string(size_t(elements * bytesPerElement), '\0')});
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

} // namespace
} // namespace sol::hf

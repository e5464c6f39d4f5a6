//===- GenerationConfigTest.cpp - generation_config.json ------------------===//

#include "frontend/hf/GenerationConfig.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/hf/SafetensorsWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sol::hf {
namespace {

using test::errorOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Llama-3.1-8B-Instruct's generation_config.json.
const char *kLlama31 = R"({
  "bos_token_id": 128000, "do_sample": true,
  "eos_token_id": [128001, 128008, 128009], "temperature": 0.6,
  "top_p": 0.9, "transformers_version": "4.42.3"})";

// Qwen2.5-Instruct's.
const char *kQwen25 = R"({
  "bos_token_id": 151643, "pad_token_id": 151643, "do_sample": true,
  "eos_token_id": [151645, 151643], "repetition_penalty": 1.05,
  "temperature": 0.7, "top_p": 0.8, "top_k": 20,
  "transformers_version": "4.37.0"})";

std::string generationError(const std::string &text) {
  return errorOf([&] { parseGenerationConfig(text, "gen.json"); });
}

TEST(GenerationConfigTest, ParsesLlamaAndQwen) {
  GenerationConfig llama = parseGenerationConfig(kLlama31, "gen.json");
  EXPECT_THAT(llama.eosTokenIds, ElementsAre(128001, 128008, 128009));
  EXPECT_EQ(llama.bosTokenId, 128000);
  EXPECT_EQ(llama.doSample, true);
  EXPECT_DOUBLE_EQ(*llama.temperature, 0.6);
  EXPECT_DOUBLE_EQ(*llama.topP, 0.9);
  EXPECT_FALSE(llama.topK);
  EXPECT_FALSE(llama.padTokenId);
  EXPECT_FALSE(llama.repetitionPenalty);
  EXPECT_FALSE(llama.maxNewTokens);

  GenerationConfig qwen = parseGenerationConfig(kQwen25, "gen.json");
  EXPECT_THAT(qwen.eosTokenIds, ElementsAre(151645, 151643));
  EXPECT_EQ(qwen.padTokenId, 151643);
  EXPECT_EQ(qwen.topK, 20);
  EXPECT_DOUBLE_EQ(*qwen.repetitionPenalty, 1.05);
}

TEST(GenerationConfigTest, AcceptsSingleEosAndLengths) {
  GenerationConfig config = parseGenerationConfig(
      R"({"eos_token_id": 2, "max_new_tokens": 256, "max_length": 4096,
          "temperature": null})",
      "gen.json");
  EXPECT_THAT(config.eosTokenIds, ElementsAre(2));
  EXPECT_EQ(config.maxNewTokens, 256);
  EXPECT_EQ(config.maxLength, 4096);
  EXPECT_FALSE(config.temperature);
  EXPECT_TRUE(parseGenerationConfig("{}", "gen.json").eosTokenIds.empty());
}

TEST(GenerationConfigTest, BadValuesAreNamed) {
  EXPECT_THAT(generationError(R"({"top_p": 1.5})"),
              HasSubstr("gen.json: field \"top_p\" must be in (0, 1]"));
  EXPECT_THAT(generationError(R"({"temperature": -1})"),
              HasSubstr("field \"temperature\" must be a number >= 0"));
  EXPECT_THAT(generationError(R"({"top_k": -5})"),
              HasSubstr("field \"top_k\" must be >= 0"));
  EXPECT_THAT(generationError(R"({"do_sample": "true"})"),
              HasSubstr("field \"do_sample\" must be true or false"));
  EXPECT_THAT(generationError(R"({"eos_token_id": "2"})"),
              HasSubstr("field \"eos_token_id\" must be an integer or a list"));
  EXPECT_THAT(generationError(R"({"max_new_tokens": 0})"),
              HasSubstr("field \"max_new_tokens\" must be > 0"));
  EXPECT_THAT(generationError(R"({"repetition_penalty": 0})"),
              HasSubstr("field \"repetition_penalty\" must be a number > 0"));
  EXPECT_THAT(generationError("{"), HasSubstr("gen.json: not valid JSON"));
}

TEST(GenerationConfigTest, FileIsOptional) {
  test::TempDir dir;
  EXPECT_FALSE(loadGenerationConfig(dir.path()));
  test::writeFile(dir / "generation_config.json", kQwen25);
  std::optional<GenerationConfig> config = loadGenerationConfig(dir.path());
  ASSERT_TRUE(config);
  EXPECT_EQ(config->topK, 20);
  test::writeFile(dir / "generation_config.json", "[]");
  EXPECT_THAT(errorOf([&] { loadGenerationConfig(dir.path()); }),
              HasSubstr("generation_config.json: must be a JSON object"));
}

} // namespace
} // namespace sol::hf

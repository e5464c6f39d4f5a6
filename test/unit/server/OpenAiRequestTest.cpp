//===- OpenAiRequestTest.cpp - OpenAI request parsing and validation ------===//
#include "runtime/server/OpenAiRequest.h"
#include "runtime/server/ApiError.h"
#include "test/unit/TestTokenizers.h"

#include <gtest/gtest.h>

#include <exception>
#include <string>

namespace sol {
namespace {

using Json = nlohmann::ordered_json;

ServedModel idModel() {
  ServedModel m;
  m.name = "tiny";
  m.maxModelLen = 64;
  m.kvCapacityTokens = 1000;
  m.vocabSize = 100;
  m.defaults.temperature = 1.0f;
  return m;
}

ApiError completionError(const std::string &body,
                         const ServedModel &m = idModel()) {
  try {
    parseCompletionRequest(Json::parse(body), m);
  } catch (const ApiError &e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << body;
  return ApiError(0, "");
}

struct Case {
  std::string body;
  std::string param;
  std::string message; // a part of it
};

TEST(OpenAiRequest, WrongTypesAndValuesNameTheField) {
  const std::vector<Case> cases = {
      {R"({"prompt": [1], "temperature": "hot"})", "temperature",
       "'temperature' must be a number, got a string"},
      {R"({"prompt": [1], "temperature": -1})", "temperature",
       "'temperature' must be >= 0"},
      {R"({"prompt": [1], "max_tokens": "10"})", "max_tokens",
       "'max_tokens' must be an integer, got a string"},
      {R"({"prompt": [1], "max_tokens": 1.5})", "max_tokens",
       "'max_tokens' must be an integer, got a number"},
      {R"({"prompt": [1], "max_tokens": 0})", "max_tokens",
       "'max_tokens' must be in [1, "},
      {R"({"prompt": [1], "n": 0})", "n", "'n' must be in [1, 128]"},
      {R"({"prompt": [1], "n": true})", "n",
       "'n' must be an integer, got a boolean"},
      {R"({"prompt": [1], "top_p": 0})", "top_p", "'top_p' must be in (0, 1]"},
      {R"({"prompt": [1], "top_k": -2})", "top_k", "'top_k' must be -1"},
      {R"({"prompt": [1], "min_p": 2})", "min_p", "'min_p' must be in [0, 1]"},
      {R"({"prompt": [1], "presence_penalty": 3})", "presence_penalty",
       "in [-2, 2]"},
      {R"({"prompt": [1], "frequency_penalty": -3})", "frequency_penalty",
       "in [-2, 2]"},
      {R"({"prompt": [1], "repetition_penalty": 0})", "repetition_penalty",
       "must be > 0"},
      {R"({"prompt": [1], "seed": "x"})", "seed", "'seed' must be an integer"},
      {R"({"prompt": [1], "stop": 5})", "stop",
       "'stop' must be a string or an array of strings, got an integer"},
      {R"({"prompt": [1], "stop": ["a", 1]})", "stop", "it holds an integer"},
      {R"({"prompt": [1], "stop_token_ids": [1, 500]})", "stop_token_ids",
       "token id 500, outside the vocabulary [0, 100)"},
      {R"({"prompt": [1], "ignore_eos": 1})", "ignore_eos",
       "'ignore_eos' must be a boolean"},
      {R"({"prompt": [1], "min_tokens": -1})", "min_tokens", "'min_tokens'"},
      {R"({"prompt": [1], "min_tokens": 5, "max_tokens": 2})", "min_tokens",
       "must not exceed 'max_tokens'"},
      {R"({"prompt": [1], "stream": "yes"})", "stream",
       "'stream' must be a boolean"},
      {R"({"prompt": [1], "stream_options": {"include_usage": true}})",
       "stream_options", "only be given with \"stream\": true"},
      {R"({"prompt": [1], "stream": true, "stream_options": {"include_usage": 1}})",
       "include_usage", "'include_usage' must be a boolean"},
      {R"({"prompt": [1], "response_format": {"type": "json_object"}})",
       "response_format", "'json_object' is not supported"},
      {R"({"prompt": [1], "response_format": "text"})", "response_format",
       "must be an object"},
      {R"({"prompt": [1], "echo": true})", "echo", "not supported"},
      {R"({"prompt": [1], "suffix": "x"})", "suffix", "not supported"},
      {R"({"prompt": [1], "best_of": 3})", "best_of", "not supported"},
      {R"({"prompt": [1], "logprobs": 21})", "logprobs",
       "'logprobs' must be in [0, 20]"},
      {R"({"prompt": [1], "logprobs": true})", "logprobs",
       "'logprobs' must be an integer (0 to 20), got a boolean"},
      {R"({"prompt": [1], "user": 5})", "user", "'user' must be a string"},
      {R"({"prompt": [1], "model": 5})", "model", "'model' must be a string"},
      {R"({})", "prompt", "'prompt' is required"},
      {R"({"prompt": 5})", "prompt", "'prompt' must be a string"},
      {R"({"prompt": []})", "prompt", "'prompt' is an empty array"},
      {R"({"prompt": [1, "a"]})", "prompt", "must hold integer token ids"},
      {R"({"prompt": [[1], 2]})", "prompt", "mixes arrays of token ids"},
      {R"({"prompt": [-1]})", "prompt", "token id -1, outside"},
      {R"({"prompt": [[]]})", "prompt", "the prompt is empty"},
      {R"({"prompt": [true]})", "prompt", "'prompt' must be a string, an"},
      // No tokenizer: text needs one.
      {R"({"prompt": "hello"})", "prompt", "this model has no tokenizer"},
      {R"({"prompt": [1], "stop": "x"})", "stop", "has no tokenizer"},
  };
  for (const Case &c : cases) {
    const ApiError e = completionError(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find(c.message), std::string::npos)
        << c.body << " -> " << e.message;
    EXPECT_EQ(e.type, "invalid_request_error");
    const Json body = Json::parse(e.body());
    EXPECT_EQ(body["error"]["message"], e.message);
    EXPECT_EQ(body["error"]["param"], c.param);
  }
}

TEST(OpenAiRequest, UnknownModelIs404) {
  const ApiError e = completionError(R"({"prompt": [1], "model": "gpt-4"})");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.code, "model_not_found");
  EXPECT_NE(e.message.find("'gpt-4' does not exist"), std::string::npos);
  EXPECT_NE(e.message.find("serves 'tiny'"), std::string::npos);
}

TEST(OpenAiRequest, CompletionFields) {
  const ServedModel m = idModel();
  const GenerationSpec s = parseCompletionRequest(
      Json::parse(R"({"model": "tiny", "prompt": [[1, 2], [3]], "n": 2,
        "max_tokens": 5, "temperature": 0.5, "top_p": 0.9, "top_k": -1,
        "min_p": 0.1, "seed": 7, "stop": [""], "stop_token_ids": [4],
        "ignore_eos": true, "min_tokens": 2, "logprobs": 3,
        "presence_penalty": 0.5, "frequency_penalty": 0.25,
        "repetition_penalty": 1.1, "stream": true,
        "stream_options": {"include_usage": true},
        "response_format": {"type": "text"}, "logit_bias": {},
        "user": "u", "some_future_field": {"x": 1}})"),
      m);
  ASSERT_EQ(s.prompts.size(), 2u);
  EXPECT_EQ(s.prompts[0], (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(s.n, 2);
  EXPECT_EQ(*s.maxTokens, 5);
  EXPECT_FLOAT_EQ(s.base.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(s.base.sampling.topP, 0.9f);
  EXPECT_EQ(s.base.sampling.topK, 0);
  EXPECT_FLOAT_EQ(s.base.sampling.minP, 0.1f);
  EXPECT_FLOAT_EQ(s.base.sampling.repetitionPenalty, 1.1f);
  // Empty stop strings are dropped (no tokenizer needed then).
  EXPECT_TRUE(s.base.stop.empty());
  EXPECT_EQ(s.base.stopTokenIds, (std::vector<int32_t>{4}));
  EXPECT_TRUE(s.base.ignoreEos);
  EXPECT_EQ(s.base.minTokens, 2);
  EXPECT_EQ(*s.base.logprobs, 3);
  EXPECT_TRUE(s.stream);
  EXPECT_TRUE(s.includeUsage);
  // Choices of one prompt get seeds seed, seed + 1, ...
  EXPECT_EQ(*makeEngineRequest(s, 0, 0, m).sampling.seed, 7u);
  EXPECT_EQ(*makeEngineRequest(s, 0, 1, m).sampling.seed, 8u);
  EXPECT_EQ(makeEngineRequest(s, 1, 0, m).promptIds, (std::vector<int32_t>{3}));
}

TEST(OpenAiRequest, DefaultsComeFromTheModel) {
  ServedModel m = idModel();
  m.defaults.temperature = 0.7f;
  m.defaults.topK = 20;
  const GenerationSpec s =
      parseCompletionRequest(Json::parse(R"({"prompt": [1, 2, 3]})"), m);
  EXPECT_FLOAT_EQ(s.base.sampling.temperature, 0.7f);
  EXPECT_EQ(s.base.sampling.topK, 20);
  EXPECT_FALSE(s.maxTokens);
  // Up to the context limit.
  EXPECT_EQ(makeEngineRequest(s, 0, 0, m).maxTokens, 61);
  m.kvCapacityTokens = 32;
  EXPECT_EQ(makeEngineRequest(s, 0, 0, m).maxTokens, 29);
}

TEST(OpenAiRequest, ContextLengthErrorsAsVllm) {
  const ServedModel m = idModel();
  const GenerationSpec s = parseCompletionRequest(
      Json::parse(R"({"prompt": [[1, 2, 3, 4]], "max_tokens": 61})"), m);
  try {
    makeEngineRequest(s, 0, 0, m);
    FAIL();
  } catch (const ApiError &e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "context_length_exceeded");
    EXPECT_EQ(e.message,
              "This model's maximum context length is 64 tokens. However, "
              "you requested 65 tokens (4 in the prompt, 61 in the "
              "completion). Please reduce the length of the prompt or "
              "completion.");
  }
  const GenerationSpec full = parseCompletionRequest(
      Json::parse(Json{{"prompt", std::vector<int>(64, 1)}}.dump()), m);
  try {
    makeEngineRequest(full, 0, 0, m);
    FAIL();
  } catch (const ApiError &e) {
    EXPECT_NE(e.message.find("your prompt has 64 tokens"), std::string::npos)
        << e.message;
  }
}

class ChatRequest : public ::testing::Test {
protected:
  // Loading the Qwen3 tokenizer takes a second: once for the suite.
  static void SetUpTestSuite() {
    try {
      text_ = new TextModel(
          TextModel::fromDirectory(sol::test::testTokenizerDir("qwen3")));
    } catch (const std::exception &e) {
      error_ = e.what();
    }
  }
  static void TearDownTestSuite() {
    delete text_;
    text_ = nullptr;
  }
  void SetUp() override {
    if (!text_)
      GTEST_FAIL() << error_;
    model_ = idModel();
    model_.vocabSize = 151669;
    model_.maxModelLen = 512;
    model_.text = text_;
  }
  static inline TextModel *text_ = nullptr;
  static inline std::string error_;
  ServedModel model_;
};

TEST_F(ChatRequest, RendersTheTemplate) {
  const GenerationSpec s = parseChatRequest(
      Json::parse(R"({"messages": [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "max_completion_tokens": 3, "max_tokens": 9, "logprobs": true,
        "top_logprobs": 2})"),
      model_);
  ASSERT_EQ(s.prompts.size(), 1u);
  const std::vector<int32_t> &ids = s.prompts[0];
  // <|im_start|>system ...
  // <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n
  ASSERT_GE(ids.size(), 10u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(std::vector<int32_t>(ids.end() - 3, ids.end()),
            (std::vector<int32_t>{151644, 77091, 198}));
  EXPECT_EQ(*s.maxTokens, 3);
  EXPECT_TRUE(s.logprobs);
  EXPECT_EQ(*s.base.logprobs, 2);
}

TEST_F(ChatRequest, Errors) {
  const std::vector<Case> cases = {
      {R"({})", "messages", "'messages' is required"},
      {R"({"messages": {}})", "messages", "must be an array of messages"},
      {R"({"messages": []})", "messages", "'messages' is empty"},
      {R"({"messages": [5]})", "messages[0]", "must be an object"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role",
       "must be a string"},
      {R"({"messages": [{"role": "user", "content": 5}]})",
       "messages[0].content", "must be a string, null or an array"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content", "'image_url' are not supported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
       "top_logprobs", "needs \"logprobs\": true"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})",
       "logprobs", "'logprobs' must be a boolean"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "max_completion_tokens": "a"})",
       "max_completion_tokens", "must be an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "continue_final_message": true})",
       "continue_final_message", "cannot both be true"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "chat_template_kwargs": 1})",
       "chat_template_kwargs", "must be an object"},
  };
  for (const Case &c : cases) {
    try {
      parseChatRequest(Json::parse(c.body), model_);
      ADD_FAILURE() << "no error for " << c.body;
    } catch (const ApiError &e) {
      EXPECT_EQ(e.status, 400) << c.body;
      EXPECT_EQ(e.param, c.param) << c.body;
      EXPECT_NE(e.message.find(c.message), std::string::npos)
          << c.body << " -> " << e.message;
    }
  }
}

TEST_F(ChatRequest, NoChatTemplateIs400) {
  // The same tokenizer without its template (put back after).
  std::optional<ChatTemplate> saved = std::move(text_->chatTemplate);
  text_->chatTemplate.reset();
  try {
    parseChatRequest(
        Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"),
        model_);
    ADD_FAILURE() << "no error";
  } catch (const ApiError &e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(e.message.find("has no chat template"), std::string::npos);
  }
  text_->chatTemplate = std::move(saved);
}

} // namespace
} // namespace sol

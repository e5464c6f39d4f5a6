//===- OpenAiRequest.h - Validates OpenAI requests into engine requests -*- C++
//-*-===//
//
// Turns the JSON body of POST /v1/completions or /v1/chat/completions into
// token-id prompts and the engine Request every choice starts from. Fields
// are checked one by one: a wrong type or value is an ApiError 400 whose
// param names the field. Unknown fields are ignored, as OpenAI-compatible
// servers do. The prompt length is checked against the context here, with
// vLLM's wording.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Request.h"
#include "runtime/engine/TextModel.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sol {

/// What the API knows about the model it serves.
struct ServedModel {
  std::string name;
  /// Longest prompt + completion.
  int64_t maxModelLen = 0;
  /// Tokens the whole KV cache holds (a request larger can never run).
  int64_t kvCapacityTokens = 0;
  int64_t vocabSize = 0;
  /// Sampling defaults of requests that do not set them (the plan's
  /// generation_config.json, as vLLM's --generation-config auto).
  SamplingParams defaults;
  /// Null when the plan has no tokenizer: prompts must be token ids.
  const TextModel *text = nullptr;
};

struct GenerationSpec {
  bool chat = false;
  /// One prompt per entry of `prompt` (completions) or the rendered chat.
  std::vector<std::vector<int32_t>> prompts;
  int32_t n = 1;
  /// Every choice's request, prompt ids and max_tokens aside.
  Request base;
  /// max_tokens as asked; absent: up to the context limit.
  std::optional<int32_t> maxTokens;
  bool stream = false;
  bool includeUsage = false;
  /// vLLM's stream_options.continuous_usage_stats: usage in every chunk.
  bool continuousUsage = false;
  /// Chat: logprobs true; completions: logprobs given (top = its value).
  bool logprobs = false;
  int32_t topLogprobs = 0;
  /// vLLM's return_token_ids: prompt_token_ids and token_ids per choice.
  bool returnTokenIds = false;
};

/// Parses and checks a /v1/completions body. Throws ApiError.
GenerationSpec parseCompletionRequest(const nlohmann::ordered_json &body,
                                      const ServedModel &model);
/// Parses and checks a /v1/chat/completions body (renders the chat template
/// and tokenizes it). Throws ApiError.
GenerationSpec parseChatRequest(const nlohmann::ordered_json &body,
                                const ServedModel &model);

/// The engine request of prompt `prompt` (index into spec.prompts), choice
/// `choice` of n: max_tokens resolved against the context, the seed offset
/// by the choice so that n > 1 with a seed gives n different samples (as
/// vLLM does). Throws ApiError 400 when the prompt does not fit the context.
Request makeEngineRequest(const GenerationSpec &spec, size_t prompt,
                          int32_t choice, const ServedModel &model);

} // namespace sol

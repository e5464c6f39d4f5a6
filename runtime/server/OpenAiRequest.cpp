//===- OpenAiRequest.cpp - Validates OpenAI requests into engine requests -===//
#include "runtime/server/OpenAiRequest.h"

#include "runtime/executor/Executor.h"
#include "runtime/server/ApiError.h"
#include "runtime/support/Error.h"

#include <cmath>
#include <limits>

namespace sol {

namespace {

using Json = nlohmann::ordered_json;

constexpr int32_t kMaxChoices = 128;

std::string typeName(const Json &v) {
  switch (v.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::number_float:
    return "a number";
  default:
    return "an integer";
  }
}

[[noreturn]] void wrongType(const std::string &field, const char *expected,
                            const Json &v) {
  badRequest(field,
             cat("'", field, "' must be ", expected, ", got ", typeName(v)));
}

/// The field, or null when absent or JSON null (OpenAI treats both alike).
const Json *field(const Json &body, const char *name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null())
    return nullptr;
  return &*it;
}

bool isInteger(const Json &v) {
  if (v.is_number_integer())
    return true;
  // 16.0 is an integer to Python's validators too.
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15;
  }
  return false;
}

std::optional<int64_t> optInt(const Json &body, const char *name) {
  const Json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!isInteger(*v))
    wrongType(name, "an integer", *v);
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    badRequest(name, cat("'", name, "' is too large"));
  return v->is_number_float() ? static_cast<int64_t>(v->get<double>())
                              : v->get<int64_t>();
}

/// An integer field in [lo, hi].
std::optional<int32_t> optIntIn(const Json &body, const char *name, int64_t lo,
                                int64_t hi) {
  std::optional<int64_t> v = optInt(body, name);
  if (!v)
    return std::nullopt;
  if (*v < lo || *v > hi)
    badRequest(name,
               cat("'", name, "' must be in [", lo, ", ", hi, "], got ", *v));
  return static_cast<int32_t>(*v);
}

std::optional<double> optNumber(const Json &body, const char *name) {
  const Json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_number())
    wrongType(name, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d))
    badRequest(name, cat("'", name, "' must be a finite number"));
  return d;
}

std::optional<bool> optBool(const Json &body, const char *name) {
  const Json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_boolean())
    wrongType(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> optString(const Json &body, const char *name) {
  const Json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_string())
    wrongType(name, "a string", *v);
  return v->get<std::string>();
}

void checkModel(const Json &body, const ServedModel &model) {
  std::optional<std::string> name = optString(body, "model");
  if (name && *name != model.name)
    throw ApiError(404,
                   cat("The model '", *name,
                       "' does not exist. This server serves '", model.name,
                       "'."),
                   "model", "model_not_found", "invalid_request_error");
}

std::vector<int32_t> tokenIds(const Json &array, const std::string &fieldName,
                              const ServedModel &model) {
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (const Json &v : array) {
    if (!v.is_number_integer())
      badRequest(fieldName,
                 cat("'", fieldName, "' must hold integer token ids, got ",
                     typeName(v)));
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id >= model.vocabSize)
      badRequest(fieldName,
                 cat("'", fieldName, "' has token id ", id,
                     ", outside the vocabulary [0, ", model.vocabSize, ")"));
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

const Tokenizer &needTokenizer(const ServedModel &model, const char *field,
                               const char *what) {
  if (!model.text)
    badRequest(field, cat("this model has no tokenizer, so ", what,
                          " cannot be used; send the prompt as token ids"));
  return model.text->tokenizer;
}

/// The fields /v1/completions and /v1/chat/completions share.
void parseCommon(const Json &body, const ServedModel &model,
                 GenerationSpec &spec) {
  checkModel(body, model);
  Request &r = spec.base;
  SamplingParams &p = r.sampling;
  p = model.defaults;
  if (auto t = optNumber(body, "temperature")) {
    if (*t < 0)
      badRequest("temperature", cat("'temperature' must be >= 0, got ", *t));
    p.temperature = static_cast<float>(*t);
  }
  if (auto v = optNumber(body, "top_p")) {
    if (!(*v > 0 && *v <= 1))
      badRequest("top_p", cat("'top_p' must be in (0, 1], got ", *v));
    p.topP = static_cast<float>(*v);
  }
  if (auto v = optInt(body, "top_k")) {
    // vLLM: -1 (and 0) mean every token.
    if (*v < -1 || *v > std::numeric_limits<int32_t>::max())
      badRequest("top_k",
                 cat("'top_k' must be -1 (all tokens) or >= 1, got ", *v));
    p.topK = *v <= 0 ? 0 : static_cast<int32_t>(*v);
  }
  if (auto v = optNumber(body, "min_p")) {
    if (!(*v >= 0 && *v <= 1))
      badRequest("min_p", cat("'min_p' must be in [0, 1], got ", *v));
    p.minP = static_cast<float>(*v);
  }
  if (auto v = optNumber(body, "presence_penalty")) {
    if (!(*v >= -2 && *v <= 2))
      badRequest("presence_penalty",
                 cat("'presence_penalty' must be in [-2, 2], got ", *v));
    p.presencePenalty = static_cast<float>(*v);
  }
  if (auto v = optNumber(body, "frequency_penalty")) {
    if (!(*v >= -2 && *v <= 2))
      badRequest("frequency_penalty",
                 cat("'frequency_penalty' must be in [-2, 2], got ", *v));
    p.frequencyPenalty = static_cast<float>(*v);
  }
  if (auto v = optNumber(body, "repetition_penalty")) {
    if (!(*v > 0))
      badRequest("repetition_penalty",
                 cat("'repetition_penalty' must be > 0 (1: none), got ", *v));
    p.repetitionPenalty = static_cast<float>(*v);
  }
  if (auto v = optInt(body, "seed"))
    p.seed = static_cast<uint64_t>(*v);

  if (auto v = optIntIn(body, "n", 1, kMaxChoices))
    spec.n = *v;
  if (const Json *b = field(body, "best_of")) {
    if (!isInteger(*b))
      wrongType("best_of", "an integer", *b);
    if (b->get<double>() != double(spec.n))
      badRequest("best_of", "'best_of' is not supported (only best_of = n)");
  }

  // Stop conditions.
  if (const Json *s = field(body, "stop")) {
    std::vector<std::string> stop;
    if (s->is_string()) {
      stop.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      for (const Json &x : *s) {
        if (!x.is_string())
          badRequest("stop", cat("'stop' must be a string or an array of "
                                 "strings; it holds ",
                                 typeName(x)));
        stop.push_back(x.get<std::string>());
      }
    } else {
      wrongType("stop", "a string or an array of strings", *s);
    }
    for (std::string &x : stop)
      if (!x.empty())
        r.stop.push_back(std::move(x));
    if (!r.stop.empty())
      needTokenizer(model, "stop", "stop strings");
  }
  if (const Json *s = field(body, "stop_token_ids")) {
    if (!s->is_array())
      wrongType("stop_token_ids", "an array of token ids", *s);
    r.stopTokenIds = tokenIds(*s, "stop_token_ids", model);
  }
  if (auto v = optBool(body, "ignore_eos"))
    r.ignoreEos = *v;
  if (auto v =
          optIntIn(body, "min_tokens", 0, std::numeric_limits<int32_t>::max()))
    r.minTokens = *v;

  if (auto v = optBool(body, "stream"))
    spec.stream = *v;
  if (auto v = optBool(body, "return_token_ids"))
    spec.returnTokenIds = *v;
  if (const Json *o = field(body, "stream_options")) {
    if (!o->is_object())
      wrongType("stream_options", "an object", *o);
    if (!spec.stream)
      badRequest("stream_options",
                 "'stream_options' can only be given with \"stream\": true");
    if (auto v = optBool(*o, "include_usage"))
      spec.includeUsage = *v;
    if (auto v = optBool(*o, "continuous_usage_stats"))
      spec.continuousUsage = *v;
  }

  if (const Json *f = field(body, "response_format")) {
    if (!f->is_object())
      wrongType("response_format", "an object", *f);
    std::optional<std::string> type = optString(*f, "type");
    if (!type)
      badRequest("response_format", "'response_format' needs a 'type'");
    if (*type != "text")
      badRequest("response_format",
                 cat("response_format type '", *type,
                     "' is not supported (only \"text\"): Sol does not "
                     "constrain the output to JSON"));
  }
  if (const Json *b = field(body, "logit_bias")) {
    if (!b->is_object())
      wrongType("logit_bias", "an object (token id -> bias)", *b);
    for (const auto &[key, value] : b->items()) {
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used == 0 || used != key.size())
        badRequest("logit_bias", cat("'logit_bias' keys must be token ids, "
                                     "got '",
                                     key, "'"));
      if (id < 0 || id >= model.vocabSize)
        badRequest("logit_bias",
                   cat("'logit_bias' has token id ", id,
                       ", outside the vocabulary [0, ", model.vocabSize, ")"));
      if (!value.is_number())
        badRequest("logit_bias", cat("'logit_bias' values must be numbers, "
                                     "got ",
                                     typeName(value), " for token ", id));
      const double bias = value.get<double>();
      if (!(bias >= -100 && bias <= 100))
        badRequest("logit_bias", cat("'logit_bias' values must be in [-100, "
                                     "100], got ",
                                     bias, " for token ", id));
      r.logitBias[static_cast<int32_t>(id)] = static_cast<float>(bias);
    }
  }
  if (const Json *u = field(body, "user"); u && !u->is_string())
    wrongType("user", "a string", *u);
}

/// max_tokens (or, for chat, max_completion_tokens first).
void parseMaxTokens(const Json &body, GenerationSpec &spec) {
  const char *name = "max_tokens";
  if (spec.chat && field(body, "max_completion_tokens"))
    name = "max_completion_tokens";
  if (auto v = optIntIn(body, name, 1, std::numeric_limits<int32_t>::max()))
    spec.maxTokens = *v;
  if (spec.maxTokens && spec.base.minTokens > *spec.maxTokens)
    badRequest("min_tokens",
               cat("'min_tokens' (", spec.base.minTokens, ") must not exceed '",
                   name, "' (", *spec.maxTokens, ")"));
}

/// A message's content as the template sees it: text parts joined.
Json messageContent(const Json &content, size_t index) {
  const std::string name = cat("messages[", index, "].content");
  if (content.is_null() || content.is_string())
    return content;
  if (!content.is_array())
    wrongType(name, "a string, null or an array of content parts", content);
  std::string text;
  for (const Json &part : content) {
    if (!part.is_object())
      badRequest(name, cat("'", name, "' parts must be objects, got ",
                           typeName(part)));
    std::optional<std::string> type = optString(part, "type");
    if (!type)
      badRequest(name, cat("'", name, "' parts need a 'type'"));
    if (*type != "text")
      badRequest(name, cat("content parts of type '", *type,
                           "' are not supported (text only)"));
    std::optional<std::string> t = optString(part, "text");
    if (!t)
      badRequest(name, cat("'", name, "' text parts need a 'text' string"));
    if (!text.empty())
      text += "\n";
    text += *t;
  }
  return text;
}

} // namespace

GenerationSpec parseCompletionRequest(const Json &body,
                                      const ServedModel &model) {
  if (!body.is_object())
    badRequest("", "the request body must be a JSON object");
  GenerationSpec spec;
  parseCommon(body, model, spec);
  parseMaxTokens(body, spec);
  if (auto e = optBool(body, "echo"); e && *e)
    badRequest("echo", "'echo': true is not supported");
  if (auto s = optString(body, "suffix"); s && !s->empty())
    badRequest("suffix", "'suffix' is not supported");
  if (const Json *l = field(body, "logprobs")) {
    if (!isInteger(*l))
      wrongType("logprobs", "an integer (0 to 20)", *l);
    const int32_t k = *optIntIn(body, "logprobs", 0, kMaxTopLogprobs);
    spec.logprobs = true;
    spec.topLogprobs = k;
    spec.base.logprobs = k;
  }

  const Json *prompt = field(body, "prompt");
  if (!prompt)
    badRequest("prompt", "'prompt' is required");
  auto text = [&](const std::string &s) {
    const Tokenizer &tok = needTokenizer(model, "prompt", "a text prompt");
    // As vLLM: special tokens (BOS) added, as tokenizer(text) does.
    std::vector<TokenId> ids = tok.encode(s, true);
    return std::vector<int32_t>(ids.begin(), ids.end());
  };
  if (prompt->is_string()) {
    spec.prompts.push_back(text(prompt->get<std::string>()));
  } else if (prompt->is_array()) {
    if (prompt->empty())
      badRequest("prompt", "'prompt' is an empty array");
    const Json &first = prompt->front();
    if (first.is_number_integer()) {
      spec.prompts.push_back(tokenIds(*prompt, "prompt", model));
    } else if (first.is_string()) {
      for (const Json &s : *prompt) {
        if (!s.is_string())
          badRequest("prompt", "'prompt' mixes strings and other values");
        spec.prompts.push_back(text(s.get<std::string>()));
      }
    } else if (first.is_array()) {
      for (const Json &ids : *prompt) {
        if (!ids.is_array())
          badRequest("prompt",
                     "'prompt' mixes arrays of token ids and other values");
        spec.prompts.push_back(tokenIds(ids, "prompt", model));
      }
    } else {
      badRequest("prompt", "'prompt' must be a string, an array of strings, "
                           "an array of token ids or an array of arrays of "
                           "token ids");
    }
  } else {
    wrongType("prompt",
              "a string, an array of strings, an array of token ids or an "
              "array of arrays of token ids",
              *prompt);
  }
  for (const auto &p : spec.prompts)
    if (p.empty())
      badRequest("prompt", "the prompt is empty (no tokens)");
  if (int64_t(spec.prompts.size()) * spec.n > 4 * kMaxChoices)
    badRequest("prompt", cat("too many completions in one request: ",
                             spec.prompts.size(), " prompts x n = ", spec.n,
                             " (at most ", 4 * kMaxChoices, ")"));
  return spec;
}

GenerationSpec parseChatRequest(const Json &body, const ServedModel &model) {
  if (!body.is_object())
    badRequest("", "the request body must be a JSON object");
  GenerationSpec spec;
  spec.chat = true;
  parseCommon(body, model, spec);
  parseMaxTokens(body, spec);
  if (auto l = optBool(body, "logprobs"))
    spec.logprobs = *l;
  if (auto k = optIntIn(body, "top_logprobs", 0, kMaxTopLogprobs)) {
    if (!spec.logprobs)
      badRequest("top_logprobs", "'top_logprobs' needs \"logprobs\": true");
    spec.topLogprobs = *k;
  }
  if (spec.logprobs)
    spec.base.logprobs = spec.topLogprobs;

  const Json *messages = field(body, "messages");
  if (!messages)
    badRequest("messages", "'messages' is required");
  if (!messages->is_array())
    wrongType("messages", "an array of messages", *messages);
  if (messages->empty())
    badRequest("messages", "'messages' is empty");
  needTokenizer(model, "messages", "chat messages");
  if (!model.text->chatTemplate)
    badRequest("messages",
               cat("the model '", model.name,
                   "' has no chat template (no chat_template in its "
                   "tokenizer_config.json, no chat_template.jinja beside "
                   "it); use /v1/completions"));

  Json request = Json::object();
  Json &msgs = request["messages"] = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json &m = (*messages)[i];
    if (!m.is_object())
      badRequest(
          cat("messages[", i, "]"),
          cat("'messages[", i, "]' must be an object, got ", typeName(m)));
    const Json *role = field(m, "role");
    if (!role || !role->is_string())
      badRequest(cat("messages[", i, "].role"),
                 cat("'messages[", i, "].role' must be a string"));
    Json copy = m;
    if (auto c = m.find("content"); c != m.end())
      copy["content"] = messageContent(*c, i);
    msgs.push_back(std::move(copy));
  }
  bool addGenerationPrompt = true, continueFinal = false;
  if (auto v = optBool(body, "add_generation_prompt"))
    addGenerationPrompt = *v;
  if (auto v = optBool(body, "continue_final_message"))
    continueFinal = *v;
  if (addGenerationPrompt && continueFinal)
    badRequest("continue_final_message",
               "'continue_final_message' and 'add_generation_prompt' cannot "
               "both be true");
  if (const Json *kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object())
      wrongType("chat_template_kwargs", "an object", *kw);
    for (const auto &[k, v] : kw->items())
      request[k] = v;
  }
  if (const Json *tools = field(body, "tools")) {
    if (!tools->is_array())
      wrongType("tools", "an array", *tools);
    request["tools"] = *tools;
  }
  request["add_generation_prompt"] = addGenerationPrompt;
  if (continueFinal)
    request["continue_final_message"] = true;

  std::string text;
  try {
    text = model.text->chatTemplate->render(request);
  } catch (const Error &e) {
    badRequest("messages",
               cat("the chat template rejected the messages: ", e.what()));
  }
  // As apply_chat_template(tokenize=True): the template writes the special
  // tokens itself.
  std::vector<TokenId> ids = model.text->tokenizer.encode(text, false);
  if (ids.empty())
    badRequest("messages", "the rendered chat prompt is empty");
  spec.prompts.emplace_back(ids.begin(), ids.end());
  return spec;
}

Request makeEngineRequest(const GenerationSpec &spec, size_t prompt,
                          int32_t choice, const ServedModel &model) {
  const std::vector<int32_t> &ids = spec.prompts[prompt];
  const int64_t len = static_cast<int64_t>(ids.size());
  const char *where = spec.chat ? "messages" : "prompt";
  const int64_t limit = std::min(model.maxModelLen, model.kvCapacityTokens);
  if (spec.maxTokens) {
    if (len + *spec.maxTokens > model.maxModelLen)
      throw ApiError(
          400,
          cat("This model's maximum context length is ", model.maxModelLen,
              " tokens. However, you requested ", len + *spec.maxTokens,
              " tokens (", len, " in the ", where, ", ", *spec.maxTokens,
              " in the completion). Please reduce the length of the ", where,
              " or completion."),
          where, "context_length_exceeded");
  } else if (len >= limit) {
    throw ApiError(400,
                   cat("This model's maximum context length is ", limit,
                       " tokens. However, your ", where, " has ", len,
                       " tokens, which leaves no room for the completion. "
                       "Please reduce the length of the ",
                       where, "."),
                   where, "context_length_exceeded");
  }
  Request r = spec.base;
  r.promptIds = ids;
  r.maxTokens =
      spec.maxTokens ? *spec.maxTokens : static_cast<int32_t>(limit - len);
  if (r.minTokens > r.maxTokens)
    badRequest("min_tokens", cat("'min_tokens' (", r.minTokens,
                                 ") exceeds the tokens left in the context (",
                                 r.maxTokens, ")"));
  if (r.sampling.seed)
    r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(choice);
  return r;
}

} // namespace sol

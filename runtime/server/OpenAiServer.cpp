//===- OpenAiServer.cpp - The OpenAI-compatible API over HTTP -------------===//
#include "runtime/server/OpenAiServer.h"

#include "runtime/server/OpenAiLogprobs.h"
#include "runtime/support/Error.h"
#include "runtime/tokenizer/IncrementalDetokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>
#include <random>

namespace sol {

namespace {

using Json = nlohmann::ordered_json;
using namespace std::chrono_literals;

/// How often a waiting handler checks that its client is still there.
constexpr auto kPollInterval = 50ms;

std::string dump(const Json &j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string randomId(const char *prefix) {
  static std::mutex mutex;
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t a, b;
  {
    std::lock_guard<std::mutex> lock(mutex);
    a = rng();
    b = rng();
  }
  static const char *const kHex = "0123456789abcdef";
  std::string id = prefix;
  for (uint64_t v : {a, b})
    for (int i = 60; i >= 0; i -= 4)
      id += kHex[(v >> i) & 15];
  return id;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The media type of a Content-Type value, without parameters.
std::string mediaType(const std::string &value) {
  std::string t = lower(value.substr(0, value.find(';')));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t'))
    t.pop_back();
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t'))
    t.erase(t.begin());
  return t;
}

bool equalConstantTime(const std::string &a, const std::string &b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |=
        static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

Json usageJson(int64_t prompt, int64_t completion) {
  Json u;
  u["prompt_tokens"] = prompt;
  u["completion_tokens"] = completion;
  u["total_tokens"] = prompt + completion;
  return u;
}

/// One choice of a generation as it accumulates.
struct Choice {
  std::string text;
  std::vector<int32_t> ids;
  Json logprobs; // null until the first
  std::unique_ptr<OpenAiLogprobs> formatter;
  /// Builds the text when the engine does not (Request::detokenize).
  std::optional<IncrementalDetokenizer> detokenizer;
  int32_t outputTokens = 0;
  bool finished = false;
  FinishReason reason = FinishReason::None;
  std::string error;
};

} // namespace

OpenAiServer::OpenAiServer(ServedModel model, EngineLoop &loop,
                           Metrics &metrics, std::string apiKey)
    : model_(std::move(model)), loop_(loop), metrics_(metrics),
      apiKey_(std::move(apiKey)), started_(std::time(nullptr)) {}

std::pair<std::string, std::string>
OpenAiServer::errorBody(int status, const std::string &message) {
  metrics_.countResponse(status);
  return {ApiError(status, message).body(), "application/json"};
}

void OpenAiServer::sendJson(HttpResponder &responder, int status,
                            const std::string &body, const HttpHeaders &extra) {
  metrics_.countResponse(status);
  responder.send(status, "application/json", body, extra);
}

void OpenAiServer::sendError(HttpResponder &responder, const ApiError &error) {
  HttpHeaders extra;
  if (error.status == 429 || error.status == 503)
    extra.emplace_back("Retry-After", "1");
  if (error.status == 401)
    extra.emplace_back("WWW-Authenticate", "Bearer");
  sendJson(responder, error.status, error.body(), extra);
}

void OpenAiServer::handle(const HttpRequest &request,
                          HttpResponder &responder) {
  try {
    route(request, responder);
  } catch (const ApiError &e) {
    if (!responder.responded())
      sendError(responder, e);
  } catch (const std::exception &e) {
    if (!responder.responded())
      sendError(responder, ApiError(500, cat("internal error: ", e.what())));
  }
}

void OpenAiServer::checkAuth(const HttpRequest &request) const {
  if (apiKey_.empty())
    return;
  const std::string *auth = request.header("authorization");
  if (!auth)
    throw ApiError(401,
                   "Missing API key: send the header 'Authorization: Bearer "
                   "<key>' (the key given by --api-key or SOL_API_KEY)",
                   "", "invalid_api_key");
  const std::string prefix = "bearer ";
  if (auth->size() < prefix.size() ||
      lower(auth->substr(0, prefix.size())) != prefix ||
      !equalConstantTime(auth->substr(prefix.size()), apiKey_))
    throw ApiError(401, "Incorrect API key provided", "", "invalid_api_key");
}

void OpenAiServer::route(const HttpRequest &request, HttpResponder &responder) {
  const std::string &path = request.path;
  const std::string &method = request.method;
  auto allow = [&](const char *allowed) {
    if (method == allowed ||
        (std::string(allowed) == "GET" && method == "HEAD"))
      return true;
    metrics_.countResponse(405);
    responder.send(405, "application/json",
                   ApiError(405, cat("method ", method, " is not allowed on ",
                                     path, "; use ", allowed))
                       .body(),
                   {{"Allow", allowed}});
    return false;
  };

  if (path == "/health") {
    if (!allow("GET"))
      return;
    if (shuttingDown_)
      throw ApiError(503, "the server is shutting down");
    metrics_.countResponse(200);
    responder.send(200, "", "");
    return;
  }
  if (path == "/metrics") {
    if (!allow("GET"))
      return;
    metrics_.countResponse(200);
    responder.send(200, "text/plain; version=0.0.4; charset=utf-8",
                   metrics_.render(loop_.stats()));
    return;
  }
  const bool isModels =
      path == "/v1/models" || path.rfind("/v1/models/", 0) == 0;
  const bool isCompletions = path == "/v1/completions";
  const bool isChat = path == "/v1/chat/completions";
  if (!isModels && !isCompletions && !isChat)
    throw ApiError(404,
                   cat("no route for ", method, " ", path,
                       "; the API has /v1/models, /v1/completions, "
                       "/v1/chat/completions, /health and /metrics"),
                   "", "not_found");
  if (!allow(isModels ? "GET" : "POST"))
    return;
  checkAuth(request);
  if (isModels) {
    Json card;
    card["id"] = model_.name;
    card["object"] = "model";
    card["created"] = static_cast<int64_t>(started_);
    card["owned_by"] = "sol";
    card["root"] = model_.name;
    card["parent"] = nullptr;
    card["max_model_len"] = model_.maxModelLen;
    if (path == "/v1/models") {
      Json list;
      list["object"] = "list";
      list["data"] = Json::array({card});
      sendJson(responder, 200, dump(list));
      return;
    }
    const std::string name = path.substr(std::string("/v1/models/").size());
    if (name != model_.name)
      throw ApiError(404,
                     cat("The model '", name,
                         "' does not exist. This server serves '", model_.name,
                         "'."),
                     "model", "model_not_found", "invalid_request_error");
    sendJson(responder, 200, dump(card));
    return;
  }
  generate(request, responder, isChat);
}

void OpenAiServer::generate(const HttpRequest &request,
                            HttpResponder &responder, bool chat) {
  const std::string *type = request.header("content-type");
  if (!type || mediaType(*type) != "application/json")
    throw ApiError(415, cat("the request body must be JSON with the header "
                            "'Content-Type: application/json'",
                            type ? cat(", got '", *type, "'") : std::string()));
  Json body;
  try {
    body = Json::parse(request.body);
  } catch (const nlohmann::json::parse_error &e) {
    throw ApiError(400, cat("the request body is not valid JSON: ", e.what()),
                   "", "invalid_json");
  }
  if (shuttingDown_)
    throw ApiError(503, "the server is shutting down");
  const GenerationSpec spec = chat ? parseChatRequest(body, model_)
                                   : parseCompletionRequest(body, model_);

  // Without stop strings the text is built on this thread, not the engine's
  // (see Request::detokenize); the output is the same.
  const Tokenizer *tokenizer = model_.text ? &model_.text->tokenizer : nullptr;
  const bool localText = tokenizer && spec.base.stop.empty();
  std::vector<Request> requests;
  for (size_t p = 0; p < spec.prompts.size(); ++p)
    for (int32_t c = 0; c < spec.n; ++c) {
      requests.push_back(makeEngineRequest(spec, p, c, model_));
      requests.back().detokenize = !localText;
    }
  const size_t numChoices = requests.size();
  int64_t promptTokens = 0;
  for (const auto &p : spec.prompts)
    promptTokens += static_cast<int64_t>(p.size());

  auto channel =
      std::make_shared<RequestChannel>(static_cast<int32_t>(numChoices));
  switch (loop_.submit(channel, std::move(requests))) {
  case EngineLoop::SubmitStatus::Queued:
    break;
  case EngineLoop::SubmitStatus::Overloaded:
    throw ApiError(429,
                   "the server is overloaded: too many requests are waiting "
                   "(--max-waiting-requests); retry later",
                   "", "server_overloaded");
  case EngineLoop::SubmitStatus::Stopped:
    throw ApiError(503, "the server is shutting down");
  }
  // Cancels the engine requests when this handler leaves early (client
  // gone, write failed, exception).
  struct AbortGuard {
    EngineLoop &loop;
    std::shared_ptr<RequestChannel> channel;
    bool armed = true;
    ~AbortGuard() {
      if (armed)
        loop.abort(channel);
    }
  } guard{loop_, channel};

  RequestChannel::State state;
  while ((state = channel->waitSettled(kPollInterval)) ==
         RequestChannel::State::Pending)
    if (responder.clientGone())
      return;
  if (state == RequestChannel::State::Rejected) {
    guard.armed = false;
    throw ApiError(shuttingDown_ ? 503 : 400, channel->rejection());
  }

  const std::string id = randomId(chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  const char *object =
      chat ? (spec.stream ? "chat.completion.chunk" : "chat.completion")
           : "text_completion";
  std::vector<Choice> choices(numChoices);
  for (Choice &c : choices) {
    if (spec.logprobs)
      c.formatter = std::make_unique<OpenAiLogprobs>(tokenizer, chat);
    if (localText)
      c.detokenizer.emplace(*tokenizer, /*skipSpecialTokens=*/true);
  }
  // The text of an output the engine did not detokenize, as its StopChecker
  // would have built it: an EOS or stop id that ended the request is not
  // text, and the end flushes what the detokenizer holds back.
  auto fillText = [&](RequestChannel::Item &item) {
    Choice &c = choices[static_cast<size_t>(item.index)];
    if (!c.detokenizer)
      return;
    RequestOutput &o = item.output;
    size_t n = o.newTokenIds.size();
    if (o.finished && o.finishReason == FinishReason::Stop && n > 0)
      --n;
    std::string text;
    for (size_t i = 0; i < n; ++i)
      text += c.detokenizer->push(static_cast<TokenId>(o.newTokenIds[i]));
    if (o.finished)
      text += c.detokenizer->finish();
    o.newText = std::move(text);
  };
  auto completionTokens = [&] {
    int64_t n = 0;
    for (const Choice &c : choices)
      n += c.outputTokens;
    return n;
  };
  auto envelope = [&] {
    Json j;
    j["id"] = id;
    j["object"] = object;
    j["created"] = created;
    j["model"] = model_.name;
    return j;
  };
  auto finishName = [](FinishReason r) -> Json {
    if (r == FinishReason::None)
      return nullptr;
    return std::string(finishReasonName(r));
  };
  size_t done = 0;
  std::vector<RequestChannel::Item> items;

  if (!spec.stream) {
    while (done < numChoices) {
      if (!channel->take(items, kPollInterval)) {
        if (responder.clientGone())
          return;
        continue;
      }
      for (RequestChannel::Item &item : items) {
        fillText(item);
        Choice &c = choices[static_cast<size_t>(item.index)];
        const RequestOutput &o = item.output;
        c.text += o.newText;
        c.ids.insert(c.ids.end(), o.newTokenIds.begin(), o.newTokenIds.end());
        c.outputTokens = std::max(c.outputTokens, o.numOutputTokens);
        if (c.formatter && !o.newTokenIds.empty())
          c.formatter->append(c.logprobs, c.formatter->format(o));
        if (o.finished && !c.finished) {
          c.finished = true;
          c.reason = o.finishReason;
          c.error = item.error;
          ++done;
        }
      }
      // A client that disconnects while outputs keep coming is noticed too.
      if (responder.clientGone())
        return;
    }
    guard.armed = false;
    for (const Choice &c : choices) {
      if (!c.error.empty())
        throw ApiError(500, cat("the engine failed: ", c.error));
      if (c.reason == FinishReason::Abort)
        throw ApiError(503, "the server shut down before the request "
                            "finished");
    }
    Json j = envelope();
    Json list = Json::array();
    for (size_t i = 0; i < numChoices; ++i) {
      Choice &c = choices[i];
      Json x;
      x["index"] = i;
      if (chat) {
        Json m;
        m["role"] = "assistant";
        m["content"] = c.text;
        x["message"] = std::move(m);
      } else {
        x["text"] = c.text;
      }
      x["logprobs"] = c.logprobs;
      x["finish_reason"] = finishName(c.reason);
      if (spec.returnTokenIds) {
        x["prompt_token_ids"] = spec.prompts[i / size_t(spec.n)];
        x["token_ids"] = c.ids;
      }
      list.push_back(std::move(x));
    }
    j["choices"] = std::move(list);
    j["usage"] = usageJson(promptTokens, completionTokens());
    sendJson(responder, 200, dump(j));
    return;
  }

  // Server-sent events.
  metrics_.countResponse(200);
  if (!responder.beginStream(
          200, "text/event-stream",
          {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}}))
    return;
  auto event = [](const Json &j) { return "data: " + dump(j) + "\n\n"; };
  auto chunk = [&](Json choice) {
    Json j = envelope();
    j["choices"] = Json::array({std::move(choice)});
    if (spec.includeUsage)
      j["usage"] = spec.continuousUsage
                       ? usageJson(promptTokens, completionTokens())
                       : Json();
    return event(j);
  };
  std::string out;
  if (chat)
    for (size_t i = 0; i < numChoices; ++i) {
      Json x;
      x["index"] = i;
      x["delta"] = {{"role", "assistant"}, {"content", ""}};
      x["logprobs"] = nullptr;
      x["finish_reason"] = nullptr;
      out += chunk(std::move(x));
    }
  if (!responder.write(out))
    return;
  std::string failure;
  while (done < numChoices) {
    if (!channel->take(items, kPollInterval)) {
      if (responder.clientGone())
        return;
      continue;
    }
    out.clear();
    for (RequestChannel::Item &item : items) {
      fillText(item);
      const size_t index = static_cast<size_t>(item.index);
      Choice &c = choices[index];
      const RequestOutput &o = item.output;
      c.outputTokens = std::max(c.outputTokens, o.numOutputTokens);
      if (o.finished && !c.finished) {
        c.finished = true;
        ++done;
        if (!item.error.empty())
          failure = cat("the engine failed: ", item.error);
        else if (o.finishReason == FinishReason::Abort)
          failure = "the server shut down before the request finished";
      }
      if (o.finishReason == FinishReason::Abort)
        continue;
      const bool hasLogprobs = c.formatter && !o.newTokenIds.empty();
      if (o.newText.empty() && !hasLogprobs && !o.finished &&
          !(spec.returnTokenIds && !o.newTokenIds.empty()))
        continue;
      Json x;
      x["index"] = index;
      if (chat) {
        x["delta"] = Json::object();
        if (!o.newText.empty() || !o.finished)
          x["delta"]["content"] = o.newText;
      } else {
        x["text"] = o.newText;
      }
      x["logprobs"] = hasLogprobs ? c.formatter->format(o) : Json();
      x["finish_reason"] =
          finishName(o.finished ? o.finishReason : FinishReason::None);
      if (spec.returnTokenIds)
        x["token_ids"] = o.newTokenIds;
      out += chunk(std::move(x));
    }
    if (!responder.write(out))
      return;
  }
  guard.armed = false;
  out.clear();
  if (!failure.empty()) {
    Json e = Json::parse(ApiError(shuttingDown_ ? 503 : 500, failure).body());
    out += event(e);
  } else if (spec.includeUsage) {
    Json j = envelope();
    j["choices"] = Json::array();
    j["usage"] = usageJson(promptTokens, completionTokens());
    out += event(j);
  }
  out += "data: [DONE]\n\n";
  if (responder.write(out))
    responder.endStream();
}

} // namespace sol

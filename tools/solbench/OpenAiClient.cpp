//===- OpenAiClient.cpp - solbench: one streamed OpenAI request -----------===//
#include "tools/solbench/OpenAiClient.h"

#include "tools/solbench/SseParser.h"

#include <cctype>

namespace sol::bench {

namespace {

double msSince(Clock::time_point start, Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t - start).count();
}

/// A short, printable excerpt for messages.
std::string excerpt(std::string_view s, size_t n = 120) {
  std::string out;
  for (char c : s.substr(0, n))
    out += c == '\n' || c == '\r' ? ' ' : c;
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return s.size() > n ? out + "..." : out;
}

/// The text a streamed chunk carries: choices[0].text (completions) or
/// choices[0].delta.content (chat; reasoning models stream their thinking as
/// reasoning_content first).
std::string chunkText(const nlohmann::json &choice, bool chat) {
  auto str = [](const nlohmann::json &o, const char *key) -> std::string {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : "";
  };
  if (!chat)
    return str(choice, "text");
  auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object())
    // A server that ignored stream: true answers with "message".
    delta = choice.find("message");
  if (delta == choice.end() || !delta->is_object())
    return "";
  std::string text = str(*delta, "content");
  return text.empty() ? str(*delta, "reasoning_content") : text;
}

} // namespace

/// The message in an error body (see errorMessage), or the body itself.
static std::string bodyMessage(const std::string &body) {
  std::string message;
  try {
    const nlohmann::json j = nlohmann::json::parse(body);
    if (j.is_object()) {
      const nlohmann::json *e = &j;
      if (j.contains("error"))
        e = &j["error"];
      if (e->is_string())
        message = e->get<std::string>();
      else if (e->is_object() && e->contains("message") &&
               (*e)["message"].is_string())
        message = (*e)["message"].get<std::string>();
      else if (j.contains("detail"))
        message = j["detail"].is_string() ? j["detail"].get<std::string>()
                                          : j["detail"].dump();
    }
  } catch (const nlohmann::json::exception &) {
  }
  return excerpt(message.empty() ? body : message, 300);
}

std::string errorMessage(int status, const std::string &reason,
                         const std::string &body) {
  const std::string message = bodyMessage(body);
  std::string out = cat("HTTP ", status);
  if (!reason.empty())
    out += " " + reason;
  return message.empty() ? out : out + ": " + message;
}

OpenAiClient::OpenAiClient(const HttpUrl &server, ClientOptions options)
    : http_(server, std::min(options.timeoutS, 10.0)),
      options_(std::move(options)) {}

HttpRequest OpenAiClient::makeRequest(std::string method,
                                      const std::string &endpoint,
                                      std::string body) const {
  HttpRequest r;
  r.method = std::move(method);
  r.path = http_.server().basePath + endpoint;
  if (!options_.apiKey.empty())
    r.headers.emplace_back("Authorization", "Bearer " + options_.apiKey);
  if (!body.empty()) {
    r.headers.emplace_back("Content-Type", "application/json");
    r.headers.emplace_back("Accept", "text/event-stream");
  }
  r.body = std::move(body);
  return r;
}

nlohmann::json OpenAiClient::body(const Prompt &prompt) const {
  nlohmann::json j;
  j["model"] = options_.model;
  if (options_.endpoint == Endpoint::Chat) {
    j["messages"] = prompt.messages;
    j["max_completion_tokens"] = prompt.maxTokens;
  } else {
    if (!prompt.ids.empty())
      j["prompt"] = prompt.ids;
    else
      j["prompt"] = prompt.text;
    j["max_tokens"] = prompt.maxTokens;
  }
  j["temperature"] = options_.temperature;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  // vLLM's extension (our server's too): generate exactly max_tokens.
  if (options_.ignoreEos)
    j["ignore_eos"] = true;
  return j;
}

RequestResult OpenAiClient::run(const Prompt &prompt) const {
  RequestResult r;
  r.promptTokens = prompt.promptTokens;
  const bool chat = options_.endpoint == Endpoint::Chat;
  const HttpRequest request =
      makeRequest("POST", chat ? "/chat/completions" : "/completions",
                  body(prompt).dump(-1, ' ', false,
                                    nlohmann::json::error_handler_t::replace));

  int status = 0;
  std::string reason;
  bool eventStream = false;
  std::string plainBody; // an error body, or a response that is not a stream
  bool sawDone = false, sawFinish = false, sawChoices = false;
  Clock::time_point start, firstText, firstChoices, lastText;
  int64_t usageTokens = -1;

  auto onEvent = [&](std::string_view data) {
    const Clock::time_point now = Clock::now();
    if (data == "[DONE]") {
      sawDone = true;
      return;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(data);
    } catch (const nlohmann::json::parse_error &) {
      fail("the server sent an event that is not JSON: '", excerpt(data), "'");
    }
    if (!j.is_object())
      fail("the server sent an event that is not a JSON object: '",
           excerpt(data), "'");
    if (j.contains("error"))
      fail("error in the stream: ", bodyMessage(std::string(data)));
    auto choices = j.find("choices");
    if (choices != j.end() && choices->is_array() && !choices->empty()) {
      const nlohmann::json &c = (*choices)[0];
      if (!sawChoices) {
        sawChoices = true;
        firstChoices = now;
      }
      if (c.contains("finish_reason") && !c["finish_reason"].is_null())
        sawFinish = true;
      if (!chunkText(c, chat).empty()) {
        if (r.textChunks == 0)
          firstText = now;
        else
          r.itlMs.push_back(msSince(lastText, now));
        lastText = now;
        ++r.textChunks;
      }
    }
    auto usage = j.find("usage");
    if (usage != j.end() && usage->is_object()) {
      auto ct = usage->find("completion_tokens");
      if (ct != usage->end() && ct->is_number_integer())
        usageTokens = ct->get<int64_t>();
      auto pt = usage->find("prompt_tokens");
      if (pt != usage->end() && pt->is_number_integer())
        r.promptTokens = pt->get<int64_t>();
    }
  };
  SseParser sse(onEvent);
  auto onHeaders = [&](const HttpResponseParser &p) {
    status = p.status();
    reason = p.reason();
    const std::string type = p.header("content-type").value_or("");
    eventStream =
        status == 200 && type.find("text/event-stream") != std::string::npos;
  };
  auto onBody = [&](std::string_view bytes) {
    if (eventStream)
      sse.feed(bytes);
    else if (plainBody.size() < (16u << 20))
      plainBody.append(bytes);
  };

  try {
    start = Clock::now();
    const auto timeout = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options_.timeoutS));
    http_.send(request, start + timeout, options_.timeoutS, onHeaders, onBody);
    if (eventStream)
      sse.finish();
    const Clock::time_point end = Clock::now();
    r.e2eMs = msSince(start, end);
    if (status != 200) {
      r.error = errorMessage(status, reason, plainBody);
      return r;
    }
    if (!eventStream) {
      // Not streamed (the server ignored stream: true): one whole response.
      onEvent(plainBody);
      sawDone = true;
      r.itlMs.clear();
    }
    if (!sawDone && !sawFinish) {
      r.error = "the stream ended without 'data: [DONE]' or a finish_reason";
      return r;
    }
    r.usageReported = usageTokens >= 0;
    r.outputTokens = r.usageReported ? usageTokens : r.textChunks;
    // TTFT: the first text; a response without text (an immediate stop)
    // counts its first chunk.
    r.ttftMs = r.textChunks ? msSince(start, firstText)
               : sawChoices ? msSince(start, firstChoices)
                            : r.e2eMs;
    r.ok = true;
  } catch (const std::exception &e) {
    r.error = e.what();
    r.e2eMs = msSince(start, Clock::now());
  }
  return r;
}

ModelList OpenAiClient::listModels() const {
  const HttpRequest request = makeRequest("GET", "/models", "");
  ModelList list;
  std::string reason, body;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options_.timeoutS));
  http_.send(
      request, deadline, options_.timeoutS,
      [&](const HttpResponseParser &p) {
        list.status = p.status();
        reason = p.reason();
      },
      [&](std::string_view bytes) {
        if (body.size() < (16u << 20))
          body.append(bytes);
      });
  if (list.status != 200) {
    list.error = errorMessage(list.status, reason, body);
    return list;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(body);
    for (const nlohmann::json &m : j.at("data"))
      list.ids.push_back(m.at("id").get<std::string>());
  } catch (const nlohmann::json::exception &) {
    list.error = cat("expected {\"data\": [{\"id\": ...}, ...]}, got '",
                     excerpt(body), "'");
  }
  return list;
}

} // namespace sol::bench

//===- OpenAiServer.h - The OpenAI-compatible API over HTTP ------*- C++
//-*-===//
//
// The HTTP handler of `solrun --serve`: routes
//   GET  /health, /metrics, /v1/models, /v1/models/{name}
//   POST /v1/completions, /v1/chat/completions
// checks the API key (Bearer, /v1 paths only), the content type and the
// JSON, turns a request into engine requests (OpenAiRequest), submits them
// to the EngineLoop and answers with one JSON body or a server-sent event
// stream. While it waits it watches the connection: a client that leaves
// cancels its request, which frees its KV blocks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/server/ApiError.h"
#include "runtime/server/EngineLoop.h"
#include "runtime/server/HttpServer.h"
#include "runtime/server/Metrics.h"
#include "runtime/server/OpenAiRequest.h"

#include <atomic>
#include <ctime>
#include <string>

namespace sol {

class OpenAiServer {
public:
  /// `apiKey` empty: no authentication.
  OpenAiServer(ServedModel model, EngineLoop &loop, Metrics &metrics,
               std::string apiKey);

  /// The HttpHandler.
  void handle(const HttpRequest &request, HttpResponder &responder);
  /// The body of errors the HTTP layer answers itself (HttpErrorBody).
  std::pair<std::string, std::string> errorBody(int status,
                                                const std::string &message);

  /// From now on new requests get 503, and requests cut short by the
  /// shutdown are answered 503 (or end their stream with an error event).
  void setShuttingDown() { shuttingDown_ = true; }

  const ServedModel &model() const { return model_; }

private:
  void route(const HttpRequest &request, HttpResponder &responder);
  void generate(const HttpRequest &request, HttpResponder &responder,
                bool chat);
  void checkAuth(const HttpRequest &request) const;
  void sendJson(HttpResponder &responder, int status, const std::string &body,
                const HttpHeaders &extra = {});
  void sendError(HttpResponder &responder, const ApiError &error);

  ServedModel model_;
  EngineLoop &loop_;
  Metrics &metrics_;
  std::string apiKey_;
  std::atomic<bool> shuttingDown_{false};
  std::time_t started_;
};

} // namespace sol

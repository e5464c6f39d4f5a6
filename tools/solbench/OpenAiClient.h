//===- OpenAiClient.h - solbench: one streamed OpenAI request ---*- C++ -*-===//
//
// Sends a prompt to /v1/completions or /v1/chat/completions with
// `stream: true` and times the answer as it arrives: TTFT is the time to
// the first chunk carrying text, inter-token latencies the times between
// such chunks. Output tokens come from the final usage chunk
// (stream_options.include_usage) or, without one, from the chunk count.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/solbench/HttpClient.h"
#include "tools/solbench/Workload.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sol::bench {

struct RequestResult {
  bool ok = false;
  /// Why the request failed; the same text for the same cause, so that
  /// failures can be counted by reason.
  std::string error;
  double startS = 0;         ///< when it was sent, from the start of its level
  double ttftMs = 0;         ///< to the first chunk with text
  double e2eMs = 0;          ///< to the end of the response
  std::vector<double> itlMs; ///< between successive chunks with text
  int64_t promptTokens = 0;
  int64_t outputTokens = 0;
  int64_t textChunks = 0;
  bool usageReported = false; ///< output tokens are the server's count
};

struct ModelList {
  int status = 0;
  std::string error; ///< when status is not 200 or the body is not a list
  std::vector<std::string> ids;
};

struct ClientOptions {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;
  std::string apiKey;
  bool ignoreEos = true;
  double temperature = 0;
  double timeoutS = 600;
};

class OpenAiClient {
public:
  /// Throws HttpError when the host name does not resolve.
  OpenAiClient(const HttpUrl &server, ClientOptions options);

  /// The JSON body sent for `prompt`.
  nlohmann::json body(const Prompt &prompt) const;
  /// Sends one request and times it; never throws (failures are in the
  /// result).
  RequestResult run(const Prompt &prompt) const;

  /// GET /v1/models. Throws HttpError when the server cannot be reached;
  /// an error response is returned.
  ModelList listModels() const;

  const ClientOptions &options() const { return options_; }
  const HttpUrl &server() const { return http_.server(); }
  void setModel(std::string model) { options_.model = std::move(model); }

private:
  HttpRequest makeRequest(std::string method, const std::string &endpoint,
                          std::string body) const;

  HttpClient http_;
  ClientOptions options_;
};

/// The message of an error response: OpenAI's {"error": {"message": ...}},
/// {"message": ...}, {"detail": ...} or the start of the body's text.
std::string errorMessage(int status, const std::string &reason,
                         const std::string &body);

} // namespace sol::bench

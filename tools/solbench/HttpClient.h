//===- HttpClient.h - solbench: a small HTTP/1.1 client ---------*- C++ -*-===//
//
// POSIX sockets, one connection per request (Connection: close), so no
// library beyond libc is needed. Every wait is bounded: connecting by the
// connect timeout, the whole exchange by the request's deadline. Failures
// throw HttpError with a message that names the server and what went wrong;
// the message does not vary between requests, so failures can be grouped by
// it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Error.h"
#include "tools/solbench/HttpResponseParser.h"
#include "tools/solbench/Url.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

struct addrinfo;

namespace sol::bench {

using Clock = std::chrono::steady_clock;

/// A request that failed before a complete response arrived: connection,
/// timeout or malformed response.
class HttpError : public Error {
public:
  using Error::Error;
};

struct HttpRequest {
  std::string method = "GET";
  std::string path; ///< absolute path, e.g. "/v1/completions"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

class HttpClient {
public:
  /// Resolves the server's address once; throws HttpError when the host
  /// name does not resolve.
  HttpClient(HttpUrl server, double connectTimeoutS);
  ~HttpClient();
  HttpClient(const HttpClient &) = delete;
  HttpClient &operator=(const HttpClient &) = delete;

  /// Sends `request` on a new connection and reads the whole response,
  /// calling `onHeaders` when the headers are in, then passing each decoded
  /// piece of body to `onBody` as it arrives. Returns
  /// the parser (status and headers) once the response is complete. Throws
  /// HttpError when the exchange fails or `deadline` passes (`timeoutS` only
  /// words the message), sol::Error on a malformed response or whatever
  /// `onBody` throws.
  HttpResponseParser send(const HttpRequest &request,
                          Clock::time_point deadline, double timeoutS,
                          const HttpResponseParser::HeadersHandler &onHeaders,
                          const HttpResponseParser::BodyHandler &onBody) const;

  const HttpUrl &server() const { return server_; }

private:
  int connect(Clock::time_point deadline, double timeoutS) const;

  HttpUrl server_;
  double connectTimeoutS_;
  addrinfo *addresses_ = nullptr;
};

/// Serializes the request line, headers (Host, Content-Length, Connection:
/// close added) and body.
std::string formatRequest(const HttpUrl &server, const HttpRequest &request);

} // namespace sol::bench

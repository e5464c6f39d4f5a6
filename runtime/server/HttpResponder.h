//===- HttpResponder.h - Writes one response on a connection -----*- C++
//-*-===//
//
// A handler answers a request through its responder: either one whole
// response with a Content-Length, or a stream (server-sent events) written
// piece by piece, as chunked transfer coding on HTTP/1.1 and as a body ended
// by closing the connection on HTTP/1.0. Every write reports whether the
// client is still there, and clientGone() checks for a disconnect while the
// handler waits, so a request whose client left can be cancelled.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/server/HttpRequest.h"

#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sol {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

/// "OK", "Not Found", ... for a status code ("" when unknown).
std::string_view httpReasonPhrase(int status);

class HttpResponder {
public:
  /// `keepAlive`: whether the connection may serve another request after
  /// this one (the request asked for it and the server is not draining).
  /// `draining`, when given, closes the connection after a response that
  /// starts once it is set (the server is shutting down).
  HttpResponder(int fd, const HttpRequest &request, bool keepAlive,
                const std::atomic<bool> *draining = nullptr)
      : fd_(fd), request_(request), keepAlive_(keepAlive), draining_(draining) {
  }
  HttpResponder(const HttpResponder &) = delete;
  HttpResponder &operator=(const HttpResponder &) = delete;

  const HttpRequest &request() const { return request_; }

  /// One whole response. False when the client is gone.
  bool send(int status, std::string_view contentType, std::string_view body,
            const HttpHeaders &extra = {});

  /// Starts a streamed response; then write() pieces and endStream().
  bool beginStream(int status, std::string_view contentType,
                   const HttpHeaders &extra = {});
  bool write(std::string_view data);
  bool endStream();

  /// Whether the client closed or reset its side of the connection (checked
  /// without blocking). A client that pipelines its next request is not
  /// gone.
  bool clientGone();

  /// Whether send() or beginStream() was called.
  bool responded() const { return responded_; }
  /// Whether the connection can serve another request afterwards.
  bool keepAlive() const {
    return keepAlive_ && !failed_ && !(draining_ && draining_->load());
  }
  /// Closes the connection after this response.
  void closeAfter() { keepAlive_ = false; }

private:
  bool sendAll(std::string_view data);
  std::string head(int status, std::string_view contentType,
                   const HttpHeaders &extra);

  int fd_;
  const HttpRequest &request_;
  bool keepAlive_;
  const std::atomic<bool> *draining_;
  bool responded_ = false;
  bool chunked_ = false;
  bool failed_ = false;
};

} // namespace sol

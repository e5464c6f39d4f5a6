//===- HttpParser.h - Incremental HTTP/1.x request parser --------*- C++
//-*-===//
//
// Bytes from a socket go in as they arrive; a request comes out once its head
// and its Content-Length body are complete. Bytes after it (a pipelined next
// request) stay buffered for the next one. Every limit violation or
// malformation ends in an error with the HTTP status to answer with:
//   400 malformed request line, header or Content-Length
//   411 chunked request bodies (we only read Content-Length bodies)
//   413 body larger than the limit (known from the head, before reading it)
//   414 request line too long
//   431 header section too large or too many fields
//   501 another transfer coding; 505 an HTTP version other than 1.0/1.1
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/server/HttpRequest.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace sol {

struct HttpLimits {
  size_t maxRequestLineBytes = 8 * 1024;
  /// The whole head: request line, header fields and the blank line.
  size_t maxHeaderBytes = 32 * 1024;
  size_t maxHeaderFields = 100;
  size_t maxBodyBytes = 1 << 20;
};

class HttpParser {
public:
  enum class Status { NeedMore, Complete, Error };

  explicit HttpParser(HttpLimits limits = {}) : limits_(limits) {}

  /// Appends received bytes.
  void append(std::string_view bytes) { buffer_.append(bytes); }
  /// Parses what is buffered as far as it goes. After Complete, request()
  /// holds the request until next(); after Error, errorStatus() and
  /// errorMessage() say why (the connection should answer and close).
  Status parse();

  /// Whether the head of the current request has been parsed (request()
  /// then has everything but the body).
  bool headParsed() const { return headParsed_; }
  /// Whether bytes of the current request have arrived.
  bool started() const { return headParsed_ || !buffer_.empty(); }
  HttpRequest &request() { return request_; }
  int errorStatus() const { return errorStatus_; }
  const std::string &errorMessage() const { return errorMessage_; }

  /// Drops the completed request; bytes already received for the next one
  /// (pipelining) stay.
  void next();

private:
  Status error(int status, std::string message);
  Status parseHead(size_t headEnd);

  HttpLimits limits_;
  std::string buffer_;
  HttpRequest request_;
  bool headParsed_ = false;
  size_t bodyStart_ = 0;
  size_t bodyLength_ = 0;
  int errorStatus_ = 0;
  std::string errorMessage_;
};

} // namespace sol

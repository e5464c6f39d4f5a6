//===- HttpResponseParser.h - solbench: incremental HTTP/1.1 parser -*- C++
//-*-//
//
// Parses an HTTP/1.1 response as its bytes arrive, in pieces of any size:
// the status line, the headers, then the body framed by Content-Length, by
// chunked transfer coding, or by the end of the connection. Decoded body bytes
// go to a callback as soon as they are known, so a streamed (SSE) body can be
// timed while it arrives. Malformed input throws sol::Error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sol::bench {

class HttpResponseParser {
public:
  using BodyHandler = std::function<void(std::string_view)>;
  using HeadersHandler = std::function<void(const HttpResponseParser &)>;

  /// `onHeaders` (optional) is called once the final response's headers
  /// are in, before any of its body.
  explicit HttpResponseParser(BodyHandler onBody,
                              HeadersHandler onHeaders = {});

  /// Consumes the next bytes read from the connection; may call the body
  /// handler. Bytes after the end of the response are ignored.
  void feed(std::string_view data);
  /// The connection reached its end. Completes a body delimited by the
  /// connection's end; throws when the response is incomplete.
  void finish();

  bool headersComplete() const { return state_ > State::Headers; }
  bool complete() const { return state_ == State::Done; }
  int status() const { return status_; }
  const std::string &reason() const { return reason_; }
  /// The value of the first header named `name` (case-insensitive).
  std::optional<std::string> header(std::string_view name) const;

  /// Longest status, header or chunk-size line accepted.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

private:
  enum class State {
    StatusLine,
    Headers,
    FixedBody,  // Content-Length
    ChunkSize,  // the hex size line of the next chunk
    ChunkData,  // bytes of the current chunk
    ChunkEnd,   // the line break after a chunk's data
    Trailers,   // header lines after the last chunk
    UntilClose, // no framing: the body ends with the connection
    Done,
  };

  /// Takes one line (without its line break) from buffer_, or returns false
  /// when buffer_ holds no complete line yet.
  bool takeLine(std::string &line);
  void parseStatusLine(const std::string &line);
  void parseHeaderLine(const std::string &line);
  void startBody();
  void parseChunkSize(const std::string &line);
  void emit(std::string_view bytes);

  BodyHandler onBody_;
  HeadersHandler onHeaders_;
  State state_ = State::StatusLine;
  std::string buffer_;
  int status_ = 0;
  std::string reason_;
  std::vector<std::pair<std::string, std::string>> headers_;
  uint64_t remaining_ = 0; // of the fixed body or the current chunk
};

} // namespace sol::bench

//===- SseParser.h - solbench: server-sent events -------------*- C++ -*-===//
//
// Splits a text/event-stream body into events as the bytes arrive, however
// the reads cut it: `data:` lines are collected (several join with '\n') and
// a blank line dispatches the event. Comments (':') and the other fields
// (event, id, retry) are skipped; lines may end in LF, CRLF or CR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace sol::bench {

class SseParser {
public:
  using EventHandler = std::function<void(std::string_view data)>;

  explicit SseParser(EventHandler onEvent);

  void feed(std::string_view bytes);
  /// The stream ended: dispatches an event whose blank line never came.
  void finish();

  /// Longest line accepted (a single event's JSON can be large with
  /// logprobs, but not unbounded).
  static constexpr size_t kMaxLineBytes = 16 * 1024 * 1024;

private:
  void line(std::string_view text);
  void dispatch();

  EventHandler onEvent_;
  std::string line_;
  std::string data_;
  bool hasData_ = false;
  bool afterCr_ = false; // the last byte was CR: skip an LF that follows
};

} // namespace sol::bench

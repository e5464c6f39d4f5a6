//===- SseParser.cpp - solbench: server-sent events -----------------------===//
#include "tools/solbench/SseParser.h"

#include "runtime/support/Error.h"

namespace sol::bench {

SseParser::SseParser(EventHandler onEvent) : onEvent_(std::move(onEvent)) {}

void SseParser::feed(std::string_view bytes) {
  size_t pos = 0;
  if (afterCr_ && !bytes.empty() && bytes[0] == '\n')
    pos = 1;
  afterCr_ = false;
  while (pos < bytes.size()) {
    const size_t end = bytes.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) {
      line_.append(bytes.substr(pos));
      if (line_.size() > kMaxLineBytes)
        fail("malformed event stream: a line longer than ", kMaxLineBytes,
             " bytes");
      return;
    }
    if (line_.empty()) {
      line(bytes.substr(pos, end - pos));
    } else {
      line_.append(bytes.substr(pos, end - pos));
      line(line_);
      line_.clear();
    }
    pos = end + 1;
    if (bytes[end] == '\r') {
      if (pos == bytes.size())
        afterCr_ = true;
      else if (bytes[pos] == '\n')
        ++pos;
    }
  }
}

void SseParser::line(std::string_view text) {
  if (text.empty()) {
    dispatch();
    return;
  }
  if (text[0] == ':')
    return; // a comment (keep-alive)
  const size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  if (field != "data")
    return;
  std::string_view value = colon == std::string_view::npos
                               ? std::string_view()
                               : text.substr(colon + 1);
  if (!value.empty() && value[0] == ' ')
    value.remove_prefix(1);
  if (hasData_)
    data_ += '\n';
  data_.append(value);
  hasData_ = true;
}

void SseParser::dispatch() {
  if (!hasData_)
    return;
  std::string data;
  data.swap(data_);
  hasData_ = false;
  onEvent_(data);
}

void SseParser::finish() {
  if (!line_.empty()) {
    std::string last;
    last.swap(line_);
    line(last);
  }
  dispatch();
}

} // namespace sol::bench

//===- HttpResponseParser.cpp - solbench: incremental HTTP/1.1 parser -----===//
#include "tools/solbench/HttpResponseParser.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cctype>

namespace sol::bench {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t'))
    ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t'))
    --e;
  return std::string(s.substr(b, e - b));
}

/// A short, printable excerpt of bad input for an error message.
std::string excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60))
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return s.size() > 60 ? out + "..." : out;
}

} // namespace

HttpResponseParser::HttpResponseParser(BodyHandler onBody,
                                       HeadersHandler onHeaders)
    : onBody_(std::move(onBody)), onHeaders_(std::move(onHeaders)) {}

std::optional<std::string>
HttpResponseParser::header(std::string_view name) const {
  const std::string key = lower(name);
  for (const auto &[k, v] : headers_)
    if (k == key)
      return v;
  return std::nullopt;
}

bool HttpResponseParser::takeLine(std::string &line) {
  const size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) {
    if (buffer_.size() > kMaxLineBytes)
      fail("malformed HTTP response: a line longer than ", kMaxLineBytes,
           " bytes");
    return false;
  }
  // HTTP lines end in CRLF; a bare LF is accepted as well.
  const size_t end = nl > 0 && buffer_[nl - 1] == '\r' ? nl - 1 : nl;
  line.assign(buffer_, 0, end);
  buffer_.erase(0, nl + 1);
  return true;
}

void HttpResponseParser::emit(std::string_view bytes) {
  if (!bytes.empty() && onBody_)
    onBody_(bytes);
}

void HttpResponseParser::parseStatusLine(const std::string &line) {
  // HTTP/1.1 200 OK
  if (line.rfind("HTTP/", 0) != 0)
    fail("malformed HTTP response: the status line '", excerpt(line),
         "' does not start with HTTP/ (is this an HTTP server?)");
  const size_t sp = line.find(' ');
  if (sp == std::string::npos || line.size() < sp + 4 ||
      !std::all_of(line.begin() + sp + 1, line.begin() + sp + 4,
                   [](unsigned char c) { return std::isdigit(c); }) ||
      (line.size() > sp + 4 && line[sp + 4] != ' '))
    fail("malformed HTTP response: no 3-digit status code in '", excerpt(line),
         "'");
  status_ = std::stoi(line.substr(sp + 1, 3));
  reason_ = line.size() > sp + 5 ? line.substr(sp + 5) : "";
  headers_.clear();
  state_ = State::Headers;
}

void HttpResponseParser::parseHeaderLine(const std::string &line) {
  if (line[0] == ' ' || line[0] == '\t') {
    // Obsolete line folding: continues the previous header's value.
    if (headers_.empty())
      fail("malformed HTTP response: a continuation line before any header");
    headers_.back().second.append(" ").append(trim(line));
    return;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos || colon == 0)
    fail("malformed HTTP response: the header line '", excerpt(line),
         "' has no name and ':'");
  headers_.emplace_back(lower(line.substr(0, colon)),
                        trim(std::string_view(line).substr(colon + 1)));
}

void HttpResponseParser::startBody() {
  // 1xx responses are interim: the real response follows.
  if (status_ >= 100 && status_ < 200) {
    state_ = State::StatusLine;
    return;
  }
  if (onHeaders_)
    onHeaders_(*this);
  if (status_ == 204 || status_ == 304) {
    state_ = State::Done;
    return;
  }
  if (auto te = header("transfer-encoding")) {
    const std::string codings = lower(*te);
    // The last coding must be chunked for the length to be known.
    const size_t comma = codings.rfind(',');
    if (trim(comma == std::string::npos
                 ? codings
                 : codings.substr(comma + 1)) != "chunked")
      fail("unsupported Transfer-Encoding '", *te,
           "' (solbench understands chunked)");
    state_ = State::ChunkSize;
    return;
  }
  if (auto cl = header("content-length")) {
    const std::string v = trim(*cl);
    if (v.empty() || v.size() > 18 ||
        !std::all_of(v.begin(), v.end(),
                     [](unsigned char c) { return std::isdigit(c); }))
      fail("malformed HTTP response: Content-Length '", excerpt(*cl),
           "' is not a number");
    for (const auto &[k, other] : headers_)
      if (k == "content-length" && trim(other) != v)
        fail("malformed HTTP response: two different Content-Length "
             "headers ('",
             v, "' and '", excerpt(other), "')");
    remaining_ = std::stoull(v);
    state_ = remaining_ ? State::FixedBody : State::Done;
    return;
  }
  state_ = State::UntilClose;
}

void HttpResponseParser::parseChunkSize(const std::string &line) {
  // 1a3f[;extension=value]
  const std::string size = trim(line.substr(0, line.find(';')));
  if (size.empty() || size.size() > 15 ||
      !std::all_of(size.begin(), size.end(),
                   [](unsigned char c) { return std::isxdigit(c); }))
    fail("malformed HTTP response: bad chunk size line '", excerpt(line), "'");
  remaining_ = std::stoull(size, nullptr, 16);
  state_ = remaining_ ? State::ChunkData : State::Trailers;
}

void HttpResponseParser::feed(std::string_view data) {
  if (state_ == State::Done)
    return;
  // Body bytes pass through without being copied into buffer_.
  if (buffer_.empty() &&
      (state_ == State::UntilClose ||
       ((state_ == State::FixedBody || state_ == State::ChunkData) &&
        data.size() <= remaining_))) {
    emit(data);
    if (state_ != State::UntilClose) {
      remaining_ -= data.size();
      if (remaining_ == 0)
        state_ = state_ == State::FixedBody ? State::Done : State::ChunkEnd;
    }
    return;
  }
  buffer_.append(data);
  std::string line;
  while (state_ != State::Done) {
    switch (state_) {
    case State::StatusLine:
      if (!takeLine(line))
        return;
      // Tolerate blank lines before the status line.
      if (!line.empty())
        parseStatusLine(line);
      break;
    case State::Headers:
      if (!takeLine(line))
        return;
      if (line.empty())
        startBody();
      else
        parseHeaderLine(line);
      break;
    case State::FixedBody:
    case State::ChunkData: {
      if (buffer_.empty())
        return;
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(remaining_, buffer_.size()));
      emit(std::string_view(buffer_).substr(0, n));
      buffer_.erase(0, n);
      remaining_ -= n;
      if (remaining_ == 0)
        state_ = state_ == State::FixedBody ? State::Done : State::ChunkEnd;
      break;
    }
    case State::ChunkEnd:
      if (!takeLine(line))
        return;
      if (!line.empty())
        fail("malformed HTTP response: a chunk is longer than its size ('",
             excerpt(line), "' follows it)");
      state_ = State::ChunkSize;
      break;
    case State::ChunkSize:
      if (!takeLine(line))
        return;
      parseChunkSize(line);
      break;
    case State::Trailers:
      if (!takeLine(line))
        return;
      if (line.empty())
        state_ = State::Done;
      break;
    case State::UntilClose:
      emit(buffer_);
      buffer_.clear();
      return;
    case State::Done:
      break;
    }
  }
}

void HttpResponseParser::finish() {
  switch (state_) {
  case State::UntilClose:
    state_ = State::Done;
    return;
  case State::Done:
    return;
  case State::StatusLine:
  case State::Headers:
    fail(status_ == 0 && buffer_.empty()
             ? "the server closed the connection without a response"
             : "the server closed the connection in the middle of the "
               "response headers");
  default:
    fail("the server closed the connection before the end of the response "
         "body");
  }
}

} // namespace sol::bench

//===- HttpParser.cpp - Incremental HTTP/1.x request parser ---------------===//
#include "runtime/server/HttpParser.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cctype>

namespace sol {

namespace {

// RFC 9110 token characters (method and field names).
bool isTokenChar(unsigned char c) {
  if (std::isalnum(c))
    return true;
  switch (c) {
  case '!':
  case '#':
  case '$':
  case '%':
  case '&':
  case '\'':
  case '*':
  case '+':
  case '-':
  case '.':
  case '^':
  case '_':
  case '`':
  case '|':
  case '~':
    return true;
  default:
    return false;
  }
}

bool isToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return isTokenChar(static_cast<unsigned char>(c));
  });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

/// Whether the comma-separated list `value` holds `token` (case-insensitive).
bool listHas(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (lower(trim(value.substr(0, comma))) == token)
      return true;
    if (comma == std::string_view::npos)
      break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

/// Printable text for an error message (control bytes escaped, cut short).
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char *const kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (s.size() > 64)
    out += "...";
  return out;
}

} // namespace

HttpParser::Status HttpParser::error(int status, std::string message) {
  errorStatus_ = status;
  errorMessage_ = std::move(message);
  return Status::Error;
}

HttpParser::Status HttpParser::parse() {
  if (errorStatus_)
    return Status::Error;
  if (!headParsed_) {
    // Empty lines before a request line are ignored (RFC 9112 2.2): some
    // clients send a CRLF after a POST body.
    size_t skip = 0;
    while (skip + 1 < buffer_.size() && buffer_[skip] == '\r' &&
           buffer_[skip + 1] == '\n')
      skip += 2;
    if (skip)
      buffer_.erase(0, skip);
    const size_t headEnd = buffer_.find("\r\n\r\n");
    const size_t lineEnd = buffer_.find("\r\n");
    if ((lineEnd == std::string::npos ? buffer_.size() : lineEnd) >
        limits_.maxRequestLineBytes)
      return error(414, cat("the request line is longer than ",
                            limits_.maxRequestLineBytes, " bytes"));
    if (headEnd == std::string::npos) {
      if (buffer_.size() > limits_.maxHeaderBytes)
        return error(431, cat("the request head is larger than ",
                              limits_.maxHeaderBytes, " bytes"));
      return Status::NeedMore;
    }
    if (headEnd + 4 > limits_.maxHeaderBytes)
      return error(431, cat("the request head is larger than ",
                            limits_.maxHeaderBytes, " bytes"));
    if (Status s = parseHead(headEnd); s == Status::Error)
      return s;
  }
  if (buffer_.size() - bodyStart_ < bodyLength_)
    return Status::NeedMore;
  request_.body.assign(buffer_, bodyStart_, bodyLength_);
  return Status::Complete;
}

HttpParser::Status HttpParser::parseHead(size_t headEnd) {
  request_ = HttpRequest();
  const std::string_view head(buffer_.data(), headEnd);
  const size_t lineEnd = head.find("\r\n");
  const std::string_view line = head.substr(0, lineEnd);
  // request-line = method SP request-target SP HTTP-version
  const size_t sp1 = line.find(' ');
  const size_t sp2 =
      sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos)
    return error(400, cat("malformed request line '", printable(line),
                          "' (expected METHOD /path HTTP/1.1)"));
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!isToken(method))
    return error(400, cat("malformed method '", printable(method), "'"));
  if (target.empty() || target.front() != '/' ||
      std::any_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) <= 0x20 ||
               static_cast<unsigned char>(c) == 0x7f;
      }))
    return error(400, cat("malformed request target '", printable(target),
                          "' (expected a path starting with /)"));
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" ||
      !std::isdigit(static_cast<unsigned char>(version[5])) ||
      version[6] != '.' ||
      !std::isdigit(static_cast<unsigned char>(version[7])))
    return error(400, cat("malformed HTTP version '", printable(version), "'"));
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
    return error(505, cat("HTTP version ", version,
                          " is not supported (use HTTP/1.1 or HTTP/1.0)"));
  request_.method = std::string(method);
  request_.target = std::string(target);
  const size_t q = target.find('?');
  request_.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos)
    request_.query = std::string(target.substr(q + 1));
  request_.versionMinor = version[7] - '0';

  // Header fields: name ":" OWS value OWS.
  std::string_view rest =
      lineEnd == std::string_view::npos ? "" : head.substr(lineEnd + 2);
  while (!rest.empty()) {
    const size_t end = rest.find("\r\n");
    const std::string_view field = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 2);
    if (field.front() == ' ' || field.front() == '\t')
      return error(400, "obsolete header line folding is not accepted");
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || !isToken(field.substr(0, colon)))
      return error(400, cat("malformed header field '", printable(field), "'"));
    const std::string_view value = trim(field.substr(colon + 1));
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f)
        return error(400, cat("header '", field.substr(0, colon),
                              "' has a control character in its value"));
    }
    if (request_.headers.size() == limits_.maxHeaderFields)
      return error(
          431, cat("more than ", limits_.maxHeaderFields, " header fields"));
    request_.headers.emplace_back(lower(field.substr(0, colon)),
                                  std::string(value));
  }

  // Framing of the body: Content-Length only.
  bool haveLength = false;
  size_t length = 0;
  for (const auto &[name, value] : request_.headers) {
    if (name == "transfer-encoding") {
      if (listHas(value, "chunked"))
        return error(411, "chunked request bodies are not supported; send "
                          "the body with a Content-Length header");
      return error(501, cat("Transfer-Encoding '", printable(value),
                            "' is not supported; send the body with a "
                            "Content-Length header"));
    }
    if (name != "content-length")
      continue;
    if (value.empty() || value.size() > 18 ||
        !std::all_of(value.begin(), value.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      return error(400, cat("malformed Content-Length '", printable(value),
                            "' (expected a decimal byte count)"));
    const size_t n = std::stoull(value);
    if (haveLength && n != length)
      return error(400, "conflicting Content-Length headers");
    haveLength = true;
    length = n;
  }
  if (length > limits_.maxBodyBytes)
    return error(413,
                 cat("the request body has ", length, " bytes; the limit is ",
                     limits_.maxBodyBytes, " (--max-request-bytes)"));

  if (const std::string *c = request_.header("connection")) {
    if (listHas(*c, "close"))
      request_.keepAlive = false;
    else
      request_.keepAlive =
          request_.versionMinor == 1 || listHas(*c, "keep-alive");
  } else {
    request_.keepAlive = request_.versionMinor == 1;
  }
  if (const std::string *e = request_.header("expect"))
    request_.expectContinue =
        request_.versionMinor == 1 && lower(*e) == "100-continue";

  headParsed_ = true;
  bodyStart_ = headEnd + 4;
  bodyLength_ = length;
  return Status::NeedMore;
}

void HttpParser::next() {
  if (headParsed_ && buffer_.size() >= bodyStart_ + bodyLength_)
    buffer_.erase(0, bodyStart_ + bodyLength_);
  else
    buffer_.clear();
  request_ = HttpRequest();
  headParsed_ = false;
  bodyStart_ = bodyLength_ = 0;
  errorStatus_ = 0;
  errorMessage_.clear();
}

} // namespace sol

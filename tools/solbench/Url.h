//===- Url.h - solbench: the server's base URL ------------------*- C++ -*-===//
//
// solbench speaks plain HTTP/1.1 only (no TLS library may be linked: the
// binary must run on machines without extra shared libraries), so the only
// URLs it accepts are http://host[:port][/path].
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace sol::bench {

struct HttpUrl {
  std::string host; ///< name or address, without the brackets of IPv6
  uint16_t port = 80;
  /// The base path without a trailing '/', e.g. "/v1"; "/v1" when the URL
  /// has none (the OpenAI convention).
  std::string basePath;

  /// "host:port" ("[::1]:8000" for IPv6), for the Host header and messages.
  std::string hostPort() const;
  /// The base URL written back, e.g. "http://127.0.0.1:8000/v1".
  std::string str() const;
};

/// Parses "http://host[:port][/path]" (a URL without scheme is taken as
/// http). Throws sol::Error naming the problem; https:// is rejected.
HttpUrl parseHttpUrl(const std::string &text);

} // namespace sol::bench

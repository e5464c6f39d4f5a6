//===- HttpRequest.h - One parsed HTTP/1.x request ---------------*- C++
//-*-===//
//
// What the HTTP parser hands to a handler: method, target split into path and
// query, the header fields (names lower-cased, values trimmed) and the body.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sol {

struct HttpRequest {
  std::string method;
  /// The request target as sent ("/v1/models?x=1"), and its two parts.
  std::string target;
  std::string path;
  std::string query;
  /// 0 for HTTP/1.0, 1 for HTTP/1.1.
  int versionMinor = 1;
  /// In the order received; names lower-cased.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// Whether the connection stays open after the response (HTTP/1.1 unless
  /// "Connection: close"; HTTP/1.0 only with "Connection: keep-alive").
  bool keepAlive = true;
  /// "Expect: 100-continue": the client waits for an interim response
  /// before it sends the body.
  bool expectContinue = false;

  /// The value of the first header `name` (lower case), or null.
  const std::string *header(std::string_view name) const {
    for (const auto &[k, v] : headers)
      if (k == name)
        return &v;
    return nullptr;
  }
};

} // namespace sol

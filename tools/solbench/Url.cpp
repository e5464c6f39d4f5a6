//===- Url.cpp - solbench: the server's base URL --------------------------===//
#include "tools/solbench/Url.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cctype>

namespace sol::bench {

std::string HttpUrl::hostPort() const {
  const bool v6 = host.find(':') != std::string::npos;
  return cat(v6 ? "[" : "", host, v6 ? "]" : "", ":", port);
}

std::string HttpUrl::str() const {
  return cat("http://", hostPort(), basePath);
}

HttpUrl parseHttpUrl(const std::string &text) {
  std::string rest = text;
  const size_t schemeEnd = rest.find("://");
  if (schemeEnd != std::string::npos) {
    std::string scheme = rest.substr(0, schemeEnd);
    std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (scheme == "https")
      fail("'", text,
           "': https is not supported (solbench speaks plain HTTP); use an "
           "http:// URL, e.g. through a local TLS proxy");
    if (scheme != "http")
      fail("'", text, "': unsupported scheme '", scheme,
           "' (expected http://host:port/v1)");
    rest = rest.substr(schemeEnd + 3);
  }
  if (rest.find_first_of("?#") != std::string::npos)
    fail("'", text, "': a base URL has no query or fragment");
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos)
    fail("'", text,
         "': credentials in the URL are not supported; use "
         "--api-key");
  HttpUrl url;
  std::string portText;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos)
      fail("'", text, "': unterminated IPv6 address (missing ']')");
    url.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':')
        fail("'", text, "': unexpected '", after, "' after the IPv6 address");
      portText = after.substr(1);
      if (portText.empty())
        fail("'", text, "': empty port after ':'");
    }
  } else {
    const size_t colon = authority.find(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      portText = authority.substr(colon + 1);
      if (portText.empty())
        fail("'", text, "': empty port after ':'");
    }
  }
  if (url.host.empty())
    fail("'", text, "': no host (expected http://host:port/v1)");
  if (!portText.empty()) {
    const bool digits =
        portText.size() <= 5 &&
        std::all_of(portText.begin(), portText.end(),
                    [](unsigned char c) { return std::isdigit(c); });
    const long port = digits ? std::stol(portText) : 0;
    if (!digits || port < 1 || port > 65535)
      fail("'", text, "': the port '", portText,
           "' is not a number from 1 to 65535");
    url.port = static_cast<uint16_t>(port);
  }
  while (!path.empty() && path.back() == '/')
    path.pop_back();
  url.basePath = path.empty() ? "/v1" : path;
  return url;
}

} // namespace sol::bench

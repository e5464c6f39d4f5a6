//===- UrlTest.cpp - Base URLs: http only, /v1 by default -----------------===//
#include "tools/solbench/Url.h"

#include "runtime/support/Error.h"

#include <gtest/gtest.h>

using namespace sol::bench;

namespace {

std::string errorOf(const std::string &url) {
  try {
    parseHttpUrl(url);
  } catch (const sol::Error &e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST(Url, Parses) {
  HttpUrl u = parseHttpUrl("http://127.0.0.1:8000/v1");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8000);
  EXPECT_EQ(u.basePath, "/v1");
  EXPECT_EQ(u.str(), "http://127.0.0.1:8000/v1");

  u = parseHttpUrl("HTTP://example.com/api/v1/");
  EXPECT_EQ(u.host, "example.com");
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.basePath, "/api/v1");

  // No scheme: http; no path: /v1.
  u = parseHttpUrl("localhost:9000");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 9000);
  EXPECT_EQ(u.basePath, "/v1");
  EXPECT_EQ(parseHttpUrl("http://h:1/").basePath, "/v1");

  u = parseHttpUrl("http://[::1]:8080/v1");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.hostPort(), "[::1]:8080");
}

TEST(Url, Rejects) {
  EXPECT_EQ(errorOf("https://api.openai.com/v1"),
            "'https://api.openai.com/v1': https is not supported (solbench "
            "speaks plain HTTP); use an http:// URL, e.g. through a local TLS "
            "proxy");
  EXPECT_EQ(errorOf("ftp://h/v1"),
            "'ftp://h/v1': unsupported scheme 'ftp' (expected "
            "http://host:port/v1)");
  EXPECT_EQ(errorOf("http://h:99999/v1"),
            "'http://h:99999/v1': the port '99999' is not a number from 1 to "
            "65535");
  EXPECT_EQ(errorOf("http://h:abc/v1"),
            "'http://h:abc/v1': the port 'abc' is not a number from 1 to "
            "65535");
  EXPECT_EQ(errorOf("http://h:/v1"), "'http://h:/v1': empty port after ':'");
  EXPECT_EQ(errorOf("http:///v1"),
            "'http:///v1': no host (expected http://host:port/v1)");
  EXPECT_EQ(errorOf("http://h/v1?x=1"),
            "'http://h/v1?x=1': a base URL has no query or fragment");
  EXPECT_EQ(errorOf("http://u:p@h/v1"),
            "'http://u:p@h/v1': credentials in the URL are not supported; use "
            "--api-key");
  EXPECT_EQ(errorOf("http://[::1/v1"),
            "'http://[::1/v1': unterminated IPv6 address (missing ']')");
}

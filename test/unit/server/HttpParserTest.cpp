//===- HttpParserTest.cpp - The HTTP/1.x request parser -------------------===//
#include "runtime/server/HttpParser.h"

#include <gtest/gtest.h>

namespace sol {
namespace {

using Status = HttpParser::Status;

/// Feeds `bytes` whole and parses.
Status feed(HttpParser &p, const std::string &bytes) {
  p.append(bytes);
  return p.parse();
}

TEST(HttpParser, GetWithHeaders) {
  HttpParser p;
  ASSERT_EQ(feed(p, "GET /v1/models?x=1 HTTP/1.1\r\nHost: a\r\n"
                    "X-Thing:   spaced value  \r\n\r\n"),
            Status::Complete);
  const HttpRequest &r = p.request();
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/v1/models?x=1");
  EXPECT_EQ(r.path, "/v1/models");
  EXPECT_EQ(r.query, "x=1");
  EXPECT_EQ(r.versionMinor, 1);
  EXPECT_TRUE(r.keepAlive);
  ASSERT_NE(r.header("x-thing"), nullptr);
  EXPECT_EQ(*r.header("x-thing"), "spaced value");
  EXPECT_EQ(r.header("missing"), nullptr);
  EXPECT_TRUE(r.body.empty());
}

TEST(HttpParser, ByteByByteWithBody) {
  const std::string msg = "POST /v1/completions HTTP/1.1\r\nContent-Length: "
                          "11\r\nContent-Type: application/json\r\n\r\n"
                          "{\"a\": true}";
  HttpParser p;
  for (size_t i = 0; i + 1 < msg.size(); ++i) {
    p.append(msg.substr(i, 1));
    ASSERT_EQ(p.parse(), Status::NeedMore) << "at byte " << i;
  }
  p.append(msg.substr(msg.size() - 1));
  ASSERT_EQ(p.parse(), Status::Complete);
  EXPECT_EQ(p.request().body, "{\"a\": true}");
}

TEST(HttpParser, PipelinedRequestsKeepTheirBytes) {
  HttpParser p;
  p.append("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
           "GET /b HTTP/1.1\r\n\r\n"
           "GET /c HTTP/1.1\r\nConnection: close\r\n\r\nGET /d");
  ASSERT_EQ(p.parse(), Status::Complete);
  EXPECT_EQ(p.request().path, "/a");
  EXPECT_EQ(p.request().body, "abc");
  p.next();
  ASSERT_EQ(p.parse(), Status::Complete);
  EXPECT_EQ(p.request().path, "/b");
  EXPECT_TRUE(p.request().keepAlive);
  p.next();
  ASSERT_EQ(p.parse(), Status::Complete);
  EXPECT_EQ(p.request().path, "/c");
  EXPECT_FALSE(p.request().keepAlive);
  p.next();
  EXPECT_TRUE(p.started());
  EXPECT_EQ(p.parse(), Status::NeedMore);
  p.append(" HTTP/1.1\r\n\r\n");
  ASSERT_EQ(p.parse(), Status::Complete);
  EXPECT_EQ(p.request().path, "/d");
  p.next();
  EXPECT_FALSE(p.started());
}

TEST(HttpParser, LeadingEmptyLinesAreSkipped) {
  HttpParser p;
  ASSERT_EQ(feed(p, "\r\n\r\nGET / HTTP/1.1\r\n\r\n"), Status::Complete);
  EXPECT_EQ(p.request().path, "/");
}

TEST(HttpParser, KeepAliveRules) {
  struct Case {
    const char *head;
    bool keepAlive;
  } cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nConnection: Keep-Alive, Close\r\n\r\n", false},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
  };
  for (const Case &c : cases) {
    HttpParser p;
    ASSERT_EQ(feed(p, c.head), Status::Complete) << c.head;
    EXPECT_EQ(p.request().keepAlive, c.keepAlive) << c.head;
  }
}

TEST(HttpParser, ExpectContinue) {
  HttpParser p;
  EXPECT_EQ(feed(p, "POST / HTTP/1.1\r\nExpect: 100-continue\r\n"
                    "Content-Length: 2\r\n\r\n"),
            Status::NeedMore);
  EXPECT_TRUE(p.headParsed());
  EXPECT_TRUE(p.request().expectContinue);
  EXPECT_EQ(feed(p, "hi"), Status::Complete);
}

struct ErrorCase {
  std::string bytes;
  int status;
  std::string message; // a part of it
};

void expectError(const ErrorCase &c, HttpLimits limits = {}) {
  HttpParser p(limits);
  EXPECT_EQ(feed(p, c.bytes), Status::Error) << c.bytes;
  EXPECT_EQ(p.errorStatus(), c.status) << c.bytes;
  EXPECT_NE(p.errorMessage().find(c.message), std::string::npos)
      << p.errorMessage();
  // Errors stick.
  EXPECT_EQ(p.parse(), Status::Error);
}

TEST(HttpParser, MalformedRequestLines) {
  for (const ErrorCase &c : std::vector<ErrorCase>{
           {"GET\r\n\r\n", 400, "malformed request line"},
           {"GET /\r\n\r\n", 400, "malformed request line"},
           {"GET  / HTTP/1.1\r\n\r\n", 400, "malformed request line"},
           {"GET / HTTP/1.1 extra\r\n\r\n", 400, "malformed request line"},
           {"G(T / HTTP/1.1\r\n\r\n", 400, "malformed method"},
           {"GET x HTTP/1.1\r\n\r\n", 400, "malformed request target"},
           {"GET / HTTX/1.1\r\n\r\n", 400, "malformed HTTP version"},
           {"GET / HTTP/1.10\r\n\r\n", 400, "malformed HTTP version"},
           {"GET / HTTP/2.0\r\n\r\n", 505, "HTTP version HTTP/2.0"},
           {"\x16\x03\x01\x02\x01 / HTTP/1.1\r\n\r\n", 400, "\\x16"},
       })
    expectError(c);
}

TEST(HttpParser, MalformedHeaders) {
  for (const ErrorCase &c : std::vector<ErrorCase>{
           {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, "malformed header"},
           {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "malformed header"},
           {"GET / HTTP/1.1\r\n: x\r\n\r\n", 400, "malformed header"},
           {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, "folding"},
           {"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400, "control character"},
       })
    expectError(c);
}

TEST(HttpParser, BodyFraming) {
  for (const ErrorCase &c : std::vector<ErrorCase>{
           {"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400,
            "malformed Content-Length"},
           {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400,
            "malformed Content-Length"},
           {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400, "conflicting Content-Length"},
           {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411,
            "chunked request bodies are not supported"},
           {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
            "Transfer-Encoding 'gzip'"},
           {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
            400, "malformed Content-Length"},
       })
    expectError(c);
  // Equal duplicates are fine.
  HttpParser p;
  EXPECT_EQ(feed(p, "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: "
                    "1\r\n\r\nx"),
            Status::Complete);
}

TEST(HttpParser, Limits) {
  HttpLimits limits;
  limits.maxRequestLineBytes = 64;
  limits.maxHeaderBytes = 256;
  limits.maxHeaderFields = 4;
  limits.maxBodyBytes = 10;
  // The body limit is known from the head: no need to read the body.
  expectError({"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 413,
               "the request body has 11 bytes; the limit is 10"},
              limits);
  expectError({"GET /" + std::string(100, 'a') + " HTTP/1.1\r\n\r\n", 414,
               "longer than 64 bytes"},
              limits);
  // A request line over the limit is refused before its end arrives.
  expectError({"GET /" + std::string(100, 'a'), 414, "longer than 64"}, limits);
  expectError({"GET / HTTP/1.1\r\nA: " + std::string(300, 'b'), 431,
               "larger than 256 bytes"},
              limits);
  expectError({"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n",
               431, "more than 4 header fields"},
              limits);
  HttpParser p(limits);
  EXPECT_EQ(feed(p, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789"),
            Status::Complete);
}

TEST(HttpParser, NextClearsAnError) {
  HttpParser p;
  EXPECT_EQ(feed(p, "BAD\r\n\r\n"), Status::Error);
  p.next();
  EXPECT_FALSE(p.started());
  EXPECT_EQ(feed(p, "GET / HTTP/1.1\r\n\r\n"), Status::Complete);
}

} // namespace
} // namespace sol

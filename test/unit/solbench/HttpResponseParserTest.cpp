//===- HttpResponseParserTest.cpp - HTTP/1.1 framing, split anywhere ------===//
#include "tools/solbench/HttpResponseParser.h"

#include "runtime/support/Error.h"

#include <gtest/gtest.h>

using sol::bench::HttpResponseParser;

namespace {

struct Parsed {
  int status = 0;
  std::string reason, body;
  int headerCalls = 0;
  bool bodyBeforeHeaders = false;
  bool complete = false;
};

/// Feeds `pieces` one after another, then ends the connection when `eof`.
Parsed parse(const std::vector<std::string> &pieces, bool eof = false) {
  Parsed out;
  HttpResponseParser p(
      [&](std::string_view b) {
        if (!out.headerCalls)
          out.bodyBeforeHeaders = true;
        out.body.append(b);
      },
      [&](const HttpResponseParser &h) {
        ++out.headerCalls;
        out.status = h.status();
        out.reason = h.reason();
      });
  for (const std::string &piece : pieces)
    p.feed(piece);
  if (eof)
    p.finish();
  out.complete = p.complete();
  return out;
}

/// Every way of cutting `text` in two, and byte by byte.
std::vector<std::vector<std::string>> splits(const std::string &text) {
  std::vector<std::vector<std::string>> out;
  for (size_t i = 0; i <= text.size(); ++i)
    out.push_back({text.substr(0, i), text.substr(i)});
  std::vector<std::string> bytes;
  for (char c : text)
    bytes.emplace_back(1, c);
  out.push_back(bytes);
  return out;
}

std::string errorOf(const std::vector<std::string> &pieces, bool eof = false) {
  try {
    parse(pieces, eof);
  } catch (const sol::Error &e) {
    return e.what();
  }
  return "no error";
}

const std::string kChunked = "HTTP/1.1 200 OK\r\n"
                             "Content-Type: text/event-stream\r\n"
                             "Transfer-Encoding: chunked\r\n"
                             "\r\n"
                             "7\r\ndata: a\r\n"
                             "A;name=value\r\n\n\ndata: bc\r\n"
                             "2\r\n\n\n\r\n"
                             "0\r\n"
                             "X-Trailer: yes\r\n"
                             "\r\n";

} // namespace

TEST(HttpResponseParser, ContentLength) {
  const std::string r = "HTTP/1.1 404 Not Found\r\ncontent-LENGTH: 5\r\n"
                        "Content-Type: application/json\r\n\r\nhello";
  for (const auto &pieces : splits(r)) {
    Parsed p = parse(pieces);
    EXPECT_TRUE(p.complete);
    EXPECT_EQ(p.status, 404);
    EXPECT_EQ(p.reason, "Not Found");
    EXPECT_EQ(p.body, "hello");
    EXPECT_EQ(p.headerCalls, 1);
    EXPECT_FALSE(p.bodyBeforeHeaders);
  }
}

TEST(HttpResponseParser, HeaderLookupIsCaseInsensitive) {
  HttpResponseParser p(nullptr);
  p.feed("HTTP/1.1 200 OK\r\nX-Thing:   spaced value  \r\n"
         "Content-Length: 0\r\n\r\n");
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.header("x-thing").value_or(""), "spaced value");
  EXPECT_EQ(p.header("X-THING").value_or(""), "spaced value");
  EXPECT_FALSE(p.header("missing"));
}

TEST(HttpResponseParser, ChunkedWithExtensionsAndTrailers) {
  for (const auto &pieces : splits(kChunked)) {
    Parsed p = parse(pieces);
    EXPECT_TRUE(p.complete);
    EXPECT_EQ(p.status, 200);
    EXPECT_EQ(p.body, "data: a\n\ndata: bc\n\n");
  }
}

TEST(HttpResponseParser, BytesAfterTheResponseAreIgnored) {
  Parsed p = parse({"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"});
  EXPECT_TRUE(p.complete);
  EXPECT_EQ(p.body, "ok");
}

TEST(HttpResponseParser, BodyUntilTheConnectionCloses) {
  const std::string r = "HTTP/1.0 200 OK\nContent-Type: text/event-stream\n\n"
                        "data: 1\n\ndata: 2\n\n";
  for (const auto &pieces : splits(r)) {
    Parsed p = parse(pieces);
    EXPECT_FALSE(p.complete);
    p = parse(pieces, /*eof=*/true);
    EXPECT_TRUE(p.complete);
    EXPECT_EQ(p.body, "data: 1\n\ndata: 2\n\n");
  }
}

TEST(HttpResponseParser, InterimResponsesAreSkipped) {
  Parsed p = parse({"HTTP/1.1 100 Continue\r\n\r\n"
                    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"});
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.headerCalls, 1);
  EXPECT_EQ(p.body, "x");
}

TEST(HttpResponseParser, NoContent) {
  Parsed p = parse({"HTTP/1.1 204 No Content\r\n\r\n"});
  EXPECT_TRUE(p.complete);
  EXPECT_EQ(p.body, "");
}

TEST(HttpResponseParser, TruncatedResponses) {
  EXPECT_EQ(errorOf({}, true),
            "the server closed the connection without a response");
  EXPECT_EQ(errorOf({"HTTP/1.1 200 OK\r\nContent-Le"}, true),
            "the server closed the connection in the middle of the response "
            "headers");
  EXPECT_EQ(errorOf({"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"}, true),
            "the server closed the connection before the end of the response "
            "body");
  // A chunked body cut before its last (empty) chunk.
  EXPECT_EQ(errorOf({kChunked.substr(0, kChunked.find("0\r\n"))}, true),
            "the server closed the connection before the end of the response "
            "body");
}

TEST(HttpResponseParser, Malformed) {
  EXPECT_NE(errorOf({"SSH-2.0-OpenSSH_9.2\r\n"})
                .find("does not start with HTTP/ (is this an HTTP server?)"),
            std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 2x0 OK\r\n"}).find("no 3-digit status code"),
            std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 2000 OK\r\n"}).find("no 3-digit status code"),
            std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 200 OK\r\nno colon here\r\n"})
                .find("the header line 'no colon here' has no name and ':'"),
            std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n"})
                .find("Content-Length '12a' is not a number"),
            std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                     "Content-Length: 2\r\n\r\n"})
                .find("two different Content-Length headers"),
            std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"})
                .find("unsupported Transfer-Encoding 'gzip'"),
            std::string::npos);
  EXPECT_NE(
      errorOf({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"})
          .find("bad chunk size line 'zz'"),
      std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "2\r\nabc\r\n"})
                .find("a chunk is longer than its size"),
            std::string::npos);
  EXPECT_NE(errorOf({"HTTP/1.1 200 OK\r\n" +
                     std::string(HttpResponseParser::kMaxLineBytes + 10, 'a')})
                .find("a line longer than"),
            std::string::npos);
}

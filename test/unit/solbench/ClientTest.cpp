//===- ClientTest.cpp - Request bodies, error messages, socket failures ---===//
#include "tools/solbench/OpenAiClient.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace sol::bench;

namespace {

/// A listening socket on a free loopback port; closed at the end.
struct Listener {
  int fd = -1;
  uint16_t port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    port = ntohs(a.sin_port);
    EXPECT_EQ(::listen(fd, 4), 0);
  }
  ~Listener() { close(); }
  void close() {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }
};

HttpUrl local(uint16_t port) {
  return parseHttpUrl("http://127.0.0.1:" + std::to_string(port) + "/v1");
}

} // namespace

TEST(OpenAiClient, CompletionsBody) {
  ClientOptions o;
  o.model = "m";
  OpenAiClient c(local(1), o);
  Prompt p;
  p.ids = {5, 6, 7};
  p.maxTokens = 4;
  EXPECT_EQ(c.body(p).dump(),
            R"({"ignore_eos":true,"max_tokens":4,"model":"m","prompt":[5,6,7],)"
            R"("stream":true,"stream_options":{"include_usage":true},)"
            R"("temperature":0.0})");
}

TEST(OpenAiClient, ChatBodyWithoutIgnoreEos) {
  ClientOptions o;
  o.model = "m";
  o.endpoint = Endpoint::Chat;
  o.ignoreEos = false;
  o.temperature = 0.5;
  OpenAiClient c(local(1), o);
  Prompt p;
  p.messages = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}});
  p.maxTokens = 2;
  EXPECT_EQ(c.body(p).dump(),
            R"({"max_completion_tokens":2,"messages":[{"content":"hi",)"
            R"("role":"user"}],"model":"m","stream":true,)"
            R"("stream_options":{"include_usage":true},"temperature":0.5})");
}

TEST(OpenAiClient, ErrorMessages) {
  EXPECT_EQ(errorMessage(404, "Not Found",
                         R"({"error": {"message": "The model 'x' does not )"
                         R"(exist", "type": "invalid_request_error"}})"),
            "HTTP 404 Not Found: The model 'x' does not exist");
  EXPECT_EQ(errorMessage(400, "Bad Request", R"({"message": "bad field"})"),
            "HTTP 400 Bad Request: bad field");
  EXPECT_EQ(errorMessage(422, "", R"({"detail": "prompt too long"})"),
            "HTTP 422: prompt too long");
  EXPECT_EQ(errorMessage(503, "Service Unavailable", R"({"error": "busy"})"),
            "HTTP 503 Service Unavailable: busy");
  EXPECT_EQ(errorMessage(502, "Bad Gateway", "<html>\nupstream down</html>"),
            "HTTP 502 Bad Gateway: <html> upstream down</html>");
  EXPECT_EQ(errorMessage(500, "Internal Server Error", ""),
            "HTTP 500 Internal Server Error");
}

TEST(HttpClient, ConnectionRefusedNamesTheServer) {
  uint16_t port;
  {
    Listener l; // take a free port, then free it: nothing listens there
    port = l.port;
  }
  ClientOptions o;
  o.model = "m";
  o.timeoutS = 5;
  OpenAiClient c(local(port), o);
  const RequestResult r = c.run(Prompt{{1, 2}, "", nullptr, 4, 2});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "cannot connect to 127.0.0.1:" + std::to_string(port) +
                         ": connection refused (is the server running?)");
  try {
    c.listModels();
    FAIL() << "expected HttpError";
  } catch (const HttpError &e) {
    EXPECT_EQ(std::string(e.what()), r.error);
  }
}

TEST(HttpClient, ReadTimeout) {
  Listener l; // accepts (the kernel does) but never answers
  ClientOptions o;
  o.model = "m";
  o.timeoutS = 0.3;
  OpenAiClient c(local(l.port), o);
  const auto start = Clock::now();
  const RequestResult r = c.run(Prompt{{1}, "", nullptr, 1, 1});
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "timed out after 0.3 s (--timeout)");
  EXPECT_GE(s, 0.29);
  EXPECT_LT(s, 5.0);
}

TEST(HttpClient, UnresolvableHost) {
  EXPECT_THROW(HttpClient(parseHttpUrl("http://no-such-host.invalid/v1"), 1),
               HttpError);
}

TEST(HttpClient, RequestFormat) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/v1/completions";
  r.headers.emplace_back("Authorization", "Bearer k");
  r.body = "{}";
  EXPECT_EQ(formatRequest(local(8000), r),
            "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
            "User-Agent: solbench\r\nConnection: close\r\n"
            "Authorization: Bearer k\r\nContent-Length: 2\r\n\r\n{}");
}

/// A one-shot server thread: reads the request, answers with `response`.
TEST(OpenAiClient, StreamTimingAndUsage) {
  Listener l;
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"
                           "\r\nTransfer-Encoding: chunked\r\n\r\n";
  auto chunk = [](const std::string &data) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
  };
  std::thread server([&] {
    const int fd = ::accept(l.fd, nullptr, nullptr);
    char buf[4096];
    ::recv(fd, buf, sizeof buf, 0);
    auto send = [&](const std::string &s) {
      ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    };
    send(head);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    // The first event split inside its JSON, across two chunks and reads.
    send(chunk("data: {\"choices\":[{\"te"));
    send(chunk("xt\":\"a\",\"finish_reason\":null}]}\n\n"));
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      send(chunk("data: {\"choices\":[{\"text\":\"b\"}]}\n\n"));
    }
    send(chunk("data: {\"choices\":[{\"text\":\"\",\"finish_reason\":"
               "\"length\"}]}\n\ndata: {\"choices\":[],\"usage\":{"
               "\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n"));
    send(chunk("data: [DONE]\n\n") + "0\r\n\r\n");
    ::close(fd);
  });
  ClientOptions o;
  o.model = "m";
  o.timeoutS = 10;
  OpenAiClient c(local(l.port), o);
  const RequestResult r = c.run(Prompt{{1, 2, 3}, "", nullptr, 4, 3});
  server.join();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GE(r.ttftMs, 59.0);
  EXPECT_EQ(r.textChunks, 4);
  EXPECT_EQ(r.outputTokens, 4);
  EXPECT_TRUE(r.usageReported);
  EXPECT_EQ(r.promptTokens, 3);
  // Only what a loaded machine cannot break: no chunk is read before it is
  // sent (the first text after 60 ms, the last after 120 ms), and the gaps
  // between text chunks fit between the first text and the end. A client
  // descheduled for a while reads several chunks at once, so a single gap
  // may be near 0 however long the server waited.
  ASSERT_EQ(r.itlMs.size(), 3u);
  double gaps = 0;
  for (double itl : r.itlMs) {
    EXPECT_GE(itl, 0.0);
    gaps += itl;
  }
  EXPECT_GE(r.e2eMs, 119.0);
  EXPECT_LE(r.ttftMs + gaps, r.e2eMs + 1e-6);
}

TEST(OpenAiClient, ErrorStatusAndBrokenStreams) {
  auto serve = [](const std::string &response) {
    Listener l;
    std::thread server([&] {
      const int fd = ::accept(l.fd, nullptr, nullptr);
      char buf[4096];
      ::recv(fd, buf, sizeof buf, 0);
      ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
      ::close(fd);
    });
    ClientOptions o;
    o.model = "m";
    o.timeoutS = 10;
    OpenAiClient c(local(l.port), o);
    RequestResult r = c.run(Prompt{{1}, "", nullptr, 1, 1});
    server.join();
    return r;
  };
  const std::string sse = "HTTP/1.1 200 OK\r\nContent-Type: "
                          "text/event-stream\r\n\r\n";
  const std::string body = R"({"error": {"message": "out of memory"}})";
  RequestResult r =
      serve("HTTP/1.1 500 Internal Server Error\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "HTTP 500 Internal Server Error: out of memory");
  r = serve(sse + "data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
  EXPECT_EQ(r.error,
            "the stream ended without 'data: [DONE]' or a finish_reason");
  r = serve(sse + "data: {not json\n\n");
  EXPECT_EQ(r.error, "the server sent an event that is not JSON: '{not json'");
  r = serve(sse + "data: {\"error\": {\"message\": \"engine died\"}}\n\n");
  EXPECT_EQ(r.error, "error in the stream: engine died");
  // No usage: tokens are counted from the chunks with text.
  r = serve(sse + "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
                  "data: {\"choices\":[{\"text\":\"\"}]}\n\n"
                  "data: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.usageReported);
  EXPECT_EQ(r.outputTokens, 2);
}

//===- HttpServerTest.cpp - The HTTP server on real loopback sockets ------===//
//
// Keep-alive, pipelining, a slow client that does not hold up others, limits
// answered before the body is read, chunked streaming, disconnect detection
// and shutdown.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/HttpServer.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace sol {
namespace {

using namespace std::chrono_literals;

class Client {
public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  }
  ~Client() { close(); }
  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }
  void send(const std::string &s) {
    ASSERT_EQ(::send(fd_, s.data(), s.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(s.size()));
  }
  /// Reads until `until` appears `times` times, the peer closes, or the
  /// timeout passes.
  std::string read(const std::string &until = "", int times = 1,
                   std::chrono::milliseconds timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (!until.empty()) {
        int n = 0;
        for (size_t at = got_.find(until); at != std::string::npos;
             at = got_.find(until, at + until.size()))
          ++n;
        if (n >= times)
          break;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        break;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      got_.append(buf, static_cast<size_t>(n));
    }
    return got_;
  }
  bool closed() const { return closed_; }
  void clear() { got_.clear(); }

private:
  int fd_ = -1;
  std::string got_;
  bool closed_ = false;
};

class HttpServerTest : public ::testing::Test {
protected:
  void start(HttpHandler handler, HttpServerOptions options = {}) {
    options.port = 0;
    server_ = std::make_unique<HttpServer>(
        options, std::move(handler), [](int status, const std::string &m) {
          return std::make_pair("error " + std::to_string(status) + ": " + m,
                                std::string("text/plain"));
        });
    server_->listen();
    thread_ = std::thread([this] { server_->run(-1); });
  }
  void TearDown() override {
    if (server_) {
      server_->beginShutdown();
      thread_.join();
      EXPECT_TRUE(server_->join(5000ms));
    }
  }
  int port() const { return server_->port(); }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

HttpHandler echo() {
  return [](const HttpRequest &r, HttpResponder &w) {
    w.send(200, "text/plain", r.method + " " + r.path + " [" + r.body + "]");
  };
}

TEST_F(HttpServerTest, KeepAliveAndPipelining) {
  start(echo());
  Client c(port());
  c.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = c.read("[]");
  EXPECT_NE(got.find("HTTP/1.1 200 OK\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("Content-Length: 11\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("GET /one []"), std::string::npos) << got;
  // The same connection, three pipelined requests in one write.
  c.clear();
  c.send("POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
         "GET /b HTTP/1.1\r\n\r\n"
         "GET /c HTTP/1.1\r\nConnection: close\r\n\r\n");
  got = c.read("", 1, 3000ms);
  const size_t a = got.find("POST /a [hi]"), b = got.find("GET /b []"),
               d = got.find("GET /c []");
  ASSERT_NE(a, std::string::npos) << got;
  ASSERT_NE(b, std::string::npos) << got;
  ASSERT_NE(d, std::string::npos) << got;
  EXPECT_LT(a, b);
  EXPECT_LT(b, d);
  EXPECT_NE(got.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(c.closed());
}

TEST_F(HttpServerTest, SlowClientDoesNotBlockOthersAndTimesOut) {
  HttpServerOptions o;
  o.readTimeoutS = 0.6;
  start(echo(), o);
  Client slow(port());
  slow.send("POST /slow HTTP/1.1\r\nContent-Length: 10\r\n\r\nab");
  // Others are served meanwhile.
  for (int i = 0; i < 3; ++i) {
    Client fast(port());
    fast.send("GET /fast HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_NE(fast.read().find("GET /fast []"), std::string::npos);
  }
  // Trickling bytes does not extend the deadline.
  std::this_thread::sleep_for(300ms);
  slow.send("c");
  const std::string got = slow.read("", 1, 3000ms);
  EXPECT_NE(got.find("HTTP/1.1 408 Request Timeout"), std::string::npos) << got;
  EXPECT_TRUE(slow.closed());
}

TEST_F(HttpServerTest, ErrorsAreAnsweredAndTheConnectionCloses) {
  HttpServerOptions o;
  o.limits.maxBodyBytes = 100;
  start(echo(), o);
  {
    Client c(port());
    // Answered from the head: the body is never sent.
    c.send("POST /x HTTP/1.1\r\nContent-Length: 1000\r\n\r\n");
    const std::string got = c.read("", 1, 3000ms);
    EXPECT_NE(got.find("HTTP/1.1 413 Content Too Large"), std::string::npos)
        << got;
    EXPECT_NE(got.find("error 413: the request body has 1000 bytes"),
              std::string::npos)
        << got;
    EXPECT_TRUE(c.closed());
  }
  {
    Client c(port());
    c.send("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello"
           "\r\n0\r\n\r\n");
    const std::string got = c.read("", 1, 3000ms);
    EXPECT_NE(got.find("HTTP/1.1 411 Length Required"), std::string::npos)
        << got;
  }
  {
    Client c(port());
    c.send("garbage\r\n\r\n");
    EXPECT_NE(c.read("", 1, 3000ms).find("HTTP/1.1 400 Bad Request"),
              std::string::npos);
  }
  {
    // 100-continue: the interim response, then the real one.
    Client c(port());
    c.send("POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: "
           "3\r\n\r\n");
    EXPECT_NE(c.read("\r\n\r\n").find("HTTP/1.1 100 Continue"),
              std::string::npos);
    c.send("abc");
    EXPECT_NE(c.read("[abc]").find("POST /x [abc]"), std::string::npos);
  }
}

TEST_F(HttpServerTest, StreamingIsChunked) {
  start([](const HttpRequest &r, HttpResponder &w) {
    ASSERT_TRUE(w.beginStream(200, "text/event-stream"));
    for (const char *piece : {"data: 1\n\n", "data: 22\n\n"})
      ASSERT_TRUE(w.write(piece));
    ASSERT_TRUE(w.endStream());
  });
  Client c(port());
  c.send("GET /s HTTP/1.1\r\n\r\n");
  std::string got = c.read("0\r\n\r\n");
  EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n"
                     "a\r\ndata: 22\n\n\r\n0\r\n\r\n"),
            std::string::npos)
      << got;
  // HTTP/1.0 has no chunks: the body ends with the connection.
  Client old(port());
  old.send("GET /s HTTP/1.0\r\n\r\n");
  got = old.read("", 1, 3000ms);
  EXPECT_NE(got.find("Connection: close\r\n\r\ndata: 1\n\ndata: 22\n\n"),
            std::string::npos)
      << got;
  EXPECT_TRUE(old.closed());
}

TEST_F(HttpServerTest, ClientGoneIsDetected) {
  std::atomic<bool> noticed{false};
  start([&](const HttpRequest &r, HttpResponder &w) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (w.clientGone()) {
        noticed = true;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    w.send(200, "text/plain", "late");
  });
  {
    Client c(port());
    c.send("GET /wait HTTP/1.1\r\n\r\n");
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(noticed.load());
  }
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!noticed && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(noticed.load());
}

TEST_F(HttpServerTest, ShutdownClosesIdleConnectionsAndFinishesRunningOnes) {
  std::atomic<bool> release{false};
  start([&](const HttpRequest &r, HttpResponder &w) {
    while (r.path == "/slow" && !release)
      std::this_thread::sleep_for(10ms);
    w.send(200, "text/plain", "done " + r.path);
  });
  Client idle(port()), busy(port());
  idle.send("GET /quick HTTP/1.1\r\n\r\n");
  EXPECT_NE(idle.read("done /quick").find("done /quick"), std::string::npos);
  busy.send("GET /slow HTTP/1.1\r\n\r\n");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server_->activeRequests(), 1);
  server_->beginShutdown();
  thread_.join();
  idle.read("", 1, 2000ms);
  EXPECT_TRUE(idle.closed());
  release = true;
  const std::string got = busy.read("", 1, 3000ms);
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_NE(got.find("done /slow"), std::string::npos) << got;
  EXPECT_TRUE(busy.closed());
  EXPECT_TRUE(server_->join(3000ms));
  server_.reset();
}

TEST(HttpServer, ListenErrorNamesTheAddress) {
  HttpServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  HttpServer a(o, echo(), nullptr);
  a.listen();
  o.port = a.port();
  HttpServer b(o, echo(), nullptr);
  try {
    b.listen();
    FAIL() << "a second server listened on the same port";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace sol

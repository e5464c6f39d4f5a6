//===- HttpServer.h - A small HTTP/1.1 server over POSIX sockets -*- C++
//-*-===//
//
// One thread accepts connections; each connection gets a thread of its own
// that reads requests (HttpParser), calls the handler and writes its
// response (HttpResponder). A thread per connection keeps a slow client
// (one that trickles its request, or reads its stream slowly) from holding
// up anyone else, and lets a handler block while its request generates.
// Limits: a request must arrive whole within readTimeout (else 408), an idle
// keep-alive connection is closed after keepAliveTimeout, a send blocked
// longer than writeTimeout fails, and at most maxConnections are open (more
// are answered 503 and closed).
//
// Shutdown: beginShutdown() closes the listening socket and wakes idle
// connections, which close; requests still running finish (the handler
// decides how), their connections close after the response; join() waits
// for every connection thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/server/HttpParser.h"
#include "runtime/server/HttpResponder.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

namespace sol {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  /// 0: any free port (see port() after listen()).
  int port = 8000;
  HttpLimits limits;
  double readTimeoutS = 30;
  double keepAliveTimeoutS = 5;
  double writeTimeoutS = 30;
  int maxConnections = 1024;
};

using HttpHandler = std::function<void(const HttpRequest &, HttpResponder &)>;
/// The body and content type of an error the HTTP layer answers itself
/// (malformed request, limits, timeouts).
using HttpErrorBody = std::function<std::pair<std::string, std::string>(
    int status, const std::string &)>;

class HttpServer {
public:
  HttpServer(HttpServerOptions options, HttpHandler handler,
             HttpErrorBody errorBody);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  /// Binds and listens; throws sol::Error naming the address on failure.
  void listen();
  /// The bound port (the real one when options.port was 0).
  int port() const { return port_; }

  /// Accepts connections until `stopFd` becomes readable (it is not read)
  /// or beginShutdown() is called.
  void run(int stopFd);

  /// Stops accepting and closes idle connections; running requests go on.
  void beginShutdown();
  bool draining() const { return draining_.load(); }
  /// Requests whose handler is running.
  int activeRequests() const { return activeRequests_.load(); }
  int openConnections() const;
  /// Waits until every connection thread has ended, at most `timeout`;
  /// returns whether they all did.
  bool join(std::chrono::milliseconds timeout);

private:
  void serveConnection(int fd);
  void answerError(int fd, const HttpRequest &request, int status,
                   const std::string &message);

  HttpServerOptions options_;
  HttpHandler handler_;
  HttpErrorBody errorBody_;
  int listenFd_ = -1;
  int port_ = 0;
  int wakePipe_[2] = {-1, -1}; // readable once shutdown begins
  std::atomic<bool> draining_{false};
  std::atomic<int> activeRequests_{0};
  mutable std::mutex mutex_;
  std::condition_variable connectionsDone_;
  int connections_ = 0;
};

} // namespace sol

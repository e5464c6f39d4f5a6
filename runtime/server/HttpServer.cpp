//===- HttpServer.cpp - A small HTTP/1.1 server over POSIX sockets --------===//
#include "runtime/server/HttpServer.h"

#include "runtime/support/Error.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace sol {

namespace {

using Clock = std::chrono::steady_clock;

int pollRetry(pollfd *fds, nfds_t n, int timeoutMs) {
  int r;
  do
    r = ::poll(fds, n, timeoutMs);
  while (r < 0 && errno == EINTR);
  return r;
}

int msUntil(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - Clock::now())
                        .count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

void setTimeout(int fd, int option, double seconds) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - double(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

/// Closes after an error answered before the request was read whole: stop
/// sending, then read and drop what the client still sends for a moment,
/// so that closing with unread data does not reset the connection before
/// the client has read the answer.
void lingeringClose(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  char buf[16384];
  size_t dropped = 0;
  while (dropped < (64u << 20)) {
    pollfd p{fd, POLLIN, 0};
    if (pollRetry(&p, 1, msUntil(deadline)) <= 0)
      break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      break;
    dropped += static_cast<size_t>(n);
  }
  ::close(fd);
}

} // namespace

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler,
                       HttpErrorBody errorBody)
    : options_(std::move(options)), handler_(std::move(handler)),
      errorBody_(std::move(errorBody)) {
  if (::pipe2(wakePipe_, O_CLOEXEC) != 0)
    fail("cannot create a pipe: ", std::strerror(errno));
}

HttpServer::~HttpServer() {
  if (listenFd_ >= 0)
    ::close(listenFd_);
  ::close(wakePipe_[0]);
  ::close(wakePipe_[1]);
}

void HttpServer::listen() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *found = nullptr;
  const std::string port = std::to_string(options_.port);
  const std::string where = cat(options_.host, ":", options_.port);
  if (int rc =
          ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found);
      rc != 0)
    fail("cannot resolve --host ", options_.host, ": ", ::gai_strerror(rc));
  std::string lastError = "no address";
  for (addrinfo *a = found; a; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      lastError = std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        ::listen(fd, SOMAXCONN) != 0) {
      lastError = std::strerror(errno);
      ::close(fd);
      continue;
    }
    listenFd_ = fd;
    break;
  }
  ::freeaddrinfo(found);
  if (listenFd_ < 0)
    fail("cannot listen on ", where, ": ", lastError,
         lastError == std::strerror(EADDRINUSE)
             ? " (another server uses this port; pick one with --port)"
             : "");
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listenFd_, reinterpret_cast<sockaddr *>(&bound), &len);
  port_ = bound.ss_family == AF_INET6
              ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
              : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
}

void HttpServer::run(int stopFd) {
  if (listenFd_ < 0)
    fail("HttpServer::run before listen()");
  while (!draining_.load()) {
    pollfd fds[3] = {
        {listenFd_, POLLIN, 0}, {wakePipe_[0], POLLIN, 0}, {stopFd, POLLIN, 0}};
    if (pollRetry(fds, stopFd >= 0 ? 3 : 2, -1) < 0)
      fail("poll failed: ", std::strerror(errno));
    if (fds[1].revents || (stopFd >= 0 && fds[2].revents))
      return;
    if (!(fds[0].revents & POLLIN))
      continue;
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors or a connection reset before accept: wait a
      // moment rather than spin.
      if (errno == EMFILE || errno == ENFILE)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setTimeout(fd, SO_SNDTIMEO, options_.writeTimeoutS);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (connections_ >= options_.maxConnections) {
        HttpRequest r;
        r.keepAlive = false;
        answerError(fd, r, 503,
                    cat("the server has ", connections_,
                        " open connections, its limit; retry later"));
        ::close(fd);
        continue;
      }
      ++connections_;
    }
    std::thread([this, fd] {
      serveConnection(fd);
      std::lock_guard<std::mutex> lock(mutex_);
      --connections_;
      connectionsDone_.notify_all();
    }).detach();
  }
}

void HttpServer::answerError(int fd, const HttpRequest &request, int status,
                             const std::string &message) {
  HttpResponder responder(fd, request, false);
  auto [body, type] = errorBody_(status, message);
  HttpHeaders extra;
  if (status == 503)
    extra.emplace_back("Retry-After", "1");
  responder.send(status, type, body, extra);
}

void HttpServer::serveConnection(int fd) {
  HttpParser parser(options_.limits);
  std::optional<Clock::time_point> requestStart;
  bool continueSent = false;
  char buf[16384];
  while (true) {
    const HttpParser::Status status = parser.parse();
    if (status == HttpParser::Status::Error) {
      HttpRequest r = parser.request();
      r.keepAlive = false;
      answerError(fd, r, parser.errorStatus(), parser.errorMessage());
      lingeringClose(fd);
      return;
    }
    if (status == HttpParser::Status::Complete) {
      HttpRequest request = std::move(parser.request());
      parser.next();
      requestStart.reset();
      if (parser.started())
        requestStart = Clock::now();
      continueSent = false;
      const bool keepAlive = request.keepAlive && !draining_.load();
      HttpResponder responder(fd, request, keepAlive, &draining_);
      ++activeRequests_;
      try {
        handler_(request, responder);
      } catch (const std::exception &e) {
        if (!responder.responded()) {
          responder.closeAfter();
          answerError(fd, request, 500, e.what());
        }
      }
      --activeRequests_;
      if (!responder.responded())
        answerError(fd, request, 500, "the handler sent no response");
      if (!responder.keepAlive() || draining_.load())
        break;
      continue;
    }
    if (parser.headParsed() && parser.request().expectContinue &&
        !continueSent) {
      const std::string line =
          cat("HTTP/1.1 100 ", httpReasonPhrase(100), "\r\n\r\n");
      if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(line.size()))
        break;
      continueSent = true;
    }
    // Wait for more bytes: a request in progress has readTimeout in all
    // (a client trickling bytes cannot keep it open), an idle connection
    // keepAliveTimeout, and an idle connection closes when shutdown begins.
    const bool idle = !parser.started();
    if (idle && draining_.load())
      break;
    if (!idle && !requestStart)
      requestStart = Clock::now();
    const auto deadline =
        idle ? Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(
                                  options_.keepAliveTimeoutS * 1000))
             : requestStart.value_or(Clock::now()) +
                   std::chrono::milliseconds(
                       static_cast<int64_t>(options_.readTimeoutS * 1000));
    pollfd fds[2] = {{fd, POLLIN, 0}, {wakePipe_[0], POLLIN, 0}};
    const int r = pollRetry(fds, idle ? 2 : 1, msUntil(deadline));
    if (r < 0)
      break;
    if (r == 0) {
      if (!idle) {
        HttpRequest req = parser.request();
        req.keepAlive = false;
        answerError(fd, req, 408,
                    cat("the request did not arrive within ",
                        options_.readTimeoutS, " s"));
        lingeringClose(fd);
        return;
      }
      break;
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
      break; // woken by shutdown while idle
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (!requestStart)
      requestStart = Clock::now();
    parser.append(std::string_view(buf, static_cast<size_t>(n)));
  }
  ::close(fd);
}

void HttpServer::beginShutdown() {
  if (draining_.exchange(true))
    return;
  if (listenFd_ >= 0) {
    ::close(listenFd_);
    listenFd_ = -1;
  }
  const char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(wakePipe_[1], &byte, 1);
}

int HttpServer::openConnections() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return connections_;
}

bool HttpServer::join(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return connectionsDone_.wait_for(lock, timeout,
                                   [&] { return connections_ == 0; });
}

} // namespace sol

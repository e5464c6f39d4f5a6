//===- HttpClient.cpp - solbench: a small HTTP/1.1 client -----------------===//
#include "tools/solbench/HttpClient.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sol::bench {

namespace {

/// Closes the socket when the request ends, however it ends.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0)
      ::close(fd);
  }
};

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

/// Waits until `fd` is ready for `events` or the deadline passes; returns
/// false on timeout.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd, events, 0};
    const int ms =
        static_cast<int>(std::min<long long>(left.count() + 1, 60000));
    const int r = ::poll(&p, 1, ms);
    if (r > 0)
      return true;
    if (r < 0 && errno != EINTR)
      throw HttpError(cat("poll failed: ", std::strerror(errno)));
  }
}

} // namespace

std::string formatRequest(const HttpUrl &server, const HttpRequest &request) {
  std::string out = cat(request.method, " ", request.path, " HTTP/1.1\r\n",
                        "Host: ", server.hostPort(), "\r\n",
                        "User-Agent: solbench\r\nConnection: close\r\n");
  for (const auto &[name, value] : request.headers)
    out += cat(name, ": ", value, "\r\n");
  if (!request.body.empty() || request.method == "POST")
    out += cat("Content-Length: ", request.body.size(), "\r\n");
  out += "\r\n";
  out += request.body;
  return out;
}

HttpClient::HttpClient(HttpUrl server, double connectTimeoutS)
    : server_(std::move(server)), connectTimeoutS_(connectTimeoutS) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string port = std::to_string(server_.port);
  const int r =
      ::getaddrinfo(server_.host.c_str(), port.c_str(), &hints, &addresses_);
  if (r != 0)
    throw HttpError(cat("cannot resolve the host '", server_.host,
                        "': ", ::gai_strerror(r)));
}

HttpClient::~HttpClient() {
  if (addresses_)
    ::freeaddrinfo(addresses_);
}

int HttpClient::connect(Clock::time_point deadline, double timeoutS) const {
  const auto connectDeadline = std::min(
      deadline,
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(connectTimeoutS_)));
  int lastError = 0;
  for (const addrinfo *a = addresses_; a; a = a->ai_next) {
    Socket s;
    s.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    a->ai_protocol);
    if (s.fd < 0) {
      lastError = errno;
      continue;
    }
    int r = ::connect(s.fd, a->ai_addr, a->ai_addrlen);
    if (r < 0 && errno == EINPROGRESS) {
      if (!waitFor(s.fd, POLLOUT, connectDeadline))
        throw HttpError(
            cat("timed out connecting to ", server_.hostPort(), " after ",
                seconds(std::min(timeoutS, connectTimeoutS_)), " s"));
      socklen_t len = sizeof lastError;
      ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &lastError, &len);
      r = lastError ? -1 : 0;
    } else if (r < 0) {
      lastError = errno;
    }
    if (r == 0) {
      const int one = 1;
      ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const int fd = s.fd;
      s.fd = -1;
      return fd;
    }
  }
  if (lastError == ECONNREFUSED)
    throw HttpError(cat("cannot connect to ", server_.hostPort(),
                        ": connection refused (is the server running?)"));
  throw HttpError(cat("cannot connect to ", server_.hostPort(), ": ",
                      std::strerror(lastError)));
}

HttpResponseParser
HttpClient::send(const HttpRequest &request, Clock::time_point deadline,
                 double timeoutS,
                 const HttpResponseParser::HeadersHandler &onHeaders,
                 const HttpResponseParser::BodyHandler &onBody) const {
  Socket s;
  s.fd = connect(deadline, timeoutS);
  auto timedOut = [&] {
    return HttpError(
        cat("timed out after ", seconds(timeoutS), " s (--timeout)"));
  };
  const std::string bytes = formatRequest(server_, request);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n =
        ::send(s.fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitFor(s.fd, POLLOUT, deadline))
        throw timedOut();
    } else if (errno != EINTR) {
      throw HttpError(
          cat("connection to ", server_.hostPort(),
              " lost while sending the request: ", std::strerror(errno)));
    }
  }
  HttpResponseParser parser(onBody, onHeaders);
  char buf[64 * 1024];
  while (!parser.complete()) {
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n > 0) {
      parser.feed(std::string_view(buf, static_cast<size_t>(n)));
    } else if (n == 0) {
      parser.finish();
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitFor(s.fd, POLLIN, deadline))
        throw timedOut();
    } else if (errno != EINTR) {
      throw HttpError(
          cat("connection to ", server_.hostPort(),
              " lost while reading the response: ", std::strerror(errno)));
    }
  }
  return parser;
}

} // namespace sol::bench

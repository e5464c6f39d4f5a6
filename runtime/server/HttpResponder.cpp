//===- HttpResponder.cpp - Writes one response on a connection ------------===//
#include "runtime/server/HttpResponder.h"

#include "runtime/support/Error.h"

#include <cerrno>
#include <poll.h>
#include <sys/socket.h>

namespace sol {

std::string_view httpReasonPhrase(int status) {
  switch (status) {
  case 100:
    return "Continue";
  case 200:
    return "OK";
  case 204:
    return "No Content";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 411:
    return "Length Required";
  case 413:
    return "Content Too Large";
  case 414:
    return "URI Too Long";
  case 415:
    return "Unsupported Media Type";
  case 429:
    return "Too Many Requests";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 501:
    return "Not Implemented";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "";
  }
}

bool HttpResponder::sendAll(std::string_view data) {
  if (failed_)
    return false;
  while (!data.empty()) {
    // MSG_NOSIGNAL: a closed peer is an error return, not SIGPIPE. The
    // socket has a send timeout, so a client that stops reading cannot hold
    // this thread forever.
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      failed_ = true;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string HttpResponder::head(int status, std::string_view contentType,
                                const HttpHeaders &extra) {
  if (draining_ && draining_->load())
    keepAlive_ = false;
  std::string h = cat("HTTP/1.", request_.versionMinor, " ", status, " ",
                      httpReasonPhrase(status), "\r\n");
  if (!contentType.empty())
    h += cat("Content-Type: ", contentType, "\r\n");
  for (const auto &[k, v] : extra)
    h += cat(k, ": ", v, "\r\n");
  if (!keepAlive_)
    h += "Connection: close\r\n";
  else if (request_.versionMinor == 0)
    h += "Connection: keep-alive\r\n";
  return h;
}

bool HttpResponder::send(int status, std::string_view contentType,
                         std::string_view body, const HttpHeaders &extra) {
  responded_ = true;
  std::string msg = head(status, contentType, extra);
  msg += cat("Content-Length: ", body.size(), "\r\n\r\n");
  if (request_.method != "HEAD")
    msg += body;
  return sendAll(msg);
}

bool HttpResponder::beginStream(int status, std::string_view contentType,
                                const HttpHeaders &extra) {
  responded_ = true;
  // HTTP/1.0 has no chunked coding: the end of the body is the end of the
  // connection.
  chunked_ = request_.versionMinor == 1;
  if (!chunked_)
    keepAlive_ = false;
  std::string msg = head(status, contentType, extra);
  if (chunked_)
    msg += "Transfer-Encoding: chunked\r\n";
  msg += "\r\n";
  return sendAll(msg);
}

bool HttpResponder::write(std::string_view data) {
  if (data.empty())
    return !failed_;
  if (!chunked_)
    return sendAll(data);
  static const char *const kHex = "0123456789abcdef";
  std::string size;
  for (size_t n = data.size(); n; n >>= 4)
    size.insert(size.begin(), kHex[n & 15]);
  std::string msg = size + "\r\n";
  msg += data;
  msg += "\r\n";
  return sendAll(msg);
}

bool HttpResponder::endStream() {
  return chunked_ ? sendAll("0\r\n\r\n") : !failed_;
}

bool HttpResponder::clientGone() {
  if (failed_)
    return true;
  // POLLRDHUP: the peer shut down its side (or closed); POLLHUP/POLLERR:
  // reset. Readable data alone (a pipelined request) is not a disconnect.
  pollfd p{fd_, POLLRDHUP, 0};
  int r;
  do
    r = ::poll(&p, 1, 0);
  while (r < 0 && errno == EINTR);
  if (r > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
    failed_ = true;
    return true;
  }
  return false;
}

} // namespace sol

//===- Error.h - The runtime's one error type -------------------*- C++ -*-===//
//
// Every recoverable failure in Sol's non-MLIR code (runtime, tokenizer, plan
// reader, safetensors reader, CLI) is reported by throwing sol::Error with a
// message a user can act on: what went wrong, where (file, tensor, line), and
// what to do about it when that is not obvious.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace sol {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

/// Concatenates the arguments with operator<< (GCC 12 has no <format>).
template <typename... Args> std::string cat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Throws sol::Error whose message is the concatenation of the arguments.
template <typename... Args> [[noreturn]] void fail(const Args &...args) {
  throw Error(cat(args...));
}

} // namespace sol

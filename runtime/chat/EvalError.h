//===- EvalError.h - Errors raised while a template runs --------*- C++ -*-===//
//
// Builtins (filters, tests, methods, operators) do not know which template
// line they run for. They throw EvalError; the evaluator catches it at the
// expression or statement that failed and rethrows sol::Error with the line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Error.h"

#include <stdexcept>
#include <string>

namespace sol::jinja {

class EvalError : public std::runtime_error {
public:
  explicit EvalError(const std::string &message)
      : std::runtime_error(message) {}
};

/// Throws EvalError whose message is the concatenation of the arguments.
template <typename... Args> [[noreturn]] void evalFail(const Args &...args) {
  throw EvalError(cat(args...));
}

} // namespace sol::jinja

namespace sol::jinja {

/// raise_exception(message) called by the template itself.
class TemplateRaisedError : public EvalError {
public:
  explicit TemplateRaisedError(const std::string &message)
      : EvalError(message) {}
};

} // namespace sol::jinja

//===- Template.h - A parsed Jinja chat template ----------------*- C++ -*-===//
//
// Parse once, render many times. Rendering is thread-safe: each render gets
// its own scopes, and the parsed tree is immutable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Ast.h"
#include "runtime/chat/Value.h"

#include <string>
#include <string_view>

namespace sol::jinja {

class Template {
public:
  /// Parses `source`; throws sol::Error naming the line on syntax errors or
  /// unsupported constructs.
  explicit Template(std::string_view source);

  /// Renders with `variables` (they shadow the built-in globals). Throws
  /// sol::Error naming the line when evaluation fails or the template calls
  /// raise_exception.
  std::string render(const DictData &variables) const;

private:
  StmtList body_;
};

} // namespace sol::jinja

//===- Evaluator.h - Runs a parsed Jinja template ---------------*- C++ -*-===//
//
// Walks the syntax tree with Jinja2's scoping rules: a for-loop iteration,
// macro call, {% with %}, block-set, filter block or {% generation %} body
// gets a child scope (assignments there do not leak out, reads fall through
// to the enclosing scopes); if/elif/else does not. namespace() objects are
// shared, so `set ns.attr` inside a loop is visible after it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Ast.h"
#include "runtime/chat/Value.h"

#include <string>

namespace sol::jinja {

/// Renders `body` with `variables` as the template's context.
std::string evaluateTemplate(const StmtList &body, const DictData &variables);

} // namespace sol::jinja

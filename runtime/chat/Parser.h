//===- Parser.h - Jinja chat template parser --------------------*- C++ -*-===//
//
// Recursive-descent parser following jinja2/parser.py (operator precedence,
// filter/test binding, tuples, slices) for the statements chat templates use:
// if/elif/else, for (with an inline `if` filter and else), set (incl.
// namespace attributes and block set), macro, filter blocks, with, break,
// continue, print, and Transformers' {% generation %}. Everything else
// (include, extends, import, call blocks, recursive loops, *args) is
// rejected with a sol::Error that names the line and the construct.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Ast.h"
#include "runtime/chat/Lexer.h"

#include <string_view>

namespace sol::jinja {

/// Parses template source into statements; throws sol::Error on errors.
StmtList parseTemplate(std::string_view source);

} // namespace sol::jinja

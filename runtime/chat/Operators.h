//===- Operators.h - Python semantics of template operators -----*- C++ -*-===//
//
// Jinja evaluates + - * / // % ** == < in ... with Python's rules: int/float
// promotion, str and list concatenation, floor division and modulo rounding
// toward negative infinity, TypeError on mixed types. Errors are thrown as
// EvalError with Python's wording so they read like Transformers' errors.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Value.h"

#include <string_view>

namespace sol::jinja {

/// Throws the UndefinedError for using `value` (which is Undefined).
[[noreturn]] void failUndefined(const Value &value);

/// Arithmetic: "+", "-", "*", "/", "//", "%", "**".
Value binaryOperator(std::string_view op, const Value &left,
                     const Value &right);

/// Unary minus / plus.
Value negate(const Value &operand);
Value unaryPlus(const Value &operand);

/// Comparisons: "==", "!=", "<", "<=", ">", ">=", "in", "notin".
bool compareValues(std::string_view op, const Value &left, const Value &right);

/// Python `item in container`.
bool containsValue(const Value &container, const Value &item);

/// Python's ordering (<) used by sort, min, max and comparisons.
bool lessThan(const Value &left, const Value &right);

} // namespace sol::jinja

//===- PyJson.h - JSON in and out, as Python's json module does -*- C++ -*-===//
//
// Requests arrive as JSON; Python's json.loads keeps object key order, so the
// conversion takes nlohmann::ordered_json. Transformers replaces Jinja's
// tojson filter by json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False); pyJsonDumps reproduces json.dumps
// byte for byte (", " and ": " separators by default, "," with an indent,
// Python float repr, \uXXXX escapes only for control characters unless
// ensure_ascii).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Value.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace sol::jinja {

/// Converts parsed JSON into template values (objects keep their key order).
Value valueFromJson(const nlohmann::ordered_json &json);

struct JsonDumpOptions {
  bool ensureAscii = false;
  /// Unset: single line. Set: newline + this string per nesting level
  /// (Python's indent=N is N spaces).
  std::optional<std::string> indent;
  /// Unset: Python's default, (", ", ": ") or ("," , ": ") with an indent.
  std::optional<std::pair<std::string, std::string>> separators;
  bool sortKeys = false;
};

/// json.dumps(value, ...). Throws EvalError for values JSON cannot hold
/// (Undefined, functions, namespaces), as Python raises TypeError.
std::string pyJsonDumps(const Value &value, const JsonDumpOptions &options);

} // namespace sol::jinja

//===- Builtins.h - Filters, tests, attributes and globals ------*- C++ -*-===//
//
// What a Transformers chat template can call besides operators:
//  - attribute and item access with the sandbox's rules (obj.attr tries the
//    Python attribute first, then the item; obj[key] the reverse), including
//    the Python methods of str and dict (strip, split, items, get, ...);
//  - Jinja's built-in filters and tests that chat templates use, with
//    Transformers' tojson (json.dumps, no HTML escaping);
//  - globals: range, dict, namespace, raise_exception, strftime_now.
// Anything else raises EvalError naming the missing filter/test/method.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/Value.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace sol::jinja {

/// Python/Jinja `obj.attr` (sandboxed getattr).
Value getAttribute(const Value &object, const std::string &attr);

/// Python/Jinja `obj[key]` (sandboxed getitem); `key` may be a slice given
/// as a 3-tuple via getSlice instead.
Value getItem(const Value &object, const Value &key);

/// obj[start:stop:step]; unset parts are None.
Value getSlice(const Value &object, const std::optional<Value> &start,
               const std::optional<Value> &stop,
               const std::optional<Value> &step);

/// x | name(args).
Value applyFilter(const std::string &name, const Value &operand,
                  const CallArgs &args);

/// Whether Jinja2 has a filter / test of this name (Sol may still not
/// implement it). Jinja rejects other names when it compiles a template.
bool isJinjaFilterName(std::string_view name);
bool isJinjaTestName(std::string_view name);

/// x is name(args).
bool applyTest(const std::string &name, const Value &operand,
               const CallArgs &args);

/// The callables every chat template sees as globals.
DictData builtinGlobals();

/// namespace(...): a new mutable attribute bag.
Value makeNamespace(const CallArgs &args);

/// One parameter of a Python-style signature; unset default = required.
struct Param {
  const char *name;
  std::optional<Value> defaultValue;
};

/// Binds positional and keyword arguments to `params` like Python does;
/// throws EvalError (TypeError) for missing, unknown or duplicate ones.
std::vector<Value> bindArguments(const std::string &function,
                                 const CallArgs &args,
                                 std::initializer_list<Param> params);

} // namespace sol::jinja

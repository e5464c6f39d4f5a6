//===- Attributes.cpp - Sandboxed attribute/item access and methods -------===//
//
// Mirrors jinja2.sandbox.SandboxedEnvironment.getattr/getitem under the
// ImmutableSandboxedEnvironment Transformers uses: methods that would mutate
// a list or dict are "unsafe" and yield an Undefined that fails when used.
//
//===----------------------------------------------------------------------===//

#include "runtime/chat/Builtins.h"
#include "runtime/chat/EvalError.h"
#include "runtime/chat/Operators.h"
#include "runtime/chat/PyStr.h"
#include "runtime/chat/Utf8.h"

#include <algorithm>

namespace sol::jinja {
namespace {

std::string objectTypeRepr(const Value &object) {
  if (object.isNone())
    return "None";
  return object.typeName() + " object";
}

Value missingAttribute(const Value &object, const std::string &attr) {
  return Value::undefined("'" + objectTypeRepr(object) +
                          "' has no attribute '" + attr + "'");
}

Value missingElement(const Value &object, const Value &key) {
  return Value::undefined("'" + objectTypeRepr(object) + "' has no element " +
                          pyRepr(key));
}

bool contains(std::initializer_list<const char *> names,
              const std::string &name) {
  return std::any_of(names.begin(), names.end(),
                     [&](const char *n) { return name == n; });
}

Value unsafe(const Value &object, const std::string &attr) {
  return Value::undefined("access to attribute '" + attr + "' of '" +
                          object.typeName() +
                          "' object is unsafe (the chat-template sandbox "
                          "forbids modifying values)");
}

Value unsupportedMethod(const Value &object, const std::string &attr) {
  return Value::undefined(object.typeName() + "." + attr +
                          "() is not supported by Sol's chat-template engine");
}

std::optional<std::string> optionalString(const Value &v, const char *what) {
  if (v.isNone())
    return std::nullopt;
  if (!v.isString())
    evalFail("TypeError: ", what, " must be str or None, not ", v.typeName());
  return v.asString();
}

std::string requireString(const Value &v, const char *function) {
  if (!v.isString())
    evalFail("TypeError: ", function, "() argument must be str, not ",
             v.typeName());
  return v.asString();
}

long long requireIndex(const Value &v, const char *function) {
  if (v.isBool())
    return v.asBool() ? 1 : 0;
  if (!v.isInt())
    evalFail("TypeError: ", function, "() argument must be an integer, not ",
             v.typeName());
  return static_cast<long long>(v.asInt());
}

std::vector<Value> stringList(const std::vector<std::string> &parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto &p : parts)
    out.emplace_back(p);
  return out;
}

/// s[start:end] for startswith/endswith's optional range.
std::string rangeOf(const std::string &s, const Value &start,
                    const Value &end) {
  if (start.isNone() && end.isNone())
    return s;
  return getSlice(Value(s), start, end, std::nullopt).asString();
}

bool matchesAffix(const std::string &s, const Value &affix, bool prefix,
                  const char *function) {
  auto one = [&](const Value &a) {
    if (!a.isString())
      evalFail("TypeError: ", function,
               " first arg must be str or a tuple of str, not ", a.typeName());
    const std::string &x = a.asString();
    if (x.size() > s.size())
      return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.isList() && affix.list().isTuple) {
    for (const Value &a : affix.list().items)
      if (one(a))
        return true;
    return false;
  }
  return one(affix);
}

Value stringMethod(const std::string &s, const std::string &name) {
  auto method = [&](auto body) {
    return Value::callable("str." + name, [s, name, body](const CallArgs &a) {
      return body(s, a, "str." + name);
    });
  };
  if (name == "startswith" || name == "endswith") {
    bool prefix = name == "startswith";
    return method([prefix](const std::string &self, const CallArgs &a,
                           const std::string &fn) {
      auto v = bindArguments(
          fn, a,
          {{"prefix", {}}, {"start", Value::none()}, {"end", Value::none()}});
      return Value(
          matchesAffix(rangeOf(self, v[1], v[2]), v[0], prefix, fn.c_str()));
    });
  }
  if (name == "split" || name == "rsplit") {
    bool right = name == "rsplit";
    return method([right](const std::string &self, const CallArgs &a,
                          const std::string &fn) {
      auto v = bindArguments(fn, a, {{"sep", Value::none()}, {"maxsplit", -1}});
      auto sep = optionalString(v[0], "sep");
      long long maxsplit = requireIndex(v[1], fn.c_str());
      return Value::list(stringList(right ? py::rsplit(self, sep, maxsplit)
                                          : py::split(self, sep, maxsplit)));
    });
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return method([left, right](const std::string &self, const CallArgs &a,
                                const std::string &fn) {
      auto v = bindArguments(fn, a, {{"chars", Value::none()}});
      return Value(py::strip(self, optionalString(v[0], "chars"), left, right));
    });
  }
  if (name == "lower" || name == "upper" || name == "title" ||
      name == "capitalize") {
    return method([name](const std::string &self, const CallArgs &a,
                         const std::string &fn) {
      bindArguments(fn, a, {});
      if (name == "lower")
        return Value(py::lower(self));
      if (name == "upper")
        return Value(py::upper(self));
      if (name == "title")
        return Value(py::title(self));
      return Value(py::capitalize(self));
    });
  }
  if (name == "replace") {
    return method([](const std::string &self, const CallArgs &a,
                     const std::string &fn) {
      auto v = bindArguments(fn, a, {{"old", {}}, {"new", {}}, {"count", -1}});
      return Value(py::replace(self, requireString(v[0], fn.c_str()),
                               requireString(v[1], fn.c_str()),
                               requireIndex(v[2], fn.c_str())));
    });
  }
  if (name == "find" || name == "rfind" || name == "count") {
    return method([name](const std::string &self, const CallArgs &a,
                         const std::string &fn) {
      auto v = bindArguments(fn, a, {{"sub", {}}});
      std::string sub = requireString(v[0], fn.c_str());
      if (name == "count") {
        if (sub.empty())
          return Value(static_cast<Integer>(countCodePoints(self) + 1));
        Integer n = 0;
        for (size_t p = self.find(sub); p != std::string::npos;
             p = self.find(sub, p + sub.size()))
          ++n;
        return Value(n);
      }
      size_t p = name == "find" ? self.find(sub) : self.rfind(sub);
      if (p == std::string::npos)
        return Value(-1);
      return Value(static_cast<Integer>(
          countCodePoints(std::string_view(self).substr(0, p))));
    });
  }
  if (name == "join") {
    return method(
        [](const std::string &self, const CallArgs &a, const std::string &fn) {
          auto v = bindArguments(fn, a, {{"iterable", {}}});
          std::string out;
          bool first = true;
          for (const Value &item : pyIterate(v[0])) {
            if (!item.isString())
              evalFail("TypeError: sequence item: expected str instance, ",
                       item.typeName(), " found");
            if (!first)
              out += self;
            first = false;
            out += item.asString();
          }
          return Value(out);
        });
  }
  if (name == "splitlines") {
    return method(
        [](const std::string &self, const CallArgs &a, const std::string &fn) {
          bindArguments(fn, a, {});
          return Value::list(stringList(py::splitLines(self)));
        });
  }
  if (name == "isspace" || name == "islower" || name == "isupper") {
    return method([name](const std::string &self, const CallArgs &a,
                         const std::string &fn) {
      bindArguments(fn, a, {});
      if (name == "islower")
        return Value(py::isLower(self));
      if (name == "isupper")
        return Value(py::isUpper(self));
      std::u32string cps = decodeUtf8(self);
      return Value(!cps.empty() &&
                   std::all_of(cps.begin(), cps.end(), py::isSpace));
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    bool prefix = name == "removeprefix";
    return method([prefix](const std::string &self, const CallArgs &a,
                           const std::string &fn) {
      auto v = bindArguments(fn, a, {{"affix", {}}});
      std::string affix = requireString(v[0], fn.c_str());
      if (matchesAffix(self, v[0], prefix, fn.c_str()))
        return Value(prefix ? self.substr(affix.size())
                            : self.substr(0, self.size() - affix.size()));
      return Value(self);
    });
  }
  if (contains({"format",      "format_map", "zfill",      "center",
                "ljust",       "rjust",      "isdigit",    "isalpha",
                "isalnum",     "isnumeric",  "isdecimal",  "isidentifier",
                "isprintable", "isascii",    "istitle",    "expandtabs",
                "encode",      "partition",  "rpartition", "swapcase",
                "casefold",    "index",      "rindex",     "translate",
                "maketrans"},
               name))
    return unsupportedMethod(Value(s), name);
  return missingAttribute(Value(s), name);
}

Value dictMethod(const Value &dict, const std::string &name) {
  if (name == "items" || name == "keys" || name == "values") {
    return Value::callable("dict." + name, [dict, name](const CallArgs &a) {
      bindArguments("dict." + name, a, {});
      std::vector<Value> out;
      for (const auto &[k, v] : dict.dict().entries) {
        if (name == "items")
          out.push_back(Value::list({Value(k), v}, true));
        else if (name == "keys")
          out.emplace_back(k);
        else
          out.push_back(v);
      }
      return Value::dictView(name == "items"  ? "dict_items"
                             : name == "keys" ? "dict_keys"
                                              : "dict_values",
                             std::move(out));
    });
  }
  if (name == "get") {
    return Value::callable("dict.get", [dict](const CallArgs &a) {
      auto v = bindArguments("dict.get", a,
                             {{"key", {}}, {"default", Value::none()}});
      if (v[0].isString())
        if (const Value *found = dict.dict().find(v[0].asString()))
          return *found;
      return v[1];
    });
  }
  return Value::undefined();
}

bool isDictAttribute(const std::string &name) {
  return contains({"items", "keys", "values", "get", "pop", "popitem",
                   "setdefault", "update", "clear", "copy", "fromkeys"},
                  name);
}

Value dictAttribute(const Value &dict, const std::string &name) {
  if (contains({"pop", "popitem", "setdefault", "update", "clear"}, name))
    return unsafe(dict, name);
  if (contains({"copy", "fromkeys"}, name))
    return unsupportedMethod(dict, name);
  return dictMethod(dict, name);
}

bool isListAttribute(const std::string &name) {
  return contains({"append", "extend", "insert", "pop", "remove", "clear",
                   "sort", "reverse", "index", "count", "copy"},
                  name);
}

Value listAttribute(const Value &list, const std::string &name) {
  if (contains({"index", "count", "copy"}, name))
    return unsupportedMethod(list, name);
  return unsafe(list, name);
}

long long clampIndex(long long index, long long length, bool forStart,
                     long long step) {
  long long lower = step < 0 ? -1 : 0;
  long long upper = step < 0 ? length - 1 : length;
  (void)forStart;
  if (index < 0) {
    index += length;
    if (index < lower)
      index = lower;
  } else if (index > upper) {
    index = upper;
  }
  return index;
}

long long sliceIndex(const Value &v) {
  if (v.isBool())
    return v.asBool() ? 1 : 0;
  if (!v.isInt())
    evalFail("TypeError: slice indices must be integers or None, not ",
             v.typeName());
  Integer i = v.asInt();
  const Integer limit = Integer(1) << 62;
  return static_cast<long long>(i > limit ? limit : i < -limit ? -limit : i);
}

} // namespace

Value getAttribute(const Value &object, const std::string &attr) {
  switch (object.kind()) {
  case Value::Kind::Undefined:
    failUndefined(object);
  case Value::Kind::String:
    return stringMethod(object.asString(), attr);
  case Value::Kind::Dict:
    if (isDictAttribute(attr))
      return dictAttribute(object, attr);
    if (const Value *v = object.dict().find(attr))
      return *v;
    return missingAttribute(object, attr);
  case Value::Kind::List:
    if (isListAttribute(attr))
      return listAttribute(object, attr);
    return missingAttribute(object, attr);
  case Value::Kind::Object:
    if (const Value *v = object.object().attributes.find(attr))
      return *v;
    return missingAttribute(object, attr);
  case Value::Kind::Bool:
  case Value::Kind::Int:
  case Value::Kind::Float: {
    // The data attributes of Python numbers.
    bool isFloat = object.isFloat();
    Integer asInt = object.isBool() ? Integer(object.asBool())
                    : isFloat       ? 0
                                    : object.asInt();
    if (attr == "real")
      return isFloat ? object : Value(asInt);
    if (attr == "imag")
      return isFloat ? Value(0.0) : Value(0);
    if (!isFloat && attr == "numerator")
      return Value(asInt);
    if (!isFloat && attr == "denominator")
      return Value(1);
    return missingAttribute(object, attr);
  }
  default:
    return missingAttribute(object, attr);
  }
}

Value getItem(const Value &object, const Value &key) {
  switch (object.kind()) {
  case Value::Kind::Undefined:
    failUndefined(object);
  case Value::Kind::Dict:
    if (key.isString()) {
      if (const Value *v = object.dict().find(key.asString()))
        return *v;
      if (isDictAttribute(key.asString()))
        return dictAttribute(object, key.asString());
      return missingAttribute(object, key.asString());
    }
    return missingElement(object, key);
  case Value::Kind::List:
  case Value::Kind::String: {
    if (key.isString())
      return getAttribute(object, key.asString());
    if (!key.isInt() && !key.isBool())
      return missingElement(object, key);
    Integer length = pyLen(object);
    Integer index = key.isBool() ? Integer(key.asBool()) : key.asInt();
    if (index < 0)
      index += length;
    if (index < 0 || index >= length)
      return missingElement(object, key);
    if (object.isList())
      return object.list().items[static_cast<size_t>(index)];
    std::u32string cps = decodeUtf8(object.asString());
    return Value(
        encodeUtf8(std::u32string(1, cps[static_cast<size_t>(index)])));
  }
  case Value::Kind::Object:
    if (key.isString())
      return getAttribute(object, key.asString());
    return missingElement(object, key);
  default:
    if (key.isString())
      return missingAttribute(object, key.asString());
    return missingElement(object, key);
  }
}

Value getSlice(const Value &object, const std::optional<Value> &startArg,
               const std::optional<Value> &stopArg,
               const std::optional<Value> &stepArg) {
  if (object.isUndefined())
    failUndefined(object);
  if (!object.isList() && !object.isString())
    evalFail("TypeError: '", object.typeName(),
             "' object is not subscriptable "
             "with a slice");
  auto given = [](const std::optional<Value> &v) { return v && !v->isNone(); };
  long long step = given(stepArg) ? sliceIndex(*stepArg) : 1;
  if (step == 0)
    evalFail("ValueError: slice step cannot be zero");
  std::u32string cps;
  long long length;
  if (object.isString()) {
    cps = decodeUtf8(object.asString());
    length = static_cast<long long>(cps.size());
  } else {
    length = static_cast<long long>(object.list().items.size());
  }
  long long start = given(startArg)
                        ? clampIndex(sliceIndex(*startArg), length, true, step)
                        : (step < 0 ? length - 1 : 0);
  long long stop = given(stopArg)
                       ? clampIndex(sliceIndex(*stopArg), length, false, step)
                       : (step < 0 ? -1 : length);
  std::vector<long long> indices;
  if (step > 0)
    for (long long i = start; i < stop; i += step)
      indices.push_back(i);
  else
    for (long long i = start; i > stop; i += step)
      indices.push_back(i);
  if (object.isString()) {
    std::u32string out;
    for (long long i : indices)
      out.push_back(cps[static_cast<size_t>(i)]);
    return Value(encodeUtf8(out));
  }
  std::vector<Value> out;
  for (long long i : indices)
    out.push_back(object.list().items[static_cast<size_t>(i)]);
  return Value::list(std::move(out), object.list().isTuple);
}

} // namespace sol::jinja

//===- BuiltinGlobals.cpp - Functions every chat template can call ------===//
//
// Jinja's default globals (range, dict, namespace) and the two Transformers
// adds: raise_exception(message) and strftime_now(format).
//
//===----------------------------------------------------------------------===//

#include "runtime/chat/Builtins.h"
#include "runtime/chat/EvalError.h"

#include <ctime>

namespace sol::jinja {
namespace {

/// Jinja's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr Integer kMaxRange = 100000;

Integer rangeArgument(const Value &v) {
  if (v.isBool())
    return v.asBool() ? 1 : 0;
  if (!v.isInt())
    evalFail("TypeError: '", v.typeName(),
             "' object cannot be interpreted as an integer");
  return v.asInt();
}

Value range(const CallArgs &args) {
  if (!args.keyword.empty())
    evalFail("TypeError: range() takes no keyword arguments");
  const auto &p = args.positional;
  if (p.empty() || p.size() > 3)
    evalFail("TypeError: range expected 1 to 3 arguments, got ", p.size());
  Integer start = 0, stop, step = 1;
  if (p.size() == 1) {
    stop = rangeArgument(p[0]);
  } else {
    start = rangeArgument(p[0]);
    stop = rangeArgument(p[1]);
    if (p.size() == 3)
      step = rangeArgument(p[2]);
  }
  if (step == 0)
    evalFail("ValueError: range() arg 3 must not be zero");
  Integer count = 0;
  if (step > 0 && start < stop)
    count = (stop - start + step - 1) / step;
  else if (step < 0 && start > stop)
    count = (start - stop - step - 1) / -step;
  if (count > kMaxRange)
    evalFail("OverflowError: Range too big. The sandbox blocks ranges larger "
             "than MAX_RANGE (100000).");
  std::vector<Value> items;
  for (Integer i = 0; i < count; ++i)
    items.emplace_back(start + i * step);
  return Value::list(std::move(items));
}

Value makeDict(const CallArgs &args) {
  DictData dict;
  if (args.positional.size() > 1)
    evalFail("TypeError: dict expected at most 1 argument, got ",
             args.positional.size());
  if (args.positional.size() == 1) {
    const Value &source = args.positional[0];
    if (!source.isDict())
      evalFail("unsupported Jinja construct: dict() from a non-mapping");
    dict = source.dict();
  }
  for (const auto &[k, v] : args.keyword)
    dict.set(k, v);
  return Value::dict(std::move(dict));
}

Value raiseException(const CallArgs &args) {
  auto v = bindArguments("raise_exception", args, {{"message", {}}});
  throw TemplateRaisedError(pyStr(v[0]));
}

Value strftimeNow(const CallArgs &args) {
  auto v = bindArguments("strftime_now", args, {{"format", {}}});
  if (!v[0].isString())
    evalFail("TypeError: strftime() argument 1 must be str, not ",
             v[0].typeName());
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::string format = v[0].asString();
  if (format.empty())
    return Value(std::string());
  std::string buffer(256 + format.size() * 8, '\0');
  size_t n =
      std::strftime(buffer.data(), buffer.size(), format.c_str(), &local);
  buffer.resize(n);
  return Value(buffer);
}

Value unsupportedGlobal(const std::string &name) {
  return Value::callable(name, [name](const CallArgs &) -> Value {
    evalFail("unsupported Jinja construct: the global '", name,
             "()' (not implemented by Sol's chat-template engine)");
  });
}

} // namespace

Value makeNamespace(const CallArgs &args) {
  Value base = makeDict(args);
  return Value::object(ObjectData::Type::Namespace, base.dict());
}

DictData builtinGlobals() {
  DictData globals;
  globals.set("range", Value::callable("range", range));
  globals.set("dict", Value::callable("dict", makeDict));
  globals.set("namespace", Value::callable("namespace", makeNamespace));
  globals.set("raise_exception",
              Value::callable("raise_exception", raiseException));
  globals.set("strftime_now", Value::callable("strftime_now", strftimeNow));
  for (const char *name : {"lipsum", "cycler", "joiner"})
    globals.set(name, unsupportedGlobal(name));
  return globals;
}

} // namespace sol::jinja

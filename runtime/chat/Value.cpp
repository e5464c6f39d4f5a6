//===- Value.cpp - The data model of the chat-template engine -------------===//

#include "runtime/chat/Value.h"

#include "runtime/chat/EvalError.h"
#include "runtime/chat/PyStr.h"
#include "runtime/chat/Utf8.h"

#include <algorithm>

namespace sol::jinja {

const Value *DictData::find(std::string_view key) const {
  for (const auto &[k, v] : entries)
    if (k == key)
      return &v;
  return nullptr;
}

void DictData::set(std::string key, Value value) {
  for (auto &[k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

namespace {

/// Nesting depth of a container built from `items`; throws past the limit.
template <typename Range, typename Get>
int containerDepth(const Range &items, Get get) {
  int deepest = 0;
  for (const auto &item : items) {
    const Value &v = get(item);
    if (v.isList())
      deepest = std::max(deepest, v.list().depth);
    else if (v.isDict())
      deepest = std::max(deepest, v.dict().depth);
  }
  if (deepest + 1 > kMaxValueNesting)
    evalFail("ValueError: lists and dicts nest deeper than ", kMaxValueNesting,
             " levels");
  return deepest + 1;
}

int listDepth(const std::vector<Value> &items) {
  return containerDepth(items,
                        [](const Value &v) -> const Value & { return v; });
}

/// Guards recursive printing/comparison against values that contain
/// themselves through a namespace.
class RecursionGuard {
public:
  RecursionGuard() {
    if (++depth_ > 2 * kMaxValueNesting)
      evalFail("RecursionError: value nests too deeply (does a namespace "
               "contain itself?)");
  }
  ~RecursionGuard() { --depth_; }
  RecursionGuard(const RecursionGuard &) = delete;
  RecursionGuard &operator=(const RecursionGuard &) = delete;

private:
  static thread_local int depth_;
};

thread_local int RecursionGuard::depth_ = 0;

} // namespace

Value Value::list(std::vector<Value> items, bool isTuple) {
  auto data = std::make_shared<ListData>();
  data->depth = listDepth(items);
  data->items = std::move(items);
  data->isTuple = isTuple;
  return Value(Storage(ListPtr(std::move(data))));
}

Value Value::dictView(const char *viewName, std::vector<Value> items) {
  auto data = std::make_shared<ListData>();
  data->depth = listDepth(items);
  data->items = std::move(items);
  data->viewName = viewName;
  return Value(Storage(ListPtr(std::move(data))));
}

Value Value::dict(DictData dict) {
  dict.depth =
      containerDepth(dict.entries, [](const auto &entry) -> const Value & {
        return entry.second;
      });
  return Value(Storage(DictPtr(std::make_shared<DictData>(std::move(dict)))));
}

Value Value::object(ObjectData::Type type, DictData attributes) {
  return Value(Storage(
      std::make_shared<ObjectData>(ObjectData{type, std::move(attributes)})));
}

Value Value::callable(std::string name,
                      std::function<Value(const CallArgs &)> function) {
  return Value(Storage(CallablePtr(std::make_shared<CallableData>(
      CallableData{std::move(name), std::move(function)}))));
}

double Value::toDouble() const {
  switch (kind()) {
  case Kind::Bool:
    return asBool() ? 1.0 : 0.0;
  case Kind::Int:
    return static_cast<double>(asInt());
  case Kind::Float:
    return asFloat();
  default:
    evalFail("TypeError: expected a number, got '", typeName(), "'");
  }
}

const void *Value::identity() const {
  switch (kind()) {
  case Kind::List:
    return std::get<ListPtr>(data_).get();
  case Kind::Dict:
    return std::get<DictPtr>(data_).get();
  case Kind::Object:
    return std::get<ObjectPtr>(data_).get();
  case Kind::Callable:
    return std::get<CallablePtr>(data_).get();
  default:
    return nullptr;
  }
}

bool Value::truthy() const {
  switch (kind()) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
    return asBool();
  case Kind::Int:
    return asInt() != 0;
  case Kind::Float:
    return asFloat() != 0.0;
  case Kind::String:
    return !asString().empty();
  case Kind::List:
    return !list().items.empty();
  case Kind::Dict:
    return !dict().entries.empty();
  case Kind::Object:
  case Kind::Callable:
    return true;
  }
  return false;
}

std::string Value::typeName() const {
  switch (kind()) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    if (list().viewName)
      return list().viewName;
    return list().isTuple ? "tuple" : "list";
  case Kind::Dict:
    return "dict";
  case Kind::Object:
    return object().type == ObjectData::Type::Namespace ? "Namespace"
                                                        : "LoopContext";
  case Kind::Callable:
    return "function";
  }
  return "object";
}

bool pyEquals(const Value &a, const Value &b) {
  using Kind = Value::Kind;
  RecursionGuard guard;
  if (a.isNumber() && b.isNumber()) {
    if (a.isFloat() || b.isFloat())
      return a.toDouble() == b.toDouble();
    Integer x = a.isBool() ? Integer(a.asBool()) : a.asInt();
    Integer y = b.isBool() ? Integer(b.asBool()) : b.asInt();
    return x == y;
  }
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Kind::Undefined:
  case Kind::None:
    return true;
  case Kind::String:
    return a.asString() == b.asString();
  case Kind::List: {
    const auto &x = a.list(), &y = b.list();
    if (x.isTuple != y.isTuple || x.items.size() != y.items.size())
      return false;
    for (size_t i = 0; i < x.items.size(); ++i)
      if (!pyEquals(x.items[i], y.items[i]))
        return false;
    return true;
  }
  case Kind::Dict: {
    const auto &x = a.dict(), &y = b.dict();
    if (x.entries.size() != y.entries.size())
      return false;
    for (const auto &[key, value] : x.entries) {
      const Value *other = y.find(key);
      if (!other || !pyEquals(value, *other))
        return false;
    }
    return true;
  }
  default:
    return a.identity() == b.identity();
  }
}

namespace {

std::string containerText(const Value &value) {
  RecursionGuard guard;
  std::string out;
  if (value.isList()) {
    const auto &l = value.list();
    out = l.isTuple ? "(" : "[";
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i)
        out += ", ";
      out += pyRepr(l.items[i]);
    }
    if (l.isTuple && l.items.size() == 1)
      out += ",";
    out += l.isTuple ? ")" : "]";
    if (l.viewName)
      out = std::string(l.viewName) + "(" + out + ")";
    return out;
  }
  const DictData &d = value.isDict() ? value.dict() : value.object().attributes;
  out = "{";
  bool first = true;
  for (const auto &[key, item] : d.entries) {
    if (!first)
      out += ", ";
    first = false;
    out += py::repr(key) + ": " + pyRepr(item);
  }
  out += "}";
  return out;
}

} // namespace

std::string pyStr(const Value &value) {
  using Kind = Value::Kind;
  switch (value.kind()) {
  case Kind::Undefined:
    return "";
  case Kind::None:
    return "None";
  case Kind::Bool:
    return value.asBool() ? "True" : "False";
  case Kind::Int:
    return integerToString(value.asInt());
  case Kind::Float:
    return floatRepr(value.asFloat());
  case Kind::String:
    return value.asString();
  case Kind::List:
  case Kind::Dict:
    return containerText(value);
  case Kind::Object:
    if (value.object().type == ObjectData::Type::Namespace)
      return "<Namespace " + containerText(value) + ">";
    evalFail("cannot convert the loop object to text (Sol does not "
             "reproduce Python's <LoopContext> text)");
  case Kind::Callable:
    evalFail("cannot convert function '", value.callable().name,
             "' to text (did you forget to call it with ()?)");
  }
  return "";
}

std::string pyRepr(const Value &value) {
  if (value.isString())
    return py::repr(value.asString());
  if (value.isUndefined())
    return "Undefined";
  return pyStr(value);
}

Integer pyLen(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return static_cast<Integer>(countCodePoints(value.asString()));
  case Value::Kind::List:
    return static_cast<Integer>(value.list().items.size());
  case Value::Kind::Dict:
    return static_cast<Integer>(value.dict().entries.size());
  default:
    evalFail("TypeError: object of type '", value.typeName(), "' has no len()");
  }
}

std::vector<Value> pyIterate(const Value &value) {
  std::vector<Value> out;
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return out;
  case Value::Kind::String: {
    std::string piece;
    for (char32_t cp : decodeUtf8(value.asString())) {
      piece.clear();
      appendUtf8(piece, cp);
      out.emplace_back(piece);
    }
    return out;
  }
  case Value::Kind::List:
    return value.list().items;
  case Value::Kind::Dict:
    for (const auto &entry : value.dict().entries)
      out.emplace_back(entry.first);
    return out;
  default:
    evalFail("TypeError: '", value.typeName(), "' object is not iterable");
  }
}

} // namespace sol::jinja

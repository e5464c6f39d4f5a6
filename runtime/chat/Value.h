//===- Value.h - The data model of the chat-template engine -----*- C++ -*-===//
//
// A Value is what a Jinja expression evaluates to. It mirrors the Python
// objects a Transformers chat template sees: str, int, float, bool, None,
// list/tuple, dict (insertion-ordered), plus Jinja's Undefined (a missing
// variable or key, which is falsy and prints as ""), namespace() / loop
// objects and callables. Lists and dicts are shared (Python reference
// semantics; the sandbox forbids mutating them); namespaces are mutable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/PyNumber.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sol::jinja {

class Value;

/// How deeply lists and dicts may nest. Chat data is shallow; the limit
/// keeps printing, comparing and freeing values from exhausting the stack.
constexpr int kMaxValueNesting = 512;

struct ListData {
  std::vector<Value> items;
  int depth = 1; // 1 + the deepest nested list/dict
  bool isTuple = false;
  /// "dict_items", "dict_keys" or "dict_values" for dict views (they print
  /// and serialise differently), else null.
  const char *viewName = nullptr;
};

/// An insertion-ordered str-keyed dict (Python 3.7+ dict order matters for
/// tojson and iteration).
struct DictData {
  std::vector<std::pair<std::string, Value>> entries;
  int depth = 1; // set by Value::dict

  const Value *find(std::string_view key) const;
  /// Inserts or overwrites, keeping the original position of a key.
  void set(std::string key, Value value);
};

/// Attribute bags that are not mappings: namespace() and the loop variable.
struct ObjectData {
  enum class Type { Namespace, Loop };
  Type type;
  DictData attributes;
};

/// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct CallableData {
  std::string name;
  std::function<Value(const CallArgs &)> function;
};

/// Jinja's Undefined: `hint` says why, for the error if it is used wrongly.
struct Undefined {
  std::string hint;
};

class Value {
public:
  enum class Kind {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Dict,
    Object,
    Callable
  };

  Value() : data_(Undefined{}) {}
  static Value undefined(std::string hint = {}) {
    return Value(Storage(Undefined{std::move(hint)}));
  }
  static Value none() { return Value(Storage(nullptr)); }
  Value(bool b) : data_(b) {}
  Value(int i) : data_(static_cast<Integer>(i)) {}
  Value(long i) : data_(static_cast<Integer>(i)) {}
  Value(long long i) : data_(static_cast<Integer>(i)) {}
  Value(unsigned long i) : data_(static_cast<Integer>(i)) {}
  Value(unsigned long long i) : data_(static_cast<Integer>(i)) {}
  Value(Integer i) : data_(i) {}
  Value(double d) : data_(d) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(std::string_view s) : data_(std::string(s)) {}
  Value(const char *s) : data_(std::string(s)) {}
  static Value list(std::vector<Value> items, bool isTuple = false);
  static Value dictView(const char *viewName, std::vector<Value> items);
  static Value dict(DictData dict);
  static Value object(ObjectData::Type type, DictData attributes = {});
  static Value callable(std::string name,
                        std::function<Value(const CallArgs &)> function);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool isUndefined() const { return kind() == Kind::Undefined; }
  bool isNone() const { return kind() == Kind::None; }
  bool isBool() const { return kind() == Kind::Bool; }
  bool isInt() const { return kind() == Kind::Int; }
  bool isFloat() const { return kind() == Kind::Float; }
  /// int, float or bool (Python numbers; bool is an int subclass).
  bool isNumber() const { return isInt() || isFloat() || isBool(); }
  bool isString() const { return kind() == Kind::String; }
  bool isList() const { return kind() == Kind::List; }
  bool isDict() const { return kind() == Kind::Dict; }
  bool isObject() const { return kind() == Kind::Object; }
  bool isCallable() const { return kind() == Kind::Callable; }
  bool isNamespace() const {
    return isObject() && object().type == ObjectData::Type::Namespace;
  }

  bool asBool() const { return std::get<bool>(data_); }
  Integer asInt() const { return std::get<Integer>(data_); }
  double asFloat() const { return std::get<double>(data_); }
  /// int/bool/float as a double (Python float(x) of a number).
  double toDouble() const;
  const std::string &asString() const { return std::get<std::string>(data_); }
  const ListData &list() const { return *std::get<ListPtr>(data_); }
  const DictData &dict() const { return *std::get<DictPtr>(data_); }
  ObjectData &object() const { return *std::get<ObjectPtr>(data_); }
  const CallableData &callable() const { return *std::get<CallablePtr>(data_); }
  const std::string &undefinedHint() const {
    return std::get<Undefined>(data_).hint;
  }
  /// The list shared by this value (identity for `is sameas`-like checks).
  const void *identity() const;

  /// Python truthiness (Undefined and None are false).
  bool truthy() const;

  /// Python's type name, for error messages ('str', 'NoneType', ...).
  std::string typeName() const;

private:
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  using ObjectPtr = std::shared_ptr<ObjectData>;
  using CallablePtr = std::shared_ptr<const CallableData>;
  using Storage =
      std::variant<Undefined, std::nullptr_t, bool, Integer, double,
                   std::string, ListPtr, DictPtr, ObjectPtr, CallablePtr>;
  explicit Value(Storage s) : data_(std::move(s)) {}
  Storage data_;
};

/// Python ==, with Jinja's rule that Undefined equals only Undefined.
bool pyEquals(const Value &a, const Value &b);

/// Python str(x) as Jinja prints it ({{ x }}, |string, ~): Undefined is "",
/// None is "None", containers use repr of their items.
std::string pyStr(const Value &value);

/// Python repr(x).
std::string pyRepr(const Value &value);

/// Python len(x) (code points for str); throws EvalError where Python does.
Integer pyLen(const Value &value);

/// Python iter(x) materialised: list/tuple items, dict keys, str code
/// points; Undefined iterates as empty. Throws EvalError for the rest.
std::vector<Value> pyIterate(const Value &value);

} // namespace sol::jinja

//===- Operators.cpp - Python semantics of template operators -------------===//

#include "runtime/chat/Operators.h"

#include "runtime/chat/EvalError.h"

#include <cmath>
#include <limits>

namespace sol::jinja {
namespace {

/// Largest string or list an operator may build; a guard against templates
/// that would exhaust memory (e.g. 'x' * 10**12).
constexpr size_t kMaxBuiltSize = size_t(1) << 28;

bool isIntLike(const Value &v) { return v.isInt() || v.isBool(); }

Integer asInteger(const Value &v) {
  return v.isBool() ? Integer(v.asBool() ? 1 : 0) : v.asInt();
}

[[noreturn]] void unsupportedOperands(std::string_view op, const Value &a,
                                      const Value &b) {
  evalFail("TypeError: unsupported operand type(s) for ", op, ": '",
           a.typeName(), "' and '", b.typeName(), "'");
}

Value checkedInteger(bool overflow, Integer result) {
  if (overflow)
    evalFail("OverflowError: integer result does not fit in 128 bits");
  return Value(result);
}

Value repeat(const Value &sequence, Integer times) {
  if (times <= 0)
    return sequence.isString() ? Value(std::string())
                               : Value::list({}, sequence.list().isTuple);
  size_t unit = sequence.isString() ? sequence.asString().size()
                                    : sequence.list().items.size();
  if (unit != 0 && static_cast<Integer>(kMaxBuiltSize / unit) < times)
    evalFail("MemoryError: repetition result would exceed ", kMaxBuiltSize,
             " elements");
  if (sequence.isString()) {
    std::string out;
    for (Integer i = 0; i < times; ++i)
      out += sequence.asString();
    return Value(out);
  }
  std::vector<Value> out;
  for (Integer i = 0; i < times; ++i)
    out.insert(out.end(), sequence.list().items.begin(),
               sequence.list().items.end());
  return Value::list(std::move(out), sequence.list().isTuple);
}

Integer floorDiv(Integer a, Integer b) {
  Integer q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

double floatMod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0)))
    m += b;
  else if (m == 0)
    m = std::copysign(0.0, b);
  return m;
}

} // namespace

void failUndefined(const Value &value) {
  const std::string &hint = value.undefinedHint();
  evalFail("UndefinedError: ", hint.empty() ? "a value is undefined" : hint);
}

Value binaryOperator(std::string_view op, const Value &a, const Value &b) {
  if (a.isUndefined())
    failUndefined(a);
  if (b.isUndefined())
    failUndefined(b);
  bool numbers = a.isNumber() && b.isNumber();
  bool integers = isIntLike(a) && isIntLike(b);

  if (op == "+") {
    if (integers) {
      Integer r = 0;
      bool overflow = __builtin_add_overflow(asInteger(a), asInteger(b), &r);
      return checkedInteger(overflow, r);
    }
    if (numbers)
      return Value(a.toDouble() + b.toDouble());
    if (a.isString() && b.isString()) {
      if (a.asString().size() + b.asString().size() > kMaxBuiltSize)
        evalFail("MemoryError: string result too large");
      return Value(a.asString() + b.asString());
    }
    if (a.isString())
      evalFail("TypeError: can only concatenate str (not \"", b.typeName(),
               "\") to str");
    if (a.isList() && b.isList() && a.list().isTuple == b.list().isTuple) {
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::list(std::move(items), a.list().isTuple);
    }
    if (a.isList())
      evalFail("TypeError: can only concatenate ", a.typeName(), " (not \"",
               b.typeName(), "\") to ", a.typeName());
    unsupportedOperands(op, a, b);
  }
  if (op == "-") {
    if (integers) {
      Integer r = 0;
      bool overflow = __builtin_sub_overflow(asInteger(a), asInteger(b), &r);
      return checkedInteger(overflow, r);
    }
    if (numbers)
      return Value(a.toDouble() - b.toDouble());
    unsupportedOperands(op, a, b);
  }
  if (op == "*") {
    if (integers) {
      Integer r = 0;
      bool overflow = __builtin_mul_overflow(asInteger(a), asInteger(b), &r);
      return checkedInteger(overflow, r);
    }
    if (numbers)
      return Value(a.toDouble() * b.toDouble());
    if ((a.isString() || a.isList()) && isIntLike(b))
      return repeat(a, asInteger(b));
    if ((b.isString() || b.isList()) && isIntLike(a))
      return repeat(b, asInteger(a));
    if (a.isString() || b.isString())
      evalFail("TypeError: can't multiply sequence by non-int of type '",
               (a.isString() ? b : a).typeName(), "'");
    unsupportedOperands(op, a, b);
  }
  if (op == "/") {
    if (!numbers)
      unsupportedOperands(op, a, b);
    if (b.toDouble() == 0)
      evalFail("ZeroDivisionError: division by zero");
    return Value(a.toDouble() / b.toDouble());
  }
  if (op == "//") {
    if (!numbers)
      unsupportedOperands(op, a, b);
    if (integers) {
      if (asInteger(b) == 0)
        evalFail("ZeroDivisionError: integer division or modulo by zero");
      return Value(floorDiv(asInteger(a), asInteger(b)));
    }
    if (b.toDouble() == 0)
      evalFail("ZeroDivisionError: float floor division by zero");
    double x = a.toDouble(), y = b.toDouble();
    return Value((x - floatMod(x, y)) / y);
  }
  if (op == "%") {
    if (a.isString())
      evalFail("unsupported Jinja construct: printf-style string formatting "
               "with '%' (Sol's chat-template engine does not implement it)");
    if (!numbers)
      unsupportedOperands(op, a, b);
    if (integers) {
      Integer y = asInteger(b);
      if (y == 0)
        evalFail("ZeroDivisionError: integer division or modulo by zero");
      Integer x = asInteger(a);
      return Value(x - floorDiv(x, y) * y);
    }
    if (b.toDouble() == 0)
      evalFail("ZeroDivisionError: float modulo");
    return Value(floatMod(a.toDouble(), b.toDouble()));
  }
  if (op == "**") {
    if (!numbers)
      unsupportedOperands(op, a, b);
    if (integers && asInteger(b) >= 0) {
      Integer base = asInteger(a), exp = asInteger(b), result = 1;
      while (exp > 0) { // square-and-multiply
        if ((exp & 1) && __builtin_mul_overflow(result, base, &result))
          evalFail("OverflowError: integer result does not fit in 128 bits");
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base))
          evalFail("OverflowError: integer result does not fit in 128 bits");
      }
      return Value(result);
    }
    double x = a.toDouble(), y = b.toDouble();
    if (x == 0 && y < 0)
      evalFail("ZeroDivisionError: 0.0 cannot be raised to a negative power");
    return Value(std::pow(x, y));
  }
  evalFail("internal error: unknown operator ", op);
}

Value negate(const Value &v) {
  if (v.isUndefined())
    failUndefined(v);
  if (isIntLike(v))
    return Value(-asInteger(v));
  if (v.isFloat())
    return Value(-v.asFloat());
  evalFail("TypeError: bad operand type for unary -: '", v.typeName(), "'");
}

Value unaryPlus(const Value &v) {
  if (v.isUndefined())
    failUndefined(v);
  if (isIntLike(v))
    return Value(asInteger(v));
  if (v.isFloat())
    return v;
  evalFail("TypeError: bad operand type for unary +: '", v.typeName(), "'");
}

bool lessThan(const Value &a, const Value &b) {
  if (a.isUndefined())
    failUndefined(a);
  if (b.isUndefined())
    failUndefined(b);
  if (isIntLike(a) && isIntLike(b))
    return asInteger(a) < asInteger(b);
  if (a.isNumber() && b.isNumber())
    return a.toDouble() < b.toDouble();
  if (a.isString() && b.isString())
    return a.asString() < b.asString(); // UTF-8 order is code point order
  if (a.isList() && b.isList() && a.list().isTuple == b.list().isTuple) {
    const auto &x = a.list().items, &y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (pyEquals(x[i], y[i]))
        continue;
      return lessThan(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  evalFail("TypeError: '<' not supported between instances of '", a.typeName(),
           "' and '", b.typeName(), "'");
}

bool containsValue(const Value &container, const Value &item) {
  switch (container.kind()) {
  case Value::Kind::Undefined:
    return false;
  case Value::Kind::String:
    if (!item.isString())
      evalFail("TypeError: 'in <string>' requires string as left operand, "
               "not ",
               item.typeName());
    return container.asString().find(item.asString()) != std::string::npos;
  case Value::Kind::List:
    for (const Value &v : container.list().items)
      if (pyEquals(v, item))
        return true;
    return false;
  case Value::Kind::Dict:
    if (item.isList() && !item.list().isTuple)
      evalFail("TypeError: unhashable type: 'list'");
    if (item.isDict())
      evalFail("TypeError: unhashable type: 'dict'");
    return item.isString() && container.dict().find(item.asString());
  default:
    evalFail("TypeError: argument of type '", container.typeName(),
             "' is not iterable");
  }
}

bool compareValues(std::string_view op, const Value &a, const Value &b) {
  if (op == "==")
    return pyEquals(a, b);
  if (op == "!=")
    return !pyEquals(a, b);
  if (op == "in")
    return containsValue(b, a);
  if (op == "notin")
    return !containsValue(b, a);
  auto checkOrderable = [&](const char *symbol) {
    bool ok =
        (a.isNumber() && b.isNumber()) || (a.isString() && b.isString()) ||
        (a.isList() && b.isList() && a.list().isTuple == b.list().isTuple);
    if (a.isUndefined())
      failUndefined(a);
    if (b.isUndefined())
      failUndefined(b);
    if (!ok)
      evalFail("TypeError: '", symbol, "' not supported between instances of '",
               a.typeName(), "' and '", b.typeName(), "'");
  };
  if (a.isNumber() && b.isNumber() && (a.isFloat() || b.isFloat())) {
    double x = a.toDouble(), y = b.toDouble(); // NaN compares false
    return op == "<" ? x < y : op == ">" ? x > y : op == "<=" ? x <= y : x >= y;
  }
  if (op == "<") {
    checkOrderable("<");
    return lessThan(a, b);
  }
  if (op == ">") {
    checkOrderable(">");
    return lessThan(b, a);
  }
  if (op == "<=") {
    checkOrderable("<=");
    return !lessThan(b, a);
  }
  if (op == ">=") {
    checkOrderable(">=");
    return !lessThan(a, b);
  }
  evalFail("internal error: unknown comparison ", op);
}

} // namespace sol::jinja

//===- BuiltinTests.cpp - Jinja's built-in tests (`x is name`) ---------===//
//
// Follows jinja2/tests.py. Note Jinja's quirks kept on purpose: an Undefined
// value `is sequence` and `is iterable` (it has __len__/__iter__), bools are
// numbers, and strings and dicts are sequences.
//
//===----------------------------------------------------------------------===//

#include "runtime/chat/Builtins.h"
#include "runtime/chat/EvalError.h"
#include "runtime/chat/Operators.h"
#include "runtime/chat/PyStr.h"

#include <map>

namespace sol::jinja {
namespace {

using TestFunction = bool (*)(const Value &, const CallArgs &);

const Value &onlyArgument(const char *name, const CallArgs &args) {
  if (args.positional.size() != 1 || !args.keyword.empty())
    evalFail("TypeError: test '", name, "' takes exactly one argument");
  return args.positional[0];
}

void noArguments(const char *name, const CallArgs &args) {
  if (!args.positional.empty() || !args.keyword.empty())
    evalFail("TypeError: test '", name, "' takes no arguments");
}

#define SOL_SIMPLE_TEST(fn, name, expr)                                        \
  bool fn(const Value &v, const CallArgs &args) {                              \
    noArguments(name, args);                                                   \
    return (expr);                                                             \
  }

SOL_SIMPLE_TEST(testDefined, "defined", !v.isUndefined())
SOL_SIMPLE_TEST(testUndefined, "undefined", v.isUndefined())
SOL_SIMPLE_TEST(testNone, "none", v.isNone())
SOL_SIMPLE_TEST(testBoolean, "boolean", v.isBool())
SOL_SIMPLE_TEST(testTrue, "true", v.isBool() && v.asBool())
SOL_SIMPLE_TEST(testFalse, "false", v.isBool() && !v.asBool())
SOL_SIMPLE_TEST(testInteger, "integer", v.isInt())
SOL_SIMPLE_TEST(testFloat, "float", v.isFloat())
SOL_SIMPLE_TEST(testNumber, "number", v.isNumber())
SOL_SIMPLE_TEST(testString, "string", v.isString())
SOL_SIMPLE_TEST(testMapping, "mapping", v.isDict())
SOL_SIMPLE_TEST(testIterable, "iterable",
                v.isUndefined() || v.isString() || v.isList() || v.isDict())
SOL_SIMPLE_TEST(testSequence, "sequence",
                v.isUndefined() || v.isString() || v.isList() || v.isDict())
SOL_SIMPLE_TEST(testCallable, "callable", v.isCallable())
SOL_SIMPLE_TEST(testEscaped, "escaped", false)
SOL_SIMPLE_TEST(testLower, "lower", py::isLower(pyStr(v)))
SOL_SIMPLE_TEST(testUpper, "upper", py::isUpper(pyStr(v)))

#undef SOL_SIMPLE_TEST

bool testOdd(const Value &v, const CallArgs &args) {
  noArguments("odd", args);
  return pyEquals(binaryOperator("%", v, Value(2)), Value(1));
}

bool testEven(const Value &v, const CallArgs &args) {
  noArguments("even", args);
  return pyEquals(binaryOperator("%", v, Value(2)), Value(0));
}

bool testDivisibleBy(const Value &v, const CallArgs &args) {
  return pyEquals(binaryOperator("%", v, onlyArgument("divisibleby", args)),
                  Value(0));
}

bool testIn(const Value &v, const CallArgs &args) {
  return containsValue(onlyArgument("in", args), v);
}

bool testEq(const Value &v, const CallArgs &a) {
  return compareValues("==", v, onlyArgument("eq", a));
}
bool testNe(const Value &v, const CallArgs &a) {
  return compareValues("!=", v, onlyArgument("ne", a));
}
bool testLt(const Value &v, const CallArgs &a) {
  return compareValues("<", v, onlyArgument("lt", a));
}
bool testLe(const Value &v, const CallArgs &a) {
  return compareValues("<=", v, onlyArgument("le", a));
}
bool testGt(const Value &v, const CallArgs &a) {
  return compareValues(">", v, onlyArgument("gt", a));
}
bool testGe(const Value &v, const CallArgs &a) {
  return compareValues(">=", v, onlyArgument("ge", a));
}

bool testSameAs(const Value &v, const CallArgs &args) {
  const Value &other = onlyArgument("sameas", args);
  if (v.isNone() || v.isBool() || v.isUndefined())
    return v.kind() == other.kind() &&
           (!v.isBool() || v.asBool() == other.asBool()) && !v.isUndefined();
  if (v.identity() && v.identity() == other.identity())
    return true;
  if (v.identity() || other.identity())
    return false;
  evalFail("unsupported Jinja construct: 'sameas' on strings or numbers "
           "(Python object identity)");
}

const std::map<std::string, TestFunction> &testTable() {
  static const std::map<std::string, TestFunction> table = {
      {"!=", testNe},
      {"<", testLt},
      {"<=", testLe},
      {"==", testEq},
      {">", testGt},
      {">=", testGe},
      {"boolean", testBoolean},
      {"callable", testCallable},
      {"defined", testDefined},
      {"divisibleby", testDivisibleBy},
      {"eq", testEq},
      {"equalto", testEq},
      {"escaped", testEscaped},
      {"even", testEven},
      {"false", testFalse},
      {"float", testFloat},
      {"ge", testGe},
      {"greaterthan", testGt},
      {"gt", testGt},
      {"in", testIn},
      {"integer", testInteger},
      {"iterable", testIterable},
      {"le", testLe},
      {"lessthan", testLt},
      {"lower", testLower},
      {"lt", testLt},
      {"mapping", testMapping},
      {"ne", testNe},
      {"none", testNone},
      {"number", testNumber},
      {"odd", testOdd},
      {"sameas", testSameAs},
      {"sequence", testSequence},
      {"string", testString},
      {"true", testTrue},
      {"undefined", testUndefined},
      {"upper", testUpper},
  };
  return table;
}

} // namespace

bool isJinjaTestName(std::string_view name) {
  if (name == "filter" || name == "test")
    return true;
  return testTable().count(std::string(name)) != 0;
}

bool applyTest(const std::string &name, const Value &operand,
               const CallArgs &args) {
  const auto &table = testTable();
  auto it = table.find(name);
  if (it == table.end())
    evalFail("unsupported Jinja construct: test '", name,
             "' (not implemented by Sol's chat-template engine, or not a "
             "Jinja test)");
  return it->second(operand, args);
}

} // namespace sol::jinja

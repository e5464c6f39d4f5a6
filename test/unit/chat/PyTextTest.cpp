//===- PyTextTest.cpp - Python str/float/json semantics -------------------===//

#include "runtime/chat/EvalError.h"
#include "runtime/chat/PyJson.h"
#include "runtime/chat/PyNumber.h"
#include "runtime/chat/PyStr.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace sol::jinja;

TEST(PyText, FloatReprMatchesCPython) {
  // Values and texts from CPython's repr().
  EXPECT_EQ(floatRepr(1e16), "1e+16");
  EXPECT_EQ(floatRepr(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(floatRepr(0.0001), "0.0001");
  EXPECT_EQ(floatRepr(0.00001), "1e-05");
  EXPECT_EQ(floatRepr(1e22), "1e+22");
  EXPECT_EQ(floatRepr(1.5e-7), "1.5e-07");
  EXPECT_EQ(floatRepr(123456789.123), "123456789.123");
  EXPECT_EQ(floatRepr(-0.0), "-0.0");
  EXPECT_EQ(floatRepr(1e16 + 2), "1.0000000000000002e+16");
  EXPECT_EQ(floatRepr(5e-324), "5e-324");
  EXPECT_EQ(floatRepr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(floatRepr(100.0), "100.0");
  EXPECT_EQ(floatRepr(0.1), "0.1");
  EXPECT_EQ(floatRepr(INFINITY), "inf");
  EXPECT_EQ(floatJson(-INFINITY), "-Infinity");
  EXPECT_EQ(floatJson(NAN), "NaN");
}

TEST(PyText, IntegersUpTo128Bits) {
  EXPECT_EQ(integerToString(0), "0");
  EXPECT_EQ(integerToString(-42), "-42");
  EXPECT_EQ(integerToString(Integer(18446744073709551615ULL)),
            "18446744073709551615");
}

TEST(PyText, StripUsesPythonWhitespace) {
  EXPECT_EQ(
      py::strip("\t\n\v\f\r\x1c\x1d\x1e\x1f x \u0085\u00a0\u2000\u200a\u2028"
                "\u2029\u202f\u205f\u3000",
                std::nullopt),
      "x");
  EXPECT_EQ(py::strip("\u200bx", std::nullopt), "\u200bx"); // not whitespace
  EXPECT_EQ(py::strip("xyhixy", std::string("yx")), "hi");
  EXPECT_EQ(py::strip("ééaé", std::string("é"), true, false), "aé");
}

TEST(PyText, SplitLikeCPython) {
  using V = std::vector<std::string>;
  EXPECT_EQ(py::split("  a  b  ", std::nullopt), (V{"a", "b"}));
  EXPECT_EQ(py::split("  a  b  ", std::nullopt, 1), (V{"a", "b  "}));
  EXPECT_EQ(py::rsplit("  a  b  ", std::nullopt, 1), (V{"  a", "b"}));
  EXPECT_EQ(py::split("", std::nullopt), V{});
  EXPECT_EQ(py::split("", std::string(",")), V{""});
  EXPECT_EQ(py::split("a,,b", std::string(",")), (V{"a", "", "b"}));
  EXPECT_EQ(py::rsplit("a,b,c", std::string(","), 1), (V{"a,b", "c"}));
  EXPECT_THROW(py::split("a", std::string("")), EvalError);
  EXPECT_EQ(py::splitLines("a\nb\r\nc\rd\u2028e\n"),
            (V{"a", "b", "c", "d", "e"}));
}

TEST(PyText, ReplaceAndCase) {
  EXPECT_EQ(py::replace("abc", "", "-"), "-a-b-c-");
  EXPECT_EQ(py::replace("abc", "", "-", 2), "-a-bc");
  EXPECT_EQ(py::replace("aaa", "a", "b", 2), "bba");
  EXPECT_EQ(py::upper("straße"), "STRASSE");
  EXPECT_EQ(py::lower("ΟΔΟΣ Σ"), "οδος σ");
  EXPECT_EQ(py::title("hello wORLD 3rd"), "Hello World 3Rd");
  EXPECT_EQ(py::capitalize("hELLO"), "Hello");
}

TEST(PyText, ReprQuotesLikeCPython) {
  EXPECT_EQ(py::repr("it's"), "\"it's\"");
  EXPECT_EQ(py::repr("say \"hi\""), "'say \"hi\"'");
  EXPECT_EQ(py::repr("both ' \""), "'both \\' \"'");
  EXPECT_EQ(py::repr("\n\t\\\x01\x7f\u00a0é"), "'\\n\\t\\\\\\x01\\x7f\\xa0é'");
}

TEST(PyText, JsonDumpsKeepsOrderAndPythonSpacing) {
  auto value = valueFromJson(nlohmann::ordered_json::parse(
      R"({"z": [1, 2.5, null, true], "a": {"k": "v"}, "e": {}, "l": []})"));
  EXPECT_EQ(
      pyJsonDumps(value, {}),
      R"({"z": [1, 2.5, null, true], "a": {"k": "v"}, "e": {}, "l": []})");
  JsonDumpOptions indented;
  indented.indent = "    ";
  EXPECT_EQ(
      pyJsonDumps(valueFromJson(nlohmann::ordered_json::parse(R"({"a": [1]})")),
                  indented),
      "{\n    \"a\": [\n        1\n    ]\n}");
  EXPECT_THROW(pyJsonDumps(Value::undefined(), {}), EvalError);
}

//===- JinjaErrorTest.cpp - Errors name the line and the construct --------===//
//
// A chat template Sol cannot render exactly must fail with a sol::Error that
// says where and why, never render something different from Transformers.
//
//===----------------------------------------------------------------------===//

#include "JinjaTestUtil.h"

#include <gtest/gtest.h>

using sol::jinja::testing::renderError;

namespace {
::testing::AssertionResult mentions(const std::string &message,
                                    std::initializer_list<const char *> parts) {
  for (const char *part : parts)
    if (message.find(part) == std::string::npos)
      return ::testing::AssertionFailure()
             << "'" << message << "' does not mention '" << part << "'";
  return ::testing::AssertionSuccess();
}
} // namespace

TEST(JinjaError, RaiseExceptionCarriesTheMessage) {
  EXPECT_TRUE(
      mentions(renderError("a\n{{ raise_exception('Roles must alternate') }}"),
               {"raised an exception", "line 2", "Roles must alternate"}));
  EXPECT_TRUE(mentions(
      renderError(
          "{% if n > 3 %}\n\n{{ raise_exception('too big: ' ~ n) }}{% endif %}",
          R"({"n": 5})"),
      {"line 3", "too big: 5"}));
}

TEST(JinjaError, UnsupportedTagsNameLineAndTag) {
  EXPECT_TRUE(mentions(renderError("x\n{% include 'other.jinja' %}"),
                       {"line 2", "unsupported", "include"}));
  EXPECT_TRUE(
      mentions(renderError("{% extends 'base' %}"), {"line 1", "extends"}));
  EXPECT_TRUE(mentions(renderError("{% import 'x' as y %}"), {"import"}));
  EXPECT_TRUE(mentions(renderError("{% call foo() %}{% endcall %}"), {"call"}));
  EXPECT_TRUE(
      mentions(renderError("\n\n{% for x in l recursive %}{% endfor %}"),
               {"line 3", "recursive"}));
  EXPECT_TRUE(mentions(renderError("{{ f(*args) }}"), {"*args"}));
  EXPECT_TRUE(mentions(renderError("{% do x %}"), {"'{% do %}'"}));
}

TEST(JinjaError, UnsupportedFiltersTestsAndMethods) {
  EXPECT_TRUE(mentions(renderError("\n{{ 'x'|wordwrap }}"),
                       {"line 2", "filter 'wordwrap'"}));
  EXPECT_TRUE(
      mentions(renderError("{{ 1 is prime }}"), {"no test named 'prime'"}));
  EXPECT_TRUE(mentions(renderError("{{ '{}'.format(1) }}"), {"str.format"}));
  EXPECT_TRUE(mentions(renderError("{{ '%s' % 1 }}"), {"unsupported", "%"}));
}

TEST(JinjaError, UnknownFilterNamesFailWhenJinjaWouldFail) {
  // Jinja's compiler rejects unknown filter/test names up front, except in
  // if statements and inline ifs, where only running them fails.
  EXPECT_TRUE(mentions(renderError("\n{{ x|tojsn }}"),
                       {"line 2", "no filter named 'tojsn'"}));
  EXPECT_EQ(renderError("{% if false %}{{ x|tojsn }}{% endif %}"
                        "{{ x|tojsn if false }}"),
            "<no error>");
  EXPECT_TRUE(mentions(renderError("{% if true %}{{ x|tojsn }}{% endif %}"),
                       {"filter 'tojsn'"}));
  // A loop body starts a fresh (non-"soft") scope again.
  EXPECT_TRUE(mentions(
      renderError("{% if false %}{% for y in [] %}{{ y|tojsn }}{% endfor %}"
                  "{% endif %}"),
      {"no filter named 'tojsn'"}));
}

TEST(JinjaError, SandboxForbidsMutation) {
  EXPECT_TRUE(
      mentions(renderError("{{ l.append(3) }}", R"({"l": []})"), {"unsafe"}));
  EXPECT_TRUE(
      mentions(renderError("{{ d.update({}) }}", R"({"d": {}})"), {"unsafe"}));
}

TEST(JinjaError, SyntaxErrorsNameTheLine) {
  EXPECT_TRUE(mentions(renderError("a\n{% if n %}"), {"line 2", "endif"}));
  EXPECT_TRUE(mentions(renderError("{% endif %}"), {"unknown tag 'endif'"}));
  EXPECT_TRUE(mentions(renderError("\n\n{{ 1 + }}"), {"line 3"}));
  EXPECT_TRUE(
      mentions(renderError("{{ 'unterminated }}"), {"unterminated string"}));
  EXPECT_TRUE(mentions(renderError("{# never closed"), {"'#}'"}));
  EXPECT_TRUE(mentions(renderError("{{ n "), {"'}}'"}));
  EXPECT_TRUE(mentions(renderError("{% set 1 = 2 %}"), {"can't assign"}));
  EXPECT_TRUE(mentions(renderError("{% break %}"), {"outside of a for loop"}));
  EXPECT_TRUE(
      mentions(renderError("{{ a $ b }}"), {"unexpected character '$'"}));
}

TEST(JinjaError, RuntimeErrorsNameTheLine) {
  EXPECT_TRUE(mentions(
      renderError("one\ntwo\n{{ messages[0].content.startswith('<') }}",
                  R"({"messages": [{"content": null}]})"),
      {"line 3", "'None' has no attribute 'startswith'"}));
  EXPECT_TRUE(mentions(renderError("{{ '</think>' in x }}", R"({"x": null})"),
                       {"argument of type 'NoneType' is not iterable"}));
  EXPECT_TRUE(mentions(renderError("{{ 'a' + x }}", R"({"x": 1})"),
                       {"can only concatenate str (not \"int\") to str"}));
  EXPECT_TRUE(mentions(renderError("{% set ns.x = 1 %}"), {"namespace"}));
  EXPECT_TRUE(
      mentions(renderError("{% set a, b = [1] %}"), {"not enough values"}));
  EXPECT_TRUE(
      mentions(renderError("{{ range(200000)|length }}"), {"MAX_RANGE"}));
}

TEST(JinjaError, HostileNestingIsAnErrorNotACrash) {
  std::string parens =
      "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_TRUE(mentions(renderError(parens), {"nest deeper"}));
  std::string chain = "{{ x";
  for (int i = 0; i < 20000; ++i)
    chain += ".a";
  EXPECT_TRUE(mentions(renderError(chain + " }}"), {"nest deeper"}));
  std::string sum = "{{ 1";
  for (int i = 0; i < 20000; ++i)
    sum += " + 1";
  EXPECT_TRUE(mentions(renderError(sum + " }}"), {"nest deeper"}));
  std::string blocks;
  for (int i = 0; i < 5000; ++i)
    blocks += "{% if true %}";
  EXPECT_TRUE(mentions(renderError(blocks), {"nest deeper"}));
  std::string json = std::string(5000, '[') + std::string(5000, ']');
  EXPECT_TRUE(mentions(renderError("{{ x }}", "{\"x\": " + json + "}"),
                       {"nests deeper"}));
  // A namespace that contains itself cannot be printed (Python prints
  // "{...}" there; Sol refuses rather than print something else).
  EXPECT_TRUE(
      mentions(renderError("{% set ns = namespace() %}{% set ns.me = ns %}"
                           "{{ ns }}"),
               {"RecursionError"}));
  // Lists built in a loop cannot nest without bound either.
  EXPECT_TRUE(mentions(renderError("{% set ns = namespace(l=[]) %}"
                                   "{% for i in range(2000) %}"
                                   "{% set ns.l = [ns.l] %}{% endfor %}"),
                       {"nest deeper"}));
}

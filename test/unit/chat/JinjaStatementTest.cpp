//===- JinjaStatementTest.cpp - if, for, set, namespace, macro, ... -------===//

#include "JinjaTestUtil.h"

#include <gtest/gtest.h>

using sol::jinja::testing::render;
using sol::jinja::testing::renderError;

namespace {
const char *kVars = R"({"n": 5, "l": [3, 1, 2], "d": {"b": 1, "a": 2},
  "messages": [{"role": "system"}, {"role": "user"}, {"role": "assistant"}]})";
}

TEST(JinjaStatement, IfElifElse) {
  EXPECT_EQ(render("{% if n == 1 %}one{% elif n == 5 %}five{% elif n == 5 %}"
                   "again{% else %}other{% endif %}",
                   kVars),
            "five");
  EXPECT_EQ(render("{% if n > 9 %}big{% else %}small{% endif %}", kVars),
            "small");
  // Branches not taken are not evaluated.
  EXPECT_EQ(render("{% if true %}a{% elif nope.x %}b{% endif %}"), "a");
}

TEST(JinjaStatement, LoopVariables) {
  EXPECT_EQ(
      render("{% for x in l %}{{ loop.index }}/{{ loop.index0 }}/"
             "{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/"
             "{{ loop.last }}/{{ loop.length }}/{{ loop.previtem }}/"
             "{{ loop.nextitem }}/{{ loop.cycle('a', 'b') }};{% endfor %}",
             kVars),
      "1/0/3/2/True/False/3//1/a;2/1/2/1/False/False/3/3/2/b;"
      "3/2/1/0/False/True/3/1//a;");
}

TEST(JinjaStatement, LoopFilterElseBreakContinue) {
  // The inline `if` filters before counting: loop.last/length see 2 items.
  EXPECT_EQ(
      render("{% for x in l if x > 1 %}{{ x }}{{ loop.index }}{{ loop.last }},"
             "{% endfor %}",
             kVars),
      "31False,22True,");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in l if x > 5 %}{{ x }}{% else %}none{% endfor %}",
                   kVars),
            "none");
  EXPECT_EQ(
      render("{% for x in l %}{% if x == 1 %}{% break %}{% endif %}{{ x }}"
             "{% endfor %}",
             kVars),
      "3");
  EXPECT_EQ(
      render("{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}"
             "{% endfor %}",
             kVars),
      "32");
}

TEST(JinjaStatement, LoopTargetsAndIterables) {
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"
                   "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}"
                   "{% for k in d %}{{ k }}{% endfor %}"
                   "{% for c in 'héé' %}[{{ c }}]{% endfor %}",
                   kVars),
            "b=1;a=2;b1a2ba[h][é][é]");
  EXPECT_EQ(
      render("{% for m in messages[::-1] %}{{ m.role[0] }}{% endfor %}", kVars),
      "aus");
  EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}"
                   "{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}"
                   "{{ range(5, 0, -2)|list }}"),
            "012147[5, 3, 1]");
  EXPECT_EQ(
      render("{% for x in l %}{% for y in l %}{{ loop.index }}{% endfor %}"
             "{{ loop.index }}|{% endfor %}",
             kVars),
      "1231|1232|1233|");
}

TEST(JinjaStatement, SetInsideLoopDoesNotLeak) {
  EXPECT_EQ(
      render(
          "{% set x = 1 %}{% for y in l %}{% set x = y %}{% endfor %}{{ x }}",
          kVars),
      "1");
  EXPECT_EQ(
      render("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}"),
      "2");
  // Each iteration starts from the outer value again.
  EXPECT_EQ(
      render("{% set x = 0 %}{% for y in l %}{{ x }}{% set x = y %}{{ x }},"
             "{% endfor %}",
             kVars),
      "03,01,02,");
  // Re-binding the loop variable affects only the rest of the iteration
  // (Qwen's `set tool_call = tool_call.function`).
  EXPECT_EQ(render("{% for t in [{'f': 1}, {'f': 2}] %}{% set t = t.f %}{{ t }}"
                   "{% endfor %}"),
            "12");
}

TEST(JinjaStatement, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(
      render("{% set ns = namespace(x=1, found=false) %}{% for y in l %}"
             "{% set ns.x = ns.x + y %}{% endfor %}{{ ns.x }} {{ ns.found }}",
             kVars),
      "7 False");
  EXPECT_EQ(
      render(
          "{% set ns = namespace() %}{% set ns.a = 1 %}{{ ns.a }}[{{ ns.b }}]"
          "{% set ns2 = namespace({'c': 2}, d=3) %}{{ ns2.c }}{{ ns2.d }}"),
      "1[]23");
}

TEST(JinjaStatement, SetForms) {
  EXPECT_EQ(
      render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = (1, 2) %}{{ c }}"),
      "12(1, 2)");
  EXPECT_EQ(render("{% set x %}inner {{ n }}{% endset %}[{{ x }}]"
                   "{% set y | upper %}inner{% endset %}{{ y }}",
                   kVars),
            "[inner 5]INNER");
}

TEST(JinjaStatement, Macros) {
  EXPECT_EQ(render("{% macro m(a, b='B') %}<{{ a }}|{{ b }}>{% endmacro %}"
                   "{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}{{ m() }}"),
            "<1|B><1|2><4|3><|B>");
  EXPECT_EQ(
      render(
          "{% macro rec(k) %}{{ k }}{% if k > 0 %}{{ rec(k - 1) }}{% endif %}"
          "{% endmacro %}{{ rec(3) }}"),
      "3210");
  EXPECT_NE(renderError("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
            "<no error>");
  EXPECT_NE(renderError("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}")
                .find("recursion"),
            std::string::npos);
}

TEST(JinjaStatement, FilterWithPrintAndGenerationBlocks) {
  EXPECT_EQ(render("{% filter upper %}abc {{ n }}{% endfilter %}", kVars),
            "ABC 5");
  EXPECT_EQ(
      render("{% with a = 5, b = n %}{{ a + b }}{% endwith %}[{{ a }}]", kVars),
      "10[]");
  EXPECT_EQ(render("{% print n, 'x' %}", kVars), "5x");
  // Transformers' {% generation %} only marks assistant text.
  EXPECT_EQ(render("{% generation %}gen {{ n }}{% endgeneration %}", kVars),
            "gen 5");
}

TEST(JinjaStatement, Globals) {
  EXPECT_EQ(render("{{ dict(a=1, b=[2]) }} {{ namespace(a=1) }}"),
            "{'a': 1, 'b': [2]} <Namespace {'a': 1}>");
  EXPECT_EQ(render("{{ strftime_now('%Y')|length }}"), "4");
}

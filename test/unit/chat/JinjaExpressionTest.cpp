//===- JinjaExpressionTest.cpp - Operators, literals, access, tests -------===//
//
// Expected strings follow Python semantics as Jinja2 evaluates them (checked
// against Python Jinja2 3.1): int/float arithmetic, str() of values,
// precedence of filters over operators, sandboxed attribute/item access and
// Undefined.
//
//===----------------------------------------------------------------------===//

#include "JinjaTestUtil.h"

#include <gtest/gtest.h>

using sol::jinja::testing::render;
using sol::jinja::testing::renderError;

namespace {
const char *kVars = R"({
  "messages": [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": "yo",
                "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}],
  "s": "  Hello World  ", "n": 5, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": 2},
  "none": null, "t": true, "e": "", "u": "héllo wörld"})";
}

TEST(JinjaExpression, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} "
                   "{{ -2 ** 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} "
                   "{{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }}"),
            "7 9 64 4 3 -4 1 2 3.5 2.0");
  EXPECT_EQ(
      render("{{ 5 // 2.0 }} {{ -5 // 2.0 }} {{ 5 % -3 }} {{ -5.5 % 2 }}"),
      "2.0 -3.0 -1 0.5");
  EXPECT_EQ(render("{{ 10 ** 20 }} {{ 2 ** -1 }} {{ true + 1 }}"),
            "100000000000000000000 0.5 2");
}

TEST(JinjaExpression, FloatsPrintLikePythonRepr) {
  EXPECT_EQ(render("{{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e20 * 10 }} {{ 1e-5 }} "
                   "{{ 3.0 }} {{ 1e16 }} {{ 1e15 }} {{ 1/3 }} {{ -0.0 }}"),
            "2.5 0.30000000000000004 1e+21 1e-05 3.0 1e+16 1000000000000000.0 "
            "0.3333333333333333 -0.0");
}

TEST(JinjaExpression, StringsAndConcatenation) {
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ t ~ missing }}", kVars), "a1NoneTrue");
  EXPECT_EQ(
      render("{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1, 2] + [3] }}"),
      "ab ababab [1, 1] [1, 2, 3]");
  EXPECT_EQ(render("{{ 'a' 'b' \"c\" }}"), "abc");
  EXPECT_EQ(render(R"({{ '\x41\u00e9\U0001F600\t\101' }})"), "Aé😀\tA");
  // Jinja's precedence: + and - bind looser than ~, which binds looser
  // than * and /. So 1 ~ 2 + 3 is ('12') + 3, a TypeError.
  EXPECT_EQ(render("{{ 'x' ~ 2 * 3 }} {{ 1 + 2 ~ '' if false else 'ok' }}"),
            "x6 ok");
  EXPECT_NE(renderError("{{ 1 ~ 2 + 3 }}").find("TypeError"),
            std::string::npos);
}

TEST(JinjaExpression, UnicodeNamesAndEscapeQuirks) {
  EXPECT_EQ(render("{% set café = 'ok' %}{{ café }}"), "ok");
  // Jinja decodes literals with backslashreplace + unicode-escape, so a
  // backslash before a non-ASCII character leaves its escape as text.
  EXPECT_EQ(render("{{ '\\é|\\😀|\\\\é' }}"), "\\xe9|\\U0001f600|\\é");
}

TEST(JinjaExpression, ValuesPrintWithPythonStr) {
  EXPECT_EQ(render("{{ l }} {{ d }} {{ (1,) }} {{ (1, 'a') }} {{ none }} {{ t "
                   "}} {{ f }}",
                   kVars),
            "[3, 1, 2] {'b': 1, 'a': 2} (1,) (1, 'a') None True 2.5");
  EXPECT_EQ(
      render(R"({{ ['a\'b', 'a"b', 'a\'"b', '\n\t\\', '\x00\x7f\u00a0'] }})"),
      R"(["a'b", 'a"b', 'a\'"b', '\n\t\\', '\x00\x7f\xa0'])");
  EXPECT_EQ(
      render("{{ {'a': none, 'b': true, 'c': 1.5} }}{{ {} }}{{ [] }}{{ () }}"),
      "{'a': None, 'b': True, 'c': 1.5}{}[]()");
}

TEST(JinjaExpression, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ n > 3 and n < 10 }} {{ 1 < n < 10 }} {{ n == 5.0 }} "
                   "{{ t == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}",
                   kVars),
            "True True True True True True");
  EXPECT_EQ(render("{{ 'ell' in s }} {{ 3 in l }} {{ 'a' in d }} "
                   "{{ 'z' not in d }} {{ not t }} {{ not n > 10 }}",
                   kVars),
            "True True True True False True");
  // and/or return operands, not booleans.
  EXPECT_EQ(
      render(
          "{{ none or 'x' }} {{ 0 and 'y' }} {{ 'a' and 'b' }} {{ e or [] }}",
          kVars),
      "x 0 b []");
  EXPECT_EQ(render("{{ missing == missing2 }}{{ missing == none }}{{ [1, 2] == "
                   "[1, 2.0] }}"),
            "TrueFalseTrue");
}

TEST(JinjaExpression, ConditionalExpression) {
  EXPECT_EQ(render("{{ 'yes' if t else 'no' }} [{{ 'x' if none }}] "
                   "{{ 'x' if t else 'y' if n else 'z' }}",
                   kVars),
            "yes [] x");
}

TEST(JinjaExpression, FiltersBindTighterThanOperators) {
  EXPECT_EQ(render("{{ messages|length - 1 }} {{ (messages|length - 1) - 1 }} "
                   "{{ -n|abs }} {{ l|join(', ') ~ '!' }} {{ s|trim|length }}",
                   kVars),
            "1 0 5 3, 1, 2! 11");
}

TEST(JinjaExpression, Slicing) {
  EXPECT_EQ(
      render("{{ s[2:7] }}|{{ s[::-1] }}|{{ l[-1] }} {{ l[1:] }} {{ l[::2] }} "
             "{{ l[:-1] }} {{ l[::-2] }} {{ l[2:0:-1] }} {{ l[-100:1] }}",
             kVars),
      "Hello|  dlroW olleH  |2 [1, 2] [3, 2] [3, 1] [2, 3] [2, 1] [3]");
  // Strings index and slice by code point.
  EXPECT_EQ(
      render("{{ u[1:4] }} {{ u[-1] }} {{ u|length }} {{ '😀a'[1] }}", kVars),
      "éll d 11 a");
  EXPECT_EQ(render("[{{ l[5] }}][{{ s[100:] }}]", kVars), "[][]");
}

TEST(JinjaExpression, AttributeAndItemAccess) {
  EXPECT_EQ(render("{{ messages[0].role }} {{ messages[0]['content'] }} "
                   "{{ messages[1].tool_calls[0].function.arguments.a }} "
                   "{{ messages.0.role }}",
                   kVars),
            "user hi 1 user");
  EXPECT_EQ(
      render("{{ messages[0].nothing is defined }}[{{ messages[0].nothing }}]",
             kVars),
      "False[]");
  // Attribute syntax finds dict methods first; item syntax finds keys first.
  EXPECT_EQ(render("{{ {'items': 5}['items'] }} {{ {'a': {'b': 'c'}}.a.b }}"),
            "5 c");
}

TEST(JinjaExpression, DictMethods) {
  EXPECT_EQ(render("{{ d.items() }} {{ d.keys()|list }} {{ d.values()|list }} "
                   "{{ d.get('a') }} {{ d.get('zz', 7) }} {{ d.get('zz') }}",
                   kVars),
            "dict_items([('b', 1), ('a', 2)]) ['b', 'a'] [1, 2] 2 7 None");
}

TEST(JinjaExpression, StringMethods) {
  EXPECT_EQ(
      render(
          "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.split() }}|"
          "{{ 'a,b,,c'.split(',') }}|{{ 'a b c'.split(' ', 1) }}|"
          "{{ 'a,b,c'.rsplit(',', 1) }}",
          kVars),
      "Hello World|Hello World  |  Hello World|['Hello', 'World']|"
      "['a', 'b', '', 'c']|['a', 'b c']|['a,b', 'c']");
  EXPECT_EQ(
      render("{{ s.lower() }}|{{ s.upper() }}|{{ 'hello world'.capitalize() }}|"
             "{{ s.replace('l', 'L') }}|{{ s.replace('l', 'L', 1) }}",
             kVars),
      "  hello world  |  HELLO WORLD  |Hello world|  HeLLo WorLd  |"
      "  HeLlo World  ");
  EXPECT_EQ(render("{{ s.startswith('  He') }} {{ s.endswith(('x', 'd  ')) }} "
                   "{{ s.find('o') }} {{ u.find('w') }} {{ s.count('l') }} "
                   "{{ '-'.join(['a', 'b']) }} {{ 'xxhixx'.strip('x') }}",
                   kVars),
            "True True 6 6 3 a-b hi");
  EXPECT_EQ(
      render(R"({{ '<think>a</think>b'.split('</think>')[-1] }} )"
             R"({{ '\n\nx\n'.lstrip('\n') }} {{ 'a\nb\r\nc'.splitlines() }})"),
      "b x\n ['a', 'b', 'c']");
}

TEST(JinjaExpression, UnicodeCaseMappingIsPythons) {
  EXPECT_EQ(render("{{ 'ß'|upper }} {{ 'ß'|title }} {{ 'ΣΑΣ ΟΔΟΣ'.lower() }} "
                   "{{ 'ﬁ'.upper() }} {{ 'héllo wörld'.title() }}"),
            "SS SS σας οδος FI Héllo Wörld");
}

TEST(JinjaExpression, PythonWhitespaceForStrip) {
  EXPECT_EQ(
      render(
          R"([{{ '\u00a0x\u3000'|trim }}][{{ '\u200bx'|trim }}][{{ '\x1cx\x85'.strip() }}])"),
      "[x][\u200bx][x]");
}

TEST(JinjaExpression, Tests) {
  EXPECT_EQ(
      render("{{ n is number }} {{ f is float }} {{ n is integer }} "
             "{{ t is boolean }} {{ s is string }} {{ d is mapping }} "
             "{{ l is sequence }} {{ s is sequence }} {{ d is sequence }} "
             "{{ none is none }} {{ n is odd }} {{ n is even }} "
             "{{ n is divisibleby 5 }} {{ t is true }} {{ t is number }} "
             "{{ n is iterable }}",
             kVars),
      "True True True True True True True True True True True False "
      "True True True False");
  EXPECT_EQ(render("{{ n is eq 5 }} {{ n is equalto 5 }} {{ n is ne 5 }} "
                   "{{ n is lt 6 }} {{ n is gt(1) }} {{ 2 is in l }} "
                   "{{ 'x' is lower }} {{ nope is undefined }} "
                   "{{ raise_exception is callable }} {{ x is not defined }} "
                   "{{ n is not none }}",
                   kVars),
            "True True False True True True True True True True True");
}

TEST(JinjaExpression, UndefinedBehavesLikeJinjasDefaultUndefined) {
  // Printing, testing, iterating and ~ are fine; other uses fail.
  EXPECT_EQ(render("[{{ nope }}]{{ nope is defined }}{{ nope|length }}"
                   "{{ nope is sequence }}{{ not nope }}[{{ nope|join }}]"
                   "{% for x in nope %}x{% endfor %}"),
            "[]False0TrueTrue[]");
  EXPECT_NE(renderError("{{ nope.attr }}").find("'nope' is undefined"),
            std::string::npos);
  EXPECT_NE(renderError("{{ nope + 1 }}").find("'nope' is undefined"),
            std::string::npos);
  EXPECT_NE(renderError("{{ m.content + 'x' }}", R"({"m": {}})")
                .find("'dict object' has no attribute 'content'"),
            std::string::npos);
}

TEST(JinjaExpression, PythonTypeErrorsAreErrors) {
  for (const char *source :
       {"{{ 'a' + 1 }}", "{{ 1 + 'a' }}", "{{ 'a' in 1 }}", "{{ 1 in 'abc' }}",
        "{{ 'x' in none }}", "{{ 1 / 0 }}", "{{ 'a' < 1 }}", "{{ -'s' }}",
        "{{ none.x() }}", "{% for x in none %}{% endfor %}", "{{ 5|length }}",
        "{{ 5|items }}", "{{ nope|tojson }}"})
    EXPECT_NE(renderError(source), "<no error>") << source;
}

//===- JinjaFilterTest.cpp - Built-in filters and Transformers' tojson ----===//

#include "JinjaTestUtil.h"

#include <gtest/gtest.h>

using sol::jinja::testing::render;
using sol::jinja::testing::renderError;

namespace {
const char *kVars = R"({
  "messages": [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": "yo", "tool_calls": [{"id": 1}]}],
  "s": "  Hello World  ", "n": 5, "l": [3, 1, 2], "d": {"b": 1, "a": 2},
  "u": "héllo", "e": ""})";
}

TEST(JinjaFilter, StringFilters) {
  EXPECT_EQ(render("{{ s|trim }}|{{ s|length }}|{{ u|length }}|{{ s|upper }}|"
                   "{{ s|lower }}|{{ s|title }}|{{ 'hELLO wORLD'|capitalize }}",
                   kVars),
            "Hello World|15|5|  HELLO WORLD  |  hello world  |  Hello World  |"
            "Hello world");
  EXPECT_EQ(render("{{ 'abc'|replace('b', 'X') }}|{{ '  x  '|trim('x ') }}|"
                   "{{ none|trim }}|{{ 'x'|safe }}|{{ 'a<b>&\"\\''|e }}|"
                   "{{ n|string + 'x' }}|{{ none|string }}",
                   kVars),
            "aXc||None|x|a&lt;b&gt;&amp;&#34;&#39;|5x|None");
  // Jinja's title splits on spaces, dashes and brackets.
  EXPECT_EQ(render("{{ 'foo-bar (baz) o\\'neil'|title }}"),
            "Foo-Bar (Baz) O'neil");
}

TEST(JinjaFilter, Indent) {
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|"
                   "{{ 'a\\n\\nb'|indent(2, blank=true) }}"),
            "a\n    b\n\n    c|  a\n  b|a\n  \n  b");
}

TEST(JinjaFilter, SequenceFilters) {
  EXPECT_EQ(
      render("{{ l|first }} {{ l|last }} {{ l|join(',') }} {{ l|sort }} "
             "{{ l|sort(reverse=true) }} {{ l|reverse|list }} {{ l|min }} "
             "{{ l|max }} {{ l|sum }} {{ [3, 'a']|join }} {{ 'abc'|list }} "
             "{{ 'abc'|reverse }} {{ d|count }}",
             kVars),
      "3 2 3,1,2 [1, 2, 3] [3, 2, 1] [2, 1, 3] 1 3 6 3a ['a', 'b', 'c'] "
      "cba 2");
  EXPECT_EQ(render("{{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', "
                   "'c']|sort(case_sensitive=true) }} "
                   "{{ ['a', 'B', 'A']|unique|list }}"),
            "['A', 'b', 'c'] ['A', 'b', 'c'] ['a', 'B']");
}

TEST(JinjaFilter, Default) {
  EXPECT_EQ(render("{{ nope|default('dflt') }} [{{ e|default('dflt') }}] "
                   "{{ e|default('dflt', true) }} {{ none|default('x') }} "
                   "{{ nope|d('y') }}",
                   kVars),
            "dflt [] dflt None y");
}

TEST(JinjaFilter, MappingFilters) {
  EXPECT_EQ(
      render("{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(by='value') }} "
             "{{ nope|items|list }}",
             kVars),
      "[('b', 1), ('a', 2)] [('a', 2), ('b', 1)] [('b', 1), ('a', 2)] []");
}

TEST(JinjaFilter, SelectMapAndFriends) {
  EXPECT_EQ(
      render("{{ messages|map(attribute='role')|list }} "
             "{{ messages|selectattr('role', 'equalto', "
             "'user')|map(attribute='content')|list }} "
             "{{ messages|rejectattr('role', 'eq', "
             "'user')|map(attribute='content')|join }} "
             "{{ messages|selectattr('tool_calls')|list|length }} "
             "{{ messages|selectattr('tool_calls', 'defined')|list|length }}",
             kVars),
      "['user', 'assistant'] ['hi'] yo 1 1");
  EXPECT_EQ(
      render(
          "{{ l|select('odd')|list }} {{ l|reject('odd')|list }} "
          "{{ [1, none, 0, 'a']|select|list }} {{ l|map('string')|join('-') }} "
          "{{ ['a', 'b']|map('upper')|list }} "
          "{{ messages|map(attribute='nope', default='D')|list }} "
          "{{ [{'a': {'b': 3}}]|map(attribute='a.b')|list }}",
          kVars),
      "[3, 1] [2] [1, 'a'] 3-1-2 ['A', 'B'] ['D', 'D'] [3]");
}

TEST(JinjaFilter, Numbers) {
  EXPECT_EQ(
      render("{{ '5'|int + 1 }} {{ '3.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} "
             "{{ '2.5'|float }} {{ 5|float }} {{ -3|abs }} {{ -3.7|int }} "
             "{{ '1_000'|int }} {{ '1e3'|int }} {{ '1.5e3'|float }}"),
      "6 3 0 7 2.5 5.0 3 -3 1000 1000 1500.0");
}

TEST(JinjaFilter, TojsonIsPythonJsonDumps) {
  // Transformers: json.dumps(x, ensure_ascii=False, indent=None,
  // separators=None, sort_keys=False): ", " and ": " separators, key order
  // kept, non-ASCII kept, no HTML escaping.
  EXPECT_EQ(render("{{ d|tojson }} {{ l|tojson }} {{ 'héllo <b>&\"'|tojson }} "
                   "{{ none|tojson }} {{ 2.5|tojson }} {{ true|tojson }} {{ "
                   "1.0|tojson }}",
                   kVars),
            R"({"b": 1, "a": 2} [3, 1, 2] "héllo <b>&\"" null 2.5 true 1.0)");
  EXPECT_EQ(render("{{ {'a': [1, {}, []]}|tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {},\n    []\n  ]\n}");
  EXPECT_EQ(render("{{ d|tojson(sort_keys=true) }} {{ "
                   "d|tojson(separators=(',', ':')) }} "
                   "{{ u|tojson(ensure_ascii=true) }} {{ "
                   "'😀'|tojson(ensure_ascii=true) }}",
                   kVars),
            R"({"a": 2, "b": 1} {"b":1,"a":2} "h\u00e9llo" "\ud83d\ude00")");
  EXPECT_EQ(render(R"({{ '\x01\x1f\x7f\u2028\b\f\n\r\t\\/'|tojson }})"),
            "\"\\u0001\\u001f\x7f\u2028\\b\\f\\n\\r\\t\\\\/\"");
}

TEST(JinjaFilter, TojsonNumbersAreJsonDumpsExact) {
  EXPECT_EQ(render("{{ x|tojson }}",
                   R"({"x": [1e16, 1e15, 0.0001, 1e-05, 123456789.123, -0.0,
                             1.0000000000000002e16, 12345678901234567890,
                             -9223372036854775808, 5e-324]})"),
            "[1e+16, 1000000000000000.0, 0.0001, 1e-05, 123456789.123, -0.0, "
            "1.0000000000000002e+16, 12345678901234567890, "
            "-9223372036854775808, 5e-324]");
}

TEST(JinjaFilter, UnknownFilterIsAnError) {
  std::string error = renderError("\n{{ l|wordwrap }}", kVars);
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_NE(error.find("filter 'wordwrap'"), std::string::npos) << error;
}

//===- JinjaWhitespaceTest.cpp - trim_blocks, lstrip_blocks, -/+ ----------===//
//
// Transformers renders with trim_blocks=True and lstrip_blocks=True, and
// Jinja drops one trailing newline of the template. Expected strings follow
// from those rules (and were checked against Python Jinja2 3.1).
//
//===----------------------------------------------------------------------===//

#include "JinjaTestUtil.h"

#include <gtest/gtest.h>

using sol::jinja::testing::render;

TEST(JinjaWhitespace, TrimBlocksRemovesNewlineAfterBlockTag) {
  EXPECT_EQ(render("a\n{% if true %}\nb\n{% endif %}\nc"), "a\nb\nc");
}

TEST(JinjaWhitespace, LstripBlocksRemovesIndentBeforeBlockTag) {
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
}

TEST(JinjaWhitespace, LstripOnlyAppliesAtLineStart) {
  EXPECT_EQ(render("a  {% if true %}b{% endif %}  c"), "a  b  c");
  EXPECT_EQ(render(" \t{% if true %}x{% endif %}"), "x");
}

TEST(JinjaWhitespace, VariableTagsAreNotLstripped) {
  EXPECT_EQ(render("a\n  {{ 5 }}\n"), "a\n  5");
}

TEST(JinjaWhitespace, PlusDisablesLstrip) {
  EXPECT_EQ(render("a\n  {%+ if true %}b{% endif %}"), "a\n  b");
}

TEST(JinjaWhitespace, MinusStripsAllWhitespaceIncludingNewlines) {
  EXPECT_EQ(render("a\n  {%- if true %}b{% endif %}"), "ab");
  EXPECT_EQ(render("a {{- 'x' -}} b"), "axb");
  EXPECT_EQ(render("{% if true -%}\n\n  a  \n\n{%- endif %}"), "a");
}

TEST(JinjaWhitespace, DashedBlocksInIndentedTemplates) {
  // The style of the Qwen and Llama templates: every tag strips before it.
  EXPECT_EQ(render("{%- if true %}\n    {{- 'x' }}\n{%- endif %}\n"), "x");
  EXPECT_EQ(render("{% for x in [1, 2] -%}\n  {{ x }}\n{%- endfor %}"), "12");
  EXPECT_EQ(render("{% for x in [1, 2] %}\n  {{ x }}\n{% endfor %}\n"),
            "  1\n  2\n");
}

TEST(JinjaWhitespace, UnicodeWhitespaceCountsForMinusAndLstrip) {
  // Python's \s and str.rstrip() include U+00A0 and U+3000.
  EXPECT_EQ(render("\u00a0{% if true %}x{% endif %}"), "x");
  EXPECT_EQ(render("a\n\u3000 {% if true %}x{% endif %}"), "a\nx");
  EXPECT_EQ(render("a\u00a0{{- 'b' }}"), "ab");
}

TEST(JinjaWhitespace, Comments) {
  EXPECT_EQ(render("  {# c #}\nx"), "x");
  EXPECT_EQ(render("x\n  {# c #}  \ny"), "x\n  \ny");
  EXPECT_EQ(render("a{#-  c  -#}  b"), "ab");
  EXPECT_EQ(render("a {#+ c +#} b"), "a  b");
}

TEST(JinjaWhitespace, RawBlocksKeepTagsAsText) {
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
  EXPECT_EQ(render("a\n  {% raw %}\n  {{ y }}\n  {% endraw %}\nb"),
            "a\n\n  {{ y }}\nb");
}

TEST(JinjaWhitespace, OneTrailingNewlineIsDropped) {
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("{% if true %}a{% else %}b{% endif %}\n\n"), "a");
}

TEST(JinjaWhitespace, NewlinesAreNormalized) {
  EXPECT_EQ(render("x\r\ny\r\n"), "x\ny");
  EXPECT_EQ(render("{{ 'a\r\nb' }}"), "a\nb");
}

TEST(JinjaWhitespace, SetBetweenLines) {
  EXPECT_EQ(render("line\n    {% set y = 1 %}\n    after {{ y }}"),
            "line\n    after 1");
  EXPECT_EQ(render("{%- set x = 3 -%}\n  {{ x }}  \n"), "3  ");
}

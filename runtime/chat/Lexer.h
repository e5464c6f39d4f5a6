//===- Lexer.h - Tokens of a Jinja chat template ----------------*- C++ -*-===//
//
// Splits template source into text and tag tokens exactly as Jinja2's lexer
// does under Transformers' settings (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False):
//  - "\r\n" and "\r" become "\n"; one trailing newline of the source is
//    dropped;
//  - "{%- ", "{{-", "{#-" strip all whitespace before the tag, "-%}", "-}}",
//    "-#}" all whitespace after it;
//  - trim_blocks: a newline right after "%}" or "#}" is removed;
//  - lstrip_blocks: spaces/tabs from the start of a line up to "{%" or "{#"
//    (not "{{") are removed, unless the tag starts with "{%+";
//  - {% raw %}...{% endraw %} is text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/chat/PyNumber.h"

#include <string>
#include <string_view>
#include <vector>

namespace sol::jinja {

struct Token {
  enum class Type {
    Data,
    VariableBegin,
    VariableEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Integer,
    Float,
    Operator,
    Eof
  };
  Type type;
  /// Data text, name, unescaped string literal, or operator spelling.
  std::string text;
  Integer integer = 0;
  double floating = 0;
  int line = 1;
};

/// Tokenizes a template; throws sol::Error naming the line on bad syntax.
std::vector<Token> tokenizeTemplate(std::string_view source);

/// Human-readable description of a token, for parse errors.
std::string describeToken(const Token &token);

} // namespace sol::jinja

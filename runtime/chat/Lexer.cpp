//===- Lexer.cpp - Tokens of a Jinja chat template ------------------------===//

#include "runtime/chat/Lexer.h"

#include "runtime/chat/PyStr.h"
#include "runtime/chat/Utf8.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utf8proc.h>

namespace sol::jinja {
namespace {

/// Byte length of the Python-whitespace code point at `pos`, or 0.
size_t whitespaceAt(std::string_view s, size_t pos) {
  if (pos >= s.size())
    return 0;
  auto byte = static_cast<unsigned char>(s[pos]);
  if (byte < 0x80)
    return py::isSpace(byte) ? 1 : 0;
  size_t length = (byte & 0xE0) == 0xC0 ? 2 : (byte & 0xF0) == 0xE0 ? 3 : 4;
  if (pos + length > s.size())
    return 0;
  std::u32string cp = decodeUtf8(s.substr(pos, length));
  return cp.size() == 1 && py::isSpace(cp[0]) ? length : 0;
}

/// End of the run of whitespace starting at `pos` (regex \s*).
size_t skipWhitespace(std::string_view s, size_t pos) {
  while (size_t n = whitespaceAt(s, pos))
    pos += n;
  return pos;
}

bool allWhitespace(std::string_view s) {
  return skipWhitespace(s, 0) == s.size();
}

int countNewlines(std::string_view s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

std::string normalizeSource(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  // keep_trailing_newline=False drops exactly one final newline.
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

bool startsWith(std::string_view s, size_t pos, std::string_view prefix) {
  return s.substr(pos, prefix.size()) == prefix;
}

/// Identifier classes of a code point (Python's XID_Start / XID_Continue,
/// approximated by general category), so `{% set café = 1 %}` lexes as in
/// Jinja, whose names follow Python identifiers.
enum class NameClass { None, Start, Continue };

NameClass nameClass(char32_t cp) {
  if (cp < 0x80) {
    if (std::isalpha(static_cast<int>(cp)) || cp == '_')
      return NameClass::Start;
    return std::isdigit(static_cast<int>(cp)) ? NameClass::Continue
                                              : NameClass::None;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
  case UTF8PROC_CATEGORY_LU:
  case UTF8PROC_CATEGORY_LL:
  case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_LO:
  case UTF8PROC_CATEGORY_NL:
    return NameClass::Start;
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_MC:
  case UTF8PROC_CATEGORY_ND:
  case UTF8PROC_CATEGORY_PC:
    return NameClass::Continue;
  default:
    return NameClass::None;
  }
}

/// The code point at `pos` and its byte length (0 when truncated).
std::pair<char32_t, size_t> codePointAt(std::string_view s, size_t pos) {
  auto lead = static_cast<unsigned char>(s[pos]);
  size_t length = lead < 0x80             ? 1
                  : (lead & 0xE0) == 0xC0 ? 2
                  : (lead & 0xF0) == 0xE0 ? 3
                                          : 4;
  if (pos + length > s.size())
    return {0, 0};
  std::u32string cps = decodeUtf8(s.substr(pos, length));
  return {cps.empty() ? 0 : cps[0], length};
}

class Lexer {
public:
  explicit Lexer(std::string_view source) : src_(normalizeSource(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size())
      lexRoot();
    tokens_.push_back(Token{Token::Type::Eof, "", 0, 0, line_});
    return std::move(tokens_);
  }

private:
  [[noreturn]] void error(int line, const std::string &message) {
    fail("chat template line ", line, ": ", message);
  }

  void emit(Token::Type type, std::string text, int line) {
    tokens_.push_back(Token{type, std::move(text), 0, 0, line});
  }

  /// Applies "-" / lstrip_blocks to the text before a tag and emits it.
  void emitTextBeforeTag(std::string_view text, char sign, bool isVariable) {
    int textLine = line_;
    line_ += countNewlines(text);
    std::string_view kept = text;
    if (sign == '-') {
      size_t end = text.size();
      // rstrip(): walk back over whitespace code points.
      while (end > 0) {
        size_t start = end - 1;
        while (start > 0 &&
               (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
          --start;
        if (whitespaceAt(text, start) != end - start)
          break;
        end = start;
      }
      kept = text.substr(0, end);
    } else if (sign != '+' && !isVariable) {
      size_t lineStart = text.rfind('\n');
      lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
      if ((lineStart > 0 || lineStarting_) && lineStart < text.size() &&
          allWhitespace(text.substr(lineStart)))
        kept = text.substr(0, lineStart);
    }
    if (!kept.empty())
      emit(Token::Type::Data, std::string(kept), textLine);
  }

  void lexRoot() {
    size_t tag = pos_;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        std::string_view rest = std::string_view(src_).substr(pos_);
        emit(Token::Type::Data, std::string(rest), line_);
        line_ += countNewlines(rest);
        pos_ = src_.size();
        return;
      }
      char kind = src_[tag + 1];
      if (kind == '{' || kind == '%' || kind == '#')
        break;
      ++tag;
    }
    std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
    char kind = src_[tag + 1];
    size_t after = tag + 2;
    char sign = 0;
    if (after < src_.size() && (src_[after] == '-' || src_[after] == '+'))
      sign = src_[after++];

    if (kind == '%') {
      size_t rawEnd = matchRawBegin(after);
      if (rawEnd != std::string::npos) {
        emitTextBeforeTag(text, sign, false);
        std::string_view consumed =
            std::string_view(src_).substr(tag, rawEnd - tag);
        line_ += countNewlines(consumed);
        lineStarting_ = consumed.back() == '\n';
        pos_ = rawEnd;
        lexRaw();
        return;
      }
    }
    emitTextBeforeTag(text, sign, kind == '{');
    lineStarting_ = false;
    pos_ = after;
    if (kind == '#')
      lexComment();
    else
      lexTag(kind == '%');
  }

  /// If "{%[-+]" at `after` is followed by "\s*raw\s*(-%}\s*|%})", returns
  /// the end of that match.
  size_t matchRawBegin(size_t p) {
    p = skipWhitespace(src_, p);
    if (!startsWith(src_, p, "raw"))
      return std::string::npos;
    p = skipWhitespace(src_, p + 3);
    if (startsWith(src_, p, "-%}"))
      return skipWhitespace(src_, p + 3);
    if (startsWith(src_, p, "%}"))
      return p + 2;
    return std::string::npos;
  }

  void lexRaw() {
    int startLine = line_;
    size_t search = pos_;
    while (true) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos)
        error(startLine, "missing {% endraw %} for a {% raw %} block");
      size_t p = open + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+'))
        sign = src_[p++];
      p = skipWhitespace(src_, p);
      if (!startsWith(src_, p, "endraw")) {
        search = open + 2;
        continue;
      }
      p = skipWhitespace(src_, p + 6);
      size_t end;
      if (startsWith(src_, p, "+%}"))
        end = p + 3;
      else if (startsWith(src_, p, "-%}"))
        end = skipWhitespace(src_, p + 3);
      else if (startsWith(src_, p, "%}"))
        end = p + 2 + (startsWith(src_, p + 2, "\n") ? 1 : 0);
      else {
        search = open + 2;
        continue;
      }
      emitTextBeforeTag(std::string_view(src_).substr(pos_, open - pos_), sign,
                        false);
      std::string_view consumed =
          std::string_view(src_).substr(open, end - open);
      line_ += countNewlines(consumed);
      lineStarting_ = consumed.back() == '\n';
      pos_ = end;
      return;
    }
  }

  void lexComment() {
    int startLine = line_;
    for (size_t p = pos_; p < src_.size(); ++p) {
      size_t end = std::string::npos;
      if (startsWith(src_, p, "+#}"))
        end = p + 3;
      else if (startsWith(src_, p, "-#}"))
        end = skipWhitespace(src_, p + 3);
      else if (startsWith(src_, p, "#}"))
        end = p + 2 + (startsWith(src_, p + 2, "\n") ? 1 : 0);
      if (end == std::string::npos)
        continue;
      std::string_view consumed =
          std::string_view(src_).substr(pos_, end - pos_);
      line_ += countNewlines(consumed);
      lineStarting_ = !consumed.empty() && consumed.back() == '\n';
      pos_ = end;
      return;
    }
    error(startLine, "missing end of comment tag '#}'");
  }

  /// Matches the end of the current tag at pos_; returns its end or npos.
  size_t matchTagEnd(bool isBlock) {
    if (isBlock) {
      if (startsWith(src_, pos_, "+%}"))
        return pos_ + 3;
      if (startsWith(src_, pos_, "-%}"))
        return skipWhitespace(src_, pos_ + 3);
      if (startsWith(src_, pos_, "%}"))
        return pos_ + 2 + (startsWith(src_, pos_ + 2, "\n") ? 1 : 0);
      return std::string::npos;
    }
    if (startsWith(src_, pos_, "-}}"))
      return skipWhitespace(src_, pos_ + 3);
    if (startsWith(src_, pos_, "}}"))
      return pos_ + 2;
    return std::string::npos;
  }

  void lexTag(bool isBlock) {
    int tagLine = line_;
    emit(isBlock ? Token::Type::BlockBegin : Token::Type::VariableBegin, "",
         line_);
    std::vector<char> braces;
    while (true) {
      if (pos_ >= src_.size())
        error(tagLine, isBlock ? "unexpected end of template: missing '%}'"
                               : "unexpected end of template: missing '}}'");
      if (braces.empty()) {
        size_t end = matchTagEnd(isBlock);
        if (end != std::string::npos) {
          std::string_view consumed =
              std::string_view(src_).substr(pos_, end - pos_);
          emit(isBlock ? Token::Type::BlockEnd : Token::Type::VariableEnd, "",
               line_);
          line_ += countNewlines(consumed);
          lineStarting_ = consumed.back() == '\n';
          pos_ = end;
          return;
        }
      }
      if (size_t n = whitespaceAt(src_, pos_)) {
        size_t end = skipWhitespace(src_, pos_ + n);
        line_ += countNewlines(std::string_view(src_).substr(pos_, end - pos_));
        pos_ = end;
        continue;
      }
      char c = src_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        lexNumber();
      } else if (auto [cp, length] = codePointAt(src_, pos_);
                 length && nameClass(cp) != NameClass::None) {
        if (nameClass(cp) != NameClass::Start)
          error(line_, "invalid character in identifier '" +
                           src_.substr(pos_, length) + "'");
        size_t end = pos_;
        while (end < src_.size()) {
          auto [next, nextLength] = codePointAt(src_, end);
          if (!nextLength || nameClass(next) == NameClass::None)
            break;
          end += nextLength;
        }
        emit(Token::Type::Name, src_.substr(pos_, end - pos_), line_);
        pos_ = end;
      } else if (c == '\'' || c == '"') {
        lexString(c);
      } else {
        lexOperator(braces);
      }
    }
  }

  /// Digits with optional single underscores between them: (\d+_)*\d+.
  size_t scanDigits(size_t p) {
    size_t start = p;
    while (p < src_.size()) {
      if (std::isdigit(static_cast<unsigned char>(src_[p]))) {
        ++p;
      } else if (src_[p] == '_' && p > start && p + 1 < src_.size() &&
                 std::isdigit(static_cast<unsigned char>(src_[p + 1]))) {
        ++p;
      } else {
        break;
      }
    }
    return p;
  }

  void lexNumber() {
    auto digitsOnly = [](std::string_view s) {
      std::string out;
      for (char c : s)
        if (c != '_')
          out.push_back(c);
      return out;
    };
    bool afterDot = pos_ > 0 && src_[pos_ - 1] == '.';
    size_t intEnd = scanDigits(pos_);
    // Float: digits, then (.digits)? e[+-]digits, or .digits.
    if (!afterDot) {
      size_t p = intEnd;
      size_t fracEnd = p;
      if (p < src_.size() && src_[p] == '.' && p + 1 < src_.size() &&
          std::isdigit(static_cast<unsigned char>(src_[p + 1])))
        fracEnd = scanDigits(p + 1);
      size_t q = fracEnd;
      size_t expEnd = std::string::npos;
      if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
        size_t r = q + 1;
        if (r < src_.size() && (src_[r] == '+' || src_[r] == '-'))
          ++r;
        if (r < src_.size() &&
            std::isdigit(static_cast<unsigned char>(src_[r])))
          expEnd = scanDigits(r);
      }
      size_t floatEnd = expEnd != std::string::npos ? expEnd
                        : fracEnd != intEnd         ? fracEnd
                                                    : std::string::npos;
      if (floatEnd != std::string::npos) {
        std::string text = digitsOnly(src_.substr(pos_, floatEnd - pos_));
        Token token{Token::Type::Float, text, 0,
                    std::strtod(text.c_str(), nullptr), line_};
        tokens_.push_back(token);
        pos_ = floatEnd;
        return;
      }
    }
    // Integers: 0b.., 0o.., 0x.., decimal.
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() &&
        std::strchr("bBoOxX", src_[pos_ + 1]) && src_[pos_ + 1] != '\0') {
      char base = static_cast<char>(std::tolower(src_[pos_ + 1]));
      int radix = base == 'b' ? 2 : base == 'o' ? 8 : 16;
      size_t p = pos_ + 2;
      Integer value = 0;
      bool any = false;
      while (p < src_.size()) {
        char d = static_cast<char>(std::tolower(src_[p]));
        int digit = std::isdigit(static_cast<unsigned char>(d)) ? d - '0'
                    : (d >= 'a' && d <= 'f')                    ? d - 'a' + 10
                                                                : 99;
        if (d == '_' && any) {
          ++p;
          continue;
        }
        if (digit >= radix)
          break;
        value = value * radix + digit;
        any = true;
        ++p;
      }
      if (any) {
        Token token{Token::Type::Integer, src_.substr(pos_, p - pos_), value, 0,
                    line_};
        tokens_.push_back(token);
        pos_ = p;
        return;
      }
    }
    size_t end = intEnd;
    if (src_[pos_] == '0') {
      // "0(_?0)*": a leading zero only continues with zeros.
      end = pos_ + 1;
      while (end < src_.size() &&
             (src_[end] == '0' || (src_[end] == '_' && end + 1 < src_.size() &&
                                   src_[end + 1] == '0')))
        ++end;
    }
    std::string text = digitsOnly(src_.substr(pos_, end - pos_));
    if (text.size() > 38)
      error(line_, "integer literal " + text + " is too large");
    Integer value = 0;
    for (char d : text)
      value = value * 10 + (d - '0');
    tokens_.push_back(Token{Token::Type::Integer, text, value, 0, line_});
    pos_ = end;
  }

  void lexString(char quote) {
    int startLine = line_;
    size_t p = pos_ + 1;
    std::string value;
    while (true) {
      if (p >= src_.size())
        error(startLine, "unterminated string literal");
      char c = src_[p];
      if (c == quote)
        break;
      if (c != '\\') {
        value.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size())
        error(startLine, "unterminated string literal");
      p = unescape(p, value, startLine);
    }
    line_ += countNewlines(std::string_view(src_).substr(pos_, p - pos_));
    emit(Token::Type::String, std::move(value), startLine);
    pos_ = p + 1;
  }

  /// Python "unicode-escape" decoding of the escape at src_[p] == '\\'.
  size_t unescape(size_t p, std::string &out, int line) {
    char e = src_[p + 1];
    auto hexValue = [&](size_t start, size_t count) -> char32_t {
      if (start + count > src_.size())
        error(line, "truncated \\x/\\u/\\U escape in a string literal");
      char32_t v = 0;
      for (size_t i = 0; i < count; ++i) {
        char h = src_[start + i];
        if (!std::isxdigit(static_cast<unsigned char>(h)))
          error(line, "truncated \\x/\\u/\\U escape in a string literal");
        v = v * 16 +
            static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h))
                                      ? h - '0'
                                      : std::tolower(h) - 'a' + 10);
      }
      return v;
    };
    switch (e) {
    case '\n':
      return p + 2; // line continuation
    case '\\':
      out.push_back('\\');
      return p + 2;
    case '\'':
      out.push_back('\'');
      return p + 2;
    case '"':
      out.push_back('"');
      return p + 2;
    case 'a':
      out.push_back('\a');
      return p + 2;
    case 'b':
      out.push_back('\b');
      return p + 2;
    case 'f':
      out.push_back('\f');
      return p + 2;
    case 'n':
      out.push_back('\n');
      return p + 2;
    case 'r':
      out.push_back('\r');
      return p + 2;
    case 't':
      out.push_back('\t');
      return p + 2;
    case 'v':
      out.push_back('\v');
      return p + 2;
    case 'x':
      appendUtf8(out, hexValue(p + 2, 2));
      return p + 4;
    case 'u':
      appendUtf8(out, hexValue(p + 2, 4));
      return p + 6;
    case 'U': {
      char32_t cp = hexValue(p + 2, 8);
      if (cp > 0x10FFFF)
        error(line, "\\U escape beyond U+10FFFF in a string literal");
      appendUtf8(out, cp);
      return p + 10;
    }
    case 'N':
      error(line, "unsupported Jinja construct: \\N{...} escape in a string "
                  "literal");
    default:
      if (e >= '0' && e <= '7') {
        char32_t v = 0;
        size_t q = p + 1;
        for (int i = 0;
             i < 3 && q < src_.size() && src_[q] >= '0' && src_[q] <= '7';
             ++i, ++q)
          v = v * 8 + static_cast<char32_t>(src_[q] - '0');
        appendUtf8(out, v);
        return q;
      }
      if (static_cast<unsigned char>(e) >= 0x80) {
        // Jinja unescapes with .encode("ascii", "backslashreplace")
        // .decode("unicode-escape"): a backslash before a non-ASCII
        // character yields the text of its \xNN / \uNNNN escape.
        auto [cp, length] = codePointAt(src_, p + 1);
        char buffer[16];
        std::snprintf(buffer, sizeof buffer,
                      cp <= 0xFF     ? "\\x%02x"
                      : cp <= 0xFFFF ? "\\u%04x"
                                     : "\\U%08x",
                      static_cast<unsigned>(cp));
        out += buffer;
        return p + 1 + (length ? length : 1);
      }
      // Unknown escapes keep their backslash, as Python does.
      out.push_back('\\');
      return p + 1;
    }
  }

  void lexOperator(std::vector<char> &braces) {
    static const char *twoChar[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char *op : twoChar) {
      if (startsWith(src_, pos_, op)) {
        emit(Token::Type::Operator, op, line_);
        pos_ += 2;
        return;
      }
    }
    char c = src_[pos_];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) ==
        std::string_view::npos) {
      std::string shown;
      size_t n = std::max<size_t>(1, whitespaceAt(src_, pos_));
      auto lead = static_cast<unsigned char>(c);
      if (lead >= 0x80)
        n = (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : 4;
      shown = src_.substr(pos_, n);
      error(line_, "unexpected character '" + shown + "' inside a tag");
    }
    if (c == '(' || c == '[' || c == '{') {
      braces.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (braces.empty())
        error(line_, std::string("unexpected '") + c + "'");
      if (braces.back() != c)
        error(line_, std::string("unexpected '") + c + "', expected '" +
                         braces.back() + "'");
      braces.pop_back();
    }
    emit(Token::Type::Operator, std::string(1, c), line_);
    ++pos_;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool lineStarting_ = true;
  std::vector<Token> tokens_;
};

} // namespace

std::vector<Token> tokenizeTemplate(std::string_view source) {
  return Lexer(source).run();
}

std::string describeToken(const Token &token) {
  switch (token.type) {
  case Token::Type::Data:
    return "template text";
  case Token::Type::VariableBegin:
    return "'{{'";
  case Token::Type::VariableEnd:
    return "end of print statement '}}'";
  case Token::Type::BlockBegin:
    return "'{%'";
  case Token::Type::BlockEnd:
    return "end of statement block '%}'";
  case Token::Type::Name:
    return "'" + token.text + "'";
  case Token::Type::String:
    return "string literal";
  case Token::Type::Integer:
  case Token::Type::Float:
    return "number " + token.text;
  case Token::Type::Operator:
    return "'" + token.text + "'";
  case Token::Type::Eof:
    return "end of template";
  }
  return "token";
}

} // namespace sol::jinja

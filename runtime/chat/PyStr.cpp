//===- PyStr.cpp - Python str semantics over UTF-8 ------------------------===//

#include "runtime/chat/PyStr.h"

#include "runtime/chat/EvalError.h"
#include "runtime/chat/SpecialCasing.h"
#include "runtime/chat/Utf8.h"

#include <algorithm>
#include <cstdio>
#include <utf8proc.h>

namespace sol::jinja::py {

bool isSpace(char32_t cp) {
  switch (cp) {
  case 0x09:
  case 0x0A:
  case 0x0B:
  case 0x0C:
  case 0x0D:
  case 0x1C:
  case 0x1D:
  case 0x1E:
  case 0x1F:
  case 0x20:
  case 0x85:
  case 0xA0:
  case 0x1680:
  case 0x2028:
  case 0x2029:
  case 0x202F:
  case 0x205F:
  case 0x3000:
    return true;
  default:
    return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string strip(std::string_view s, const std::optional<std::string> &chars,
                  bool left, bool right) {
  std::u32string cps = decodeUtf8(s);
  std::u32string set = chars ? decodeUtf8(*chars) : std::u32string();
  auto strippable = [&](char32_t cp) {
    return chars ? set.find(cp) != std::u32string::npos : isSpace(cp);
  };
  size_t begin = 0, end = cps.size();
  if (left)
    while (begin < end && strippable(cps[begin]))
      ++begin;
  if (right)
    while (end > begin && strippable(cps[end - 1]))
      --end;
  return encodeUtf8(std::u32string_view(cps).substr(begin, end - begin));
}

namespace {

void requireNonEmptySeparator(const std::string &sep) {
  if (sep.empty())
    evalFail("ValueError: empty separator");
}

std::vector<std::string> splitWhitespace(std::string_view s, long long maxsplit,
                                         bool fromRight) {
  std::u32string cps = decodeUtf8(s);
  std::vector<std::u32string> parts;
  if (!fromRight) {
    size_t i = 0, n = cps.size();
    while (true) {
      while (i < n && isSpace(cps[i]))
        ++i;
      if (i == n)
        break;
      if (maxsplit >= 0 && static_cast<long long>(parts.size()) == maxsplit) {
        // The remainder keeps its trailing whitespace, as CPython does.
        parts.push_back(cps.substr(i));
        break;
      }
      size_t start = i;
      while (i < n && !isSpace(cps[i]))
        ++i;
      parts.push_back(cps.substr(start, i - start));
    }
  } else {
    long long i = static_cast<long long>(cps.size()) - 1;
    while (true) {
      while (i >= 0 && isSpace(cps[i]))
        --i;
      if (i < 0)
        break;
      if (maxsplit >= 0 && static_cast<long long>(parts.size()) == maxsplit) {
        parts.push_back(cps.substr(0, i + 1));
        break;
      }
      long long end = i;
      while (i >= 0 && !isSpace(cps[i]))
        --i;
      parts.push_back(cps.substr(i + 1, end - i));
    }
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<std::string> out;
  for (auto &p : parts)
    out.push_back(encodeUtf8(p));
  return out;
}

} // namespace

std::vector<std::string> split(std::string_view s,
                               const std::optional<std::string> &sep,
                               long long maxsplit) {
  if (!sep)
    return splitWhitespace(s, maxsplit, false);
  requireNonEmptySeparator(*sep);
  std::vector<std::string> out;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
    size_t hit = s.find(*sep, start);
    if (hit == std::string_view::npos)
      break;
    out.emplace_back(s.substr(start, hit - start));
    start = hit + sep->size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::vector<std::string> rsplit(std::string_view s,
                                const std::optional<std::string> &sep,
                                long long maxsplit) {
  if (!sep)
    return splitWhitespace(s, maxsplit, true);
  requireNonEmptySeparator(*sep);
  std::vector<std::string> out;
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
    if (end < sep->size())
      break;
    size_t hit = s.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos)
      break;
    out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitLines(std::string_view s) {
  std::u32string cps = decodeUtf8(s);
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < cps.size()) {
    char32_t c = cps[i];
    bool boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C ||
                    c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
                    c == 0x2028 || c == 0x2029;
    if (!boundary) {
      ++i;
      continue;
    }
    out.push_back(
        encodeUtf8(std::u32string_view(cps).substr(start, i - start)));
    i += (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ? 2 : 1;
    start = i;
  }
  if (start < cps.size())
    out.push_back(encodeUtf8(std::u32string_view(cps).substr(start)));
  return out;
}

std::string replace(std::string_view s, std::string_view old,
                    std::string_view replacement, long long count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    std::u32string cps = decodeUtf8(s);
    long long done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        out.append(replacement);
        ++done;
      }
      appendUtf8(out, cp);
    }
    if (count < 0 || done < count)
      out.append(replacement);
    return out;
  }
  size_t start = 0;
  long long done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, start);
    if (hit == std::string_view::npos)
      break;
    out.append(s.substr(start, hit - start));
    out.append(replacement);
    start = hit + old.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

namespace {

bool isCased(char32_t cp) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
         cat == UTF8PROC_CATEGORY_LT;
}

char32_t toLower(char32_t cp) {
  return static_cast<char32_t>(
      utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}
char32_t toUpper(char32_t cp) {
  return static_cast<char32_t>(
      utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
}
char32_t toTitle(char32_t cp) {
  return static_cast<char32_t>(
      utf8proc_totitle(static_cast<utf8proc_int32_t>(cp)));
}

bool isCaseIgnorable(char32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_SK:
    return true;
  default:
    // Word_Break MidLetter / MidNumLet / Single_Quote.
    return cp == '\'' || cp == '.' || cp == ':' || cp == 0xB7 || cp == 0x2018 ||
           cp == 0x2019 || cp == 0x2024 || cp == 0xFE52 || cp == 0xFF07 ||
           cp == 0xFF0E;
  }
}

enum class Case { Lower, Upper, Title };

/// Appends the full case mapping of cps[i] (CPython's lower_ucs4 & co.,
/// including the Final_Sigma rule for U+03A3).
void appendMapped(std::string &out, const std::u32string &cps, size_t i,
                  Case kind) {
  char32_t cp = cps[i];
  if (kind == Case::Lower && cp == 0x3A3) {
    long j = static_cast<long>(i) - 1;
    while (j >= 0 && isCaseIgnorable(cps[j]))
      --j;
    bool finalSigma = j >= 0 && isCased(cps[j]);
    if (finalSigma) {
      size_t k = i + 1;
      while (k < cps.size() && isCaseIgnorable(cps[k]))
        ++k;
      finalSigma = k == cps.size() || !isCased(cps[k]);
    }
    appendUtf8(out, finalSigma ? 0x3C2 : 0x3C3);
    return;
  }
  std::u32string_view special = kind == Case::Lower   ? specialLower(cp)
                                : kind == Case::Upper ? specialUpper(cp)
                                                      : specialTitle(cp);
  if (!special.empty()) {
    for (char32_t c : special)
      appendUtf8(out, c);
    return;
  }
  appendUtf8(out, kind == Case::Lower   ? toLower(cp)
                  : kind == Case::Upper ? toUpper(cp)
                                        : toTitle(cp));
}

std::string mapCase(std::string_view s, Case kind) {
  std::u32string cps = decodeUtf8(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < cps.size(); ++i)
    appendMapped(out, cps, i, kind);
  return out;
}

} // namespace

std::string lower(std::string_view s) { return mapCase(s, Case::Lower); }
std::string upper(std::string_view s) { return mapCase(s, Case::Upper); }

std::string title(std::string_view s) {
  std::u32string cps = decodeUtf8(s);
  std::string out;
  bool previousCased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    appendMapped(out, cps, i, previousCased ? Case::Lower : Case::Title);
    previousCased = isCased(cps[i]);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::u32string cps = decodeUtf8(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i)
    appendMapped(out, cps, i, i == 0 ? Case::Title : Case::Lower);
  return out;
}

bool isLower(std::string_view s) {
  bool sawCased = false;
  for (char32_t cp : decodeUtf8(s)) {
    if (!isCased(cp))
      continue;
    sawCased = true;
    if (toLower(cp) != cp)
      return false;
  }
  return sawCased;
}

bool isUpper(std::string_view s) {
  bool sawCased = false;
  for (char32_t cp : decodeUtf8(s)) {
    if (!isCased(cp))
      continue;
    sawCased = true;
    if (toUpper(cp) != cp)
      return false;
  }
  return sawCased;
}

namespace {

bool isPrintable(char32_t cp) {
  if (cp == ' ')
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
  case UTF8PROC_CATEGORY_CC:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_CS:
  case UTF8PROC_CATEGORY_CO:
  case UTF8PROC_CATEGORY_CN:
  case UTF8PROC_CATEGORY_ZL:
  case UTF8PROC_CATEGORY_ZP:
  case UTF8PROC_CATEGORY_ZS:
    return false;
  default:
    return true;
  }
}

} // namespace

std::string repr(std::string_view s) {
  bool hasSingle = s.find('\'') != std::string_view::npos;
  bool hasDouble = s.find('"') != std::string_view::npos;
  char quote = (hasSingle && !hasDouble) ? '"' : '\'';
  std::string out(1, quote);
  char buffer[16];
  for (char32_t cp : decodeUtf8(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      std::snprintf(buffer, sizeof buffer, "\\x%02x",
                    static_cast<unsigned>(cp));
      out += buffer;
    } else if (cp < 0x7F || isPrintable(cp)) {
      appendUtf8(out, cp);
    } else if (cp <= 0xFF) {
      std::snprintf(buffer, sizeof buffer, "\\x%02x",
                    static_cast<unsigned>(cp));
      out += buffer;
    } else if (cp <= 0xFFFF) {
      std::snprintf(buffer, sizeof buffer, "\\u%04x",
                    static_cast<unsigned>(cp));
      out += buffer;
    } else {
      std::snprintf(buffer, sizeof buffer, "\\U%08x",
                    static_cast<unsigned>(cp));
      out += buffer;
    }
  }
  out.push_back(quote);
  return out;
}

} // namespace sol::jinja::py

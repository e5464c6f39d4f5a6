//===- PyStr.h - Python str semantics over UTF-8 ----------------*- C++ -*-===//
//
// Chat templates call Python string methods (strip, split, startswith...) and
// Jinja filters built on them. These functions reproduce CPython's behaviour
// on UTF-8 text: whitespace is str.isspace(), counts are code points, case
// mapping is Unicode's (simple mappings, via utf8proc).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sol::jinja::py {

/// str.isspace() for one code point.
bool isSpace(char32_t cp);

/// str.strip/lstrip/rstrip; `chars` unset means whitespace.
std::string strip(std::string_view s, const std::optional<std::string> &chars,
                  bool left = true, bool right = true);

/// str.split(sep, maxsplit); `sep` unset splits on whitespace runs.
/// maxsplit < 0 means no limit.
std::vector<std::string> split(std::string_view s,
                               const std::optional<std::string> &sep,
                               long long maxsplit = -1);

/// str.rsplit(sep, maxsplit).
std::vector<std::string> rsplit(std::string_view s,
                                const std::optional<std::string> &sep,
                                long long maxsplit = -1);

/// str.splitlines() (keepends=False), with Python's set of line boundaries.
std::vector<std::string> splitLines(std::string_view s);

/// str.replace(old, new, count); count < 0 means all.
std::string replace(std::string_view s, std::string_view old,
                    std::string_view replacement, long long count = -1);

std::string lower(std::string_view s);
std::string upper(std::string_view s);
/// str.title(): first cased letter of each word upper, the rest lower.
std::string title(std::string_view s);
/// str.capitalize(): first code point title-cased, the rest lower-cased.
std::string capitalize(std::string_view s);
/// str.islower() / str.isupper().
bool isLower(std::string_view s);
bool isUpper(std::string_view s);

/// repr() of a str: quotes and escapes exactly as CPython prints them.
std::string repr(std::string_view s);

} // namespace sol::jinja::py

//===- SpecialCasing.h - One-to-many Unicode case mappings ------*- C++ -*-===//
//
// Python's str.upper/lower/title use full case mappings: 'ß'.upper() is
// "SS", 'ŉ'.upper() is "ʼN". These return such a mapping, or an empty view
// when the code point maps one-to-one (then utf8proc's simple mapping
// applies).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string_view>

namespace sol::jinja {

std::u32string_view specialUpper(char32_t cp);
std::u32string_view specialLower(char32_t cp);
std::u32string_view specialTitle(char32_t cp);

} // namespace sol::jinja

//===- Utf8.h - UTF-8 <-> code points for the chat-template engine -*- C++
//-*-===//
//
// Python strings are sequences of code points, so len(), indexing and
// slicing in a template count code points, not bytes. These helpers convert
// between UTF-8 (how Sol stores text) and code points.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace sol::jinja {

/// Decodes UTF-8 into code points; throws sol::Error on malformed input.
std::u32string decodeUtf8(std::string_view text);

/// Encodes code points as UTF-8.
std::string encodeUtf8(std::u32string_view codePoints);

/// Appends one code point, UTF-8 encoded.
void appendUtf8(std::string &out, char32_t codePoint);

/// Number of code points (Python len()) of valid UTF-8 text.
size_t countCodePoints(std::string_view text);

} // namespace sol::jinja

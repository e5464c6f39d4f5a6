//===- Utf8.h - UTF-8 decoding with Python's replacement rule ---*- C++ -*-===//
//
// Hugging Face tokenizers only ever see valid text: Python hands them a `str`,
// and Rust's String::from_utf8_lossy repairs decoded bytes. Both replace each
// "maximal subpart" of an ill-formed sequence (Unicode 15, section 3.9, table
// 3-7) by one U+FFFD. Sol receives raw bytes, so it applies the same rule at
// both ends to produce the same ids and the same text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sol::utf8 {

enum class UnitStatus : std::uint8_t {
  Valid,     ///< a complete, well-formed character
  Invalid,   ///< a maximal subpart that can never become well-formed
  Truncated, ///< a well-formed prefix cut by the end of the input
};

/// One step of decoding: a character, or a run of bytes to replace.
struct Unit {
  UnitStatus status;
  std::uint8_t length; ///< bytes consumed, 1..4
  char32_t codePoint;  ///< meaningful when status == Valid
};

/// Decodes the unit that starts at `pos` (< text.size()).
Unit decodeUnit(std::string_view text, std::size_t pos);

/// True when `text` is well-formed UTF-8.
bool isValid(std::string_view text);

/// Returns `bytes` with each maximal ill-formed subpart (including a truncated
/// sequence at the end) replaced by U+FFFD, like Python's
/// bytes.decode("utf-8", errors="replace").
std::string repair(std::string_view bytes);

/// Appends the UTF-8 encoding of `codePoint` to `out`.
void append(std::string &out, char32_t codePoint);

/// The UTF-8 bytes of U+FFFD REPLACEMENT CHARACTER.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

} // namespace sol::utf8

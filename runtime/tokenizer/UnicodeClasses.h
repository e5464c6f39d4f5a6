//===- UnicodeClasses.h - Character classes HF tokenizers use ---*- C++ -*-===//
//
// The added-token matcher of Hugging Face tokenizers decides `lstrip`,
// `rstrip` and `single_word` with Rust's Unicode-aware `\s` and `\w`. These
// functions give the same answers.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace sol::unicode {

/// Unicode's White_Space property (Rust regex `\s`, Oniguruma `\s`).
bool isWhiteSpace(char32_t c);

/// Rust regex `\w`: Alphabetic, marks, decimal digits, connector punctuation
/// and the joiners ZWNJ/ZWJ.
bool isWordCharacter(char32_t c);

/// The White_Space property as a PCRE2 character-class body (no brackets).
inline constexpr const char *kWhiteSpaceClassBody =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}"
    "\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

} // namespace sol::unicode

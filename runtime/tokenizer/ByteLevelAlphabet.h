//===- ByteLevelAlphabet.h - GPT-2's byte <-> character map -----*- C++ -*-===//
//
// Byte-level BPE vocabularies spell every byte as one printable character
// (space is "Ġ" U+0120, newline "Ċ" U+010A, printable Latin-1 bytes stand for
// themselves). Sol tokenizes raw bytes and converts vocabulary strings back to
// bytes once at load time, so the map is only needed while loading.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sol::byte_level {

/// The character that stands for `byte` in vocabulary strings.
char32_t charForByte(unsigned char byte);

/// The byte that `c` stands for, or nothing if `c` is not in the alphabet.
std::optional<unsigned char> byteForChar(char32_t c);

/// The vocabulary spelling (UTF-8) of raw `bytes`.
std::string encode(std::string_view bytes);

/// The raw bytes a vocabulary string stands for, or nothing when a character
/// is outside the alphabet (or `token` is not valid UTF-8).
std::optional<std::string> decode(std::string_view token);

/// decode() into `out` (replacing its contents), reusing its storage.
/// Returns false, leaving `out` unspecified, when decode() gives nothing.
bool decodeInto(std::string_view token, std::string &out);

} // namespace sol::byte_level

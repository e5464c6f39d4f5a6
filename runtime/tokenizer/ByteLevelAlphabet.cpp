//===- ByteLevelAlphabet.cpp - GPT-2's byte <-> character map -------------===//

#include "runtime/tokenizer/ByteLevelAlphabet.h"

#include "runtime/support/Utf8.h"

#include <array>

namespace sol::byte_level {
namespace {

// Printable bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves; the other
// 68 bytes map, in byte order, to U+0100, U+0101, ...
struct Tables {
  std::array<char32_t, 256> charOfByte{};
  std::array<short, 324> byteOfChar{}; // indexed by code point < 324
  Tables() {
    byteOfChar.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') ||
                             (b >= 0xA1 && b <= 0xAC) ||
                             (b >= 0xAE && b <= 0xFF);
      charOfByte[b] = printable ? static_cast<char32_t>(b) : next++;
      byteOfChar[charOfByte[b]] = static_cast<short>(b);
    }
  }
};

const Tables &tables() {
  static const Tables instance;
  return instance;
}

} // namespace

char32_t charForByte(unsigned char byte) { return tables().charOfByte[byte]; }

std::optional<unsigned char> byteForChar(char32_t c) {
  if (c >= tables().byteOfChar.size() || tables().byteOfChar[c] < 0)
    return std::nullopt;
  return static_cast<unsigned char>(tables().byteOfChar[c]);
}

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes)
    utf8::append(out, charForByte(static_cast<unsigned char>(b)));
  return out;
}

bool decodeInto(std::string_view token, std::string &out) {
  out.clear();
  for (std::size_t pos = 0; pos < token.size();) {
    const utf8::Unit unit = utf8::decodeUnit(token, pos);
    if (unit.status != utf8::UnitStatus::Valid)
      return false;
    const std::optional<unsigned char> byte = byteForChar(unit.codePoint);
    if (!byte)
      return false;
    out.push_back(static_cast<char>(*byte));
    pos += unit.length;
  }
  return true;
}

std::optional<std::string> decode(std::string_view token) {
  std::string out;
  if (!decodeInto(token, out))
    return std::nullopt;
  return out;
}

} // namespace sol::byte_level

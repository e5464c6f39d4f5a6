//===- Utf8.cpp - UTF-8 decoding with Python's replacement rule -----------===//

#include "runtime/support/Utf8.h"

namespace sol::utf8 {

Unit decodeUnit(std::string_view text, std::size_t pos) {
  auto byte = [&](std::size_t i) {
    return static_cast<unsigned char>(text[pos + i]);
  };
  const unsigned char lead = byte(0);
  if (lead < 0x80)
    return {UnitStatus::Valid, 1, lead};

  // Table 3-7: the length and the allowed range of the second byte depend on
  // the lead byte; every later byte is 80..BF.
  int length;
  unsigned char secondLow = 0x80, secondHigh = 0xBF;
  char32_t codePoint;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    codePoint = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    codePoint = lead & 0x0F;
    if (lead == 0xE0)
      secondLow = 0xA0;
    else if (lead == 0xED)
      secondHigh = 0x9F; // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    codePoint = lead & 0x07;
    if (lead == 0xF0)
      secondLow = 0x90;
    else if (lead == 0xF4)
      secondHigh = 0x8F; // nothing above U+10FFFF
  } else {
    return {UnitStatus::Invalid, 1, 0}; // 80..C1, F5..FF never start a unit
  }

  const std::size_t available = text.size() - pos;
  for (int i = 1; i < length; ++i) {
    if (static_cast<std::size_t>(i) >= available)
      return {UnitStatus::Truncated, static_cast<std::uint8_t>(i), 0};
    const unsigned char next = byte(i);
    const unsigned char low = i == 1 ? secondLow : 0x80;
    const unsigned char high = i == 1 ? secondHigh : 0xBF;
    if (next < low || next > high)
      return {UnitStatus::Invalid, static_cast<std::uint8_t>(i), 0};
    codePoint = (codePoint << 6) | (next & 0x3F);
  }
  return {UnitStatus::Valid, static_cast<std::uint8_t>(length), codePoint};
}

bool isValid(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Unit unit = decodeUnit(text, pos);
    if (unit.status != UnitStatus::Valid)
      return false;
    pos += unit.length;
  }
  return true;
}

std::string repair(std::string_view bytes) {
  if (isValid(bytes))
    return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 16);
  for (std::size_t pos = 0; pos < bytes.size();) {
    const Unit unit = decodeUnit(bytes, pos);
    if (unit.status == UnitStatus::Valid)
      out.append(bytes.substr(pos, unit.length));
    else
      out.append(kReplacementCharacter);
    pos += unit.length;
  }
  return out;
}

void append(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

} // namespace sol::utf8

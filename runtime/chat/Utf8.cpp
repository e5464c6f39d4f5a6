//===- Utf8.cpp - UTF-8 <-> code points -----------------------------------===//

#include "runtime/chat/Utf8.h"

#include "runtime/support/Error.h"
#include "runtime/support/Utf8.h"

namespace sol::jinja {

std::u32string decodeUtf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const utf8::Unit unit = utf8::decodeUnit(text, i);
    if (unit.status == utf8::UnitStatus::Truncated)
      fail("truncated UTF-8 sequence at offset ", i,
           " of a chat-template string");
    if (unit.status == utf8::UnitStatus::Invalid)
      fail("invalid UTF-8 at offset ", i, " of a chat-template string");
    out.push_back(unit.codePoint);
    i += unit.length;
  }
  return out;
}

void appendUtf8(std::string &out, char32_t cp) { utf8::append(out, cp); }

std::string encodeUtf8(std::u32string_view codePoints) {
  std::string out;
  out.reserve(codePoints.size());
  for (char32_t cp : codePoints)
    appendUtf8(out, cp);
  return out;
}

size_t countCodePoints(std::string_view text) {
  size_t count = 0;
  for (char c : text)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80)
      ++count;
  return count;
}

} // namespace sol::jinja

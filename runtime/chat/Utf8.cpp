//===- Utf8.cpp - UTF-8 <-> code points -----------------------------------===//

#include "runtime/chat/Utf8.h"

#include "runtime/support/Error.h"

namespace sol::jinja {

std::u32string decodeUtf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    char32_t cp = 0;
    size_t length = 0;
    if (byte < 0x80) {
      cp = byte;
      length = 1;
    } else if ((byte & 0xE0) == 0xC0) {
      cp = byte & 0x1F;
      length = 2;
    } else if ((byte & 0xF0) == 0xE0) {
      cp = byte & 0x0F;
      length = 3;
    } else if ((byte & 0xF8) == 0xF0) {
      cp = byte & 0x07;
      length = 4;
    } else {
      fail("invalid UTF-8 byte 0x", std::hex, static_cast<int>(byte),
           " at offset ", std::dec, i, " of a chat-template string");
    }
    if (i + length > text.size())
      fail("truncated UTF-8 sequence at offset ", i,
           " of a chat-template string");
    for (size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80)
        fail("invalid UTF-8 continuation byte at offset ", i + k,
             " of a chat-template string");
      cp = (cp << 6) | (next & 0x3F);
    }
    out.push_back(cp);
    i += length;
  }
  return out;
}

void appendUtf8(std::string &out, char32_t cp) {
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

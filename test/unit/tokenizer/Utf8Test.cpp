//===- Utf8Test.cpp - UTF-8 repair matches Python's errors="replace" ------===//
//
// Expected strings were checked with CPython 3.11:
//   bytes.decode("utf-8", errors="replace")
//
//===----------------------------------------------------------------------===//

#include "runtime/support/Utf8.h"

#include <gtest/gtest.h>

namespace sol::utf8 {
namespace {

const std::string R(kReplacementCharacter);

TEST(Utf8Test, RepairReplacesEachMaximalSubpartLikePython) {
  const std::pair<std::string, std::string> cases[] = {
      {"a\xFF"
       "b",
       "a" + R + "b"},
      {"\xE4\xB8", R},                     // truncated 中: one subpart
      {"\xF0\x9F\x98", R},                 // truncated emoji
      {"\xED\xA0\x80", R + R + R},         // surrogate: ED only takes 80..9F
      {"\xC0\xAF", R + R},                 // overlong: C0 never starts
      {"\xF4\x90\x80\x80", R + R + R + R}, // above U+10FFFF
      {"\xE0\x80\x80", R + R + R},         // overlong 3-byte
      {"\xF0\x80", R + R},                 // F0 needs 90..BF next
      {"\xE4\xB8"
       "A",
       R + "A"},           // cut by an ASCII byte
      {"\x80\x80", R + R}, // lone continuation bytes
      {"\xF8\x88\x80\x80\x80", R + R + R + R + R},
      {"\xE4\xB8\xAD\xE4", "\xE4\xB8\xAD" + R},
      {"\xC2", R},
      {"\xE2\x82\xAC", "\xE2\x82\xAC"}, // valid euro sign is kept
      {"\xEF\xBF\xBD", R},              // a real U+FFFD is kept
      {"", ""},
  };
  for (const auto &[input, expected] : cases)
    EXPECT_EQ(repair(input), expected)
        << "input of " << input.size() << " bytes";
}

TEST(Utf8Test, DecodeUnitReportsStatusAndLength) {
  Unit unit = decodeUnit("\xF0\x9F\x98\x80", 0);
  EXPECT_EQ(unit.status, UnitStatus::Valid);
  EXPECT_EQ(unit.length, 4);
  EXPECT_EQ(unit.codePoint, U'\U0001F600');

  unit = decodeUnit("\xF0\x9F\x98", 0);
  EXPECT_EQ(unit.status, UnitStatus::Truncated);
  EXPECT_EQ(unit.length, 3);

  unit = decodeUnit("\xF0\x9F"
                    "A",
                    0);
  EXPECT_EQ(unit.status, UnitStatus::Invalid);
  EXPECT_EQ(unit.length, 2);

  unit = decodeUnit("x\xC3\xA9", 1);
  EXPECT_EQ(unit.status, UnitStatus::Valid);
  EXPECT_EQ(unit.codePoint, U'\u00E9');
}

TEST(Utf8Test, IsValidAndAppendAgree) {
  std::string all;
  for (char32_t c :
       {U'\u0000', U'A', U'\u007F', U'\u0080', U'\u07FF', U'\u0800', U'\uD7FF',
        U'\uE000', U'\uFFFF', U'\U00010000', U'\U0010FFFF'})
    append(all, c);
  EXPECT_TRUE(isValid(all));
  EXPECT_EQ(repair(all), all);
  EXPECT_FALSE(isValid("\xED\xA0\x80"));
  EXPECT_FALSE(isValid("abc\xC3"));
}

} // namespace
} // namespace sol::utf8

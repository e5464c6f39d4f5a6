//===- DTypeTest.cpp - The dtype table and float conversions --------------===//

#include "runtime/support/DType.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <sstream>

namespace sol {
namespace {

TEST(DTypeTest, SizesAndNames) {
  struct Row {
    DType type;
    const char *name;
    int bits;
  };
  const Row rows[] = {
      {DType::BF16, "BF16", 16},     {DType::F16, "F16", 16},
      {DType::F32, "F32", 32},       {DType::F64, "F64", 64},
      {DType::F8E4M3, "F8_E4M3", 8}, {DType::F8E5M2, "F8_E5M2", 8},
      {DType::I8, "I8", 8},          {DType::U8, "U8", 8},
      {DType::I16, "I16", 16},       {DType::I32, "I32", 32},
      {DType::I64, "I64", 64},       {DType::U16, "U16", 16},
      {DType::U32, "U32", 32},       {DType::U64, "U64", 64},
      {DType::Bool, "BOOL", 8},      {DType::I4, "I4", 4},
  };
  ASSERT_EQ(std::size(rows), size_t(kNumDTypes));
  for (const Row &row : rows) {
    EXPECT_EQ(dtypeName(row.type), row.name);
    EXPECT_EQ(dtypeBits(row.type), row.bits) << row.name;
    EXPECT_EQ(parseDType(row.name), row.type) << row.name;
    if (row.type == DType::I4)
      EXPECT_FALSE(parseSafetensorsDType(row.name));
    else
      EXPECT_EQ(parseSafetensorsDType(row.name), row.type) << row.name;
    std::ostringstream os;
    os << row.type;
    EXPECT_EQ(os.str(), row.name);
  }
  EXPECT_FALSE(parseDType("bf16")); // case-sensitive, as safetensors writes
  EXPECT_FALSE(parseDType("F8_E4M3FN"));
  EXPECT_TRUE(isFloatingPoint(DType::F8E5M2));
  EXPECT_FALSE(isFloatingPoint(DType::I4));
  EXPECT_FALSE(isFloatingPoint(DType::Bool));
}

TEST(DTypeTest, StorageBytes) {
  EXPECT_EQ(dtypeStorageBytes(DType::BF16, 8), 16u);
  EXPECT_EQ(dtypeStorageBytes(DType::I4, 3), 2u); // rounds up to whole bytes
  EXPECT_EQ(dtypeStorageBytes(DType::I4, 4), 2u);
  EXPECT_EQ(dtypeStorageBytes(DType::F64, 0), 0u);
  EXPECT_FALSE(dtypeStorageBytes(DType::F64, uint64_t{1} << 61));
  EXPECT_EQ(dtypeStorageBytes(DType::U8, uint64_t{1} << 60), uint64_t{1} << 60);
}

TEST(DTypeTest, TorchNames) {
  EXPECT_EQ(parseTorchDType("bfloat16"), DType::BF16);
  EXPECT_EQ(parseTorchDType("torch.float16"), DType::F16);
  EXPECT_EQ(parseTorchDType("float32"), DType::F32);
  EXPECT_FALSE(parseTorchDType("auto"));
}

TEST(DTypeTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xC000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even (1).
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3F80);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up.
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  // Just above halfway rounds up.
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  // The largest float rounds to infinity, as RNE requires.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  uint16_t nan = floatToBf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  // A NaN whose payload sits only in the low bits must stay NaN.
  uint16_t lowNan = floatToBf16(std::bit_cast<float>(0x7F800001u));
  EXPECT_TRUE(std::isnan(bf16ToFloat(lowNan)));

  // Every non-NaN bf16 value converts to float and back unchanged.
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    float value = bf16ToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(value)) {
      ASSERT_EQ(floatToBf16(value), bits) << std::hex << bits;
    }
  }
}

TEST(DTypeTest, HalfConversionsAreExactAndRoundToNearestEven) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f); // smallest subnormal
  EXPECT_EQ(halfToFloat(0x03FF), 1023 * 0x1p-24f);
  EXPECT_TRUE(std::isinf(halfToFloat(0xFC00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
  EXPECT_EQ(std::signbit(halfToFloat(0x8000)), true);

  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF); // below the rounding midpoint
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // midpoint ties to inf (even)
  EXPECT_EQ(floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);   // tie between 0 and 2^-24
  EXPECT_EQ(floatToHalf(0x1.8p-24f), 0x0002); // tie between 1 and 2 units
  EXPECT_EQ(floatToHalf(0x1.8p-25f), 0x0001);
  EXPECT_EQ(floatToHalf(-0x1p-30f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3C00); // tie to even
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(floatToHalf(0x1.ffcp-15f), 0x0400); // rounds up to smallest normal
  EXPECT_TRUE(
      std::isnan(halfToFloat(floatToHalf(std::bit_cast<float>(0x7F800001u)))));

  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    float value = halfToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(value)) {
      ASSERT_EQ(floatToHalf(value), bits) << std::hex << bits;
    }
  }
}

#if defined(__FLT16_MAX__)
// The compiler's own float -> _Float16 conversion (IEEE round to nearest
// even) is an independent oracle for floatToHalf.
TEST(DTypeTest, HalfMatchesCompilerConversion) {
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 997) {
    float value = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(value))
      continue;
    _Float16 reference = static_cast<_Float16>(value);
    ASSERT_EQ(floatToHalf(value), std::bit_cast<uint16_t>(reference))
        << std::hexfloat << value;
  }
}
#endif

} // namespace
} // namespace sol

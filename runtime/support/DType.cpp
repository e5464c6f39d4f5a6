//===- DType.cpp - The one element-type table of Sol ----------------------===//

#include "runtime/support/DType.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <ostream>

namespace sol {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int bits;
  bool inSafetensors;
  bool floatingPoint;
};

// Indexed by the enum value; the static_assert below keeps it in order.
constexpr std::array<DTypeInfo, kNumDTypes> kTable = {{
    {DType::BF16, "BF16", 16, true, true},
    {DType::F16, "F16", 16, true, true},
    {DType::F32, "F32", 32, true, true},
    {DType::F64, "F64", 64, true, true},
    {DType::F8E4M3, "F8_E4M3", 8, true, true},
    {DType::F8E5M2, "F8_E5M2", 8, true, true},
    {DType::I8, "I8", 8, true, false},
    {DType::U8, "U8", 8, true, false},
    {DType::I16, "I16", 16, true, false},
    {DType::I32, "I32", 32, true, false},
    {DType::I64, "I64", 64, true, false},
    {DType::U16, "U16", 16, true, false},
    {DType::U32, "U32", 32, true, false},
    {DType::U64, "U64", 64, true, false},
    {DType::Bool, "BOOL", 8, true, false},
    {DType::I4, "I4", 4, false, false},
}};

constexpr bool tableIsInEnumOrder() {
  for (int i = 0; i < kNumDTypes; ++i)
    if (static_cast<int>(kTable[i].type) != i)
      return false;
  return true;
}
static_assert(tableIsInEnumOrder(), "kTable must follow the DType enum order");

const DTypeInfo &info(DType type) { return kTable[static_cast<size_t>(type)]; }

} // namespace

int dtypeBits(DType type) { return info(type).bits; }

std::optional<uint64_t> dtypeStorageBytes(DType type, uint64_t elements) {
  uint64_t bits = static_cast<uint64_t>(info(type).bits);
  if (elements > std::numeric_limits<uint64_t>::max() / bits)
    return std::nullopt;
  return (elements * bits + 7) / 8;
}

bool isFloatingPoint(DType type) { return info(type).floatingPoint; }

std::string_view dtypeName(DType type) { return info(type).name; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &entry : kTable)
    if (entry.name == name)
      return entry.type;
  return std::nullopt;
}

std::optional<DType> parseSafetensorsDType(std::string_view name) {
  std::optional<DType> type = parseDType(name);
  if (type && !info(*type).inSafetensors)
    return std::nullopt;
  return type;
}

std::optional<DType> parseTorchDType(std::string_view name) {
  if (name.starts_with("torch."))
    name.remove_prefix(6);
  struct TorchName {
    std::string_view name;
    DType type;
  };
  static constexpr TorchName kTorchNames[] = {
      {"bfloat16", DType::BF16},      {"float16", DType::F16},
      {"half", DType::F16},           {"float32", DType::F32},
      {"float", DType::F32},          {"float64", DType::F64},
      {"double", DType::F64},         {"float8_e4m3fn", DType::F8E4M3},
      {"float8_e5m2", DType::F8E5M2}, {"int8", DType::I8},
      {"uint8", DType::U8},           {"int16", DType::I16},
      {"int32", DType::I32},          {"int64", DType::I64},
      {"bool", DType::Bool},
  };
  for (const TorchName &entry : kTorchNames)
    if (entry.name == name)
      return entry.type;
  return std::nullopt;
}

std::string_view safetensorsDTypeList() {
  return "BF16, F16, F32, F64, F8_E4M3, F8_E5M2, I8, U8, I16, I32, I64, U16, "
         "U32, U64, BOOL";
}

std::ostream &operator<<(std::ostream &os, DType type) {
  return os << dtypeName(type);
}

float bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToBf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) // keep sign, force a quiet NaN (never rounds to inf)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Round to nearest, ties to even: add 0x7FFF plus the lowest kept bit.
  uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7FFFu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) // inf or NaN
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa x 2^-24, exact in float.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) |
                              (mantissa << 13));
}

uint16_t floatToHalf(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) // NaN: quiet, keep top mantissa bits
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  if (magnitude >= 0x477FF000u) // >= 65520 rounds to infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half (2^-14): subnormal or zero. Shift the
    // full 24-bit significand to units of 2^-24 and round to nearest even.
    if (magnitude < 0x33000000u) // < 2^-25: rounds to zero
      return sign;
    uint32_t exponent = magnitude >> 23;
    uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - exponent; // 14..24 for exponents 102..112
    uint32_t result = significand >> shift;
    uint32_t remainder = significand & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u)))
      ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias exponent (127 -> 15) and round the 13 dropped bits to
  // nearest even; a carry into the exponent is the correct result.
  uint32_t rebased = magnitude - (112u << 23);
  uint32_t lsb = (rebased >> 13) & 1u;
  rebased += 0xFFFu + lsb;
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

} // namespace sol

//===- DType.h - The one element-type table of Sol --------------*- C++ -*-===//
//
// Every layer that names an element type (safetensors reader, importer, plan
// format, kernels, reference executor) uses this enum and these spellings, so
// a dtype never has to be translated between two tables.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

namespace sol {

enum class DType : uint8_t {
  BF16,
  F16,
  F32,
  F64,
  F8E4M3, // e4m3fn: no infinities, one NaN encoding per sign
  F8E5M2,
  I8,
  U8,
  I16,
  I32,
  I64,
  U16,
  U32,
  U64,
  Bool,
  I4, // two signed 4-bit values per byte, low nibble first; not in safetensors
};

/// Number of DType enumerators, for tables indexed by DType.
inline constexpr int kNumDTypes = static_cast<int>(DType::I4) + 1;

/// Storage size of one element in bits (4 for I4, 8 for Bool).
int dtypeBits(DType type);

/// Bytes needed to store `elements` values packed densely (I4 rounds up to a
/// whole byte). Returns std::nullopt when the byte count overflows uint64_t.
std::optional<uint64_t> dtypeStorageBytes(DType type, uint64_t elements);

/// True for BF16, F16, F32, F64, F8E4M3 and F8E5M2.
bool isFloatingPoint(DType type);

/// The canonical spelling: the safetensors name ("BF16", "F8_E4M3", "BOOL",
/// ...) and "I4" for the one type safetensors does not define.
std::string_view dtypeName(DType type);

/// Parses a canonical spelling (exact, case-sensitive, as safetensors writes
/// it). Returns std::nullopt for anything else.
std::optional<DType> parseDType(std::string_view name);

/// Parses a dtype spelled the way safetensors headers spell it; unlike
/// parseDType this rejects "I4", which safetensors does not define.
std::optional<DType> parseSafetensorsDType(std::string_view name);

/// Parses the `torch_dtype`/`dtype` spelling of config.json ("bfloat16",
/// "float16", "float32", also with a "torch." prefix).
std::optional<DType> parseTorchDType(std::string_view name);

/// Comma-separated list of the dtype names safetensors headers may use, for
/// error messages.
std::string_view safetensorsDTypeList();

std::ostream &operator<<(std::ostream &os, DType type);

/// bfloat16 bits -> float (exact).
float bf16ToFloat(uint16_t bits);
/// float -> bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
uint16_t floatToBf16(float value);
/// IEEE binary16 bits -> float (exact, subnormals included).
float halfToFloat(uint16_t bits);
/// float -> IEEE binary16 bits, round to nearest even; overflow gives
/// infinity, tiny values give (signed) subnormals or zero.
uint16_t floatToHalf(float value);

} // namespace sol

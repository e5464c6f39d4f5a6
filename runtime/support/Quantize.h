//===- Quantize.h - Weight quantization formats and their math --*- C++ -*-===//
//
// The quantized weight formats of Sol. The compiler writes them into the plan,
// the GPU kernels and the reference executor read them; these definitions
// are the contract between all three, so the layouts below are fixed.
//
// A linear's weight W is [N, K] row-major (N = rows = outputs, K = cols =
// inputs). Every division below is a float32 division and every rounding is
// round-half-to-even (std::nearbyint in the default rounding mode).
//
// int8 (W8A16), symmetric per output row:
//   scale[n] = max_k |W[n,k]| / 127           (1 if the row is all zero)
//   q        = clamp(round(W / scale), -127, 127), stored as int8 bytes
//   W'       = q * scale
//   codes: [N, K] bytes (two's complement); scales: float32 [N].
//
// fp8 (W8A8, E4M3 as in Fp8.h), per output row:
//   scale[n] = max_k |W[n,k]| / 448           (1 if the row is all zero)
//   q        = e4m3(W / scale),  W' = e4m3ToFloat(q) * scale
//   codes: [N, K] E4M3 bytes; scales: float32 [N].
//   Activations (at run time) use the same rule per row of x.
//
// int4 (W4A16), asymmetric groups of g consecutive k (g divides K, K even;
// g = K is one group per row), AutoAWQ's zero-point math. Per (n, group),
// with an optional clipping ratio r in (0, 1] (1 when not given):
//   maxv  = max(w) * r,  minv = min(w) * r     (over the group's g values)
//   scale = max(maxv - minv, 1e-5) / 15
//   zero  = clamp(round(-minv / scale), 0, 15)
//   q     = clamp(round(w / scale) + zero, 0, 15)
//   W'    = (q - zero) * scale
//   codes: [N, K/2] bytes, element k even in the LOW nibble and k + 1 in the
//   HIGH nibble; scales: float32 [N, K/g]; zeros: uint8 [N, K/g], 0..15,
//   one per byte. Like AutoAWQ's, this math does not force 0 into
//   [minv, maxv], so a group that is all positive (zero clamps to 0) or all
//   negative (zero clamps to 15) keeps only part of its range.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace sol::quant {

enum class Scheme : uint8_t { None = 0, Int8 = 1, Fp8 = 2, Int4 = 3 };

/// "none", "int8", "fp8", "int4".
std::string_view schemeName(Scheme scheme);
/// The inverse of schemeName; nullopt for any other spelling.
std::optional<Scheme> parseScheme(std::string_view name);

inline constexpr int kInt8Max = 127;
inline constexpr int kInt4Max = 15;
/// AutoAWQ's floor on an int4 group's range, before dividing by 15.
inline constexpr float kInt4MinRange = 1e-5f;

/// One linear's quantized weight, in the layouts described above.
struct QuantizedWeight {
  Scheme scheme = Scheme::None;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t groupSize = 0;      ///< int4 only; 0 for the per-row schemes
  std::vector<uint8_t> codes; ///< int8 bytes, E4M3 bits or packed int4
  std::vector<float> scales;  ///< [rows] or [rows, cols / groupSize]
  std::vector<uint8_t> zeros; ///< int4 only: [rows, cols / groupSize]
};

/// Throws sol::Error unless (rows, cols, groupSize) is a valid shape for
/// `scheme`: positive sizes; groupSize 0 for int8/fp8; for int4 an even
/// cols and a positive groupSize dividing it. `what` names the weight in
/// the message.
void checkShape(Scheme scheme, int64_t rows, int64_t cols, int64_t groupSize,
                std::string_view what = "weight");

/// Sizes of the three arrays for a checked shape.
int64_t codeBytes(Scheme scheme, int64_t rows, int64_t cols);
int64_t scaleCount(Scheme scheme, int64_t rows, int64_t cols,
                   int64_t groupSize);
int64_t zeroCount(Scheme scheme, int64_t rows, int64_t cols, int64_t groupSize);

/// Int4 code of element (n, k) in packed [rows, cols / 2] bytes.
inline uint8_t int4CodeAt(std::span<const uint8_t> packed, int64_t cols,
                          int64_t n, int64_t k) {
  const uint8_t byte = packed[n * (cols / 2) + k / 2];
  return (k & 1) ? byte >> 4 : byte & 0xF;
}

/// Stores `code` (0..15) as element (n, k) of packed [rows, cols / 2] bytes.
inline void setInt4CodeAt(std::span<uint8_t> packed, int64_t cols, int64_t n,
                          int64_t k, uint8_t code) {
  uint8_t &byte = packed[n * (cols / 2) + k / 2];
  byte = (k & 1) ? (byte & 0x0F) | (code << 4) : (byte & 0xF0) | (code & 0xF);
}

/// One int4 group's scale and zero point.
struct Int4Group {
  float scale;
  uint8_t zero;
};

/// The group's parameters from its unclipped min and max and a ratio r.
Int4Group int4GroupParams(float minv, float maxv, float clipRatio = 1.0f);

/// round(w / scale) + zero, clamped to 0..15, ties to even: nearbyint's
/// result in the default rounding mode without its library call (AWQ
/// calibration and the plan writer round billions of values).
inline uint8_t int4Quantize(float w, Int4Group group) {
  float q = w / group.scale;
  // Past +-32 the clamp below decides alone; NaN goes low, as fmax sends it.
  q = q > -32.0f ? (q < 32.0f ? q : 32.0f) : -32.0f;
  // Adding 1.5 * 2^23 leaves no fraction bits: the sum rounds q to an
  // integer (ties to even), and subtracting it back is exact.
  constexpr float kRoundToInteger = 12582912.0f;
  q = (q + kRoundToInteger) - kRoundToInteger + group.zero;
  constexpr auto kMax = static_cast<float>(kInt4Max);
  return static_cast<uint8_t>(q < 0.0f ? 0.0f : (q > kMax ? kMax : q));
}
/// (q - zero) * scale.
inline float int4Dequantize(uint8_t q, Int4Group group) {
  return static_cast<float>(static_cast<int>(q) - group.zero) * group.scale;
}

/// Quantizes W ([rows, cols] float32, finite) per the formats above.
QuantizedWeight quantizeInt8(std::span<const float> w, int64_t rows,
                             int64_t cols);
QuantizedWeight quantizeFp8(std::span<const float> w, int64_t rows,
                            int64_t cols);
/// `clipRatios` is [rows, cols / groupSize], each in (0, 1]; empty means 1.
QuantizedWeight quantizeInt4(std::span<const float> w, int64_t rows,
                             int64_t cols, int64_t groupSize,
                             std::span<const float> clipRatios = {});

/// W' of `q` into `out` ([rows, cols] float32).
void dequantize(const QuantizedWeight &q, std::span<float> out);

/// The same from raw arrays (a plan's bytes); `zeros` must be empty unless
/// the scheme is int4. Checks every size against the shape.
void dequantizeInto(Scheme scheme, int64_t rows, int64_t cols,
                    int64_t groupSize, std::span<const std::byte> codes,
                    std::span<const float> scales,
                    std::span<const uint8_t> zeros, std::span<float> out);

/// AWQ's auto_clip for int4: per (row, group), the ratio r = 1 - i / grid,
/// i in [0, int(grid * maxShrink)), whose W' minimizes the group's error:
/// with calibration inputs x ([xRows, cols] float32) the squared error of
/// the group's contribution to each output, sum_t (sum_k (W - W')[k] *
/// x[t,k])^2; without x, sum_k (W - W')[k]^2. Ties keep the larger r.
/// Returns the ratios, [rows, cols / groupSize]. Runs on all cores.
std::vector<float> searchInt4Clip(std::span<const float> w, int64_t rows,
                                  int64_t cols, int64_t groupSize,
                                  std::span<const float> x = {},
                                  int64_t xRows = 0, int gridPoints = 20,
                                  float maxShrink = 0.5f);

/// An fp8 activation row's scale: max |x| (NaNs ignored, as fmaxf does) /
/// 448 in float32, or 1 when that is 0.
float fp8RowScale(std::span<const float> x);

/// q = e4m3(x / scale) with scale = fp8RowScale(x); returns the scale.
float quantizeActivationRowFp8(std::span<const float> x, std::span<uint8_t> q);

/// Replaces each x of `row` by e4m3(x / scale) * scale and returns scale.
float roundTripRowFp8(std::span<float> row);

} // namespace sol::quant

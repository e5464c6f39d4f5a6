//===- MoeQuantExperts.h - random int8 / fp8 / int4 experts for tests -----===//
//
// The MoE emulation tests' sol-quantize experts: random codes with their
// scales (and int4's zero points) in the layouts of Plan.fbs's ExpertFormat
// Int8, Fp8 and Int4, and each weight's value computed independently of the
// kernels' decoders, in double (E4M3 by runtime/support/Fp8.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Fp8.h"

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace sol::test {

/// A row-major [rows, cols] expert matrix: int8 or fp8 codes with an f32
/// scale a row, or int4 codes (two a byte, the low nibble first) with an f32
/// scale and a u8 zero point a group of `group` inputs.
struct QuantExperts {
  int format = 0; // MoeDecode.cuh's kMoeInt8, kMoeFp8 or kMoeInt4
  int cols = 0, group = 0;
  std::vector<unsigned char> codes, zeros;
  std::vector<float> scales;

  static constexpr int kInt8 = 2, kFp8 = 3, kInt4 = 4;

  double at(long long row, int col) const {
    if (format == kInt8)
      return static_cast<signed char>(codes[row * cols + col]) *
             static_cast<double>(scales[row]);
    if (format == kFp8)
      return sol::e4m3ToFloat(codes[row * cols + col]) *
             static_cast<double>(scales[row]);
    const unsigned byte = codes[row * (cols / 2) + col / 2];
    const int code = static_cast<int>(col % 2 ? byte >> 4 : byte & 15u);
    const long long g = row * (cols / group) + col / group;
    return (code - zeros[g]) * static_cast<double>(scales[g]);
  }
};

/// Random codes of every value the format has (fp8 without NaN) and scales
/// that put the weights within about `scale`.
inline QuantExperts randomQuantExperts(std::mt19937 &rng, int format,
                                       long long rows, int cols, int group,
                                       float scale) {
  QuantExperts m;
  m.format = format;
  m.cols = cols;
  m.group = group;
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15);
  std::uniform_real_distribution<float> spread(0.5f, 1.5f);
  const bool int4 = format == QuantExperts::kInt4;
  m.codes.resize(int4 ? count / 2 : count);
  for (unsigned char &b : m.codes) {
    b = static_cast<unsigned char>(byte(rng));
    if (format == QuantExperts::kFp8 && (b & 0x7f) == 0x7f)
      b ^= 1; // NaN to 448's neighbour
  }
  const float largest = format == QuantExperts::kInt8  ? 127.0f
                        : format == QuantExperts::kFp8 ? 448.0f
                                                       : 8.0f;
  m.scales.resize(int4 ? count / group : static_cast<std::size_t>(rows));
  for (float &s : m.scales)
    s = scale / largest * spread(rng);
  if (int4) {
    m.zeros.resize(count / group);
    for (unsigned char &z : m.zeros)
      z = static_cast<unsigned char>(nibble(rng));
  }
  return m;
}

} // namespace sol::test

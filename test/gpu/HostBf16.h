//===- HostBf16.h - bf16 on the host, rounded like the GPU ------*- C++ -*-===//
#pragma once

#include <bit>
#include <cstdint>

namespace sol::check {

using Bf16 = std::uint16_t;

inline float bf16ToFloat(Bf16 v) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(v) << 16);
}

/// Round-to-nearest-even, as __float2bfloat16_rn and PyTorch do.
inline Bf16 floatToBf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a (quiet) NaN
    return static_cast<Bf16>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<Bf16>(u >> 16);
}

inline float roundBf16(float f) { return bf16ToFloat(floatToBf16(f)); }

/// The pattern outputs are poisoned with: a NaN no kernel computes (the GPU's
/// canonical bf16 NaN is 0x7fff).
constexpr Bf16 kPoisonBf16 = 0xffff;
constexpr std::uint32_t kPoisonWord = 0xffffffffu;

} // namespace sol::check

//===- Fp8.cpp - Host fp8 E4M3 rounding -----------------------------------===//

#include "runtime/support/Fp8.h"

#include <cmath>

namespace sol {

uint8_t floatToE4M3(float x) {
  if (std::isnan(x))
    return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= kE4M3Max)
    return sign | 0x7E; // saturate: 448 = 1.110b x 2^8
  if (a < 0x1p-6) {
    // Subnormal: m x 2^-9, m in [0, 8]; m = 8 is the smallest normal,
    // whose bits (exponent 1, mantissa 0) are 8 as well.
    const double m = std::nearbyint(a * 0x1p9); // ties to even
    return sign | static_cast<uint8_t>(m);
  }
  int e = 0;
  std::frexp(a, &e);    // a = f x 2^e, f in [0.5, 1)
  int exponent = e - 1; // a in [2^exponent, 2^(exponent + 1)), -6..8
  double mantissa = std::nearbyint(std::ldexp(a, 3 - exponent)); // 8..16
  if (mantissa == 16.0) {
    mantissa = 8.0;
    ++exponent;
  }
  // a < 448 keeps this at most 448 (exponent 8, mantissa 6): never NaN.
  return sign | static_cast<uint8_t>(((exponent + 7) << 3) |
                                     (static_cast<int>(mantissa) - 8));
}

float e4m3ToFloat(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  float value;
  if (exponent == 0xF && mantissa == 0x7)
    value = NAN;
  else if (exponent == 0)
    value = std::ldexp(static_cast<float>(mantissa), -9);
  else
    value = std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return (bits & 0x80) ? -value : value;
}

} // namespace sol

//===- PyNumber.cpp - Python int and float text forms ---------------------===//

#include "runtime/chat/PyNumber.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace sol::jinja {

std::string floatRepr(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, in scientific form: d[.ddd]e[+-]XX.
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value,
                              std::chars_format::scientific);
  std::string sci(buffer, result.ptr);
  bool negative = sci[0] == '-';
  if (negative)
    sci.erase(0, 1);
  size_t ePos = sci.find('e');
  std::string digits = sci.substr(0, ePos);
  int exponent = std::atoi(sci.c_str() + ePos + 1);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());

  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char expBuffer[16];
    auto expResult = std::to_chars(expBuffer, expBuffer + sizeof expBuffer,
                                   exponent < 0 ? -exponent : exponent);
    out += exponent < 0 ? "e-" : "e+";
    std::string expText(expBuffer, expResult.ptr);
    if (expText.size() < 2)
      expText.insert(0, "0");
    out += expText;
    return out;
  }
  if (exponent < 0) {
    out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    return out;
  }
  size_t intDigits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= intDigits) {
    out += digits + std::string(intDigits - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, intDigits) + "." + digits.substr(intDigits);
  }
  return out;
}

std::string floatJson(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value < 0 ? "-Infinity" : "Infinity";
  return floatRepr(value);
}

std::string integerToString(Integer value) {
  if (value == 0)
    return "0";
  bool negative = value < 0;
  // Work on the negative magnitude so the most negative value is safe.
  Integer v = negative ? value : -value;
  std::string out;
  while (v != 0) {
    out.push_back(static_cast<char>('0' - static_cast<int>(v % 10)));
    v /= 10;
  }
  if (negative)
    out.push_back('-');
  return std::string(out.rbegin(), out.rend());
}

} // namespace sol::jinja

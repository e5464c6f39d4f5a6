//===- PyNumber.h - Python int and float text forms -------------*- C++ -*-===//
//
// Templates print numbers with Python's str() and tojson prints them with
// json.dumps; both use repr(float): the shortest digits that round-trip,
// in fixed notation for 1e-4 <= |x| < 1e16 and scientific otherwise.
// Integers are 128-bit so every JSON integer (up to 2^64 - 1) is exact.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace sol::jinja {

using Integer = __int128;

/// repr(float) of CPython ("1.0", "1e-05", "1.5e+16", "inf", "nan").
std::string floatRepr(double value);

/// json.dumps of a float: like repr but "Infinity", "-Infinity", "NaN".
std::string floatJson(double value);

/// Decimal text of an integer.
std::string integerToString(Integer value);

} // namespace sol::jinja

//===- LengthRange.h - "N" or "A:B" length flags of the tools ---*- C++ -*-===//
//
// `solrun --bench` and `solbench` take prompt and output lengths as a fixed
// N or a range A:B (`--input-len`, `--random-input-len`, ...), parsed the
// same way with the same messages.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace sol {

/// An inclusive range of lengths; lo == hi for a fixed length.
struct LengthRange {
  int32_t lo = 0, hi = 0;
};

/// "N" or "A:B" (1 <= A <= B) for the flag `flag`; throws sol::Error naming
/// the flag.
LengthRange parseLengthRange(const std::string &flag, const std::string &text);

} // namespace sol

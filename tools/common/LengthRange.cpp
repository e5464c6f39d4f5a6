//===- LengthRange.cpp - "N" or "A:B" length flags of the tools -----------===//
#include "tools/common/LengthRange.h"

#include "runtime/support/Error.h"

#include <climits>
#include <exception>

namespace sol {

namespace {

int32_t parseCount(const std::string &flag, const std::string &text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < 1 || v > INT32_MAX)
    fail(flag, ": '", text, "' is not a positive integer");
  return static_cast<int32_t>(v);
}

} // namespace

LengthRange parseLengthRange(const std::string &flag, const std::string &text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    const int32_t n = parseCount(flag, text);
    return {n, n};
  }
  const LengthRange r{parseCount(flag, text.substr(0, colon)),
                      parseCount(flag, text.substr(colon + 1))};
  if (r.lo > r.hi)
    fail(flag, ": the range '", text, "' is empty (expected A:B with A <= B)");
  return r;
}

} // namespace sol

//===- StringMap.h - Hash maps keyed by string, found by view ---*- C++ -*-===//
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sol {

/// Lets unordered maps with std::string keys be searched with a
/// std::string_view, without building a temporary string.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>{}(s);
  }
};

template <typename Value>
using StringMap =
    std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

} // namespace sol

//===- JsonFields.h - Typed, checked reads of JSON config fields -*- C++
//-*-===//
//
// Internal to frontend/hf: config.json and generation_config.json are read
// through this so every wrong field produces the same kind of message,
// naming the file, the field and what was expected.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sol::hf::detail {

/// Parses `text` as a JSON object; `source` names it in errors.
nlohmann::json parseJsonObject(std::string_view text, std::string_view source);

/// The whole file as a string; sol::Error naming the path on failure.
std::string readTextFile(const std::filesystem::path &path);

/// Reads fields of one JSON object. A field that is absent or null reads as
/// std::nullopt; one of the wrong type is an error naming it as
/// "<source>: field \"<prefix><key>\" ...".
class JsonFields {
public:
  JsonFields(const nlohmann::json &object, std::string source,
             std::string prefix = "")
      : object_(object), source_(std::move(source)),
        prefix_(std::move(prefix)) {}

  /// True when `key` is present, even with a null value.
  bool contains(std::string_view key) const;
  /// True when `key` is present and not null.
  bool has(std::string_view key) const;
  const nlohmann::json &at(std::string_view key) const;

  std::optional<int64_t> optInt(std::string_view key) const;
  std::optional<double> optNumber(std::string_view key) const;
  std::optional<bool> optBool(std::string_view key) const;
  std::optional<std::string> optString(std::string_view key) const;
  /// An int or a list of ints (token ids); empty when absent or null.
  std::optional<std::vector<int64_t>> optIntOrList(std::string_view key) const;

  int64_t requireInt(std::string_view key) const;
  double requireNumber(std::string_view key) const;

  /// "<source>: field \"<prefix><key>\" " - the start of every message.
  std::string where(std::string_view key) const;
  const std::string &source() const { return source_; }
  const std::string &prefix() const { return prefix_; }

private:
  const nlohmann::json &object_;
  std::string source_;
  std::string prefix_;
};

} // namespace sol::hf::detail

//===- JsonFields.cpp - Typed, checked reads of JSON config fields --------===//

#include "frontend/hf/JsonFields.h"

#include "runtime/support/Error.h"
#include "runtime/support/MappedFile.h"

#include <cmath>
#include <limits>

namespace sol::hf::detail {

using Json = nlohmann::json;

Json parseJsonObject(std::string_view text, std::string_view source) {
  Json json;
  try {
    json = Json::parse(text.begin(), text.end());
  } catch (const Json::exception &e) {
    fail(source, ": not valid JSON (", e.what(), ")");
  }
  if (!json.is_object())
    fail(source, ": must be a JSON object, found ", json.type_name());
  return json;
}

std::string readTextFile(const std::filesystem::path &path) {
  MappedFile file = MappedFile::open(path);
  return std::string(reinterpret_cast<const char *>(file.bytes().data()),
                     file.size());
}

std::string JsonFields::where(std::string_view key) const {
  return cat(source_, ": field \"", prefix_, key, "\" ");
}

bool JsonFields::contains(std::string_view key) const {
  return object_.find(key) != object_.end();
}

bool JsonFields::has(std::string_view key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const Json &JsonFields::at(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end())
    fail(where(key), "is missing");
  return *it;
}

std::optional<int64_t> JsonFields::optInt(std::string_view key) const {
  if (!has(key))
    return std::nullopt;
  const Json &value = at(key);
  if (value.is_number_integer() && !value.is_number_unsigned())
    return value.get<int64_t>();
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(value.get<uint64_t>());
  // Accept 8192.0: Python writes an int-valued float when a config was built
  // by arithmetic, and transformers reads it the same.
  if (value.is_number_float()) {
    double number = value.get<double>();
    if (std::isfinite(number) && number == std::floor(number) &&
        std::fabs(number) < 9.0e15)
      return static_cast<int64_t>(number);
  }
  fail(where(key), "must be an integer, got ", value.dump());
}

std::optional<double> JsonFields::optNumber(std::string_view key) const {
  if (!has(key))
    return std::nullopt;
  const Json &value = at(key);
  if (!value.is_number())
    fail(where(key), "must be a number, got ", value.dump());
  return value.get<double>();
}

std::optional<bool> JsonFields::optBool(std::string_view key) const {
  if (!has(key))
    return std::nullopt;
  const Json &value = at(key);
  if (!value.is_boolean())
    fail(where(key), "must be true or false, got ", value.dump());
  return value.get<bool>();
}

std::optional<std::string> JsonFields::optString(std::string_view key) const {
  if (!has(key))
    return std::nullopt;
  const Json &value = at(key);
  if (!value.is_string())
    fail(where(key), "must be a string, got ", value.dump());
  return value.get<std::string>();
}

std::optional<std::vector<int64_t>>
JsonFields::optIntOrList(std::string_view key) const {
  if (!has(key))
    return std::nullopt;
  const Json &value = at(key);
  std::vector<int64_t> ids;
  auto take = [&](const Json &item) {
    if (!item.is_number_integer())
      fail(where(key), "must be an integer or a list of integers, got ",
           value.dump());
    if (item.is_number_unsigned() &&
        item.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(where(key), "has an id too large: ", item.dump());
    ids.push_back(item.get<int64_t>());
  };
  if (value.is_array())
    for (const Json &item : value)
      take(item);
  else
    take(value);
  return ids;
}

int64_t JsonFields::requireInt(std::string_view key) const {
  if (!has(key))
    fail(where(key), "is missing (or null); it is required");
  return *optInt(key);
}

double JsonFields::requireNumber(std::string_view key) const {
  if (!has(key))
    fail(where(key), "is missing (or null); it is required");
  return *optNumber(key);
}

} // namespace sol::hf::detail

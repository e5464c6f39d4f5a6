//===- Safetensors.cpp - The one safetensors reader of Sol ----------------===//

#include "frontend/hf/Safetensors.h"

#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

namespace sol::hf {
namespace {

using Json = nlohmann::json;

std::string formatShape(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

/// A JSON value as a non-negative integer that fits uint64_t, if it is one.
std::optional<uint64_t> asUnsigned(const Json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

/// Reads the header's JSON text, rejecting a key that occurs twice at the top
/// level (nlohmann keeps the last one silently, which would hide a tensor)
/// and nesting deeper than any valid header needs (a crafted header of
/// millions of '[' would otherwise cost gigabytes before validation).
Json parseHeaderJson(std::string_view text, const std::string &file) {
  constexpr int kMaxDepth = 8;
  std::set<std::string, std::less<>> seen;
  std::string duplicate;
  auto onEvent = [&](int depth, Json::parse_event_t event, Json &parsed) {
    if ((event == Json::parse_event_t::object_start ||
         event == Json::parse_event_t::array_start) &&
        depth > kMaxDepth)
      fail(file, ": the safetensors header nests JSON deeper than ", kMaxDepth,
           " levels; the file is corrupt");
    if (event == Json::parse_event_t::key && depth == 1 && duplicate.empty() &&
        !seen.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  Json header;
  try {
    header = Json::parse(text.begin(), text.end(), onEvent);
  } catch (const Json::exception &e) {
    fail(file, ": the safetensors header is not valid JSON (", e.what(),
         "); the file is corrupt or not a safetensors file");
  }
  if (!duplicate.empty())
    fail(file, ": the safetensors header lists '", duplicate, "' twice");
  return header;
}

} // namespace

int64_t TensorView::numElements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<>());
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path &path) {
  SafetensorsFile file(MappedFile::open(path));
  file.parseHeader();
  return file;
}

const TensorView *SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const TensorView &t, std::string_view key) { return t.name < key; });
  if (it == tensors_.end() || it->name != name)
    return nullptr;
  return &*it;
}

void SafetensorsFile::parseHeader() {
  const std::string file = path().string();
  std::span<const std::byte> bytes = file_.bytes();
  if (bytes.size() < 8)
    fail(file, ": file is ", bytes.size(),
         " bytes, too short for a safetensors file (it starts with an 8-byte "
         "header length)");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i) // little-endian on every host
    headerSize = (headerSize << 8) | std::to_integer<uint64_t>(bytes[i]);
  if (headerSize > kMaxHeaderBytes)
    fail(file, ": safetensors header length is ", headerSize,
         " bytes, more than the ", kMaxHeaderBytes,
         "-byte limit; the file is corrupt or not a safetensors file");
  if (headerSize > bytes.size() - 8)
    fail(file, ": safetensors header length is ", headerSize,
         " bytes but only ", bytes.size() - 8,
         " bytes follow the length field; the file is truncated");
  dataOffset_ = 8 + headerSize;
  std::span<const std::byte> data = bytes.subspan(dataOffset_);

  std::string_view text(reinterpret_cast<const char *>(bytes.data() + 8),
                        headerSize);
  Json header = parseHeaderJson(text, file);
  if (!header.is_object())
    fail(file, ": the safetensors header must be a JSON object, found ",
         header.type_name());

  struct Range {
    uint64_t begin, end;
    size_t tensor;
  };
  std::vector<Range> ranges;
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (entry.is_null())
        continue;
      if (!entry.is_object())
        fail(file, ": '__metadata__' must be an object of strings, found ",
             entry.type_name());
      for (auto &[key, value] : entry.items()) {
        if (!value.is_string())
          fail(file, ": '__metadata__' entry '", key,
               "' must be a string, found ", value.type_name());
        metadata_.emplace(key, value.get<std::string>());
      }
      continue;
    }
    auto where = [&] { return cat(file, ": tensor '", name, "' "); };
    if (!entry.is_object())
      fail(where(),
           "must be an object with dtype, shape and data_offsets, "
           "found ",
           entry.type_name());

    TensorView view;
    view.name = name;
    auto dtype = entry.find("dtype");
    if (dtype == entry.end() || !dtype->is_string())
      fail(where(), "has no \"dtype\" string");
    std::optional<DType> type =
        parseSafetensorsDType(dtype->get<std::string>());
    if (!type)
      fail(where(), "has unknown dtype '", dtype->get<std::string>(),
           "' (supported: ", safetensorsDTypeList(), ")");
    view.dtype = *type;

    auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array())
      fail(where(), "has no \"shape\" array");
    uint64_t elements = 1;
    bool overflow = false;
    for (const Json &dim : *shape) {
      std::optional<uint64_t> size = asUnsigned(dim);
      if (!size || *size > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(where(), "has shape ", shape->dump(),
             ": dimensions must be non-negative integers");
      view.shape.push_back(static_cast<int64_t>(*size));
      overflow = overflow || (*size != 0 && elements > UINT64_MAX / *size);
      elements = overflow ? 0 : elements * *size;
    }
    // A zero dimension makes the tensor empty however large the others are.
    if (std::find(view.shape.begin(), view.shape.end(), 0) != view.shape.end())
      overflow = false, elements = 0;
    std::optional<uint64_t> needed =
        overflow ? std::nullopt : dtypeStorageBytes(view.dtype, elements);
    if (!needed || *needed > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(where(), "has shape ", formatShape(view.shape), " x ", view.dtype,
           ", too many bytes to address");

    auto offsets = entry.find("data_offsets");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
      fail(where(), "has no \"data_offsets\" [begin, end] pair");
    std::optional<uint64_t> begin = asUnsigned((*offsets)[0]);
    std::optional<uint64_t> end = asUnsigned((*offsets)[1]);
    if (!begin || !end)
      fail(where(), "has data_offsets ", offsets->dump(),
           ": offsets must be non-negative integers");
    if (*begin > *end)
      fail(where(), "has data_offsets [", *begin, ", ", *end,
           "]: begin is after end");
    if (*end - *begin != *needed)
      fail(where(), "has data_offsets [", *begin, ", ", *end, "] but shape ",
           formatShape(view.shape), " x ", view.dtype, " needs ", *needed,
           " bytes");
    if (*end > data.size())
      fail(where(), "has data_offsets [", *begin, ", ", *end,
           "] but the data region is only ", data.size(),
           " bytes; the file is truncated or the header is wrong");
    view.bytes = data.subspan(*begin, *end - *begin);
    ranges.push_back({*begin, *end, tensors_.size()});
    tensors_.push_back(std::move(view));
  }

  // Sorted by start, each tensor must begin at or after the furthest end
  // seen so far; equal starts are ordered by end so empty tensors come first.
  std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Range *furthest = nullptr;
  for (const Range &range : ranges) {
    if (furthest && range.begin < furthest->end) {
      const TensorView &a = tensors_[furthest->tensor];
      const TensorView &b = tensors_[range.tensor];
      fail(file, ": tensors '", a.name, "' [", furthest->begin, ", ",
           furthest->end, ") and '", b.name, "' [", range.begin, ", ",
           range.end, ") overlap in the data region");
    }
    if (!furthest || range.end > furthest->end)
      furthest = &range;
  }

  std::sort(
      tensors_.begin(), tensors_.end(),
      [](const TensorView &a, const TensorView &b) { return a.name < b.name; });
}

} // namespace sol::hf

//===- SafetensorsWriter.h - Builds safetensors files for tests -*- C++ -*-===//
//
// Tests build their inputs, valid and deliberately broken, byte by byte, so
// each malformed case is visible in the test that checks its message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sol::hf::test {

/// One header entry, written exactly as given (no validation).
struct HeaderEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// The JSON header text for `entries` (+ `__metadata__` when not empty).
std::string headerJson(const std::vector<HeaderEntry> &entries,
                       const std::map<std::string, std::string> &metadata = {});

/// 8-byte little-endian `declaredHeaderSize`, the header text, the data.
std::string safetensorsBytes(std::string_view header, std::string_view data,
                             uint64_t declaredHeaderSize);
/// As above with the header's real size.
std::string safetensorsBytes(std::string_view header, std::string_view data);

/// A tensor with contents; offsets are assigned in order.
struct TensorData {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// A valid safetensors file holding `tensors` back to back.
std::string
validSafetensors(const std::vector<TensorData> &tensors,
                 const std::map<std::string, std::string> &metadata = {});

/// `count` bytes of BF16 values 0, 1, 2, ... (little-endian), for checks
/// that the reader points at the right bytes.
std::string bf16Sequence(int count);

void writeFile(const std::filesystem::path &path, std::string_view bytes);

/// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
public:
  TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir();
  const std::filesystem::path &path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const {
    return path_ / name;
  }

private:
  std::filesystem::path path_;
};

} // namespace sol::hf::test

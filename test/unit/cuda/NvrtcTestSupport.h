//===- NvrtcTestSupport.h - Shared helpers of the NVRTC tests ---*- C++ -*-===//
#pragma once

#include "codegen/nvrtc/NvrtcCompiler.h"

#include <filesystem>
#include <optional>
#include <string>
#include <unistd.h>

namespace sol::test {

/// A compiler, or nullopt with `reason` set when NVRTC or the CUDA headers
/// are not installed (the tests then skip; CI has CUDA at /usr/local/cuda).
inline std::optional<nvrtc::NvrtcCompiler>
makeCompiler(nvrtc::NvrtcOptions options, std::string &reason) {
  try {
    return nvrtc::NvrtcCompiler(std::move(options));
  } catch (const std::exception &e) {
    reason = e.what();
    return std::nullopt;
  }
}

/// A fresh, empty directory removed when the object dies.
class TempDir {
public:
  explicit TempDir(const std::string &stem) {
    path_ = std::filesystem::temp_directory_path() /
            (stem + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter()++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path &path() const { return path_; }

private:
  static int &counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

} // namespace sol::test

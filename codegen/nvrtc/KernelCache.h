//===- KernelCache.h - On-disk cache of compiled kernels --------*- C++ -*-===//
//
// Recompiling a model should not recompile its kernels: entries are keyed by a
// 128-bit hash of the source, headers, name expressions, options and NVRTC
// version, and written atomically (temporary file + rename) so concurrent
// compilers never see half an entry. A damaged entry reads as a miss.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/nvrtc/NvrtcCompiler.h"

#include <filesystem>
#include <optional>
#include <string>

namespace sol::nvrtc {

/// 32 hex digits identifying what a compilation depends on.
std::string kernelCacheKey(const KernelSource &source,
                           const std::vector<std::string> &baseOptions,
                           const std::string &nvrtcVersion);

/// $SOL_CACHE_DIR, else $HOME/.cache/sol/kernels (empty path if neither).
std::filesystem::path defaultKernelCacheDir();

class KernelCache {
public:
  explicit KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// The entry for `key` if present, complete and covering every name
  /// expression of `source`.
  std::optional<CompiledKernels> load(const std::string &key,
                                      const KernelSource &source) const;
  /// Best effort: a failure to write leaves the cache without the entry.
  void store(const std::string &key, const CompiledKernels &kernels) const;

  std::filesystem::path entryPath(const std::string &key) const;

private:
  std::filesystem::path dir_;
};

} // namespace sol::nvrtc

//===- NvrtcLibrary.h - libnvrtc loaded at run time -------------*- C++ -*-===//
//
// solc must run (for --emit=mlir, tests, CPU-only work) on machines without
// CUDA, so NVRTC is opened with dlopen on first use instead of being linked.
// The entry points are declared here rather than taken from nvrtc.h, so this
// library builds without the CUDA toolkit too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sol::nvrtc {

/// NVRTC's C ABI: nvrtcResult is an int enum, nvrtcProgram an opaque pointer.
using NvrtcResult = int;
using NvrtcProgram = struct NvrtcProgramOpaque *;
constexpr NvrtcResult kNvrtcSuccess = 0;

struct NvrtcLibrary {
  NvrtcResult (*version)(int *major, int *minor);
  const char *(*getErrorString)(NvrtcResult result);
  NvrtcResult (*createProgram)(NvrtcProgram *program, const char *source,
                               const char *name, int numHeaders,
                               const char *const *headers,
                               const char *const *includeNames);
  NvrtcResult (*destroyProgram)(NvrtcProgram *program);
  NvrtcResult (*compileProgram)(NvrtcProgram program, int numOptions,
                                const char *const *options);
  NvrtcResult (*getPTXSize)(NvrtcProgram program, std::size_t *size);
  NvrtcResult (*getPTX)(NvrtcProgram program, char *ptx);
  NvrtcResult (*getCUBINSize)(NvrtcProgram program, std::size_t *size);
  NvrtcResult (*getCUBIN)(NvrtcProgram program, char *cubin);
  NvrtcResult (*getProgramLogSize)(NvrtcProgram program, std::size_t *size);
  NvrtcResult (*getProgramLog)(NvrtcProgram program, char *log);
  NvrtcResult (*addNameExpression)(NvrtcProgram program,
                                   const char *nameExpression);
  NvrtcResult (*getLoweredName)(NvrtcProgram program,
                                const char *nameExpression,
                                const char **loweredName);

  /// Where the library was loaded from, and its version as "major.minor".
  std::string path;
  std::string versionString;
};

/// Loads libnvrtc once per process and returns its entry points. Searches
/// $SOL_NVRTC_LIBRARY alone when set; otherwise $CUDA_HOME/lib64,
/// /usr/local/cuda/lib64, then the default library search path, for
/// libnvrtc.so.13 and libnvrtc.so. Throws sol::Error naming every place it
/// tried when none loads.
const NvrtcLibrary &loadNvrtc();

/// Loads the first of `paths` that works, without caching (loadNvrtc's
/// search, exposed for tests). Throws sol::Error listing every path tried.
NvrtcLibrary loadNvrtcFrom(const std::vector<std::string> &paths);

/// Throws sol::Error "<what> failed: <NVRTC error string>" unless `result` is
/// success.
void checkNvrtc(const NvrtcLibrary &library, NvrtcResult result,
                const char *what);

} // namespace sol::nvrtc

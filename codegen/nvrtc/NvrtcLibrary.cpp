//===- NvrtcLibrary.cpp - libnvrtc loaded at run time ---------------------===//

#include "codegen/nvrtc/NvrtcLibrary.h"

#include "runtime/support/Error.h"

#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <vector>

namespace sol::nvrtc {
namespace {

std::vector<std::string> candidatePaths() {
  if (const char *explicitPath = std::getenv("SOL_NVRTC_LIBRARY"))
    return {explicitPath};
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so"};
  std::vector<std::string> dirs;
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    dirs.push_back(std::string(cudaHome) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  dirs.push_back(""); // the dynamic linker's own search path
  std::vector<std::string> paths;
  for (const std::string &dir : dirs)
    for (const char *name : names)
      paths.push_back(dir + name);
  return paths;
}

template <typename Fn>
void resolve(void *handle, const std::string &path, Fn &fn, const char *name) {
  void *symbol = dlsym(handle, name);
  if (symbol == nullptr)
    fail("NVRTC library ", path, " has no symbol ", name,
         "; it is not a usable libnvrtc (CUDA 12 or newer is needed)");
  fn = reinterpret_cast<Fn>(symbol);
}

} // namespace

NvrtcLibrary loadNvrtcFrom(const std::vector<std::string> &paths) {
  std::string tried;
  for (const std::string &path : paths) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char *why = dlerror();
      tried += cat("\n  ", path, ": ", why ? why : "not loadable");
      continue;
    }
    NvrtcLibrary lib{};
    lib.path = path;
    resolve(handle, path, lib.version, "nvrtcVersion");
    resolve(handle, path, lib.getErrorString, "nvrtcGetErrorString");
    resolve(handle, path, lib.createProgram, "nvrtcCreateProgram");
    resolve(handle, path, lib.destroyProgram, "nvrtcDestroyProgram");
    resolve(handle, path, lib.compileProgram, "nvrtcCompileProgram");
    resolve(handle, path, lib.getPTXSize, "nvrtcGetPTXSize");
    resolve(handle, path, lib.getPTX, "nvrtcGetPTX");
    resolve(handle, path, lib.getCUBINSize, "nvrtcGetCUBINSize");
    resolve(handle, path, lib.getCUBIN, "nvrtcGetCUBIN");
    resolve(handle, path, lib.getProgramLogSize, "nvrtcGetProgramLogSize");
    resolve(handle, path, lib.getProgramLog, "nvrtcGetProgramLog");
    resolve(handle, path, lib.addNameExpression, "nvrtcAddNameExpression");
    resolve(handle, path, lib.getLoweredName, "nvrtcGetLoweredName");
    int major = 0, minor = 0;
    checkNvrtc(lib, lib.version(&major, &minor), "nvrtcVersion");
    lib.versionString = cat(major, '.', minor);
    // The handle stays open for the life of the process.
    return lib;
  }
  fail("cannot load NVRTC (the CUDA runtime compiler), needed to compile "
       "kernels. Install the CUDA toolkit, set CUDA_HOME to it, or point "
       "SOL_NVRTC_LIBRARY at libnvrtc.so. Tried:",
       tried);
}

const NvrtcLibrary &loadNvrtc() {
  // Retried after a failure, so a later call can succeed once fixed (tests
  // change SOL_NVRTC_LIBRARY); never reloaded after a success.
  static std::mutex mutex;
  static std::unique_ptr<NvrtcLibrary> loaded;
  std::lock_guard lock(mutex);
  if (!loaded)
    loaded = std::make_unique<NvrtcLibrary>(loadNvrtcFrom(candidatePaths()));
  return *loaded;
}

void checkNvrtc(const NvrtcLibrary &library, NvrtcResult result,
                const char *what) {
  if (result == kNvrtcSuccess)
    return;
  const char *text =
      library.getErrorString ? library.getErrorString(result) : nullptr;
  fail(what, " failed: ", text ? text : "unknown NVRTC error", " (code ",
       result, ")");
}

} // namespace sol::nvrtc

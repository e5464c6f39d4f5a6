//===- NvrtcCompiler.h - Compile CUDA C++ kernels with NVRTC ----*- C++ -*-===//
//
// The one path from kernel source to GPU code in Sol: solc compiles the
// instantiations a model needs through it, and sol-kernel-check uses it too.
// Each KernelSource becomes one cubin for the target (sm_90 by default) plus
// its PTX, which the runtime JIT-compiles on GPUs the cubin does not fit.
// Results are cached on disk by a hash of everything that affects them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace sol::nvrtc {

/// A header the source may #include by `name` (e.g. "RmsNorm.cuh").
struct HeaderFile {
  std::string name;
  std::string text;
};

struct KernelSource {
  /// Names the program in NVRTC's messages and in errors ("layer0.cu").
  std::string name;
  /// The translation unit: usually #includes of kernel headers.
  std::string code;
  std::vector<HeaderFile> headers;
  /// Template instantiations to compile and look up, e.g.
  /// "sol::kernels::rms_norm<2048>".
  std::vector<std::string> nameExpressions;
  /// Extra NVRTC options (-D..., -lineinfo).
  std::vector<std::string> options;
  /// Compile for the architecture-specific target ("sm_90a" for "sm_90"):
  /// the source uses instructions only it has (wgmma). Its cubin and PTX
  /// then run on that architecture only.
  bool archSpecific = false;
};

struct CompiledKernels {
  std::vector<std::uint8_t> cubin;
  std::string ptx;
  /// nameExpression -> lowered (mangled) name for cuModuleGetFunction.
  std::map<std::string, std::string> loweredNames;
  /// NVRTC's log: warnings, and ptxas' register / spill report when
  /// NvrtcOptions::ptxasVerbose is set.
  std::string log;
  bool fromCache = false;
  /// The architecture of the cubin (NvrtcCompiler::archFor).
  std::string arch;
};

struct NvrtcOptions {
  /// Real architecture for the cubin; the PTX is for its virtual twin.
  std::string gpuArch = "sm_90";
  /// Directory holding cuda_bf16.h; empty: $CUDA_HOME/include, then
  /// /usr/local/cuda/include.
  std::filesystem::path cudaIncludeDir;
  bool useCache = true;
  /// Empty: $SOL_CACHE_DIR, else ~/.cache/sol/kernels.
  std::filesystem::path cacheDir;
  /// Threads for compileAll; 0: min(hardware threads, 8).
  unsigned threads = 0;
  /// Ask ptxas for its resource report (registers, spills) in the log.
  bool ptxasVerbose = false;
};

class NvrtcCompiler {
public:
  /// Loads NVRTC and finds the CUDA headers; throws sol::Error when either is
  /// missing or the options are invalid.
  explicit NvrtcCompiler(NvrtcOptions options = {});

  /// Compiles one source. Throws sol::Error with NVRTC's log on failure.
  CompiledKernels compile(const KernelSource &source) const;

  /// Compiles several sources on a small thread pool; results are in input
  /// order. Throws one sol::Error listing every failure.
  std::vector<CompiledKernels>
  compileAll(std::span<const KernelSource> sources) const;

  const std::string &nvrtcVersion() const { return version_; }
  const std::filesystem::path &cudaIncludeDir() const {
    return options_.cudaIncludeDir;
  }
  /// Empty when caching is off or the cache directory is unusable.
  const std::filesystem::path &cacheDir() const { return cacheDir_; }
  /// Why the cache is off although it was asked for; empty otherwise.
  const std::string &cacheProblem() const { return cacheProblem_; }
  /// The full NVRTC option list used for every source (before its own).
  const std::vector<std::string> &baseOptions() const { return baseOptions_; }
  /// The architecture `source` compiles for: the options' gpuArch, with an
  /// "a" when the source is archSpecific.
  std::string archFor(const KernelSource &source) const;

private:
  /// baseOptions() with archFor(source) as -arch.
  std::vector<std::string> optionsFor(const KernelSource &source) const;

  CompiledKernels compileUncached(const KernelSource &source) const;

  NvrtcOptions options_;
  std::string version_;
  std::vector<std::string> baseOptions_;
  std::filesystem::path cacheDir_;
  std::string cacheProblem_;
};

/// "compute_90" for "sm_90" / "sm_90a" (keeping the "a").
std::string virtualArchFor(const std::string &gpuArch);

} // namespace sol::nvrtc

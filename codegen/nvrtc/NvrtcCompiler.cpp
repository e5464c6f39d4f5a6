//===- NvrtcCompiler.cpp - Compile CUDA C++ kernels with NVRTC ------------===//

#include "codegen/nvrtc/NvrtcCompiler.h"

#include "codegen/nvrtc/KernelCache.h"
#include "codegen/nvrtc/NvrtcLibrary.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

namespace sol::nvrtc {
namespace {

std::filesystem::path findCudaIncludeDir(const std::filesystem::path &given) {
  auto hasHeaders = [](const std::filesystem::path &dir) {
    std::error_code ec;
    return std::filesystem::is_regular_file(dir / "cuda_bf16.h", ec);
  };
  if (!given.empty()) {
    if (!hasHeaders(given))
      fail("CUDA include directory ", given.string(),
           " has no cuda_bf16.h; point it at the include/ folder of a CUDA "
           "toolkit");
    return given;
  }
  std::vector<std::filesystem::path> candidates;
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    candidates.push_back(std::filesystem::path(cudaHome) / "include");
  candidates.push_back("/usr/local/cuda/include");
  std::string tried;
  for (const auto &dir : candidates) {
    if (hasHeaders(dir))
      return dir;
    tried += cat(" ", dir.string());
  }
  fail("cannot find the CUDA headers (cuda_bf16.h) that kernels include; "
       "looked in:",
       tried, ". Install the CUDA toolkit or set CUDA_HOME");
}

// Destroys the program on every path out of compileUncached.
class Program {
public:
  Program(const NvrtcLibrary &lib, const KernelSource &source) : lib_(lib) {
    std::vector<const char *> texts, names;
    for (const HeaderFile &header : source.headers) {
      texts.push_back(header.text.c_str());
      names.push_back(header.name.c_str());
    }
    const std::string programName =
        source.name.empty() ? std::string("sol_kernels.cu") : source.name;
    checkNvrtc(lib_,
               lib_.createProgram(
                   &program_, source.code.c_str(), programName.c_str(),
                   static_cast<int>(texts.size()), texts.data(), names.data()),
               "nvrtcCreateProgram");
  }
  ~Program() {
    if (program_ != nullptr)
      lib_.destroyProgram(&program_);
  }
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;
  NvrtcProgram get() const { return program_; }

private:
  const NvrtcLibrary &lib_;
  NvrtcProgram program_ = nullptr;
};

std::string programLog(const NvrtcLibrary &lib, NvrtcProgram program) {
  std::size_t size = 0;
  checkNvrtc(lib, lib.getProgramLogSize(program, &size),
             "nvrtcGetProgramLogSize");
  std::string log(size, '\0');
  if (size > 0)
    checkNvrtc(lib, lib.getProgramLog(program, log.data()),
               "nvrtcGetProgramLog");
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

} // namespace

std::string virtualArchFor(const std::string &gpuArch) {
  if (gpuArch.rfind("sm_", 0) != 0)
    fail("GPU architecture '", gpuArch, "' is not of the form sm_XY");
  return "compute_" + gpuArch.substr(3);
}

NvrtcCompiler::NvrtcCompiler(NvrtcOptions options)
    : options_(std::move(options)) {
  static const std::regex archPattern("sm_[0-9]{2,3}[a-z]?");
  if (!std::regex_match(options_.gpuArch, archPattern))
    fail("GPU architecture '", options_.gpuArch,
         "' is not valid; expected e.g. sm_90 or sm_90a");
  const NvrtcLibrary &lib = loadNvrtc();
  version_ = lib.versionString;
  options_.cudaIncludeDir = findCudaIncludeDir(options_.cudaIncludeDir);

  baseOptions_ = {"-arch=" + options_.gpuArch, "-std=c++17",
                  "--include-path=" + options_.cudaIncludeDir.string()};
  if (options_.ptxasVerbose)
    baseOptions_.push_back("-Xptxas=-v");

  if (options_.useCache) {
    std::filesystem::path dir =
        options_.cacheDir.empty() ? defaultKernelCacheDir() : options_.cacheDir;
    std::error_code ec;
    if (dir.empty()) {
      cacheProblem_ = "no cache directory: set SOL_CACHE_DIR or HOME";
    } else if (std::filesystem::create_directories(dir, ec), ec) {
      cacheProblem_ = cat("cannot create kernel cache directory ", dir.string(),
                          ": ", ec.message());
    } else {
      cacheDir_ = dir;
    }
  }
}

std::string NvrtcCompiler::archFor(const KernelSource &source) const {
  const std::string &arch = options_.gpuArch;
  return source.archSpecific && !arch.ends_with('a') ? arch + "a" : arch;
}

std::vector<std::string>
NvrtcCompiler::optionsFor(const KernelSource &source) const {
  std::vector<std::string> options = baseOptions_;
  options.front() = "-arch=" + archFor(source);
  return options;
}

CompiledKernels NvrtcCompiler::compile(const KernelSource &source) const {
  if (cacheDir_.empty())
    return compileUncached(source);
  const KernelCache cache(cacheDir_);
  const std::string key = kernelCacheKey(source, optionsFor(source), version_);
  if (std::optional<CompiledKernels> hit = cache.load(key, source)) {
    hit->arch = archFor(source);
    return std::move(*hit);
  }
  CompiledKernels kernels = compileUncached(source);
  cache.store(key, kernels);
  return kernels;
}

CompiledKernels
NvrtcCompiler::compileUncached(const KernelSource &source) const {
  const NvrtcLibrary &lib = loadNvrtc();
  const std::string label =
      cat("kernel source '",
          source.name.empty() ? "sol_kernels.cu" : source.name, "'");
  Program program(lib, source);
  for (const std::string &expr : source.nameExpressions)
    checkNvrtc(lib, lib.addNameExpression(program.get(), expr.c_str()),
               "nvrtcAddNameExpression");

  const std::vector<std::string> options = optionsFor(source);
  std::vector<const char *> optionPtrs;
  for (const std::string &option : options)
    optionPtrs.push_back(option.c_str());
  for (const std::string &option : source.options)
    optionPtrs.push_back(option.c_str());

  const NvrtcResult status = lib.compileProgram(
      program.get(), static_cast<int>(optionPtrs.size()), optionPtrs.data());
  CompiledKernels kernels;
  kernels.arch = archFor(source);
  kernels.log = programLog(lib, program.get());
  if (status != kNvrtcSuccess)
    fail("NVRTC could not compile ", label, " for ", kernels.arch, " (",
         lib.getErrorString(status), "):\n", kernels.log);

  std::size_t size = 0;
  checkNvrtc(lib, lib.getPTXSize(program.get(), &size), "nvrtcGetPTXSize");
  kernels.ptx.assign(size, '\0');
  checkNvrtc(lib, lib.getPTX(program.get(), kernels.ptx.data()), "nvrtcGetPTX");
  while (!kernels.ptx.empty() && kernels.ptx.back() == '\0')
    kernels.ptx.pop_back();

  checkNvrtc(lib, lib.getCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
  kernels.cubin.resize(size);
  checkNvrtc(lib,
             lib.getCUBIN(program.get(),
                          reinterpret_cast<char *>(kernels.cubin.data())),
             "nvrtcGetCUBIN");

  for (const std::string &expr : source.nameExpressions) {
    const char *lowered = nullptr;
    checkNvrtc(lib, lib.getLoweredName(program.get(), expr.c_str(), &lowered),
               "nvrtcGetLoweredName");
    if (lowered == nullptr)
      fail("NVRTC returned no lowered name for '", expr, "' in ", label);
    kernels.loweredNames.emplace(expr, lowered);
  }
  return kernels;
}

std::vector<CompiledKernels>
NvrtcCompiler::compileAll(std::span<const KernelSource> sources) const {
  std::vector<std::optional<CompiledKernels>> results(sources.size());
  std::vector<std::string> errors(sources.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < sources.size(); i = next++) {
      try {
        results[i] = compile(sources[i]);
      } catch (const std::exception &e) {
        errors[i] = e.what();
      }
    }
  };
  unsigned threads = options_.threads;
  if (threads == 0)
    threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  threads = static_cast<unsigned>(
      std::min<std::size_t>(threads, std::max<std::size_t>(sources.size(), 1)));
  {
    std::vector<std::jthread> pool;
    for (unsigned i = 1; i < threads; ++i)
      pool.emplace_back(worker);
    worker();
  }

  std::string report;
  std::size_t failures = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (errors[i].empty())
      continue;
    ++failures;
    report += cat("\n[", i, "] ", errors[i]);
  }
  if (failures > 0)
    fail("failed to compile ", failures, " of ", sources.size(),
         " kernel sources:", report);
  std::vector<CompiledKernels> out;
  out.reserve(sources.size());
  for (auto &result : results)
    out.push_back(std::move(*result));
  return out;
}

} // namespace sol::nvrtc

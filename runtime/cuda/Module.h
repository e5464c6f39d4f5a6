//===- Module.h - Loaded GPU code and its kernels ---------------*- C++ -*-===//
//
// A Module holds the code NVRTC produced for one KernelSource. It loads the
// cubin; when the driver rejects it (a GPU of another architecture) it
// JIT-compiles the PTX instead, so a plan built for sm_90 still runs on newer
// GPUs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/LaunchArgs.h"
#include "runtime/cuda/LaunchDims.h"

#include <cuda.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sol::cuda {

class Stream;

/// One __global__ function of a loaded module.
class Kernel {
public:
  Kernel(CUfunction function, std::string name)
      : function_(function), name_(std::move(name)) {}

  CUfunction handle() const { return function_; }
  const std::string &name() const { return name_; }

  /// Allows launches with more than 48 KB of dynamic shared memory.
  void setMaxDynamicSharedMemory(int bytes) const;
  int attribute(CUfunction_attribute attr) const;
  int registersPerThread() const {
    return attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
  }
  /// Local memory per thread: non-zero means spills or stack arrays.
  int localBytesPerThread() const {
    return attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  }
  int maxThreadsPerBlock() const {
    return attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  }

  /// Launches with `args`, one of the launch-args structs of
  /// codegen/kernels/LaunchArgs.h (no other type compiles), which must be
  /// the kernel's parameter: a kernel whose mangled name says it takes
  /// another struct is refused with sol::Error.
  template <typename Args>
  void launch(const LaunchDims &dims, const Stream &stream,
              const Args &args) const {
    constexpr std::string_view mangled =
        kernels::LaunchArgsName<Args>::kMangled.view();
    if (!takes(mangled))
      failArgs(mangled);
    void *params[] = {const_cast<Args *>(&args)};
    launchWithParams(dims, stream, params);
  }

  /// Whether the kernel's one parameter is the struct whose mangled name is
  /// `mangled` ("<length><name>E", LaunchArgsName): its lowered name ends
  /// with it.
  bool takes(std::string_view mangled) const {
    return std::string_view(name_).ends_with(mangled);
  }

private:
  [[noreturn]] void failArgs(std::string_view mangled) const;
  void launchWithParams(const LaunchDims &dims, const Stream &stream,
                        void **params) const;

  CUfunction function_;
  std::string name_;
};

class Module {
public:
  /// Loads `cubin`, falling back to `ptx` when the driver rejects the cubin
  /// (either may be empty, not both). `label` names the module in errors.
  Module(std::span<const std::uint8_t> cubin, std::string_view ptx,
         std::string label);
  ~Module();
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The kernel with this lowered (mangled) name; throws sol::Error if the
  /// module has none.
  Kernel kernel(const std::string &loweredName) const;
  bool loadedFromPtx() const { return fromPtx_; }
  const std::string &label() const { return label_; }
  CUmodule handle() const { return module_; }

private:
  void reset() noexcept;
  CUmodule module_ = nullptr;
  bool fromPtx_ = false;
  std::string label_;
};

} // namespace sol::cuda

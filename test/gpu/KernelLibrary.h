//===- KernelLibrary.h - Kernels compiled via NVRTC and loaded --*- C++ -*-===//
//
// Compiles the instances the checks need through the same path solc uses
// (buildKernelSources + NvrtcCompiler::compileAll) and loads them with the
// driver layer (Module, Kernel).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/nvrtc/NvrtcCompiler.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/cuda/Module.h"

#include <map>
#include <string>
#include <vector>

namespace sol::check {

/// What ptxas and the driver report for a kernel (-1: unknown).
struct KernelResources {
  int registers = -1;
  int localBytes = -1;
  int stackFrameBytes = -1;
  int spillStoreBytes = -1;
  int spillLoadBytes = -1;
};

class KernelLibrary {
public:
  explicit KernelLibrary(const nvrtc::NvrtcCompiler &compiler)
      : compiler_(compiler) {}

  void require(const cuda::KernelInstance &instance);
  /// Compiles and loads everything required so far.
  void build();
  /// Only compiles it (no GPU needed): NVRTC's errors, ptxas' reports, and
  /// a warm kernel cache for a later run.
  void compile();
  /// `compiledFor` as a name expression, with ptxas' report of each
  /// instance: (name expression, registers, report), after compile().
  struct CompiledInstance {
    std::string nameExpression;
    int registers = -1;
    KernelResources resources;
  };
  std::vector<CompiledInstance> compiledInstances() const;

  const cuda::Kernel &kernel(const cuda::KernelInstance &instance) const;
  const KernelResources &resources(const cuda::KernelInstance &instance) const;
  /// The NVRTC output that holds `instance` (for the PTX fallback check).
  const nvrtc::CompiledKernels &
  compiledFor(const cuda::KernelInstance &instance) const;

  /// Writes each source's cubin to `dir`/<source name>.cubin (for
  /// cuobjdump).
  void dumpCubins(const std::string &dir) const;

  double compileSeconds() const { return compileSeconds_; }
  std::size_t sourceCount() const { return sources_.size(); }
  std::size_t cachedSourceCount() const;
  std::size_t kernelCount() const { return kernels_.size(); }

private:
  struct Entry {
    std::size_t source;
    cuda::Kernel kernel;
    KernelResources resources;
  };
  const Entry &entry(const cuda::KernelInstance &instance) const;

  const nvrtc::NvrtcCompiler &compiler_;
  std::vector<cuda::KernelInstance> required_;
  std::vector<nvrtc::KernelSource> sources_;
  std::vector<nvrtc::CompiledKernels> compiled_;
  std::vector<cuda::Module> modules_;
  std::map<std::string, Entry> kernels_;
  double compileSeconds_ = 0.0;
};

/// ptxas' report for `loweredName` in an NVRTC log (fields it lacks stay -1).
KernelResources parsePtxasReport(const std::string &log,
                                 const std::string &loweredName);

} // namespace sol::check

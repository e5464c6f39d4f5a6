//===- KernelLibrary.cpp - Kernels compiled via NVRTC and loaded ----------===//

#include "KernelLibrary.h"

#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

namespace sol::check {

void KernelLibrary::require(const cuda::KernelInstance &instance) {
  if (std::find(required_.begin(), required_.end(), instance) ==
      required_.end())
    required_.push_back(instance);
}

void KernelLibrary::compile() {
  const auto start = std::chrono::steady_clock::now();
  sources_ = nvrtc::buildKernelSources(required_, 4);
  compiled_ = compiler_.compileAll(sources_);
  compileSeconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

std::vector<KernelLibrary::CompiledInstance>
KernelLibrary::compiledInstances() const {
  std::vector<CompiledInstance> out;
  for (std::size_t i = 0; i < sources_.size(); ++i)
    for (const std::string &expr : sources_[i].nameExpressions) {
      const std::string &lowered = compiled_[i].loweredNames.at(expr);
      CompiledInstance c{expr, -1, parsePtxasReport(compiled_[i].log, lowered)};
      // "Used N registers" follows the function's properties line.
      const std::size_t at =
          compiled_[i].log.find("Function properties for " + lowered);
      const std::size_t used =
          at == std::string::npos ? at : compiled_[i].log.find("Used ", at);
      if (used != std::string::npos)
        std::sscanf(compiled_[i].log.c_str() + used, "Used %d registers",
                    &c.registers);
      out.push_back(std::move(c));
    }
  return out;
}

void KernelLibrary::build() {
  compile();
  modules_.clear();
  kernels_.clear();
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    modules_.emplace_back(compiled_[i].cubin, compiled_[i].ptx,
                          sources_[i].name);
    for (const std::string &expr : sources_[i].nameExpressions) {
      const std::string &lowered = compiled_[i].loweredNames.at(expr);
      cuda::Kernel kernel = modules_.back().kernel(lowered);
      KernelResources res = parsePtxasReport(compiled_[i].log, lowered);
      res.registers = kernel.registersPerThread();
      res.localBytes = kernel.localBytesPerThread();
      kernels_.emplace(expr, Entry{i, kernel, res});
    }
  }
}

void KernelLibrary::dumpCubins(const std::string &dir) const {
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    const std::string path = dir + "/" + sources_[i].name + "bin";
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(compiled_[i].cubin.data()),
              static_cast<std::streamsize>(compiled_[i].cubin.size()));
    if (!out)
      fail("cannot write ", path);
  }
}

std::size_t KernelLibrary::cachedSourceCount() const {
  return static_cast<std::size_t>(
      std::count_if(compiled_.begin(), compiled_.end(),
                    [](const auto &c) { return c.fromCache; }));
}

const KernelLibrary::Entry &
KernelLibrary::entry(const cuda::KernelInstance &instance) const {
  auto it = kernels_.find(instance.nameExpression);
  if (it == kernels_.end())
    fail("kernel ", instance.nameExpression,
         " was not compiled: the check forgot to require() it");
  return it->second;
}

const cuda::Kernel &
KernelLibrary::kernel(const cuda::KernelInstance &instance) const {
  return entry(instance).kernel;
}

const KernelResources &
KernelLibrary::resources(const cuda::KernelInstance &instance) const {
  return entry(instance).resources;
}

const nvrtc::CompiledKernels &
KernelLibrary::compiledFor(const cuda::KernelInstance &instance) const {
  return compiled_[entry(instance).source];
}

KernelResources parsePtxasReport(const std::string &log,
                                 const std::string &loweredName) {
  KernelResources res;
  const std::string properties = "Function properties for " + loweredName;
  std::size_t at = log.find(properties);
  if (at != std::string::npos) {
    at = log.find('\n', at);
    if (at != std::string::npos) {
      const std::size_t end = log.find('\n', at + 1);
      const std::string line = log.substr(at + 1, end - at - 1);
      const std::size_t dot = line.find_first_of("0123456789");
      if (dot != std::string::npos)
        std::sscanf(line.c_str() + dot,
                    "%d bytes stack frame, %d bytes spill stores, %d bytes "
                    "spill loads",
                    &res.stackFrameBytes, &res.spillStoreBytes,
                    &res.spillLoadBytes);
    }
  }
  return res;
}

} // namespace sol::check

//===- KernelSourceBuilder.h - Kernel instances -> NVRTC sources -*- C++
//-*-===//
//
// Turns the instantiations a model needs into NVRTC translation units: one
// per kernel header (so a family compiles together and caches together),
// split into chunks of at most `maxPerSource` instances so compileAll keeps
// several threads busy. Every embedded kernel header is made available.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/nvrtc/NvrtcCompiler.h"
#include "runtime/cuda/KernelSpecs.h"

#include <span>
#include <vector>

namespace sol::nvrtc {

/// Sources for `instances` (duplicates compile once). Throws sol::Error if an
/// instance names a header that is not embedded.
std::vector<KernelSource>
buildKernelSources(std::span<const cuda::KernelInstance> instances,
                   std::size_t maxPerSource = 8);

} // namespace sol::nvrtc

//===- Common.cuh - Stand-in for codegen/kernels/Common.cuh on the CPU ----===//
//
// What Sampling.cuh takes from Common.cuh, for the CPU emulation
// (CudaEmulation.h); the build copies Sampling.cuh beside this file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "CudaEmulation.h"

namespace sol {
namespace kernels {
inline float negativeInfinity() { return __int_as_float(0xff800000); }
inline void allowDependentLaunch() {}
inline void waitForPredecessor() {}
} // namespace kernels
} // namespace sol

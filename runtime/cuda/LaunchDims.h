//===- LaunchDims.h - Grid, block and shared memory of a launch -*- C++ -*-===//
#pragma once

namespace sol::cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct LaunchDims {
  Dim3 grid;
  Dim3 block;
  /// Dynamic shared memory in bytes.
  unsigned sharedBytes = 0;
  /// Programmatic dependent launch: the kernel may start before the previous
  /// kernel in the stream has finished. Only for kernels that call
  /// waitForPredecessor() (codegen/kernels/Common.cuh) before touching data
  /// that earlier kernels write or read.
  bool dependent = false;
  /// Blocks per thread-block cluster along y (sm_90; 1: no clusters). The
  /// grid's y must be a multiple of it.
  unsigned clusterY = 1;
};

} // namespace sol::cuda

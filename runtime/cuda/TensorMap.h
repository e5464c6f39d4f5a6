//===- TensorMap.h - Tensor maps for Hopper's TMA copies --------*- C++ -*-===//
//
// A kernel that loads tiles by TMA (codegen/kernels/Tma.cuh) takes, in its
// launch arguments, a tensor map the driver encodes on the host: the
// tensor's address, sizes and row pitch, the box one copy moves and the
// swizzle it lands in. Encoding is a host call without the GPU's
// involvement, so the executor encodes a weight's map once and keeps it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/LaunchArgs.h"

#include <cuda.h>

namespace sol::cuda {

/// The map of a row-major [rows, cols] matrix of bytes (E4M3 codes) at
/// `base`, `pitch` bytes a row, read in boxes of `boxRows` x `boxCols`
/// (boxCols <= 128) landing with 128-byte swizzle, the layout of wgmma's
/// K-major operands. Reads past the matrix arrive as zeros. Throws
/// sol::Error naming the problem when the driver refuses the geometry
/// (base not 16-byte aligned, pitch not a multiple of 16, a box past 256).
kernels::TensorMap encodeByteMatrixMap(CUdeviceptr base, long long rows,
                                       long long cols, long long pitch,
                                       int boxRows, int boxCols);

} // namespace sol::cuda

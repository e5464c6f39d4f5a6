//===- LowerToSchedule.h - sol module -> kernel-level step ------*- C++ -*-===//
#pragma once

#include "codegen/schedule/Schedule.h"

#include "mlir/IR/BuiltinOps.h"

namespace sol {

/// Lowers the `@forward` function of a fused `sol` module (after sol-fuse)
/// to the kernel-level step: buffers, weights, ops, rope tables. Emits an
/// MLIR error on the op it cannot lower and returns failure.
mlir::FailureOr<Schedule> lowerToSchedule(mlir::ModuleOp module);

} // namespace sol

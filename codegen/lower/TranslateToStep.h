//===- TranslateToStep.h - kernel-level sol -> the plan's step --*- C++ -*-===//
#pragma once

#include "codegen/step/StepProgram.h"

#include "mlir/IR/BuiltinOps.h"

namespace sol {

/// Translates the `@forward` function of a kernel-level `sol` module (after
/// sol-lower-to-kernels and sol-materialize-weights) into the plan's step,
/// one plan op per op: it assigns activation buffers (views for sol.split,
/// the operand's buffer for in-place results, checking that the operand is
/// dead there), registers weights and rope tables, and plans the arena.
/// Emits an MLIR error on the op it cannot translate and returns failure.
mlir::FailureOr<StepProgram> translateToStep(mlir::ModuleOp module);

} // namespace sol

//===- WeightOrder.h - Where weights sit among the ops of a step -*- C++ -*-===//
//
// Weights (sol.weight and the weight transforms) compute nothing at run
// time: code generation skips them. Fusions use that to look past them and
// to move them where a fused op needs them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/SolDialect.h"

#include "mlir/IR/PatternMatch.h"

namespace sol {

/// True when every op strictly between `first` and `last` (same block,
/// `first` before `last`) is a weight op.
bool onlyWeightsBetween(mlir::Operation *first, mlir::Operation *last);

/// Moves the ops that compute weight `w` (a sol.weight or a tree of weight
/// transforms over them) before `point` where they come after it, so that
/// an op created at `point` may use `w`.
void hoistWeightBefore(mlir::RewriterBase &rewriter, mlir::Value w,
                       mlir::Operation *point);

} // namespace sol

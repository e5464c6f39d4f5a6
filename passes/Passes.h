//===- Passes.h - Sol's passes and pipelines --------------------*- C++ -*-===//
#pragma once

#include "ir/SolDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace sol {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Adds the passes of optimisation level `level` (0..3) to `pm`;
/// `kvCache` configures sol-plan-kv-cache (solc's --kv-* flags).
void buildSolPipeline(mlir::OpPassManager &pm, unsigned level,
                      const SolPlanKvCacheOptions &kvCache = {});

/// Registers `sol-O0` ... `sol-O3` as named pipelines.
void registerSolPipelines();

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace sol

//===- KvCacheLayout.h - The module's KV-cache layout ----------*- C++ -*-===//
#pragma once

#include "codegen/plan/KvCachePlan.h"

#include "mlir/IR/BuiltinOps.h"

namespace sol {

/// The layout sol-plan-kv-cache recorded on `module` (the attribute
/// `sol.kv_cache_layout`), checked against every op that uses the cache
/// (layer in range, kv heads and head dim equal). A module without it is an
/// error
/// that says to run the pass: there is no silent default, so a plan's
/// layout is always the one the pass chose or was told.
mlir::FailureOr<KvCachePlan> lowerKvCacheLayout(mlir::ModuleOp module);

} // namespace sol

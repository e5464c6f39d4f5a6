//===- Pipelines.cpp - The -O0 .. -O3 pass pipelines ----------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void sol::buildSolPipeline(OpPassManager &pm, unsigned level,
                           const SolPlanKvCacheOptions &kvCache) {
  if (level >= 1) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (level >= 2) {
    pm.addNestedPass<func::FuncOp>(createSolFuse());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // Every level: code generation needs the KV-cache layout.
  pm.addPass(createSolPlanKvCache(kvCache));
}

void sol::registerSolPipelines() {
  static const char *const names[] = {"sol-O0", "sol-O1", "sol-O2", "sol-O3"};
  for (unsigned level = 0; level < 4; ++level) {
    PassPipelineRegistration<>(
        names[level], "Sol's optimisation pipeline at this -O level",
        [level](OpPassManager &pm) { buildSolPipeline(pm, level); });
  }
}

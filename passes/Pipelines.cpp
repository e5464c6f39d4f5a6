//===- Pipelines.cpp - The -O0 .. -O3 pass pipelines ----------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void sol::buildSolPipeline(OpPassManager &pm, unsigned level,
                           const SolPlanKvCacheOptions &kvCache,
                           const SolQuantizeOptions *quantize,
                           const WeightStore *store,
                           int64_t tensorParallelSize) {
  buildSolRaisePipeline(pm, store);
  // Before the fusions, which then fuse each rank's own projections.
  if (tensorParallelSize > 1)
    pm.addPass(createSolShardTensorParallel(
        SolShardTensorParallelOptions{tensorParallelSize}));
  if (level >= 1) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (level >= 2) {
    // Order matters: projections first (the other fusions match the fused
    // linears), residual adds before add+norm (an add folded into a GEMM
    // needs no norm kernel), norms into linears after both (a norm whose
    // input is still an add goes with the add).
    OpPassManager &fn = pm.nest<func::FuncOp>();
    fn.addPass(createSolFuseProjections());
    fn.addPass(createSolFuseResidualAdd());
    fn.addPass(createSolFuseAddNorm());
    fn.addPass(createSolFuseNormLinear());
    fn.addPass(createSolFuseLogits());
  }
  pm.addNestedPass<func::FuncOp>(createSolLowerToKernels());
  // On the final linears, so that fused projections are quantized as the
  // kernels read them.
  if (quantize)
    pm.addNestedPass<func::FuncOp>(createSolQuantize(*quantize));
  if (level >= 1)
    pm.addPass(createCSEPass());
  pm.addPass(createSolPlanKvCache(kvCache));
}

void sol::buildSolRaisePipeline(OpPassManager &pm, const WeightStore *store) {
  // Order matters: each idiom is recognised among raised neighbours (a
  // per-head norm of a raised projection, a SwiGLU between raised linears,
  // a residual Add of raised values).
  pm.addPass(createSolRaiseInputs());
  pm.addPass(createSolRaiseEmbedding());
  pm.addPass(createSolRaiseLinear(store));
  pm.addPass(createSolRaiseMoe());
  pm.addPass(createSolRaiseRmsNorm());
  pm.addPass(createSolRaiseSwiglu());
  pm.addPass(createSolRaiseResidualAdd());
  pm.addPass(createSolRaiseRope(store));
  pm.addPass(createSolRaiseAttention(store));
  pm.addPass(createSolRaiseOutputs());
  pm.addPass(createSolRaiseCheck());
}

void sol::registerSolPipelines() {
  PassPipelineRegistration<>(
      "sol-raise", "sol-raise-* then sol-raise-check: an ONNX graph raised",
      [](OpPassManager &pm) { buildSolRaisePipeline(pm); });
  static const char *const names[] = {"sol-O0", "sol-O1", "sol-O2", "sol-O3"};
  for (unsigned level = 0; level < 4; ++level) {
    PassPipelineRegistration<>(
        names[level], "Sol's optimisation pipeline at this -O level",
        [level](OpPassManager &pm) { buildSolPipeline(pm, level); });
  }
}

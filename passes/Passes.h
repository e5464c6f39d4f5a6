//===- Passes.h - Sol's passes and pipelines --------------------*- C++ -*-===//
#pragma once

#include "ir/SolDialect.h"
#include "ir/WeightStore.h"
#include "passes/CalibrationEvaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace sol {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// sol-materialize-weights adding the tensors it derives to `store`.
std::unique_ptr<mlir::Pass> createSolMaterializeWeights(WeightStore &store);

/// sol-awq-calibrate over `sequences` (token ids, each from position 0),
/// adding the scales and clipping ratios it computes to `store`; with
/// `progress`, a progress line on a terminal's stderr. `factory` makes the
/// evaluator (empty: the CPU's).
std::unique_ptr<mlir::Pass>
createSolAwqCalibrate(WeightStore &store,
                      std::vector<std::vector<int32_t>> sequences,
                      const SolAwqCalibrateOptions &options, bool progress,
                      CalibrationEvaluatorFactory factory = {});

/// sol-raise-linear, sol-raise-rope and sol-raise-attention reading the
/// weights of `store` (integer weights' zero points, the cos/sin caches of
/// com.microsoft ops); without one, what only the store holds cannot be
/// read (zero points are then taken for nonzero).
std::unique_ptr<mlir::Pass> createSolRaiseLinear(const WeightStore *store);
std::unique_ptr<mlir::Pass> createSolRaiseRope(const WeightStore *store);
std::unique_ptr<mlir::Pass> createSolRaiseAttention(const WeightStore *store);

/// Adds the sol-raise-* passes and sol-raise-check: an imported ONNX graph
/// becomes the module the Hugging Face importer writes, or is refused.
/// `store` holds the graph's initializers.
void buildSolRaisePipeline(mlir::OpPassManager &pm,
                           const WeightStore *store = nullptr);

/// Adds the raise passes, then the passes of optimisation level `level`
/// (0..3) to `pm`: sol-shard-tensor-parallel when `tensorParallelSize` > 1
/// (solc's --tensor-parallel-size), the fusions from -O2, then the lowering
/// to kernel-level ops, sol-quantize when `quantize` is given (solc's
/// --quant flags), and the KV-cache plan at every level. `kvCache`
/// configures sol-plan-kv-cache (solc's --kv-* flags). Weights are
/// materialised separately (code generation).
void buildSolPipeline(mlir::OpPassManager &pm, unsigned level,
                      const SolPlanKvCacheOptions &kvCache = {},
                      const SolQuantizeOptions *quantize = nullptr,
                      const WeightStore *store = nullptr,
                      int64_t tensorParallelSize = 1);

/// `result` (the lowered LM head of `logits`) soft-capped by a sol.softcap
/// when `logits` has a softcap; else `result`. Shared by the lowerings of
/// sol.logits (sol-lower-to-kernels, sol-fuse-logits).
mlir::Value softcapLogits(mlir::OpBuilder &b, LogitsOp logits,
                          mlir::Value result);

/// Registers `sol-O0` ... `sol-O3` as named pipelines.
void registerSolPipelines();

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace sol

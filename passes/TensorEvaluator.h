//===- TensorEvaluator.h - Tensor-level sol IR in float32 ------*- C++ -*-===//
//
// Calibration needs the activations a model computes on real text. This
// evaluates a tensor-level `sol` function (as importers produce it) in
// float32 on the CPU over a batch of whole sequences, in program order,
// dropping each value after its last use: only the residual stream and the
// current layer's values are held, never the whole model's activations.
// Ops can also be evaluated again with a linear's weight replaced, which is
// how AWQ measures what quantizing it does to the layer's output.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/SolDialect.h"
#include "ir/WeightStore.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace sol {

/// A token-major float32 activation: `rows` tokens of `cols` values.
struct Activation {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;

  const float *row(int64_t t) const { return values.data() + t * cols; }
  float *row(int64_t t) { return values.data() + t * cols; }
};

class TensorEvaluator {
public:
  /// Replaced weights, by the weight value they replace (a linear's, or a
  /// mixture's stacked gate or up): [N, K] float32.
  using WeightOverrides = llvm::DenseMap<mlir::Value, std::span<const float>>;

  /// `sequences` are the token ids of whole sequences, each from position
  /// 0; `fn` is evaluated on all of them at once.
  TensorEvaluator(mlir::func::FuncOp fn, const WeightStore &store,
                  std::span<const std::vector<int32_t>> sequences);

  /// Evaluates, in order, the ops before `op` not evaluated yet (all of
  /// them when `op` is null). Fails, with a diagnostic on the op, on one it
  /// cannot evaluate.
  mlir::LogicalResult runUntil(mlir::Operation *op);

  /// The value of `v`, which must be evaluated and still in use.
  const Activation &value(mlir::Value v) const;

  /// Evaluates `ops` (in program order) with the weights in `overrides`
  /// replaced, taking operands from outside `ops` from the
  /// evaluated values, and returns `results`, values of `ops`. Stores
  /// nothing.
  mlir::FailureOr<std::vector<Activation>>
  evaluate(llvm::ArrayRef<mlir::Operation *> ops,
           const WeightOverrides &overrides,
           llvm::ArrayRef<mlir::Value> results) const;

  /// A weight's values as float32: a sol.weight of the store, or a
  /// conversion or transpose of one (what importers make).
  std::vector<float> weight(mlir::Value w) const;

  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }

  // The program and its inputs, for another evaluator of the same ops
  // (CudaCalibrationEvaluator).
  /// The function's ops in program order (no terminator).
  llvm::ArrayRef<mlir::Operation *> ops() const { return ops_; }
  /// The index in ops() of `v`'s last user; -1 when none.
  int64_t lastUse(mlir::Value v) const {
    auto it = lastUse_.find(v);
    return it == lastUse_.end() ? -1 : static_cast<int64_t>(it->second);
  }
  /// The token ids, positions or sequence indices a function argument
  /// stands for.
  std::span<const int32_t> indices(mlir::Value v) const;
  /// Each token's sequence's first row.
  std::vector<int32_t> sequenceStartOfTokens() const;
  /// Expert e's rows of a stacked expert weight ([experts * rows, K]), as
  /// float32; reads only that expert's where the importer stacked them.
  std::vector<float> expertWeight(mlir::Value stacked, int64_t e,
                                  int64_t experts) const;
  /// Where a mixture sends each row of its input `x`: the router in float32,
  /// then routeMixture.
  std::vector<std::vector<std::pair<int64_t, float>>>
  route(MoeOp moe, const Activation &x) const;

private:
  using Values = llvm::DenseMap<mlir::Value, Activation>;
  mlir::FailureOr<Activation> compute(mlir::Operation *op, const Values &local,
                                      const WeightOverrides &overrides) const;
  const Activation &lookup(mlir::Value v, const Values &local) const;
  /// A sol.moe over x: routed in float32, each expert's tokens through its
  /// gated MLP.
  mlir::FailureOr<Activation> mixture(MoeOp moe, const Activation &x,
                                      const WeightOverrides &overrides) const;

  const WeightStore &store_;
  std::vector<mlir::Operation *> ops_;
  size_t next_ = 0;
  /// The index in ops_ of each value's last user.
  llvm::DenseMap<mlir::Value, size_t> lastUse_;
  Values values_;
  std::vector<int32_t> tokens_, positions_, tokenSeq_;
  /// For each sequence, its first token row (and one past the last).
  std::vector<int64_t> sequenceStarts_;
  llvm::DenseMap<mlir::Value, std::span<const int32_t>> indexArgs_;
};

/// Evaluates ops[next, ...) in program order up to `stop` (excluded; to the
/// end when null), advancing `next`: `compute(op)` (a LogicalResult; it
/// keeps the op's value) for each op but weights, their transforms and the
/// logits, then `release(v)` for each operand whose last user (`lastUse(v)`,
/// an index in `ops`) it was. Both calibration evaluators' runUntil.
template <typename Compute, typename Release>
mlir::LogicalResult runOpsUntil(llvm::ArrayRef<mlir::Operation *> ops,
                                size_t &next, mlir::Operation *stop,
                                const TensorEvaluator &program, Compute compute,
                                Release release) {
  while (next < ops.size() && ops[next] != stop) {
    mlir::Operation *current = ops[next];
    if (!llvm::isa<WeightOp, LogitsOp>(current) &&
        !current->hasTrait<WeightTransform>() && mlir::failed(compute(current)))
      return mlir::failure();
    for (mlir::Value operand : current->getOperands())
      if (program.lastUse(operand) == static_cast<int64_t>(next))
        release(operand);
    ++next;
  }
  return mlir::success();
}

/// Evaluates `ops` in program order, skipping weights and their transforms,
/// with `compute(op, local)` (FailureOr<T>; `local` holds the values
/// computed so far), and returns the values of `results`, which the ops
/// must compute. Both calibration evaluators' regions go through it.
template <typename T, typename Compute>
mlir::FailureOr<std::vector<T>>
evaluateOps(llvm::ArrayRef<mlir::Operation *> ops,
            llvm::ArrayRef<mlir::Value> results, Compute compute) {
  llvm::DenseMap<mlir::Value, T> local;
  for (mlir::Operation *op : ops) {
    if (llvm::isa<WeightOp>(op) || op->hasTrait<WeightTransform>())
      continue;
    mlir::FailureOr<T> value = compute(op, local);
    if (mlir::failed(value))
      return mlir::failure();
    local[op->getResult(0)] = std::move(*value);
  }
  std::vector<T> out;
  for (mlir::Value result : results) {
    auto it = local.find(result);
    if (it == local.end())
      return ops.front()->emitError("internal error: calibration's region "
                                    "does not compute its results");
    out.push_back(std::move(it->second));
  }
  return out;
}

/// out = x · wᵀ (+ bias): x [rows, k], w [n, k], out [rows, n]. On all
/// cores; the same bits whatever the thread count.
void linearFloat(std::span<float> out, std::span<const float> x,
                 std::span<const float> w, std::span<const float> bias,
                 int64_t rows, int64_t n, int64_t k);

/// Success when both calibration evaluators can run `linear`: a plain float
/// linear, as the importer makes it (no residual, scales or epilogue).
mlir::LogicalResult checkCalibrationLinear(LinearOp linear);

/// Success when both calibration evaluators can run `moe`: float experts
/// without biases and with silu or gelu_tanh gates (not gpt-oss's).
mlir::LogicalResult checkCalibrationMixture(MoeOp moe);

/// For each expert, the (token, routing weight) pairs of the tokens a
/// mixture sends to it, in token order: the softmax of the router's
/// `logits` ([rows, experts], overwritten) in float32, its top k (the lower
/// index first on ties), renormalised over them when the model says so.
using MixtureRouting = std::vector<std::vector<std::pair<int64_t, float>>>;
MixtureRouting routeMixture(MoeOp moe, std::span<float> logits, int64_t rows);

/// g = act(g) · u elementwise, `act` a mixture's or sol.swiglu's gate
/// activation (silu or gelu_tanh).
void gatedActivation(GateActivation act, std::span<float> g,
                     std::span<const float> u);

} // namespace sol

//===- CalibrationEvaluator.h - What AWQ asks of the float model -*- C++
//-*-===//
//
// sol-awq-calibrate evaluates the unquantized model on calibration text and,
// at each scaling group, the group's ops again under every candidate
// scaling. This is that evaluation, behind one interface with two
// implementations: on the CPU (TensorEvaluator, float32, any machine) and on
// the GPU (CudaCalibrationEvaluator: the same ops with float32 activations
// on the device, GEMMs and attention on the bf16 tensor cores), which an 8B
// model needs: its search is about 25 PFLOP.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/SolDialect.h"
#include "ir/WeightStore.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sol {

class CalibrationEvaluator {
public:
  virtual ~CalibrationEvaluator() = default;

  /// "CPU" or the GPU's name, for solc's messages.
  virtual std::string device() const = 0;
  /// Calibration tokens, all sequences together.
  virtual int64_t tokens() const = 0;

  /// Evaluates, in order, the ops before `op` not evaluated yet, holding
  /// each value until its last user. Fails with a diagnostic on an op it
  /// cannot evaluate.
  virtual mlir::LogicalResult runUntil(mlir::Operation *op) = 0;

  /// Sum over tokens of |v| per column of an evaluated value.
  virtual std::vector<double> columnAbsSums(mlir::Value v) = 0;
  /// `rows` evenly spaced rows of an evaluated value (row r * T / rows),
  /// row-major.
  virtual std::vector<float> sampleRows(mlir::Value v, int64_t rows) = 0;

  /// Evaluates `ops` (program order; operands from outside them are
  /// evaluated values) with the float weights and keeps `outputs` as the
  /// reference of the following candidateError calls. `weights` are the
  /// group's scaled weights (a linear's, a mixture's stacked gate and up),
  /// `values` their float values as weight() read them (so that no
  /// evaluator reads them again).
  virtual mlir::LogicalResult
  setReference(llvm::ArrayRef<mlir::Operation *> ops,
               llvm::ArrayRef<mlir::Value> outputs,
               llvm::ArrayRef<mlir::Value> weights,
               llvm::ArrayRef<std::vector<float>> values) = 0;
  /// Mean squared error against the reference of the outputs of the same
  /// ops when each of `weights` (all [N, K], multiplying one input of K
  /// channels) is Q(W * s) / s instead of W: W its float value
  /// (`values[i]`), s the per-channel `scales`, Q int4 round to nearest in
  /// groups of `groupSize` (none when K is not a multiple).
  virtual mlir::FailureOr<double>
  candidateError(llvm::ArrayRef<mlir::Value> weights,
                 llvm::ArrayRef<std::vector<float>> values,
                 std::span<const float> scales, int64_t groupSize) = 0;

  // AWQ between a mixture expert's up and down projections: the down
  // projection's input h = act(x · gateᵀ) · (x · upᵀ) over the tokens routed
  // to the expert, and the error of its output alone.

  /// Routes the rows of `moe`'s input (evaluated and still held) and holds,
  /// for expert `e` with float weights `gate`, `up` ([I, H]) and `down`
  /// ([H, I]), the rows routed to it, their h and h · downᵀ. Returns how
  /// many rows it got (none: the calls below must not follow).
  virtual mlir::FailureOr<int64_t>
  selectExpert(MoeOp moe, int64_t e, std::span<const float> gate,
               std::span<const float> up, std::span<const float> down) = 0;
  /// Sum over the selected expert's rows of |h| per column.
  virtual std::vector<double> expertHiddenAbsSums() = 0;
  /// Mean squared error of h · (Q(down * s) / s)ᵀ against h · downᵀ, Q as
  /// for candidateError.
  virtual mlir::FailureOr<double>
  expertCandidateError(std::span<const float> scales, int64_t groupSize) = 0;
  /// `rows` evenly spaced rows (row r * n / rows of n) of the selected
  /// expert's input (`hidden` false) or h (true), row-major.
  virtual std::vector<float> sampleExpertRows(bool hidden, int64_t rows) = 0;

  /// A weight's values as float32 (a sol.weight of the store, or a
  /// conversion or transpose of one).
  virtual std::vector<float> weight(mlir::Value w) const = 0;
  /// Expert e's rows of a mixture's stacked weight as float32.
  virtual std::vector<float> expertWeight(mlir::Value stacked, int64_t e,
                                          int64_t experts) const = 0;

  /// quant::searchInt4Clip: each int4 group's clipping ratio of the [n, k]
  /// weight `w` against `xRows` calibration rows `x`.
  virtual std::vector<float> clipRatios(std::span<const float> w, int64_t n,
                                        int64_t k, int64_t groupSize,
                                        std::span<const float> x, int64_t xRows,
                                        int gridPoints) = 0;
};

/// Makes the evaluator of a function over `sequences` (token ids, each from
/// position 0).
using CalibrationEvaluatorFactory =
    std::function<std::unique_ptr<CalibrationEvaluator>(
        mlir::func::FuncOp, const WeightStore &,
        std::span<const std::vector<int32_t>>)>;

/// The CPU's: float32 on every core.
std::unique_ptr<CalibrationEvaluator>
createCpuCalibrationEvaluator(mlir::func::FuncOp fn, const WeightStore &store,
                              std::span<const std::vector<int32_t>> sequences);

} // namespace sol

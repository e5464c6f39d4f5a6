//===- OnnxEvaluator.h - Small ONNX subgraphs computed at compile time -*- C++
//-*-===//
//
// Some idioms can only be recognised by what they compute: a causal mask is
// built from Range, comparisons and Where in ways that differ with every
// exporter and transformers version, and rotary cos/sin tables from
// inv_freq, positions, MatMul and Concat. The raise patterns evaluate such
// subgraphs for chosen inputs (positions 0..n, a cache of p tokens) and
// compare the result with what the idiom must compute. Float64 throughout;
// shape ops, elementwise math, comparisons, Where, Gather, Slice, MatMul.
// Float weights are read from the weight store when the pattern has one;
// anything else (a raised op) makes the value not evaluable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/SolDialect.h"
#include "ir/WeightStore.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>
#include <vector>

namespace sol::raise {

struct EvalTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
  /// Integer and boolean tensors round results (Div truncates, Cast rounds).
  bool isInteger = false;
  /// Only the shape is known (a raised activation's view): Shape reads it,
  /// anything else fails.
  bool shapeOnly = false;

  int64_t size() const;
  static EvalTensor filled(std::vector<int64_t> shape, double value,
                           bool isInteger);
};

class OnnxEvaluator {
public:
  /// Gives `v` (a function argument, typically) a value.
  void bind(mlir::Value v, EvalTensor t) { values_[v] = std::move(t); }
  /// The rows of Sol's token-major activations in this step (its tokens).
  void setStepTokens(int64_t n) { stepTokens_ = n; }
  /// Lets weights (initializers the store holds: rotary cos/sin caches) be
  /// read; without a store they are not evaluable.
  void setWeightStore(const WeightStore *store) { store_ = store; }
  /// The value of `v`, or nullopt with `reason()` saying why not. A result
  /// with `shapeOnly` set depends on a raised activation's values: only its
  /// shape is right.
  std::optional<EvalTensor> evaluate(mlir::Value v);
  const std::string &reason() const { return reason_; }

private:
  std::optional<EvalTensor> compute(mlir::Value v);
  std::optional<EvalTensor> computeOp(OnnxOp op, mlir::Value v,
                                      std::vector<EvalTensor> &in);
  std::optional<EvalTensor> fail(const std::string &why);

  llvm::DenseMap<mlir::Value, EvalTensor> values_;
  std::string reason_;
  int depth_ = 0;
  int64_t stepTokens_ = -1;
  const WeightStore *store_ = nullptr;
};

/// Binds the arguments of `fn` (a raised graph's function, whose Sol
/// arguments sol-raise-inputs added) for one step of one sequence: `past`
/// cached tokens and the new tokens at `positions` (their count is the
/// step's length): tokens and token_seq zeros, positions as given,
/// attention_mask all ones over past + new, each rank-4 past key/value
/// [1, heads, past, head_dim] of zeros (its heads and head_dim from its
/// type; left unbound when the type leaves them open). False when `fn` is
/// not a function.
bool bindStep(OnnxEvaluator &eval, mlir::Operation *fn, int64_t past,
              const std::vector<int64_t> &positions);

} // namespace sol::raise

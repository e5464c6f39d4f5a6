//===- CalibrationEvaluator.cpp - AWQ's evaluation on the CPU -------------===//
#include "passes/CalibrationEvaluator.h"

#include "passes/TensorEvaluator.h"

#include "runtime/support/Quantize.h"

using namespace mlir;

namespace sol {

namespace {

/// W' = Q(W) of an [n, k] weight in int4 groups of g, dequantized.
std::vector<float> int4RoundTrip(std::span<const float> w, int64_t n, int64_t k,
                                 int64_t g) {
  std::vector<float> out(w.size());
  quant::dequantize(quant::quantizeInt4(w, n, k, g), out);
  return out;
}

double squaredError(ArrayRef<Activation> a, ArrayRef<Activation> b) {
  double sum = 0.0;
  size_t count = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].values.size(); ++j) {
      const double d = static_cast<double>(a[i].values[j]) - b[i].values[j];
      sum += d * d;
    }
    count += a[i].values.size();
  }
  return count ? sum / static_cast<double>(count) : 0.0;
}

class CpuCalibrationEvaluator final : public CalibrationEvaluator {
public:
  CpuCalibrationEvaluator(func::FuncOp fn, const WeightStore &store,
                          std::span<const std::vector<int32_t>> sequences)
      : evaluator_(fn, store, sequences) {}

  std::string device() const override { return "CPU"; }
  int64_t tokens() const override { return evaluator_.tokens(); }
  LogicalResult runUntil(Operation *op) override {
    return evaluator_.runUntil(op);
  }

  std::vector<double> columnAbsSums(Value v) override {
    const Activation &x = evaluator_.value(v);
    std::vector<double> sums(static_cast<size_t>(x.cols), 0.0);
    for (int64_t t = 0; t < x.rows; ++t)
      for (int64_t c = 0; c < x.cols; ++c)
        sums[c] += std::fabs(x.row(t)[c]);
    return sums;
  }

  std::vector<float> sampleRows(Value v, int64_t rows) override {
    const Activation &x = evaluator_.value(v);
    std::vector<float> out(static_cast<size_t>(rows * x.cols));
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(x.row(r * x.rows / rows), x.cols, out.data() + r * x.cols);
    return out;
  }

  LogicalResult setReference(ArrayRef<Operation *> ops, ArrayRef<Value> outputs,
                             ArrayRef<LinearOp>,
                             ArrayRef<std::vector<float>>) override {
    ops_.assign(ops.begin(), ops.end());
    outputs_.assign(outputs.begin(), outputs.end());
    FailureOr<std::vector<Activation>> reference =
        evaluator_.evaluate(ops_, TensorEvaluator::WeightOverrides(), outputs_);
    if (failed(reference))
      return failure();
    reference_ = std::move(*reference);
    return success();
  }

  FailureOr<double> candidateError(ArrayRef<LinearOp> linears,
                                   ArrayRef<std::vector<float>> weights,
                                   std::span<const float> s,
                                   int64_t g) override {
    const int64_t k = static_cast<int64_t>(s.size());
    std::vector<std::vector<float>> trial(weights.size());
    TensorEvaluator::WeightOverrides overrides;
    for (auto [j, linear] : llvm::enumerate(linears)) {
      LinearOp l = linear;
      const std::vector<float> &w = weights[j];
      const int64_t n = l.getWeight().getType().getDimSize(0);
      std::vector<float> scaled(w.size());
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < k; ++c)
          scaled[r * k + c] = w[r * k + c] * s[c];
      // A linear that stays bf16 (k not a multiple of g) loses nothing.
      trial[j] = k % g == 0 ? int4RoundTrip(scaled, n, k, g) : scaled;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < k; ++c)
          trial[j][r * k + c] /= s[c];
      overrides[l] = trial[j];
    }
    FailureOr<std::vector<Activation>> out =
        evaluator_.evaluate(ops_, overrides, outputs_);
    if (failed(out))
      return failure();
    return squaredError(*out, reference_);
  }

  std::vector<float> weight(Value w) const override {
    return evaluator_.weight(w);
  }

  std::vector<float> clipRatios(std::span<const float> w, int64_t n, int64_t k,
                                int64_t groupSize, std::span<const float> x,
                                int64_t xRows, int gridPoints) override {
    return quant::searchInt4Clip(w, n, k, groupSize, x, xRows, gridPoints);
  }

private:
  TensorEvaluator evaluator_;
  std::vector<Operation *> ops_;
  std::vector<Value> outputs_;
  std::vector<Activation> reference_;
};

} // namespace

std::unique_ptr<CalibrationEvaluator>
createCpuCalibrationEvaluator(func::FuncOp fn, const WeightStore &store,
                              std::span<const std::vector<int32_t>> sequences) {
  return std::make_unique<CpuCalibrationEvaluator>(fn, store, sequences);
}

} // namespace sol

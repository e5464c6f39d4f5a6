//===- CalibrationEvaluator.cpp - AWQ's evaluation on the CPU -------------===//
#include "passes/CalibrationEvaluator.h"

#include "passes/TensorEvaluator.h"

#include "runtime/support/Quantize.h"

#include <cstring>

using namespace mlir;

namespace sol {

namespace {

/// Q(W · s) / s of an [n, k] weight: its columns scaled by `s`, int4 round
/// to nearest in groups of g along each row (none when k is not a multiple:
/// such a weight stays bf16 and loses nothing), scaled back.
std::vector<float> awqRoundTrip(std::span<const float> w, int64_t n,
                                std::span<const float> s, int64_t g) {
  const int64_t k = static_cast<int64_t>(s.size());
  std::vector<float> scaled(w.size());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      scaled[r * k + c] = w[r * k + c] * s[c];
  if (k % g == 0)
    quant::dequantize(quant::quantizeInt4(scaled, n, k, g), scaled);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      scaled[r * k + c] /= s[c];
  return scaled;
}

double squaredError(std::span<const float> a, std::span<const float> b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    sum += d * d;
  }
  return sum;
}

double squaredError(ArrayRef<Activation> a, ArrayRef<Activation> b) {
  double sum = 0.0;
  size_t count = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sum += squaredError(a[i].values, b[i].values);
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
                             ArrayRef<Value>,
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

  FailureOr<double> candidateError(ArrayRef<Value> weights,
                                   ArrayRef<std::vector<float>> values,
                                   std::span<const float> s,
                                   int64_t g) override {
    const int64_t k = static_cast<int64_t>(s.size());
    std::vector<std::vector<float>> trial(weights.size());
    TensorEvaluator::WeightOverrides overrides;
    for (auto [j, w] : llvm::enumerate(weights)) {
      trial[j] = awqRoundTrip(values[j],
                              static_cast<int64_t>(values[j].size()) / k, s, g);
      overrides[w] = trial[j];
    }
    FailureOr<std::vector<Activation>> out =
        evaluator_.evaluate(ops_, overrides, outputs_);
    if (failed(out))
      return failure();
    return squaredError(*out, reference_);
  }

  FailureOr<int64_t> selectExpert(MoeOp moe, int64_t e,
                                  std::span<const float> gate,
                                  std::span<const float> up,
                                  std::span<const float> down) override {
    if (failed(checkCalibrationMixture(moe)))
      return failure();
    const Activation &x = evaluator_.value(moe.getInput());
    if (routedMoe_ != moe.getOperation()) {
      routing_ = evaluator_.route(moe, x);
      routedMoe_ = moe.getOperation();
    }
    const auto &tokens = routing_[static_cast<size_t>(e)];
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t hidden = x.cols, width = moe.getExpertWidth();
    expertRows_ = n;
    expertInput_.assign(static_cast<size_t>(n * hidden), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(expertInput_.data() + i * hidden,
                  x.row(tokens[static_cast<size_t>(i)].first),
                  hidden * sizeof(float));
    expertHidden_.assign(static_cast<size_t>(n * width), 0.0f);
    std::vector<float> u(expertHidden_.size());
    linearFloat(expertHidden_, expertInput_, gate, {}, n, width, hidden);
    linearFloat(u, expertInput_, up, {}, n, width, hidden);
    gatedActivation(moe.getActivation(), expertHidden_, u);
    expertDown_.assign(down.begin(), down.end());
    expertReference_.assign(static_cast<size_t>(n * hidden), 0.0f);
    linearFloat(expertReference_, expertHidden_, down, {}, n, hidden, width);
    return n;
  }

  std::vector<double> expertHiddenAbsSums() override {
    const int64_t cols = static_cast<int64_t>(expertHidden_.size()) /
                         std::max<int64_t>(expertRows_, 1);
    std::vector<double> sums(static_cast<size_t>(cols), 0.0);
    for (int64_t t = 0; t < expertRows_; ++t)
      for (int64_t c = 0; c < cols; ++c)
        sums[c] += std::fabs(expertHidden_[t * cols + c]);
    return sums;
  }

  FailureOr<double> expertCandidateError(std::span<const float> s,
                                         int64_t g) override {
    const int64_t width = static_cast<int64_t>(s.size());
    const int64_t hidden = static_cast<int64_t>(expertDown_.size()) / width;
    const std::vector<float> trial = awqRoundTrip(expertDown_, hidden, s, g);
    std::vector<float> y(expertReference_.size());
    linearFloat(y, expertHidden_, trial, {}, expertRows_, hidden, width);
    return y.empty() ? 0.0
                     : squaredError(y, expertReference_) /
                           static_cast<double>(y.size());
  }

  std::vector<float> sampleExpertRows(bool hidden, int64_t rows) override {
    const std::vector<float> &from = hidden ? expertHidden_ : expertInput_;
    const int64_t cols = static_cast<int64_t>(from.size()) / expertRows_;
    std::vector<float> out(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(from.data() + (r * expertRows_ / rows) * cols, cols,
                  out.data() + r * cols);
    return out;
  }

  std::vector<float> weight(Value w) const override {
    return evaluator_.weight(w);
  }
  std::vector<float> expertWeight(Value stacked, int64_t e,
                                  int64_t experts) const override {
    return evaluator_.expertWeight(stacked, e, experts);
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
  // The selected expert (selectExpert) and the routing of its mixture.
  Operation *routedMoe_ = nullptr;
  MixtureRouting routing_;
  int64_t expertRows_ = 0;
  std::vector<float> expertInput_, expertHidden_, expertDown_, expertReference_;
};

} // namespace

std::unique_ptr<CalibrationEvaluator>
createCpuCalibrationEvaluator(func::FuncOp fn, const WeightStore &store,
                              std::span<const std::vector<int32_t>> sequences) {
  return std::make_unique<CpuCalibrationEvaluator>(fn, store, sequences);
}

} // namespace sol

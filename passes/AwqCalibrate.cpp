//===- AwqCalibrate.cpp - sol-awq-calibrate -------------------------------===//
//
// AWQ (Lin et al., "Activation-aware Weight Quantization") as weight
// transforms: calibration measures which input channels carry large
// activations, scales them up in the weights (and down in whatever produces
// the input) so that int4 rounding costs them less, then picks each int4
// group's clipping. The result is sol.scale_weight and sol.clamp_weight ops
// over the original weights; sol-quantize and sol-materialize-weights do
// the rest as for any int4 plan. Passes.td describes the algorithm.
//
//===----------------------------------------------------------------------===//
#include "passes/CalibrationEvaluator.h"
#include "passes/Passes.h"

#include "runtime/support/Error.h"
#include "runtime/support/ParallelChunks.h"
#include "runtime/support/Quantize.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unistd.h>

namespace sol {
#define GEN_PASS_DEF_SOLAWQCALIBRATE
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// Calibration rows kept per linear for its clipping search.
constexpr int64_t kClipRows = 2048;

/// SOL_AWQ_REPORT=1: each scaling group's chosen alpha and block-output
/// error on stderr (docs/debugging.md), e.g. to compare the GPU's search
/// with the CPU's.
bool reportSearch() {
  static const bool on = [] {
    const char *v = std::getenv("SOL_AWQ_REPORT");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

bool isPlainLinear(Operation *op) {
  auto linear = dyn_cast_or_null<LinearOp>(op);
  return linear && !linear.getResidual() && !linear.getWeightScales() &&
         linear.getEpilogue() == LinearEpilogue::None &&
         isa<FloatType>(linear.getWeight().getType().getElementType());
}

/// Linears sharing one input whose channels one vector of scales multiplies,
/// and the op that produces the input, which divides by it.
struct ScalingGroup {
  Value input;
  SmallVector<LinearOp> linears;
  /// A sol.rms_norm (its weight is divided) or a sol.linear (its rows and
  /// bias are).
  Operation *producer = nullptr;
  /// The ops from the linears to the layer's residual add (excluded), and
  /// the values of them that leave: the loss compares these.
  SmallVector<Operation *> region;
  SmallVector<Value> outputs;
  std::vector<float> scales;
};

/// What calibration decided for one linear.
struct LinearPlan {
  const std::vector<float> *columnScales = nullptr; // × s on its inputs
  const std::vector<float> *rowDivisors = nullptr;  // ÷ s on its outputs
  /// Rows of its (unscaled) calibration input, for the clipping search.
  std::vector<float> clipInput;
  int64_t clipRows = 0;
  std::vector<float> clipRatios;
  /// Its unscaled float weight, kept from the scale search for the clipping
  /// search (which would otherwise read it again).
  std::vector<float> weight;
  bool clip = false;
  bool waitsForRows = false; // a later group divides its rows
};

struct SolAwqCalibratePass
    : sol::impl::SolAwqCalibrateBase<SolAwqCalibratePass> {
  using SolAwqCalibrateBase::SolAwqCalibrateBase;
  SolAwqCalibratePass(WeightStore *store,
                      std::vector<std::vector<int32_t>> sequences,
                      const SolAwqCalibrateOptions &options, bool progress,
                      CalibrationEvaluatorFactory factory)
      : SolAwqCalibrateBase(options), store(store),
        sequences(std::move(sequences)), progress(progress),
        factory(std::move(factory)) {}

  void runOnOperation() override {
    if (!store || sequences.empty()) {
      getOperation().emitError()
          << "sol-awq-calibrate needs a weight store and calibration tokens "
             "(solc --quant int4-awq provides them)";
      return signalPassFailure();
    }
    if (groupSize <= 0 || groupSize % 2 || gridPoints < 1) {
      getOperation().emitError()
          << "sol-awq-calibrate: group size " << groupSize.getValue()
          << " and grid of " << gridPoints.getValue()
          << " points are invalid (need a positive even group size and at "
             "least one point)";
      return signalPassFailure();
    }
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (failed(calibrate(fn)))
        return signalPassFailure();
  }

  LogicalResult calibrate(func::FuncOp fn);
  void findGroups(func::FuncOp fn);
  void regionOf(ScalingGroup &group);
  LogicalResult search(ScalingGroup &group, CalibrationEvaluator &evaluator);
  void clip(LinearOp linear, LinearPlan &plan, CalibrationEvaluator &evaluator);
  bool searchesClip(LinearOp linear) const;
  void rewrite(func::FuncOp fn);
  Value storedVector(OpBuilder &b, Location loc, const std::string &name,
                     std::vector<float> values, ArrayRef<int64_t> shape);
  std::string weightName(Value weight) const;

  WeightStore *store = nullptr;
  std::vector<std::vector<int32_t>> sequences;
  bool progress = false;
  /// Empty: the CPU's evaluator.
  CalibrationEvaluatorFactory factory;

  std::vector<std::shared_ptr<ScalingGroup>> groups;
  llvm::DenseMap<Operation *, ScalingGroup *> groupOfLinear;
  /// The group whose scales divide a linear's rows (up, V), by linear.
  llvm::DenseMap<Operation *, ScalingGroup *> dividedBy;
  llvm::MapVector<Operation *, LinearPlan> plans;
};

/// The linears reading `v` when every user of `v` is a plain linear that
/// reads it as its input; empty otherwise.
SmallVector<LinearOp> linearUsers(Value v) {
  SmallVector<LinearOp> linears;
  for (OpOperand &use : v.getUses()) {
    if (!isPlainLinear(use.getOwner()) || use.getOperandNumber() != 0)
      return {};
    linears.push_back(cast<LinearOp>(use.getOwner()));
  }
  llvm::sort(linears,
             [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
  return linears;
}

void SolAwqCalibratePass::findGroups(func::FuncOp fn) {
  auto add = [&](Value input, Operation *producer) {
    SmallVector<LinearOp> linears = linearUsers(input);
    if (linears.empty())
      return;
    auto group = std::make_shared<ScalingGroup>();
    group->input = input;
    group->linears = std::move(linears);
    group->producer = producer;
    regionOf(*group);
    for (LinearOp l : group->linears)
      groupOfLinear[l] = group.get();
    groups.push_back(std::move(group));
  };
  for (Operation &op : fn.getBody().front()) {
    if (auto norm = dyn_cast<RmsNormOp>(&op)) {
      // A whole-row norm (not Qwen3's per-head q/k norms).
      if (norm.getWeight().getType().getDimSize(0) ==
          norm.getType().getDimSize(1))
        add(norm.getResult(), norm);
    } else if (auto swiglu = dyn_cast<SwigluOp>(&op)) {
      Operation *up = swiglu.getUp() ? swiglu.getUp().getDefiningOp() : nullptr;
      if (isPlainLinear(up) && up->getResult(0).hasOneUse())
        add(swiglu.getResult(), up);
    } else if (auto attention = dyn_cast<AttentionOp>(&op)) {
      // V's output channels are the attention output's only without
      // grouped-query attention.
      Operation *v = attention.getValue().getDefiningOp();
      if (isPlainLinear(v) && v->getResult(0).hasOneUse() &&
          attention.getNumHeads() == attention.getNumKvHeads())
        add(attention.getResult(), v);
    }
  }
}

/// The ops the group's linears feed, up to the residual adds: AWQ's "block
/// output" that the loss compares.
void SolAwqCalibratePass::regionOf(ScalingGroup &group) {
  llvm::SetVector<Operation *> ops;
  SmallVector<Operation *> work(group.linears.begin(), group.linears.end());
  llvm::SetVector<Value> outputs;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!ops.insert(op))
      continue;
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers()) {
        if (isa<AddOp, LogitsOp>(user) ||
            user->hasTrait<OpTrait::IsTerminator>())
          outputs.insert(result);
        else
          work.push_back(user);
      }
  }
  // Operands of a region op must be held by the evaluator when the group's
  // linears are reached, or be computed in the region; otherwise (an op
  // that also reads something computed later) compare the linears alone.
  Operation *first = group.linears.front();
  bool closed = true;
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && !ops.contains(def) && !isa<WeightOp>(def) &&
          !def->hasTrait<WeightTransform>() && !def->isBeforeInBlock(first))
        closed = false;
    }
  if (!closed) {
    ops.clear();
    outputs.clear();
    for (LinearOp l : group.linears) {
      ops.insert(l);
      outputs.insert(l.getResult());
    }
  }
  group.region.assign(ops.begin(), ops.end());
  llvm::sort(group.region,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  group.outputs.assign(outputs.begin(), outputs.end());
}

LogicalResult SolAwqCalibratePass::search(ScalingGroup &group,
                                          CalibrationEvaluator &evaluator) {
  const int64_t g = groupSize, tokens = evaluator.tokens();
  // Mean |x| per input channel.
  const std::vector<double> xSum = evaluator.columnAbsSums(group.input);
  const int64_t k = static_cast<int64_t>(xSum.size());
  // Mean over all rows of |w| / (largest |w| of its group).
  std::vector<std::vector<float>> weights;
  std::vector<double> wSum(k, 0.0);
  int64_t wRows = 0;
  const int64_t span = k % g == 0 ? g : k;
  for (LinearOp l : group.linears) {
    weights.push_back(evaluator.weight(l.getWeight()));
    const std::vector<float> &w = weights.back();
    const int64_t n = l.getWeight().getType().getDimSize(0);
    // In parallel over the groups of columns, each summing over all rows
    // in row order (the same sums on any number of threads).
    parallelChunks(k / span, n * k, [&](int64_t begin, int64_t end) {
      for (int64_t c0 = begin * span; c0 < end * span; c0 += span)
        for (int64_t r = 0; r < n; ++r) {
          const float *wg = w.data() + r * k + c0;
          float top = 0.0f;
          for (int64_t j = 0; j < span; ++j)
            top = std::max(top, std::fabs(wg[j]));
          for (int64_t j = 0; j < span; ++j)
            wSum[c0 + j] += std::fabs(wg[j]) / (top + 1e-6f);
        }
    });
    wRows += n;
  }

  if (failed(evaluator.setReference(group.region, group.outputs, group.linears,
                                    weights)))
    return failure();

  // Candidates: no scaling, then AWQ's grid over alpha.
  double bestError = std::numeric_limits<double>::infinity(), unscaled = 0;
  int bestPoint = -1;
  std::vector<float> best(k, 1.0f), s(k);
  for (int i = -1; i < gridPoints; ++i) {
    if (i < 0) {
      std::fill(s.begin(), s.end(), 1.0f);
    } else {
      const double alpha = static_cast<double>(i) / gridPoints;
      double lo = INFINITY, hi = 0.0;
      std::vector<double> raw(k);
      for (int64_t c = 0; c < k; ++c) {
        const double xMean = xSum[c] / static_cast<double>(tokens);
        const double wMean = wSum[c] / static_cast<double>(wRows);
        raw[c] = std::max(std::pow(xMean, alpha) /
                              (std::pow(wMean, 1.0 - alpha) + 1e-4),
                          1e-4);
        lo = std::min(lo, raw[c]);
        hi = std::max(hi, raw[c]);
      }
      const double norm = std::sqrt(lo * hi);
      for (int64_t c = 0; c < k; ++c)
        s[c] = static_cast<float>(raw[c] / norm);
    }
    FailureOr<double> error =
        evaluator.candidateError(group.linears, weights, s, g);
    if (failed(error))
      return failure();
    if (i < 0)
      unscaled = *error;
    if (*error < bestError) {
      bestError = *error;
      bestPoint = i;
      best = s;
    }
  }
  if (reportSearch()) {
    llvm::errs() << "solc: AWQ "
                 << weightName(group.linears.front().getWeight()) << ": ";
    if (bestPoint < 0)
      llvm::errs() << "unscaled";
    else
      llvm::errs() << "alpha "
                   << llvm::format("%.2f", double(bestPoint) / gridPoints);
    llvm::errs() << ", error " << llvm::format("%.6e", bestError)
                 << " (unscaled " << llvm::format("%.6e", unscaled) << ")\n";
  }
  group.scales = std::move(best);
  for (auto [l, w] : llvm::zip(group.linears, weights))
    if (searchesClip(l))
      plans[l].weight = std::move(w);
  return success();
}

void SolAwqCalibratePass::clip(LinearOp linear, LinearPlan &plan,
                               CalibrationEvaluator &evaluator) {
  auto type = linear.getWeight().getType();
  const int64_t n = type.getDimSize(0), k = type.getDimSize(1);
  std::vector<float> w = plan.weight.empty()
                             ? evaluator.weight(linear.getWeight())
                             : std::move(plan.weight);
  std::vector<float> x = std::move(plan.clipInput);
  parallelChunks(n, n * k, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t c = 0; c < k; ++c) {
        float &v = w[r * k + c];
        if (plan.columnScales)
          v *= (*plan.columnScales)[c];
        if (plan.rowDivisors)
          v /= (*plan.rowDivisors)[r];
      }
  });
  if (plan.columnScales)
    for (int64_t t = 0; t < plan.clipRows; ++t)
      for (int64_t c = 0; c < k; ++c)
        x[t * k + c] /= (*plan.columnScales)[c];
  plan.clipRatios =
      evaluator.clipRatios(w, n, k, groupSize, x, plan.clipRows, gridPoints);
  plan.clip = true;
}

/// True when `linear` feeds a rope, directly or through a per-head norm:
/// a query or key projection.
bool feedsRope(LinearOp linear) {
  for (Operation *user : linear.getResult().getUsers()) {
    if (isa<RopeOp>(user))
      return true;
    if (auto norm = dyn_cast<RmsNormOp>(user))
      for (Operation *next : norm.getResult().getUsers())
        if (isa<RopeOp>(next))
          return true;
  }
  return false;
}

/// Whether `linear` gets AWQ's clipping search: its inputs split into whole
/// groups, and it is no query or key projection (AWQ leaves those alone).
bool SolAwqCalibratePass::searchesClip(LinearOp linear) const {
  return linear.getWeight().getType().getDimSize(1) % groupSize == 0 &&
         !feedsRope(linear);
}

LogicalResult SolAwqCalibratePass::calibrate(func::FuncOp fn) {
  // Calibration evaluates the float model; a checkpoint that arrives
  // quantized has no float weights to scale.
  WalkResult quantized = fn.walk([&](Operation *op) {
    QuantScheme scheme = QuantScheme::None;
    const char *what = "is";
    if (auto l = dyn_cast<LinearOp>(op); l && l.getWeightScales()) {
      scheme = l.getQuant();
    } else if (auto m = dyn_cast<MoeOp>(op)) {
      scheme = m.getExpertQuant();
      what = "has experts";
    }
    if (scheme == QuantScheme::None)
      return WalkResult::advance();
    op->emitError() << what << " already quantized in the checkpoint ("
                    << stringifyQuantScheme(scheme)
                    << "); AWQ calibration needs float weights: compile this "
                       "checkpoint without --quant";
    return WalkResult::interrupt();
  });
  if (quantized.wasInterrupted())
    return failure();
  findGroups(fn);
  for (auto &group : groups)
    if (isa<LinearOp>(group->producer))
      dividedBy[group->producer] = group.get();

  SmallVector<LinearOp> linears;
  fn.walk([&](LinearOp l) {
    if (isPlainLinear(l))
      linears.push_back(l);
  });

  std::unique_ptr<CalibrationEvaluator> owned =
      factory ? factory(fn, *store, sequences)
              : createCpuCalibrationEvaluator(fn, *store, sequences);
  CalibrationEvaluator &evaluator = *owned;
  const bool tty = progress && isatty(STDERR_FILENO);
  for (auto [i, linear] : llvm::enumerate(linears)) {
    if (tty)
      std::fprintf(
          stderr, "\rsolc: AWQ calibration on %lld tokens (%s): linear %zu/%zu",
          static_cast<long long>(evaluator.tokens()),
          evaluator.device().c_str(), i + 1, linears.size());
    if (failed(evaluator.runUntil(linear)))
      return failure();
    ScalingGroup *group = groupOfLinear.lookup(linear);
    if (group && group->linears.front() == linear &&
        failed(search(*group, evaluator)))
      return failure();
    LinearPlan &plan = plans[linear];
    if (group)
      plan.columnScales = &group->scales;
    if (searchesClip(linear)) {
      // Evenly spaced calibration rows for the clipping search.
      const int64_t rows = std::min(evaluator.tokens(), kClipRows);
      plan.clipRows = rows;
      plan.clipInput = evaluator.sampleRows(linear.getInput(), rows);
      plan.waitsForRows = dividedBy.count(linear);
      if (!plan.waitsForRows)
        clip(linear, plan, evaluator);
    }
    // The producer of this group is ready once the group has its scales.
    if (group && group->linears.front() == linear)
      if (Operation *producer = group->producer; isa<LinearOp>(producer)) {
        LinearPlan &p = plans[producer];
        p.rowDivisors = &group->scales;
        if (p.waitsForRows) {
          p.waitsForRows = false;
          clip(cast<LinearOp>(producer), p, evaluator);
        }
      }
  }
  if (tty)
    std::fprintf(stderr, " done\n");
  // The evaluator goes first: it may still read weights on other threads,
  // and the rewrite changes the IR they read.
  owned.reset();
  rewrite(fn);
  return success();
}

std::string SolAwqCalibratePass::weightName(Value weight) const {
  if (auto w = weight.getDefiningOp<WeightOp>())
    return w.getName().str();
  return "awq";
}

Value SolAwqCalibratePass::storedVector(OpBuilder &b, Location loc,
                                        const std::string &base,
                                        std::vector<float> values,
                                        ArrayRef<int64_t> shape) {
  std::string name = base;
  for (int n = 2; store->contains(name); ++n)
    name = base + "#" + std::to_string(n);
  auto owned = std::make_shared<std::vector<float>>(std::move(values));
  store->addView(name, DType::F32, {shape.begin(), shape.end()},
                 std::as_bytes(std::span(*owned)));
  store->retain(owned);
  auto type = RankedTensorType::get(shape, b.getF32Type());
  return b.create<WeightOp>(loc, type,
                            FlatSymbolRefAttr::get(b.getContext(), name));
}

void SolAwqCalibratePass::rewrite(func::FuncOp fn) {
  llvm::DenseMap<ScalingGroup *, Value> scaleValues;
  auto scalesOf = [&](ScalingGroup *group, Location loc) {
    Value &v = scaleValues[group];
    if (!v) {
      // Defined before the group's producer, which reads it too.
      OpBuilder at(group->producer);
      v = storedVector(
          at, loc,
          weightName(group->linears.front().getWeight()) + "~awq.scales",
          group->scales, {static_cast<int64_t>(group->scales.size())});
    }
    return v;
  };
  for (auto &group : groups) {
    if (auto norm = dyn_cast<RmsNormOp>(group->producer)) {
      OpBuilder b(norm);
      Value s = scalesOf(group.get(), norm.getLoc());
      Value w =
          b.create<ScaleWeightOp>(norm.getLoc(), norm.getWeight(), s,
                                  b.getI64IntegerAttr(0), b.getUnitAttr());
      norm.getWeightMutable().assign(w);
    }
  }
  for (auto &[op, plan] : plans) {
    auto linear = cast<LinearOp>(op);
    OpBuilder b(linear);
    Location loc = linear.getLoc();
    const std::string name = weightName(linear.getWeight());
    Value w = linear.getWeight();
    if (plan.columnScales)
      w = b.create<ScaleWeightOp>(loc, w,
                                  scalesOf(groupOfLinear.lookup(linear), loc),
                                  b.getI64IntegerAttr(1), UnitAttr());
    if (plan.rowDivisors) {
      Value s = scalesOf(dividedBy.lookup(op), loc);
      w = b.create<ScaleWeightOp>(loc, w, s, b.getI64IntegerAttr(0),
                                  b.getUnitAttr());
      if (Value bias = linear.getBias())
        linear.getBiasMutable().assign(b.create<ScaleWeightOp>(
            loc, bias, s, b.getI64IntegerAttr(0), b.getUnitAttr()));
    }
    if (plan.clip) {
      auto type = linear.getWeight().getType();
      const int64_t n = type.getDimSize(0), k = type.getDimSize(1);
      Value ratios =
          storedVector(b, loc, name + "~awq.clip", std::move(plan.clipRatios),
                       {n, k / groupSize});
      w = b.create<ClampWeightOp>(loc, w, ratios,
                                  b.getI64IntegerAttr(groupSize));
    }
    if (w != linear.getWeight())
      linear.getWeightMutable().assign(w);
  }
}

} // namespace

std::unique_ptr<Pass>
sol::createSolAwqCalibrate(WeightStore &store,
                           std::vector<std::vector<int32_t>> sequences,
                           const SolAwqCalibrateOptions &options, bool progress,
                           CalibrationEvaluatorFactory factory) {
  return std::make_unique<SolAwqCalibratePass>(
      &store, std::move(sequences), options, progress, std::move(factory));
}

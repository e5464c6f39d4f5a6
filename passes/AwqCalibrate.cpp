//===- AwqCalibrate.cpp - sol-awq-calibrate -------------------------------===//
//
// AWQ (Lin et al., "Activation-aware Weight Quantization") as weight
// transforms: calibration measures which input channels carry large
// activations, scales them up in the weights (and down in whatever produces
// the input) so that int4 rounding costs them less, then picks each int4
// group's clipping. The result is sol.scale_weight and sol.clamp_weight ops
// over the original weights; sol-quantize and sol-materialize-weights do
// the rest as for any int4 plan. A mixture of experts joins the group of the
// norm before it, and each of its experts is calibrated on the tokens routed
// to it (calibrateExperts). Passes.td describes the algorithm.
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

/// Whether AWQ calibrates the experts of `moe` in groups of `g`: float ones
/// that both evaluators run and that sol-quantize gives int4.
bool calibratesExperts(MoeOp moe, int64_t g) {
  return !moe.isMxfp4() && moe.getExpertQuant() == QuantScheme::None &&
         moe.getBiases().empty() &&
         moe.getActivation() != GateActivation::ClampedSilu &&
         moe.getGate().getType().getDimSize(1) % g == 0 &&
         moe.getExpertWidth() % g == 0;
}

/// Linears (and mixtures of experts) sharing one input whose channels one
/// vector of scales multiplies, and the op that produces the input, which
/// divides by it.
struct ScalingGroup {
  Value input;
  SmallVector<LinearOp> linears;
  /// Mixtures reading the input: their experts' gate and up are quantized
  /// with the scales, their router takes them exactly (it stays float).
  SmallVector<MoeOp> mixtures;
  /// Qwen2-MoE's shared-expert gates reading the input: float, scaled.
  SmallVector<SigmoidGateOp> gates;
  /// A sol.rms_norm (its weight is divided) or a sol.linear (its rows and
  /// bias are).
  Operation *producer = nullptr;
  /// The ops from the linears to the layer's residual add (excluded), and
  /// the values of them that leave: the loss compares these.
  SmallVector<Operation *> region;
  SmallVector<Value> outputs;
  std::vector<float> scales;

  /// The first of its linears and mixtures in program order.
  Operation *first() const {
    Operation *op = linears.empty() ? nullptr : linears.front();
    for (MoeOp m : mixtures)
      if (!op || m->isBeforeInBlock(op))
        op = m;
    return op;
  }
  /// The weights that take the scales and are quantized: the linears', the
  /// mixtures' stacked gate and up.
  SmallVector<Value> scaledWeights() const {
    SmallVector<Value> weights;
    for (LinearOp l : linears)
      weights.push_back(l.getWeight());
    for (MoeOp m : mixtures) {
      weights.push_back(m.getGate());
      weights.push_back(m.getUp());
    }
    return weights;
  }
};

/// What calibration decided for the experts of one mixture: AWQ's scaling
/// between each expert's up and down projections, and the clipping of all
/// three.
struct MixturePlan {
  /// Gate and up of every expert, unscaled ([E * I, H]), from the search of
  /// the mixture's scaling group.
  std::vector<float> gate, up;
  /// Each expert's scales between up and down ([E, I]; 1 for experts that
  /// no calibration token reached).
  std::vector<float> scales;
  /// Clipping ratios of the stacked gate, up ([E * I, H / g]) and down
  /// ([E * H, I / g]).
  std::vector<float> gateClip, upClip, downClip;
};

/// The outcome of AWQ's search over alpha for one group of scales.
struct ScaleSearch {
  std::vector<float> scales;
  double error = 0, unscaledError = 0;
  /// The grid point that won; -1 when no scaling did best.
  int point = -1;
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
  LogicalResult calibrateExperts(MoeOp moe, CalibrationEvaluator &evaluator);
  FailureOr<ScaleSearch>
  searchScales(std::span<const double> xSum, int64_t tokens,
               std::span<const double> wSum, int64_t wRows,
               llvm::function_ref<FailureOr<double>(std::span<const float>)>
                   candidateError);
  bool searchesClip(LinearOp linear) const;
  void rewrite(func::FuncOp fn);
  Value storedVector(OpBuilder &b, Location loc, const std::string &name,
                     std::vector<float> values, ArrayRef<int64_t> shape);
  std::string weightName(Value weight) const;
  std::string groupName(const ScalingGroup &group) const;

  WeightStore *store = nullptr;
  std::vector<std::vector<int32_t>> sequences;
  bool progress = false;
  /// Empty: the CPU's evaluator.
  CalibrationEvaluatorFactory factory;

  std::vector<std::shared_ptr<ScalingGroup>> groups;
  llvm::DenseMap<Operation *, ScalingGroup *> groupOf;
  /// The group whose scales divide a linear's rows (up, V), by linear.
  llvm::DenseMap<Operation *, ScalingGroup *> dividedBy;
  llvm::MapVector<Operation *, LinearPlan> plans;
  llvm::MapVector<Operation *, MixturePlan> mixturePlans;
};

/// Fills `group` with the users of `v` when every one reads it as a plain
/// linear's input, a calibrated mixture's input or a sigmoid gate's input
/// (and some user is quantized); false otherwise.
bool usersScaledBy(Value v, ScalingGroup &group, int64_t g) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isPlainLinear(user) && use.getOperandNumber() == 0)
      group.linears.push_back(cast<LinearOp>(user));
    else if (auto moe = dyn_cast<MoeOp>(user);
             moe && &use == &moe.getInputMutable() && calibratesExperts(moe, g))
      group.mixtures.push_back(moe);
    else if (auto gate = dyn_cast<SigmoidGateOp>(user);
             gate && &use == &gate.getInputMutable())
      group.gates.push_back(gate);
    else
      return false;
  }
  auto inOrder = [](auto a, auto b) { return a->isBeforeInBlock(b); };
  llvm::sort(group.linears, inOrder);
  llvm::sort(group.mixtures, inOrder);
  return !group.linears.empty() || !group.mixtures.empty();
}

void SolAwqCalibratePass::findGroups(func::FuncOp fn) {
  auto add = [&](Value input, Operation *producer) {
    auto group = std::make_shared<ScalingGroup>();
    if (!usersScaledBy(input, *group, groupSize))
      return;
    group->input = input;
    group->producer = producer;
    regionOf(*group);
    for (LinearOp l : group->linears)
      groupOf[l] = group.get();
    for (MoeOp m : group->mixtures)
      groupOf[m] = group.get();
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
  work.append(group.mixtures.begin(), group.mixtures.end());
  work.append(group.gates.begin(), group.gates.end());
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
  Operation *first = group.first();
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
    for (MoeOp m : group.mixtures) {
      ops.insert(m);
      outputs.insert(m.getResult());
    }
  }
  group.region.assign(ops.begin(), ops.end());
  llvm::sort(group.region,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  group.outputs.assign(outputs.begin(), outputs.end());
}

/// Divides each column c of `rows` rows by s[c].
void divideColumns(std::vector<float> &x, int64_t rows,
                   std::span<const float> s) {
  const int64_t k = static_cast<int64_t>(s.size());
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = 0; c < k; ++c)
      x[t * k + c] /= s[c];
}

/// Adds to wSum[c], for each column c of an [n, k] weight, the sum over its
/// rows of |w| divided by the largest |w| of its int4 group (of its row when
/// k is not a multiple of g). In parallel over the groups of columns, each
/// summing over all rows in row order (the same sums on any number of
/// threads).
void addGroupNormalizedAbs(std::vector<double> &wSum, std::span<const float> w,
                           int64_t n, int64_t k, int64_t g) {
  const int64_t span = k % g == 0 ? g : k;
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
}

FailureOr<ScaleSearch> SolAwqCalibratePass::searchScales(
    std::span<const double> xSum, int64_t tokens, std::span<const double> wSum,
    int64_t wRows,
    llvm::function_ref<FailureOr<double>(std::span<const float>)>
        candidateError) {
  const int64_t k = static_cast<int64_t>(xSum.size());
  // Candidates: no scaling, then AWQ's grid over alpha.
  ScaleSearch best;
  best.error = std::numeric_limits<double>::infinity();
  best.scales.assign(k, 1.0f);
  std::vector<float> s(k);
  std::vector<double> raw(k);
  for (int i = -1; i < gridPoints; ++i) {
    if (i < 0) {
      std::fill(s.begin(), s.end(), 1.0f);
    } else {
      const double alpha = static_cast<double>(i) / gridPoints;
      double lo = INFINITY, hi = 0.0;
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
    FailureOr<double> error = candidateError(s);
    if (failed(error))
      return failure();
    if (i < 0)
      best.unscaledError = *error;
    if (*error < best.error) {
      best.error = *error;
      best.point = i;
      best.scales = s;
    }
  }
  return best;
}

LogicalResult SolAwqCalibratePass::search(ScalingGroup &group,
                                          CalibrationEvaluator &evaluator) {
  const int64_t g = groupSize;
  // Mean |x| per input channel; mean over all rows of |w| / (largest |w| of
  // its group).
  const std::vector<double> xSum = evaluator.columnAbsSums(group.input);
  const int64_t k = static_cast<int64_t>(xSum.size());
  const SmallVector<Value> scaled = group.scaledWeights();
  std::vector<std::vector<float>> weights;
  std::vector<double> wSum(k, 0.0);
  int64_t wRows = 0;
  for (Value w : scaled) {
    weights.push_back(evaluator.weight(w));
    const int64_t n = static_cast<int64_t>(weights.back().size()) / k;
    addGroupNormalizedAbs(wSum, weights.back(), n, k, g);
    wRows += n;
  }

  if (failed(
          evaluator.setReference(group.region, group.outputs, scaled, weights)))
    return failure();
  FailureOr<ScaleSearch> best = searchScales(
      xSum, evaluator.tokens(), wSum, wRows, [&](std::span<const float> s) {
        return evaluator.candidateError(scaled, weights, s, g);
      });
  if (failed(best))
    return failure();
  if (reportSearch()) {
    llvm::errs() << "solc: AWQ " << groupName(group) << ": ";
    if (best->point < 0)
      llvm::errs() << "unscaled";
    else
      llvm::errs() << "alpha "
                   << llvm::format("%.2f", double(best->point) / gridPoints);
    llvm::errs() << ", error " << llvm::format("%.6e", best->error)
                 << " (unscaled " << llvm::format("%.6e", best->unscaledError)
                 << ")\n";
  }
  group.scales = std::move(best->scales);
  // The clipping search takes the linears' weights; the experts' search
  // the mixtures' gate and up.
  auto w = weights.begin();
  for (LinearOp l : group.linears) {
    if (searchesClip(l))
      plans[l].weight = std::move(*w);
    ++w;
  }
  for (MoeOp m : group.mixtures) {
    MixturePlan &plan = mixturePlans[m];
    plan.gate = std::move(*w++);
    plan.up = std::move(*w++);
  }
  return success();
}

LogicalResult
SolAwqCalibratePass::calibrateExperts(MoeOp moe,
                                      CalibrationEvaluator &evaluator) {
  const int64_t g = groupSize, experts = moe.getNumExperts();
  const int64_t width = moe.getExpertWidth();
  const int64_t hidden = moe.getGate().getType().getDimSize(1);
  MixturePlan &plan = mixturePlans[moe];
  // The scales of the group the mixture's input belongs to (its experts'
  // gate and up take them), if any.
  ScalingGroup *group = groupOf.lookup(moe);
  std::span<const float> inScales;
  if (group)
    inScales = group->scales;
  plan.scales.assign(static_cast<size_t>(experts * width), 1.0f);
  plan.gateClip.assign(static_cast<size_t>(experts * width * hidden / g), 1.0f);
  plan.upClip = plan.gateClip;
  plan.downClip.assign(static_cast<size_t>(experts * hidden * width / g), 1.0f);
  const size_t each = static_cast<size_t>(width * hidden);
  auto expertOf = [&](const std::vector<float> &stacked, Value w, int64_t e) {
    if (stacked.empty())
      return evaluator.expertWeight(w, e, experts);
    auto first = stacked.begin() + static_cast<std::ptrdiff_t>(each * e);
    return std::vector<float>(first, first + static_cast<std::ptrdiff_t>(each));
  };
  int reached = 0, scaled = 0;
  double errorSum = 0, unscaledSum = 0;
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<float> gate = expertOf(plan.gate, moe.getGate(), e);
    std::vector<float> up = expertOf(plan.up, moe.getUp(), e);
    std::vector<float> down = evaluator.expertWeight(moe.getDown(), e, experts);
    FailureOr<int64_t> rows = evaluator.selectExpert(moe, e, gate, up, down);
    if (failed(rows))
      return failure();
    if (*rows == 0)
      continue; // no calibration token reached it: round to nearest
    ++reached;
    // Up -> down: the scales of down's inputs by the expert's own tokens.
    const std::vector<double> hSum = evaluator.expertHiddenAbsSums();
    std::vector<double> wSum(static_cast<size_t>(width), 0.0);
    addGroupNormalizedAbs(wSum, down, hidden, width, g);
    FailureOr<ScaleSearch> best =
        searchScales(hSum, *rows, wSum, hidden, [&](std::span<const float> s) {
          return evaluator.expertCandidateError(s, g);
        });
    if (failed(best))
      return failure();
    const std::vector<float> &s = best->scales;
    std::copy(s.begin(), s.end(), plan.scales.begin() + e * width);
    scaled += best->point >= 0;
    errorSum += best->error;
    unscaledSum += best->unscaledError;

    // Clipping of all three on the expert's tokens, with the weights and
    // inputs scaled as the plan will have them.
    const int64_t clipRows = std::min(*rows, kClipRows);
    std::vector<float> x = evaluator.sampleExpertRows(false, clipRows);
    for (int64_t r = 0; r < width; ++r)
      for (int64_t c = 0; c < hidden; ++c) {
        const float in = inScales.empty() ? 1.0f : inScales[c];
        gate[r * hidden + c] *= in;
        up[r * hidden + c] = up[r * hidden + c] * in / s[r];
      }
    if (!inScales.empty())
      divideColumns(x, clipRows, inScales);
    auto place = [&](std::vector<float> ratios, std::vector<float> &into) {
      std::copy(ratios.begin(), ratios.end(),
                into.begin() + static_cast<std::ptrdiff_t>(e) *
                                   static_cast<std::ptrdiff_t>(ratios.size()));
    };
    place(evaluator.clipRatios(gate, width, hidden, g, x, clipRows, gridPoints),
          plan.gateClip);
    place(evaluator.clipRatios(up, width, hidden, g, x, clipRows, gridPoints),
          plan.upClip);
    std::vector<float> h = evaluator.sampleExpertRows(true, clipRows);
    divideColumns(h, clipRows, s);
    for (int64_t r = 0; r < hidden; ++r)
      for (int64_t c = 0; c < width; ++c)
        down[r * width + c] *= s[c];
    place(evaluator.clipRatios(down, hidden, width, g, h, clipRows, gridPoints),
          plan.downClip);
  }
  if (reportSearch())
    llvm::errs() << "solc: AWQ " << weightName(moe.getRouter())
                 << " experts: " << reached << " of " << experts << " reached, "
                 << scaled << " scaled, mean error "
                 << llvm::format("%.6e", reached ? errorSum / reached : 0.0)
                 << " (unscaled "
                 << llvm::format("%.6e", reached ? unscaledSum / reached : 0.0)
                 << ")\n";
  plan.gate = {};
  plan.up = {};
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
    divideColumns(x, plan.clipRows, *plan.columnScales);
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

  // What calibration visits, in program order: the plain linears and the
  // mixtures whose experts it calibrates.
  SmallVector<Operation *> members;
  fn.walk([&](Operation *op) {
    auto moe = dyn_cast<MoeOp>(op);
    if (isPlainLinear(op) || (moe && calibratesExperts(moe, groupSize)))
      members.push_back(op);
  });

  std::unique_ptr<CalibrationEvaluator> owned =
      factory ? factory(fn, *store, sequences)
              : createCpuCalibrationEvaluator(fn, *store, sequences);
  CalibrationEvaluator &evaluator = *owned;
  const bool tty = progress && isatty(STDERR_FILENO);
  for (auto [i, op] : llvm::enumerate(members)) {
    if (tty)
      std::fprintf(
          stderr, "\rsolc: AWQ calibration on %lld tokens (%s): %s %zu/%zu",
          static_cast<long long>(evaluator.tokens()),
          evaluator.device().c_str(), isa<MoeOp>(op) ? "mixture" : "linear",
          i + 1, members.size());
    if (failed(evaluator.runUntil(op)))
      return failure();
    ScalingGroup *group = groupOf.lookup(op);
    if (group && group->first() == op && failed(search(*group, evaluator)))
      return failure();
    if (auto moe = dyn_cast<MoeOp>(op)) {
      if (failed(calibrateExperts(moe, evaluator)))
        return failure();
      continue;
    }
    auto linear = cast<LinearOp>(op);
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
    if (group && group->first() == op)
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
  // Through conversions and scalings (operand 0) to the checkpoint's tensor.
  Operation *def = weight.getDefiningOp();
  while (def && def->hasTrait<WeightTransform>() && !isa<ConcatWeightsOp>(def))
    def = def->getOperand(0).getDefiningOp();
  if (auto w = dyn_cast_or_null<WeightOp>(def))
    return w.getName().str();
  return "awq";
}

std::string SolAwqCalibratePass::groupName(const ScalingGroup &group) const {
  return weightName(group.linears.empty()
                        ? MoeOp(group.mixtures.front()).getRouter()
                        : LinearOp(group.linears.front()).getWeight());
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
      v = storedVector(at, loc, groupName(*group) + "~awq.scales",
                       group->scales,
                       {static_cast<int64_t>(group->scales.size())});
    }
    return v;
  };
  auto scaleColumns = [](OpBuilder &b, Location loc, Value w, Value s) {
    return b
        .create<ScaleWeightOp>(loc, w, s, b.getI64IntegerAttr(1), UnitAttr())
        .getResult();
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
    // The mixtures' router (float: the same logits) and experts' gate and
    // up, and the shared-expert gates, take the scales on their inputs.
    for (MoeOp m : group->mixtures) {
      OpBuilder b(m);
      Location loc = m.getLoc();
      Value s = scalesOf(group.get(), loc);
      m.getRouterMutable().assign(scaleColumns(b, loc, m.getRouter(), s));
      m.getGateMutable().assign(scaleColumns(b, loc, m.getGate(), s));
      m.getUpMutable().assign(scaleColumns(b, loc, m.getUp(), s));
    }
    for (SigmoidGateOp gate : group->gates) {
      OpBuilder b(gate);
      Value s = scalesOf(group.get(), gate.getLoc());
      gate.getWeightMutable().assign(
          scaleColumns(b, gate.getLoc(), gate.getWeight(), s));
    }
  }
  // Each expert's scales between up (its rows divided) and down (its
  // inputs), then the clipping of all three.
  for (auto &[op, plan] : mixturePlans) {
    auto m = cast<MoeOp>(op);
    OpBuilder b(m);
    Location loc = m.getLoc();
    const std::string name = weightName(m.getRouter()) + "~awq.experts";
    const int64_t experts = m.getNumExperts(), width = m.getExpertWidth();
    const int64_t hidden = m.getGate().getType().getDimSize(1);
    Value rowScales =
        storedVector(b, loc, name + ".up_rows", plan.scales, {experts * width});
    Value inputScales = storedVector(b, loc, name + ".down_inputs",
                                     std::move(plan.scales), {experts, width});
    Value up = b.create<ScaleWeightOp>(loc, m.getUp(), rowScales,
                                       b.getI64IntegerAttr(0), b.getUnitAttr());
    Value down = scaleColumns(b, loc, m.getDown(), inputScales);
    auto clamp = [&](Value w, std::vector<float> ratios, StringRef part,
                     int64_t rows, int64_t cols) {
      Value r = storedVector(b, loc, name + "." + part.str() + "_clip",
                             std::move(ratios), {rows, cols / groupSize});
      return b.create<ClampWeightOp>(loc, w, r, b.getI64IntegerAttr(groupSize))
          .getResult();
    };
    m.getGateMutable().assign(clamp(m.getGate(), std::move(plan.gateClip),
                                    "gate", experts * width, hidden));
    m.getUpMutable().assign(
        clamp(up, std::move(plan.upClip), "up", experts * width, hidden));
    m.getDownMutable().assign(
        clamp(down, std::move(plan.downClip), "down", experts * hidden, width));
  }
  for (auto &[op, plan] : plans) {
    auto linear = cast<LinearOp>(op);
    OpBuilder b(linear);
    Location loc = linear.getLoc();
    const std::string name = weightName(linear.getWeight());
    Value w = linear.getWeight();
    if (plan.columnScales)
      w = scaleColumns(b, loc, w, scalesOf(groupOf.lookup(linear), loc));
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

//===- RaiseRope.cpp - sol-raise-rope -------------------------------------===//
//
// Rotary embeddings as Hugging Face code exports them:
//
//   x * cos + rotate_half(x) * sin,
//   rotate_half(x) = Concat(Neg(x[..., d/2:]), x[..., :d/2])
//
// on the [batch, heads, sequence, head_dim] view of a projection, with cos
// and sin computed from the positions at run time (inv_freq × positions,
// Cos, Sin) or gathered from cached tables. How exporters build cos and sin
// varies, so the pattern evaluates them (OnnxEvaluator) for a few
// positions instead of matching their nodes: the angle at position 1 is
// inv_freq, every other position must agree with it, and inv_freq must be
// one that Sol's #sol.rope computes (config.json's rope parameters when the
// graph came with one, else plain or linearly scaled theta fitted from it).
// Opset 23's RotaryEmbedding op is checked the same way (its tables hold
// each frequency once).
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxEvaluator.h"
#include "passes/OnnxMatch.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace sol {
#define GEN_PASS_DEF_SOLRAISEROPE
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;
using namespace sol::raise;

namespace {

/// Positions the cos/sin subgraph is evaluated at: 1 gives inv_freq, the
/// others (out of order, far apart) check that the table is read by
/// position.
const std::vector<int64_t> kProbePositions = {0, 1, 5, 2, 11, 3, 37, 100};

/// True when `v` is x[..., lo:hi] on the last axis.
bool isLastAxisSlice(Value v, Value x, int64_t lo, int64_t hi, int64_t rank) {
  OnnxOp slice = producer(v, "Slice");
  if (!slice || slice.getInputs().size() < 3 ||
      skipFloatCasts(slice.getInputs()[0]) != x)
    return false;
  auto starts = intValues(slice.getInputs()[1]);
  auto ends = intValues(slice.getInputs()[2]);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1)
    return false;
  if (slice.getInputs().size() > 3 &&
      !isa<NoneType>(slice.getInputs()[3].getType())) {
    auto axes = intValues(slice.getInputs()[3]);
    if (!axes || axes->size() != 1 ||
        !((*axes)[0] == -1 || (*axes)[0] == rank - 1))
      return false;
  } else if (rank != 1) {
    return false;
  }
  if (slice.getInputs().size() > 4 &&
      !isa<NoneType>(slice.getInputs()[4].getType())) {
    auto steps = intValues(slice.getInputs()[4]);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1)
      return false;
  }
  return (*starts)[0] == lo && ((*ends)[0] == hi || (*ends)[0] >= (1LL << 31));
}

/// True when `v` is rotate_half(x) for heads of `dim`.
bool isRotateHalf(Value v, Value x, int64_t dim, int64_t rank) {
  OnnxOp concat = producer(skipFloatCasts(v), "Concat");
  if (!concat || concat.getInputs().size() != 2)
    return false;
  int64_t axis = intAttr(concat, "axis", 0);
  if (!(axis == -1 || axis == rank - 1))
    return false;
  OnnxOp neg = producer(concat.getInputs()[0], "Neg");
  return neg && isLastAxisSlice(neg.getInputs()[0], x, dim / 2, dim, rank) &&
         isLastAxisSlice(concat.getInputs()[1], x, 0, dim / 2, rank);
}

/// `x` rounded to `digits` significant digits (0: unchanged).
double rounded(double x, int digits) {
  if (x <= 0 || digits == 0)
    return x;
  double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(x)));
  return std::round(x * scale) / scale;
}

/// Rope parameters that could give `invFreq` (heads of `dim`), most likely
/// first: the hint, plain or linearly scaled theta fitted from the two
/// highest frequencies, and llama3's scaling fitted from the lowest two
/// (theta and factor) and the smoothed middle band (the band's edges).
std::vector<RopeParameters> ropeCandidates(ArrayRef<double> invFreq,
                                           int64_t dim, RopeAttr hint) {
  std::vector<RopeParameters> out;
  if (hint)
    out.push_back(ropeParameters(hint));
  const int64_t half = invFreq.size();
  if (half < 2 || llvm::any_of(invFreq, [](double f) { return !(f > 0); }))
    return out;
  // inv_freq[i] = theta^(-2i/dim) / factor; theta and factor are round
  // numbers in every config, so try them rounded first.
  const double rawFactor = 1.0 / invFreq[0];
  const double rawTheta = std::pow(invFreq[1] * rawFactor, -double(dim) / 2.0);
  for (int digits : {3, 4, 6, 0}) {
    RopeParameters p;
    p.theta = rounded(rawTheta, digits);
    p.factor = rounded(rawFactor, digits);
    p.scaling = std::fabs(p.factor - 1.0) > 1e-6 ? RopeScaling::Linear
                                                 : RopeScaling::None;
    if (p.scaling == RopeScaling::None)
      p.factor = 1.0;
    out.push_back(p);
  }
  // llama3: the lowest frequencies are divided by the factor, the highest
  // kept, and those between blended by s = (orig / wavelen - low) /
  // (high - low), a line in 1 / wavelen whose slope and intercept give
  // orig / (high - low) and low / (high - low) (low taken as 1). theta comes
  // from two neighbours of one band: the highest two (exact when both are
  // kept) or the lowest two (both divided; but cached tables pin the lowest
  // frequencies only to their type's relative precision, their angles
  // staying small), and the factor from the lowest one.
  const double thetaHigh =
      std::pow(invFreq[1] / invFreq[0], -double(dim) / 2.0);
  const double thetaLow =
      std::pow(invFreq[half - 1] / invFreq[half - 2], -double(dim) / 2.0);
  for (double rawTheta3 : {thetaHigh, thetaLow})
    for (int digits : {2, 3, 4, 6}) {
      RopeParameters p;
      p.scaling = RopeScaling::Llama3;
      p.theta = rounded(rawTheta3, digits);
      auto base = [&](int64_t i) {
        return std::pow(p.theta, -2.0 * double(i) / double(dim));
      };
      p.factor = rounded(base(half - 1) / invFreq[half - 1], digits);
      if (!(p.factor > 1.0))
        continue;
      SmallVector<std::pair<double, double>> band; // (1 / wavelen, s)
      for (int64_t i = 0; i < half; ++i) {
        const double ratio = invFreq[i] / base(i);
        const double s = (ratio - 1.0 / p.factor) / (1.0 - 1.0 / p.factor);
        if (s > 1e-3 && s < 1.0 - 1e-3)
          band.push_back({base(i) / (2.0 * M_PI), s});
      }
      p.lowFreqFactor = 1.0;
      if (band.size() >= 2) {
        auto [x0, s0] = band.front();
        auto [x1, s1] = band.back();
        const double slope = (s1 - s0) / (x1 - x0);
        const double intercept = s0 - slope * x0;
        if (!(intercept < 0))
          continue;
        p.highFreqFactor = rounded(1.0 - 1.0 / intercept, std::max(digits, 3));
        p.originalMaxPosition = static_cast<int64_t>(
            std::llround(slope * (p.highFreqFactor - p.lowFreqFactor)));
      } else {
        // No band to fit: Llama 3.1's own edges.
        p.highFreqFactor = 4.0;
        p.originalMaxPosition = 8192;
      }
      out.push_back(p);
    }
  return out;
}

/// The first candidate for `invFreq` that `matches` accepts, as a #sol.rope
/// whose cos and sin are multiplied by `scaling` (1 unless the tables were
/// scaled: yarn's attention factor; only the hint has such a factor).
std::optional<RopeAttr>
fitRope(MLIRContext *ctx, ArrayRef<double> invFreq, int64_t dim, RopeAttr hint,
        llvm::function_ref<bool(const RopeTable &)> matches,
        double scaling = 1.0, int64_t rotary = 0) {
  // Candidates fitted from the numbers rotate `rotary` dims of a head of
  // `dim` (all when 0); the hint says its own.
  std::vector<RopeParameters> candidates =
      ropeCandidates(invFreq, rotary ? rotary : dim, hint);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!(hint && i == 0))
      candidates[i].rotaryDim = rotary;
    try {
      RopeTable table = RopeTable::compute(candidates[i], dim);
      if (std::fabs(table.attentionScaling - scaling) < 1e-3 * scaling &&
          matches(table))
        return hint && i == 0 ? hint : ropeAttr(ctx, candidates[i]);
    } catch (const std::exception &) {
      // Parameters RopeTable rejects: not this candidate.
    }
  }
  return std::nullopt;
}

/// The hint of the config.json beside the graph, if any.
RopeAttr ropeHint(Operation *at) {
  if (auto source =
          at->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
              "sol.onnx_source"))
    return dyn_cast_or_null<RopeAttr>(source.get("rope"));
  return {};
}

/// The #sol.rope whose cos and sin the subgraphs `cos` and `sin` compute
/// for heads of `dim` (tables of dim/2 columns when `halfTables`, as opset
/// 23's RotaryEmbedding takes them, else both halves repeated), evaluated
/// at the probe positions; nullopt with `why` set otherwise.
std::optional<RopeAttr> ropeFromTables(Operation *at, Value cos, Value sin,
                                       int64_t dim, bool halfTables,
                                       std::string &why) {
  auto fn = at->getParentOfType<func::FuncOp>();
  OnnxEvaluator eval;
  if (!bindStep(eval, fn, 0, kProbePositions)) {
    why = "the graph's inputs have sizes the probe cannot set";
    return std::nullopt;
  }
  std::optional<EvalTensor> c = eval.evaluate(cos), s = eval.evaluate(sin);
  const int64_t n = kProbePositions.size(), half = dim / 2;
  const int64_t cols = halfTables ? half : dim;
  if (!c || !s) {
    why = "cannot evaluate cos and sin: " + eval.reason();
    return std::nullopt;
  }
  if (c->shapeOnly || s->shapeOnly || c->size() != n * cols ||
      s->size() != n * cols) {
    why = "cos and sin are not tables of one row per position";
    return std::nullopt;
  }
  // Position 1 (row 1) holds inv_freq as angles.
  SmallVector<double> invFreq(half);
  for (int64_t i = 0; i < half; ++i)
    invFreq[i] = std::atan2(s->data[cols + i], c->data[cols + i]);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t i = 0; i < cols; ++i) {
      double angle = double(kProbePositions[row]) * invFreq[i % half];
      if (std::fabs(c->data[row * cols + i] - std::cos(angle)) > 2e-3 ||
          std::fabs(s->data[row * cols + i] - std::sin(angle)) > 2e-3) {
        why = "cos and sin are not those of position x inv_freq";
        return std::nullopt;
      }
    }
  // Computed at run time from constants: the frequencies are exact.
  std::optional<RopeAttr> rope = fitRope(
      at->getContext(), invFreq, dim, ropeHint(at), [&](const RopeTable &t) {
        for (int64_t i = 0; i < half; ++i)
          if (std::fabs(t.invFreq[i] - invFreq[i]) >
              1e-5 * std::fabs(invFreq[i]) + 1e-12)
            return false;
        return true;
      });
  if (!rope)
    why = "the rotary frequencies fit no scaling Sol knows";
  return rope;
}

} // namespace

namespace {

/// A cos/sin cache pair read whole: row p holds cos and sin of p·inv_freq
/// (the rotated pairs' frequencies), times one scaling.
struct CacheTables {
  EvalTensor cos, sin;
  int64_t rows = 0, cols = 0;
  /// Row 0's cosines: yarn's and longrope's attention factor, else 1.
  double scaling = 1.0;
  /// Each pair's frequency, fitted from the rows.
  SmallVector<double> invFreq;
  /// How far an entry may be from cos or sin: the table type's precision.
  double tolerance = 2e-5;

  double at(const EvalTensor &t, int64_t p, int64_t i) const {
    return t.data[p * cols + i];
  }

  /// Whether every row holds scaling times cos and sin of p·freq[i].
  bool matches(ArrayRef<float> freq) const {
    // cos(p·f) and sin(p·f) with p·f rounded to float32 as exporters
    // compute, and f itself allowed two float32 ulps of difference from
    // Sol's (the exporter's float32 arithmetic for llama3's blend or
    // theta's powers need not round as Sol's does): p·f may then differ by
    // p·f·2.4e-7.
    const int64_t stride = std::max<int64_t>(1, rows * cols / 1000000);
    for (int64_t p = 0; p < rows; p += stride)
      for (int64_t i = 0; i < cols; ++i) {
        const double angle = float(p) * freq[i];
        const double allowed =
            (tolerance + std::fabs(angle) * 2.4e-7) * scaling;
        if (std::fabs(at(cos, p, i) - scaling * std::cos(angle)) > allowed ||
            std::fabs(at(sin, p, i) - scaling * std::sin(angle)) > allowed)
          return false;
      }
    return true;
  }
};

/// Reads the caches `cos` and `sin` ([positions, cols] for cols <= `half`)
/// and fits their frequencies and scaling; nullopt with `why` set when
/// they are not such tables.
std::optional<CacheTables> readCaches(Value cos, Value sin, int64_t half,
                                      const WeightStore *store,
                                      std::string &why) {
  OnnxEvaluator eval;
  eval.setWeightStore(store);
  std::optional<EvalTensor> c = eval.evaluate(cos), s = eval.evaluate(sin);
  if (!c || !s) {
    why = "cannot read the cos/sin caches: " + eval.reason();
    return std::nullopt;
  }
  if (c->shape.size() != 2 || c->shape != s->shape || c->shape[1] > half ||
      c->shape[1] < 1 || c->shape[0] < 2) {
    why = "the cos/sin caches are not [positions, rotary dims / 2] tables "
          "(at most head_dim / 2)";
    return std::nullopt;
  }
  CacheTables t;
  t.cos = std::move(*c);
  t.sin = std::move(*s);
  t.rows = t.cos.shape[0];
  t.cols = t.cos.shape[1];
  double scaling = 0;
  for (int64_t i = 0; i < t.cols; ++i)
    scaling += t.at(t.cos, 0, i) / double(t.cols);
  for (int64_t i = 0; i < t.cols; ++i)
    if (std::fabs(t.at(t.cos, 0, i) - scaling) > 1e-3 * std::fabs(scaling) ||
        std::fabs(t.at(t.sin, 0, i)) > 1e-3 * std::fabs(scaling) ||
        !(scaling > 0)) {
      why = "the cos/sin caches' row 0 is not cos 0 and sin 0";
      return std::nullopt;
    }
  t.scaling = std::fabs(scaling - 1.0) < 1e-3 ? 1.0 : scaling;
  // Each angle from row 1, refined on rows 2, 4, 8...: a row p pins the
  // frequency to a p-th of the table's rounding error.
  t.invFreq.resize(t.cols);
  for (int64_t i = 0; i < t.cols; ++i) {
    double f = std::atan2(t.at(t.sin, 1, i), t.at(t.cos, 1, i));
    for (int64_t p = 2; p < t.rows; p *= 2) {
      const double a = std::atan2(t.at(t.sin, p, i), t.at(t.cos, p, i));
      const double turns = std::round((double(p) * f - a) / (2.0 * M_PI));
      f = (a + 2.0 * M_PI * turns) / double(p);
    }
    t.invFreq[i] = f;
  }
  Type element = getElementTypeOrSelf(cos.getType());
  t.tolerance = element.isF32() || element.isF64() ? 2e-5
                : element.isF16()                  ? 2e-3
                                                   : 1e-2;
  return t;
}

/// The divisor of theta's frequency each fitted pair has (rotating
/// `rotary` dims), for the longrope form of fitted frequencies.
std::vector<double> divisors(ArrayRef<double> invFreq, double theta,
                             int64_t rotary) {
  std::vector<double> out;
  for (size_t i = 0; i < invFreq.size(); ++i)
    out.push_back(std::pow(theta, -2.0 * double(i) / double(rotary)) /
                  invFreq[i]);
  return out;
}

/// onnxruntime-genai's longrope caches: an If (imported with its branches'
/// constants as operands, `then_outputs` of each) on the total length
/// choosing the long factors' caches (then) or the short ones'. The If op
/// when `cos` and `sin` are its outputs k and k + 1... of one such op.
OnnxOp constantChoice(Value cos, Value sin) {
  auto op = skipFloatCasts(cos).getDefiningOp<OnnxOp>();
  if (!op || op.getOpType() != "If" || !op.getDomain().empty() ||
      !op.getOnnxAttr("then_outputs") ||
      skipFloatCasts(sin).getDefiningOp<OnnxOp>() != op)
    return {};
  return op;
}

/// The longrope of a constantChoice `choice` whose outputs `cosAt` and
/// `sinAt` are the caches: the long factors from the then branch's tables,
/// the short ones from the else branch's, the switch where the condition
/// turns true (evaluated for decode steps of growing total length).
std::optional<RopeAttr> ropeFromChoice(Operation *at, OnnxOp choice,
                                       unsigned cosAt, unsigned sinAt,
                                       int64_t dim, const WeightStore *store,
                                       std::string &why) {
  const int64_t n = intAttr(choice, "then_outputs", 0);
  auto inputs = choice.getInputs();
  if (n <= 0 || int64_t(inputs.size()) != 1 + 2 * n) {
    why = "a malformed If of constants";
    return std::nullopt;
  }
  std::optional<CacheTables> longer =
      readCaches(inputs[1 + cosAt], inputs[1 + sinAt], dim / 2, store, why);
  if (!longer)
    return std::nullopt;
  std::optional<CacheTables> shorter = readCaches(
      inputs[1 + n + cosAt], inputs[1 + n + sinAt], dim / 2, store, why);
  if (!shorter)
    return std::nullopt;
  if (longer->cols != shorter->cols ||
      std::fabs(longer->scaling - shorter->scaling) > 1e-3 * shorter->scaling) {
    why = "the If's long and short rope caches rotate different dims or "
          "have different scalings";
    return std::nullopt;
  }
  // The smallest total length the condition takes the long caches for.
  auto fn = at->getParentOfType<func::FuncOp>();
  auto longFor = [&](int64_t total) -> std::optional<bool> {
    OnnxEvaluator eval;
    if (!bindStep(eval, fn, total - 1, {total - 1}))
      return std::nullopt;
    std::optional<EvalTensor> v = eval.evaluate(inputs[0]);
    if (!v || v->shapeOnly || v->size() != 1)
      return std::nullopt;
    return v->data[0] != 0;
  };
  int64_t lo = 1, hi = longer->rows;
  std::optional<bool> first = longFor(lo), last = longFor(hi);
  if (!first || !last || *first || !*last) {
    why = "the If's condition is not 'total length above a bound' for "
          "lengths 1.." +
          std::to_string(hi);
    return std::nullopt;
  }
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    std::optional<bool> v = longFor(mid);
    if (!v) {
      why = "cannot evaluate the If's condition";
      return std::nullopt;
    }
    (*v ? hi : lo) = mid;
  }
  // A step of total length `hi` (last position hi - 1) takes the long
  // factors: Sol's longrope switches at position hi - 1.
  const int64_t from = hi - 1;
  if (shorter->rows < from) {
    why = "the short rope caches end before the If switches to the long ones";
    return std::nullopt;
  }
  const int64_t rotary = 2 * shorter->cols;
  auto consistent = [&](const RopeParameters &p) {
    try {
      RopeTable t = RopeTable::compute(p, dim);
      return t.longFrom == from &&
             std::fabs(t.attentionScaling - shorter->scaling) <
                 1e-3 * shorter->scaling &&
             shorter->matches(t.invFreq) && longer->matches(t.longInvFreq);
    } catch (const std::exception &) {
      return false;
    }
  };
  // config.json's longrope when it is the one; else the fitted frequencies.
  if (RopeAttr hint = ropeHint(at);
      hint && hint.getKind() == RopeScalingKind::LongRope &&
      consistent(ropeParameters(hint)))
    return hint;
  RopeParameters p;
  p.scaling = RopeScaling::LongRope;
  p.theta = 10000.0;
  p.factor = 1.0;
  p.originalMaxPosition = from;
  p.attentionFactor = shorter->scaling;
  p.rotaryDim = rotary < dim ? rotary : 0;
  p.shortFactor = divisors(shorter->invFreq, p.theta, rotary);
  p.longFactor = divisors(longer->invFreq, p.theta, rotary);
  if (llvm::all_of(shorter->invFreq, [](double f) { return f > 0; }) &&
      llvm::all_of(longer->invFreq, [](double f) { return f > 0; }) &&
      consistent(p))
    return ropeAttr(at->getContext(), p);
  why = "the If's rope caches are not cos and sin of position x inv_freq";
  return std::nullopt;
}

} // namespace

std::optional<RopeAttr> sol::raise::ropeFromCaches(Operation *at, Value cos,
                                                   Value sin, int64_t dim,
                                                   const WeightStore *store,
                                                   std::string &why) {
  if (OnnxOp choice = constantChoice(cos, sin))
    return ropeFromChoice(
        at, choice, cast<OpResult>(skipFloatCasts(cos)).getResultNumber(),
        cast<OpResult>(skipFloatCasts(sin)).getResultNumber(), dim, store, why);
  std::optional<CacheTables> t = readCaches(cos, sin, dim / 2, store, why);
  if (!t)
    return std::nullopt;
  // Fewer columns than half a head: partial rotation of the first dims.
  const int64_t rotary = 2 * t->cols < dim ? 2 * t->cols : 0;
  std::optional<RopeAttr> rope = fitRope(
      at->getContext(), t->invFreq, dim, ropeHint(at),
      [&](const RopeTable &table) { return t->matches(table.invFreq); },
      t->scaling, rotary);
  if (rope)
    return rope;
  // No named scaling fits (yarn without a config.json beside the graph):
  // the fitted frequencies themselves, as one divisor of theta's per pair
  // (longrope's form, its short and long factors the same) and the
  // tables' scaling.
  RopeParameters p;
  p.scaling = RopeScaling::LongRope;
  p.theta = 10000.0;
  p.factor = 1.0;
  p.originalMaxPosition = t->rows;
  p.attentionFactor = t->scaling;
  p.rotaryDim = rotary;
  p.shortFactor = divisors(t->invFreq, p.theta, rotary ? rotary : dim);
  p.longFactor = p.shortFactor;
  try {
    RopeTable table = RopeTable::compute(p, dim);
    if (llvm::all_of(t->invFreq, [](double f) { return f > 0; }) &&
        t->matches(table.invFreq))
      return ropeAttr(at->getContext(), p);
  } catch (const std::exception &) {
  }
  why = "the cos/sin caches are not cos and sin of position x inv_freq "
        "(times one scaling) for any frequencies";
  return std::nullopt;
}

namespace {

/// Replaces `root` (a rotation of the head view `heads` of the raised
/// projection `sol`, transposed to [batch, heads, seq, dim] when
/// `transpose` is set) by sol.rope and a view of it in the root's layout.
LogicalResult replaceWithRope(PatternRewriter &rewriter, OnnxOp root, Value sol,
                              Value heads, OnnxOp transpose, RopeAttr rope,
                              int64_t dim) {
  Value positions = solArgument(root, "positions");
  if (!positions)
    return nearMiss(rewriter, root, "no positions argument");
  const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
  rewriter.setInsertionPoint(root);
  Value rotated = rewriter.create<RopeOp>(
      root.getLoc(), sol.getType(), sol, positions, rope,
      rewriter.getI64IntegerAttr(width / dim), rewriter.getI64IntegerAttr(dim));
  Type headsType = heads.getType();
  if (auto unranked = dyn_cast<UnrankedTensorType>(headsType))
    headsType = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, width / dim, dim},
        unranked.getElementType());
  Type rootType = root.getResult(0).getType();
  Value result =
      rewriter.create<BatchViewOp>(root.getLoc(), headsType, rotated);
  if (transpose)
    result =
        createOnnx(rewriter, root.getLoc(), "Transpose", rootType, {result},
                   {rewriter.getNamedAttr(
                       "perm", rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}))})
            .getResult(0);
  else if (result.getType() != rootType)
    result = rewriter.create<BatchViewOp>(root.getLoc(), rootType, rotated);
  rewriter.replaceOp(root, result);
  return success();
}

/// x * cos + rotate_half(x) * sin -> sol.rope.
struct RaiseRope : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp add,
                                PatternRewriter &rewriter) const override {
    if (add.getOpType() != "Add" || !add.getDomain().empty() ||
        add.getInputs().size() != 2)
      return failure();
    OnnxOp m0 = producer(add.getInputs()[0], "Mul");
    OnnxOp m1 = producer(add.getInputs()[1], "Mul");
    if (!m0 || !m1)
      return failure();
    // Find x, cos (in x's product) and sin (in rotate_half(x)'s).
    for (auto [xm, rm] : {std::pair(m0, m1), std::pair(m1, m0)})
      for (int xi = 0; xi < 2; ++xi)
        for (int ri = 0; ri < 2; ++ri) {
          Value x = skipFloatCasts(xm.getInputs()[xi]);
          LogicalResult r =
              tryRaise(add, x, xm.getInputs()[1 - xi], rm.getInputs()[ri],
                       rm.getInputs()[1 - ri], rewriter);
          if (succeeded(r))
            return r;
        }
    return failure();
  }

  LogicalResult tryRaise(OnnxOp add, Value x, Value cos, Value rotated,
                         Value sin, PatternRewriter &rewriter) const {
    // x is [batch, heads, seq, dim] (a Transpose of the projection's
    // [batch, seq, heads, dim] view) or that view itself.
    Value heads = x;
    OnnxOp transpose = producer(x, "Transpose");
    if (transpose) {
      if (!isPermutation(transpose, {0, 2, 1, 3}))
        return failure();
      heads = transpose.getInputs()[0];
    }
    Value sol = viewedSolValue(heads);
    if (!sol)
      return failure();
    // head_dim from the split view's type or the Reshape's target.
    int64_t dim = 0;
    if (auto t = dyn_cast<RankedTensorType>(heads.getType());
        t && t.getRank() == 4 && !t.isDynamicDim(3))
      dim = t.getDimSize(3);
    else if (OnnxOp reshape = producer(heads, "Reshape"))
      if (auto shape = intValuesOfShape(reshape.getInputs()[1]);
          shape && shape->size() == 4 && shape->back() > 0)
        dim = shape->back();
    const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
    if (dim <= 0 || dim % 2 != 0 || width % dim != 0)
      return failure();
    if (!isRotateHalf(rotated, x, dim, 4))
      return failure();

    std::string why;
    std::optional<RopeAttr> rope =
        ropeFromTables(add, cos, sin, dim, /*halfTables=*/false, why);
    if (!rope)
      return nearMiss(rewriter, add, why);
    return replaceWithRope(rewriter, add, sol, heads, transpose, *rope, dim);
  }

  /// The target of a Reshape when its last entries are constants (the
  /// exporters' Concat of computed and constant pieces).
  static std::optional<SmallVector<int64_t>> intValuesOfShape(Value shape) {
    if (auto all = intValues(shape))
      return all;
    OnnxOp concat = producer(shape, "Concat");
    if (!concat)
      return std::nullopt;
    SmallVector<int64_t> out;
    for (Value piece : concat.getInputs()) {
      auto v = intValues(piece);
      if (v)
        out.append(v->begin(), v->end());
      else
        out.push_back(-2); // computed at run time
    }
    return out;
  }
};

/// Opset 23's RotaryEmbedding(x, cos, sin) (rotate-half, whole heads).
struct RaiseRotaryEmbedding : OpRewritePattern<OnnxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "RotaryEmbedding" || !op.getDomain().empty())
      return failure();
    if (op.getInputs().size() != 3)
      return nearMiss(rewriter, op, "cos/sin caches indexed by position_ids");
    if (intAttr(op, "interleaved", 0) != 0)
      return nearMiss(rewriter, op, "interleaved pairs (not rotate-half)");
    Value x = skipFloatCasts(op.getInputs()[0]);
    Value heads = x;
    OnnxOp transpose = producer(x, "Transpose");
    if (transpose) {
      if (!isPermutation(transpose, {0, 2, 1, 3}))
        return nearMiss(rewriter, op, "heads in an unknown order");
      heads = transpose.getInputs()[0];
    }
    Value sol = viewedSolValue(heads);
    if (!sol)
      return nearMiss(rewriter, op, "the input is not a raised projection");
    const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
    int64_t dim = 0;
    if (auto t = dyn_cast<RankedTensorType>(heads.getType());
        t && t.getRank() == 4 && !t.isDynamicDim(3))
      dim = t.getDimSize(3);
    else if (int64_t h = intAttr(op, "num_heads", 0); h > 0 && width % h == 0)
      dim = width / h;
    const int64_t partial = intAttr(op, "rotary_embedding_dim", 0);
    if (dim <= 0 || dim % 2 != 0 || width % dim != 0 ||
        (partial != 0 && partial != dim))
      return nearMiss(rewriter, op, "cannot tell whole heads");
    std::string why;
    std::optional<RopeAttr> rope =
        ropeFromTables(op, op.getInputs()[1], op.getInputs()[2], dim,
                       /*halfTables=*/true, why);
    if (!rope)
      return nearMiss(rewriter, op, why);
    return replaceWithRope(rewriter, op, sol, heads, transpose, *rope, dim);
  }
};

/// True when `v` is the graph's position_ids: Sol's positions, viewed.
bool isSolPositions(Operation *at, Value v) {
  auto view = v.getDefiningOp<BatchViewOp>();
  return view && view.getInput() == solArgument(at, "positions");
}

/// com.microsoft RotaryEmbedding(x, position_ids, cos_cache, sin_cache), as
/// onnxruntime-genai writes it when the rotation is not fused into
/// GroupQueryAttention: x [batch, seq, heads·dim], caches of dim/2 columns.
struct RaiseMsRotaryEmbedding : OpRewritePattern<OnnxOp> {
  RaiseMsRotaryEmbedding(MLIRContext *ctx, const WeightStore *store)
      : OpRewritePattern(ctx), store(store) {}

  LogicalResult matchAndRewrite(OnnxOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "RotaryEmbedding" ||
        op.getDomain() != "com.microsoft")
      return failure();
    if (op.getInputs().size() != 4)
      return nearMiss(rewriter, op, "not (input, position_ids, cos, sin)");
    if (intAttr(op, "interleaved", 0) != 0)
      return nearMiss(rewriter, op, "interleaved pairs (not rotate-half)");
    if (intAttr(op, "is_packed_batching", 0) != 0)
      return nearMiss(rewriter, op, "packed batching is not supported");
    if (auto scale = dyn_cast_or_null<FloatAttr>(op.getOnnxAttr("scale"));
        scale && scale.getValueAsDouble() != 1.0)
      return nearMiss(rewriter, op, "a scale other than 1");
    Value sol = viewedSolValue(skipFloatCasts(op.getInputs()[0]));
    if (!sol)
      return nearMiss(rewriter, op,
                      "the input is not a raised [batch, seq, heads·dim] "
                      "projection");
    if (!isSolPositions(op, op.getInputs()[1]))
      return nearMiss(rewriter, op,
                      "positions other than the graph's "
                      "position_ids");
    auto cacheType = dyn_cast<RankedTensorType>(op.getInputs()[2].getType());
    if (!cacheType || cacheType.getRank() != 2 || cacheType.isDynamicDim(1))
      return nearMiss(rewriter, op, "cos cache of unknown shape");
    const int64_t dim = 2 * cacheType.getDimSize(1);
    const int64_t width = cast<RankedTensorType>(sol.getType()).getDimSize(1);
    const int64_t partial = intAttr(op, "rotary_embedding_dim", 0);
    if (width % dim != 0 || (partial != 0 && partial != dim))
      return nearMiss(rewriter, op, "partial rotation is not supported");
    std::string why;
    std::optional<RopeAttr> rope = ropeFromCaches(
        op, op.getInputs()[2], op.getInputs()[3], dim, store, why);
    if (!rope)
      return nearMiss(rewriter, op, why);
    rewriter.setInsertionPoint(op);
    Value rotated = rewriter.create<RopeOp>(
        op.getLoc(), sol.getType(), sol, solArgument(op, "positions"), *rope,
        rewriter.getI64IntegerAttr(width / dim),
        rewriter.getI64IntegerAttr(dim));
    replaceWithView(rewriter, op, rotated);
    return success();
  }

  const WeightStore *store;
};

struct SolRaiseRopePass : sol::impl::SolRaiseRopeBase<SolRaiseRopePass> {
  SolRaiseRopePass() = default;
  explicit SolRaiseRopePass(const WeightStore *store) : store(store) {}

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseRope, RaiseRotaryEmbedding>(&getContext());
    patterns.add<RaiseMsRotaryEmbedding>(&getContext(), store);
    if (failed(applyRaisePatterns(getOperation(), std::move(patterns),
                                  "sol-raise-rope")))
      signalPassFailure();
  }

  const WeightStore *store = nullptr;
};

} // namespace

std::unique_ptr<Pass> sol::createSolRaiseRope(const WeightStore *store) {
  return std::make_unique<SolRaiseRopePass>(store);
}

//===- TensorEvaluator.cpp - Tensor-level sol IR in float32 ---------------===//
#include "passes/TensorEvaluator.h"

#include "runtime/support/Activations.h"

#include "ir/RopeTable.h"
#include "runtime/support/Error.h"
#include "runtime/support/ParallelChunks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace mlir;

namespace sol {

namespace {

// Eight floats: GCC lowers it to one AVX register or two SSE ones.
typedef float Vec8 __attribute__((vector_size(32)));

#define SOL_LOAD8(v, p) std::memcpy(&(v), (p), sizeof(Vec8))

float sum8(const Vec8 &v) {
  float s = 0.0f;
  for (int i = 0; i < 8; ++i)
    s += v[i];
  return s;
}

// The hot loops are written once (always inlined) and built twice: for
// CPUs with AVX2 and fused multiply-adds (contracted there) and for the
// baseline, picked at run time. The two round differently; calibration
// searches with these sums and needs no bit-exact oracle.
#define SOL_HOT_BODY inline __attribute__((always_inline))
#define SOL_FMA_BUILD                                                          \
  __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))

bool hasFma() {
  static const bool fma =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return fma;
}

// The GEMM: w packed in panels of kPanel columns ([k][kPanel] each), rows
// of x in tiles of kTileRows against one panel, kTileRows x kPanel sums in
// registers (twelve AVX registers), x broadcast one value at a time.
constexpr int64_t kPanel = 16, kTileRows = 6, kRowChunk = 96;

SOL_HOT_BODY void linearTileBody(float *out, const float *x, const float *panel,
                                 const float *bias, int64_t t0, int64_t rows,
                                 int64_t c0, int64_t cols, int64_t n,
                                 int64_t k) {
  Vec8 acc[kTileRows][2] = {};
  const float *xr[kTileRows];
  for (int64_t r = 0; r < kTileRows; ++r)
    xr[r] = x + (t0 + std::min(r, rows - 1)) * k;
  for (int64_t i = 0; i < k; ++i) {
    Vec8 a, b;
    SOL_LOAD8(a, panel + i * kPanel);
    SOL_LOAD8(b, panel + i * kPanel + 8);
    for (int r = 0; r < kTileRows; ++r) {
      const float v = xr[r][i];
      acc[r][0] += v * a;
      acc[r][1] += v * b;
    }
  }
  float sums[kTileRows][kPanel];
  std::memcpy(sums, acc, sizeof sums);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      out[(t0 + r) * n + c0 + j] = sums[r][j] + (bias ? bias[c0 + j] : 0.0f);
}

SOL_FMA_BUILD void linearTileFma(float *out, const float *x, const float *panel,
                                 const float *bias, int64_t t0, int64_t rows,
                                 int64_t c0, int64_t cols, int64_t n,
                                 int64_t k) {
  linearTileBody(out, x, panel, bias, t0, rows, c0, cols, n, k);
}

void linearTile(float *out, const float *x, const float *panel,
                const float *bias, int64_t t0, int64_t rows, int64_t c0,
                int64_t cols, int64_t n, int64_t k) {
  linearTileBody(out, x, panel, bias, t0, rows, c0, cols, n, k);
}

struct AttentionShape {
  int64_t heads, kvHeads, dim, window;
  float scale;
  float softcap; // 0: none
};

// Token t's causal attention over rows [start, t] of its sequence (the last
// `window` of them when set), every head; the head dim in lanes of eight.
SOL_HOT_BODY void attendRowBody(float *out, const Activation &q,
                                const Activation &k, const Activation &v,
                                int64_t t, int64_t start,
                                const AttentionShape &s) {
  const int64_t first =
      s.window > 0 ? std::max(start, t - s.window + 1) : start;
  const int64_t d8 = s.dim / 8 * 8;
  std::vector<float> p(static_cast<size_t>(t - first + 1));
  std::vector<float> acc(static_cast<size_t>(s.dim));
  for (int64_t h = 0; h < s.heads; ++h) {
    const int64_t kvh = h / (s.heads / s.kvHeads);
    const float *qh = q.row(t) + h * s.dim;
    float best = -INFINITY;
    for (int64_t j = first; j <= t; ++j) {
      const float *kj = k.row(j) + kvh * s.dim;
      Vec8 lanes = {};
      for (int64_t d = 0; d < d8; d += 8) {
        Vec8 a, b;
        SOL_LOAD8(a, qh + d);
        SOL_LOAD8(b, kj + d);
        lanes += a * b;
      }
      float dot = sum8(lanes);
      for (int64_t d = d8; d < s.dim; ++d)
        dot += qh[d] * kj[d];
      p[j - first] = dot * s.scale;
      if (s.softcap > 0)
        p[j - first] = s.softcap * std::tanh(p[j - first] / s.softcap);
      best = std::max(best, p[j - first]);
    }
    float total = 0.0f;
    for (float &x : p) {
      x = std::exp(x - best);
      total += x;
    }
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t j = first; j <= t; ++j) {
      const float *vj = v.row(j) + kvh * s.dim;
      const float pj = p[j - first];
      for (int64_t d = 0; d < d8; d += 8) {
        Vec8 x, a;
        SOL_LOAD8(x, vj + d);
        SOL_LOAD8(a, acc.data() + d);
        a += pj * x;
        std::memcpy(acc.data() + d, &a, sizeof a);
      }
      for (int64_t d = d8; d < s.dim; ++d)
        acc[d] += pj * vj[d];
    }
    float *o = out + h * s.dim;
    for (int64_t d = 0; d < s.dim; ++d)
      o[d] = acc[d] / total;
  }
}

SOL_FMA_BUILD void attendRowFma(float *out, const Activation &q,
                                const Activation &k, const Activation &v,
                                int64_t t, int64_t start,
                                const AttentionShape &s) {
  attendRowBody(out, q, k, v, t, start, s);
}

void attendRow(float *out, const Activation &q, const Activation &k,
               const Activation &v, int64_t t, int64_t start,
               const AttentionShape &s) {
  (hasFma() ? attendRowFma : attendRowBody)(out, q, k, v, t, start, s);
}

/// 1 / sqrt(mean(x^2) + eps) over n values, in double.
double inverseRms(const float *x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(x[i]) * x[i];
  return 1.0 / std::sqrt(sum / static_cast<double>(n) + eps);
}

Activation makeActivation(int64_t rows, int64_t cols) {
  Activation a;
  a.rows = rows;
  a.cols = cols;
  a.values.assign(static_cast<size_t>(rows * cols), 0.0f);
  return a;
}

} // namespace

void linearFloat(std::span<float> out, std::span<const float> x,
                 std::span<const float> w, std::span<const float> bias,
                 int64_t rows, int64_t n, int64_t k) {
  const int64_t panels = (n + kPanel - 1) / kPanel;
  std::vector<float> packed(static_cast<size_t>(panels * k * kPanel), 0.0f);
  parallelChunks(panels, n * k, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      for (int64_t j = 0; j < kPanel && p * kPanel + j < n; ++j)
        for (int64_t i = 0; i < k; ++i)
          packed[(p * k + i) * kPanel + j] = w[(p * kPanel + j) * k + i];
  });
  auto *tile = hasFma() ? linearTileFma : linearTile;
  const float *b = bias.empty() ? nullptr : bias.data();
  // Chunks of rows stay in cache while every panel passes over them.
  const int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
  parallelChunks(chunks, rows * n * k, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * kRowChunk;
      const int64_t last = std::min(rows, first + kRowChunk);
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t t = first; t < last; t += kTileRows)
          tile(out.data(), x.data(), packed.data() + p * k * kPanel, b, t,
               std::min(kTileRows, last - t), p * kPanel,
               std::min(kPanel, n - p * kPanel), n, k);
    }
  });
}

TensorEvaluator::TensorEvaluator(
    func::FuncOp fn, const WeightStore &store,
    std::span<const std::vector<int32_t>> sequences)
    : store_(store) {
  for (const std::vector<int32_t> &seq : sequences) {
    sequenceStarts_.push_back(static_cast<int64_t>(tokens_.size()));
    for (size_t p = 0; p < seq.size(); ++p) {
      tokens_.push_back(seq[p]);
      positions_.push_back(static_cast<int32_t>(p));
      tokenSeq_.push_back(static_cast<int32_t>(sequenceStarts_.size() - 1));
    }
  }
  sequenceStarts_.push_back(static_cast<int64_t>(tokens_.size()));
  for (BlockArgument arg : fn.getArguments()) {
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "sol.name");
    if (!name)
      continue;
    if (name.getValue() == "tokens")
      indexArgs_[arg] = tokens_;
    else if (name.getValue() == "positions")
      indexArgs_[arg] = positions_;
    else if (name.getValue() == "token_seq")
      indexArgs_[arg] = tokenSeq_;
  }
  for (Operation &op : fn.getBody().front())
    if (!op.hasTrait<OpTrait::IsTerminator>())
      ops_.push_back(&op);
  for (auto [i, op] : llvm::enumerate(ops_))
    for (Value operand : op->getOperands())
      lastUse_[operand] = i;
}

std::span<const int32_t> TensorEvaluator::indices(Value v) const {
  auto it = indexArgs_.find(v);
  if (it == indexArgs_.end())
    fail("internal error: calibration evaluates an index operand that is not "
         "the function's tokens, positions or token_seq");
  return it->second;
}

std::vector<int32_t> TensorEvaluator::sequenceStartOfTokens() const {
  std::vector<int32_t> starts(tokens_.size());
  for (size_t t = 0; t < tokens_.size(); ++t)
    starts[t] = static_cast<int32_t>(sequenceStarts_[tokenSeq_[t]]);
  return starts;
}

const Activation &TensorEvaluator::value(Value v) const {
  return lookup(v, Values());
}

const Activation &TensorEvaluator::lookup(Value v, const Values &local) const {
  if (auto it = local.find(v); it != local.end())
    return it->second;
  auto it = values_.find(v);
  if (it == values_.end())
    fail("internal error: calibration reads a value that was not evaluated "
         "or is no longer held");
  return it->second;
}

std::vector<float> TensorEvaluator::weight(Value w) const {
  Operation *def = w.getDefiningOp();
  if (auto weight = dyn_cast_or_null<WeightOp>(def))
    return store_.readFloat(weight.getName());
  if (auto convert = dyn_cast_or_null<ConvertWeightOp>(def))
    return weight(convert.getInput());
  if (auto transpose = dyn_cast_or_null<TransposeWeightOp>(def)) {
    const std::vector<float> in = weight(transpose.getInput());
    auto type = transpose.getInput().getType();
    const int64_t rank = type.getRank();
    const int64_t rows = type.getDimSize(rank - 2),
                  cols = type.getDimSize(rank - 1);
    std::vector<float> out(in.size());
    // Each [rows, cols] matrix (one per expert of a 3-D weight).
    for (size_t base = 0; base < in.size(); base += rows * cols)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          out[base + c * rows + r] = in[base + r * cols + c];
    return out;
  }
  if (auto reshape = dyn_cast_or_null<ReshapeWeightOp>(def))
    return weight(reshape.getInput());
  if (auto concat = dyn_cast_or_null<ConcatWeightsOp>(def)) {
    std::vector<float> out;
    out.reserve(static_cast<size_t>(
        cast<ShapedType>(concat.getType()).getNumElements()));
    for (Value input : concat.getInputs()) {
      const std::vector<float> part = weight(input);
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }
  if (auto slice = dyn_cast_or_null<SliceRowsOp>(def)) {
    const std::vector<float> in = weight(slice.getInput());
    auto type = slice.getType();
    const int64_t row = type.getNumElements() / type.getDimSize(0);
    std::vector<float> out;
    out.reserve(static_cast<size_t>(type.getNumElements()));
    for (int64_t r = 0; r < type.getDimSize(0); ++r) {
      const auto first =
          in.begin() + (slice.getOffset() + r * slice.getStride()) * row;
      out.insert(out.end(), first, first + row);
    }
    return out;
  }
  if (auto permute = dyn_cast_or_null<PermuteHeadDimsOp>(def)) {
    const std::vector<float> in = weight(permute.getInput());
    auto type = permute.getType();
    const int64_t row = type.getNumElements() / type.getDimSize(0);
    const int64_t d = permute.getHeadDim(), r = permute.getRotaryDim();
    const int64_t r2 = r / 2, p2 = (d - r) / 2;
    std::vector<float> out;
    out.reserve(in.size());
    for (int64_t head = 0; head < type.getDimSize(0) / d; ++head)
      for (auto [from, n] : {std::pair{int64_t(0), r2}, std::pair{r, p2},
                             std::pair{r2, r2}, std::pair{r + p2, p2}}) {
        const auto first = in.begin() + (head * d + from) * row;
        out.insert(out.end(), first, first + n * row);
      }
    return out;
  }
  if (auto offset = dyn_cast_or_null<OffsetWeightOp>(def)) {
    std::vector<float> out = weight(offset.getInput());
    for (float &v : out)
      v += offset.getOffset().convertToFloat();
    return out;
  }
  fail("internal error: calibration cannot read a weight made by ",
       def ? def->getName().getStringRef().str() : "a block argument");
}

LogicalResult TensorEvaluator::runUntil(Operation *op) {
  return runOpsUntil(
      ops_, next_, op, *this,
      [&](Operation *current) -> LogicalResult {
        FailureOr<Activation> result =
            compute(current, Values(), WeightOverrides());
        if (failed(result))
          return failure();
        values_[current->getResult(0)] = std::move(*result);
        return success();
      },
      [&](Value v) { values_.erase(v); });
}

FailureOr<std::vector<Activation>>
TensorEvaluator::evaluate(ArrayRef<Operation *> ops,
                          const WeightOverrides &overrides,
                          ArrayRef<Value> results) const {
  return evaluateOps<Activation>(ops, results,
                                 [&](Operation *op, const Values &local) {
                                   return compute(op, local, overrides);
                                 });
}

FailureOr<Activation>
TensorEvaluator::compute(Operation *op, const Values &local,
                         const WeightOverrides &overrides) const {
  auto in = [&](Value v) -> const Activation & { return lookup(v, local); };
  const int64_t T = tokens();

  if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
    const std::vector<float> table = weight(embedding.getTable());
    const int64_t width = embedding.getTable().getType().getDimSize(1);
    std::span<const int32_t> ids = indices(embedding.getIds());
    const int64_t vocab = embedding.getTable().getType().getDimSize(0);
    Activation out = makeActivation(T, width);
    for (int64_t t = 0; t < T; ++t) {
      if (ids[t] < 0 || ids[t] >= vocab)
        fail("calibration token ", ids[t], " is outside the model's ", vocab,
             "-entry embedding (does the tokenizer belong to this model?)");
      std::memcpy(out.row(t), table.data() + ids[t] * width,
                  width * sizeof(float));
    }
    if (std::optional<APFloat> scale = embedding.getScale())
      for (float &v : out.values)
        v *= scale->convertToFloat();
    return out;
  }
  if (auto norm = dyn_cast<RmsNormOp>(op)) {
    const Activation &x = in(norm.getInput());
    const std::vector<float> w = weight(norm.getWeight());
    const int64_t group = static_cast<int64_t>(w.size());
    const float eps = norm.getEpsilon().convertToFloat();
    Activation out = makeActivation(x.rows, x.cols);
    parallelChunks(x.rows, x.rows * x.cols, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t)
        for (int64_t c = 0; c < x.cols; c += group) {
          const float *src = x.row(t) + c;
          const double inv = inverseRms(src, group, eps);
          float *dst = out.row(t) + c;
          for (int64_t j = 0; j < group; ++j)
            dst[j] = static_cast<float>(src[j] * inv) * w[j];
        }
    });
    return out;
  }
  if (auto linear = dyn_cast<LinearOp>(op)) {
    if (failed(checkCalibrationLinear(linear)))
      return failure();
    const Activation &x = in(linear.getInput());
    auto type = linear.getWeight().getType();
    const int64_t n = type.getDimSize(0), k = type.getDimSize(1);
    std::vector<float> owned;
    std::span<const float> w;
    if (auto it = overrides.find(linear.getWeight()); it != overrides.end()) {
      w = it->second;
    } else {
      owned = weight(linear.getWeight());
      w = owned;
    }
    std::vector<float> bias;
    if (linear.getBias())
      bias = weight(linear.getBias());
    Activation out = makeActivation(x.rows, n);
    linearFloat(out.values, x.values, w, bias, x.rows, n, k);
    return out;
  }
  if (auto rope = dyn_cast<RopeOp>(op)) {
    const Activation &x = in(rope.getInput());
    const int64_t heads = rope.getNumHeads(), dim = rope.getHeadDim();
    const RopeTable table =
        RopeTable::compute(ropeParameters(rope.getRope()), dim);
    std::span<const int32_t> pos = indices(rope.getPositions());
    Activation out = x;
    const int64_t half = dim / 2;
    parallelChunks(x.rows, x.rows * x.cols * 8, [&](int64_t b, int64_t e) {
      std::vector<float> c(half), s(half);
      for (int64_t t = b; t < e; ++t) {
        // As transformers: the angle rounded to float, cos/sin of it.
        const std::vector<float> &freq = table.invFreqAt(pos[t]);
        for (int64_t i = 0; i < half; ++i) {
          const float angle = static_cast<float>(pos[t]) * freq[i];
          c[i] = static_cast<float>(std::cos(static_cast<double>(angle))) *
                 table.scalingFor(freq[i]);
          s[i] = static_cast<float>(std::sin(static_cast<double>(angle))) *
                 table.scalingFor(freq[i]);
        }
        for (int64_t h = 0; h < heads; ++h) {
          float *v = out.row(t) + h * dim;
          for (int64_t i = 0; i < half; ++i) {
            const float x1 = v[i], x2 = v[i + half];
            v[i] = x1 * c[i] - x2 * s[i];
            v[i + half] = x2 * c[i] + x1 * s[i];
          }
        }
      }
    });
    return out;
  }
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    if (!attention.getCausal())
      return op->emitOpError("calibration evaluates causal attention only");
    if (attention.getSinks())
      return op->emitOpError("calibration does not evaluate attention sinks");
    const Activation &q = in(attention.getQuery());
    const Activation &k = in(attention.getKey());
    const Activation &v = in(attention.getValue());
    const int64_t heads = attention.getNumHeads(),
                  kvHeads = attention.getNumKvHeads(),
                  dim = attention.getHeadDim();
    const int64_t window = attention.getSlidingWindow().value_or(0);
    const float scale = attention.getScale().convertToFloat();
    const float softcap =
        attention.getSoftcap() ? attention.getSoftcap()->convertToFloat() : 0;
    std::span<const int32_t> seq = indices(attention.getTokenSeq());
    Activation out = makeActivation(T, heads * dim);
    AttentionShape shape{heads, kvHeads, dim, window, scale, softcap};
    parallelChunks(T, T * heads * dim * 256, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t)
        attendRow(out.row(t), q, k, v, t, sequenceStarts_[seq[t]], shape);
    });
    return out;
  }
  if (auto add = dyn_cast<AddOp>(op)) {
    const Activation &a = in(add.getLhs()), &b = in(add.getRhs());
    Activation out = a;
    for (size_t i = 0; i < out.values.size(); ++i)
      out.values[i] += b.values[i];
    return out;
  }
  if (auto swiglu = dyn_cast<SwigluOp>(op)) {
    if (!swiglu.getUp())
      return op->emitOpError("calibration evaluates the two-operand "
                             "(importer's) form only");
    const Activation &u = in(swiglu.getUp());
    Activation out = in(swiglu.getGate());
    gatedActivation(swiglu.getActivation(), out.values, u.values);
    return out;
  }
  if (auto moe = dyn_cast<MoeOp>(op))
    return mixture(moe, in(moe.getInput()), overrides);
  if (auto gate = dyn_cast<SigmoidGateOp>(op)) {
    const Activation &v = in(gate.getValue()), &x = in(gate.getInput());
    const std::vector<float> w = weight(gate.getWeight());
    Activation out = v;
    for (int64_t t = 0; t < v.rows; ++t) {
      float z = 0.0f;
      for (int64_t i = 0; i < x.cols; ++i)
        z += x.row(t)[i] * w[static_cast<size_t>(i)];
      const float g = 1.0f / (1.0f + std::exp(-z));
      for (int64_t j = 0; j < v.cols; ++j)
        out.row(t)[j] *= g;
    }
    return out;
  }
  return op->emitOpError("calibration cannot evaluate this op (it evaluates "
                         "the tensor-level ops importers produce)");
}

std::vector<float> TensorEvaluator::expertWeight(Value stacked, int64_t e,
                                                 int64_t experts) const {
  // Importers stack the experts with sol.concat_weights: read only the one.
  if (auto concat = stacked.getDefiningOp<ConcatWeightsOp>();
      concat && static_cast<int64_t>(concat.getInputs().size()) == experts)
    return weight(concat.getInputs()[e]);
  const std::vector<float> all = weight(stacked);
  const size_t each = all.size() / static_cast<size_t>(experts);
  return {all.begin() + static_cast<std::ptrdiff_t>(each * e),
          all.begin() + static_cast<std::ptrdiff_t>(each * (e + 1))};
}

LogicalResult checkCalibrationMixture(MoeOp moe) {
  if (moe.isMxfp4() || moe.getExpertQuant() != QuantScheme::None ||
      !moe.getBiases().empty() ||
      moe.getActivation() == GateActivation::ClampedSilu)
    return moe.emitOpError("calibration evaluates mixtures of float experts "
                           "without biases (Qwen3-MoE, Qwen2-MoE, Mixtral)");
  return success();
}

MixtureRouting routeMixture(MoeOp moe, std::span<float> logits, int64_t rows) {
  const int64_t experts = moe.getNumExperts(), topK = moe.getTopK();
  // Softmax over the router's logits, the top k (lower index first on
  // ties), renormalised when the model says so.
  MixtureRouting routed(static_cast<size_t>(experts));
  std::vector<int64_t> order(static_cast<size_t>(experts));
  for (int64_t t = 0; t < rows; ++t) {
    float *p = logits.data() + t * experts;
    const float top = *std::max_element(p, p + experts);
    float sum = 0.0f;
    for (int64_t e = 0; e < experts; ++e)
      sum += (p[e] = std::exp(p[e] - top));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + topK, order.end(),
                      [&](int64_t a, int64_t b) {
                        return p[a] > p[b] || (p[a] == p[b] && a < b);
                      });
    float chosen = 0.0f;
    for (int64_t k = 0; k < topK; ++k)
      chosen += p[order[static_cast<size_t>(k)]];
    for (int64_t k = 0; k < topK; ++k) {
      const int64_t e = order[static_cast<size_t>(k)];
      routed[static_cast<size_t>(e)].push_back(
          {t, moe.getNormalizeTopK() ? p[e] / chosen : p[e] / sum});
    }
  }
  return routed;
}

MixtureRouting TensorEvaluator::route(MoeOp moe, const Activation &x) const {
  const int64_t experts = moe.getNumExperts();
  Activation logits = makeActivation(x.rows, experts);
  linearFloat(logits.values, x.values, weight(moe.getRouter()), {}, x.rows,
              experts, x.cols);
  return routeMixture(moe, logits.values, x.rows);
}

void gatedActivation(GateActivation act, std::span<float> g,
                     std::span<const float> u) {
  const bool gelu = act == GateActivation::GeluTanh;
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = (gelu ? geluTanh(g[i]) : silu(g[i])) * u[i];
}

FailureOr<Activation>
TensorEvaluator::mixture(MoeOp moe, const Activation &x,
                         const WeightOverrides &overrides) const {
  if (failed(checkCalibrationMixture(moe)))
    return failure();
  const int64_t experts = moe.getNumExperts(), width = moe.getExpertWidth();
  const int64_t hidden = x.cols;
  const MixtureRouting routed = route(moe, x);
  // Expert e's rows of a stacked weight: from its override (AWQ's
  // candidates replace the stacked gate and up) or read.
  auto expert = [&](Value stacked, int64_t e) {
    if (auto it = overrides.find(stacked); it != overrides.end()) {
      const size_t each = it->second.size() / static_cast<size_t>(experts);
      auto first = it->second.begin() + static_cast<std::ptrdiff_t>(each * e);
      return std::vector<float>(first,
                                first + static_cast<std::ptrdiff_t>(each));
    }
    return expertWeight(stacked, e, experts);
  };
  // Each expert over the tokens routed to it, as GEMMs.
  Activation out = makeActivation(x.rows, hidden);
  for (int64_t e = 0; e < experts; ++e) {
    const auto &tokens = routed[static_cast<size_t>(e)];
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0)
      continue;
    std::vector<float> xe(static_cast<size_t>(n * hidden));
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(xe.data() + i * hidden, x.row(tokens[size_t(i)].first),
                  hidden * sizeof(float));
    std::vector<float> g(static_cast<size_t>(n * width)), u(g.size()),
        y(static_cast<size_t>(n * hidden));
    linearFloat(g, xe, expert(moe.getGate(), e), {}, n, width, hidden);
    linearFloat(u, xe, expert(moe.getUp(), e), {}, n, width, hidden);
    gatedActivation(moe.getActivation(), g, u);
    linearFloat(y, g, expertWeight(moe.getDown(), e, experts), {}, n, hidden,
                width);
    for (int64_t i = 0; i < n; ++i) {
      const auto [t, w] = tokens[static_cast<size_t>(i)];
      for (int64_t j = 0; j < hidden; ++j)
        out.row(t)[j] += w * y[static_cast<size_t>(i * hidden + j)];
    }
  }
  return out;
}

LogicalResult checkCalibrationLinear(LinearOp linear) {
  if (linear.getResidual() || linear.getWeightScales() ||
      linear.getEpilogue() != LinearEpilogue::None)
    return linear.emitOpError("calibration evaluates plain float linears "
                              "only (the importer's form)");
  return success();
}

} // namespace sol

//===- TranslateToStep.cpp - kernel-level sol -> the plan's step ----------===//
//
// One plan op per kernel-level op, in program order. The only decisions left
// here are about memory: every SSA tensor maps to a view of an activation
// buffer (a buffer and a column range). sol.split makes views; the in-place
// ops (sol.head_rms_norm, sol.rope_kv_write, the sum of sol.add_rms_norm, a
// linear with the residual epilogue, sol.add when its left operand dies)
// reuse their operand's buffer, which is only allowed when nothing reads
// that buffer's current values afterwards: the fusion passes guarantee it,
// and a violation is reported as the compiler bug it would be.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/TranslateToStep.h"

#include "ir/RopeTable.h"
#include "ir/SolDialect.h"
#include "runtime/plan/PlanDType.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

using namespace mlir;

namespace sol {

namespace {

/// A column range of a buffer.
struct View {
  int32_t buffer = -1;
  int64_t col = 0;
  int64_t cols = 0;
};

fb::DType bufferDType(Type element) {
  if (element.isF32())
    return fb::DType::F32;
  if (element.isF16())
    return fb::DType::F16;
  return fb::DType::BF16;
}

fb::DType weightDType(Type element) {
  if (element.isBF16())
    return fb::DType::BF16;
  if (element.isF16())
    return fb::DType::F16;
  if (element.isF32())
    return fb::DType::F32;
  if (isa<Float8E4M3FNType>(element))
    return fb::DType::F8E4M3;
  if (element.isUnsignedInteger(8))
    return fb::DType::U8;
  if (element.isInteger(8))
    return fb::DType::I8;
  return fb::DType::I4;
}

int64_t columns(Value v) {
  return cast<RankedTensorType>(v.getType()).getDimSize(1);
}

/// The IR's epilogue as the plan spells it (the same values by design).
fb::LinearEpilogue planEpilogue(LinearEpilogue e) {
  static_assert(static_cast<int>(LinearEpilogue::Residual) ==
                    static_cast<int>(fb::LinearEpilogue::Residual) &&
                static_cast<int>(LinearEpilogue::Swiglu) ==
                    static_cast<int>(fb::LinearEpilogue::Swiglu) &&
                static_cast<int>(LinearEpilogue::Geglu) ==
                    static_cast<int>(fb::LinearEpilogue::Geglu));
  return static_cast<fb::LinearEpilogue>(e);
}

class Translator {
public:
  explicit Translator(func::FuncOp fn) : fn(fn) {}
  FailureOr<StepProgram> run(ModelAttr model, int64_t tensorParallelSize);

private:
  LogicalResult translate(Operation *op);
  /// A linear's weight format: its scheme and, when quantized, the scales
  /// and zero points.
  struct WeightFormat {
    QuantScheme scheme = QuantScheme::None;
    int64_t groupSize = 0;
    Value scales, zeros;
  };
  template <typename LinearLike> static WeightFormat formatOf(LinearLike l) {
    return {l.getQuant(), static_cast<int64_t>(l.getGroupSize()),
            l.getWeightScales(), l.getWeightZeros()};
  }
  LogicalResult linear(Operation *op, Value input, Value normWeight, float eps,
                       Value weight, Value bias, Value residual,
                       LinearEpilogue epilogue, Value result,
                       const WeightFormat &format);
  /// Records what was done to weight `index` (the plan's Weight.note).
  void note(int32_t index, std::string what);

  int32_t newBuffer(const std::string &name, Value like,
                    fb::Rows rows = fb::Rows::Tokens);
  void define(Value v, View view);
  FailureOr<View> view(Operation *user, Value v);
  /// The operand as a whole buffer (the kernels take no column slices).
  FailureOr<View> whole(Operation *user, Value v);
  /// Checks that `op` may write in place into `v`'s buffer: no value held
  /// there is read after `op`.
  LogicalResult inPlace(Operation *op, Value v);
  FailureOr<int32_t> weight(Operation *user, Value v);
  LogicalResult stepInput(Operation *user, Value v, int index,
                          const char *what);
  int32_t rope(RopeAttr attr, int64_t headDim);
  /// Checks that a collective spans the module's tensor-parallel ranks.
  LogicalResult collective(Operation *op, int64_t ranks);
  PlanOp &emit(OpKind kind, Operation *op);
  fb::Rows rowsOf(const View &v) const { return s.buffers[v.buffer].rows; }

  func::FuncOp fn;
  StepProgram s;
  llvm::DenseMap<Value, View> views;
  /// The values each buffer holds (for the in-place checks).
  std::vector<std::vector<Value>> held;
  std::map<std::string, int32_t> weightIndex;
  std::vector<std::pair<RopeAttr, int64_t>> ropeKeys;
};

int32_t Translator::newBuffer(const std::string &name, Value like,
                              fb::Rows rows) {
  auto type = cast<RankedTensorType>(like.getType());
  s.buffers.push_back(
      {name, bufferDType(type.getElementType()), type.getDimSize(1), rows, -1});
  held.emplace_back();
  return static_cast<int32_t>(s.buffers.size() - 1);
}

void Translator::define(Value v, View view) {
  views[v] = view;
  held[view.buffer].push_back(v);
}

PlanOp &Translator::emit(OpKind kind, Operation *op) {
  s.ops.push_back({});
  PlanOp &o = s.ops.back();
  o.kind = kind;
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    o.name = loc.getName().str();
  else
    o.name = op->getName().getStringRef().str();
  return o;
}

FailureOr<View> Translator::view(Operation *user, Value v) {
  auto it = views.find(v);
  if (it == views.end())
    return user->emitError("operand was not translated (its producer is not "
                           "a kernel-level op)"),
           failure();
  return it->second;
}

FailureOr<View> Translator::whole(Operation *user, Value v) {
  FailureOr<View> r = view(user, v);
  if (failed(r))
    return failure();
  if (r->col != 0 || r->cols != s.buffers[r->buffer].width)
    return user->emitError("the kernel needs this operand as a whole buffer, "
                           "not a column slice"),
           failure();
  return r;
}

LogicalResult Translator::inPlace(Operation *op, Value v) {
  FailureOr<View> r = view(op, v);
  if (failed(r))
    return failure();
  if (r->buffer < StepProgram::kNumInputs)
    return op->emitError("internal error: cannot write a step input in "
                         "place"),
           failure();
  for (Value held : held[r->buffer])
    if (!unusedAfter(held, op))
      return op->emitError("internal error: writes in place into a buffer "
                           "whose current values are read later (a fusion "
                           "pass broke the storage rules)"),
             failure();
  return success();
}

FailureOr<int32_t> Translator::weight(Operation *user, Value v) {
  if (!v)
    return -1;
  auto w = v.getDefiningOp<WeightOp>();
  if (!w)
    return user->emitError("a weight operand is not a sol.weight: run "
                           "sol-materialize-weights before code generation"),
           failure();
  std::string name = w.getName().str();
  if (auto it = weightIndex.find(name); it != weightIndex.end())
    return it->second;
  auto type = w.getResult().getType();
  s.weights.push_back(
      {name, weightDType(type.getElementType()),
       std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
       /*note=*/{}});
  int32_t index = static_cast<int32_t>(s.weights.size() - 1);
  weightIndex[name] = index;
  return index;
}

LogicalResult Translator::stepInput(Operation *user, Value v, int index,
                                    const char *what) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getArgNumber() != static_cast<unsigned>(index))
    return user->emitError()
           << "operand must be the " << what << " argument of @forward";
  return success();
}

int32_t Translator::rope(RopeAttr attr, int64_t headDim) {
  for (auto [i, key] : llvm::enumerate(ropeKeys))
    if (key.first == attr && key.second == headDim)
      return static_cast<int32_t>(i);
  RopeTable table = RopeTable::compute(ropeParameters(attr), headDim);
  s.ropes.push_back({std::move(table.invFreq), table.attentionScaling,
                     std::move(table.longInvFreq), table.longFrom});
  ropeKeys.emplace_back(attr, headDim);
  return static_cast<int32_t>(s.ropes.size() - 1);
}

LogicalResult Translator::collective(Operation *op, int64_t ranks) {
  if (ranks != s.model.tensorParallelSize)
    return op->emitError() << "spans " << ranks
                           << " ranks, but the module is split over "
                           << s.model.tensorParallelSize << " ("
                           << kTensorParallelSizeAttr << ")",
           failure();
  return success();
}

void Translator::note(int32_t index, std::string what) {
  std::string &n = s.weights[static_cast<size_t>(index)].note;
  // A weight kept for two reasons (a tied embedding and LM head) names both.
  const size_t colon = what.find(": ");
  if (n.empty())
    n = std::move(what);
  else if (what.starts_with("kept") && colon != std::string::npos &&
           n.starts_with(what.substr(0, colon + 2)) &&
           n.find(what.substr(colon + 2)) == std::string::npos)
    n += "; " + what.substr(colon + 2);
}

LogicalResult Translator::linear(Operation *op, Value input, Value normWeight,
                                 float eps, Value weightValue, Value bias,
                                 Value residual, LinearEpilogue epilogue,
                                 Value result, const WeightFormat &format) {
  FailureOr<View> in = whole(op, input);
  FailureOr<int32_t> nw = weight(op, normWeight);
  FailureOr<int32_t> w = weight(op, weightValue);
  FailureOr<int32_t> b = weight(op, bias);
  FailureOr<int32_t> scales = weight(op, format.scales);
  FailureOr<int32_t> zeros = weight(op, format.zeros);
  if (failed(in) || failed(nw) || failed(w) || failed(b) || failed(scales) ||
      failed(zeros))
    return failure();
  int32_t out;
  if (epilogue == LinearEpilogue::Residual) {
    FailureOr<View> acc = whole(op, residual);
    if (failed(acc) || failed(inPlace(op, residual)))
      return failure();
    // Blocks read all of x while others write their part of the output.
    if (acc->buffer == in->buffer)
      return op->emitError("internal error: the residual epilogue would "
                           "overwrite the linear's own input"),
             failure();
    out = acc->buffer;
  } else {
    bool logits =
        cast<RankedTensorType>(result.getType()).getElementType().isF32();
    out = newBuffer(logits              ? "logits"
                    : isGated(epilogue) ? "act"
                                        : "proj",
                    result, rowsOf(*in));
  }
  PlanOp *o;
  if (normWeight) {
    int32_t normed = newBuffer("normed", input, rowsOf(*in));
    o = &emit(OpKind::NormLinear, op);
    o->buffers = {out, in->buffer, normed};
    o->weights = {*nw, *w};
    o->eps = eps;
  } else {
    o = &emit(OpKind::Linear, op);
    o->buffers = {out, in->buffer};
    o->weights = {*w};
  }
  o->epilogue = planEpilogue(epilogue);
  if (bias)
    o->weights.push_back(*b);
  const std::string &wName = s.weights[static_cast<size_t>(*w)].name;
  switch (format.scheme) {
  case QuantScheme::None:
    if (auto kept = op->getAttrOfType<StringAttr>("sol.quant_kept"))
      note(*w, "kept " +
                   StringRef(dtypeName(toDType(s.weights[*w].dtype))).lower() +
                   ": " + kept.str());
    break;
  case QuantScheme::Int8:
  case QuantScheme::Fp8:
  case QuantScheme::Int4: {
    static_assert(static_cast<int>(QuantScheme::Int4) ==
                  static_cast<int>(fb::WeightQuant::Int4));
    o->quant = static_cast<fb::WeightQuant>(format.scheme);
    o->groupSize = format.groupSize;
    o->weights.push_back(*scales);
    const std::string scheme(stringifyQuantScheme(format.scheme));
    if (format.scheme == QuantScheme::Int4) {
      o->weights.push_back(*zeros);
      const std::string group =
          "groups of " + std::to_string(format.groupSize) + " inputs";
      note(*w, "int4 codes (W4A16), scales and zero points per " + group);
      note(*scales, "int4 scales of " + wName + ", per " + group);
      note(*zeros, "int4 zero points of " + wName + ", per " + group);
    } else {
      note(*w, scheme + (format.scheme == QuantScheme::Int8
                             ? " codes (W8A16), per-row scales"
                             : " codes (W8A8, E4M3), per-row scales; "
                               "activations per row at run time"));
      note(*scales, scheme + " scales of " + wName + ", per row");
    }
    break;
  }
  }
  define(result, {out, 0, s.buffers[out].width});
  return success();
}

LogicalResult Translator::translate(Operation *op) {
  if (isa<WeightOp>(op))
    return success(); // weights are registered when used
  if (op->hasTrait<WeightTransform>())
    return op->emitError("weight transforms must be materialised before "
                         "code generation (sol-materialize-weights)");

  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    FailureOr<int32_t> w = weight(op, e.getTable());
    if (failed(stepInput(op, e.getIds(), StepProgram::kTokens, "tokens")) ||
        failed(w))
      return failure();
    int32_t out = newBuffer("hidden", e.getResult());
    PlanOp &o = emit(OpKind::Embedding, op);
    o.buffers = {out, StepProgram::kTokens};
    o.weights = {*w};
    o.embeddingScale = e.getScale() ? e.getScale()->convertToFloat() : 1.0f;
    define(e.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto norm = dyn_cast<RmsNormOp>(op)) {
    FailureOr<int32_t> w = weight(op, norm.getWeight());
    if (failed(w))
      return failure();
    const int64_t group = norm.getWeight().getType().getDimSize(0);
    const int64_t width = columns(norm.getResult());
    const float eps = norm.getEpsilon().convertToFloat();
    FailureOr<View> in = view(op, norm.getInput());
    if (failed(in))
      return failure();
    if (group != width || in->cols != s.buffers[in->buffer].width) {
      // Per-head norms (or a norm of a column slice) run in place.
      if (failed(inPlace(op, norm.getInput())))
        return failure();
      PlanOp &o = emit(OpKind::HeadRmsNorm, op);
      o.buffers = {in->buffer};
      o.weights = {*w};
      o.column = in->col;
      o.heads = width / group;
      o.headDim = group;
      o.eps = eps;
      define(norm.getResult(), *in);
      return success();
    }
    int32_t out = newBuffer("normed", norm.getResult(), rowsOf(*in));
    PlanOp &o = emit(OpKind::RmsNorm, op);
    o.buffers = {out, in->buffer};
    o.weights = {*w};
    o.eps = eps;
    define(norm.getResult(), {out, 0, width});
    return success();
  }

  if (auto norm = dyn_cast<HeadRmsNormOp>(op)) {
    FailureOr<int32_t> w = weight(op, norm.getWeight());
    FailureOr<View> in = view(op, norm.getInput());
    if (failed(w) || failed(in) || failed(inPlace(op, norm.getInput())))
      return failure();
    FailureOr<int32_t> second;
    if (norm.getSecondWeight() &&
        failed(second = weight(op, norm.getSecondWeight())))
      return failure();
    PlanOp &o = emit(OpKind::HeadRmsNorm, op);
    o.buffers = {in->buffer};
    o.weights = {*w};
    if (norm.getSecondWeight())
      o.weights.push_back(*second);
    o.secondHeads = static_cast<int64_t>(norm.getSecondHeads());
    o.column = in->col + static_cast<int64_t>(norm.getColumn());
    o.heads = static_cast<int64_t>(norm.getNumHeads());
    o.headDim = norm.getWeight().getType().getDimSize(0);
    o.eps = norm.getEpsilon().convertToFloat();
    define(norm.getResult(), *in);
    return success();
  }

  if (auto norm = dyn_cast<AddRmsNormOp>(op)) {
    FailureOr<int32_t> w = weight(op, norm.getWeight());
    FailureOr<View> x = whole(op, norm.getInput());
    FailureOr<View> r = whole(op, norm.getResidual());
    if (failed(w) || failed(x) || failed(r) ||
        failed(inPlace(op, norm.getResidual())))
      return failure();
    FailureOr<int32_t> inputWeight;
    if (norm.getInputWeight() &&
        failed(inputWeight = weight(op, norm.getInputWeight())))
      return failure();
    if (x->buffer == r->buffer)
      return op->emitError("internal error: input and residual share a "
                           "buffer"),
             failure();
    int32_t out = newBuffer("normed", norm.getNormed(), rowsOf(*x));
    PlanOp &o = emit(OpKind::RmsNorm, op);
    o.buffers = {out, x->buffer, r->buffer};
    o.weights = {*w};
    o.eps = norm.getEpsilon().convertToFloat();
    if (norm.getInputWeight()) {
      o.weights.push_back(*inputWeight);
      o.inputEps = norm.getInputEpsilon()->convertToFloat();
    }
    define(norm.getNormed(), {out, 0, s.buffers[out].width});
    define(norm.getSum(), *r);
    return success();
  }

  if (auto l = dyn_cast<LinearOp>(op))
    return linear(op, l.getInput(), Value(), 0.0f, l.getWeight(), l.getBias(),
                  l.getResidual(), l.getEpilogue(), l.getResult(), formatOf(l));
  if (auto l = dyn_cast<NormLinearOp>(op))
    return linear(op, l.getInput(), l.getNormWeight(),
                  l.getEpsilon().convertToFloat(), l.getWeight(), l.getBias(),
                  l.getResidual(), l.getEpilogue(), l.getResult(), formatOf(l));

  if (auto r = dyn_cast<RopeKvWriteOp>(op)) {
    FailureOr<View> qkv = whole(op, r.getQkv());
    if (failed(qkv) ||
        failed(stepInput(op, r.getPositions(), StepProgram::kPositions,
                         "positions")) ||
        failed(stepInput(op, r.getTokenSeq(), StepProgram::kTokenSeq,
                         "token_seq")) ||
        failed(inPlace(op, r.getQkv())))
      return failure();
    const int64_t headDim = r.getHeadDim();
    PlanOp &o = emit(OpKind::RopeKvWrite, op);
    o.buffers = {qkv->buffer};
    o.layer = static_cast<int64_t>(r.getLayer());
    o.heads = static_cast<int64_t>(r.getNumHeads());
    o.kvHeads = static_cast<int64_t>(r.getNumKvHeads());
    o.headDim = headDim;
    o.rope = rope(r.getRope(), headDim);
    define(r.getResult(), *qkv);
    return success();
  }

  if (auto a = dyn_cast<KvAttentionOp>(op)) {
    FailureOr<View> qkv = whole(op, a.getQkv());
    if (failed(qkv) ||
        failed(stepInput(op, a.getPositions(), StepProgram::kPositions,
                         "positions")) ||
        failed(stepInput(op, a.getTokenSeq(), StepProgram::kTokenSeq,
                         "token_seq")))
      return failure();
    FailureOr<int32_t> sinks =
        a.getSinks() ? weight(op, a.getSinks()) : FailureOr<int32_t>(-1);
    if (failed(sinks))
      return failure();
    int32_t out = newBuffer("attn", a.getResult(), rowsOf(*qkv));
    PlanOp &o = emit(OpKind::Attention, op);
    o.buffers = {out, qkv->buffer};
    if (*sinks >= 0)
      o.weights = {*sinks};
    o.layer = static_cast<int64_t>(a.getLayer());
    o.heads = static_cast<int64_t>(a.getNumHeads());
    o.kvHeads = static_cast<int64_t>(a.getNumKvHeads());
    o.headDim = static_cast<int64_t>(a.getHeadDim());
    o.slidingWindow = static_cast<int64_t>(a.getSlidingWindow().value_or(0));
    o.scale = a.getScale().convertToFloat();
    o.softcap = a.getSoftcap() ? a.getSoftcap()->convertToFloat() : 0.0f;
    define(a.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto g = dyn_cast<GatherRowsOp>(op)) {
    FailureOr<View> in = whole(op, g.getInput());
    if (failed(in) || failed(stepInput(op, g.getRows(), StepProgram::kLogitRows,
                                       "logit_rows")))
      return failure();
    int32_t out = newBuffer("gathered", g.getResult(), fb::Rows::Outputs);
    PlanOp &o = emit(OpKind::GatherRows, op);
    o.buffers = {out, in->buffer, StepProgram::kLogitRows};
    define(g.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto g = dyn_cast<GatherColumnsOp>(op)) {
    FailureOr<View> in = whole(op, g.getInput());
    if (failed(in))
      return failure();
    int32_t out = newBuffer("gathered_columns", g.getResult(), rowsOf(*in));
    PlanOp &o = emit(OpKind::GatherColumns, op);
    o.buffers = {out, in->buffer};
    o.columns.assign(g.getColumns().begin(), g.getColumns().end());
    define(g.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto c = dyn_cast<ConcatColumnsOp>(op)) {
    std::vector<View> parts;
    for (Value input : c.getInputs()) {
      FailureOr<View> v = view(op, input);
      if (failed(v))
        return failure();
      parts.push_back(*v);
    }
    int32_t out = newBuffer("packed", c.getResult(), rowsOf(parts.front()));
    PlanOp &o = emit(OpKind::ConcatColumns, op);
    o.buffers = {out};
    for (const View &v : parts) {
      if (rowsOf(v) != rowsOf(parts.front()))
        return op->emitError("inputs have different row counts"), failure();
      o.buffers.push_back(v.buffer);
      o.columns.push_back(v.col);
      o.widths.push_back(v.cols);
    }
    define(c.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto add = dyn_cast<AddOp>(op)) {
    FailureOr<View> lhs = whole(op, add.getLhs());
    FailureOr<View> rhs = whole(op, add.getRhs());
    if (failed(lhs) || failed(rhs))
      return failure();
    // The sum overwrites the left operand when nothing reads it afterwards.
    bool reuse = lhs->buffer >= StepProgram::kNumInputs &&
                 lhs->buffer != rhs->buffer &&
                 llvm::all_of(held[lhs->buffer],
                              [&](Value v) { return unusedAfter(v, op); });
    int32_t out =
        reuse ? lhs->buffer : newBuffer("add", add.getResult(), rowsOf(*lhs));
    PlanOp &o = emit(OpKind::Add, op);
    o.buffers = {out, lhs->buffer, rhs->buffer};
    define(add.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto swiglu = dyn_cast<SwigluOp>(op)) {
    if (swiglu.getUp())
      return op->emitError("two-operand sol.swiglu is tensor-level: run "
                           "sol-lower-to-kernels"),
             failure();
    FailureOr<View> in = whole(op, swiglu.getGate());
    if (failed(in))
      return failure();
    int32_t out = newBuffer("act", swiglu.getResult(), rowsOf(*in));
    PlanOp &o = emit(OpKind::Swiglu, op);
    o.buffers = {out, in->buffer};
    static_assert(static_cast<int>(GateActivation::GeluTanh) ==
                  static_cast<int>(fb::GateActivation::GeluTanh));
    o.activation = static_cast<fb::GateActivation>(swiglu.getActivation());
    define(swiglu.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto moe = dyn_cast<MoeOp>(op)) {
    FailureOr<View> in = whole(op, moe.getInput());
    FailureOr<int32_t> router = weight(op, moe.getRouter());
    FailureOr<int32_t> gate = weight(op, moe.getGate());
    FailureOr<int32_t> up = weight(op, moe.getUp());
    FailureOr<int32_t> down = weight(op, moe.getDown());
    if (failed(in) || failed(router) || failed(gate) || failed(up) ||
        failed(down))
      return failure();
    SmallVector<int32_t, 10> extras; // biases, scales, zero points
    for (ValueRange values :
         {ValueRange(moe.getBiases()), ValueRange(moe.getScales()),
          ValueRange(moe.getZeros())})
      for (Value v : values) {
        FailureOr<int32_t> w = weight(op, v);
        if (failed(w))
          return failure();
        extras.push_back(*w);
      }
    int32_t out = newBuffer("moe", moe.getResult(), rowsOf(*in));
    PlanOp &o = emit(OpKind::Moe, op);
    o.buffers = {out, in->buffer};
    o.weights = {*router, *gate, *up, *down};
    o.weights.insert(o.weights.end(), extras.begin(), extras.end());
    // The experts' codes, scales and zero points say what they are in
    // solrun --info --weights.
    const QuantScheme quant = moe.getExpertQuant();
    if (quant != QuantScheme::None) {
      const std::string scheme(stringifyQuantScheme(quant));
      const std::string per =
          quant == QuantScheme::Int4
              ? "group of " + std::to_string(moe.getExpertGroupSize()) +
                    " inputs"
              : "row";
      const size_t scalesAt = moe.getBiases().size();
      for (size_t j = 0; j < 3; ++j) {
        const int32_t codes = o.weights[1 + j];
        note(codes, scheme + " expert codes (W" +
                        (quant == QuantScheme::Int4 ? "4" : "8") +
                        "A16), scales per " + per);
        note(extras[scalesAt + j],
             scheme + " scales of " +
                 s.weights[static_cast<size_t>(codes)].name + ", per " + per);
        if (quant == QuantScheme::Int4)
          note(extras[scalesAt + 3 + j],
               "int4 zero points of " +
                   s.weights[static_cast<size_t>(codes)].name + ", per " + per);
      }
    } else if (auto kept = op->getAttrOfType<StringAttr>("sol.quant_kept")) {
      for (size_t j = 0; j < 3; ++j)
        note(o.weights[1 + j], "kept: " + kept.str());
    }
    switch (quant) {
    case QuantScheme::None:
      if (moe.isMxfp4())
        o.expertFormat = fb::ExpertFormat::Mxfp4;
      break;
    case QuantScheme::Int8:
      o.expertFormat = fb::ExpertFormat::Int8;
      break;
    case QuantScheme::Fp8:
      o.expertFormat = fb::ExpertFormat::Fp8;
      break;
    case QuantScheme::Int4:
      o.expertFormat = fb::ExpertFormat::Int4;
      o.groupSize = moe.getExpertGroupSize();
      break;
    }
    o.topK = moe.getTopK();
    o.normalizeTopK = moe.getNormalizeTopK();
    o.activation = static_cast<fb::GateActivation>(moe.getActivation());
    if (moe.getActivationLimit())
      o.activationLimit = moe.getActivationLimit()->convertToFloat();
    define(moe.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto gate = dyn_cast<SigmoidGateOp>(op)) {
    FailureOr<View> value = whole(op, gate.getValue());
    FailureOr<View> in = whole(op, gate.getInput());
    FailureOr<int32_t> w = weight(op, gate.getWeight());
    if (failed(value) || failed(in) || failed(w))
      return failure();
    int32_t out = newBuffer("gated", gate.getResult(), rowsOf(*value));
    PlanOp &o = emit(OpKind::SigmoidGate, op);
    o.buffers = {out, value->buffer, in->buffer};
    o.weights = {*w};
    define(gate.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto sum = dyn_cast<AllReduceOp>(op)) {
    FailureOr<View> in = whole(op, sum.getInput());
    if (failed(in) || failed(inPlace(op, sum.getInput())))
      return failure();
    if (failed(collective(op, sum.getRanks())))
      return failure();
    PlanOp &o = emit(OpKind::AllReduce, op);
    o.buffers = {in->buffer};
    define(sum.getResult(), *in);
    return success();
  }

  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    FailureOr<View> in = whole(op, gather.getInput());
    if (failed(in) || failed(collective(op, gather.getRanks())))
      return failure();
    const bool logits =
        cast<RankedTensorType>(gather.getType()).getElementType().isF32();
    int32_t out = newBuffer(logits ? "logits" : "gathered", gather.getResult(),
                            rowsOf(*in));
    PlanOp &o = emit(OpKind::AllGather, op);
    o.buffers = {out, in->buffer};
    define(gather.getResult(), {out, 0, s.buffers[out].width});
    return success();
  }

  if (auto cap = dyn_cast<SoftcapOp>(op)) {
    FailureOr<View> in = whole(op, cap.getInput());
    if (failed(in) || failed(inPlace(op, cap.getInput())))
      return failure();
    PlanOp &o = emit(OpKind::Softcap, op);
    o.buffers = {in->buffer};
    o.softcap = cap.getCap().convertToFloat();
    define(cap.getResult(), *in);
    return success();
  }

  if (auto split = dyn_cast<SplitOp>(op)) {
    FailureOr<View> in = view(op, split.getInput());
    if (failed(in))
      return failure();
    int64_t col = in->col;
    for (Value part : split.getResults()) {
      int64_t cols = columns(part);
      define(part, {in->buffer, col, cols});
      col += cols;
    }
    return success();
  }

  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    if (ret.getNumOperands() != 1)
      return op->emitError("@forward must return the logits"), failure();
    FailureOr<View> logits = whole(op, ret.getOperand(0));
    if (failed(logits))
      return failure();
    const ProgramBuffer &b = s.buffers[logits->buffer];
    if (b.dtype != fb::DType::F32 || b.rows != fb::Rows::Outputs)
      return op->emitError("@forward must return f32 logits of the gathered "
                           "rows"),
             failure();
    s.logitsBuffer = logits->buffer;
    return success();
  }

  return op->emitError("'")
         << op->getName()
         << "' is not a kernel-level op (run sol-lower-to-kernels first)";
}

FailureOr<StepProgram> Translator::run(ModelAttr model,
                                       int64_t tensorParallelSize) {
  s.model = {model.getArchitecture().str(),
             model.getVocabSize(),
             model.getHiddenSize(),
             model.getNumLayers(),
             model.getMaxPositionEmbeddings(),
             model.getPositionLimit(),
             tensorParallelSize};
  if (fn.getNumArguments() != StepProgram::kNumInputs)
    return fn.emitError("@forward must take tokens, positions, token_seq and "
                        "logit_rows"),
           failure();
  static const char *const inputs[] = {"tokens", "positions", "token_seq",
                                       "logit_rows"};
  for (unsigned i = 0; i < StepProgram::kNumInputs; ++i) {
    s.buffers.push_back(
        {inputs[i], fb::DType::I32, 1,
         i == StepProgram::kLogitRows ? fb::Rows::Outputs : fb::Rows::Tokens,
         -1});
    held.emplace_back();
  }
  for (Operation &op : fn.getBody().front())
    if (failed(translate(&op)))
      return failure();
  if (s.logitsBuffer < 0)
    return fn.emitError("@forward computes no logits"), failure();
  // In a quantized model, say what stays as it is: the embedding tables, and
  // the linears no pass gave a reason for (the LM head, or a linear that a
  // quantized checkpoint leaves in float).
  const bool quantized = llvm::any_of(
      s.ops, [](const PlanOp &o) { return o.quant != fb::WeightQuant::None; });
  auto kept = [&](int32_t w, StringRef why) {
    note(w, "kept " +
                StringRef(dtypeName(toDType(s.weights[w].dtype))).lower() +
                ": " + why.str());
  };
  for (const PlanOp &o : s.ops) {
    if (!quantized ||
        (o.kind != OpKind::Linear && o.kind != OpKind::NormLinear) ||
        o.quant != fb::WeightQuant::None)
      continue;
    const int32_t w = o.weights[o.linearWeight()];
    if (s.weights[static_cast<size_t>(w)].note.empty())
      kept(w, o.buffers[0] == s.logitsBuffer
                  ? "LM head"
                  : "not quantized in the source model");
  }
  for (const PlanOp &o : s.ops)
    if (quantized && o.kind == OpKind::Embedding)
      kept(o.weights[0], "embedding table");
  s.assignArenaSlots();
  return std::move(s);
}

} // namespace

FailureOr<StepProgram> translateToStep(ModuleOp module) {
  auto model = module->getAttrOfType<ModelAttr>(ModelAttr::kAttrName);
  if (!model)
    return module.emitError() << "the module has no " << ModelAttr::kAttrName
                              << " attribute (its importer records it)",
           failure();
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn)
    return module.emitError("the module has no @forward function"), failure();
  int64_t ranks = 1;
  if (Attribute a = module->getAttr(kTensorParallelSizeAttr)) {
    auto n = dyn_cast<IntegerAttr>(a);
    if (!n || n.getInt() < 1)
      return module.emitError() << kTensorParallelSizeAttr
                                << " must be a positive integer, got " << a,
             failure();
    ranks = n.getInt();
  }
  return Translator(fn).run(model, ranks);
}

} // namespace sol

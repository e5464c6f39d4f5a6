//===- LowerToSchedule.cpp - sol module -> kernel-level step --------------===//
//
// Walks @forward in program order and maps every SSA tensor to a view of an
// activation buffer (a buffer and a column range: sol.split only makes views).
// These fusions happen here because they decide the kernels' shapes:
//  * a residual sol.add of a linear's only result into a value nothing reads
//    afterwards becomes that Linear's residual epilogue, in place on the
//    residual stream;
//  * an RMS norm whose only user is a linear becomes a NormLinear (the CUDA
//    GEMV recomputes the norm in each block instead of a launch of its own);
//  * any other residual sol.add feeding an RMS norm is folded into the norm,
//    which updates the residual buffer in place;
//  * sol.rope of the Q and K parts of a fused QKV buffer and the sol.attention
//    consuming them become one RopeKvWrite (rotate, append to the KV cache)
//    and one Attention op;
//  * a linear with the swiglu epilogue over a weight concatenated from gate
//    and up halves gets the swiglu epilogue on row-interleaved weights; other
//    swiglu linears become Linear + Swiglu.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/LowerToSchedule.h"

#include "frontend/hf/DerivedRope.h"
#include "ir/SolDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <optional>

using namespace mlir;

namespace sol {

namespace {

/// A column range of a buffer.
struct View {
  int32_t buffer = -1;
  int64_t col = 0;
  int64_t cols = 0;
};

/// A sol.add not yet emitted: folded into the norm that reads it, if any.
struct PendingAdd {
  View lhs, rhs;
  bool lhsDead; // lhs may be overwritten by the sum
};

/// A sol.rope not yet emitted: fused into the attention that reads it.
struct PendingRope {
  View input;
  RopeAttr rope;
};

/// A plain RMS norm not yet emitted: fused into the linear that reads it.
struct PendingNorm {
  View input;
  int32_t weight;
  float eps;
};

class Lowering {
public:
  explicit Lowering(func::FuncOp fn) : fn(fn) {}
  FailureOr<Schedule> run();

private:
  LogicalResult lower(Operation *op);
  FailureOr<View> view(Operation *user, Value v);
  FailureOr<View> fullBuffer(Operation *user, Value v);
  int32_t newBuffer(const std::string &name, int64_t width, fb::DType dtype,
                    fb::Rows rows = fb::Rows::Tokens);
  FailureOr<int32_t> weight(Value v);
  int32_t rope(RopeAttr attr, int64_t headDim);
  ScheduleOp &emit(fb::OpKind kind, Operation *op);
  View materialize(Value sum, const PendingAdd &add, Operation *at);
  std::string nameOf(Operation *op);
  /// Emits Linear(out, in) or, when `in` is a pending norm's result,
  /// NormLinear(out, normed input); `epilogue` as in Plan.fbs.
  LogicalResult emitLinear(Operation *op, int32_t out, Value in,
                           std::vector<int32_t> weights, int64_t epilogue);
  /// The buffer a linear's result can be added into in place: the other
  /// operand of its only user, a sol.add, when nothing reads that operand
  /// between the linear and the add or after the add.
  std::optional<std::pair<AddOp, Value>> residualTarget(LinearOp linear);

  func::FuncOp fn;
  Schedule s;
  llvm::DenseMap<Value, View> views;
  llvm::DenseMap<Value, PendingAdd> pendingAdds;
  llvm::DenseMap<Value, PendingRope> pendingRopes;
  llvm::DenseMap<Value, PendingNorm> pendingNorms;
  llvm::DenseSet<Operation *> foldedAdds; // done by a linear's epilogue
  std::map<std::string, int32_t> weightIndex;
  std::vector<std::pair<RopeAttr, int64_t>> ropeKeys;
};

std::string Lowering::nameOf(Operation *op) {
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().str();
  return op->getName().getStringRef().str();
}

int32_t Lowering::newBuffer(const std::string &name, int64_t width,
                            fb::DType dtype, fb::Rows rows) {
  s.buffers.push_back({name, dtype, width, rows, -1});
  return static_cast<int32_t>(s.buffers.size() - 1);
}

ScheduleOp &Lowering::emit(fb::OpKind kind, Operation *op) {
  s.ops.push_back({});
  ScheduleOp &o = s.ops.back();
  o.kind = kind;
  o.name = nameOf(op);
  return o;
}

FailureOr<View> Lowering::view(Operation *user, Value v) {
  if (pendingNorms.count(v))
    return user->emitError("internal error: a fused norm's result is read "
                           "by more than its linear"),
           failure();
  if (pendingRopes.count(v))
    return user->emitError("the result of sol.rope can only feed "
                           "sol.attention in generated code"),
           failure();
  if (auto it = pendingAdds.find(v); it != pendingAdds.end()) {
    View sum = materialize(v, it->second, user);
    pendingAdds.erase(it);
    views[v] = sum;
  }
  auto it = views.find(v);
  if (it == views.end())
    return user->emitError("operand was not lowered (unsupported producer)"),
           failure();
  return it->second;
}

FailureOr<View> Lowering::fullBuffer(Operation *user, Value v) {
  FailureOr<View> r = view(user, v);
  if (failed(r))
    return failure();
  if (r->col != 0 || r->cols != s.buffers[r->buffer].width)
    return user->emitError("generated kernels need this operand as a whole "
                           "buffer, not a column slice"),
           failure();
  return r;
}

/// Emits the deferred `lhs + rhs` as an Add op.
View Lowering::materialize(Value sum, const PendingAdd &add, Operation *at) {
  int64_t width = add.lhs.cols;
  int32_t out =
      add.lhsDead ? add.lhs.buffer : newBuffer("add", width, fb::DType::BF16);
  ScheduleOp &o = emit(fb::OpKind::Add, sum.getDefiningOp());
  o.buffers = {out, add.lhs.buffer, add.rhs.buffer};
  o.writes = {out};
  return {out, 0, width};
}

FailureOr<int32_t> Lowering::weight(Value v) {
  auto w = v.getDefiningOp<WeightOp>();
  if (!w)
    return failure();
  std::string name = w.getName().str();
  if (auto it = weightIndex.find(name); it != weightIndex.end())
    return it->second;
  ScheduleWeight sw;
  sw.name = name;
  if (auto concat = w.getConcat())
    for (Attribute a : *concat)
      sw.sources.push_back(cast<FlatSymbolRefAttr>(a).getValue().str());
  else
    sw.sources.push_back(name);
  auto shape = w.getResult().getType().getShape();
  sw.shape.assign(shape.begin(), shape.end());
  s.weights.push_back(std::move(sw));
  int32_t index = static_cast<int32_t>(s.weights.size() - 1);
  weightIndex[name] = index;
  return index;
}

/// The rope table of `attr`, derived by the frontend's one implementation
/// of transformers' ROPE_INIT_FUNCTIONS.
int32_t Lowering::rope(RopeAttr attr, int64_t headDim) {
  for (auto [i, key] : llvm::enumerate(ropeKeys))
    if (key.first == attr && key.second == headDim)
      return static_cast<int32_t>(i);
  hf::ModelConfig config;
  config.headDim = headDim;
  config.ropeTheta = attr.getTheta().convertToDouble();
  hf::RopeScaling &scaling = config.ropeScaling;
  switch (attr.getKind()) {
  case RopeScalingKind::None:
    scaling.type = hf::RopeScalingType::None;
    break;
  case RopeScalingKind::Linear:
    scaling.type = hf::RopeScalingType::Linear;
    break;
  case RopeScalingKind::Llama3:
    scaling.type = hf::RopeScalingType::Llama3;
    break;
  case RopeScalingKind::Yarn:
    scaling.type = hf::RopeScalingType::Yarn;
    break;
  }
  scaling.factor = attr.getFactor().convertToDouble();
  scaling.lowFreqFactor = attr.getLowFreqFactor().convertToDouble();
  scaling.highFreqFactor = attr.getHighFreqFactor().convertToDouble();
  if (attr.getOriginalMaxPosition() > 0)
    scaling.originalMaxPositionEmbeddings = attr.getOriginalMaxPosition();
  config.maxPositionEmbeddings = attr.getOriginalMaxPosition();
  scaling.betaFast = attr.getBetaFast().convertToDouble();
  scaling.betaSlow = attr.getBetaSlow().convertToDouble();
  if (double af = attr.getAttentionFactor().convertToDouble(); af > 0)
    scaling.attentionFactor = af;
  hf::DerivedRope derived = hf::DerivedRope::compute(config);
  s.ropes.push_back({std::move(derived.invFreq), derived.attentionScaling});
  ropeKeys.emplace_back(attr, headDim);
  return static_cast<int32_t>(s.ropes.size() - 1);
}

/// True if every user of `v` other than `op` comes before `op` in the block.
bool deadAfter(Value v, Operation *op) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return user == op ||
           (user->getBlock() == op->getBlock() && user->isBeforeInBlock(op));
  });
}

std::optional<std::pair<AddOp, Value>>
Lowering::residualTarget(LinearOp linear) {
  Value y = linear.getResult();
  if (!y.hasOneUse())
    return std::nullopt;
  auto add = dyn_cast<AddOp>(*y.getUsers().begin());
  if (!add || add->getBlock() != linear->getBlock())
    return std::nullopt;
  Value other = add.getLhs() == y ? add.getRhs() : add.getLhs();
  if (other == y || isa<BlockArgument>(other))
    return std::nullopt;
  // The sum is written where `other` lives, at the linear: every other
  // reader of `other` must run before the linear.
  for (Operation *user : other.getUsers())
    if (user != add.getOperation() &&
        !(user->getBlock() == linear->getBlock() &&
          user->isBeforeInBlock(linear)))
      return std::nullopt;
  return std::make_pair(add, other);
}

LogicalResult Lowering::emitLinear(Operation *op, int32_t out, Value in,
                                   std::vector<int32_t> weights,
                                   int64_t epilogue) {
  if (auto it = pendingNorms.find(in); it != pendingNorms.end()) {
    PendingNorm norm = it->second;
    pendingNorms.erase(it);
    int32_t normed = newBuffer("normed", norm.input.cols, fb::DType::BF16,
                               s.buffers[norm.input.buffer].rows);
    ScheduleOp &o = emit(fb::OpKind::NormLinear, op);
    o.buffers = {out, norm.input.buffer, normed};
    o.writes = {out, normed};
    o.weights = {norm.weight};
    o.weights.insert(o.weights.end(), weights.begin(), weights.end());
    o.ints = {epilogue};
    o.floats = {norm.eps};
    return success();
  }
  FailureOr<View> x = fullBuffer(op, in);
  if (failed(x))
    return failure();
  ScheduleOp &o = emit(fb::OpKind::Linear, op);
  o.buffers = {out, x->buffer};
  o.writes = {out};
  o.weights = std::move(weights);
  if (epilogue != 0)
    o.ints = {epilogue};
  return success();
}

/// The linear that is the only user of a norm's result, when nothing but
/// weight declarations runs between them (so the norm's input is unchanged
/// when the linear recomputes the norm).
LinearOp fusibleLinearUser(RmsNormOp norm) {
  Value y = norm.getResult();
  if (!y.hasOneUse())
    return nullptr;
  auto linear = dyn_cast<LinearOp>(*y.getUsers().begin());
  if (!linear || linear.getInput() != y ||
      linear->getBlock() != norm->getBlock())
    return nullptr;
  for (Operation *o = norm->getNextNode(); o && o != linear.getOperation();
       o = o->getNextNode())
    if (!isa<WeightOp>(o))
      return nullptr;
  return linear;
}

LogicalResult Lowering::lower(Operation *op) {
  if (isa<WeightOp>(op))
    return success(); // weights are registered when used
  if (foldedAdds.contains(op))
    return success(); // done by the epilogue of the linear it adds

  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    auto ids = dyn_cast<BlockArgument>(e.getIds());
    if (!ids || ids.getArgNumber() != Schedule::kTokens)
      return op->emitError("embedding ids must be the tokens argument");
    FailureOr<int32_t> w = weight(e.getTable());
    if (failed(w))
      return op->emitError("embedding table must be a sol.weight");
    int64_t width = e.getType().getDimSize(1);
    int32_t out = newBuffer("hidden", width, fb::DType::BF16);
    ScheduleOp &o = emit(fb::OpKind::Embedding, op);
    o.buffers = {out, Schedule::kTokens};
    o.weights = {*w};
    o.writes = {out};
    views[e.getResult()] = {out, 0, width};
    return success();
  }

  if (auto add = dyn_cast<AddOp>(op)) {
    FailureOr<View> lhs = fullBuffer(op, add.getLhs());
    FailureOr<View> rhs = fullBuffer(op, add.getRhs());
    if (failed(lhs) || failed(rhs))
      return failure();
    bool lhsDead = deadAfter(add.getLhs(), op) &&
                   !isa<BlockArgument>(add.getLhs()) &&
                   lhs->buffer != rhs->buffer;
    pendingAdds[add.getResult()] = {*lhs, *rhs, lhsDead};
    return success();
  }

  if (auto norm = dyn_cast<RmsNormOp>(op)) {
    FailureOr<int32_t> w = weight(norm.getWeight());
    if (failed(w))
      return op->emitError("norm weight must be a sol.weight");
    int64_t group = norm.getWeight().getType().getDimSize(0);
    float eps = norm.getEpsilon().convertToFloat();
    int64_t width = norm.getType().getDimSize(1);
    // Per-head norms (Qwen3 q_norm / k_norm) run in place on their columns
    // of the QKV buffer: a group smaller than the row, or a column slice
    // (one KV head: the group is the whole slice).
    bool slice = false;
    if (!pendingAdds.count(norm.getInput())) {
      auto it = views.find(norm.getInput());
      slice = it != views.end() &&
              (it->second.col != 0 ||
               it->second.cols != s.buffers[it->second.buffer].width);
    }
    if (group != width || slice) {
      FailureOr<View> in = view(op, norm.getInput());
      if (failed(in))
        return failure();
      if (!norm.getInput().hasOneUse())
        return op->emitError("a per-head norm must be the only user of its "
                             "input in generated code");
      ScheduleOp &o = emit(fb::OpKind::HeadRmsNorm, op);
      o.buffers = {in->buffer};
      o.writes = {in->buffer};
      o.weights = {*w};
      o.ints = {in->col, width / group, group};
      o.floats = {eps};
      views[norm.getResult()] = *in;
      return success();
    }
    auto pending = pendingAdds.find(norm.getInput());
    if (pending == pendingAdds.end() && fusibleLinearUser(norm)) {
      FailureOr<View> in = fullBuffer(op, norm.getInput());
      if (failed(in))
        return failure();
      pendingNorms[norm.getResult()] = {*in, *w, eps};
      return success();
    }
    int32_t out = newBuffer("normed", width, fb::DType::BF16);
    if (pending != pendingAdds.end() && pending->second.lhsDead) {
      // residual <- lhs + rhs in place; out = norm(residual).
      PendingAdd add = pending->second;
      pendingAdds.erase(pending);
      ScheduleOp &o = emit(fb::OpKind::RmsNorm, op);
      o.buffers = {out, add.rhs.buffer, add.lhs.buffer};
      o.writes = {out, add.lhs.buffer};
      o.weights = {*w};
      o.floats = {eps};
      views[norm.getInput()] = add.lhs;
    } else {
      FailureOr<View> in = fullBuffer(op, norm.getInput());
      if (failed(in))
        return failure();
      ScheduleOp &o = emit(fb::OpKind::RmsNorm, op);
      o.buffers = {out, in->buffer};
      o.writes = {out};
      o.weights = {*w};
      o.floats = {eps};
    }
    views[norm.getResult()] = {out, 0, width};
    return success();
  }

  if (auto linear = dyn_cast<LinearOp>(op)) {
    // The input is checked by emitLinear (it may be a fused norm's result).
    FailureOr<int32_t> w = weight(linear.getWeight());
    if (failed(w))
      return op->emitError("linear weight must be a sol.weight");
    int64_t n = linear.getWeight().getType().getDimSize(0);
    bool swiglu = linear.getEpilogue() == LinearEpilogue::SwiGLU;
    if (linear.getEpilogue() != LinearEpilogue::None && !swiglu)
      return op->emitError("only the swiglu epilogue is generated so far");
    std::vector<int32_t> weights = {*w};
    if (linear.getBias()) {
      FailureOr<int32_t> b = weight(linear.getBias());
      if (failed(b))
        return op->emitError("linear bias must be a sol.weight");
      weights.push_back(*b);
    }
    // SwiGLU in the epilogue needs each gate row next to its up row: the
    // plan stores gate/up weights (and bias) row-interleaved.
    auto twoHalves = [&](int32_t index) {
      return s.weights[index].sources.size() == 2;
    };
    if (swiglu && llvm::all_of(weights, twoHalves)) {
      for (int32_t index : weights)
        s.weights[index].interleaveHalves = true;
      int32_t act = newBuffer("act", n / 2, fb::DType::BF16);
      if (failed(emitLinear(op, act, linear.getInput(), weights,
                            /*swiglu*/ 2)))
        return failure();
      views[linear.getResult()] = {act, 0, n / 2};
      return success();
    }
    if (!swiglu)
      if (auto target = residualTarget(linear)) {
        FailureOr<View> acc = view(op, target->second);
        if (failed(acc))
          return failure();
        const ScheduleBuffer &buf = s.buffers[acc->buffer];
        // Blocks read all of x while others write their part of out, so x
        // must live elsewhere.
        Value x = linear.getInput();
        auto norm = pendingNorms.find(x);
        auto xView = views.find(x);
        int32_t xBuffer = norm != pendingNorms.end() ? norm->second.input.buffer
                          : xView != views.end()     ? xView->second.buffer
                                                     : -1;
        if (acc->col == 0 && acc->cols == buf.width && buf.width == n &&
            buf.dtype == fb::DType::BF16 && xBuffer >= 0 &&
            xBuffer != acc->buffer) {
          if (failed(emitLinear(op, acc->buffer, linear.getInput(), weights,
                                /*residual*/ 1)))
            return failure();
          foldedAdds.insert(target->first.getOperation());
          views[target->first.getResult()] = *acc;
          return success();
        }
      }
    int32_t out = newBuffer(swiglu ? "gate_up" : "proj", n, fb::DType::BF16);
    if (failed(emitLinear(op, out, linear.getInput(), weights, 0)))
      return failure();
    if (swiglu) {
      int32_t act = newBuffer("act", n / 2, fb::DType::BF16);
      ScheduleOp &a = emit(fb::OpKind::Swiglu, op);
      a.buffers = {act, out};
      a.writes = {act};
      views[linear.getResult()] = {act, 0, n / 2};
    } else {
      views[linear.getResult()] = {out, 0, n};
    }
    return success();
  }

  if (auto swiglu = dyn_cast<SwigluOp>(op)) {
    if (swiglu.getUp())
      return op->emitError("two-operand sol.swiglu: run sol-fuse first");
    FailureOr<View> in = fullBuffer(op, swiglu.getGate());
    if (failed(in))
      return failure();
    int64_t width = swiglu.getType().getDimSize(1);
    int32_t act = newBuffer("act", width, fb::DType::BF16);
    ScheduleOp &a = emit(fb::OpKind::Swiglu, op);
    a.buffers = {act, in->buffer};
    a.writes = {act};
    views[swiglu.getResult()] = {act, 0, width};
    return success();
  }

  if (auto split = dyn_cast<SplitOp>(op)) {
    FailureOr<View> in = view(op, split.getInput());
    if (failed(in))
      return failure();
    int64_t col = in->col;
    for (Value part : split.getResults()) {
      int64_t cols = cast<RankedTensorType>(part.getType()).getDimSize(1);
      views[part] = {in->buffer, col, cols};
      col += cols;
    }
    return success();
  }

  if (auto r = dyn_cast<RopeOp>(op)) {
    FailureOr<View> in = view(op, r.getInput());
    if (failed(in))
      return failure();
    auto pos = dyn_cast<BlockArgument>(r.getPositions());
    if (!pos || pos.getArgNumber() != Schedule::kPositions)
      return op->emitError("rope positions must be the positions argument");
    pendingRopes[r.getResult()] = {*in, r.getRope()};
    return success();
  }

  if (auto attn = dyn_cast<AttentionOp>(op)) {
    auto q = pendingRopes.find(attn.getQuery());
    auto k = pendingRopes.find(attn.getKey());
    if (q == pendingRopes.end() || k == pendingRopes.end())
      return op->emitError("generated attention needs sol.rope on its query "
                           "and key");
    FailureOr<View> v = view(op, attn.getValue());
    if (failed(v))
      return failure();
    const int64_t heads = attn.getNumHeads(), kvHeads = attn.getNumKvHeads(),
                  headDim = attn.getHeadDim();
    View qv = q->second.input, kv = k->second.input;
    int32_t qkv = qv.buffer;
    if (kv.buffer != qkv || v->buffer != qkv || qv.col != 0 ||
        kv.col != heads * headDim || v->col != (heads + kvHeads) * headDim ||
        s.buffers[qkv].width != (heads + 2 * kvHeads) * headDim)
      return op->emitError("generated attention needs Q, K and V as the "
                           "parts of one fused projection (run sol-fuse)");
    if (q->second.rope != k->second.rope)
      return op->emitError("query and key use different rope parameters");
    if (!attn.getCausal())
      return op->emitError("only causal attention is generated");
    int32_t ropeIndex = rope(q->second.rope, headDim);
    const int64_t layer = attn.getLayer();
    ScheduleOp &r = emit(fb::OpKind::RopeKvWrite, op);
    r.buffers = {qkv};
    r.writes = {qkv};
    r.ints = {layer, heads, kvHeads, headDim, ropeIndex};
    int32_t out = newBuffer("attn", heads * headDim, fb::DType::BF16);
    ScheduleOp &a = emit(fb::OpKind::Attention, op);
    a.buffers = {out, qkv};
    a.writes = {out};
    a.ints = {layer, heads, kvHeads, headDim,
              static_cast<int64_t>(attn.getSlidingWindow().value_or(0))};
    a.floats = {attn.getScale().convertToFloat()};
    pendingRopes.erase(q);
    pendingRopes.erase(pendingRopes.find(attn.getKey()));
    views[attn.getResult()] = {out, 0, heads * headDim};
    return success();
  }

  if (auto logits = dyn_cast<LogitsOp>(op)) {
    FailureOr<int32_t> nw = weight(logits.getNormWeight());
    FailureOr<int32_t> head = weight(logits.getLmHead());
    if (failed(nw) || failed(head))
      return op->emitError("logits weights must be sol.weight ops");
    auto rows = dyn_cast<BlockArgument>(logits.getRows());
    if (!rows || rows.getArgNumber() != Schedule::kLogitRows)
      return op->emitError("logits rows must be the logit_rows argument");
    int64_t d = logits.getHidden().getType().getDimSize(1);
    int64_t vocab = logits.getType().getDimSize(1);
    float eps = logits.getEpsilon().convertToFloat();
    // Gather the wanted rows first: the final norm and the LM head then run
    // on R rows instead of T.
    auto pending = pendingAdds.find(logits.getHidden());
    int32_t normed =
        newBuffer("final_norm", d, fb::DType::BF16, fb::Rows::Outputs);
    if (pending != pendingAdds.end()) {
      PendingAdd add = pending->second;
      pendingAdds.erase(pending);
      int32_t a = newBuffer("last_lhs", d, fb::DType::BF16, fb::Rows::Outputs);
      int32_t b = newBuffer("last_rhs", d, fb::DType::BF16, fb::Rows::Outputs);
      ScheduleOp &g1 = emit(fb::OpKind::GatherRows, op);
      g1.buffers = {a, add.lhs.buffer, Schedule::kLogitRows};
      g1.writes = {a};
      ScheduleOp &g2 = emit(fb::OpKind::GatherRows, op);
      g2.buffers = {b, add.rhs.buffer, Schedule::kLogitRows};
      g2.writes = {b};
      ScheduleOp &n = emit(fb::OpKind::RmsNorm, op);
      n.buffers = {normed, b, a};
      n.writes = {normed, a};
      n.weights = {*nw};
      n.floats = {eps};
    } else {
      FailureOr<View> in = fullBuffer(op, logits.getHidden());
      if (failed(in))
        return failure();
      int32_t g =
          newBuffer("last_hidden", d, fb::DType::BF16, fb::Rows::Outputs);
      ScheduleOp &g1 = emit(fb::OpKind::GatherRows, op);
      g1.buffers = {g, in->buffer, Schedule::kLogitRows};
      g1.writes = {g};
      // The final norm runs in the LM head's prologue.
      int32_t out =
          newBuffer("logits", vocab, fb::DType::F32, fb::Rows::Outputs);
      ScheduleOp &l = emit(fb::OpKind::NormLinear, op);
      l.buffers = {out, g, normed};
      l.writes = {out, normed};
      l.weights = {*nw, *head};
      l.ints = {0};
      l.floats = {eps};
      views[logits.getResult()] = {out, 0, vocab};
      s.logitsBuffer = out;
      return success();
    }
    int32_t out = newBuffer("logits", vocab, fb::DType::F32, fb::Rows::Outputs);
    ScheduleOp &l = emit(fb::OpKind::Linear, op);
    l.buffers = {out, normed};
    l.writes = {out};
    l.weights = {*head};
    views[logits.getResult()] = {out, 0, vocab};
    s.logitsBuffer = out;
    return success();
  }

  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    if (ret.getNumOperands() != 1 || !views.count(ret.getOperand(0)) ||
        views[ret.getOperand(0)].buffer != s.logitsBuffer)
      return op->emitError("@forward must return the result of sol.logits");
    return success();
  }

  return op->emitError("'")
         << op->getName() << "' is not supported by Sol's code generation yet";
}

FailureOr<Schedule> Lowering::run() {
  if (fn.getNumArguments() != Schedule::kNumInputs)
    return fn.emitError("@forward must take tokens, positions, token_seq and "
                        "logit_rows"),
           failure();
  static const char *const inputs[] = {"tokens", "positions", "token_seq",
                                       "logit_rows"};
  for (unsigned i = 0; i < Schedule::kNumInputs; ++i) {
    newBuffer(inputs[i], 1, fb::DType::I32,
              i == Schedule::kLogitRows ? fb::Rows::Outputs : fb::Rows::Tokens);
    views[fn.getArgument(i)] = {static_cast<int32_t>(i), 0, 1};
  }
  for (Operation &op : fn.getBody().front())
    if (failed(lower(&op)))
      return failure();
  if (s.logitsBuffer < 0)
    return fn.emitError("@forward computes no logits"), failure();
  s.assignArenaSlots();
  return std::move(s);
}

} // namespace

FailureOr<Schedule> lowerToSchedule(ModuleOp module) {
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn)
    return module.emitError("the module has no @forward function"), failure();
  return Lowering(fn).run();
}

} // namespace sol

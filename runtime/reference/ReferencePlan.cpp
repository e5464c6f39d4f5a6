//===- ReferencePlan.cpp - A plan's schedule, decoded and checked ---------===//

#include "runtime/reference/ReferencePlan.h"

#include "runtime/plan/PlanDType.h"

#include "runtime/plan/PlanFile.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>

namespace sol::reference {
namespace {

// Bounds that keep every size product far from int64 overflow; no real
// model comes close (the widest buffers are a few hundred thousand wide).
constexpr int64_t kMaxWidth = int64_t{1} << 28;
constexpr int64_t kMaxHeads = int64_t{1} << 16;
constexpr int64_t kMaxHeadDim = int64_t{1} << 16;
constexpr int64_t kMaxWeightElements = int64_t{1} << 40;

template <typename T, typename V> std::vector<T> toVector(const V *values) {
  std::vector<T> out;
  if (values)
    out.assign(values->begin(), values->end());
  return out;
}

std::string str(const flatbuffers::String *s) {
  return s ? std::string(s->c_str(), s->size()) : std::string();
}

std::string_view rowSpaceName(RowSpace rows) {
  return rows == RowSpace::Tokens ? "Tokens" : "Outputs";
}

} // namespace

ReferencePlan::ReferencePlan(const PlanFile &file)
    : planPath_(file.path().string()) {
  const fb::Plan &plan = file.plan();
  if (const fb::ModelInfo *model = plan.model()) {
    maxPositions_ = model->max_position_embeddings();
    if (maxPositions_ < 0)
      fail("plan ", planPath_, ": model.max_position_embeddings is ",
           maxPositions_, "; it must be positive (or 0 when unknown)");
  }
  plannedTokensPerStep_ = plan.max_tokens_per_step();
  ranks_ = plan.tensor_parallel_size(); // >= 1, checked by PlanFile
  if (const fb::KvCacheLayout *kv = plan.kv_cache()) {
    kvLayout_ = {kv->num_layers(), kv->num_kv_heads(), kv->head_dim(),
                 kv->block_size(), kv->dtype() == fb::DType::F8E4M3};
    hasKvLayout_ = true;
    if (kv->dtype() != fb::DType::BF16 && kv->dtype() != fb::DType::F8E4M3)
      fail("plan ", planPath_, ": the KV cache's dtype (",
           static_cast<int>(kv->dtype()),
           ") is neither BF16 nor F8E4M3; compile it again");
    if (kvLayout_.fp8 != (kv->scales() == fb::KvScales::PerTokenHead))
      fail("plan ", planPath_, ": the KV cache's scales (",
           static_cast<int>(kv->scales()),
           ") do not fit its dtype: fp8 "
           "needs per-token, per-head scales and bf16 none");
    if (kv->arrangement() != fb::KvArrangement::BlockSlotHeadDim)
      fail("plan ", planPath_, ": the KV cache's arrangement (",
           static_cast<int>(kv->arrangement()),
           ") is unknown to this solrun; upgrade it");
    if (kvLayout_.numLayers < 0 || kvLayout_.numKvHeads < 0 ||
        kvLayout_.headDim < 0 || kvLayout_.blockSize <= 0 ||
        kvLayout_.numKvHeads > kMaxHeads || kvLayout_.headDim > kMaxHeadDim ||
        kvLayout_.blockSize > (1 << 16))
      fail("plan ", planPath_, ": kv_cache layout is invalid (num_layers ",
           kvLayout_.numLayers, ", num_kv_heads ", kvLayout_.numKvHeads,
           ", head_dim ", kvLayout_.headDim, ", block_size ",
           kvLayout_.blockSize, ")");
  }
  decodeBuffers(file);
  decodeWeights(file);
  decodeRopes(file);
  decodeOps(file);
  checkDataFlow();
}

void ReferencePlan::decodeBuffers(const PlanFile &file) {
  const auto *buffers = file.plan().buffers();
  const size_t count = buffers ? buffers->size() : 0;
  if (count < kNumStepInputs)
    fail("plan ", planPath_, ": has ", count,
         " buffers, but buffers 0..3 must be the step inputs (tokens, "
         "positions, token_seq, logit_rows)");
  if (count > static_cast<size_t>(std::numeric_limits<int>::max()))
    fail("plan ", planPath_, ": too many buffers (", count, ")");
  static constexpr const char *kInputNames[kNumStepInputs] = {
      "tokens", "positions", "token_seq", "logit_rows"};
  for (size_t i = 0; i < count; ++i) {
    const fb::Buffer *b = buffers->Get(static_cast<flatbuffers::uoffset_t>(i));
    BufferInfo info;
    info.name = str(b->name());
    const auto dtype = static_cast<uint8_t>(b->dtype());
    const auto rows = static_cast<uint8_t>(b->rows());
    if (dtype >= kNumDTypes)
      fail("plan ", planPath_, ": buffer ", i, " '", info.name,
           "' has unknown dtype value ", int{dtype});
    if (rows > 1)
      fail("plan ", planPath_, ": buffer ", i, " '", info.name,
           "' has unknown rows value ", int{rows},
           " (0 = Tokens, 1 = Outputs)");
    info.dtype = toDType(static_cast<fb::DType>(dtype));
    info.rows = static_cast<RowSpace>(rows);
    info.width = b->width();
    if (info.width <= 0 || info.width > kMaxWidth)
      fail("plan ", planPath_, ": buffer ", i, " '", info.name, "' has width ",
           info.width, "; it must be in [1, ", kMaxWidth, "]");
    if (i < kNumStepInputs) {
      const RowSpace expected =
          i == kLogitRowsBuffer ? RowSpace::Outputs : RowSpace::Tokens;
      if (info.dtype != DType::I32 || info.width != 1 || info.rows != expected)
        fail("plan ", planPath_, ": buffer ", i, " '", info.name,
             "' must be the step input ", kInputNames[i], ": I32, width 1, ",
             rowSpaceName(expected), " rows (found ", info.dtype, ", width ",
             info.width, ", ", rowSpaceName(info.rows), " rows)");
    }
    buffers_.push_back(std::move(info));
  }
}

void ReferencePlan::decodeWeights(const PlanFile &file) {
  const auto *weights = file.plan().weights();
  const size_t count = weights ? weights->size() : 0;
  for (size_t i = 0; i < count; ++i) {
    const fb::Weight *w = weights->Get(static_cast<flatbuffers::uoffset_t>(i));
    WeightInfo info;
    info.name = str(w->name());
    const auto dtype = static_cast<uint8_t>(w->dtype());
    if (dtype >= kNumDTypes)
      fail("plan ", planPath_, ": weight ", i, " '", info.name,
           "' has unknown dtype value ", int{dtype});
    info.dtype = toDType(static_cast<fb::DType>(dtype));
    info.shape = toVector<int64_t>(w->shape());
    info.elements = 1;
    for (int64_t d : info.shape) {
      if (d <= 0 || d > kMaxWeightElements / info.elements)
        fail("plan ", planPath_, ": weight ", i, " '", info.name,
             "' has an invalid shape (dimension ", d, ")");
      info.elements *= d;
    }
    weights_.push_back(std::move(info));
  }
  weightUsed_.assign(weights_.size(), false);
}

void ReferencePlan::decodeRopes(const PlanFile &file) {
  const auto *ropes = file.plan().rope();
  if (!ropes)
    return;
  for (const fb::RopeTable *r : *ropes) {
    RopeInfo info;
    info.invFreq = toVector<float>(r->inv_freq());
    info.attentionScaling = r->attention_scaling();
    info.longInvFreq = toVector<float>(r->long_inv_freq());
    info.longFrom = r->long_from();
    if (!info.longInvFreq.empty() &&
        info.longInvFreq.size() != info.invFreq.size())
      fail("plan ", planPath_, ": rope table ", ropes_.size(), " has ",
           info.longInvFreq.size(), " long frequencies for ",
           info.invFreq.size(), " pairs");
    if (!std::isfinite(info.attentionScaling))
      fail("plan ", planPath_, ": rope table ", ropes_.size(),
           " has a non-finite attention_scaling");
    for (float f : info.invFreq)
      if (!std::isfinite(f))
        fail("plan ", planPath_, ": rope table ", ropes_.size(),
             " has a non-finite inv_freq");
    for (float f : info.longInvFreq)
      if (!std::isfinite(f))
        fail("plan ", planPath_, ": rope table ", ropes_.size(),
             " has a non-finite inv_freq");
    ropes_.push_back(std::move(info));
  }
}

void ReferencePlan::decodeOps(const PlanFile &file) {
  std::vector<PlanOp> ops = decodePlanOps(file.plan(), planPath_);
  if (ops.empty())
    fail("plan ", planPath_, ": has no ops (the step schedule is empty)");
  for (size_t i = 0; i < ops.size(); ++i) {
    PlanOp &op = ops[i];
    auto opError = [&](const auto &...what) {
      fail("plan ", planPath_, ": op #", i, " '", op.name, "' (",
           opKindName(op.kind), "): ", what...);
    };
    auto expectCounts = [&](size_t minBuffers, size_t maxBuffers,
                            size_t minWeights, size_t maxWeights) {
      if (op.buffers.size() < minBuffers || op.buffers.size() > maxBuffers)
        opError("has ", op.buffers.size(), " buffers, expected ",
                minBuffers == maxBuffers ? cat(minBuffers)
                                         : cat(minBuffers, " or ", maxBuffers));
      if (op.weights.size() < minWeights || op.weights.size() > maxWeights)
        opError("has ", op.weights.size(), " weights, expected ",
                minWeights == maxWeights ? cat(minWeights)
                                         : cat(minWeights, " or ", maxWeights));
    };
    switch (op.kind) {
    case OpKind::Embedding:
      expectCounts(2, 2, 1, 1);
      break;
    case OpKind::RmsNorm:
      expectCounts(2, 3, 1, 2);
      break;
    case OpKind::HeadRmsNorm:
      expectCounts(1, 1, 1, 2);
      break;
    case OpKind::Linear:
      expectCounts(2, 2, 1 + op.quantOperands(), 2 + op.quantOperands());
      break;
    case OpKind::NormLinear:
      expectCounts(3, 3, 2 + op.quantOperands(), 3 + op.quantOperands());
      break;
    case OpKind::RopeKvWrite:
      expectCounts(1, 1, 0, 0);
      usesKvCache_ = true;
      break;
    case OpKind::Attention:
      expectCounts(2, 2, 0, 1);
      usesKvCache_ = true;
      break;
    case OpKind::Swiglu:
      expectCounts(2, 2, 0, 0);
      break;
    case OpKind::Add:
    case OpKind::GatherRows:
      expectCounts(3, 3, 0, 0);
      break;
    case OpKind::ConcatColumns:
      expectCounts(2, 64, 0, 0);
      break;
    case OpKind::Softcap:
      expectCounts(1, 1, 0, 0);
      break;
    case OpKind::Moe: {
      // Four, the four biases, and quantized experts' scales (and zeros).
      const size_t base = 4 + op.moeQuantWeights();
      expectCounts(2, 2, base, base + 4);
      if (op.weights.size() != base && op.weights.size() != base + 4)
        opError("has ", op.weights.size(), " weights, expected ", base,
                " (no biases) or ", base + 4);
      break;
    }
    case OpKind::SigmoidGate:
      expectCounts(3, 3, 1, 1);
      break;
    case OpKind::GatherColumns:
      expectCounts(2, 2, 0, 0);
      break;
    case OpKind::AllReduce:
      expectCounts(1, 1, 0, 0);
      break;
    case OpKind::AllGather:
      expectCounts(2, 2, 0, 0);
      break;
    }
    const auto epilogue = static_cast<int>(op.epilogue);
    if (epilogue < 0 || epilogue > static_cast<int>(fb::LinearEpilogue::Geglu))
      opError("has an unknown epilogue ", epilogue);
    checkOp(op, static_cast<int>(i));
    for (int w : op.weights)
      weightUsed_[static_cast<size_t>(w)] = true;
    if (op.kind == OpKind::RopeKvWrite || op.kind == OpKind::Attention)
      usedLayers_ = std::max(usedLayers_, static_cast<int32_t>(op.layer + 1));
    ops_.push_back(std::move(op));
  }

  const BufferInfo &logits = buffers_[static_cast<size_t>(logitsBuffer())];
  if (logits.rows != RowSpace::Outputs || logits.dtype != DType::F32)
    fail("plan ", planPath_, ": the last op '", ops_.back().name,
         "' must write the logits: an F32 buffer with Outputs rows, but "
         "buffer '",
         logits.name, "' is ", logits.dtype, " with ",
         rowSpaceName(logits.rows), " rows");
}

void ReferencePlan::checkOp(const PlanOp &op, int opIndex) const {
  auto opError = [&](const auto &...what) {
    fail("plan ", planPath_, ": op #", opIndex, " '", op.name, "' (",
         opKindName(op.kind), "): ", what...);
  };
  // Operand accessors that check the index and the buffer's role.
  auto buffer = [&](size_t operand) -> const BufferInfo & {
    const int index = op.buffers[operand];
    if (index < 0 || static_cast<size_t>(index) >= buffers_.size())
      opError("buffer operand ", operand, " is ", index, ", but the plan has ",
              buffers_.size(), " buffers");
    return buffers_[static_cast<size_t>(index)];
  };
  auto activation = [&](size_t operand) -> const BufferInfo & {
    const BufferInfo &b = buffer(operand);
    if (op.buffers[operand] < kNumStepInputs)
      opError("buffer operand ", operand, " is the step input '", b.name,
              "' where an activation buffer is expected");
    return b;
  };
  auto stepInput = [&](size_t operand) -> const BufferInfo & {
    const BufferInfo &b = buffer(operand);
    if (op.buffers[operand] >= kNumStepInputs)
      opError("buffer operand ", operand, " is '", b.name,
              "', but it must be one of the int32 step inputs (buffers 0..3)");
    return b;
  };
  // A weight operand of `dtype`, or of BF16, F16 or F32 when none is named.
  auto weight = [&](size_t operand,
                    std::optional<DType> dtype = {}) -> const WeightInfo & {
    const int index = op.weights[operand];
    if (index < 0 || static_cast<size_t>(index) >= weights_.size())
      opError("weight operand ", operand, " is ", index, ", but the plan has ",
              weights_.size(), " weights");
    const WeightInfo &w = weights_[static_cast<size_t>(index)];
    if (dtype && w.dtype != *dtype)
      opError("weight '", w.name, "' has dtype ", w.dtype, ", expected ",
              *dtype);
    if (!dtype && w.dtype != DType::BF16 && w.dtype != DType::F16 &&
        w.dtype != DType::F32)
      opError("weight '", w.name, "' has dtype ", w.dtype,
              "; the reference executor runs BF16, F16 and F32 weights, and "
              "int8, fp8 and int4 ones as the codes of a quantized linear");
    return w;
  };
  auto sameRows = [&](const BufferInfo &a, const BufferInfo &b) {
    if (a.rows != b.rows)
      opError("buffers '", a.name, "' (", rowSpaceName(a.rows), " rows) and '",
              b.name, "' (", rowSpaceName(b.rows), " rows) must have the same ",
              "rows");
  };
  auto distinct = [&](size_t a, size_t b) {
    if (op.buffers[a] == op.buffers[b])
      opError("buffer operands ", a, " and ", b, " are the same buffer '",
              buffers_[static_cast<size_t>(op.buffers[a])].name,
              "'; this op cannot run in place");
  };
  auto shapeIs = [&](const WeightInfo &w, std::initializer_list<int64_t> dims) {
    if (!std::equal(w.shape.begin(), w.shape.end(), dims.begin(), dims.end())) {
      std::string expected = "[";
      for (int64_t d : dims)
        expected += cat(expected.size() > 1 ? ", " : "", d);
      std::string found = "[";
      for (int64_t d : w.shape)
        found += cat(found.size() > 1 ? ", " : "", d);
      opError("weight '", w.name, "' has shape ", found, "], expected ",
              expected, "]");
    }
  };
  auto checkEps = [&] {
    if (!std::isfinite(op.eps) || op.eps < 0.0f)
      opError("eps is ", op.eps, "; it must be finite and >= 0");
  };
  // Shared by RopeKvWrite and Attention: the qkv layout and the cache.
  auto checkAttentionShape = [&](const BufferInfo &qkv) {
    if (!hasKvLayout_)
      opError("the plan has no kv_cache layout");
    if (op.layer < 0 || op.layer >= kvLayout_.numLayers)
      opError("layer ", op.layer, " is outside the KV cache's ",
              kvLayout_.numLayers, " layers");
    if (op.kvHeads != kvLayout_.numKvHeads || op.headDim != kvLayout_.headDim)
      opError("kv_heads ", op.kvHeads, " and head_dim ", op.headDim,
              " disagree with the KV cache layout (", kvLayout_.numKvHeads,
              " kv heads of ", kvLayout_.headDim, ")");
    if (op.heads <= 0 || op.heads > kMaxHeads || op.kvHeads <= 0 ||
        op.heads % op.kvHeads != 0)
      opError("heads ", op.heads, " must be a positive multiple of kv_heads ",
              op.kvHeads);
    if (op.headDim <= 0)
      opError("head_dim ", op.headDim, " must be positive");
    if (qkv.rows != RowSpace::Tokens)
      opError("qkv buffer '", qkv.name, "' must have Tokens rows");
    const int64_t qkvWidth = (op.heads + 2 * op.kvHeads) * op.headDim;
    if (qkv.width != qkvWidth)
      opError("qkv buffer '", qkv.name, "' has width ", qkv.width,
              ", expected (heads + 2 * kv_heads) * head_dim = ", qkvWidth);
  };

  switch (op.kind) {
  case OpKind::Embedding: {
    const BufferInfo &out = activation(0);
    const BufferInfo &ids = stepInput(1);
    const WeightInfo &table = weight(0);
    if (table.shape.size() != 2 || table.shape[1] != out.width)
      opError("table '", table.name, "' must have shape [vocab, ", out.width,
              "] to fill buffer '", out.name, "'");
    sameRows(out, ids);
    if (!(op.embeddingScale > 0) || !std::isfinite(op.embeddingScale))
      opError("scale is ", op.embeddingScale,
              "; it must be positive (1 = none)");
    break;
  }
  case OpKind::RmsNorm: {
    const BufferInfo &out = activation(0);
    const BufferInfo &in = activation(1);
    const WeightInfo &w = weight(0);
    if (in.width != out.width)
      opError("in '", in.name, "' has width ", in.width, " but out '", out.name,
              "' has width ", out.width);
    sameRows(out, in);
    if (op.hasResidual()) {
      const BufferInfo &residual = activation(2);
      if (residual.width != in.width)
        opError("residual '", residual.name, "' has width ", residual.width,
                " but in '", in.name, "' has width ", in.width);
      sameRows(in, residual);
      distinct(0, 2);
    }
    shapeIs(w, {out.width});
    checkEps();
    if (op.hasSecondNormWeight()) {
      if (!op.hasResidual())
        opError("normalises its input first (a second weight) but adds no "
                "residual");
      shapeIs(weight(1), {out.width});
      if (!std::isfinite(op.inputEps) || op.inputEps < 0.0f)
        opError("input_eps is ", op.inputEps, "; it must be finite and >= 0");
    }
    break;
  }
  case OpKind::HeadRmsNorm: {
    const BufferInfo &buf = activation(0);
    const WeightInfo &w = weight(0);
    const int64_t heads = op.heads + op.secondHeads;
    if (op.heads <= 0 || op.secondHeads < 0 || heads > kMaxHeads ||
        op.headDim <= 0 || op.headDim > kMaxHeadDim || op.column < 0 ||
        op.column > buf.width || op.column + heads * op.headDim > buf.width)
      opError("columns [", op.column, ", ", op.column, " + ", heads, " * ",
              op.headDim, ") do not fit in buffer '", buf.name, "' of width ",
              buf.width);
    if (op.hasSecondNormWeight() != (op.secondHeads > 0))
      opError("has ", op.secondHeads, " second heads and ",
              op.weights.size() - 1, " second weights");
    shapeIs(w, {op.headDim});
    if (op.hasSecondNormWeight())
      shapeIs(weight(1), {op.headDim});
    checkEps();
    break;
  }
  case OpKind::Linear:
  case OpKind::NormLinear: {
    const BufferInfo &out = activation(0);
    const BufferInfo &in = activation(1);
    // A gated epilogue's weight rows are gate/up pairs: twice as many.
    const bool gated = isGated(op.epilogue);
    const int64_t rowsOfW = gated ? 2 * out.width : out.width;
    const size_t first = op.linearWeight();
    if (op.quant == fb::WeightQuant::None) {
      shapeIs(weight(first), {rowsOfW, in.width});
    } else {
      const bool int4 = op.quant == fb::WeightQuant::Int4;
      const DType codes = int4                                ? DType::I4
                          : op.quant == fb::WeightQuant::Int8 ? DType::I8
                                                              : DType::F8E4M3;
      shapeIs(weight(first, codes), {rowsOfW, in.width});
      if (int4) {
        if (op.groupSize <= 0 || op.groupSize % 2 != 0 ||
            in.width % op.groupSize != 0)
          opError("int4 group size ", op.groupSize,
                  " must be an even divisor of the ", in.width,
                  " input features");
        const int64_t groups = in.width / op.groupSize;
        shapeIs(weight(op.scalesWeight(), DType::F32), {rowsOfW, groups});
        shapeIs(weight(op.scalesWeight() + 1, DType::U8), {rowsOfW, groups});
      } else {
        shapeIs(weight(op.scalesWeight(), DType::F32), {rowsOfW});
      }
    }
    if (op.hasBias())
      shapeIs(weight(first + 1), {rowsOfW});
    if (op.epilogue != fb::LinearEpilogue::None && out.dtype != DType::BF16)
      opError("the residual and gated epilogues need a BF16 output, but '",
              out.name, "' is ", out.dtype);
    sameRows(out, in);
    distinct(0, 1);
    if (op.kind == OpKind::NormLinear) {
      const BufferInfo &normed = activation(2);
      if (normed.width != in.width)
        opError("normed '", normed.name, "' has width ", normed.width,
                " but in '", in.name, "' has width ", in.width);
      sameRows(in, normed);
      distinct(0, 2);
      distinct(1, 2);
      shapeIs(weight(0), {in.width});
      checkEps();
    }
    break;
  }
  case OpKind::RopeKvWrite: {
    const BufferInfo &qkv = activation(0);
    if (op.kvHeads <= 0 || op.kvHeads > kMaxHeads || op.headDim <= 0 ||
        op.headDim > kMaxHeadDim)
      opError("kv_heads ", op.kvHeads, " and head_dim ", op.headDim,
              " must be positive");
    checkAttentionShape(qkv);
    if (op.headDim % 2 != 0)
      opError("head_dim ", op.headDim, " must be even for rotate-half RoPE");
    if (op.rope < 0 || static_cast<size_t>(op.rope) >= ropes_.size())
      opError("rope table ", op.rope, " does not exist (the plan has ",
              ropes_.size(), ")");
    const size_t pairs = ropes_[static_cast<size_t>(op.rope)].invFreq.size();
    if (static_cast<int64_t>(pairs) != op.headDim / 2)
      opError("rope table ", op.rope, " has ", pairs,
              " inv_freq values, expected head_dim / 2 = ", op.headDim / 2);
    break;
  }
  case OpKind::Attention: {
    const BufferInfo &out = activation(0);
    const BufferInfo &qkv = activation(1);
    if (op.kvHeads <= 0 || op.kvHeads > kMaxHeads || op.headDim <= 0 ||
        op.headDim > kMaxHeadDim)
      opError("kv_heads ", op.kvHeads, " and head_dim ", op.headDim,
              " must be positive");
    checkAttentionShape(qkv);
    if (out.width != op.heads * op.headDim)
      opError("out '", out.name, "' has width ", out.width,
              ", expected heads * head_dim = ", op.heads * op.headDim);
    sameRows(out, qkv);
    distinct(0, 1);
    if (op.slidingWindow < 0)
      opError("sliding_window is ", op.slidingWindow,
              "; it must be >= 0 (0 = none)");
    if (!std::isfinite(op.scale))
      opError("scale is not finite");
    if (!(op.softcap >= 0) || !std::isfinite(op.softcap))
      opError("softcap is ", op.softcap, "; it must be >= 0 (0 = none)");
    if (op.hasSinks())
      shapeIs(weight(0), {op.heads});
    break;
  }
  case OpKind::Softcap: {
    const BufferInfo &buf = activation(0);
    if (buf.dtype != DType::F32)
      opError("caps f32 logits, but '", buf.name, "' is ", buf.dtype);
    if (!(op.softcap > 0) || !std::isfinite(op.softcap))
      opError("cap is ", op.softcap, "; it must be positive");
    break;
  }
  case OpKind::Moe: {
    const BufferInfo &out = activation(0);
    const BufferInfo &in = activation(1);
    const WeightInfo &router = weight(0);
    // The experts' element type by format (any float one when Float).
    std::optional<DType> codes;
    switch (op.expertFormat) {
    case fb::ExpertFormat::Mxfp4:
      codes = DType::U8;
      break;
    case fb::ExpertFormat::Int8:
      codes = DType::I8;
      break;
    case fb::ExpertFormat::Fp8:
      codes = DType::F8E4M3;
      break;
    case fb::ExpertFormat::Int4:
      codes = DType::I4;
      break;
    case fb::ExpertFormat::Float:
      break;
    }
    const WeightInfo &gate = weight(1, codes);
    if (router.shape.size() != 2 || router.shape[0] <= 0)
      opError("router '", router.name, "' must be [experts, ", in.width, "]");
    const int64_t experts = router.shape[0];
    shapeIs(router, {experts, in.width});
    if (gate.shape.size() != 2 || gate.shape[0] <= 0 ||
        gate.shape[0] % experts != 0)
      opError("gate '", gate.name, "' must be [", experts, " * intermediate, ",
              in.width, "]");
    const int64_t width = gate.shape[0] / experts;
    if (op.hasMxfp4Experts()) {
      // Codes two to a byte, an exponent per 32.
      if (in.width % 32 != 0 || width % 32 != 0)
        opError("MXFP4 experts need widths that are multiples of 32, got ",
                in.width, " and ", width);
      shapeIs(weight(1, DType::U8), {experts * width, in.width / 2});
      shapeIs(weight(2, DType::U8), {experts * width, in.width / 2});
      shapeIs(weight(3, DType::U8), {experts * in.width, width / 2});
      const size_t s = op.moeScalesWeight();
      shapeIs(weight(s, DType::U8), {experts * width, in.width / 32});
      shapeIs(weight(s + 1, DType::U8), {experts * width, in.width / 32});
      shapeIs(weight(s + 2, DType::U8), {experts * in.width, width / 32});
    } else {
      shapeIs(gate, {experts * width, in.width});
      shapeIs(weight(2, codes), {experts * width, in.width});
      shapeIs(weight(3, codes), {experts * in.width, width});
    }
    if (op.expertFormat == fb::ExpertFormat::Int8 ||
        op.expertFormat == fb::ExpertFormat::Fp8) {
      const size_t s = op.moeScalesWeight();
      shapeIs(weight(s, DType::F32), {experts * width});
      shapeIs(weight(s + 1, DType::F32), {experts * width});
      shapeIs(weight(s + 2, DType::F32), {experts * in.width});
    } else if (op.expertFormat == fb::ExpertFormat::Int4) {
      const int64_t g = op.groupSize;
      if (g <= 0 || g % 2 != 0 || in.width % g != 0 || width % g != 0)
        opError("int4 experts' group size ", g, " must be an even divisor of ",
                in.width, " and ", width);
      const int64_t rows[] = {experts * width, experts * width,
                              experts * in.width};
      const int64_t groups[] = {in.width / g, in.width / g, width / g};
      const size_t s = op.moeScalesWeight();
      for (size_t j = 0; j < 3; ++j) {
        shapeIs(weight(s + j, DType::F32), {rows[j], groups[j]});
        shapeIs(weight(s + 3 + j, DType::U8), {rows[j], groups[j]});
      }
    }
    if (op.topK < 1 || op.topK > experts)
      opError("top_k is ", op.topK, "; it must be in [1, ", experts, "]");
    if (op.hasMoeBiases()) {
      shapeIs(weight(4), {experts});
      shapeIs(weight(5), {experts * width});
      shapeIs(weight(6), {experts * width});
      shapeIs(weight(7), {experts * in.width});
    }
    if ((op.activation == fb::GateActivation::ClampedSilu) !=
        (op.activationLimit > 0))
      opError("activation_limit is ", op.activationLimit,
              "; ClampedSilu needs a positive one, other activations none");
    if (!std::isfinite(op.activationLimit))
      opError("activation_limit is not finite");
    if (out.width != in.width)
      opError("out '", out.name, "' has width ", out.width, ", expected ",
              in.width);
    sameRows(out, in);
    distinct(0, 1);
    break;
  }
  case OpKind::AllReduce: {
    activation(0);
    if (ranks_ < 2)
      opError("sums over tensor-parallel ranks, but the plan has one");
    break;
  }
  case OpKind::AllGather: {
    const BufferInfo &out = activation(0);
    const BufferInfo &in = activation(1);
    if (ranks_ < 2)
      opError("gathers over tensor-parallel ranks, but the plan has one");
    if (out.width != in.width * ranks_)
      opError("out '", out.name, "' has width ", out.width, ", expected ",
              ranks_, " ranks times the width ", in.width, " of in '", in.name,
              "'");
    sameRows(out, in);
    distinct(0, 1);
    break;
  }
  case OpKind::GatherColumns: {
    const BufferInfo &out = activation(0);
    const BufferInfo &in = activation(1);
    if (out.width != in.width)
      opError("out '", out.name, "' has width ", out.width, " but in '",
              in.name, "' has width ", in.width);
    if (static_cast<int64_t>(op.columns.size()) != in.width)
      opError("has ", op.columns.size(), " columns for the ", in.width, " of '",
              in.name, "'");
    std::vector<bool> seen(static_cast<size_t>(in.width), false);
    for (int64_t c : op.columns) {
      if (c < 0 || c >= in.width || seen[static_cast<size_t>(c)])
        opError("column ", c, " is outside [0, ", in.width,
                ") or named twice; the columns must be a permutation");
      seen[static_cast<size_t>(c)] = true;
    }
    sameRows(out, in);
    distinct(0, 1);
    break;
  }
  case OpKind::SigmoidGate: {
    const BufferInfo &out = activation(0);
    const BufferInfo &value = activation(1);
    const BufferInfo &in = activation(2);
    if (out.width != value.width)
      opError("out '", out.name, "' has width ", out.width, " but value '",
              value.name, "' has width ", value.width);
    shapeIs(weight(0), {1, in.width});
    sameRows(out, value);
    sameRows(out, in);
    distinct(0, 2);
    break;
  }
  case OpKind::Swiglu: {
    const BufferInfo &out = activation(0);
    const BufferInfo &in = activation(1);
    if (op.activation == fb::GateActivation::ClampedSilu)
      opError("ClampedSilu is an activation of Moe only");
    if (in.width != 2 * out.width)
      opError("in '", in.name, "' has width ", in.width,
              ", expected twice the width of out '", out.name, "' (",
              2 * out.width, ")");
    sameRows(out, in);
    distinct(0, 1);
    break;
  }
  case OpKind::Add: {
    const BufferInfo &out = activation(0);
    const BufferInfo &a = activation(1);
    const BufferInfo &b = activation(2);
    if (a.width != out.width || b.width != out.width)
      opError("widths differ: out '", out.name, "' ", out.width, ", a '",
              a.name, "' ", a.width, ", b '", b.name, "' ", b.width);
    sameRows(out, a);
    sameRows(out, b);
    break;
  }
  case OpKind::GatherRows: {
    const BufferInfo &out = activation(0);
    const BufferInfo &in = activation(1);
    const BufferInfo &rows = stepInput(2);
    if (in.width != out.width)
      opError("in '", in.name, "' has width ", in.width, " but out '", out.name,
              "' has width ", out.width);
    sameRows(out, rows);
    distinct(0, 1);
    break;
  }
  case OpKind::ConcatColumns: {
    const BufferInfo &out = activation(0);
    int64_t total = 0;
    for (size_t j = 1; j < op.buffers.size(); ++j) {
      const BufferInfo &in = activation(j);
      const int64_t col = op.columns[j - 1], cols = op.widths[j - 1];
      if (col < 0 || cols <= 0 || col + cols > in.width)
        opError("columns [", col, ", ", col + cols, ") of input '", in.name,
                "' lie outside its width ", in.width);
      sameRows(out, in);
      distinct(0, j);
      total += cols;
    }
    if (total != out.width)
      opError("the inputs have ", total, " columns in all, but out '", out.name,
              "' has width ", out.width);
    break;
  }
  }
}

void ReferencePlan::checkDataFlow() const {
  // A buffer read before this step wrote it would hold the previous step's
  // values: a schedule bug that would otherwise pass silently.
  std::vector<bool> written(buffers_.size(), false);
  for (int i = 0; i < kNumStepInputs; ++i)
    written[static_cast<size_t>(i)] = true;
  std::vector<bool> layerWritten(
      static_cast<size_t>(std::max(kvLayout_.numLayers, 0)), false);
  for (size_t i = 0; i < ops_.size(); ++i) {
    const PlanOp &op = ops_[i];
    auto reads = [&](size_t operand) {
      const int b = op.buffers[operand];
      if (!written[static_cast<size_t>(b)])
        fail("plan ", planPath_, ": op #", i, " '", op.name, "' (",
             opKindName(op.kind), ") reads buffer '",
             buffers_[static_cast<size_t>(b)].name,
             "' before any op of the step writes it");
    };
    switch (op.kind) {
    case OpKind::Embedding:
    case OpKind::Swiglu:
    case OpKind::Moe:
    case OpKind::AllGather:
      reads(1);
      break;
    case OpKind::Linear:
    case OpKind::NormLinear:
      reads(1);
      if (op.epilogue == fb::LinearEpilogue::Residual) // the residual epilogue
                                                       // adds into its output
        reads(0);
      break;
    case OpKind::RmsNorm:
      reads(1);
      if (op.hasResidual())
        reads(2);
      break;
    case OpKind::HeadRmsNorm:
    case OpKind::RopeKvWrite:
    case OpKind::Softcap:
    case OpKind::AllReduce:
      reads(0);
      break;
    case OpKind::Attention:
      reads(1);
      if (!layerWritten[static_cast<size_t>(op.layer)])
        fail("plan ", planPath_, ": op #", i, " '", op.name,
             "' (Attention) reads the KV cache of layer ", op.layer,
             " before any RopeKvWrite of the step writes it");
      break;
    case OpKind::Add:
    case OpKind::GatherRows:
    case OpKind::SigmoidGate:
      reads(1);
      reads(2);
      break;
    case OpKind::GatherColumns:
      reads(1);
      break;
    case OpKind::ConcatColumns:
      for (size_t j = 1; j < op.buffers.size(); ++j)
        reads(j);
      break;
    }
    written[static_cast<size_t>(op.buffers[0])] = true;
    if (op.kind == OpKind::NormLinear)
      written[static_cast<size_t>(op.buffers[2])] = true;
    if (op.kind == OpKind::RmsNorm && op.hasResidual())
      written[static_cast<size_t>(op.buffers[2])] = true;
    if (op.kind == OpKind::RopeKvWrite)
      layerWritten[static_cast<size_t>(op.layer)] = true;
  }
}

} // namespace sol::reference

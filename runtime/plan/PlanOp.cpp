//===- PlanOp.cpp - One op of a plan's step, by role ----------------------===//
#include "runtime/plan/PlanOp.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <iterator>

namespace sol {

std::string_view opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::Embedding:
    return "Embedding";
  case OpKind::RmsNorm:
    return "RmsNorm";
  case OpKind::HeadRmsNorm:
    return "HeadRmsNorm";
  case OpKind::Linear:
    return "Linear";
  case OpKind::RopeKvWrite:
    return "RopeKvWrite";
  case OpKind::Attention:
    return "Attention";
  case OpKind::Swiglu:
    return "Swiglu";
  case OpKind::Add:
    return "Add";
  case OpKind::GatherRows:
    return "GatherRows";
  case OpKind::NormLinear:
    return "NormLinear";
  case OpKind::ConcatColumns:
    return "ConcatColumns";
  case OpKind::Softcap:
    return "Softcap";
  case OpKind::Moe:
    return "Moe";
  case OpKind::AllReduce:
    return "AllReduce";
  case OpKind::AllGather:
    return "AllGather";
  case OpKind::SigmoidGate:
    return "SigmoidGate";
  case OpKind::GatherColumns:
    return "GatherColumns";
  }
  return "unknown";
}

namespace {

std::vector<int64_t> longs(const flatbuffers::Vector<int64_t> *v) {
  return v ? std::vector<int64_t>(v->begin(), v->end())
           : std::vector<int64_t>();
}

/// Appends `index` when the optional operand is present (>= 0).
void optional(std::vector<int32_t> &operands, int32_t index) {
  if (index >= 0)
    operands.push_back(index);
}

} // namespace

std::vector<PlanOp> decodePlanOps(const fb::Plan &plan,
                                  std::string_view planPath) {
  std::vector<PlanOp> out;
  if (!plan.ops())
    return out;
  for (flatbuffers::uoffset_t i = 0; i < plan.ops()->size(); ++i) {
    const fb::Op *src = plan.ops()->Get(i);
    PlanOp op;
    op.name = src->name() ? src->name()->str() : std::string();
    const auto type = static_cast<int>(src->params_type());
    if (type <= 0 || type > kNumOpKinds)
      fail("plan ", planPath, ": op #", i, " '", op.name, "' has kind ", type,
           ", which this runtime does not know; this plan needs a newer Sol "
           "runtime");
    op.kind = static_cast<OpKind>(type - 1);
    auto missing = [&] {
      fail("plan ", planPath, ": op #", i, " '", op.name, "' (",
           opKindName(op.kind), ") has no parameter table");
    };
    auto checkActivation = [&] {
      if (op.activation > fb::GateActivation::MAX)
        fail("plan ", planPath, ": op #", i, " '", op.name,
             "' has gate activation ", static_cast<int>(op.activation),
             ", which this runtime does not know; this plan needs a newer "
             "Sol runtime");
    };
    // A quantized W's scales (and zeros) follow W and the bias.
    auto decodeQuant = [&](PlanOp &op, fb::WeightQuant quant, int32_t scales,
                           int32_t zeros, int32_t groupSize) {
      if (quant == fb::WeightQuant::None)
        return;
      if (quant > fb::WeightQuant::Int4)
        fail("plan ", planPath, ": op #", i, " '", op.name,
             "' has weight quantization ", static_cast<int>(quant),
             ", which this runtime does not know; this plan needs a newer Sol "
             "runtime");
      const bool int4 = quant == fb::WeightQuant::Int4;
      if (scales < 0 || (int4 && (zeros < 0 || groupSize <= 0)))
        fail("plan ", planPath, ": op #", i, " '", op.name, "' has ",
             fb::EnumNameWeightQuant(quant),
             " weights without their scales, zero points or group size");
      op.quant = quant;
      op.groupSize = groupSize;
      op.weights.push_back(scales);
      if (int4)
        op.weights.push_back(zeros);
    };
    switch (op.kind) {
    case OpKind::Embedding: {
      const fb::EmbeddingOp *p = src->params_as_EmbeddingOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->ids()};
      op.weights = {p->table()};
      op.embeddingScale = p->scale();
      break;
    }
    case OpKind::RmsNorm: {
      const fb::RmsNormOp *p = src->params_as_RmsNormOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input()};
      optional(op.buffers, p->residual());
      op.weights = {p->weight()};
      optional(op.weights, p->input_weight());
      op.eps = p->eps();
      op.inputEps = p->input_eps();
      break;
    }
    case OpKind::HeadRmsNorm: {
      const fb::HeadRmsNormOp *p = src->params_as_HeadRmsNormOp();
      if (!p)
        missing();
      op.buffers = {p->buffer()};
      op.weights = {p->weight()};
      optional(op.weights, p->second_weight());
      op.secondHeads = p->second_heads();
      op.column = p->column();
      op.heads = p->heads();
      op.headDim = p->head_dim();
      op.eps = p->eps();
      break;
    }
    case OpKind::Linear: {
      const fb::LinearOp *p = src->params_as_LinearOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input()};
      op.weights = {p->weight()};
      optional(op.weights, p->bias());
      op.epilogue = p->epilogue();
      decodeQuant(op, p->quant(), p->weight_scales(), p->weight_zeros(),
                  p->group_size());
      break;
    }
    case OpKind::NormLinear: {
      const fb::NormLinearOp *p = src->params_as_NormLinearOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input(), p->normed()};
      op.weights = {p->norm_weight(), p->weight()};
      optional(op.weights, p->bias());
      op.eps = p->eps();
      op.epilogue = p->epilogue();
      decodeQuant(op, p->quant(), p->weight_scales(), p->weight_zeros(),
                  p->group_size());
      break;
    }
    case OpKind::RopeKvWrite: {
      const fb::RopeKvWriteOp *p = src->params_as_RopeKvWriteOp();
      if (!p)
        missing();
      op.buffers = {p->qkv()};
      op.layer = p->layer();
      op.heads = p->heads();
      op.kvHeads = p->kv_heads();
      op.headDim = p->head_dim();
      op.rope = p->rope();
      break;
    }
    case OpKind::Attention: {
      const fb::AttentionOp *p = src->params_as_AttentionOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->qkv()};
      op.layer = p->layer();
      op.heads = p->heads();
      op.kvHeads = p->kv_heads();
      op.headDim = p->head_dim();
      op.slidingWindow = p->sliding_window();
      op.scale = p->scale();
      op.softcap = p->softcap();
      optional(op.weights, p->sinks());
      break;
    }
    case OpKind::Swiglu: {
      const fb::SwigluOp *p = src->params_as_SwigluOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input()};
      op.activation = p->activation();
      checkActivation();
      break;
    }
    case OpKind::Moe: {
      const fb::MoeOp *p = src->params_as_MoeOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input()};
      op.weights = {p->router(), p->gate(), p->up(), p->down()};
      const int32_t biases[] = {p->router_bias(), p->gate_bias(), p->up_bias(),
                                p->down_bias()};
      const int present =
          static_cast<int>(std::count_if(std::begin(biases), std::end(biases),
                                         [](int32_t w) { return w >= 0; }));
      if (present != 0 && present != 4)
        fail("plan ", planPath, ": op #", i, " '", op.name, "' (Moe) has ",
             present, " of its four biases; it needs all or none");
      for (int32_t w : biases)
        optional(op.weights, w);
      if (p->expert_format() > fb::ExpertFormat::MAX)
        fail("plan ", planPath, ": op #", i, " '", op.name,
             "' (Moe) has expert format ", static_cast<int>(p->expert_format()),
             ", which this runtime does not know; this plan needs a newer Sol "
             "runtime");
      op.expertFormat = p->expert_format();
      if (op.moeQuantWeights() > 0) {
        if (p->gate_scales() < 0 || p->up_scales() < 0 || p->down_scales() < 0)
          fail("plan ", planPath, ": op #", i, " '", op.name, "' (Moe) has ",
               fb::EnumNameExpertFormat(op.expertFormat),
               " experts without their scales");
        op.weights.insert(op.weights.end(),
                          {p->gate_scales(), p->up_scales(), p->down_scales()});
      }
      if (op.expertFormat == fb::ExpertFormat::Int4) {
        if (p->gate_zeros() < 0 || p->up_zeros() < 0 || p->down_zeros() < 0 ||
            p->group_size() <= 0)
          fail("plan ", planPath, ": op #", i, " '", op.name,
               "' (Moe) has Int4 experts without their zero points or group "
               "size");
        op.weights.insert(op.weights.end(),
                          {p->gate_zeros(), p->up_zeros(), p->down_zeros()});
        op.groupSize = p->group_size();
      }
      op.topK = p->top_k();
      op.normalizeTopK = p->normalize_top_k();
      op.activation = p->activation();
      op.activationLimit = p->activation_limit();
      checkActivation();
      break;
    }
    case OpKind::SigmoidGate: {
      const fb::SigmoidGateOp *p = src->params_as_SigmoidGateOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->value(), p->input()};
      op.weights = {p->weight()};
      break;
    }
    case OpKind::AllReduce: {
      const fb::AllReduceOp *p = src->params_as_AllReduceOp();
      if (!p)
        missing();
      op.buffers = {p->buffer()};
      break;
    }
    case OpKind::AllGather: {
      const fb::AllGatherOp *p = src->params_as_AllGatherOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input()};
      break;
    }
    case OpKind::Softcap: {
      const fb::SoftcapOp *p = src->params_as_SoftcapOp();
      if (!p)
        missing();
      op.buffers = {p->buffer()};
      op.softcap = p->cap();
      break;
    }
    case OpKind::Add: {
      const fb::AddOp *p = src->params_as_AddOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->lhs(), p->rhs()};
      break;
    }
    case OpKind::GatherRows: {
      const fb::GatherRowsOp *p = src->params_as_GatherRowsOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input(), p->rows()};
      break;
    }
    case OpKind::ConcatColumns: {
      const fb::ConcatColumnsOp *p = src->params_as_ConcatColumnsOp();
      if (!p)
        missing();
      op.buffers = {p->out()};
      if (p->inputs())
        op.buffers.insert(op.buffers.end(), p->inputs()->begin(),
                          p->inputs()->end());
      op.columns = longs(p->columns());
      op.widths = longs(p->widths());
      if (op.columns.size() + 1 != op.buffers.size() ||
          op.widths.size() + 1 != op.buffers.size())
        fail("plan ", planPath, ": op #", i, " '", op.name,
             "' (ConcatColumns) has ", op.buffers.size() - 1, " inputs but ",
             op.columns.size(), " columns and ", op.widths.size(), " widths");
      break;
    }
    case OpKind::GatherColumns: {
      const fb::GatherColumnsOp *p = src->params_as_GatherColumnsOp();
      if (!p)
        missing();
      op.buffers = {p->out(), p->input()};
      if (p->columns())
        op.columns.assign(p->columns()->begin(), p->columns()->end());
      break;
    }
    }
    out.push_back(std::move(op));
  }
  return out;
}

flatbuffers::Offset<fb::Op> encodePlanOp(flatbuffers::FlatBufferBuilder &b,
                                         const PlanOp &op) {
  auto buffer = [&](size_t i) {
    return i < op.buffers.size() ? op.buffers[i] : -1;
  };
  auto weight = [&](size_t i) {
    return i < op.weights.size() ? op.weights[i] : -1;
  };
  flatbuffers::Offset<void> params;
  switch (op.kind) {
  case OpKind::Embedding:
    params = fb::CreateEmbeddingOp(b, buffer(0), buffer(1), weight(0),
                                   op.embeddingScale)
                 .Union();
    break;
  case OpKind::RmsNorm:
    params = fb::CreateRmsNormOp(b, buffer(0), buffer(1), buffer(2), weight(0),
                                 op.eps, weight(1), op.inputEps)
                 .Union();
    break;
  case OpKind::HeadRmsNorm:
    params = fb::CreateHeadRmsNormOp(
                 b, buffer(0), op.column, static_cast<int32_t>(op.heads),
                 static_cast<int32_t>(op.headDim), weight(0), op.eps, weight(1),
                 static_cast<int32_t>(op.secondHeads))
                 .Union();
    break;
  case OpKind::Linear:
  case OpKind::NormLinear: {
    const size_t w = op.linearWeight();
    const int32_t bias = op.hasBias() ? weight(w + 1) : -1;
    const bool quantized = op.quant != fb::WeightQuant::None;
    const int32_t scales = quantized ? weight(op.scalesWeight()) : -1;
    const int32_t zeros =
        op.quant == fb::WeightQuant::Int4 ? weight(op.scalesWeight() + 1) : -1;
    const auto group = static_cast<int32_t>(op.groupSize);
    if (op.kind == OpKind::Linear)
      params = fb::CreateLinearOp(b, buffer(0), buffer(1), weight(w), bias,
                                  op.epilogue, op.quant, scales, zeros, group)
                   .Union();
    else
      params = fb::CreateNormLinearOp(
                   b, buffer(0), buffer(1), buffer(2), weight(0), op.eps,
                   weight(w), bias, op.epilogue, op.quant, scales, zeros, group)
                   .Union();
    break;
  }
  case OpKind::RopeKvWrite:
    params =
        fb::CreateRopeKvWriteOp(
            b, buffer(0), static_cast<int32_t>(op.layer),
            static_cast<int32_t>(op.heads), static_cast<int32_t>(op.kvHeads),
            static_cast<int32_t>(op.headDim), static_cast<int32_t>(op.rope))
            .Union();
    break;
  case OpKind::Attention:
    params =
        fb::CreateAttentionOp(
            b, buffer(0), buffer(1), static_cast<int32_t>(op.layer),
            static_cast<int32_t>(op.heads), static_cast<int32_t>(op.kvHeads),
            static_cast<int32_t>(op.headDim),
            static_cast<int32_t>(op.slidingWindow), op.scale, op.softcap,
            op.hasSinks() ? weight(0) : -1)
            .Union();
    break;
  case OpKind::Swiglu:
    params = fb::CreateSwigluOp(b, buffer(0), buffer(1), op.activation).Union();
    break;
  case OpKind::Softcap:
    params = fb::CreateSoftcapOp(b, buffer(0), op.softcap).Union();
    break;
  case OpKind::Moe: {
    const bool biased = op.hasMoeBiases();
    const size_t quantWeights = op.moeQuantWeights();
    auto bias = [&](size_t i) { return biased ? weight(4 + i) : -1; };
    auto scales = [&](size_t i) {
      return i < quantWeights ? weight(op.moeScalesWeight() + i) : -1;
    };
    params = fb::CreateMoeOp(
                 b, buffer(0), buffer(1), weight(0), weight(1), weight(2),
                 weight(3), static_cast<int32_t>(op.topK), op.normalizeTopK,
                 op.activation, bias(0), bias(1), bias(2), bias(3),
                 op.activationLimit, op.expertFormat, scales(0), scales(1),
                 scales(2), op.groupSize, scales(3), scales(4), scales(5))
                 .Union();
    break;
  }
  case OpKind::SigmoidGate:
    params =
        fb::CreateSigmoidGateOp(b, buffer(0), buffer(1), buffer(2), weight(0))
            .Union();
    break;
  case OpKind::Add:
    params = fb::CreateAddOp(b, buffer(0), buffer(1), buffer(2)).Union();
    break;
  case OpKind::AllReduce:
    params = fb::CreateAllReduceOp(b, buffer(0)).Union();
    break;
  case OpKind::AllGather:
    params = fb::CreateAllGatherOp(b, buffer(0), buffer(1)).Union();
    break;
  case OpKind::GatherRows:
    params = fb::CreateGatherRowsOp(b, buffer(0), buffer(1), buffer(2)).Union();
    break;
  case OpKind::ConcatColumns: {
    std::vector<int32_t> inputs(op.buffers.begin() + 1, op.buffers.end());
    params = fb::CreateConcatColumnsOpDirect(b, buffer(0), &inputs, &op.columns,
                                             &op.widths)
                 .Union();
    break;
  }
  case OpKind::GatherColumns: {
    std::vector<int32_t> columns(op.columns.begin(), op.columns.end());
    params = fb::CreateGatherColumnsOpDirect(b, buffer(0), buffer(1), &columns)
                 .Union();
    break;
  }
  }
  return fb::CreateOpDirect(
      b, op.name.c_str(),
      static_cast<fb::OpParams>(static_cast<int>(op.kind) + 1), params);
}

} // namespace sol

//===- StaticLowering.cpp - The CUDA choices that hold for every step -----===//
#include "runtime/cuda/StaticLowering.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cstddef>
#include <optional>

namespace sol::cuda {

namespace {

constexpr int kStepInputs = 4; // buffers 0..3: tokens, positions, seqs, rows

/// Decode steps' fused rope: every attention op paired with its layer's
/// RopeKvWrite and able to run the variant that does its work.
std::vector<int> pairAttentionWithRope(std::span<const OpDesc> ops) {
  std::vector<int> ropeOfLayer;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == OpKind::RopeKvWrite) {
      const auto layer = static_cast<std::size_t>(ops[i].layer);
      ropeOfLayer.resize(std::max(ropeOfLayer.size(), layer + 1), -1);
      ropeOfLayer[layer] = static_cast<int>(i);
    }
  std::vector<int> pairs(ops.size(), -1);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::Attention)
      continue;
    const auto layer = static_cast<std::size_t>(ops[i].layer);
    pairs[i] = layer < ropeOfLayer.size() ? ropeOfLayer[layer] : -1;
    if (pairs[i] < 0 || !attentionFusesRope(ops[i]))
      return {};
  }
  return pairs;
}

/// Whether `op` writes `buffer` without reading it: its output, not an
/// in-place op's buffer nor one of its inputs too.
bool overwrites(const OpDesc &op, int buffer) {
  const bool inPlace =
      op.kind == OpKind::HeadRmsNorm || op.kind == OpKind::RopeKvWrite ||
      op.kind == OpKind::Softcap || op.kind == OpKind::AllReduce;
  return !inPlace && !op.buffers.empty() && op.buffers[0] == buffer &&
         std::ranges::count(op.buffers, buffer) == 1;
}

/// Decode steps' fused q/k head norm: for each attention op paired with its
/// RopeKvWrite, the op before it that last wrote its qkv buffer (other than
/// that RopeKvWrite) when that is a HeadRmsNorm it can absorb, and no op
/// after the attention reads the buffer before it is written again (the
/// buffer keeps the unnormalised q and k; later layers reuse its id).
std::vector<int> pairAttentionWithHeadNorm(std::span<const OpDesc> ops,
                                           std::span<const int> ropeOf) {
  std::vector<int> pairs(ops.size(), -1);
  bool any = false;
  auto reads = [](const OpDesc &op, int buffer) {
    return std::ranges::count(op.buffers, buffer) > 0;
  };
  for (std::size_t i = 0; i < ropeOf.size(); ++i) {
    if (ropeOf[i] < 0)
      continue;
    const OpDesc &attention = ops[i];
    const int qkv = attention.buffers.at(1);
    std::size_t writer = i;
    for (std::size_t j = i; j-- > 0;)
      if (static_cast<int>(j) != ropeOf[i] && reads(ops[j], qkv)) {
        writer = j;
        break;
      }
    if (writer == i || !attentionFusesHeadNorm(attention, ops[writer]))
      continue;
    bool readAfter = false;
    for (std::size_t j = i + 1; j < ops.size(); ++j)
      if (reads(ops[j], qkv)) {
        readAfter = !overwrites(ops[j], qkv);
        break;
      }
    if (readAfter)
      continue;
    pairs[i] = static_cast<int>(writer);
    any = true;
  }
  if (!any)
    pairs.clear();
  return pairs;
}

/// One-row steps' fused residual norms: for each Linear op whose input is
/// the output of the RmsNorm op with a residual right before it, that op,
/// when linear_gemv can do its work (linearAddNorm) and the buffers allow
/// it: every block of the linear reads the norm's input and the residual
/// while others write the linear's output, so those may not share an arena
/// slot, and no op after the linear reads the norm's output before it is
/// written again (the fused launch never writes it).
std::vector<int> pairLinearWithAddNorm(std::span<const OpDesc> ops,
                                       std::span<const int> bufferSlot) {
  auto slot = [&](int id) {
    return id < kStepInputs ? -1 - id
                            : bufferSlot[static_cast<std::size_t>(id)];
  };
  std::vector<int> pairs(ops.size(), -1);
  bool any = false;
  // Not the LM head, which greedy steps may run with the argmax instead.
  for (std::size_t i = 1; i + 1 < ops.size(); ++i) {
    const OpDesc &linear = ops[i], &norm = ops[i - 1];
    if (linearAddNorm(linear, norm) == GemvAddNorm::None)
      continue;
    const int out = norm.buffers[0], y = linear.buffers[0];
    if (slot(y) == slot(norm.buffers[1]) || slot(y) == slot(norm.buffers[2]))
      continue;
    bool readAfter = false;
    for (std::size_t j = i + 1; j < ops.size(); ++j)
      if (std::ranges::count(ops[j].buffers, out) > 0) {
        readAfter = !overwrites(ops[j], out);
        break;
      }
    if (readAfter)
      continue;
    pairs[i] = static_cast<int>(i - 1);
    any = true;
  }
  if (!any)
    pairs.clear();
  return pairs;
}

/// The plan's GatherRows ops (the rows that get logits) that steps whose
/// logit rows are their first rows in order may skip: those whose input
/// slot no op touches until the last reader of their output (the arena
/// planner may reuse a slot after its buffer's last reader) and which
/// gather neither a step input nor another gather's output.
std::vector<int> findSkippableGathers(std::span<const OpDesc> ops,
                                      std::span<const int> bufferSlot) {
  auto slot = [&](int id) {
    return id < kStepInputs ? -1 - id
                            : bufferSlot[static_cast<std::size_t>(id)];
  };
  std::vector<int> gathers, outputs;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::GatherRows)
      continue;
    const int in = ops[i].buffers.at(1), out = ops[i].buffers.at(0);
    outputs.push_back(out);
    bool clear = in >= kStepInputs &&
                 std::find(outputs.begin(), outputs.end(), in) == outputs.end();
    std::size_t lastRead = i;
    for (std::size_t j = i + 1; j < ops.size(); ++j)
      if (std::ranges::count(ops[j].buffers, out))
        lastRead = j;
    for (std::size_t j = i + 1; j <= lastRead && clear; ++j)
      for (int id : ops[j].buffers)
        clear = clear && (id == out || slot(id) != slot(in));
    if (clear)
      gathers.push_back(static_cast<int>(i));
  }
  return gathers;
}

/// One chunk_attention spec for every attention op, of a shape plans run.
bool chunkAttentionForAll(std::span<const OpDesc> ops) {
  std::optional<ChunkAttentionSpec> first;
  for (const OpDesc &d : ops) {
    if (d.kind != OpKind::Attention)
      continue;
    const ChunkAttentionSpec spec = chunkAttentionSpec(d);
    if (!spec.planned())
      return false;
    if (first &&
        (first->qHeads != spec.qHeads || first->kvHeads != spec.kvHeads ||
         first->headDim != spec.headDim || first->softcap != spec.softcap))
      return false;
    first = spec;
  }
  return first.has_value();
}

} // namespace

StaticLowering chooseStaticLowering(std::span<const OpDesc> ops,
                                    std::span<const int> bufferSlot,
                                    int maxTokens) {
  StaticLowering s;
  s.attentionRopeKvWrite = pairAttentionWithRope(ops);
  s.attentionHeadNorm = pairAttentionWithHeadNorm(ops, s.attentionRopeKvWrite);
  s.linearAddNorm = pairLinearWithAddNorm(ops, bufferSlot);
  s.skippableGathers = findSkippableGathers(ops, bufferSlot);
  s.argmaxLmHead = !ops.empty() && selectArgmaxLmHead(ops.back()).has_value();
  // enumerateKernels compiles chunk_attention for steps of two or more.
  s.chunkAttention = maxTokens >= 2 && chunkAttentionForAll(ops);
  return s;
}

StaticLowering readStaticLowering(const fb::CudaLowering *record,
                                  std::span<const OpDesc> ops,
                                  const std::string &where) {
  const char *again = "; compile the model again with this version's solc";
  if (!record)
    fail(where,
         ": the plan has no CUDA lowering record (written without "
         "kernels, --gpu none?)",
         again);
  StaticLowering s;
  const auto n = static_cast<int>(ops.size());
  if (const auto *pairs = record->attention_rope_kv_write();
      pairs && pairs->size() > 0) {
    if (static_cast<int>(pairs->size()) != n)
      fail(where, ": attention_rope_kv_write has ", pairs->size(),
           " entries for ", n, " ops", again);
    s.attentionRopeKvWrite.assign(pairs->begin(), pairs->end());
    for (int i = 0; i < n; ++i) {
      const OpDesc &d = ops[static_cast<std::size_t>(i)];
      const int j = s.attentionRopeKvWrite[static_cast<std::size_t>(i)];
      if (d.kind != OpKind::Attention) {
        if (j != -1)
          fail(where, ": op ", d.name, " is not an attention but absorbs op ",
               j, again);
        continue;
      }
      if (j < 0 || j >= n ||
          ops[static_cast<std::size_t>(j)].kind != OpKind::RopeKvWrite ||
          ops[static_cast<std::size_t>(j)].layer != d.layer ||
          !attentionFusesRope(d))
        fail(where, ": attention op ", d.name,
             " cannot absorb the op the plan names (", j, ")", again);
    }
  }
  if (const auto *norms = record->attention_head_norm();
      norms && norms->size() > 0) {
    if (static_cast<int>(norms->size()) != n || !s.fusedRope())
      fail(where, ": attention_head_norm has ", norms->size(), " entries for ",
           n, " ops", s.fusedRope() ? "" : " and no fused rope", again);
    s.attentionHeadNorm.assign(norms->begin(), norms->end());
    for (int i = 0; i < n; ++i) {
      const int j = s.attentionHeadNorm[static_cast<std::size_t>(i)];
      if (j == -1)
        continue;
      const OpDesc &d = ops[static_cast<std::size_t>(i)];
      if (j < 0 || j >= i ||
          s.attentionRopeKvWrite[static_cast<std::size_t>(i)] < 0 ||
          !attentionFusesHeadNorm(d, ops[static_cast<std::size_t>(j)]))
        fail(where, ": op ", d.name, " cannot absorb the head norm the plan ",
             "names (", j, ")", again);
    }
  }
  if (const auto *pairs = record->linear_add_norm();
      pairs && pairs->size() > 0) {
    if (static_cast<int>(pairs->size()) != n)
      fail(where, ": linear_add_norm has ", pairs->size(), " entries for ", n,
           " ops", again);
    s.linearAddNorm.assign(pairs->begin(), pairs->end());
    for (int i = 0; i < n; ++i) {
      const int j = s.linearAddNorm[static_cast<std::size_t>(i)];
      if (j != -1 && (j != i - 1 || i + 1 == n ||
                      linearAddNorm(ops[static_cast<std::size_t>(i)],
                                    ops[static_cast<std::size_t>(j)]) ==
                          GemvAddNorm::None))
        fail(where, ": op ", ops[static_cast<std::size_t>(i)].name,
             " cannot absorb the residual norm the plan names (", j, ")",
             again);
    }
  }
  if (const auto *gathers = record->skippable_gathers())
    for (int32_t g : *gathers) {
      if (g < 0 || g >= n ||
          ops[static_cast<std::size_t>(g)].kind != OpKind::GatherRows ||
          ops[static_cast<std::size_t>(g)].buffers.at(1) < kStepInputs)
        fail(where, ": skippable gather ", g, " is not a gather of logits rows",
             again);
      s.skippableGathers.push_back(g);
    }
  s.argmaxLmHead = record->argmax_lm_head();
  if (s.argmaxLmHead &&
      (ops.empty() || !selectArgmaxLmHead(ops.back()).has_value()))
    fail(where, ": the plan's last op cannot keep the argmax", again);
  s.chunkAttention = record->chunk_attention();
  if (s.chunkAttention && !chunkAttentionForAll(ops))
    fail(where, ": the plan's attention ops cannot share chunk_attention",
         again);
  return s;
}

std::vector<bool> StaticLowering::headNormFused(std::size_t ops) const {
  std::vector<bool> fused(ops, false);
  for (std::size_t i = 0; i < attentionHeadNorm.size() && i < ops; ++i)
    if (const int j = attentionHeadNorm[i]; j >= 0) {
      fused[i] = true;
      if (static_cast<std::size_t>(j) < ops)
        fused[static_cast<std::size_t>(j)] = true;
    }
  return fused;
}

std::vector<GemvAddNorm>
StaticLowering::addNormFused(std::span<const OpDesc> ops) const {
  std::vector<GemvAddNorm> fused(ops.size(), GemvAddNorm::None);
  for (std::size_t i = 0; i < linearAddNorm.size() && i < ops.size(); ++i)
    if (const int j = linearAddNorm[i]; j >= 0) {
      const auto norm = static_cast<std::size_t>(j);
      fused[i] = fused[norm] = cuda::linearAddNorm(ops[i], ops[norm]);
    }
  return fused;
}

} // namespace sol::cuda

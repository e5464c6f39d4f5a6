//===- ReferenceExecutor.cpp - Sol's float32 CPU oracle -------------------===//

#include "runtime/reference/ReferenceExecutor.h"

#include "runtime/plan/PlanFile.h"
#include "runtime/reference/PagedKvCache.h"
#include "runtime/reference/ReferenceAttention.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/reference/ReferencePlan.h"
#include "runtime/reference/ReferenceWeights.h"
#include "runtime/sampling/CpuSampler.h"
#include "runtime/sampling/StepSampling.h"
#include "runtime/support/Activations.h"
#include "runtime/support/Error.h"
#include "runtime/support/Quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <thread>

namespace sol {

using namespace reference;

namespace {

constexpr int32_t kDefaultTokensPerStep = 512;
constexpr int64_t kDefaultMaxModelLen = 4096;

GateFunction gateFunction(fb::GateActivation activation) {
  switch (activation) {
  case fb::GateActivation::GeluTanh:
    return GateFunction::GeluTanh;
  case fb::GateActivation::ClampedSilu:
    return GateFunction::ClampedSilu;
  default:
    return GateFunction::Silu;
  }
}

} // namespace

struct ReferenceExecutor::Rank {
  std::unique_ptr<ReferenceWeights> weights;
  std::unique_ptr<PagedKvCache> cache;
  /// Activation buffers, by plan buffer index (step inputs stay empty).
  std::vector<std::vector<float>> activations;
};

ReferenceExecutor::ReferenceExecutor(const PlanFile &plan)
    : ReferenceExecutor(plan, Options{}) {}

ReferenceExecutor::ReferenceExecutor(const PlanFile &file,
                                     const Options &options)
    : plan_(std::make_unique<ReferencePlan>(file)) {
  if (options.numKvBlocks < 0 || options.maxTokensPerStep < 0 ||
      options.maxModelLen < 0 || options.maxSeqs < 1 || options.numThreads < 0)
    fail("reference executor options are invalid: numKvBlocks ",
         options.numKvBlocks, ", maxTokensPerStep ", options.maxTokensPerStep,
         ", maxModelLen ", options.maxModelLen, ", maxSeqs ", options.maxSeqs,
         ", numThreads ", options.numThreads,
         " (counts must be >= 0, maxSeqs >= 1)");

  if (options.maxTokensPerStep > 0)
    maxTokensPerStep_ = options.maxTokensPerStep;
  else if (plan_->plannedTokensPerStep() > 0)
    maxTokensPerStep_ = static_cast<int32_t>(std::min<int64_t>(
        plan_->plannedTokensPerStep(), std::numeric_limits<int32_t>::max()));
  else
    maxTokensPerStep_ = kDefaultTokensPerStep;

  numThreads_ =
      options.numThreads > 0
          ? options.numThreads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  const KvLayoutInfo &layout = plan_->kvLayout();
  blockSize_ = layout.blockSize;
  if (options.numKvBlocks > 0) {
    numKvBlocks_ = options.numKvBlocks;
  } else if (blockSize_ > 0) {
    int64_t maxModelLen = options.maxModelLen;
    if (maxModelLen == 0)
      maxModelLen = plan_->maxPositions() > 0
                        ? std::min(plan_->maxPositions(), kDefaultMaxModelLen)
                        : kDefaultMaxModelLen;
    const int64_t perSeq =
        maxModelLen / blockSize_ + (maxModelLen % blockSize_ != 0 ? 1 : 0);
    if (perSeq > std::numeric_limits<int32_t>::max() / options.maxSeqs)
      fail("reference executor: ", options.maxSeqs, " sequences of ",
           maxModelLen, " tokens need more KV-cache blocks than an int32 ",
           "block id can name");
    numKvBlocks_ = static_cast<int32_t>(perSeq * options.maxSeqs);
  }

  lookBack_ = 0;
  for (const PlanOp &op : plan_->ops())
    if (op.kind == OpKind::Attention)
      lookBack_ = (op.slidingWindow == 0 || lookBack_ < 0)
                      ? -1
                      : std::max(lookBack_, op.slidingWindow - 1);

  // Only the layers some op names get memory (a plan's layout may list
  // more, e.g. a partial schedule in a test).
  KvLayoutInfo cacheLayout = layout;
  cacheLayout.numLayers = plan_->usedLayers();
  ranks_.resize(static_cast<size_t>(plan_->tensorParallelSize()));
  for (size_t r = 0; r < ranks_.size(); ++r) {
    Rank &rank = ranks_[r];
    rank.weights =
        std::make_unique<ReferenceWeights>(file, *plan_, static_cast<int>(r));
    rank.cache = std::make_unique<PagedKvCache>(
        cacheLayout, plan_->usesKvCache() ? numKvBlocks_ : 0);
    rank.activations.resize(plan_->buffers().size());
  }
}

ReferenceExecutor::~ReferenceExecutor() = default;

int64_t ReferenceExecutor::vocabSize() const { return plan_->logitsWidth(); }
uint64_t ReferenceExecutor::weightBytes() const {
  uint64_t bytes = 0;
  for (const Rank &rank : ranks_)
    bytes += rank.weights->bytes();
  return bytes;
}

uint64_t ReferenceExecutor::kvCacheBytes() const {
  uint64_t bytes = 0;
  for (const Rank &rank : ranks_)
    bytes += rank.cache->bytes();
  return bytes;
}

void ReferenceExecutor::validate(const StepBatch &batch,
                                 const StepOutput &out) const {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t R = static_cast<int64_t>(batch.logitRows.size());
  if (T == 0)
    fail("the step has no tokens");
  if (T > maxTokensPerStep_)
    fail("the step has ", T, " tokens, but this executor runs at most ",
         maxTokensPerStep_, " tokens per step");
  if (static_cast<int64_t>(batch.positions.size()) != T)
    fail("the step has ", T, " tokens but ", batch.positions.size(),
         " positions");
  if (static_cast<int64_t>(batch.tokenSeq.size()) != T)
    fail("the step has ", T, " tokens but ", batch.tokenSeq.size(),
         " token_seq entries");
  if (R > maxTokensPerStep_)
    fail("the step asks for ", R, " logits rows, but this executor returns ",
         "at most ", maxTokensPerStep_, " per step");
  if (batch.numSeqs < 1)
    fail("the step has numSeqs ", batch.numSeqs, "; it needs at least 1");
  if (batch.maxBlocksPerSeq < 0)
    fail("the step has maxBlocksPerSeq ", batch.maxBlocksPerSeq,
         "; it must be >= 0");
  const uint64_t tableSize = static_cast<uint64_t>(batch.numSeqs) *
                             static_cast<uint64_t>(batch.maxBlocksPerSeq);
  if (batch.blockTables.size() != tableSize)
    fail("the step's block tables hold ", batch.blockTables.size(),
         " entries, but numSeqs x maxBlocksPerSeq is ", batch.numSeqs, " x ",
         batch.maxBlocksPerSeq, " = ", tableSize);
  const int64_t vocab = plan_->logitsWidth();
  if (!out.logits.empty() &&
      static_cast<uint64_t>(out.logits.size()) !=
          static_cast<uint64_t>(R) * static_cast<uint64_t>(vocab))
    fail("the logits output holds ", out.logits.size(), " floats, but ", R,
         " rows of ", vocab, " logits need ", R * vocab);
  if (!out.argmax.empty() && static_cast<int64_t>(out.argmax.size()) != R)
    fail("the argmax output holds ", out.argmax.size(), " ids, but the step ",
         "asks for ", R, " logits rows");
  sampling::validateSampling(batch, out, vocab);

  for (int64_t t = 0; t < T; ++t) {
    const int32_t pos = batch.positions[static_cast<size_t>(t)];
    if (pos < 0)
      fail("token ", t, " has position ", pos, "; positions must be >= 0");
    if (plan_->maxPositions() > 0 && pos >= plan_->maxPositions())
      fail("token ", t, " has position ", pos, ", but the model supports ",
           plan_->maxPositions(), " positions (max_position_embeddings)");
    const int32_t seq = batch.tokenSeq[static_cast<size_t>(t)];
    if (seq < 0 || seq >= batch.numSeqs)
      fail("token ", t, " belongs to sequence ", seq, ", but the step has ",
           batch.numSeqs, " sequences");
  }
  for (int64_t r = 0; r < R; ++r) {
    const int32_t row = batch.logitRows[static_cast<size_t>(r)];
    if (row < 0 || row >= T)
      fail("logits row ", r, " asks for token ", row, ", but the step has ", T,
           " tokens");
  }

  // Ops that index with a step input: every value must be in range.
  const std::span<const int32_t> inputs[kNumStepInputs] = {
      batch.tokens, batch.positions, batch.tokenSeq, batch.logitRows};
  for (const PlanOp &op : plan_->ops()) {
    if (op.kind == OpKind::Embedding) {
      const int ids = op.buffers[1];
      const int64_t rows =
          plan_->weights()[static_cast<size_t>(op.weights[0])].shape[0];
      const std::span<const int32_t> values = inputs[ids];
      for (size_t t = 0; t < values.size(); ++t) {
        if (values[t] >= 0 && values[t] < rows)
          continue;
        if (ids == kTokensBuffer)
          fail("token ", t, " has id ", values[t], " but the vocabulary has ",
               rows, " ids");
        fail("step input '", plan_->buffers()[static_cast<size_t>(ids)].name,
             "' row ", t, " is ", values[t], ", outside the ", rows,
             " rows of the table of op '", op.name, "'");
      }
    } else if (op.kind == OpKind::GatherRows) {
      const int rowsBuffer = op.buffers[2];
      const BufferInfo &in =
          plan_->buffers()[static_cast<size_t>(op.buffers[1])];
      const int64_t inRows = in.rows == RowSpace::Tokens ? T : R;
      const std::span<const int32_t> values = inputs[rowsBuffer];
      for (size_t r = 0; r < values.size(); ++r)
        if (values[r] < 0 || values[r] >= inRows)
          fail("step input '",
               plan_->buffers()[static_cast<size_t>(rowsBuffer)].name, "' row ",
               r, " is ", values[r], ", but op '", op.name, "' gathers from ",
               inRows, " rows of '", in.name, "'");
    }
  }
  if (plan_->usesKvCache())
    validateKvPlacement(batch);
}

void ReferenceExecutor::validateKvPlacement(const StepBatch &batch) const {
  for (size_t t = 0; t < batch.tokens.size(); ++t) {
    const int64_t pos = batch.positions[t];
    const int32_t seq = batch.tokenSeq[t];
    const int64_t last = pos / blockSize_;
    if (last >= batch.maxBlocksPerSeq)
      fail("token ", t, " (sequence ", seq, ", position ", pos,
           ") lives in block-table entry ", last, ", but maxBlocksPerSeq is ",
           batch.maxBlocksPerSeq);
    // Entries the step reads or writes for this token; older entries of a
    // sliding-window model may hold anything (freed blocks).
    const int64_t first =
        lookBack_ < 0 ? 0 : std::max<int64_t>(0, pos - lookBack_) / blockSize_;
    for (int64_t i = first; i <= last; ++i) {
      const int32_t block =
          batch.blockTables[static_cast<size_t>(seq) *
                                static_cast<size_t>(batch.maxBlocksPerSeq) +
                            static_cast<size_t>(i)];
      if (block < 0 || block >= numKvBlocks_)
        fail("sequence ", seq, " has block id ", block,
             " in block-table entry ", i, " (needed by token ", t,
             " at position ", pos, "), but the KV cache has ", numKvBlocks_,
             " blocks");
    }
  }
}

std::span<const int32_t>
ReferenceExecutor::resolveTokens(const StepBatch &batch) {
  if (batch.chainedRows.empty())
    return batch.tokens;
  if (batch.chainedRows.size() != batch.tokens.size())
    fail("the step has ", batch.tokens.size(), " tokens but ",
         batch.chainedRows.size(), " chained rows");
  resolved_.assign(batch.tokens.begin(), batch.tokens.end());
  for (size_t t = 0; t < resolved_.size(); ++t) {
    const int32_t r = batch.chainedRows[t];
    if (r < -1 || r >= static_cast<int32_t>(lastChosen_.size()))
      fail("token ", t, " takes the id of row ", r,
           " of the previous step, which chose ", lastChosen_.size(), " ids");
    if (r >= 0)
      resolved_[t] = lastChosen_[static_cast<size_t>(r)];
  }
  return resolved_;
}

void ReferenceExecutor::step(const StepBatch &in, const StepOutput &out) {
  StepBatch batch = in;
  batch.tokens = resolveTokens(in);
  batch.chainedRows = {};
  validate(batch, out);
  // A failed step chose nothing a later step could take.
  lastChosen_.clear();
  runOps(batch);

  const int64_t R = static_cast<int64_t>(batch.logitRows.size());
  const int64_t vocab = plan_->logitsWidth();
  // Every rank holds the same logits after the last op.
  const std::vector<float> &logits =
      ranks_.front().activations[static_cast<size_t>(plan_->logitsBuffer())];
  if (!out.logits.empty())
    std::copy_n(logits.begin(), R * vocab, out.logits.begin());
  if (sampling::stepNeedsSampling(batch, out)) {
    // Penalties, temperature, filters, seeded draws and logprobs: the same
    // computation as the CUDA executor's sampling kernel.
    sampling::CpuSampler sampler;
    sampler.sampleStep({logits.data(), static_cast<size_t>(R * vocab)}, vocab,
                       batch, out);
  } else {
    for (int64_t r = 0; r < static_cast<int64_t>(out.argmax.size()); ++r)
      out.argmax[static_cast<size_t>(r)] =
          argmaxIndex({logits.data() + r * vocab, static_cast<size_t>(vocab)});
  }
  lastChosen_.assign(out.argmax.begin(), out.argmax.end());
}

void ReferenceExecutor::linearWithEpilogue(
    const PlanOp &op, std::span<float> out, std::span<const float> in,
    std::span<const float> w, std::span<const float> bias, int64_t rows,
    int64_t width, int64_t inWidth) {
  if (op.quant == fb::WeightQuant::Fp8) {
    // W8A8: the input rows as the fp8 GEMMs see them, e4m3(x / s) * s with
    // one scale per row.
    fp8Input_.assign(in.begin(),
                     in.begin() + static_cast<std::ptrdiff_t>(rows * inWidth));
    for (int64_t r = 0; r < rows; ++r)
      quant::roundTripRowFp8(std::span<float>(fp8Input_).subspan(
          static_cast<size_t>(r * inWidth), static_cast<size_t>(inWidth)));
    in = fp8Input_;
  }
  if (op.epilogue == fb::LinearEpilogue::None) {
    linearRows(out, in, w, bias, rows, width, inWidth, numThreads_);
    return;
  }
  // Residual: out += y. Swiglu, Geglu: y holds interleaved (gate, up) pairs.
  const bool residual = op.epilogue == fb::LinearEpilogue::Residual;
  const bool gelu = op.epilogue == fb::LinearEpilogue::Geglu;
  const int64_t yWidth = residual ? width : 2 * width;
  std::vector<float> &y = epilogueScratch_;
  y.resize(static_cast<size_t>(rows * yWidth));
  linearRows(y, in, w, bias, rows, yWidth, inWidth, numThreads_);
  for (int64_t i = 0; i < rows * width; ++i) {
    const size_t u = static_cast<size_t>(i);
    if (residual) {
      out[u] += y[u];
    } else {
      const float g = y[2 * u], up = y[2 * u + 1];
      out[u] = (gelu ? geluTanh(g) : silu(g)) * up;
    }
  }
}

std::span<float> ReferenceExecutor::activation(Rank &rank, int index, int64_t T,
                                               int64_t R) {
  const BufferInfo &info = plan_->buffers()[static_cast<size_t>(index)];
  std::vector<float> &v = rank.activations[static_cast<size_t>(index)];
  const size_t need =
      static_cast<size_t>((info.rows == RowSpace::Tokens ? T : R) * info.width);
  if (v.size() < need) {
    try {
      v.resize(need);
    } catch (const std::bad_alloc &) {
      fail("out of memory allocating activation buffer '", info.name, "' (",
           need, " floats)");
    }
  }
  return {v.data(), need};
}

void ReferenceExecutor::runOps(const StepBatch &batch) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t R = static_cast<int64_t>(batch.logitRows.size());
  for (const PlanOp &op : plan_->ops()) {
    if (op.kind == OpKind::AllReduce || op.kind == OpKind::AllGather) {
      runCollective(op, T, R);
      continue;
    }
    for (Rank &rank : ranks_)
      runOp(op, rank, batch);
  }
}

void ReferenceExecutor::runCollective(const PlanOp &op, int64_t T, int64_t R) {
  const auto &buffers = plan_->buffers();
  if (op.kind == OpKind::AllReduce) {
    // Summed in rank order, in float32, then copied to every rank.
    std::span<float> sum = activation(ranks_.front(), op.buffers[0], T, R);
    for (size_t r = 1; r < ranks_.size(); ++r) {
      std::span<const float> part = activation(ranks_[r], op.buffers[0], T, R);
      for (size_t i = 0; i < sum.size(); ++i)
        sum[i] += part[i];
    }
    for (size_t r = 1; r < ranks_.size(); ++r)
      std::copy(sum.begin(), sum.end(),
                activation(ranks_[r], op.buffers[0], T, R).begin());
    return;
  }
  // AllGather: rank r's columns at [r * width, (r + 1) * width) of each row.
  const int64_t width = buffers[static_cast<size_t>(op.buffers[1])].width;
  const int64_t outWidth = buffers[static_cast<size_t>(op.buffers[0])].width;
  std::span<float> out = activation(ranks_.front(), op.buffers[0], T, R);
  const int64_t rows = static_cast<int64_t>(out.size()) / outWidth;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    std::span<const float> in = activation(ranks_[r], op.buffers[1], T, R);
    for (int64_t row = 0; row < rows; ++row)
      std::copy_n(in.begin() + row * width, width,
                  out.begin() + row * outWidth +
                      static_cast<int64_t>(r) * width);
  }
  for (size_t r = 1; r < ranks_.size(); ++r)
    std::copy(out.begin(), out.end(),
              activation(ranks_[r], op.buffers[0], T, R).begin());
}

void ReferenceExecutor::runOp(const PlanOp &op, Rank &rank,
                              const StepBatch &batch) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t R = static_cast<int64_t>(batch.logitRows.size());
  const auto &buffers = plan_->buffers();
  const std::span<const int32_t> inputs[kNumStepInputs] = {
      batch.tokens, batch.positions, batch.tokenSeq, batch.logitRows};
  const StepPlacement placement{batch.positions, batch.tokenSeq,
                                batch.blockTables, batch.maxBlocksPerSeq};

  auto rowsOf = [&](int index) {
    return buffers[static_cast<size_t>(index)].rows == RowSpace::Tokens ? T : R;
  };
  auto act = [&](int index) { return activation(rank, index, T, R); };
  auto weight = [&](const PlanOp &op, size_t operand) {
    return rank.weights->get(op.weights[operand]);
  };
  PagedKvCache &cache = *rank.cache;

  {
    const int64_t rows = rowsOf(op.buffers[0]);
    const int64_t width = buffers[static_cast<size_t>(op.buffers[0])].width;
    switch (op.kind) {
    case OpKind::Embedding:
      embeddingRows(act(op.buffers[0]), inputs[op.buffers[1]], weight(op, 0),
                    width, op.embeddingScale);
      break;
    case OpKind::RmsNorm: {
      std::span<const float> in = act(op.buffers[1]);
      if (op.hasSecondNormWeight()) { // the input's own norm first
        normedInput_.resize(in.size());
        rmsNormRows(normedInput_, in, {}, weight(op, 1), rows, op.inputEps);
        in = normedInput_;
      }
      rmsNormRows(act(op.buffers[0]), in,
                  op.hasResidual() ? act(op.buffers[2]) : std::span<float>(),
                  weight(op, 0), rows, op.eps);
      break;
    }
    case OpKind::HeadRmsNorm:
      headRmsNormRows(act(op.buffers[0]), rows, width, op.column, op.heads,
                      op.headDim, weight(op, 0), op.eps);
      if (op.hasSecondNormWeight())
        headRmsNormRows(act(op.buffers[0]), rows, width,
                        op.column + op.heads * op.headDim, op.secondHeads,
                        op.headDim, weight(op, 1), op.eps);
      break;
    case OpKind::NormLinear:
      rmsNormRows(act(op.buffers[2]), act(op.buffers[1]), std::span<float>(),
                  weight(op, 0), rows, op.eps);
      linearWithEpilogue(
          op, act(op.buffers[0]), act(op.buffers[2]), weight(op, 1),
          op.hasBias() ? weight(op, 2) : std::span<const float>(), rows, width,
          buffers[static_cast<size_t>(op.buffers[1])].width);
      break;
    case OpKind::Linear:
      linearWithEpilogue(
          op, act(op.buffers[0]), act(op.buffers[1]), weight(op, 0),
          op.hasBias() ? weight(op, 1) : std::span<const float>(), rows, width,
          buffers[static_cast<size_t>(op.buffers[1])].width);
      break;
    case OpKind::RopeKvWrite:
      ropeKvWriteRows(act(op.buffers[0]), rows, op,
                      plan_->ropes()[static_cast<size_t>(op.rope)], placement,
                      cache);
      break;
    case OpKind::Attention:
      attentionRows(act(op.buffers[0]), act(op.buffers[1]), rows, op,
                    op.hasSinks() ? weight(op, 0) : std::span<const float>(),
                    placement, cache, numThreads_);
      break;
    case OpKind::Swiglu:
      swigluRows(act(op.buffers[0]), act(op.buffers[1]), rows, width,
                 op.activation == fb::GateActivation::GeluTanh);
      break;
    case OpKind::Add:
      addValues(act(op.buffers[0]), act(op.buffers[1]), act(op.buffers[2]),
                rows * width);
      break;
    case OpKind::GatherRows:
      gatherRows(act(op.buffers[0]), act(op.buffers[1]), inputs[op.buffers[2]],
                 width);
      break;
    case OpKind::Softcap:
      softcapValues(act(op.buffers[0]), op.softcap);
      break;
    case OpKind::Moe: {
      MoeWeights w{weight(op, 0), weight(op, 1), weight(op, 2), weight(op, 3)};
      if (op.hasMoeBiases()) {
        w.routerBias = weight(op, 4);
        w.gateBias = weight(op, 5);
        w.upBias = weight(op, 6);
        w.downBias = weight(op, 7);
      }
      const int64_t hidden = buffers[static_cast<size_t>(op.buffers[1])].width;
      moeRows(act(op.buffers[0]), act(op.buffers[1]), w, rows, hidden,
              static_cast<int64_t>(w.router.size()) / hidden, op.topK,
              op.normalizeTopK, gateFunction(op.activation),
              op.activationLimit);
      break;
    }
    case OpKind::SigmoidGate:
      sigmoidGateRows(act(op.buffers[0]), act(op.buffers[1]),
                      act(op.buffers[2]), weight(op, 0), rows, width,
                      buffers[static_cast<size_t>(op.buffers[2])].width);
      break;
    case OpKind::GatherColumns: {
      std::span<float> out = act(op.buffers[0]);
      std::span<const float> in = act(op.buffers[1]);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < width; ++j)
          out[static_cast<size_t>(r * width + j)] = in[static_cast<size_t>(
              r * width + op.columns[static_cast<size_t>(j)])];
      break;
    }
    case OpKind::ConcatColumns: {
      std::span<float> out = act(op.buffers[0]);
      int64_t at = 0;
      for (size_t j = 1; j < op.buffers.size(); ++j) {
        std::span<float> in = act(op.buffers[j]);
        const int64_t inWidth =
            buffers[static_cast<size_t>(op.buffers[j])].width;
        const int64_t col = op.columns[j - 1], cols = op.widths[j - 1];
        for (int64_t r = 0; r < rows; ++r)
          std::copy_n(in.begin() + r * inWidth + col, cols,
                      out.begin() + r * width + at);
        at += cols;
      }
      break;
    }
    case OpKind::AllReduce:
    case OpKind::AllGather:
      break; // runCollective
    }
  }
}

} // namespace sol

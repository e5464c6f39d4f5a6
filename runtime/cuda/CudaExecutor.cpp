//===- CudaExecutor.cpp - Runs a plan's step on an NVIDIA GPU -------------===//
#include "runtime/cuda/CudaExecutor.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Event.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/cuda/StepPadding.h"
#include "runtime/cuda/TensorMap.h"
#include "runtime/plan/PlanDType.h"
#include "runtime/plan/RandomWeights.h"
#include "runtime/sampling/StepSampling.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sol::cuda {

using namespace kernels; // the launch-args structs

namespace {

constexpr std::size_t kAlign = 256;
constexpr int32_t kMaxSeqsPerStep = 256;
/// Steps of at most this many tokens replay CUDA graphs (decode).
constexpr int kMaxGraphTokens = kMaxGraphedTokens;

std::size_t alignUp(std::size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

/// Whether a debugging switch (docs/debugging.md) is on: set, not empty, not
/// "0".
bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// Per-request sampling. The kernel reads sol::SamplingRow as it is.
static_assert(sizeof(SamplingRow) == SamplingSpec::kParamsBytes &&
                  offsetof(SamplingRow, topK) == 4 &&
                  offsetof(SamplingRow, frequencyPenalty) == 24 &&
                  offsetof(SamplingRow, seed) == 32 &&
                  offsetof(SamplingRow, counter) == 40,
              "sol::SamplingRow must match SamplingParams in Sampling.cuh");

/// Penalty entries one step may hold: the device buffers have this fixed
/// size so that replayed CUDA graphs need no new pointers (the kernel reads
/// each step's count from the offsets it is given).
constexpr std::size_t kMaxPenaltyEntries = std::size_t{1} << 20;

/// Where a step's sampling inputs sit in the input buffer: after its block
/// tables (whose size, like R, is part of the graph key), SamplingRows |
/// R + 1 penalty offsets | penalty entries. One copy sends them with the
/// other inputs.
struct SamplingInputs {
  std::size_t params, offsets, entries;
};
SamplingInputs samplingInputs(std::size_t blockTablesEnd, int rows) {
  SamplingInputs in;
  in.params = alignUp(blockTablesEnd);
  in.offsets = in.params + alignUp(static_cast<std::size_t>(rows) *
                                   SamplingSpec::kParamsBytes);
  in.entries = in.offsets +
               alignUp(sizeof(int32_t) * (static_cast<std::size_t>(rows) + 1));
  return in;
}

/// The packed results of a sampling step: ids | logprobs | top ids | top
/// logprobs, for R rows and numTop top logprobs.
struct SamplingResults {
  std::size_t logprobs, topIds, topLogprobs, bytes;
};
SamplingResults samplingResults(int rows, int numTop) {
  const auto r = static_cast<std::size_t>(rows);
  const std::size_t top = r * static_cast<std::size_t>(numTop) * 4;
  SamplingResults res;
  res.logprobs = alignUp(4 * r);
  res.topIds = res.logprobs + alignUp(4 * r);
  res.topLogprobs = res.topIds + alignUp(top);
  res.bytes = res.topLogprobs + top;
  return res;
}

/// The rope kernels' ropeLongFrom (LaunchArgs.h): the first position of a
/// LongRoPE table's long frequencies (uploaded right after its short ones),
/// kNoLongRope when it has none.
int ropeLongFrom(const fb::RopeTable &table) {
  constexpr int kNoLongRope = 0x7fffffff;
  if (!table.long_inv_freq() || table.long_inv_freq()->size() == 0)
    return kNoLongRope;
  return static_cast<int>(
      std::clamp<int64_t>(table.long_from(), 0, int64_t{kNoLongRope}));
}

} // namespace

CudaExecutor::CudaExecutor(const PlanFile &planFile,
                           const ExecutorOptions &options,
                           const TensorParallelRank &rank)
    : plan_(planFile), options_(options), rank_(rank), context_(rank.device) {
  const fb::Plan &plan = planFile.plan();
  context_.makeCurrent();
  if (!plan.model() || !plan.kv_cache() || !plan.ops() || !plan.buffers() ||
      !plan.weights() || !plan.arena_slots())
    fail(planFile.path().string(), ": the plan lacks its model, KV cache, "
                                   "ops, buffers, weights or arena");
  if (!plan.kernels() || plan.kernels()->size() == 0)
    fail(planFile.path().string(),
         ": the plan holds no CUDA kernels (was solc run without NVRTC?); "
         "use --device cpu, or compile it again on a machine with CUDA");
  vocab_ = plan.model()->vocab_size();
  maxModelLen_ = options.maxModelLen > 0
                     ? options.maxModelLen
                     : plan.model()->max_position_embeddings();
  maxTokens_ = static_cast<int32_t>(plan.max_tokens_per_step());
  const fb::KvCacheLayout &kv = *plan.kv_cache();
  blockSize_ = kv.block_size();
  kvDtype_ = kv.dtype();
  if (kvDtype_ != fb::DType::BF16 && kvDtype_ != fb::DType::F8E4M3)
    fail(planFile.path().string(), ": the KV cache's dtype ",
         static_cast<int>(kvDtype_), " is neither bf16 nor fp8 E4M3");
  if (kvFp8() && kv.scales() != fb::KvScales::PerTokenHead)
    fail(planFile.path().string(), ": an fp8 KV cache needs per-token, "
                                   "per-head scales; compile it again");
  maxBlocksPerSeqCap_ =
      static_cast<int32_t>((maxModelLen_ + blockSize_ - 1) / blockSize_);
  maxSeqsCap_ = kMaxSeqsPerStep;

  // Kernels: every module, every instance by its name expression.
  const std::string gpuArch = context_.smArch();
  for (unsigned m = 0; m < (plan.modules() ? plan.modules()->size() : 0); ++m) {
    const fb::Module *mod = plan.modules()->Get(m);
    auto cubin = planFile.section(mod->cubin());
    auto ptx = planFile.section(mod->ptx());
    // A cubin only runs on its own architecture; Module falls back to PTX.
    // An architecture-specific module (sm_90a: wgmma) has no portable PTX.
    const std::string arch = str(mod->arch());
    std::span<const uint8_t> cubinBytes;
    if (arch == gpuArch || arch == gpuArch + "a")
      cubinBytes = {reinterpret_cast<const uint8_t *>(cubin.data()),
                    cubin.size()};
    else if (arch.ends_with('a'))
      fail(planFile.path().string(), ": the plan's kernels for ", arch,
           " (Hopper's wgmma) do not run on this GPU (", gpuArch,
           "); compile the model again with solc --gpu ", gpuArch);
    modules_.emplace_back(
        cubinBytes,
        std::string_view(reinterpret_cast<const char *>(ptx.data()),
                         ptx.size()),
        "module " + std::to_string(m));
  }
  for (const fb::Kernel *k : *plan.kernels()) {
    if (k->module_index() < 0 ||
        static_cast<size_t>(k->module_index()) >= modules_.size())
      fail(planFile.path().string(), ": kernel ", str(k->expression()),
           " names a missing module");
    kernels_.emplace(str(k->expression()),
                     modules_[static_cast<size_t>(k->module_index())].kernel(
                         str(k->lowered_name())));
  }

  const int ranks = rank.collectives ? rank.collectives->ranks() : 1;
  if (plan.tensor_parallel_size() != ranks)
    fail(planFile.path().string(), ": the plan is split over ",
         plan.tensor_parallel_size(), " GPUs, but this executor runs ", ranks,
         " (internal error: solrun picks the tensor-parallel executor "
         "for split plans)");
  // Ops as selection sees them, decoded once: launches read their fields.
  for (PlanOp &op : decodePlanOps(plan, planFile.path().string())) {
    OpDesc d;
    static_cast<PlanOp &>(d) = std::move(op);
    if (d.buffers.empty())
      fail(planFile.path().string(), ": op ", d.name, " has no buffers");
    for (int32_t b : d.buffers) {
      if (b < 0 || static_cast<unsigned>(b) >= plan.buffers()->size())
        fail(planFile.path().string(), ": op ", d.name, " names buffer ", b,
             " which does not exist");
      d.bufferWidths.push_back(plan.buffers()->Get(b)->width());
    }
    const fb::Buffer *out = plan.buffers()->Get(d.buffers[0]);
    d.outDtype = out->dtype();
    d.outRows = out->rows();
    for (int32_t w : d.weights) {
      if (w < 0 || static_cast<unsigned>(w) >= plan.weights()->size())
        fail(planFile.path().string(), ": op ", d.name, " names weight ", w,
             " which does not exist");
      std::vector<int64_t> shape;
      if (const auto *s = plan.weights()->Get(w)->shape())
        shape.assign(s->begin(), s->end());
      d.weightShapes.push_back(std::move(shape));
    }
    if (d.kind == OpKind::ConcatColumns && d.outDtype != fb::DType::BF16)
      fail(planFile.path().string(), ": op ", d.name,
           " concatenates columns of a non-bf16 buffer");
    d.blockSize = blockSize_;
    d.kvDtype = kvDtype_;
    d.wgmma = targetHasWgmma(str(plan.target()));
    ops_.push_back(std::move(d));
  }
  markAttentionReaders(ops_);
  // What solc decided for every step: the fused rope (and head norm) of
  // decode steps, the skippable gather, the argmax LM head, chunk attention.
  lowering_ = readStaticLowering(plan.cuda(), ops_, planFile.path().string());
  headNormFused_ = lowering_.headNormFused(ops_.size());
  addNormFused_ = lowering_.addNormFused(ops_);
  // Every instance selection may pick for the plan's step sizes, as solc
  // compiled them (codegen/plan/CompileKernels.cpp): later lookups cannot
  // fail.
  const int maxContext = static_cast<int>(maxModelLen_);
  for (std::size_t i = 0; i < ops_.size(); ++i)
    for (const KernelInstance &k :
         enumerateKernels(ops_[i], maxTokens_, maxContext, headNormFused_[i],
                          addNormFused_[i]))
      if (!kernels_.count(k.nameExpression))
        fail(planFile.path().string(), ": the plan lacks kernel ",
             k.nameExpression, " needed by op ", ops_[i].name,
             "; compile the model again with this version's solc");

  // Weights, uploaded once; f32 norm weights and sinks rounded to the bf16
  // their kernels read.
  {
    std::vector<fb::DType> dtypes;
    std::vector<std::string> names;
    for (const fb::Weight *w : *plan.weights()) {
      dtypes.push_back(w->dtype());
      names.push_back(w->name() ? w->name()->str() : std::string("?"));
    }
    if (std::string why = weightDtypeProblem(ops_, dtypes, names); !why.empty())
      fail(planFile.path().string(), ": ", why,
           "; compile the model again with this version's solc, or run the "
           "plan with --device cpu");
  }
  const std::vector<bool> bf16Read =
      weightsReadAsBf16(ops_, plan.weights()->size());
  std::size_t total = 0;
  for (unsigned i = 0; i < plan.weights()->size(); ++i) {
    weightOffsets_.push_back(total);
    total += alignUp(plan.random_weights()
                         ? weightStorageBytes(*plan.weights()->Get(i))
                         : plan.weights()->Get(i)->data()->size());
  }
  weights_ = DeviceBuffer(std::max<std::size_t>(total, kAlign));
  std::vector<uint16_t> rounded;
  std::vector<std::byte> random; // a plan without weights: seeded values
  for (unsigned i = 0; i < plan.weights()->size(); ++i) {
    if (plan.random_weights() &&
        fillRandomWeightOnDevice(static_cast<int>(i), bf16Read[i]))
      continue;
    auto bytes =
        weightBytesOrRandom(planFile, static_cast<int>(i), rank.rank, random);
    if (bf16Read[i] && plan.weights()->Get(i)->dtype() == fb::DType::F32) {
      rounded.resize(bytes.size() / sizeof(float));
      for (std::size_t j = 0; j < rounded.size(); ++j) {
        float f;
        std::memcpy(&f, bytes.data() + j * sizeof(float), sizeof f);
        rounded[j] = floatToBf16(f);
      }
      weights_.copyFromHost(rounded.data(), rounded.size() * 2, stream_,
                            weightOffsets_[i]);
      stream_.synchronize(); // `rounded` is reused for the next one
      continue;
    }
    weights_.copyFromHost(bytes.data(), bytes.size(), stream_,
                          weightOffsets_[i]);
    if (plan.random_weights())
      stream_.synchronize(); // `random` is reused for the next one
  }

  // Rope tables.
  std::vector<float> ropeData;
  if (plan.rope())
    for (const fb::RopeTable *r : *plan.rope()) {
      ropeOffsets_.push_back(ropeData.size() * sizeof(float));
      if (r->inv_freq())
        ropeData.insert(ropeData.end(), r->inv_freq()->begin(),
                        r->inv_freq()->end());
      // longrope: the long set right after the short one (the kernels add
      // head_dim / 2 from ropeLongFrom on).
      if (r->long_inv_freq() && r->long_inv_freq()->size() > 0)
        ropeData.insert(ropeData.end(), r->long_inv_freq()->begin(),
                        r->long_inv_freq()->end());
      while (ropeData.size() % (kAlign / sizeof(float)))
        ropeData.push_back(0);
    }
  ropes_ = DeviceBuffer(std::max<std::size_t>(ropeData.size() * 4, kAlign));
  if (!ropeData.empty())
    ropes_.upload(std::span<const float>(ropeData), stream_);
  // GatherColumns ops' column tables, one buffer for all (uploaded as the
  // rope tables are).
  std::vector<int32_t> columnData;
  for (const OpDesc &d : ops_)
    if (d.kind == OpKind::GatherColumns) {
      columnTableOffsets_[&d] = columnData.size() * sizeof(int32_t);
      columnData.insert(columnData.end(), d.columns.begin(), d.columns.end());
      while (columnData.size() % (kAlign / sizeof(int32_t)))
        columnData.push_back(0);
    }
  if (!columnData.empty()) {
    columnTables_ = DeviceBuffer(columnData.size() * sizeof(int32_t));
    columnTables_.upload(std::span<const int32_t>(columnData), stream_);
  }

  // Activation arena: each slot holds its widest buffer for maxTokens rows.
  std::size_t arenaBytes = 0;
  for (int64_t bytesPerRow : *plan.arena_slots()) {
    slotOffsets_.push_back(arenaBytes);
    arenaBytes += alignUp(static_cast<std::size_t>(bytesPerRow) *
                          static_cast<std::size_t>(maxTokens_));
  }
  arena_ = DeviceBuffer(std::max<std::size_t>(arenaBytes, kAlign));
  std::size_t gatheredBytes = 0;
  for (const OpDesc &d : ops_)
    if (d.kind == OpKind::AllGather)
      gatheredBytes = std::max<std::size_t>(
          gatheredBytes, static_cast<std::size_t>(d.bufferWidths[0]) *
                             static_cast<std::size_t>(maxTokens_) *
                             (dtypeBits(toDType(d.outDtype)) / 8));
  if (gatheredBytes > 0)
    gathered_ = DeviceBuffer(gatheredBytes);
  std::size_t logitsBytes = 0, slotBytes = 0, actBytes = 0, outBytes = 0,
              sortedBytes = 0;
  for (const OpDesc &d : ops_)
    if (d.kind == OpKind::Moe) {
      const auto rows = static_cast<std::size_t>(maxTokens_);
      const auto experts = static_cast<std::size_t>(d.weightShapes[0][0]);
      const auto slots = rows * static_cast<std::size_t>(d.topK);
      const auto width =
          static_cast<std::size_t>(d.weightShapes[1][0]) / experts;
      const auto hidden = static_cast<std::size_t>(d.bufferWidths[1]);
      logitsBytes = std::max(logitsBytes, alignUp(rows * experts * 2));
      slotBytes = std::max(slotBytes, alignUp(slots * 4));
      actBytes = std::max(actBytes, alignUp(slots * width * 2));
      outBytes = std::max(outBytes, alignUp(slots * hidden * 2));
      sortedBytes = std::max(
          sortedBytes,
          alignUp(static_cast<std::size_t>(moeSortedInts(d, maxTokens_)) * 4));
    }
  if (logitsBytes > 0) {
    moeIdsOffset_ = logitsBytes;
    moeWeightsOffset_ = moeIdsOffset_ + slotBytes;
    moeActOffset_ = moeWeightsOffset_ + slotBytes;
    moeOutOffset_ = moeActOffset_ + actBytes;
    moeSortedOffset_ = moeOutOffset_ + outBytes;
    moeWorkspace_ = DeviceBuffer(moeSortedOffset_ + sortedBytes);
  }

  // Step inputs. The fused argmax's key comes first, zero in the staging
  // buffers: every step's input copy clears it, except in a step chained to
  // the key, which copies from kAlign on (its embedding reads, then clears).
  argmaxKeyOffset_ = 0;
  std::size_t off = kAlign;
  for (int i = 0; i < 4; ++i) {
    inputOffsets_[i] = off;
    off += alignUp(sizeof(int32_t) * static_cast<std::size_t>(maxTokens_));
  }
  // chunk_attention's tiles (int2 each, at most one per graph-sized token).
  chunkTilesOffset_ = off;
  off += alignUp(sizeof(PrefillTile) * kMaxGraphTokens);
  inputOffsets_[4] = off;
  off += sizeof(int32_t) * static_cast<std::size_t>(maxSeqsCap_) *
         static_cast<std::size_t>(maxBlocksPerSeqCap_);
  // Sampling inputs at their largest (see samplingInputs).
  off = samplingInputs(off, maxTokens_).entries +
        kMaxPenaltyEntries * SamplingSpec::kPenaltyEntryBytes;
  inputs_ = DeviceBuffer(off);
  argmaxOut_ = DeviceBuffer(alignUp(sizeof(int32_t) * maxTokens_));
  chainKey_ = DeviceBuffer(kAlign);
  const std::size_t samplingBytes =
      samplingResults(maxTokens_, kMaxTopLogprobs).bytes;
  samplingOut_ = DeviceBuffer(alignUp(samplingBytes));
  for (HostSlot &slot : slots_) {
    slot.staging = PinnedBuffer(off);
    std::memset(static_cast<std::byte *>(slot.staging.data()) +
                    argmaxKeyOffset_,
                0, sizeof(unsigned long long));
    slot.argmax = PinnedBuffer(
        std::max(sizeof(int32_t) * maxTokens_, sizeof(unsigned long long)));
    slot.sampling = PinnedBuffer(samplingBytes);
  }
  penaltySaved_ = DeviceBuffer(sizeof(float) * kMaxPenaltyEntries);
  argmaxWorkspace_ = DeviceBuffer(
      alignUp(ArgmaxSpec{static_cast<int>(vocab_)}.workspaceBytes(maxTokens_)));
  argmaxWorkspace_.fillBytes(0, stream_); // the arrival counters
  dependentLaunch_ = !envFlag("SOL_DISABLE_PDL");

  // Split-attention workspace for the largest need of any step.
  for (const OpDesc &d : ops_)
    if (d.kind == OpKind::Attention) {
      PagedAttentionSpec spec{static_cast<int>(d.heads),
                              static_cast<int>(d.kvHeads),
                              static_cast<int>(d.headDim), blockSize_};
      for (int t = 1; t <= std::min(maxTokens_, 512); ++t) {
        int splits = spec.chooseSplits(t, static_cast<int>(maxModelLen_),
                                       kPlannedMultiprocessors);
        if (splits > 1)
          workspaceFloats_ =
              std::max(workspaceFloats_, spec.workspaceFloats(t, splits));
      }
    }
  attentionWorkspace_ =
      DeviceBuffer(std::max<std::size_t>(workspaceFloats_ * 4, kAlign));
  std::size_t arrivals = 1;
  for (const OpDesc &d : ops_)
    if (d.kind == OpKind::Attention)
      arrivals = std::max(
          arrivals,
          PagedAttentionSpec{.kvHeads = static_cast<int>(d.kvHeads),
                             .headSplit = PagedAttentionSpec::kMaxHeadSplit}
              .arrivalCount(maxTokens_));
  attentionArrivals_ = DeviceBuffer(alignUp(arrivals * sizeof(unsigned)));
  attentionArrivals_.fillBytes(0, stream_);
  addNormArrivals_ = DeviceBuffer(alignUp(sizeof(unsigned)));
  addNormArrivals_.fillBytes(0, stream_);
  clusterMerge_ = context_.computeCapabilityMajor() >= 9;
  gatherAliases_.reserve(lowering_.skippableGathers.size());
  sequenceSeen_.assign(static_cast<std::size_t>(maxSeqsCap_), 0);
  // Chained ids are resolved by the embedding kernel: only Embedding ops may
  // read the token ids (step input 0).
  chainable_ = !ops_.empty();
  for (std::size_t i = 0; i < ops_.size(); ++i)
    for (int id : ops_[i].buffers)
      chainable_ = chainable_ && (id != 0 || ops_[i].kind == OpKind::Embedding);
  if (options_.profileSteps) {
    stepStart_ = std::make_unique<Event>();
    stepEnd_ = std::make_unique<Event>();
  }
  // The LM head with the argmax in its epilogue (enumerateKernels put it in
  // the plan).
  if (lowering_.argmaxLmHead)
    argmaxHead_ = selectArgmaxLmHead(ops_.back());
  // Split-K partial sums; zero between uses (the finalize kernels reset it).
  std::size_t splitFloats = 0;
  for (const OpDesc &d : ops_)
    splitFloats = std::max(splitFloats, splitKWorkspaceFloats(d, maxTokens_));
  splitKWorkspace_ =
      DeviceBuffer(std::max<std::size_t>(alignUp(splitFloats * 4), kAlign));
  splitKWorkspace_.fillBytes(0, stream_);
  // cuBLASLt for the GEMMs of more rows than linear_skinny takes (batched
  // decode and prompts), with its workspace and room for a fused gate/up
  // GEMM's output ahead of its SwiGLU.
  if (maxTokens_ >= kCublasMinRows) {
    std::string why;
    cublas_ = CublasLt::load(why);
    if (cublas_) {
      cublasWorkspace_ = DeviceBuffer(CublasLt::kWorkspaceBytes);
      std::size_t scratch = 0;
      for (const OpDesc &d : ops_)
        if ((d.kind == OpKind::Linear || d.kind == OpKind::NormLinear) &&
            isGated(linearEpilogue(d)))
          scratch = std::max<std::size_t>(
              scratch,
              static_cast<std::size_t>(
                  d.weightShapes.at(d.kind == OpKind::NormLinear ? 1 : 0)
                      .at(0)));
      if (scratch > 0)
        gemmScratch_ = DeviceBuffer(
            alignUp(scratch * 2 * static_cast<std::size_t>(maxTokens_)));
    }
    // Without cuBLASLt (`why` says why) prefill runs LinearGemm.cuh.
  }
  // fp8 linears whose steps of many rows cuBLASLt's W8A8 GEMM can run (the
  // library has the form, the plan has quantize_rows_fp8): no bf16 copy.
  // Where one cannot, a note says why (once).
  fp8Gemm_.assign(ops_.size(), 0);
  fp8WeightScaleOffsets_.assign(ops_.size(), 0);
  std::size_t fp8Features = 0, fp8WeightScaleFloats = 0;
  std::string fp8Refusal;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const OpDesc &d = ops_[i];
    if ((d.kind != OpKind::Linear && d.kind != OpKind::NormLinear) ||
        d.quant != fb::WeightQuant::Fp8 || d.outDtype != fb::DType::BF16 ||
        !needsDequantizedCopy(d, maxTokens_))
      continue;
    const std::vector<int64_t> &w = d.weightShapes.at(d.linearWeight());
    const int n = static_cast<int>(w.at(0)), k = static_cast<int>(w.at(1));
    std::string why;
    if (!cublas_)
      why = "cuBLASLt is not loaded";
    else if (maxTokens_ % kFp8GemmRows != 0)
      why = cat("the step budget (", maxTokens_,
                " tokens) is not a multiple of ", kFp8GemmRows);
    else if (d.hasBias())
      why = "a bias (cuBLASLt's bias epilogue beside block scales is not yet "
            "checked against the reference executor)";
    else if (k % 128 != 0)
      why = cat("their K (", k, ") is not a multiple of 128");
    else if (!kernels_.count(
                 QuantizeRowsFp8Spec{k}.instance().nameExpression) ||
             !kernels_.count(RepeatScalesSpec{}.instance().nameExpression))
      why = "the plan has no quantize_rows_fp8 for them (a solc before it)";
    else
      why = cublas_->fp8Refusal(
          n, k, d.hasBias(), linearEpilogue(d) == LinearEpilogue::Residual,
          cublasWorkspace_.address(), cublasWorkspace_.size());
    if (!why.empty()) {
      if (fp8Refusal.find(why) == std::string::npos)
        fp8Refusal += (fp8Refusal.empty() ? "" : "; ") + why;
      continue;
    }
    fp8Gemm_[i] = 1;
    fp8Features = std::max<std::size_t>(fp8Features, k);
    fp8WeightScaleOffsets_[i] = fp8WeightScaleFloats;
    fp8WeightScaleFloats +=
        static_cast<std::size_t>(n) * QuantizeRowsFp8Spec{k}.scaleBlocks();
  }
  if (!fp8Refusal.empty())
    std::fprintf(stderr,
                 "note: fp8 linears run steps of more than %d rows over a "
                 "bf16 copy of their weights (W8A16), not on the fp8 tensor "
                 "cores: %s\n",
                 SkinnySpec::kSelectedMaxRows, fp8Refusal.c_str());
  if (fp8Features > 0) {
    fp8Codes_ = DeviceBuffer(
        alignUp(fp8Features * static_cast<std::size_t>(maxTokens_)));
    const int blocks =
        QuantizeRowsFp8Spec{static_cast<int>(fp8Features)}.scaleBlocks();
    fp8Scales_ = DeviceBuffer(
        alignUp(4 * static_cast<std::size_t>(blocks) * maxTokens_));
    // Filled from the weights' per-row scales once they are on the device.
    fp8WeightScales_ = DeviceBuffer(alignUp(4 * fp8WeightScaleFloats));
  }
  // The bf16 copy of the largest quantized W, for steps of more rows.
  std::size_t dequantBytes = 0;
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (!fp8Gemm_[i] && needsDequantizedCopy(ops_[i], maxTokens_)) {
      const std::vector<int64_t> &w =
          ops_[i].weightShapes.at(ops_[i].linearWeight());
      dequantBytes = std::max<std::size_t>(
          dequantBytes, static_cast<std::size_t>(w.at(0) * w.at(1) * 2));
    }
  if (dequantBytes > 0)
    dequantScratch_ = DeviceBuffer(alignUp(dequantBytes));
  // Tiles of the tensor-core prefill attention, when the plan has it (steps
  // of at least its tile's rows).
  if (anyPrefillAttention()) {
    prefillTiles_ = DeviceBuffer(sizeof(PrefillTile) * maxTokens_);
    for (HostSlot &slot : slots_)
      slot.prefillTiles = PinnedBuffer(sizeof(PrefillTile) * maxTokens_);
  }
  // chunk_attention: one spec for every attention op.
  if (lowering_.chunkAttention)
    for (std::size_t i = 0; i < ops_.size() && !chunkAttention_; ++i)
      if (ops_[i].kind == OpKind::Attention) {
        chunkAttentionOp_ = i;
        chunkAttention_ = chunkAttentionSpec(ops_[i]);
      }

  // The paged KV cache takes what --gpu-memory-utilization leaves.
  stream_.synchronize();
  // Per block and layer: K and V (bf16 or fp8) and, for fp8, one float32
  // scale per slot and kv head for each.
  kvHalfBytes_ = static_cast<std::size_t>(blockSize_) * kv.num_kv_heads() *
                 kv.head_dim() * (kvFp8() ? 1 : 2);
  const std::size_t scaleHalfBytes =
      kvFp8() ? static_cast<std::size_t>(blockSize_) * kv.num_kv_heads() * 4
              : 0;
  const std::size_t blockBytes = 2 * (kvHalfBytes_ + scaleHalfBytes) *
                                 static_cast<std::size_t>(kv.num_layers());
  DeviceMemoryInfo mem = context_.memoryInfo();
  const double budget =
      options.gpuMemoryUtilization * static_cast<double>(mem.totalBytes) -
      static_cast<double>(mem.totalBytes - mem.freeBytes);
  const double headroom = 256.0 * (1 << 20); // graphs, module code
  const double kvBytes =
      std::min(budget, static_cast<double>(mem.freeBytes) - headroom);
  const int64_t needed = (maxModelLen_ + blockSize_ - 1) / blockSize_;
  if (kvBytes < static_cast<double>(blockBytes) * static_cast<double>(needed))
    fail("the KV cache does not fit: ", mem.freeBytes / (1 << 20),
         " MiB free after the weights and activations, --gpu-memory-"
         "utilization ",
         options.gpuMemoryUtilization, " leaves ",
         static_cast<int64_t>(std::max(0.0, kvBytes) / (1 << 20)),
         " MiB, but one sequence of ", maxModelLen_, " tokens needs ",
         static_cast<int64_t>(blockBytes) * needed / (1 << 20),
         " MiB; lower --max-model-len or raise --gpu-memory-utilization");
  numKvBlocks_ = static_cast<int32_t>(std::min<double>(
      kvBytes / static_cast<double>(blockBytes), double(INT32_MAX / 2)));
  if (options.maxKvTokens > 0)
    numKvBlocks_ = static_cast<int32_t>(std::min<int64_t>(
        numKvBlocks_,
        std::max(needed, (options.maxKvTokens + blockSize_ - 1) / blockSize_)));
  kvArrayBytes_ = kvHalfBytes_ * static_cast<std::size_t>(numKvBlocks_);
  kvScaleBytes_ = scaleHalfBytes * static_cast<std::size_t>(numKvBlocks_);
  kvLayerBytes_ = 2 * (kvArrayBytes_ + kvScaleBytes_);
  kvCache_ =
      DeviceBuffer(kvLayerBytes_ * static_cast<std::size_t>(kv.num_layers()));
  repeatFp8WeightScales();
  prepareFp8Wgmma();
  if (cublas_)
    warmUpCublas();
}

void CudaExecutor::repeatFp8WeightScales() {
  const RepeatScalesSpec spec;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    if (!fp8Gemm_[i])
      continue;
    const QuantLinearArgs q = quantLinearArgs(ops_[i], 0, 0, 0, 0);
    const int blocks = QuantizeRowsFp8Spec{q.k}.scaleBlocks();
    kernel(spec.instance())
        .launch(spec.dims(static_cast<long long>(q.n) * blocks), stream_,
                RepeatScalesArgs{.out = fp8WeightScales_.address() +
                                        4 * fp8WeightScaleOffsets_[i],
                                 .in = q.scales,
                                 .count = q.n,
                                 .repeats = blocks});
  }
}

void CudaExecutor::prepareFp8Wgmma() {
  fp8Wgmma_.clear();
  fp8Wgmma_.resize(ops_.size());
  if (envFlag("SOL_DISABLE_FP8_WGMMA"))
    return;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    if (!fp8Gemm_[i])
      continue;
    const OpDesc &d = ops_[i];
    const QuantLinearArgs q = quantLinearArgs(d, 0, 0, 0, 0);
    const Fp8WgmmaSpec spec =
        Fp8WgmmaSpec::choose(d.hasBias(), linearEpilogue(d));
    if (!Fp8WgmmaSpec::supports(q.n, q.k) ||
        !kernels_.count(spec.instance().nameExpression))
      continue;
    auto op = std::make_unique<Fp8WgmmaOp>();
    op->spec = spec;
    try {
      op->x = encodeByteMatrixMap(fp8Codes_.address(), maxTokens_, q.k, q.k,
                                  Fp8WgmmaSpec::kTileM, Fp8WgmmaSpec::kTileK);
      op->w = encodeByteMatrixMap(q.w.value, q.n, q.k, q.k, spec.tileN,
                                  Fp8WgmmaSpec::kTileK);
    } catch (const Error &e) {
      fail("op ", d.name, ": ", e.what(),
           "; SOL_DISABLE_FP8_WGMMA=1 runs its prompt GEMMs on cuBLASLt");
    }
    fp8Wgmma_[i] = std::move(op);
  }
}

void CudaExecutor::warmUpCublas() {
  // cuBLASLt loads its kernels lazily, on first use: 80 ms of a 2,048-token
  // prompt's TTFT on the Llama-3.2-1B shape went there, and a kernel loaded
  // while a decode step is captured into a graph would be loaded inside the
  // capture. Run every GEMM shape once at the graph buckets and a few prompt
  // sizes now, on the real buffers.
  std::vector<int> sizes;
  for (int m :
       {maxTokens_, 2048, 512, 128, 64, 56, 48, 40, 32, 24, 16, 8, 4, 2})
    if (m >= kCublasMinRows && m <= maxTokens_ &&
        std::find(sizes.begin(), sizes.end(), m) == sizes.end())
      sizes.push_back(m);
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const OpDesc &d = ops_[i];
    if (d.kind != OpKind::Linear && d.kind != OpKind::NormLinear)
      continue;
    const bool norm = d.kind == OpKind::NormLinear;
    const unsigned first = norm ? 1 : 0;
    const CUdeviceptr y = buffer(d.buffers[0]);
    const CUdeviceptr x = buffer(d.buffers[norm ? 2 : 1]);
    if (fp8Gemm_[i]) {
      for (int m : sizes)
        if (fp8GemmUsable(i, m))
          fp8Linear(i, m, y, x, false);
      continue;
    }
    // A quantized W's GEMMs read its bf16 copy.
    if (d.quant != fb::WeightQuant::None && dequantScratch_.size() == 0)
      continue;
    const CUdeviceptr w = d.quant == fb::WeightQuant::None
                              ? weight(d.weights[first])
                              : dequantScratch_.address();
    const CUdeviceptr bias = d.hasBias() ? weight(d.weights[first + 1]) : 0;
    const int n = static_cast<int>(d.weightShapes[first][0]);
    const int k = static_cast<int>(d.weightShapes[first][1]);
    for (int m : sizes)
      cublasLinear(d, m, y, x, w, bias, n, k);
  }
  stream_.synchronize();
}

CudaExecutor::~CudaExecutor() {
  if (!pending_.empty()) {
    // Queued copies still target the pinned buffers about to be freed.
    try {
      stream_.synchronize();
    } catch (...) {
    }
  }
  if (!opProfiles_.empty())
    printProfile();
  if (!stepTimes_.empty())
    printStepProfile();
}

void CudaExecutor::printStepProfile() const {
  std::fprintf(stderr,
               "\nper-step time by step size (--profile-steps; GPU: from the "
               "input copy to the output copy):\n%8s %7s %10s %10s %10s\n",
               "tokens", "steps", "GPU us", "step us", "host us");
  for (const auto &[tokens, t] : stepTimes_)
    std::fprintf(stderr, "%8d %7d %10.1f %10.1f %10.1f\n", tokens, t.count,
                 1000.0 * t.gpuMs / t.count, 1000.0 * t.wallMs / t.count,
                 1000.0 * t.hostGapMs / t.count);
}

void CudaExecutor::profileOps(const StepShape &shape) {
  const std::size_t n = ops_.size();
  std::vector<Event> marks(n + 1);
  OpProfile &profile = opProfiles_[shape.tokens];
  profile.opMs.resize(n, 0.0);
  // Each op is timed alone: no graph, and each launch waits for the last.
  const bool dependent = dependentLaunch_;
  dependentLaunch_ = false;
  marks[0].record(stream_);
  for (std::size_t i = 0; i < n; ++i) {
    launchOps(shape, i, i + 1);
    marks[i + 1].record(stream_);
  }
  launchOps(shape, n, n); // the argmax, untimed
  dependentLaunch_ = dependent;
  marks[n].synchronize();
  for (std::size_t i = 0; i < n; ++i)
    profile.opMs[i] += Event::elapsedMs(marks[i], marks[i + 1]);
  ++profile.steps;
}

void CudaExecutor::printProfile() const {
  // One table per step size (decode steps, speculative steps, prompt
  // chunks): ops of the same kind and shape (every layer's qkv GEMV, ...)
  // share a row.
  struct Row {
    std::string what;
    int count = 0;
    double ms = 0;
  };
  for (const auto &[tokens, profile] : opProfiles_) {
    std::vector<Row> rows;
    double total = 0;
    for (std::size_t i = 0; i < profile.opMs.size(); ++i) {
      const OpDesc &d = ops_[i];
      std::string what(opKindName(d.kind));
      if (d.kind == OpKind::Linear || d.kind == OpKind::NormLinear) {
        const std::vector<int64_t> &w =
            d.weightShapes[d.kind == OpKind::NormLinear ? 1 : 0];
        what += cat(" ", w[0], "x", w[1]);
      }
      auto it = std::find_if(rows.begin(), rows.end(),
                             [&](const Row &r) { return r.what == what; });
      if (it == rows.end())
        it = rows.insert(rows.end(), Row{what});
      it->count += 1;
      it->ms += profile.opMs[i] / profile.steps;
      total += profile.opMs[i] / profile.steps;
    }
    std::fprintf(stderr,
                 "\nper-op GPU time, mean of %d steps of %d tokens (padded; "
                 "each op timed alone, no graph):\n%-28s %6s %10s %10s %6s\n",
                 profile.steps, tokens, "op", "count", "us/op", "us/step",
                 "share");
    for (const Row &r : rows)
      std::fprintf(stderr, "%-28s %6d %10.2f %10.1f %5.1f%%\n", r.what.c_str(),
                   r.count, 1000.0 * r.ms / r.count, 1000.0 * r.ms,
                   100.0 * r.ms / total);
    std::fprintf(stderr, "%-28s %6zu %10s %10.1f\n", "total",
                 profile.opMs.size(), "", 1000.0 * total);
  }
}

CUdeviceptr CudaExecutor::buffer(int index) const {
  if (index < 4)
    return inputs_.address() + inputOffsets_[index];
  const fb::Buffer *b = plan_.plan().buffers()->Get(index);
  return arena_.address() +
         slotOffsets_.at(static_cast<size_t>(b->arena_slot()));
}

bool CudaExecutor::fillRandomWeightOnDevice(int index, bool bf16Read) {
  const RandomWeightsSpec spec;
  const KernelInstance instance = spec.instance();
  if (!kernels_.count(instance.nameExpression))
    return false; // a plan of an older solc: the host makes them
  const fb::Weight &w = *plan_.plan().weights()->Get(index);
  const bool matrix = w.shape() && w.shape()->size() >= 2;
  const DType dtype = toDType(w.dtype());
  int kind;
  switch (dtype) {
  case DType::BF16:
    kind = matrix ? kernels::kRandomBf16Matrix : kernels::kRandomBf16Vector;
    break;
  case DType::F32:
    kind = bf16Read ? kernels::kRandomF32AsBf16 : kernels::kRandomF32;
    break;
  case DType::F8E4M3:
    kind = kernels::kRandomE4m3;
    break;
  case DType::I8:
    kind = kernels::kRandomI8;
    break;
  case DType::U8:
    kind = kernels::kRandomU8;
    break;
  case DType::I4:
    kind = kernels::kRandomI4;
    break;
  default:
    return false; // the host's values (float16)
  }
  const long long count = static_cast<long long>(
      dtype == DType::I4 ? weightStorageBytes(w)
                         : weightStorageBytes(w) / (dtypeBits(dtype) / 8));
  kernel(instance).launch(
      spec.dims(count), stream_,
      RandomWeightsArgs{.out = weight(index),
                        .seed = randomWeightSeed(w, index, rank_.rank),
                        .count = count,
                        .kind = kind});
  return true;
}

CUdeviceptr CudaExecutor::weight(int index) const {
  return weights_.address() + weightOffsets_[static_cast<size_t>(index)];
}

const Kernel &CudaExecutor::kernel(const KernelInstance &instance) {
  auto it = kernels_.find(instance.nameExpression);
  if (it == kernels_.end())
    fail("the plan lacks kernel ", instance.nameExpression,
         "; compile the model again with this version's solc");
  return it->second;
}

void CudaExecutor::validate(const StepBatch &b, const StepOutput &out) const {
  const size_t t = b.tokens.size();
  if (t == 0)
    fail("a step needs at least one token");
  if (t > static_cast<size_t>(maxTokens_))
    fail("a step of ", t, " tokens exceeds the plan's ", maxTokens_,
         " (solc --max-num-batched-tokens)");
  if (b.positions.size() != t || b.tokenSeq.size() != t)
    fail("step inputs disagree: ", t, " tokens but ", b.positions.size(),
         " positions and ", b.tokenSeq.size(), " sequence indices");
  if (b.numSeqs <= 0 || b.numSeqs > maxSeqsCap_)
    fail("a step holds 1..", maxSeqsCap_, " sequences, got ", b.numSeqs);
  if (b.maxBlocksPerSeq <= 0 || b.maxBlocksPerSeq > maxBlocksPerSeqCap_)
    fail("block tables of ", b.maxBlocksPerSeq,
         " blocks per sequence exceed the ", maxBlocksPerSeqCap_,
         " that --max-model-len allows");
  if (b.blockTables.size() !=
      static_cast<size_t>(b.numSeqs) * static_cast<size_t>(b.maxBlocksPerSeq))
    fail("block tables hold ", b.blockTables.size(), " entries, expected ",
         b.numSeqs, " x ", b.maxBlocksPerSeq);
  for (size_t i = 0; i < t; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= vocab_)
      fail("token ", i, " has id ", b.tokens[i], " but the vocabulary has ",
           vocab_, " ids");
    if (b.tokenSeq[i] < 0 || b.tokenSeq[i] >= b.numSeqs)
      fail("token ", i, " belongs to sequence ", b.tokenSeq[i], " of ",
           b.numSeqs);
    if (b.positions[i] < 0 || b.positions[i] >= maxModelLen_ ||
        b.positions[i] / blockSize_ >= b.maxBlocksPerSeq)
      fail("token ", i, " has position ", b.positions[i],
           " outside its sequence's ", b.maxBlocksPerSeq * blockSize_,
           " cached positions");
  }
  for (int32_t block : b.blockTables)
    if (block < 0 || block >= numKvBlocks_)
      fail("block id ", block, " outside the KV cache's ", numKvBlocks_,
           " blocks");
  const size_t r = b.logitRows.size();
  if (r == 0 || r > t)
    fail("a step returns 1..", t, " logits rows, got ", r);
  for (int32_t row : b.logitRows)
    if (row < 0 || static_cast<size_t>(row) >= t)
      fail("logits row ", row, " outside the step's ", t, " tokens");
  if (!out.logits.empty() &&
      out.logits.size() != r * static_cast<size_t>(vocab_))
    fail("the logits output holds ", out.logits.size(), " floats, expected ", r,
         " x ", vocab_);
  if (!out.argmax.empty() && out.argmax.size() != r)
    fail("the argmax output holds ", out.argmax.size(), " ids, expected ", r);
  sampling::validateSampling(b, out, vocab_);
  if (b.penalties.ids.size() + b.logitBias.ids.size() > kMaxPenaltyEntries)
    fail("the step's penalty and logit-bias lists hold ",
         b.penalties.ids.size() + b.logitBias.ids.size(),
         " entries, more than the CUDA executor's ", kMaxPenaltyEntries,
         "; split the batch over more steps");
  if (sampling::stepNeedsSampling(b, out) &&
      !kernels_.count(SamplingSpec{}.instance().nameExpression))
    fail("the plan lacks the sampling kernel ",
         SamplingSpec{}.instance().nameExpression,
         " (needed for temperature, penalties, logit bias or logprobs); "
         "compile the "
         "model again with this version's solc");
}

std::size_t CudaExecutor::stageSampling(const StepBatch &b,
                                        std::byte *host) const {
  const int rows = static_cast<int>(b.logitRows.size());
  const SamplingInputs in =
      samplingInputs(inputOffsets_[4] + b.blockTables.size_bytes(), rows);
  if (b.sampling.empty()) {
    const SamplingRow greedy;
    for (int r = 0; r < rows; ++r)
      std::memcpy(host + in.params + sizeof(SamplingRow) * r, &greedy,
                  sizeof greedy);
  } else {
    std::memcpy(host + in.params, b.sampling.data(), b.sampling.size_bytes());
  }
  // One CSR list per row: its penalty entries, then its bias entries (id
  // with kBiasBit set, the bias's float bits).
  auto *offsets = reinterpret_cast<int32_t *>(host + in.offsets);
  auto *entries = reinterpret_cast<int32_t *>(host + in.entries);
  const PenaltyTokens &p = b.penalties;
  const LogitBias &bias = b.logitBias;
  std::size_t e = 0;
  offsets[0] = 0;
  for (int r = 0; r < rows; ++r) {
    if (!p.offsets.empty())
      for (auto i = static_cast<std::size_t>(p.offsets[r]);
           i < static_cast<std::size_t>(p.offsets[r + 1]); ++i, ++e) {
        entries[2 * e] = p.ids[i];
        entries[2 * e + 1] = static_cast<int32_t>(
            static_cast<uint32_t>(p.outputCounts[i]) |
            (p.inPrompt[i] ? SamplingSpec::kInPromptBit : 0u));
      }
    if (!bias.offsets.empty())
      for (auto i = static_cast<std::size_t>(bias.offsets[r]);
           i < static_cast<std::size_t>(bias.offsets[r + 1]); ++i, ++e) {
        entries[2 * e] = static_cast<int32_t>(
            static_cast<uint32_t>(bias.ids[i]) | SamplingSpec::kBiasBit);
        std::memcpy(&entries[2 * e + 1], &bias.values[i], sizeof(float));
      }
    offsets[r + 1] = static_cast<int32_t>(e);
  }
  return in.entries + e * SamplingSpec::kPenaltyEntryBytes;
}

void CudaExecutor::launchSampling(const StepShape &shape,
                                  const LaunchDims &dims) {
  const KernelLaunch l = selectSampling(shape.outputs);
  const SamplingInputs in = samplingInputs(
      inputOffsets_[4] + sizeof(int32_t) *
                             static_cast<std::size_t>(shape.numSeqs) *
                             static_cast<std::size_t>(shape.maxBlocks),
      shape.outputs);
  const SamplingResults res = samplingResults(shape.outputs, shape.numTop);
  const CUdeviceptr base = samplingOut_.address(), null = 0;
  const CUdeviceptr ids = base;
  const CUdeviceptr logprobs = shape.logprobs ? base + res.logprobs : null;
  const CUdeviceptr topIds = shape.numTop > 0 ? base + res.topIds : null;
  const CUdeviceptr topLogprobs =
      shape.numTop > 0 ? base + res.topLogprobs : null;
  const CUdeviceptr logits = buffer(ops_.back().buffers[0]);
  kernel(l.instance)
      .launch(dims, stream_,
              SamplingArgs{.outIds = ids,
                           .outLogprobs = logprobs,
                           .outTopIds = topIds,
                           .outTopLogprobs = topLogprobs,
                           .logits = logits,
                           .params = inputs_.address() + in.params,
                           .penaltyOffsets = inputs_.address() + in.offsets,
                           .penaltyEntries = inputs_.address() + in.entries,
                           .penaltySaved = penaltySaved_.address(),
                           .rows = shape.outputs,
                           .vocab = static_cast<int>(vocab_),
                           .numTop = shape.numTop});
}

bool CudaExecutor::prefillAttentionUsable(const OpDesc &d) const {
  if (d.kind != OpKind::Attention)
    return false;
  // prefill_attention over a bf16 cache, prefill_attention_fp8 over an fp8
  // one; the op's cache dtype must be the plan's.
  const PrefillAttentionSpec spec = prefillAttentionSpec(d);
  return spec.kvFp8 == kvFp8() && spec.supported() &&
         kernels_.count(spec.instance().nameExpression);
}

bool CudaExecutor::anyPrefillAttention() const {
  return std::any_of(ops_.begin(), ops_.end(), [&](const OpDesc &d) {
    return prefillAttentionUsable(d);
  });
}

int CudaExecutor::stagePrefillTiles(const StepBatch &b, PinnedBuffer &host) {
  if (prefillTiles_.size() == 0 ||
      !usePrefillAttention(b.tokenSeq, b.positions))
    return 0;
  const std::vector<PrefillTile> tiles =
      planPrefillTiles(b.tokenSeq, b.positions, PrefillAttentionSpec::kRows);
  std::memcpy(host.data(), tiles.data(), tiles.size() * sizeof(PrefillTile));
  prefillTiles_.copyFromHost(host.data(), tiles.size() * sizeof(PrefillTile),
                             stream_);
  return static_cast<int>(tiles.size());
}

void CudaExecutor::stageChunkTiles(const StepBatch &b, std::byte *host,
                                   StepShape &shape) {
  if (!chunkAttention_ || shape.fusedRope || shape.prefillTiles > 0 ||
      shape.tokens > kMaxGraphTokens)
    return;
  const std::vector<PrefillTile> tiles =
      planChunkTiles(b.tokenSeq, b.positions, chunkAttention_->tokensPerTile());
  const int n = static_cast<int>(tiles.size());
  const int splits =
      chunkAttention_->chooseSplits(n, kPlannedMultiprocessors, clusterMerge_);
  int maxContext = 0;
  for (std::size_t i = 0; i < b.tokenSeq.size(); ++i)
    if (b.tokenSeq[i] >= 0)
      maxContext = std::max(maxContext, b.positions[i] + 1);
  // The split count paged_attention would run this step at.
  const int pagedSplits =
      attentionSplits(ops_.at(chunkAttentionOp_), shape.tokens,
                      shape.maxBlocks * blockSize_, clusterMerge_);
  if (!chunkAttention_->fits(n, splits, maxContext, pagedSplits,
                             kPlannedMultiprocessors))
    return;
  std::memcpy(host + chunkTilesOffset_, tiles.data(),
              tiles.size() * sizeof(PrefillTile));
  shape.chunkTiles = n;
  shape.chunkSplits = splits;
}

void CudaExecutor::launchOps(const StepShape &shape) {
  launchOps(shape, 0, ops_.size());
}

template <typename Args>
void CudaExecutor::launchGemm(const std::vector<KernelLaunch> &launches,
                              std::size_t at, Args args, int n) {
  const KernelLaunch &g = launches.at(at);
  const Kernel &gemm = kernel(g.instance);
  raiseSharedLimit(gemm, g);
  if (launches.size() == at + 1 ||
      !isSplitKFinalize(launches[at + 1].instance)) {
    gemm.launch(g.dims, stream_, args);
    return;
  }
  // Split K: partial sums into the workspace, then bias and epilogue.
  const SplitKFinalizeArgs finalize{.y = args.y,
                                    .partial = splitKWorkspace_.address(),
                                    .bias = args.bias,
                                    .rows = args.rows,
                                    .n = n};
  args.y = finalize.partial;
  args.bias = nullptr;
  gemm.launch(g.dims, stream_, args);
  const KernelLaunch &f = launches[at + 1];
  kernel(f.instance).launch(f.dims, stream_, finalize);
}

void CudaExecutor::launchLinear(const std::vector<KernelLaunch> &launches,
                                std::size_t at, CUdeviceptr y, CUdeviceptr x,
                                CUdeviceptr w, CUdeviceptr bias, int rows,
                                int n, int k) {
  launchGemm(
      launches, at,
      LinearArgs{
          .y = y, .x = x, .w = w, .bias = bias, .rows = rows, .n = n, .k = k},
      n);
}

void CudaExecutor::launchQuantGemm(const std::vector<KernelLaunch> &launches,
                                   std::size_t at, const OpDesc &d,
                                   CUdeviceptr y, CUdeviceptr x, int rows) {
  const QuantLinearArgs q = quantLinearArgs(d, y, x, 0, rows);
  launchGemm(launches, at,
             QuantGemmArgs{.y = y,
                           .x = x,
                           .w = q.w,
                           .scales = q.scales,
                           .zeros = q.zeros,
                           .bias = q.bias,
                           .rows = rows,
                           .n = q.n,
                           .k = q.k},
             q.n);
}

bool CudaExecutor::cublasUsable(const OpDesc &d, int rows) const {
  if (!cublas_ || rows < kCublasMinRows || d.outDtype != fb::DType::BF16)
    return false;
  const bool norm = d.kind == OpKind::NormLinear;
  const std::vector<int64_t> &w = d.weightShapes.at(norm ? 1 : 0);
  if (isGated(linearEpilogue(d)) &&
      (!kernels_.count(SwigluPairsSpec{static_cast<int>(w.at(0) / 2)}
                           .instance()
                           .nameExpression) ||
       gemmScratch_.size() < static_cast<std::size_t>(rows) *
                                 static_cast<std::size_t>(w.at(0)) * 2))
    return false;
  // A NormLinear whose norm is the prologue of linear_gemv or linear_skinny
  // also needs the norm kernel on its own.
  return !(
      norm &&
      !kernels_.count(
          RmsNormSpec{static_cast<int>(w.at(1))}.instance().nameExpression));
}

template <typename Gemm>
void CudaExecutor::cublasEpilogue(const OpDesc &d, int rows, CUdeviceptr y,
                                  const Gemm &gemm) {
  switch (linearEpilogue(d)) {
  case LinearEpilogue::None:
    gemm(y, false);
    return;
  case LinearEpilogue::Residual: // y += x . W^T + bias, in place
    gemm(y, true);
    return;
  case LinearEpilogue::Swiglu:
  case LinearEpilogue::Geglu: {
    const int n = static_cast<int>(
        d.weightShapes.at(d.kind == OpKind::NormLinear ? 1 : 0).at(0));
    const SwigluPairsSpec spec{n / 2};
    const KernelInstance instance = spec.instance();
    const CUdeviceptr pairs = gemmScratch_.address();
    gemm(pairs, false);
    kernel(instance).launch(
        spec.dims(rows), stream_,
        SwigluArgs{.out = y,
                   .gateUp = pairs,
                   .tokens = rows,
                   .geluTanh = linearEpilogue(d) == LinearEpilogue::Geglu});
    return;
  }
  }
}

bool CudaExecutor::cublasLinear(const OpDesc &d, int rows, CUdeviceptr y,
                                CUdeviceptr x, CUdeviceptr w, CUdeviceptr bias,
                                int n, int k) {
  if (!cublasUsable(d, rows))
    return false;
  cublasEpilogue(d, rows, y, [&](CUdeviceptr out, bool accumulate) {
    cublas_->linear(stream_.handle(), out, x, w, bias, rows, n, k, accumulate,
                    cublasWorkspace_.address(), cublasWorkspace_.size());
  });
  return true;
}

bool CudaExecutor::fp8GemmUsable(std::size_t op, int rows) const {
  return op < fp8Gemm_.size() && fp8Gemm_[op] &&
         (rows + kFp8GemmRows - 1) / kFp8GemmRows * kFp8GemmRows <=
             maxTokens_ &&
         cublasUsable(ops_[op], rows);
}

void CudaExecutor::fp8Linear(std::size_t op, int stepRows, CUdeviceptr y,
                             CUdeviceptr x, bool dependentQuantize,
                             CUdeviceptr normWeight) {
  const OpDesc &d = ops_[op];
  // cuBLASLt's block-scaled GEMMs take rows in multiples of 16: the rows
  // past the step's are computed from whatever x holds there and land in
  // rows of y that nothing reads (every buffer has maxTokens_ rows).
  const int rows = (stepRows + kFp8GemmRows - 1) / kFp8GemmRows * kFp8GemmRows;
  const QuantLinearArgs q = quantLinearArgs(d, y, x, 0, rows);
  const QuantizeRowsFp8Spec spec{q.k, normWeight != 0};
  LaunchDims dims = spec.dims(rows);
  dims.dependent = dependentQuantize;
  const Kernel &quantize = kernel(spec.instance());
  if (normWeight)
    quantize.launch(dims, stream_,
                    NormQuantizeRowsArgs{.codes = fp8Codes_.address(),
                                         .scales = fp8Scales_.address(),
                                         .x = x,
                                         .weight = normWeight,
                                         .eps = d.eps,
                                         .rows = rows});
  else
    quantize.launch(dims, stream_,
                    QuantizeRowsArgs{.codes = fp8Codes_.address(),
                                     .scales = fp8Scales_.address(),
                                     .x = x,
                                     .rows = rows});
  if (const Fp8WgmmaOp *w = fp8Wgmma_[op].get();
      w &&
      w->spec.outrunsCublas(rows, q.n, q.k, context_.multiprocessorCount())) {
    // The epilogue (residual, SwiGLU) is the kernel's; the scales of x are
    // the first of its 128-k blocks (rows fastest).
    LaunchDims gemm = w->spec.dims(rows, q.n, context_.multiprocessorCount());
    gemm.dependent = dependentLaunch_;
    const Kernel &k = kernel(w->spec.instance());
    raiseSharedLimit(k, KernelLaunch{w->spec.instance(), gemm});
    k.launch(gemm, stream_,
             kernels::Fp8GemmArgs{.x = w->x,
                                  .w = w->w,
                                  .y = y,
                                  .xScales = fp8Scales_.address(),
                                  .wScales = q.scales,
                                  .bias = q.bias,
                                  .rows = rows,
                                  .n = q.n,
                                  .k = q.k});
    return;
  }
  cublasEpilogue(d, rows, y, [&](CUdeviceptr out, bool accumulate) {
    cublas_->fp8Linear(
        stream_.handle(), out, fp8Codes_.address(), fp8Scales_.address(),
        q.w.value, fp8WeightScales_.address() + 4 * fp8WeightScaleOffsets_[op],
        q.bias.value, rows, q.n, q.k, accumulate, cublasWorkspace_.address(),
        cublasWorkspace_.size());
  });
}

void CudaExecutor::raiseSharedLimit(const Kernel &k, const KernelLaunch &l) {
  if (l.dims.sharedBytes > 48 * 1024 &&
      !sharedRaised_[l.instance.nameExpression]) {
    k.setMaxDynamicSharedMemory(static_cast<int>(l.dims.sharedBytes));
    sharedRaised_[l.instance.nameExpression] = true;
  }
}

void CudaExecutor::launchOps(const StepShape &shape, std::size_t begin,
                             std::size_t end) {
  const fb::Plan &plan = plan_.plan();
  const int maxContext = shape.maxBlocks * blockSize_;
  const CUdeviceptr blockTables = inputs_.address() + inputOffsets_[4];
  const CUdeviceptr positions = buffer(1), tokenSeq = buffer(2);
  const CUdeviceptr null = 0;
  // The step's first kernel follows the input copy; every later one may
  // start while its predecessor drains (programmatic dependent launch).
  bool first = begin == 0;
  auto dependent = [&](LaunchDims dims) {
    dims.dependent = dependentLaunch_ && !first;
    first = false;
    return dims;
  };
  if (begin == 0)
    gatherAliases_.clear();
  for (size_t i = begin; i < end; ++i) {
    const OpDesc &d = ops_[i];
    const int rows = opRows(d, shape.tokens, shape.outputs);
    if (shape.identityRows &&
        std::ranges::count(lowering_.skippableGathers, static_cast<int>(i))) {
      // The rows it would gather are already in place: later ops read its
      // input instead of its output.
      gatherAliases_.emplace_back(d.buffers[0], d.buffers[1]);
      continue;
    }
    if (d.kind == OpKind::Moe) {
      launchMoe(d, rows, dependent);
      continue;
    }
    if (d.kind == OpKind::AllReduce || d.kind == OpKind::AllGather) {
      // NCCL's kernels on this stream; the next kernel waits for them in
      // full (no programmatic overlap).
      runCollective(d, rows);
      first = true;
      continue;
    }
    if (d.kind == OpKind::ConcatColumns) {
      // Strided copies of each input's columns; the next kernel waits for
      // them in full (no programmatic overlap).
      const CUdeviceptr out = buffer(d.buffers[0]);
      const auto outPitch = static_cast<std::size_t>(d.bufferWidths[0]) * 2;
      std::size_t at = 0;
      for (std::size_t j = 1; j < d.buffers.size(); ++j) {
        const auto col = static_cast<std::size_t>(d.columns.at(j - 1));
        const auto cols = static_cast<std::size_t>(d.widths.at(j - 1));
        CUDA_MEMCPY2D copy{};
        copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        copy.srcDevice = buffer(d.buffers[j]) + col * 2;
        copy.srcPitch = static_cast<std::size_t>(d.bufferWidths[j]) * 2;
        copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        copy.dstDevice = out + at * 2;
        copy.dstPitch = outPitch;
        copy.WidthInBytes = cols * 2;
        copy.Height = static_cast<std::size_t>(rows);
        if (rows > 0)
          checkCuda(driverApi().memcpy2DAsync(&copy, stream_.handle()),
                    "cuMemcpy2DAsync(concat_columns)");
        at += cols;
      }
      first = true;
      continue;
    }
    std::vector<KernelLaunch> launches =
        selectKernels(d, rows, maxContext, shape.fusedRope, clusterMerge_,
                      headNormFused_[i], addNormFused_[i]);
    if (launches.empty())
      continue;
    for (KernelLaunch &launch : launches)
      launch.dims = dependent(launch.dims);
    // A quantized W read as bf16 by this step's kernels: its copy first;
    // fp8 weights the W8A8 GEMM takes need none.
    CUdeviceptr dequantized = 0;
    bool fp8Gemm = false, fp8Dependent = false;
    if (isDequantize(launches[0].instance) && fp8GemmUsable(i, rows)) {
      fp8Gemm = true;
      fp8Dependent = launches[0].dims.dependent;
      launches.erase(launches.begin());
    } else if (isDequantize(launches[0].instance)) {
      launchDequantize(d, launches[0]);
      dequantized = dequantScratch_.address();
      launches.erase(launches.begin());
      // The kernels after it load weights before they wait for their
      // predecessor: the first must not start before the copy is done.
      launches.front().dims.dependent = false;
    }
    const KernelLaunch &l = launches[0];
    const Kernel &k = kernel(l.instance);
    raiseSharedLimit(k, l);
    auto buf = [&](unsigned j) {
      int id = d.buffers[j];
      for (const auto &[out, in] : gatherAliases_)
        id = id == out ? in : id;
      return buffer(id);
    };
    auto w = [&](unsigned j) { return weight(d.weights[j]); };
    switch (d.kind) {
    case OpKind::Embedding: {
      EmbeddingArgs args{.out = buf(0),
                         .table = w(0),
                         .ids = buf(1),
                         .tokens = rows,
                         .scale = d.embeddingScale};
      LaunchDims dims = l.dims;
      switch (shape.chain) {
      case ChainSource::None:
        break;
      case ChainSource::Ids:
        args.previousIds = argmaxOut_.address();
        break;
      case ChainSource::Sampled:
        args.previousIds = samplingOut_.address(); // the ids come first
        break;
      case ChainSource::Key:
        args.previousKey = inputs_.address() + argmaxKeyOffset_;
        args.clearKey = 1;
        dims.grid = EmbeddingSpec{static_cast<int>(d.bufferWidths[0])}
                        .keyChainedDims()
                        .grid;
        break;
      case ChainSource::KeyCopy:
        args.previousKey = chainKey_.address();
        break;
      }
      k.launch(dims, stream_, args);
      break;
    }
    case OpKind::RmsNorm: {
      const int width = static_cast<int>(d.bufferWidths[0]);
      k.launch(l.dims, stream_,
               RmsNormArgs{.out = buf(0),
                           .x = buf(1),
                           .residual = d.hasResidual() ? buf(2) : null,
                           .weight = w(0),
                           .eps = d.eps,
                           .rows = rows,
                           .xStride = width,
                           .outStride = width,
                           .rowGroup = 1,
                           .inputWeight = d.hasSecondNormWeight() ? w(1) : null,
                           .inputEps = d.inputEps});
      break;
    }
    case OpKind::HeadRmsNorm: {
      const int qkvWidth = static_cast<int>(d.bufferWidths[0]);
      const int col = static_cast<int>(d.column),
                heads = static_cast<int>(d.heads + d.secondHeads);
      const CUdeviceptr x = buf(0) + static_cast<CUdeviceptr>(col) * 2;
      const bool second = d.hasSecondNormWeight();
      k.launch(l.dims, stream_,
               RmsNormArgs{.out = x,
                           .x = x,
                           .weight = w(0),
                           .eps = d.eps,
                           .rows = rows * heads,
                           .xStride = qkvWidth,
                           .outStride = qkvWidth,
                           .rowGroup = heads,
                           .secondWeight = second ? w(1) : null,
                           .secondFrom = static_cast<int>(d.heads)});
      break;
    }
    case OpKind::Linear: {
      CUdeviceptr y = buf(0), x = buf(1), wt = dequantized ? dequantized : w(0);
      CUdeviceptr bias = d.hasBias() ? w(1) : null;
      int n = static_cast<int>(d.weightShapes[0][0]);
      int kdim = static_cast<int>(d.weightShapes[0][1]);
      if (shape.fusedArgmax && i + 1 == ops_.size()) {
        launchArgmaxHead(y, x, wt, null, 0.0f, n);
        break;
      }
      if (fp8Gemm) {
        fp8Linear(i, rows, y, x, fp8Dependent);
        break;
      }
      if (addNormFused_[i] != GemvAddNorm::None && rows == 1) {
        // The RmsNorm op before it (skipped) in linear_gemv's prologue: its
        // input and residual instead of x.
        const OpDesc &norm =
            ops_[static_cast<std::size_t>(lowering_.linearAddNorm[i])];
        auto normBuffer = [&](unsigned j) {
          int id = norm.buffers[j];
          for (const auto &[out, in] : gatherAliases_)
            id = id == out ? in : id;
          return buffer(id);
        };
        launchGemm(launches, 0,
                   LinearArgs{.y = y,
                              .x = normBuffer(1),
                              .w = wt,
                              .bias = bias,
                              .normWeight = weight(norm.weights[0]),
                              .rows = rows,
                              .n = n,
                              .k = kdim,
                              .eps = norm.eps,
                              .residual = normBuffer(2),
                              .inputNormWeight = norm.hasSecondNormWeight()
                                                     ? weight(norm.weights[1])
                                                     : null,
                              .arrivals = addNormArrivals_.address(),
                              .inputEps = norm.inputEps},
                   n);
        break;
      }
      if (isQuantSinglePass(l.instance)) { // reads the quantized W
        k.launch(l.dims, stream_, quantLinearArgs(d, y, x, 0, rows));
        break;
      }
      if (isQuantGemm(l.instance)) {
        launchQuantGemm(launches, 0, d, y, x, rows);
        break;
      }
      if (!cublasLinear(d, rows, y, x, wt, bias, n, kdim))
        launchLinear(launches, 0, y, x, wt, bias, rows, n, kdim);
      break;
    }
    case OpKind::NormLinear: {
      // weights: norm, W[, bias]; buffers: out, in, normed (scratch).
      CUdeviceptr y = buf(0), x = buf(1), normed = buf(2), normW = w(0),
                  wt = dequantized ? dequantized : w(1);
      CUdeviceptr bias = d.hasBias() ? w(2) : null;
      int n = static_cast<int>(d.weightShapes[1][0]);
      int kdim = static_cast<int>(d.weightShapes[1][1]);
      if (shape.fusedArgmax && i + 1 == ops_.size()) {
        launchArgmaxHead(y, x, wt, normW, d.eps, n);
        break;
      }
      if (isQuantSinglePass(l.instance)) { // the norm in its prologue
        k.launch(l.dims, stream_, quantLinearArgs(d, y, x, normW, rows));
        break;
      }
      const RmsNormArgs norm{.out = normed,
                             .x = x,
                             .weight = normW,
                             .eps = d.eps,
                             .rows = rows,
                             .xStride = kdim,
                             .outStride = kdim,
                             .rowGroup = 1};
      if (launches.size() > 1 && isQuantGemm(launches[1].instance)) {
        // rms_norm into the scratch buffer, then the mixed-input GEMM.
        k.launch(l.dims, stream_, norm);
        launchQuantGemm(launches, 1, d, y, normed, rows);
        break;
      }
      if (launches.size() > 1 && isQuantSinglePass(launches[1].instance)) {
        // rms_norm into the scratch buffer, then the quantized kernel.
        k.launch(l.dims, stream_, norm);
        const KernelLaunch &q = launches[1];
        const Kernel &quant = kernel(q.instance);
        raiseSharedLimit(quant, q);
        quant.launch(q.dims, stream_, quantLinearArgs(d, y, normed, 0, rows));
        break;
      }
      if (fp8Gemm) {
        // The norm and the activations' quantization in one kernel; plans
        // without it run rms_norm into the scratch buffer first.
        if (kernels_.count(
                QuantizeRowsFp8Spec{kdim, true}.instance().nameExpression)) {
          fp8Linear(i, rows, y, x, l.dims.dependent, normW);
        } else {
          k.launch(l.dims, stream_, norm);
          fp8Linear(i, rows, y, normed, true);
        }
        break;
      }
      // Few rows: one launch of linear_gemv or linear_skinny, the norm in
      // its prologue.
      const bool fusedNorm = isSinglePassLinear(l.instance);
      const bool viaCublas = cublasUsable(d, rows);
      if (fusedNorm && !viaCublas) {
        k.launch(l.dims, stream_,
                 LinearArgs{.y = y,
                            .x = x,
                            .w = wt,
                            .bias = bias,
                            .normWeight = normW,
                            .rows = rows,
                            .n = n,
                            .k = kdim,
                            .eps = d.eps});
        break;
      }
      // Normalise into the scratch buffer, then the GEMM. A fused launch has
      // no norm launch of its own in `launches`.
      if (fusedNorm) {
        const RmsNormSpec spec{kdim};
        kernel(spec.instance())
            .launch(dependent(spec.dims(rows)), stream_, norm);
      } else {
        k.launch(l.dims, stream_, norm);
      }
      if (!cublasLinear(d, rows, y, normed, wt, bias, n, kdim))
        launchLinear(launches, 1, y, normed, wt, bias, rows, n, kdim);
      break;
    }
    case OpKind::RopeKvWrite: {
      const int layer = static_cast<int>(d.layer),
                rope = static_cast<int>(d.rope);
      const CUdeviceptr qkv = buf(0);
      const CUdeviceptr kc = kvCache_.address() + kvLayerBytes_ * layer;
      const CUdeviceptr vc = kc + kvArrayBytes_;
      const CUdeviceptr invFreq =
          ropes_.address() + ropeOffsets_.at(static_cast<size_t>(rope));
      const fb::RopeTable *table =
          plan.rope()->Get(static_cast<unsigned>(rope));
      // The fp8 cache's scales follow its values (null for bf16).
      const CUdeviceptr ks = kvFp8() ? vc + kvArrayBytes_ : null;
      const CUdeviceptr vs = kvFp8() ? ks + kvScaleBytes_ : null;
      k.launch(l.dims, stream_,
               RopeKvWriteArgs{.qkv = qkv,
                               .kCache = kc,
                               .vCache = vc,
                               .kScales = ks,
                               .vScales = vs,
                               .invFreq = invFreq,
                               .positions = positions,
                               .tokenSeq = tokenSeq,
                               .blockTables = blockTables,
                               .attentionScaling = table->attention_scaling(),
                               .maxBlocks = shape.maxBlocks,
                               .tokens = rows,
                               .ropeLongFrom = ropeLongFrom(*table)});
      break;
    }
    case OpKind::Attention: {
      const int layer = static_cast<int>(d.layer);
      const int window = static_cast<int>(d.slidingWindow);
      const CUdeviceptr out = buf(0), qkv = buf(1);
      const CUdeviceptr kc = kvCache_.address() + kvLayerBytes_ * layer;
      const CUdeviceptr vc = kc + kvArrayBytes_;
      // The fp8 cache's scales follow its values (null for bf16).
      const CUdeviceptr ks = kvFp8() ? vc + kvArrayBytes_ : null;
      const CUdeviceptr vs = kvFp8() ? ks + kvScaleBytes_ : null;
      const CUdeviceptr sinks = d.hasSinks() ? w(0) : null;
      // prefill_attention or chunk_attention, over tiles planned on the host.
      auto tiled = [&](CUdeviceptr tiles) {
        return TiledAttentionArgs{.out = out,
                                  .qkv = qkv,
                                  .kCache = kc,
                                  .vCache = vc,
                                  .kScales = ks,
                                  .vScales = vs,
                                  .positions = positions,
                                  .tokenSeq = tokenSeq,
                                  .blockTables = blockTables,
                                  .tiles = tiles,
                                  .maxBlocks = shape.maxBlocks,
                                  .scale = d.scale,
                                  .slidingWindow = window,
                                  .softcap = d.softcap,
                                  .sinks = sinks};
      };
      if (shape.prefillTiles > 0 && prefillAttentionUsable(d)) {
        const PrefillAttentionSpec spec = prefillAttentionSpec(d);
        const KernelLaunch p{spec.instance(),
                             dependent(spec.dims(shape.prefillTiles))};
        const Kernel &pk = kernel(p.instance);
        raiseSharedLimit(pk, p);
        pk.launch(p.dims, stream_, tiled(prefillTiles_.address()));
        break;
      }
      if (shape.chunkTiles > 0) {
        const KernelLaunch c{chunkAttention_->instance(),
                             dependent(chunkAttention_->dims(
                                 shape.chunkTiles, shape.chunkSplits))};
        const Kernel &ck = kernel(c.instance);
        raiseSharedLimit(ck, c);
        ck.launch(c.dims, stream_,
                  tiled(inputs_.address() + chunkTilesOffset_));
        break;
      }
      const bool split = l.dims.grid.y > 1;
      PagedAttentionArgs args{
          .out = out,
          .qkv = qkv,
          .kCache = kc,
          .vCache = vc,
          .kScales = ks,
          .vScales = vs,
          .positions = positions,
          .tokenSeq = tokenSeq,
          .blockTables = blockTables,
          .partials = split ? attentionWorkspace_.address() : null,
          .arrivals = split ? attentionArrivals_.address() : null,
          .maxBlocks = shape.maxBlocks,
          .scale = d.scale,
          .slidingWindow = window,
          .tokens = rows,
          .softcap = d.softcap,
          .sinks = sinks};
      // The fused variant rotates q and k and appends k and v itself.
      if (shape.fusedRope) {
        const auto rope = static_cast<std::size_t>(
            ops_.at(static_cast<std::size_t>(
                        lowering_.attentionRopeKvWrite.at(i)))
                .rope);
        args.invFreq = ropes_.address() + ropeOffsets_.at(rope);
        const fb::RopeTable *table =
            plan.rope()->Get(static_cast<unsigned>(rope));
        args.attentionScaling = table->attention_scaling();
        args.ropeLongFrom = ropeLongFrom(*table);
        // And the q/k head norm of the HeadRmsNorm op it absorbs.
        if (headNormFused_[i]) {
          const OpDesc &norm = ops_.at(
              static_cast<std::size_t>(lowering_.attentionHeadNorm.at(i)));
          args.qNormWeight = weight(norm.weights.at(0));
          args.kNormWeight = weight(norm.weights.back());
          args.normEps = norm.eps;
        }
      }
      k.launch(l.dims, stream_, args);
      break;
    }
    case OpKind::Swiglu:
      k.launch(
          l.dims, stream_,
          SwigluArgs{.out = buf(0),
                     .gateUp = buf(1),
                     .tokens = rows,
                     .geluTanh = d.activation == fb::GateActivation::GeluTanh});
      break;
    case OpKind::Softcap:
      k.launch(
          l.dims, stream_,
          SoftcapArgs{.values = buf(0),
                      .count = static_cast<long long>(rows) * d.bufferWidths[0],
                      .cap = d.softcap});
      break;
    case OpKind::GatherRows:
      k.launch(
          l.dims, stream_,
          GatherRowsArgs{
              .out = buf(0), .in = buf(1), .indices = buf(2), .rows = rows});
      break;
    case OpKind::GatherColumns:
      k.launch(l.dims, stream_,
               GatherColumnsArgs{.out = buf(0),
                                 .in = buf(1),
                                 .columns = columnTables_.address() +
                                            columnTableOffsets_.at(&d),
                                 .rows = rows});
      break;
    case OpKind::SigmoidGate:
      k.launch(l.dims, stream_,
               SigmoidGateArgs{.out = buf(0),
                               .value = buf(1),
                               .in = buf(2),
                               .weight = w(0),
                               .rows = rows});
      break;
    case OpKind::Add:
      k.launch(
          l.dims, stream_,
          AddArgs{.out = buf(0), .a = buf(1), .b = buf(2), .tokens = rows});
      break;
    case OpKind::ConcatColumns:
      break; // copies, above
    case OpKind::AllReduce:
    case OpKind::AllGather:
      break; // NCCL, above
    case OpKind::Moe:
      break; // its own launches, above
    }
  }
  if (shape.sampling && end == ops_.size())
    launchSampling(shape, dependent(selectSampling(shape.outputs).dims));
  if (shape.argmax && !shape.sampling && !shape.fusedArgmax &&
      end == ops_.size()) {
    const int vocab = static_cast<int>(vocab_);
    const ArgmaxSpec spec{vocab};
    const KernelLaunch a = selectArgmax(shape.outputs, vocab);
    const CUdeviceptr ws = argmaxWorkspace_.address();
    kernel(a.instance)
        .launch(dependent(a.dims), stream_,
                ArgmaxArgs{.out = argmaxOut_.address(),
                           .logits = buffer(ops_.back().buffers[0]),
                           .partialValue = ws,
                           // The workspace's layout, for maxTokens_ rows
                           // whatever this step's (ArgmaxSpec).
                           .partialIndex = ws + spec.indexOffset(maxTokens_),
                           .arrivals = ws + spec.arrivalOffset(maxTokens_),
                           .rows = shape.outputs,
                           .vocab = vocab});
  }
}

void CudaExecutor::launchMoe(
    const OpDesc &d, int rows,
    const std::function<LaunchDims(LaunchDims)> &dependent) {
  const CUdeviceptr base = moeWorkspace_.address();
  const CUdeviceptr logits = base, ids = base + moeIdsOffset_,
                    weights = base + moeWeightsOffset_,
                    act = base + moeActOffset_, out = base + moeOutOffset_;
  const OpDesc router = moeRouterLinear(d);
  std::vector<KernelLaunch> launches = selectKernels(router, rows, 0);
  for (KernelLaunch &l : launches)
    l.dims = dependent(l.dims);
  const int experts = static_cast<int>(router.weightShapes[0][0]);
  const int hidden = static_cast<int>(d.bufferWidths[1]);
  const bool biased = d.hasMoeBiases();
  auto bias = [&](std::size_t i) -> CUdeviceptr {
    return biased ? weight(d.weights[4 + i]) : 0;
  };
  // Quantized experts: gate's, up's and down's scales (i = 0..2) and int4's
  // zero points (3..5).
  auto quantWeight = [&](std::size_t i) -> CUdeviceptr {
    return i < d.moeQuantWeights() ? weight(d.weights[d.moeScalesWeight() + i])
                                   : 0;
  };
  const int groupSize = static_cast<int>(d.groupSize);
  launchLinear(launches, 0, logits, buffer(d.buffers[1]), weight(d.weights[0]),
               bias(0), rows, experts, hidden);
  const std::vector<KernelLaunch> moe = moeLaunches(d, rows);
  const int topK = static_cast<int>(d.topK);
  const MoeSpec::Path path = moePath(d, rows);
  if (path == MoeSpec::Path::Row) {
    kernel(moe[0].instance)
        .launch(dependent(moe[0].dims), stream_,
                MoeGateUpRowArgs{.act = act,
                                 .x = buffer(d.buffers[1]),
                                 .logits = logits,
                                 .gate = weight(d.weights[1]),
                                 .up = weight(d.weights[2]),
                                 .normalize = d.normalizeTopK ? 1 : 0,
                                 .activation = static_cast<int>(d.activation),
                                 .limit = d.activationLimit,
                                 .groupSize = groupSize,
                                 .gateBias = bias(1),
                                 .upBias = bias(2),
                                 .gateScales = quantWeight(0),
                                 .upScales = quantWeight(1),
                                 .gateZeros = quantWeight(3),
                                 .upZeros = quantWeight(4)});
    kernel(moe[1].instance)
        .launch(dependent(moe[1].dims), stream_,
                MoeDownRowArgs{.y = buffer(d.buffers[0]),
                               .act = act,
                               .down = weight(d.weights[3]),
                               .logits = logits,
                               .bias = bias(3),
                               .scales = quantWeight(2),
                               .zeros = quantWeight(5),
                               .groupSize = groupSize,
                               .normalize = d.normalizeTopK ? 1 : 0});
    return;
  }
  kernel(moe[0].instance)
      .launch(dependent(moe[0].dims), stream_,
              MoeRouteArgs{.ids = ids,
                           .weights = weights,
                           .logits = logits,
                           .rows = rows,
                           .normalize = d.normalizeTopK ? 1 : 0});
  if (path == MoeSpec::Path::Grouped) {
    // Many slots: sorted by expert, then the grouped GEMMs.
    const CUdeviceptr sorted = base + moeSortedOffset_;
    kernel(moe[1].instance)
        .launch(dependent(moe[1].dims), stream_,
                MoeSortArgs{
                    .sorted = sorted, .ids = ids, .rows = rows, .topK = topK});
    for (int i : {2, 3}) {
      const Kernel &k = kernel(moe[i].instance);
      raiseSharedLimit(k, moe[i]);
      const bool gateUp = i == 2;
      k.launch(dependent(moe[i].dims), stream_,
               MoeGroupedGemmArgs{.y = gateUp ? act : out,
                                  .x = gateUp ? buffer(d.buffers[1]) : act,
                                  .w0 = weight(d.weights[gateUp ? 1 : 3]),
                                  .w1 = gateUp ? weight(d.weights[2]) : 0,
                                  .sorted = sorted,
                                  .bias0 = bias(gateUp ? 1 : 3),
                                  .bias1 = gateUp ? bias(2) : 0,
                                  .rows = rows,
                                  .topK = topK,
                                  .activation = static_cast<int>(d.activation),
                                  .limit = d.activationLimit,
                                  .w0Scales = quantWeight(gateUp ? 0 : 2),
                                  .w1Scales = gateUp ? quantWeight(1) : 0,
                                  .w0Zeros = quantWeight(gateUp ? 3 : 5),
                                  .w1Zeros = gateUp ? quantWeight(4) : 0,
                                  .groupSize = groupSize});
    }
  } else {
    kernel(moe[1].instance)
        .launch(dependent(moe[1].dims), stream_,
                MoeGateUpArgs{.act = act,
                              .x = buffer(d.buffers[1]),
                              .gate = weight(d.weights[1]),
                              .up = weight(d.weights[2]),
                              .ids = ids,
                              .rows = rows,
                              .topK = topK,
                              .activation = static_cast<int>(d.activation),
                              .limit = d.activationLimit,
                              .gateBias = bias(1),
                              .upBias = bias(2),
                              .gateScales = quantWeight(0),
                              .upScales = quantWeight(1),
                              .gateZeros = quantWeight(3),
                              .upZeros = quantWeight(4),
                              .groupSize = groupSize});
    kernel(moe[2].instance)
        .launch(dependent(moe[2].dims), stream_,
                MoeDownArgs{.out = out,
                            .act = act,
                            .down = weight(d.weights[3]),
                            .ids = ids,
                            .rows = rows,
                            .topK = topK,
                            .bias = bias(3),
                            .scales = quantWeight(2),
                            .zeros = quantWeight(5),
                            .groupSize = groupSize});
  }
  kernel(moe.back().instance)
      .launch(dependent(moe.back().dims), stream_,
              MoeCombineArgs{.y = buffer(d.buffers[0]),
                             .out = out,
                             .weights = weights,
                             .ids = ids,
                             .rows = rows});
}

void CudaExecutor::runCollective(const OpDesc &d, int rows) {
  NcclGroup &nccl = *rank_.collectives;
  const std::size_t element = dtypeBits(toDType(d.outDtype)) / 8;
  if (d.kind == OpKind::AllReduce) {
    nccl.allReduceSum(rank_.rank, buffer(d.buffers[0]),
                      static_cast<std::size_t>(rows) *
                          static_cast<std::size_t>(d.bufferWidths[0]),
                      d.outDtype, stream_.handle());
    return;
  }
  // AllGather: NCCL leaves rank r's rows x width block at r * rows * width;
  // each block then goes to its columns of the output.
  const auto width = static_cast<std::size_t>(d.bufferWidths[1]);
  const std::size_t block = static_cast<std::size_t>(rows) * width;
  if (rows == 0)
    return;
  nccl.allGather(rank_.rank, buffer(d.buffers[1]), gathered_.address(), block,
                 d.outDtype, stream_.handle());
  for (int r = 0; r < nccl.ranks(); ++r) {
    CUDA_MEMCPY2D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = gathered_.address() + r * block * element;
    copy.srcPitch = width * element;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = buffer(d.buffers[0]) + r * width * element;
    copy.dstPitch = static_cast<std::size_t>(d.bufferWidths[0]) * element;
    copy.WidthInBytes = width * element;
    copy.Height = static_cast<std::size_t>(rows);
    checkCuda(driverApi().memcpy2DAsync(&copy, stream_.handle()),
              "cuMemcpy2DAsync(all_gather)");
  }
}

QuantLinearArgs CudaExecutor::quantLinearArgs(const OpDesc &d, CUdeviceptr y,
                                              CUdeviceptr x, CUdeviceptr normW,
                                              int rows) const {
  const std::size_t scales = d.scalesWeight();
  const std::vector<int64_t> &shape = d.weightShapes.at(d.linearWeight());
  return {.y = y,
          .x = x,
          .w = weight(d.weights[d.linearWeight()]),
          .scales = weight(d.weights[scales]),
          .zeros = d.quant == fb::WeightQuant::Int4
                       ? weight(d.weights[scales + 1])
                       : 0,
          .bias = d.hasBias() ? weight(d.weights[d.linearWeight() + 1]) : 0,
          .normWeight = normW,
          .rows = rows,
          .n = static_cast<int>(shape.at(0)),
          .k = static_cast<int>(shape.at(1)),
          .eps = normW ? d.eps : 0.0f};
}

void CudaExecutor::launchDequantize(const OpDesc &d, const KernelLaunch &l) {
  // The same codes, scales and zeros the quantized kernels read.
  const QuantLinearArgs q = quantLinearArgs(d, 0, 0, 0, 0);
  kernel(l.instance)
      .launch(l.dims, stream_,
              DequantizeArgs{.out = dequantScratch_.address(),
                             .w = q.w,
                             .scales = q.scales,
                             .zeros = q.zeros,
                             .n = q.n,
                             .k = q.k});
}

void CudaExecutor::launchArgmaxHead(CUdeviceptr y, CUdeviceptr x, CUdeviceptr w,
                                    CUdeviceptr normW, float eps, int n) {
  LaunchDims dims = argmaxHead_->dims;
  dims.dependent = dependentLaunch_;
  const Kernel &k = kernel(argmaxHead_->instance);
  raiseSharedLimit(k, *argmaxHead_);
  k.launch(dims, stream_,
           LinearArgs{.y = y,
                      .x = x,
                      .w = w,
                      .normWeight = normW,
                      .argmaxKey = inputs_.address() + argmaxKeyOffset_,
                      .rows = 1,
                      .n = n,
                      .eps = eps});
}

bool CudaExecutor::identityLogitRows(const StepBatch &batch) {
  for (std::size_t r = 0; r < batch.logitRows.size(); ++r)
    if (batch.logitRows[r] != static_cast<int32_t>(r))
      return false;
  return true;
}

bool CudaExecutor::oneTokenPerSequence(const StepBatch &batch) {
  // Sequence slots are < numSeqs (validate checked it); padding tokens have
  // token_seq < 0. sequenceSeen_ is sized once, so a step allocates nothing.
  if (sequenceSeen_.size() < static_cast<std::size_t>(batch.numSeqs))
    sequenceSeen_.resize(static_cast<std::size_t>(batch.numSeqs));
  std::fill_n(sequenceSeen_.begin(), batch.numSeqs, 0);
  for (int32_t seq : batch.tokenSeq) {
    if (seq < 0)
      continue;
    if (seq >= batch.numSeqs || sequenceSeen_[static_cast<std::size_t>(seq)])
      return false;
    sequenceSeen_[static_cast<std::size_t>(seq)] = 1;
  }
  return true;
}

bool CudaExecutor::chainsSteps() const {
  // Profiling times one step at a time.
  return chainable_ && !options_.profileSteps && !options_.profileOps;
}

bool CudaExecutor::anyChained(const StepBatch &b) {
  return std::any_of(b.chainedRows.begin(), b.chainedRows.end(),
                     [](int32_t r) { return r >= 0; });
}

void CudaExecutor::validateChain(const StepBatch &b) const {
  if (!b.chainedRows.empty() && b.chainedRows.size() != b.tokens.size())
    fail("the step has ", b.tokens.size(), " tokens but ", b.chainedRows.size(),
         " chained rows");
  if (!anyChained(b))
    return;
  if (!chainsSteps())
    fail("this CUDA executor cannot chain steps: the plan reads token ids "
         "outside its embedding, or --profile-steps/--profile-ops is on; "
         "run with --async-scheduling=off");
  if (lastResults_ == ChainSource::None)
    fail("a step takes ids of the previous step, which chose none");
  for (std::size_t t = 0; t < b.chainedRows.size(); ++t)
    if (b.chainedRows[t] < -1 || b.chainedRows[t] >= lastRows_)
      fail("token ", t, " takes the id of row ", b.chainedRows[t],
           " of the previous step, which chose ", lastRows_);
}

void CudaExecutor::step(const StepBatch &in, const StepOutput &out) {
  submitStep(in, out);
  while (!pending_.empty())
    finishStep();
}

void CudaExecutor::submitStep(const StepBatch &in, const StepOutput &out) {
  if (in.logitRows.empty() && !in.tokens.empty() && out.logits.empty() &&
      out.logprobs.empty() && out.topIds.empty()) {
    // No rows asked (a prompt chunk that does not reach its prompt's end):
    // the step runs with its last token's row, and the id goes nowhere.
    const int slot = nextSlot_;
    noRowsRow_[slot] = static_cast<int32_t>(in.tokens.size()) - 1;
    StepBatch b = in;
    b.logitRows = {&noRowsRow_[slot], 1};
    b.sampling = {};
    b.penalties = {};
    b.logitBias = {};
    b.numTopLogprobs = 0;
    StepOutput o;
    o.argmax = {&noRowsId_[slot], 1};
    submitStep(b, o);
    return;
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point entered = Clock::now();
  if (pending_.size() >= 2)
    fail("internal error: a third step queued on the CUDA executor");
  validate(in, out);
  validateChain(in);
  context_.makeCurrent();
  // Graph-sized steps run padded to their bucket, so that few shapes (and
  // graphs) occur; the outputs hold the real rows only.
  const bool pad =
      !options_.disableCudaGraphs &&
      in.tokens.size() <= static_cast<size_t>(kMaxGraphTokens) &&
      graphBucket(static_cast<int>(in.tokens.size())) <= maxTokens_;
  if (pad)
    padded_.pad(in);
  const StepBatch &b = pad ? padded_.batch() : in;
  StepShape shape{static_cast<int>(b.tokens.size()),
                  static_cast<int>(b.logitRows.size()), b.maxBlocksPerSeq,
                  b.numSeqs, !out.argmax.empty()};
  // Anything beyond greedy ids goes through the sampling kernel; all-greedy
  // steps keep the argmax kernel (and their graphs).
  shape.sampling = sampling::stepNeedsSampling(b, out);
  shape.logprobs = !out.logprobs.empty();
  shape.numTop = b.numTopLogprobs;
  HostSlot &slot = slots_[nextSlot_];
  // Long prompt chunks: the tensor-core attention (never in a graph; for
  // an 8-token chunk after 1,024 cached positions it took 25.6 us a layer
  // against paged_attention's 15.0: 32 blocks for 512).
  if (shape.tokens > kMaxGraphTokens)
    shape.prefillTiles = stagePrefillTiles(b, slot.prefillTiles);
  shape.fusedRope = lowering_.fusedRope() && shape.prefillTiles == 0 &&
                    oneTokenPerSequence(b);
  auto *host = static_cast<std::byte *>(slot.staging.data());
  stageChunkTiles(b, host, shape);
  shape.identityRows =
      !lowering_.skippableGathers.empty() && identityLogitRows(b);
  shape.fusedArgmax =
      argmaxHead_ && shape.argmax && !shape.sampling && shape.outputs == 1;
  if (anyChained(in))
    shape.chain = lastResults_ == ChainSource::Key && in.tokens.size() > 1
                      ? ChainSource::KeyCopy
                      : lastResults_;

  // Stage the inputs in their device layout and send them in one copy.
  auto put = [&](int i, std::span<const int32_t> v) {
    std::memcpy(host + inputOffsets_[i], v.data(), v.size_bytes());
  };
  put(0, b.tokens);
  put(1, b.positions);
  put(2, b.tokenSeq);
  put(3, b.logitRows);
  put(4, b.blockTables);
  // Chained tokens as -1 - row: the embedding reads the previous step's id.
  auto *tokens = reinterpret_cast<int32_t *>(host + inputOffsets_[0]);
  for (std::size_t t = 0; t < in.chainedRows.size(); ++t)
    if (in.chainedRows[t] >= 0)
      tokens[t] = -1 - in.chainedRows[t];
  if (options_.profileSteps)
    stepStart_->record(stream_);
  const std::size_t end = shape.sampling
                              ? stageSampling(b, host)
                              : inputOffsets_[4] + b.blockTables.size_bytes();
  // A one-token step chained to the key leaves it for its embedding to read
  // and clear; a longer one reads a copy and lets the input copy clear it.
  if (shape.chain == ChainSource::KeyCopy)
    checkCuda(driverApi().memcpyDtoDAsync(
                  chainKey_.address(), inputs_.address() + argmaxKeyOffset_,
                  sizeof(unsigned long long), stream_.handle()),
              "cuMemcpyDtoDAsync(argmax key)");
  const std::size_t begin = shape.chain == ChainSource::Key ? kAlign : 0;
  inputs_.copyFromHost(host + begin, end - begin, stream_, begin);

  const bool graphable =
      !options_.disableCudaGraphs && shape.tokens <= kMaxGraphTokens;
  auto key = shape.key();
  if (options_.profileOps) {
    if (seen_[key]++ >= 1)
      profileOps(shape); // after one warm-up run of the shape
    else
      launchOps(shape);
  } else if (graphable && graphs_.count(key)) {
    graphs_.at(key).launch(stream_);
  } else if (graphable && seen_[key] >= 1) {
    // Captured on the second occurrence: the first ran eagerly and did the
    // one-time work (shared-memory limits) outside the capture.
    stream_.beginCapture();
    launchOps(shape);
    Graph graph = stream_.endCapture();
    auto [it, inserted] = graphs_.emplace(key, graph.instantiate());
    it->second.launch(stream_);
  } else {
    ++seen_[key];
    launchOps(shape);
  }

  if (shape.sampling)
    samplingOut_.copyToHost(slot.sampling.data(),
                            samplingResults(shape.outputs, shape.numTop).bytes,
                            stream_);
  else if (shape.fusedArgmax)
    checkCuda(driverApi().memcpyDtoHAsync(
                  slot.argmax.data(), inputs_.address() + argmaxKeyOffset_,
                  sizeof(unsigned long long), stream_.handle()),
              "cuMemcpyDtoHAsync(argmax key)");
  else if (!out.argmax.empty())
    argmaxOut_.copyToHost(slot.argmax.data(), out.argmax.size_bytes(), stream_);
  if (!out.logits.empty()) {
    int logitsBuffer = ops_.back().buffers[0];
    CUdeviceptr src = buffer(logitsBuffer);
    checkCuda(driverApi().memcpyDtoHAsync(out.logits.data(), src,
                                          out.logits.size_bytes(),
                                          stream_.handle()),
              "cuMemcpyDtoHAsync(logits)");
  }
  if (options_.profileSteps)
    stepEnd_->record(stream_);
  slot.done.record(stream_);
  pending_.push_back(
      {nextSlot_, out, shape, static_cast<int>(in.tokens.size()), entered});
  nextSlot_ = 1 - nextSlot_;
  lastResults_ = shape.results();
  lastRows_ = static_cast<int>(in.logitRows.size());
}

void CudaExecutor::finishStep() {
  using Clock = std::chrono::steady_clock;
  if (pending_.empty())
    return;
  const Pending p = pending_.front();
  pending_.pop_front(); // retired even when the wait fails
  HostSlot &slot = slots_[p.slot];
  slot.done.synchronize();
  const StepOutput &out = p.out;
  const StepShape &shape = p.shape;
  if (options_.profileSteps) {
    const Clock::time_point done = Clock::now();
    StepTimes &t = stepTimes_[p.realTokens];
    ++t.count;
    t.gpuMs += Event::elapsedMs(*stepStart_, *stepEnd_);
    t.wallMs +=
        std::chrono::duration<double, std::milli>(done - p.entered).count();
    if (lastStepEnd_ != Clock::time_point{})
      t.hostGapMs +=
          std::chrono::duration<double, std::milli>(p.entered - lastStepEnd_)
              .count();
    lastStepEnd_ = done;
  }
  if (shape.sampling) {
    const SamplingResults results =
        samplingResults(shape.outputs, shape.numTop);
    const auto *res = static_cast<const std::byte *>(slot.sampling.data());
    if (!out.argmax.empty())
      std::memcpy(out.argmax.data(), res, out.argmax.size_bytes());
    if (!out.logprobs.empty())
      std::memcpy(out.logprobs.data(), res + results.logprobs,
                  out.logprobs.size_bytes());
    if (!out.topIds.empty()) {
      std::memcpy(out.topIds.data(), res + results.topIds,
                  out.topIds.size_bytes());
      std::memcpy(out.topLogprobs.data(), res + results.topLogprobs,
                  out.topLogprobs.size_bytes());
    }
  } else if (shape.fusedArgmax) {
    // The key's low word is 0xffffffff - index (argmaxKey, Common.cuh).
    unsigned long long key = 0;
    std::memcpy(&key, slot.argmax.data(), sizeof(key));
    out.argmax[0] = static_cast<int32_t>(
        0xffffffffu - static_cast<uint32_t>(key & 0xffffffffu));
  } else if (!out.argmax.empty()) {
    std::memcpy(out.argmax.data(), slot.argmax.data(), out.argmax.size_bytes());
  }
}

} // namespace sol::cuda

//===- CudaExecutor.h - Runs a plan's step on an NVIDIA GPU -----*- C++ -*-===//
//
// Loads the plan's cubins (PTX on newer GPUs), uploads the weights once, and
// runs each step as the plan's op list: one activation arena, the paged KV
// cache sized from --gpu-memory-utilization, inputs (with the per-request
// sampling parameters) in one host-to-device copy, chosen ids (greedy, or
// sampled on the GPU with their logprobs) or logits in one copy back. Small
// steps (decode) replay CUDA graphs captured per step shape, so a token costs
// one graph launch. No host synchronisation happens between the input copy and
// the results.
//
// Steps may be queued two deep (submitStep, finishStep): each queued step
// has its own pinned staging and result buffers and an event after its
// result copy, and a chained step's tokens are the previous step's ids,
// read on the device by the embedding kernel (StepBatch::chainedRows).
//
// A plan split over GPUs (tensor parallelism) runs one CudaExecutor per GPU,
// each with its rank's weight shards, driven by TensorParallelExecutor; the
// plan's AllReduce and AllGather ops are NCCL calls on the rank's stream.
//
// The switches that take parts of it out of the picture when debugging
// (SOL_DISABLE_PDL, SOL_DISABLE_CUBLASLT, --no-cuda-graph) are listed in
// docs/debugging.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/DeviceBuffer.h"
#include "runtime/cuda/Event.h"
#include "runtime/cuda/Graph.h"
#include "runtime/cuda/KernelSelection.h"
#include "runtime/cuda/Module.h"
#include "runtime/cuda/PinnedBuffer.h"
#include "runtime/cuda/StaticLowering.h"
#include "runtime/cuda/StepPadding.h"
#include "runtime/cuda/Stream.h"
#include "runtime/executor/ExecutorFactory.h"

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace sol::cuda {

class NcclGroup;

/// Which part of a plan split over GPUs an executor runs.
struct TensorParallelRank {
  int rank = 0;
  /// The GPU's ordinal.
  int device = 0;
  /// The ranks' communicators (null for a plan that is not split).
  NcclGroup *collectives = nullptr;
};

class CudaExecutor final : public Executor {
public:
  CudaExecutor(const PlanFile &plan, const ExecutorOptions &options,
               const TensorParallelRank &rank = {});
  ~CudaExecutor() override;

  std::string name() const override { return "cuda"; }
  int32_t numKvBlocks() const override { return numKvBlocks_; }
  int32_t blockSize() const override { return blockSize_; }
  int32_t maxTokensPerStep() const override { return maxTokens_; }
  void step(const StepBatch &batch, const StepOutput &out) override;
  /// The checks step() makes of its input before touching any state (host
  /// values only: any thread may call it). Throws sol::Error.
  void checkStep(const StepBatch &batch, const StepOutput &out) const {
    validate(batch, out);
    validateChain(batch);
  }
  bool chainsSteps() const override;
  void submitStep(const StepBatch &batch, const StepOutput &out) override;
  void finishStep() override;

private:
  /// Where a step's chosen ids stay on the device, for a chained successor
  /// to read: nowhere (no ids asked for), argmaxOut_, samplingOut_ (its ids
  /// come first), or the fused argmax's key in inputs_. A successor of more
  /// than one token reads a copy of the key (KeyCopy, chainKey_), made
  /// before its input copy clears the key; a one-token successor reads it
  /// in place and clears it (Key).
  enum class ChainSource : uint8_t { None, Ids, Sampled, Key, KeyCopy };
  struct StepShape {
    int tokens, outputs, maxBlocks, numSeqs;
    bool argmax;
    /// Per-request sampling (Sampling.cuh) instead of the plain argmax, with
    /// the chosen ids' logprobs and numTop top logprobs per row.
    bool sampling = false, logprobs = false;
    int numTop = 0;
    /// Tiles of prefill_attention (PrefillAttention.h) staged for this step;
    /// 0: attention runs paged_attention.
    int prefillTiles = 0;
    /// Tiles and splits of chunk_attention (ChunkAttention.h) staged for
    /// this step; 0 tiles: no chunk_attention.
    int chunkTiles = 0, chunkSplits = 0;
    /// Every sequence has one token: attention does rope_kv_write's work.
    bool fusedRope = false;
    /// The logit rows are rows 0..outputs-1 in order: the plan's
    /// GatherRows ops the plan names are skipped (Plan.cuda).
    bool identityRows = false;
    /// A greedy one-row step: the LM head keeps the argmax (argmaxHead_),
    /// no argmax launch. Follows from outputs, argmax and sampling.
    bool fusedArgmax = false;
    /// Where the embedding reads chained tokens from (the previous step's
    /// ids); None when the step has none.
    ChainSource chain = ChainSource::None;
    std::tuple<int, int, int, int, bool, bool, bool, int, int, int, int, bool,
               bool, ChainSource>
    key() const {
      return {tokens,      outputs,   maxBlocks,    numSeqs,      argmax,
              sampling,    logprobs,  numTop,       prefillTiles, chunkTiles,
              chunkSplits, fusedRope, identityRows, chain};
    }
    /// Where this step leaves its chosen ids.
    ChainSource results() const {
      return !argmax       ? ChainSource::None
             : sampling    ? ChainSource::Sampled
             : fusedArgmax ? ChainSource::Key
                           : ChainSource::Ids;
    }
  };
  using ShapeKey = std::tuple<int, int, int, int, bool, bool, bool, int, int,
                              int, int, bool, bool, ChainSource>;
  /// Pinned host memory of one queued step; two, used in turn.
  struct HostSlot {
    PinnedBuffer staging; // inputs_'s layout
    PinnedBuffer argmax;  // ids, or the fused argmax's key
    PinnedBuffer sampling;
    PinnedBuffer prefillTiles;
    Event done{/*timing=*/false}; // recorded after the result copies
  };
  /// A submitted step that finishStep() has not retired.
  struct Pending {
    int slot = 0;
    StepOutput out;
    StepShape shape;
    int realTokens = 0;
    std::chrono::steady_clock::time_point entered;
  };
  /// Checks chainedRows against the previous submitted step.
  void validateChain(const StepBatch &batch) const;
  /// Whether a token of the step is a chained row (r >= 0).
  static bool anyChained(const StepBatch &batch);
  void validate(const StepBatch &batch, const StepOutput &out) const;
  void launchOps(const StepShape &shape);
  /// An AllReduce or AllGather op over `rows` rows, through NCCL.
  void runCollective(const OpDesc &d, int rows);
  /// A Moe op over `rows` rows: the router's linear into moeLogits, then
  /// MoeDecode.cuh's kernels; `dependent` marks each launch's dims.
  void launchMoe(const OpDesc &d, int rows,
                 const std::function<LaunchDims(LaunchDims)> &dependent);
  /// Launches ops [begin, end), then the argmax when `end` is the last op.
  void launchOps(const StepShape &shape, std::size_t begin, std::size_t end);
  /// Runs `shape` eagerly with timing events between ops (--profile-ops).
  void profileOps(const StepShape &shape);
  void printProfile() const;
  void printStepProfile() const;
  const Kernel &kernel(const KernelInstance &instance);
  /// launches[at], a linear kernel taking Args (LinearArgs, QuantGemmArgs:
  /// y, bias and rows by those names; n output features), straight into
  /// args.y, or, when launches[at + 1] is its split-K finalize, into the
  /// fp32 workspace and then the finalize (bias and epilogue).
  template <typename Args>
  void launchGemm(const std::vector<KernelLaunch> &launches, std::size_t at,
                  Args args, int n);
  /// The linear launches[at] (y = x . w^T + bias, rows x n x k): a
  /// one-pass kernel (linear_gemv, linear_skinny) without its norm
  /// prologue, or the GEMM and its split-K finalize when launches[at + 1]
  /// is one.
  void launchLinear(const std::vector<KernelLaunch> &launches, std::size_t at,
                    CUdeviceptr y, CUdeviceptr x, CUdeviceptr w,
                    CUdeviceptr bias, int rows, int n, int k);
  /// launches[at], linear_gemm_quant over op `d`'s quantized W for `rows`
  /// rows of x, and its split-K finalize when launches[at + 1] is one.
  void launchQuantGemm(const std::vector<KernelLaunch> &launches,
                       std::size_t at, const OpDesc &d, CUdeviceptr y,
                       CUdeviceptr x, int rows);
  /// Allows the launch's dynamic shared memory above 48 KB (once per kernel).
  void raiseSharedLimit(const Kernel &k, const KernelLaunch &l);
  CUdeviceptr buffer(int index) const;
  CUdeviceptr weight(int index) const;
  /// Writes weight `index` of a plan without weight bytes on the device
  /// (random_weights; an f32 norm weight or sink as bf16); false where the host
  /// must (a plan without the kernel, a dtype it does not make).
  bool fillRandomWeightOnDevice(int index, bool bf16Read);
  /// The launch arguments of a quantized single-pass linear for op `d`
  /// (normW: the NormLinear's norm weight for the prologue, else 0).
  kernels::QuantLinearArgs quantLinearArgs(const OpDesc &d, CUdeviceptr y,
                                           CUdeviceptr x, CUdeviceptr normW,
                                           int rows) const;
  /// dequantize_weight of op `d`'s W into dequantScratch_.
  void launchDequantize(const OpDesc &d, const KernelLaunch &l);
  /// Writes the step's SamplingRows and penalty lists into the staging
  /// buffer after its block tables; returns the end of the bytes to copy.
  std::size_t stageSampling(const StepBatch &batch, std::byte *host) const;
  void launchSampling(const StepShape &shape, const LaunchDims &dims);
  /// Plans and uploads prefill_attention tiles (through `host`) when the
  /// step holds a long prompt chunk and the plan has the kernels; returns
  /// the tile count.
  int stagePrefillTiles(const StepBatch &batch, PinnedBuffer &host);
  /// Whether Attention op `d` can run prefill_attention (or, with an fp8
  /// KV cache, prefill_attention_fp8) in this plan (a supported shape, the
  /// instance compiled into the plan).
  bool prefillAttentionUsable(const OpDesc &d) const;
  bool anyPrefillAttention() const;
  /// Runs a linear of a long-prompt step on cuBLASLt (then SwiGLU when its
  /// epilogue asks for it); false when it cannot, and nothing was launched.
  /// Whether cublasLinear would run this linear at `rows` rows.
  bool cublasUsable(const OpDesc &d, int rows) const;
  bool cublasLinear(const OpDesc &d, int rows, CUdeviceptr y, CUdeviceptr x,
                    CUdeviceptr w, CUdeviceptr bias, int n, int k);
  /// The epilogue of a cuBLASLt linear around `gemm(out, accumulate)`,
  /// which writes x . W^T + bias (+ out) into `out`: in place for the
  /// residual add, through gemmScratch_ and swiglu_pairs for a gated one.
  template <typename Gemm>
  void cublasEpilogue(const OpDesc &d, int rows, CUdeviceptr y,
                      const Gemm &gemm);
  /// Whether op `op` (an fp8 linear) runs steps of `rows` rows as
  /// quantize_rows_fp8 and cuBLASLt's W8A8 GEMM (fp8Gemm_) instead of the
  /// bf16 copy.
  bool fp8GemmUsable(std::size_t op, int rows) const;
  /// quantize_rows_fp8 of x into fp8Codes_/fp8Scales_ (rms_norm_quantize_fp8
  /// of a NormLinear's x with `normWeight`), then the W8A8 GEMM over op
  /// `op`'s codes and scales, with its epilogue.
  void fp8Linear(std::size_t op, int rows, CUdeviceptr y, CUdeviceptr x,
                 bool dependentQuantize, CUdeviceptr normWeight = 0);
  /// fp8WeightScales_ from the weights' scales (repeat_scales), at start.
  void repeatFp8WeightScales();
  /// fp8Wgmma_: the tensor maps of the fp8 linears linear_wgmma_fp8 runs.
  void prepareFp8Wgmma();
  /// Runs each cuBLASLt GEMM shape once, so its kernels load at start-up
  /// rather than in the first long prompt.
  void warmUpCublas();

  const PlanFile &plan_;
  ExecutorOptions options_;
  TensorParallelRank rank_;
  CudaContext context_;
  Stream stream_;
  std::vector<Module> modules_;
  std::unordered_map<std::string, Kernel> kernels_; // by name expression
  std::unordered_map<std::string, bool> sharedRaised_;
  std::vector<OpDesc> ops_;

  int32_t maxTokens_ = 0, blockSize_ = 16, numKvBlocks_ = 0;
  int64_t vocab_ = 0, maxModelLen_ = 0;
  int32_t maxBlocksPerSeqCap_ = 0, maxSeqsCap_ = 0;

  DeviceBuffer weights_;
  /// An AllGather's ranks' rows, rank-major (NCCL's layout), before they
  /// are placed side by side.
  DeviceBuffer gathered_;
  /// A Moe op's intermediates for maxTokens_ rows (the largest op's):
  /// router logits, chosen ids and weights, each slot's activation and
  /// down projection, moe_sort's order and starts (grouped steps).
  /// GatherColumns ops' column tables (int32, each kAlign-aligned) and each
  /// op's byte offset in them.
  DeviceBuffer columnTables_;
  std::map<const OpDesc *, std::size_t> columnTableOffsets_;
  DeviceBuffer moeWorkspace_;
  std::size_t moeIdsOffset_ = 0, moeWeightsOffset_ = 0, moeActOffset_ = 0,
              moeOutOffset_ = 0, moeSortedOffset_ = 0;
  std::vector<std::size_t> weightOffsets_;
  DeviceBuffer ropes_;
  std::vector<std::size_t> ropeOffsets_;
  DeviceBuffer arena_;
  std::vector<std::size_t> slotOffsets_;
  DeviceBuffer inputs_; // argmax key | tokens | positions | token_seq |
                        // logit_rows | chunk tiles | block tables | sampling
  HostSlot slots_[2];
  int nextSlot_ = 0;
  /// A step that asks for no logits rows (a prompt chunk short of its
  /// prompt's end) runs with its last token's row, whose id lands here, per
  /// host slot, and is dropped: every kernel chain ends in a logits row.
  int32_t noRowsRow_[2] = {0, 0}, noRowsId_[2] = {0, 0};
  std::deque<Pending> pending_;
  /// What the last submitted step left for a chained successor, and its R.
  ChainSource lastResults_ = ChainSource::None;
  int lastRows_ = 0;
  /// The plan reads token ids only in Embedding ops, whose kernel resolves
  /// chained ids (else steps run one at a time).
  bool chainable_ = false;
  std::size_t inputOffsets_[5] = {};
  // Per layer: K, V [blocks][block_size][kv_heads][head_dim] (bf16 or
  // fp8), then for fp8 the K and V scales [blocks][block_size][kv_heads].
  DeviceBuffer kvCache_;
  std::size_t kvLayerBytes_ = 0, kvHalfBytes_ = 0;
  std::size_t kvArrayBytes_ = 0; // one layer's K (or V) values
  std::size_t kvScaleBytes_ = 0; // one layer's K (or V) scales; 0 for bf16
  fb::DType kvDtype_ = fb::DType::BF16;
  bool kvFp8() const { return kvDtype_ == fb::DType::F8E4M3; }
  DeviceBuffer attentionWorkspace_;
  std::size_t workspaceFloats_ = 0;
  /// Arrival counters of split attention (zeroed once; the kernels reset
  /// them).
  DeviceBuffer attentionArrivals_;
  /// solc's choices for every step (Plan.cuda): decode steps (one token per
  /// sequence) run paged_attention with the rope and the KV append fused
  /// into it, skipping rope_kv_write; the gather steps with identity logit
  /// rows skip; the argmax LM head; chunk attention.
  StaticLowering lowering_;
  std::vector<bool> headNormFused_; // lowering_.headNormFused, per op
  /// lowering_.addNormFused, per op, and the arrival counter of the fused
  /// launches (zeroed once; each launch leaves it zero).
  std::vector<GemvAddNorm> addNormFused_;
  DeviceBuffer addNormArrivals_;
  /// Attention splits merge through thread-block clusters (sm_90).
  bool clusterMerge_ = false;
  /// Whether the step's real tokens all belong to different sequences.
  bool oneTokenPerSequence(const StepBatch &batch);
  static bool identityLogitRows(const StepBatch &batch);
  /// The LM head's one-row launch with the argmax in its epilogue (when the
  /// last op is an LM head without bias or epilogue), and where in inputs_
  /// its key lives: first, so that a step chained to it can copy its inputs
  /// without clearing the key (the embedding does).
  std::optional<KernelLaunch> argmaxHead_;
  std::size_t argmaxKeyOffset_ = 0;
  void launchArgmaxHead(CUdeviceptr y, CUdeviceptr x, CUdeviceptr w,
                        CUdeviceptr normW, float eps, int n);
  /// While a step skips gathers: {output buffer, input buffer} of each.
  std::vector<std::pair<int, int>> gatherAliases_;
  std::vector<uint8_t> sequenceSeen_; // its scratch, one flag per sequence
  DeviceBuffer argmaxOut_;
  DeviceBuffer chainKey_;        // ChainSource::KeyCopy
  DeviceBuffer argmaxWorkspace_; // split argmax partials and counters
  DeviceBuffer splitKWorkspace_; // fp32 partial sums of split-K GEMMs
  /// The bf16 copy of a quantized W that steps of more rows than the
  /// quantized kernels take compute over (quantizedLinearLaunches).
  DeviceBuffer dequantScratch_;
  /// prefill_attention tiles (int2 per tile, at most one per token) and
  /// their host staging; empty when no attention op can use the kernel.
  DeviceBuffer prefillTiles_;
  /// chunk_attention for graph-sized steps with a prompt chunk, when every
  /// attention op has one shape and the plan has its kernel. Its tiles
  /// travel in the step inputs at chunkTilesOffset_ (room for
  /// kMaxGraphedTokens).
  std::optional<ChunkAttentionSpec> chunkAttention_;
  std::size_t chunkTilesOffset_ = 0;
  std::size_t chunkAttentionOp_ = 0; // the first Attention op
  /// Stages a graph-sized step's chunk tiles in the input staging buffer
  /// and sets shape.chunkTiles and chunkSplits when the step takes
  /// chunk_attention.
  void stageChunkTiles(const StepBatch &b, std::byte *host, StepShape &shape);
  /// Programmatic dependent launch between a step's kernels (off with
  /// SOL_DISABLE_PDL=1, to rule out a race between kernels; see
  /// docs/debugging.md).
  bool dependentLaunch_ = true;
  /// Graph-sized steps run padded to graphBucket sizes (unless CUDA graphs
  /// are off), so that few shapes, and graphs, occur.
  PaddedStep padded_;
  /// cuBLASLt (null when not installed), its workspace, and the gate/up
  /// output of fused SwiGLU linears that it runs.
  std::unique_ptr<CublasLt> cublas_;
  /// Linears of at least this many rows run on cuBLASLt (when it loads):
  /// fewer run linear_gemv (1 row) or linear_skinny (2..8). Measured on the
  /// H200 (Llama-3.2-1B shape, same runs): 64 sequences decode at 40,341
  /// tok/s with cuBLASLt from 9 rows against 30,144 with our split-K GEMMs.
  static constexpr int kCublasMinRows = SkinnySpec::kSelectedMaxRows + 1;
  DeviceBuffer cublasWorkspace_;
  DeviceBuffer gemmScratch_;
  // Per op: an fp8 linear whose GEMMs of many rows run on Hopper's fp8 tensor
  // cores (cuBLASLt with a scale per feature and per token), over x
  // quantized into fp8Codes_ [maxTokens, K] and fp8Scales_ [maxTokens].
  std::vector<char> fp8Gemm_;
  static constexpr int kFp8GemmRows = 16; // its row granularity
  DeviceBuffer fp8Codes_, fp8Scales_;
  // Their weights' per-row scales once for every 128 k (the GEMM's block
  // scales), [K / 128, N] at fp8WeightScaleOffsets_[op] floats.
  DeviceBuffer fp8WeightScales_;
  std::vector<std::size_t> fp8WeightScaleOffsets_;
  // Per fp8 linear whose plan holds linear_wgmma_fp8 (Hopper): its tensor
  // maps (x over fp8Codes_ with maxTokens rows, W's codes), encoded once.
  // Steps where it outruns cuBLASLt (Fp8WgmmaSpec::outrunsCublas) run it.
  struct Fp8WgmmaOp {
    Fp8WgmmaSpec spec;
    kernels::TensorMap x, w;
  };
  std::vector<std::unique_ptr<Fp8WgmmaOp>> fp8Wgmma_;

  // --profile-ops: per step size (padded tokens), per op, the summed GPU
  // time of the profiled steps, and their count.
  struct OpProfile {
    std::vector<double> opMs;
    int steps = 0;
  };
  std::map<int, OpProfile> opProfiles_;

  // --profile-steps: per real token count, the steps' summed GPU time (from
  // the input copy to the output copy), step() wall time, and host time
  // since the previous step() returned.
  struct StepTimes {
    int count = 0;
    double gpuMs = 0, wallMs = 0, hostGapMs = 0;
  };
  std::map<int, StepTimes> stepTimes_;
  std::unique_ptr<Event> stepStart_, stepEnd_;
  std::chrono::steady_clock::time_point lastStepEnd_{};

  // Per-request sampling: results (ids | logprobs | top ids | top
  // logprobs, packed for the step's R and numTop) and the original logits
  // of penalised tokens while the kernel works on the row in place.
  DeviceBuffer samplingOut_;
  DeviceBuffer penaltySaved_;

  std::map<ShapeKey, GraphExec> graphs_;
  std::map<ShapeKey, int> seen_;
};

} // namespace sol::cuda

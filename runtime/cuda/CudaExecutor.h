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
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/DeviceBuffer.h"
#include "runtime/cuda/Graph.h"
#include "runtime/cuda/KernelSelection.h"
#include "runtime/cuda/Module.h"
#include "runtime/cuda/PinnedBuffer.h"
#include "runtime/cuda/Stream.h"
#include "runtime/executor/ExecutorFactory.h"

#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace sol::cuda {

class CudaExecutor final : public Executor {
public:
  CudaExecutor(const PlanFile &plan, const ExecutorOptions &options);
  ~CudaExecutor() override;

  std::string name() const override { return "cuda"; }
  int32_t numKvBlocks() const override { return numKvBlocks_; }
  int32_t blockSize() const override { return blockSize_; }
  int32_t maxTokensPerStep() const override { return maxTokens_; }
  void step(const StepBatch &batch, const StepOutput &out) override;

private:
  struct StepShape {
    int tokens, outputs, maxBlocks, numSeqs;
    bool argmax;
    /// Per-request sampling (Sampling.cuh) instead of the plain argmax, with
    /// the chosen ids' logprobs and numTop top logprobs per row.
    bool sampling = false, logprobs = false;
    int numTop = 0;
    std::tuple<int, int, int, int, bool, bool, bool, int> key() const {
      return {tokens, outputs,  maxBlocks, numSeqs,
              argmax, sampling, logprobs,  numTop};
    }
  };
  using ShapeKey = std::tuple<int, int, int, int, bool, bool, bool, int>;
  void validate(const StepBatch &batch, const StepOutput &out) const;
  void launchOps(const StepShape &shape);
  /// Launches ops [begin, end), then the argmax when `end` is the last op.
  void launchOps(const StepShape &shape, std::size_t begin, std::size_t end);
  /// Runs `shape` eagerly with timing events between ops (--profile-ops).
  void profileOps(const StepShape &shape);
  void printProfile() const;
  const Kernel &kernel(const KernelInstance &instance);
  /// The GEMM launches[at] (y = x . w^T + bias, rows x n x k), and its
  /// split-K finalize when launches[at + 1] is one.
  void launchGemm(const std::vector<KernelLaunch> &launches, std::size_t at,
                  CUdeviceptr y, CUdeviceptr x, CUdeviceptr w, CUdeviceptr bias,
                  int rows, int n, int k);
  /// Allows the launch's dynamic shared memory above 48 KB (once per kernel).
  void raiseSharedLimit(const Kernel &k, const KernelLaunch &l);
  CUdeviceptr buffer(int index) const;
  CUdeviceptr weight(int index) const;
  /// Writes the step's SamplingRows and penalty lists into the staging
  /// buffer after its block tables; returns the end of the bytes to copy.
  std::size_t stageSampling(const StepBatch &batch, std::byte *host) const;
  void launchSampling(const StepShape &shape, const LaunchDims &dims);

  const PlanFile &plan_;
  ExecutorOptions options_;
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
  std::vector<std::size_t> weightOffsets_;
  DeviceBuffer ropes_;
  std::vector<std::size_t> ropeOffsets_;
  DeviceBuffer arena_;
  std::vector<std::size_t> slotOffsets_;
  DeviceBuffer
      inputs_; // tokens | positions | token_seq | logit_rows | block tables
  PinnedBuffer staging_; // the same layout on the host
  std::size_t inputOffsets_[5] = {};
  DeviceBuffer
      kvCache_; // [layer][K, V][blocks][block_size][kv_heads][head_dim]
  std::size_t kvLayerBytes_ = 0, kvHalfBytes_ = 0;
  DeviceBuffer attentionWorkspace_;
  std::size_t workspaceFloats_ = 0;
  DeviceBuffer argmaxOut_;
  PinnedBuffer argmaxHost_;
  DeviceBuffer argmaxWorkspace_; // split argmax partials and counters
  DeviceBuffer splitKWorkspace_; // fp32 partial sums of split-K GEMMs
  /// Programmatic dependent launch between a step's kernels (off with
  /// SOL_DISABLE_PDL=1, for measuring what it gains).
  bool dependentLaunch_ = true;

  // --profile-ops: per op, the summed GPU time of the profiled steps.
  std::vector<double> opMs_;
  int profiledSteps_ = 0;

  // Per-request sampling: results (ids | logprobs | top ids | top
  // logprobs, packed for the step's R and numTop) and the original logits
  // of penalised tokens while the kernel works on the row in place.
  DeviceBuffer samplingOut_;
  PinnedBuffer samplingHost_;
  DeviceBuffer penaltySaved_;

  std::map<ShapeKey, GraphExec> graphs_;
  std::map<ShapeKey, int> seen_;
};

} // namespace sol::cuda

//===- CudaExecutor.h - Runs a plan's step on an NVIDIA GPU -----*- C++ -*-===//
//
// Loads the plan's cubins (PTX on newer GPUs), uploads the weights once, and
// runs each step as the plan's op list: one activation arena, the paged KV
// cache sized from --gpu-memory-utilization, inputs in one host-to-device
// copy, greedy ids (or logits) in one copy back. Small steps (decode) replay
// CUDA graphs captured per step shape, so a token costs one graph launch.
// No host synchronisation happens between the input copy and the results.
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
    auto key() const {
      return std::make_tuple(tokens, outputs, maxBlocks, numSeqs, argmax);
    }
  };
  void validate(const StepBatch &batch, const StepOutput &out) const;
  void launchOps(const StepShape &shape);
  const Kernel &kernel(const KernelInstance &instance);
  CUdeviceptr buffer(int index) const;
  CUdeviceptr weight(int index) const;

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

  std::map<std::tuple<int, int, int, int, bool>, GraphExec> graphs_;
  std::map<std::tuple<int, int, int, int, bool>, int> seen_;
};

} // namespace sol::cuda

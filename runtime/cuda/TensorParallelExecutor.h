//===- TensorParallelExecutor.h - A plan split over GPUs --------*- C++ -*-===//
//
// Runs a plan that solc split over N GPUs (--tensor-parallel-size): one
// CudaExecutor per GPU, each with its rank's weight shards and KV cache, all
// in this process, each driven by a thread of its own (a GPU's context and
// its NCCL communicator stay with one thread). The engine and scheduler run
// once: every step goes to every rank; they meet at the plan's AllReduce and
// AllGather ops (NCCL, captured into each rank's decode graphs), and rank 0
// picks the tokens (its logits are every rank's after the final
// AllGather). The KV cache has as many blocks as the smallest rank's.
//
// Bad input is refused before any rank starts (every rank's checks run
// first, on the caller's thread), so an invalid step loses nothing. A rank
// that fails mid-step would leave the others inside a collective:
// the step then aborts every communicator, waits for every rank, and throws
// the first rank's error; the executor refuses later steps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/ExecutorFactory.h"

#include <functional>
#include <memory>
#include <vector>

namespace sol {
class PlanFile;
} // namespace sol

namespace sol::cuda {

class CudaExecutor;
class NcclGroup;

class TensorParallelExecutor final : public Executor {
public:
  /// One executor per GPU 0..N-1 for the plan's N ranks. Throws sol::Error
  /// when fewer GPUs are visible, NCCL is missing, or a rank's executor
  /// cannot be made (naming the rank).
  TensorParallelExecutor(const PlanFile &plan, const ExecutorOptions &options);
  ~TensorParallelExecutor() override;

  std::string name() const override { return "cuda"; }
  int32_t numKvBlocks() const override { return numKvBlocks_; }
  int32_t blockSize() const override { return blockSize_; }
  int32_t maxTokensPerStep() const override { return maxTokens_; }
  void step(const StepBatch &batch, const StepOutput &out) override;

private:
  class Worker;
  /// Runs `task(rank)` on every rank's thread and waits for all; aborts the
  /// collectives when some rank fails while others still run, and rethrows
  /// the lowest rank's error.
  void onEveryRank(const std::function<void(int)> &task);
  /// Destroys each rank's executor on its own thread.
  void releaseExecutors();

  std::unique_ptr<NcclGroup> nccl_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<CudaExecutor>> executors_;
  int32_t numKvBlocks_ = 0, blockSize_ = 0, maxTokens_ = 0;
  bool broken_ = false;
};

} // namespace sol::cuda

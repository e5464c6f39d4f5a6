//===- ExecutorFactory.cpp - Picks and builds an executor for a plan ------===//
#include "runtime/executor/ExecutorFactory.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/cuda/TensorParallelExecutor.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "runtime/support/Error.h"

#include <iostream>

namespace sol {

namespace {

std::unique_ptr<Executor> makeReference(const PlanFile &plan,
                                        const ExecutorOptions &options) {
  ReferenceExecutor::Options ref;
  ref.maxModelLen = options.maxModelLen;
  ref.maxSeqs = options.maxSeqs;
  return std::make_unique<ReferenceExecutor>(plan, ref);
}

} // namespace

std::unique_ptr<Executor> makeExecutor(const PlanFile &plan,
                                       const std::string &device,
                                       const ExecutorOptions &options) {
  if (const fb::ModelInfo *model = plan.plan().model()) {
    const int64_t limit = model->position_limit();
    if (limit > 0 && options.maxModelLen > limit)
      fail("--max-model-len ", options.maxModelLen, " is beyond the ", limit,
           " positions this plan supports: its model scales RoPE with dynamic "
           "NTK, whose frequencies past max_position_embeddings (",
           limit,
           ") change with each sequence's length, and Sol computes the "
           "unscaled frequencies only; give --max-model-len ",
           limit, " or less");
  }
  if (device == "cpu")
    return makeReference(plan, options);
  if (device != "cuda" && device != "auto")
    fail("unknown device '", device, "' (expected cuda, cpu or auto)");
  if (!cuda::cudaAvailable()) {
    if (device == "cuda")
      fail("--device cuda: no usable GPU: ", cuda::cudaUnavailableReason(),
           " (use --device cpu for the reference executor)");
    std::cerr << "solrun: warning: no usable GPU ("
              << cuda::cudaUnavailableReason()
              << "); running on the CPU reference executor, which is slow\n";
    return makeReference(plan, options);
  }
  const int ranks = plan.plan().tensor_parallel_size();
  if (ranks > 1) {
    int visible = 0;
    cuda::checkCuda(cuda::driverApi().deviceGetCount(&visible),
                    "cuDeviceGetCount");
    if (visible < ranks && device == "auto") {
      std::cerr << "solrun: warning: the plan is split over " << ranks
                << " GPUs but " << visible
                << " visible; running on the CPU reference executor, which "
                   "is slow\n";
      return makeReference(plan, options);
    }
    return std::make_unique<cuda::TensorParallelExecutor>(plan, options);
  }
  return std::make_unique<cuda::CudaExecutor>(plan, options);
}

std::string describeKvCache(const Executor &executor) {
  auto grouped = [](int64_t v) {
    std::string digits = std::to_string(v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0)
        out += ',';
      out += digits[i];
    }
    return out;
  };
  const int64_t blocks = executor.numKvBlocks();
  return "KV cache: " + grouped(blocks) + " blocks of " +
         std::to_string(executor.blockSize()) +
         " tokens = " + grouped(blocks * executor.blockSize()) + " tokens (" +
         executor.name() + ")";
}

} // namespace sol

//===- TensorParallelExecutor.cpp - A plan split over GPUs ----------------===//
#include "runtime/cuda/TensorParallelExecutor.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Error.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

namespace sol::cuda {

/// A thread that runs one rank's tasks, one at a time.
class TensorParallelExecutor::Worker {
public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  /// Starts `task` on this thread.
  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = std::move(task);
      done_ = false;
      error_ = nullptr;
    }
    wake_.notify_all();
  }
  /// Waits up to `timeout` for the task; true when it has finished.
  bool waitFor(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return finished_.wait_for(lock, timeout, [&] { return done_; });
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_; });
  }
  /// The finished task's exception, or null.
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || task_; });
      if (stop_)
        return;
      std::function<void()> task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      std::exception_ptr error;
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      done_ = true;
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::function<void()> task_;
  bool done_ = true, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_; // last: starts once the rest is ready
};

TensorParallelExecutor::TensorParallelExecutor(const PlanFile &plan,
                                               const ExecutorOptions &options) {
  const int ranks = plan.plan().tensor_parallel_size();
  int visible = 0;
  checkCuda(driverApi().deviceGetCount(&visible), "cuDeviceGetCount");
  if (visible < ranks)
    fail(plan.path().string(), " is split over ", ranks,
         " GPUs (solc --tensor-parallel-size), but ", visible,
         visible == 1 ? " is" : " are", " visible; run it on a machine with ",
         ranks,
         " GPUs (CUDA_VISIBLE_DEVICES may hide some), compile it for fewer, "
         "or use --device cpu");
  std::vector<int> devices(static_cast<size_t>(ranks));
  std::iota(devices.begin(), devices.end(), 0);
  nccl_ = NcclGroup::create(devices);
  executors_.resize(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    workers_.push_back(std::make_unique<Worker>());
  // Rank 0 first: its cache size caps the others', so every rank holds the
  // blocks the block manager hands out.
  auto build = [&](int r, const ExecutorOptions &o) {
    try {
      executors_[static_cast<size_t>(r)] = std::make_unique<CudaExecutor>(
          plan, o,
          TensorParallelRank{r, devices[static_cast<size_t>(r)], nccl_.get()});
    } catch (const Error &e) {
      fail("GPU ", r, " (rank ", r, " of ", ranks, "): ", e.what());
    }
  };
  try {
    workers_[0]->post([&] { build(0, options); });
    workers_[0]->wait();
    if (std::exception_ptr e = workers_[0]->error())
      std::rethrow_exception(e);
    ExecutorOptions others = options;
    others.maxKvTokens = static_cast<int64_t>(executors_[0]->numKvBlocks()) *
                         executors_[0]->blockSize();
    onEveryRank([&](int r) {
      if (r > 0)
        build(r, others);
    });
  } catch (...) {
    releaseExecutors();
    throw;
  }
  numKvBlocks_ = executors_[0]->numKvBlocks();
  for (const auto &e : executors_)
    numKvBlocks_ = std::min(numKvBlocks_, e->numKvBlocks());
  blockSize_ = executors_[0]->blockSize();
  maxTokens_ = executors_[0]->maxTokensPerStep();
}

TensorParallelExecutor::~TensorParallelExecutor() { releaseExecutors(); }

void TensorParallelExecutor::releaseExecutors() {
  // Each executor goes on the thread that made it (its context is current
  // there); the threads and the communicators after them.
  for (size_t r = 0; r < workers_.size() && r < executors_.size(); ++r)
    workers_[r]->post([this, r] { executors_[r].reset(); });
  for (auto &w : workers_)
    w->wait();
}

void TensorParallelExecutor::onEveryRank(const std::function<void(int)> &task) {
  for (size_t r = 0; r < workers_.size(); ++r)
    workers_[r]->post([&task, r] { task(static_cast<int>(r)); });
  // A rank that failed while others still run would leave them waiting in a
  // collective: after a grace period, abort the communicators (their
  // kernels return) and wait for everyone.
  constexpr auto kPoll = std::chrono::milliseconds(50);
  constexpr int kGracePolls = 40; // 2 s
  int failedPolls = 0;
  while (true) {
    bool allDone = true, someFailed = false;
    for (auto &w : workers_) {
      const bool done = w->waitFor(kPoll);
      allDone &= done;
      someFailed |= done && w->error();
    }
    if (allDone)
      break;
    if (someFailed && ++failedPolls >= kGracePolls && !nccl_->aborted()) {
      nccl_->abort();
      broken_ = true;
    }
  }
  for (size_t r = 0; r < workers_.size(); ++r)
    if (std::exception_ptr e = workers_[r]->error()) {
      if (!broken_)
        std::rethrow_exception(e);
      try {
        std::rethrow_exception(e);
      } catch (const std::exception &x) {
        fail("GPU rank ", r, " failed: ", x.what(),
             "; the other GPUs' collectives were aborted and this run "
             "cannot continue");
      }
    }
}

void TensorParallelExecutor::step(const StepBatch &batch,
                                  const StepOutput &out) {
  if (broken_)
    fail("a GPU of this tensor-parallel run failed earlier; restart solrun");
  if (!batch.chainedRows.empty())
    fail("internal error: the tensor-parallel executor does not chain steps");
  // Ranks other than 0 compute the same logits but choose no tokens.
  StepBatch quiet = batch;
  quiet.sampling = {};
  quiet.penalties = {};
  quiet.logitBias = {};
  quiet.numTopLogprobs = 0;
  // Bad input is refused here, before any rank starts: a rank that refused
  // it alone would leave the others waiting in a collective.
  for (size_t r = 0; r < executors_.size(); ++r)
    executors_[r]->checkStep(r == 0 ? batch : quiet,
                             r == 0 ? out : StepOutput{});
  onEveryRank([&](int r) {
    if (r == 0)
      executors_[0]->step(batch, out);
    else
      executors_[static_cast<size_t>(r)]->step(quiet, StepOutput{});
  });
}

} // namespace sol::cuda

//===- Nccl.h - Collectives between the GPUs of one process ----*- C++ -*-===//
//
// A tensor-parallel plan runs one executor per GPU, all in this process;
// their AllReduce and AllGather ops go through NCCL (the collective library
// of the CUDA toolkit, loaded with dlopen like cuBLASLt, so solrun starts
// without it): one communicator per GPU, made together by ncclCommInitAll.
// Each rank's thread issues its own calls on its own stream; they are
// captured into the decode steps' CUDA graphs like kernels. A rank that
// fails mid-step would leave the others waiting inside a collective:
// abort() ends every communicator's pending work so that nothing hangs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan_generated.h"

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sol::cuda {

class NcclGroup {
public:
  /// Communicators for `devices` (ordinals; rank r drives devices[r]).
  /// Throws sol::Error when NCCL cannot be loaded (SOL_NCCL_LIBRARY names
  /// the library to load) or initialised.
  static std::unique_ptr<NcclGroup> create(std::span<const int> devices);
  ~NcclGroup();
  NcclGroup(const NcclGroup &) = delete;
  NcclGroup &operator=(const NcclGroup &) = delete;

  int ranks() const { return static_cast<int>(comms_.size()); }

  /// In place on rank `rank`'s `count` elements at `buffer`: their sum over
  /// the ranks, queued on `stream`.
  void allReduceSum(int rank, CUdeviceptr buffer, std::size_t count,
                    fb::DType dtype, CUstream stream);
  /// Every rank's `count` elements at `send`, rank 0's first, into
  /// `receive` (ranks x count), queued on `stream`.
  void allGather(int rank, CUdeviceptr send, CUdeviceptr receive,
                 std::size_t count, fb::DType dtype, CUstream stream);
  /// Ends every communicator's pending and future work (a rank failed);
  /// later collectives throw. Safe to call from any thread, more than once.
  void abort();
  bool aborted() const { return aborted_; }

  struct Api;

private:
  NcclGroup() = default;
  void check(int rank, int result, const char *call) const;

  std::unique_ptr<Api> api_;
  std::vector<void *> comms_; // ncclComm_t
  std::atomic<bool> aborted_{false};
};

} // namespace sol::cuda

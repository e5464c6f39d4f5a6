//===- Nccl.cpp - Collectives between the GPUs of one process -------------===//
#include "runtime/cuda/Nccl.h"

#include "runtime/support/Error.h"

#include <nccl.h>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace sol::cuda {

struct NcclGroup::Api {
  void *library = nullptr;
  decltype(&::ncclCommInitAll) commInitAll;
  decltype(&::ncclCommDestroy) commDestroy;
  decltype(&::ncclCommAbort) commAbort;
  decltype(&::ncclGetErrorString) errorString;
  decltype(&::ncclGetLastError) lastError;
  decltype(&::ncclAllReduce) allReduce;
  decltype(&::ncclAllGather) allGather;
};

namespace {

/// Sets `fn` to the library's `name`; a missing one is an error naming it.
template <typename Fn> void resolve(void *library, Fn &fn, const char *name) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn)
    fail("the NCCL library found lacks ", name,
         ", which Sol calls; install a newer NCCL 2 or name one with "
         "SOL_NCCL_LIBRARY");
}

ncclDataType_t ncclType(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::BF16:
    return ncclBfloat16;
  case fb::DType::F16:
    return ncclFloat16;
  case fb::DType::F32:
    return ncclFloat32;
  default:
    fail("a tensor-parallel collective over ", fb::EnumNameDType(dtype),
         " values, which Sol does not reduce");
  }
}

} // namespace

std::unique_ptr<NcclGroup> NcclGroup::create(std::span<const int> devices) {
  std::vector<std::string> names;
  if (const char *v = std::getenv("SOL_NCCL_LIBRARY"); v && *v)
    names.push_back(v);
  const std::string cudaHome =
      std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda";
  names.insert(names.end(), {"libnccl.so.2", cudaHome + "/lib64/libnccl.so.2",
                             cudaHome + "/lib/libnccl.so.2"});
  void *library = nullptr;
  for (const std::string &name : names)
    if ((library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!library)
    fail("a plan split over ", devices.size(),
         " GPUs needs NCCL, but libnccl.so.2 was found neither on the "
         "library path nor under ",
         cudaHome,
         "/lib64; install it (the CUDA toolkit's, or pip's "
         "nvidia-nccl) or name it with SOL_NCCL_LIBRARY");
  std::unique_ptr<NcclGroup> group(new NcclGroup());
  group->api_ = std::make_unique<Api>();
  Api &a = *group->api_;
  a.library = library;
  resolve(library, a.commInitAll, "ncclCommInitAll");
  resolve(library, a.commDestroy, "ncclCommDestroy");
  resolve(library, a.commAbort, "ncclCommAbort");
  resolve(library, a.errorString, "ncclGetErrorString");
  resolve(library, a.lastError, "ncclGetLastError");
  resolve(library, a.allReduce, "ncclAllReduce");
  resolve(library, a.allGather, "ncclAllGather");
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  group->check(-1,
               a.commInitAll(comms.data(), static_cast<int>(devices.size()),
                             devices.data()),
               "ncclCommInitAll");
  group->comms_.assign(comms.begin(), comms.end());
  return group;
}

NcclGroup::~NcclGroup() {
  if (!api_)
    return;
  for (void *comm : comms_)
    if (comm) {
      if (aborted_)
        continue; // aborted communicators are freed by the abort
      api_->commDestroy(static_cast<ncclComm_t>(comm));
    }
  // The library stays loaded: unloading it at exit races its own threads.
}

void NcclGroup::check(int rank, int result, const char *call) const {
  if (result == ncclSuccess)
    return;
  const auto r = static_cast<ncclResult_t>(result);
  std::string detail;
  if (rank >= 0 && rank < static_cast<int>(comms_.size()))
    if (const char *last =
            api_->lastError(static_cast<ncclComm_t>(comms_[rank]));
        last && *last)
      detail = std::string(" (") + last + ")";
  fail(call, (rank >= 0 ? " on GPU rank " + std::to_string(rank) : ""),
       " failed: ", api_->errorString(r), detail,
       "; NCCL_DEBUG=WARN says more");
}

void NcclGroup::allReduceSum(int rank, CUdeviceptr buffer, std::size_t count,
                             fb::DType dtype, CUstream stream) {
  if (aborted_)
    fail("the GPUs' collectives were aborted after a rank failed; restart");
  auto *p = reinterpret_cast<void *>(static_cast<uintptr_t>(buffer));
  check(rank,
        api_->allReduce(p, p, count, ncclType(dtype), ncclSum,
                        static_cast<ncclComm_t>(comms_.at(rank)),
                        reinterpret_cast<cudaStream_t>(stream)),
        "ncclAllReduce");
}

void NcclGroup::allGather(int rank, CUdeviceptr send, CUdeviceptr receive,
                          std::size_t count, fb::DType dtype, CUstream stream) {
  if (aborted_)
    fail("the GPUs' collectives were aborted after a rank failed; restart");
  check(rank,
        api_->allGather(
            reinterpret_cast<const void *>(static_cast<uintptr_t>(send)),
            reinterpret_cast<void *>(static_cast<uintptr_t>(receive)), count,
            ncclType(dtype), static_cast<ncclComm_t>(comms_.at(rank)),
            reinterpret_cast<cudaStream_t>(stream)),
        "ncclAllGather");
}

void NcclGroup::abort() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (aborted_.exchange(true))
    return;
  for (void *comm : comms_)
    if (comm)
      api_->commAbort(static_cast<ncclComm_t>(comm));
}

} // namespace sol::cuda

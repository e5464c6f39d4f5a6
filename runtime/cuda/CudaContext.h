//===- CudaContext.h - A GPU and its primary context ------------*- C++ -*-===//
//
// Retains the device's primary context (the one the CUDA runtime would use,
// so libraries such as cuBLASLt share it) and makes it current on the
// creating thread. Also reads what kernels are tuned against: multiprocessor
// count, L2 size, shared memory limit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

namespace sol::cuda {

struct DeviceMemoryInfo {
  std::size_t freeBytes = 0;
  std::size_t totalBytes = 0;
};

class CudaContext {
public:
  /// Throws sol::Error when the driver is missing or `ordinal` is not a GPU.
  explicit CudaContext(int ordinal = 0);
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  /// Makes the context current on the calling thread (needed once per thread
  /// that issues driver calls).
  void makeCurrent() const;
  void synchronize() const;
  DeviceMemoryInfo memoryInfo() const;

  int ordinal() const { return ordinal_; }
  CUdevice device() const { return device_; }
  CUcontext handle() const { return context_; }
  const std::string &name() const { return name_; }
  int computeCapabilityMajor() const { return ccMajor_; }
  int computeCapabilityMinor() const { return ccMinor_; }
  /// "sm_90" for compute capability 9.0.
  std::string smArch() const;
  int multiprocessorCount() const { return smCount_; }
  int l2CacheBytes() const { return l2Bytes_; }
  int maxSharedMemoryPerBlockOptin() const { return maxSharedOptin_; }
  std::size_t totalMemoryBytes() const { return totalMemory_; }

private:
  int attribute(CUdevice_attribute attr) const;

  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string name_;
  int ccMajor_ = 0;
  int ccMinor_ = 0;
  int smCount_ = 0;
  int l2Bytes_ = 0;
  int maxSharedOptin_ = 0;
  std::size_t totalMemory_ = 0;
};

} // namespace sol::cuda

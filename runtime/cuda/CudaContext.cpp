//===- CudaContext.cpp - A GPU and its primary context --------------------===//

#include "runtime/cuda/CudaContext.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/support/Error.h"

namespace sol::cuda {

CudaContext::CudaContext(int ordinal) : ordinal_(ordinal) {
  const DriverApi &api = driverApi();
  int count = 0;
  checkCuda(api.deviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    fail("GPU ", ordinal, " does not exist: the driver sees ", count,
         " GPU(s)");
  checkCuda(api.deviceGet(&device_, ordinal), "cuDeviceGet");
  char name[256] = {};
  checkCuda(api.deviceGetName(name, sizeof name - 1, device_),
            "cuDeviceGetName");
  name_ = name;
  ccMajor_ = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  ccMinor_ = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  smCount_ = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  l2Bytes_ = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  maxSharedOptin_ =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  checkCuda(api.deviceTotalMem(&totalMemory_, device_), "cuDeviceTotalMem");
  checkCuda(api.primaryCtxRetain(&context_, device_),
            "cuDevicePrimaryCtxRetain");
  try {
    makeCurrent();
  } catch (...) {
    api.primaryCtxRelease(device_);
    throw;
  }
}

CudaContext::~CudaContext() {
  if (context_ == nullptr)
    return;
  const DriverApi &api = driverApi();
  CUcontext current = nullptr;
  if (api.ctxGetCurrent(&current) == CUDA_SUCCESS && current == context_)
    api.ctxSetCurrent(nullptr);
  api.primaryCtxRelease(device_);
}

int CudaContext::attribute(CUdevice_attribute attr) const {
  int value = 0;
  checkCuda(driverApi().deviceGetAttribute(&value, attr, device_),
            "cuDeviceGetAttribute");
  return value;
}

void CudaContext::makeCurrent() const {
  checkCuda(driverApi().ctxSetCurrent(context_), "cuCtxSetCurrent");
}

void CudaContext::synchronize() const {
  checkCuda(driverApi().ctxSynchronize(), "cuCtxSynchronize");
}

DeviceMemoryInfo CudaContext::memoryInfo() const {
  DeviceMemoryInfo info;
  checkCuda(driverApi().memGetInfo(&info.freeBytes, &info.totalBytes),
            "cuMemGetInfo");
  return info;
}

std::string CudaContext::smArch() const {
  return cat("sm_", ccMajor_, ccMinor_);
}

} // namespace sol::cuda

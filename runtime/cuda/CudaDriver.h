//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// solrun must start on machines without an NVIDIA driver and fall back to the
// CPU, so libcuda.so.1 is opened with dlopen instead of being linked. Only
// cuda.h's types are used at build time. Each entry point is looked up under
// the exact versioned symbol whose prototype cuda.h declares (cuMemAlloc_v2,
// ...), so the pointer types always match the driver's functions.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <string>

namespace sol::cuda {

struct DriverApi {
  decltype(&::cuInit) init;
  decltype(&::cuDriverGetVersion) driverGetVersion;
  decltype(&::cuGetErrorName) getErrorName;
  decltype(&::cuGetErrorString) getErrorString;
  decltype(&::cuDeviceGet) deviceGet;
  decltype(&::cuDeviceGetCount) deviceGetCount;
  decltype(&::cuDeviceGetName) deviceGetName;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute;
  decltype(&::cuDeviceTotalMem) deviceTotalMem;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain;
  decltype(&::cuDevicePrimaryCtxRelease) primaryCtxRelease;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent;
  decltype(&::cuCtxSynchronize) ctxSynchronize;
  decltype(&::cuMemGetInfo) memGetInfo;
  decltype(&::cuMemAlloc) memAlloc;
  decltype(&::cuMemFree) memFree;
  decltype(&::cuMemAllocHost) memAllocHost;
  decltype(&::cuMemFreeHost) memFreeHost;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync;
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync;
  decltype(&::cuMemcpy2DAsync) memcpy2DAsync;
  decltype(&::cuMemsetD8Async) memsetD8Async;
  decltype(&::cuMemsetD32Async) memsetD32Async;
  decltype(&::cuModuleLoadData) moduleLoadData;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx;
  decltype(&::cuModuleUnload) moduleUnload;
  decltype(&::cuModuleGetFunction) moduleGetFunction;
  decltype(&::cuFuncGetAttribute) funcGetAttribute;
  decltype(&::cuFuncSetAttribute) funcSetAttribute;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuLaunchKernelEx) launchKernelEx;
  decltype(&::cuStreamCreate) streamCreate;
  decltype(&::cuStreamDestroy) streamDestroy;
  decltype(&::cuStreamSynchronize) streamSynchronize;
  decltype(&::cuStreamBeginCapture) streamBeginCapture;
  decltype(&::cuStreamEndCapture) streamEndCapture;
  decltype(&::cuEventCreate) eventCreate;
  decltype(&::cuEventDestroy) eventDestroy;
  decltype(&::cuEventRecord) eventRecord;
  decltype(&::cuEventSynchronize) eventSynchronize;
  decltype(&::cuEventElapsedTime) eventElapsedTime;
  decltype(&::cuGraphInstantiate) graphInstantiate;
  decltype(&::cuGraphLaunch) graphLaunch;
  decltype(&::cuGraphDestroy) graphDestroy;
  decltype(&::cuGraphExecDestroy) graphExecDestroy;
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled;

  /// The driver's CUDA version, e.g. 13000.
  int driverVersion = 0;
};

/// Loads libcuda.so.1 and calls cuInit once per process. Throws sol::Error
/// saying why when there is no usable driver.
const DriverApi &driverApi();

/// True when the driver loads, initialises and sees at least one GPU. Never
/// throws; cudaUnavailableReason() says why it returned false.
bool cudaAvailable() noexcept;
std::string cudaUnavailableReason();

/// Throws sol::Error "<call> failed: CUDA_ERROR_X (description)" unless
/// `result` is CUDA_SUCCESS.
void checkCuda(CUresult result, const char *call);

/// "CUDA_ERROR_X (description)" for `result`.
std::string cudaErrorText(CUresult result);

} // namespace sol::cuda

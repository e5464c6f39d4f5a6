//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//

#include "runtime/cuda/CudaDriver.h"

#include "runtime/support/Error.h"

#include <dlfcn.h>
#include <initializer_list>
#include <memory>
#include <mutex>

namespace sol::cuda {
namespace {

// The first of `symbols` the driver exports. Several names are tried where an
// older driver exports the same prototype under an older name.
template <typename Fn>
void resolve(void *handle, Fn &fn,
             std::initializer_list<const char *> symbols) {
  for (const char *symbol : symbols) {
    if (void *address = dlsym(handle, symbol)) {
      fn = reinterpret_cast<Fn>(address);
      return;
    }
  }
  fail("the NVIDIA driver (libcuda.so.1) lacks ", *symbols.begin(),
       "; it is too old for this build of Sol (CUDA 12 or newer is needed)");
}

std::unique_ptr<DriverApi> load() {
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char *why = dlerror();
    fail("cannot load the NVIDIA driver library libcuda.so.1 (",
         why ? why : "not found",
         "); install the NVIDIA driver or run on the CPU");
  }
  auto api = std::make_unique<DriverApi>();
  DriverApi &a = *api;
  resolve(handle, a.init, {"cuInit"});
  resolve(handle, a.driverGetVersion, {"cuDriverGetVersion"});
  resolve(handle, a.getErrorName, {"cuGetErrorName"});
  resolve(handle, a.getErrorString, {"cuGetErrorString"});
  resolve(handle, a.deviceGet, {"cuDeviceGet"});
  resolve(handle, a.deviceGetCount, {"cuDeviceGetCount"});
  resolve(handle, a.deviceGetName, {"cuDeviceGetName"});
  resolve(handle, a.deviceGetAttribute, {"cuDeviceGetAttribute"});
  resolve(handle, a.deviceTotalMem, {"cuDeviceTotalMem_v2"});
  resolve(handle, a.primaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  resolve(handle, a.primaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2"});
  resolve(handle, a.ctxSetCurrent, {"cuCtxSetCurrent"});
  resolve(handle, a.ctxGetCurrent, {"cuCtxGetCurrent"});
  resolve(handle, a.ctxSynchronize, {"cuCtxSynchronize"});
  resolve(handle, a.memGetInfo, {"cuMemGetInfo_v2"});
  resolve(handle, a.memAlloc, {"cuMemAlloc_v2"});
  resolve(handle, a.memFree, {"cuMemFree_v2"});
  resolve(handle, a.memAllocHost, {"cuMemAllocHost_v2"});
  resolve(handle, a.memFreeHost, {"cuMemFreeHost"});
  resolve(handle, a.memcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"});
  resolve(handle, a.memcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"});
  resolve(handle, a.memcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
  resolve(handle, a.memcpy2DAsync, {"cuMemcpy2DAsync_v2"});
  resolve(handle, a.memsetD8Async, {"cuMemsetD8Async"});
  resolve(handle, a.memsetD32Async, {"cuMemsetD32Async"});
  resolve(handle, a.moduleLoadData, {"cuModuleLoadData"});
  resolve(handle, a.moduleLoadDataEx, {"cuModuleLoadDataEx"});
  resolve(handle, a.moduleUnload, {"cuModuleUnload"});
  resolve(handle, a.moduleGetFunction, {"cuModuleGetFunction"});
  resolve(handle, a.funcGetAttribute, {"cuFuncGetAttribute"});
  resolve(handle, a.funcSetAttribute, {"cuFuncSetAttribute"});
  resolve(handle, a.launchKernel, {"cuLaunchKernel"});
  resolve(handle, a.launchKernelEx, {"cuLaunchKernelEx"});
  resolve(handle, a.streamCreate, {"cuStreamCreate"});
  resolve(handle, a.streamDestroy, {"cuStreamDestroy_v2"});
  resolve(handle, a.streamSynchronize, {"cuStreamSynchronize"});
  resolve(handle, a.streamBeginCapture, {"cuStreamBeginCapture_v2"});
  resolve(handle, a.streamEndCapture, {"cuStreamEndCapture"});
  resolve(handle, a.eventCreate, {"cuEventCreate"});
  resolve(handle, a.eventDestroy, {"cuEventDestroy_v2"});
  resolve(handle, a.eventRecord, {"cuEventRecord"});
  resolve(handle, a.eventSynchronize, {"cuEventSynchronize"});
  // Same prototype; _v2 (CUDA 12.8+) is what cuda.h 13 maps the name to.
  resolve(handle, a.eventElapsedTime,
          {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  resolve(handle, a.graphInstantiate, {"cuGraphInstantiateWithFlags"});
  resolve(handle, a.graphLaunch, {"cuGraphLaunch"});
  resolve(handle, a.graphDestroy, {"cuGraphDestroy"});
  resolve(handle, a.graphExecDestroy, {"cuGraphExecDestroy"});
  resolve(handle, a.tensorMapEncodeTiled, {"cuTensorMapEncodeTiled"});

  const CUresult initResult = a.init(0);
  if (initResult != CUDA_SUCCESS) {
    const char *name = nullptr;
    a.getErrorName(initResult, &name);
    fail("cuInit failed: ", name ? name : "unknown error",
         "; the NVIDIA driver is installed but no GPU can be used");
  }
  if (a.driverGetVersion(&a.driverVersion) != CUDA_SUCCESS)
    a.driverVersion = 0;
  return api;
}

struct DriverState {
  std::once_flag once;
  std::unique_ptr<DriverApi> api;
  std::string error;
};

DriverState &state() {
  static DriverState s;
  return s;
}

void ensureLoaded() {
  DriverState &s = state();
  std::call_once(s.once, [&s] {
    try {
      s.api = load();
    } catch (const std::exception &e) {
      s.error = e.what();
    }
  });
}

} // namespace

const DriverApi &driverApi() {
  ensureLoaded();
  if (!state().api)
    throw Error(state().error);
  return *state().api;
}

bool cudaAvailable() noexcept {
  try {
    const DriverApi &api = driverApi();
    int count = 0;
    return api.deviceGetCount(&count) == CUDA_SUCCESS && count > 0;
  } catch (...) {
    return false;
  }
}

std::string cudaUnavailableReason() {
  try {
    const DriverApi &api = driverApi();
    int count = 0;
    const CUresult result = api.deviceGetCount(&count);
    if (result != CUDA_SUCCESS)
      return "cuDeviceGetCount failed: " + cudaErrorText(result);
    if (count == 0)
      return "the NVIDIA driver sees no GPU";
    return "";
  } catch (const std::exception &e) {
    return e.what();
  }
}

std::string cudaErrorText(CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  ensureLoaded();
  if (const DriverApi *api = state().api.get()) {
    api->getErrorName(result, &name);
    api->getErrorString(result, &text);
  }
  return cat(name ? name : "CUDA error", " (", text ? text : "no description",
             ", code ", static_cast<int>(result), ")");
}

void checkCuda(CUresult result, const char *call) {
  if (result != CUDA_SUCCESS)
    fail(call, " failed: ", cudaErrorText(result));
}

} // namespace sol::cuda

//===- Module.cpp - Loaded GPU code and its kernels -----------------------===//

#include "runtime/cuda/Module.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Stream.h"
#include "runtime/support/Error.h"

#include <array>
#include <utility>
#include <vector>

namespace sol::cuda {

void Kernel::setMaxDynamicSharedMemory(int bytes) const {
  const CUresult result = driverApi().funcSetAttribute(
      function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (result != CUDA_SUCCESS)
    fail("cuFuncSetAttribute(", name_, ", max dynamic shared memory = ", bytes,
         " bytes) failed: ", cudaErrorText(result));
}

int Kernel::attribute(CUfunction_attribute attr) const {
  int value = 0;
  checkCuda(driverApi().funcGetAttribute(&value, attr, function_),
            "cuFuncGetAttribute");
  return value;
}

void Kernel::failArgs(std::string_view mangled) const {
  fail("kernel ", name_, " is launched with the arguments struct ",
       mangled.substr(0, mangled.size() - 1)
           .substr(mangled.find_first_not_of("0123456789")),
       ", which is not its parameter (codegen/kernels/LaunchArgs.h)");
}

void Kernel::launchWithParams(const LaunchDims &dims, const Stream &stream,
                              void **params) const {
  const Dim3 &g = dims.grid;
  const Dim3 &b = dims.block;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0)
    fail("launch of ", name_, " with an empty grid (", g.x, ",", g.y, ",", g.z,
         ") or block (", b.x, ",", b.y, ",", b.z, ")");
  CUresult result;
  if (dims.dependent || dims.clusterY > 1) {
    std::array<CUlaunchAttribute, 2> attributes{};
    unsigned count = 0;
    if (dims.dependent) {
      CUlaunchAttribute &a = attributes[count++];
      a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      a.value.programmaticStreamSerializationAllowed = 1;
    }
    if (dims.clusterY > 1) {
      if (g.y % dims.clusterY != 0)
        fail("launch of ", name_, ": grid y ", g.y,
             " is not a multiple of the cluster's ", dims.clusterY);
      CUlaunchAttribute &a = attributes[count++];
      a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      a.value.clusterDim.x = 1;
      a.value.clusterDim.y = dims.clusterY;
      a.value.clusterDim.z = 1;
    }
    CUlaunchConfig config{};
    config.gridDimX = g.x;
    config.gridDimY = g.y;
    config.gridDimZ = g.z;
    config.blockDimX = b.x;
    config.blockDimY = b.y;
    config.blockDimZ = b.z;
    config.sharedMemBytes = dims.sharedBytes;
    config.hStream = stream.handle();
    config.attrs = attributes.data();
    config.numAttrs = count;
    result = driverApi().launchKernelEx(&config, function_, params, nullptr);
  } else {
    result = driverApi().launchKernel(function_, g.x, g.y, g.z, b.x, b.y, b.z,
                                      dims.sharedBytes, stream.handle(), params,
                                      nullptr);
  }
  if (result != CUDA_SUCCESS)
    fail("cuLaunchKernel(", name_, ", grid (", g.x, ",", g.y, ",", g.z,
         "), block (", b.x, ",", b.y, ",", b.z, "), ", dims.sharedBytes,
         " bytes shared) failed: ", cudaErrorText(result));
}

Module::Module(std::span<const std::uint8_t> cubin, std::string_view ptx,
               std::string label)
    : label_(std::move(label)) {
  const DriverApi &api = driverApi();
  if (cubin.empty() && ptx.empty())
    fail("module ", label_, " has neither a cubin nor PTX to load");
  std::string cubinError;
  if (!cubin.empty()) {
    const CUresult result = api.moduleLoadData(&module_, cubin.data());
    if (result == CUDA_SUCCESS)
      return;
    module_ = nullptr;
    cubinError = cudaErrorText(result);
    if (ptx.empty())
      fail("cuModuleLoadData(", label_, " cubin) failed: ", cubinError,
           "; no PTX to fall back to");
  }
  // JIT-compile the PTX, keeping the JIT's error log for the message.
  const std::string ptxText(ptx); // needs a terminating NUL
  std::vector<char> log(16384, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size() - 1)};
  const CUresult result =
      api.moduleLoadDataEx(&module_, ptxText.c_str(), 2, options, values);
  if (result != CUDA_SUCCESS) {
    module_ = nullptr;
    fail("cannot load module ", label_,
         cubinError.empty()
             ? std::string()
             : cat(": its cubin was rejected (", cubinError, ")"),
         "; JIT compilation of its PTX failed: ", cudaErrorText(result),
         log[0] ? cat("\n", log.data()) : std::string());
  }
  fromPtx_ = true;
}

Module::~Module() { reset(); }

Module::Module(Module &&other) noexcept
    : module_(std::exchange(other.module_, nullptr)), fromPtx_(other.fromPtx_),
      label_(std::move(other.label_)) {}

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    reset();
    module_ = std::exchange(other.module_, nullptr);
    fromPtx_ = other.fromPtx_;
    label_ = std::move(other.label_);
  }
  return *this;
}

void Module::reset() noexcept {
  if (module_ != nullptr)
    driverApi().moduleUnload(module_);
  module_ = nullptr;
}

Kernel Module::kernel(const std::string &loweredName) const {
  CUfunction function = nullptr;
  const CUresult result =
      driverApi().moduleGetFunction(&function, module_, loweredName.c_str());
  if (result != CUDA_SUCCESS)
    fail("module ", label_, " has no kernel ", loweredName, ": ",
         cudaErrorText(result));
  return Kernel(function, loweredName);
}

} // namespace sol::cuda

//===- CudaDriverTest.cpp - The driver layer without a GPU ----------------===//
//
// CI machines have no GPU (and usually no driver): everything must fail with
// a sol::Error that says why, and cudaAvailable() must answer without
// throwing. On a GPU machine the same tests check the positive path.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/DeviceBuffer.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

namespace sol::test {
namespace {

TEST(CudaDriver, AvailabilityNeverThrows) {
  bool available = false;
  EXPECT_NO_THROW(available = cuda::cudaAvailable());
  EXPECT_NO_THROW(cuda::cudaAvailable()); // and is stable
  EXPECT_EQ(available, cuda::cudaAvailable());
  if (available)
    EXPECT_EQ(cuda::cudaUnavailableReason(), "");
  else
    EXPECT_FALSE(cuda::cudaUnavailableReason().empty());
}

TEST(CudaDriver, WithoutAGpuEveryEntryPointFailsWithAReason) {
  if (cuda::cudaAvailable())
    GTEST_SKIP() << "a GPU is present";
  const std::string reason = cuda::cudaUnavailableReason();
  try {
    cuda::CudaContext context(0);
    FAIL() << "created a CUDA context without a GPU";
  } catch (const sol::Error &e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
  EXPECT_THROW(cuda::DeviceBuffer(1024), sol::Error);
  if (reason.find("libcuda.so.1") != std::string::npos) {
    // No driver at all: the message tells the user what to install.
    EXPECT_NE(reason.find("NVIDIA driver"), std::string::npos) << reason;
    EXPECT_THROW(cuda::driverApi(), sol::Error);
  }
}

TEST(CudaDriver, WithAGpuAContextDescribesTheDevice) {
  if (!cuda::cudaAvailable())
    GTEST_SKIP() << "no GPU: " << cuda::cudaUnavailableReason();
  cuda::CudaContext context(0);
  EXPECT_FALSE(context.name().empty());
  EXPECT_GT(context.multiprocessorCount(), 0);
  EXPECT_EQ(context.smArch().rfind("sm_", 0), 0u);
  EXPECT_GT(context.memoryInfo().totalBytes, 0u);
  EXPECT_THROW(cuda::CudaContext(1 << 20), sol::Error);
}

TEST(CudaDriver, ErrorTextNamesTheCall) {
  if (cuda::cudaAvailable()) {
    try {
      cuda::checkCuda(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
      FAIL();
    } catch (const sol::Error &e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("cuMemAlloc failed"), std::string::npos);
      EXPECT_NE(message.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos);
    }
  } else {
    // Without a driver there is no error string table; the code is kept.
    try {
      cuda::checkCuda(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
      FAIL();
    } catch (const sol::Error &e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("cuMemAlloc failed"), std::string::npos);
      EXPECT_NE(message.find("code 2"), std::string::npos) << message;
    }
  }
  EXPECT_NO_THROW(cuda::checkCuda(CUDA_SUCCESS, "cuInit"));
}

} // namespace
} // namespace sol::test

//===- PinnedBuffer.cpp - Page-locked host memory -------------------------===//

#include "runtime/cuda/PinnedBuffer.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/support/Error.h"

#include <utility>

namespace sol::cuda {

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0)
    return;
  const CUresult result = driverApi().memAllocHost(&data_, bytes);
  if (result != CUDA_SUCCESS)
    fail("cuMemAllocHost of ", bytes, " bytes failed: ", cudaErrorText(result));
}

PinnedBuffer::~PinnedBuffer() { reset(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer &PinnedBuffer::operator=(PinnedBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::reset() noexcept {
  if (data_ != nullptr)
    driverApi().memFreeHost(data_);
  data_ = nullptr;
  bytes_ = 0;
}

} // namespace sol::cuda

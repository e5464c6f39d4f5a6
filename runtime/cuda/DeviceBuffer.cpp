//===- DeviceBuffer.cpp - Owned GPU memory --------------------------------===//

#include "runtime/cuda/DeviceBuffer.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Stream.h"
#include "runtime/support/Error.h"

#include <utility>

namespace sol::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0)
    return;
  const CUresult result = driverApi().memAlloc(&ptr_, bytes);
  if (result != CUDA_SUCCESS)
    fail("cuMemAlloc of ", bytes, " bytes (", bytes >> 20,
         " MiB) failed: ", cudaErrorText(result));
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != 0)
    driverApi().memFree(ptr_);
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::checkRange(std::size_t offset, std::size_t bytes,
                              const char *what) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    fail(what, ": ", bytes, " bytes at offset ", offset,
         " do not fit a device buffer of ", bytes_, " bytes");
}

void DeviceBuffer::copyFromHost(const void *src, std::size_t bytes,
                                const Stream &stream, std::size_t offset) {
  checkRange(offset, bytes, "copy to device");
  if (bytes == 0)
    return;
  checkCuda(
      driverApi().memcpyHtoDAsync(ptr_ + offset, src, bytes, stream.handle()),
      "cuMemcpyHtoDAsync");
}

void DeviceBuffer::copyToHost(void *dst, std::size_t bytes,
                              const Stream &stream, std::size_t offset) const {
  checkRange(offset, bytes, "copy to host");
  if (bytes == 0)
    return;
  checkCuda(
      driverApi().memcpyDtoHAsync(dst, ptr_ + offset, bytes, stream.handle()),
      "cuMemcpyDtoHAsync");
}

void DeviceBuffer::copyFromDevice(const DeviceBuffer &src, std::size_t bytes,
                                  const Stream &stream, std::size_t dstOffset,
                                  std::size_t srcOffset) {
  checkRange(dstOffset, bytes, "device copy destination");
  src.checkRange(srcOffset, bytes, "device copy source");
  if (bytes == 0)
    return;
  checkCuda(driverApi().memcpyDtoDAsync(ptr_ + dstOffset, src.ptr_ + srcOffset,
                                        bytes, stream.handle()),
            "cuMemcpyDtoDAsync");
}

void DeviceBuffer::fillBytes(unsigned char value, const Stream &stream) {
  if (bytes_ == 0)
    return;
  checkCuda(driverApi().memsetD8Async(ptr_, value, bytes_, stream.handle()),
            "cuMemsetD8Async");
}

void DeviceBuffer::fillWords(unsigned value, const Stream &stream) {
  if (bytes_ % 4 != 0)
    fail("fillWords: device buffer of ", bytes_,
         " bytes is not a whole number of 32-bit words");
  if (bytes_ == 0)
    return;
  checkCuda(
      driverApi().memsetD32Async(ptr_, value, bytes_ / 4, stream.handle()),
      "cuMemsetD32Async");
}

} // namespace sol::cuda

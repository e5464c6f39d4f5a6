//===- DeviceBuffer.h - Owned GPU memory ------------------------*- C++ -*-===//
#pragma once

#include <cuda.h>

#include <cstddef>
#include <span>

namespace sol::cuda {

class Stream;

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `bytes` of device memory in the current context; throws
  /// sol::Error naming the size when the GPU is out of memory.
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr address() const { return ptr_; }
  std::size_t size() const { return bytes_; }
  /// The address as a typed pointer, for kernel arguments.
  template <typename T> T *as() const { return reinterpret_cast<T *>(ptr_); }

  /// Asynchronous copies on `stream`; offsets and sizes are in bytes and are
  /// checked against the buffer.
  void copyFromHost(const void *src, std::size_t bytes, const Stream &stream,
                    std::size_t offset = 0);
  void copyToHost(void *dst, std::size_t bytes, const Stream &stream,
                  std::size_t offset = 0) const;
  void copyFromDevice(const DeviceBuffer &src, std::size_t bytes,
                      const Stream &stream, std::size_t dstOffset = 0,
                      std::size_t srcOffset = 0);
  /// Sets every byte to `value`.
  void fillBytes(unsigned char value, const Stream &stream);
  /// Sets every 32-bit word to `value` (size must be a multiple of 4).
  void fillWords(unsigned value, const Stream &stream);

  template <typename T>
  void upload(std::span<const T> data, const Stream &stream) {
    copyFromHost(data.data(), data.size_bytes(), stream);
  }
  template <typename T>
  void download(std::span<T> data, const Stream &stream) const {
    copyToHost(data.data(), data.size_bytes(), stream);
  }

private:
  void checkRange(std::size_t offset, std::size_t bytes,
                  const char *what) const;
  void reset() noexcept;
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

} // namespace sol::cuda

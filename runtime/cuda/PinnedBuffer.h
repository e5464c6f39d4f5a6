//===- PinnedBuffer.h - Page-locked host memory -----------------*- C++ -*-===//
//
// Host memory the GPU can copy to and from asynchronously (sampled token ids
// come back through one without stalling the step loop).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <span>

namespace sol::cuda {

class PinnedBuffer {
public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer &&other) noexcept;
  PinnedBuffer &operator=(PinnedBuffer &&other) noexcept;
  PinnedBuffer(const PinnedBuffer &) = delete;
  PinnedBuffer &operator=(const PinnedBuffer &) = delete;

  void *data() const { return data_; }
  std::size_t size() const { return bytes_; }
  /// The memory as `size() / sizeof(T)` elements of T.
  template <typename T> std::span<T> as() const {
    return {static_cast<T *>(data_), bytes_ / sizeof(T)};
  }

private:
  void reset() noexcept;
  void *data_ = nullptr;
  std::size_t bytes_ = 0;
};

} // namespace sol::cuda

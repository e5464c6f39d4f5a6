//===- Stream.h - A CUDA stream ---------------------------------*- C++ -*-===//
//
// Non-blocking (does not serialise with the legacy default stream), so kernel
// launches, copies and graph capture of one executor never wait on unrelated
// work. Capture turns the launches issued on the stream into a Graph.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

namespace sol::cuda {

class Graph;

class Stream {
public:
  Stream();
  ~Stream();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  CUstream handle() const { return stream_; }
  void synchronize() const;

  /// Records every following launch on this stream into a graph instead of
  /// running it, until endCapture().
  void beginCapture();
  Graph endCapture();

private:
  void reset() noexcept;
  CUstream stream_ = nullptr;
};

} // namespace sol::cuda

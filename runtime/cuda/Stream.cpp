//===- Stream.cpp - A CUDA stream -----------------------------------------===//

#include "runtime/cuda/Stream.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Graph.h"

#include <utility>

namespace sol::cuda {

Stream::Stream() {
  checkCuda(driverApi().streamCreate(&stream_, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate");
}

Stream::~Stream() { reset(); }

Stream::Stream(Stream &&other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    reset();
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::reset() noexcept {
  if (stream_ != nullptr)
    driverApi().streamDestroy(stream_);
  stream_ = nullptr;
}

void Stream::synchronize() const {
  checkCuda(driverApi().streamSynchronize(stream_), "cuStreamSynchronize");
}

void Stream::beginCapture() {
  // Thread-local mode: other threads' unrelated CUDA calls do not invalidate
  // this capture.
  checkCuda(driverApi().streamBeginCapture(stream_,
                                           CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture");
}

Graph Stream::endCapture() {
  CUgraph graph = nullptr;
  checkCuda(driverApi().streamEndCapture(stream_, &graph),
            "cuStreamEndCapture");
  return Graph(graph);
}

} // namespace sol::cuda

//===- Event.cpp - A CUDA event for ordering and timing -------------------===//

#include "runtime/cuda/Event.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Stream.h"

#include <utility>

namespace sol::cuda {

Event::Event(bool timing) {
  checkCuda(driverApi().eventCreate(&event_, timing ? CU_EVENT_DEFAULT
                                                    : CU_EVENT_DISABLE_TIMING),
            "cuEventCreate");
}

Event::~Event() { reset(); }

Event::Event(Event &&other) noexcept
    : event_(std::exchange(other.event_, nullptr)) {}

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    reset();
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::reset() noexcept {
  if (event_ != nullptr)
    driverApi().eventDestroy(event_);
  event_ = nullptr;
}

void Event::record(const Stream &stream) {
  checkCuda(driverApi().eventRecord(event_, stream.handle()), "cuEventRecord");
}

void Event::synchronize() const {
  checkCuda(driverApi().eventSynchronize(event_), "cuEventSynchronize");
}

float Event::elapsedMs(const Event &start, const Event &end) {
  float ms = 0.0f;
  checkCuda(driverApi().eventElapsedTime(&ms, start.event_, end.event_),
            "cuEventElapsedTime");
  return ms;
}

} // namespace sol::cuda

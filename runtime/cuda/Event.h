//===- Event.h - A CUDA event for ordering and timing -----------*- C++ -*-===//
#pragma once

#include <cuda.h>

namespace sol::cuda {

class Stream;

class Event {
public:
  /// Timing events record timestamps; plain ones only order work (cheaper).
  explicit Event(bool timing = true);
  ~Event();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  void record(const Stream &stream);
  void synchronize() const;
  CUevent handle() const { return event_; }

  /// Milliseconds between two recorded timing events (both must be done).
  static float elapsedMs(const Event &start, const Event &end);

private:
  void reset() noexcept;
  CUevent event_ = nullptr;
};

} // namespace sol::cuda

//===- Progress.h - solbench: a progress line on a terminal -----*- C++ -*-===//
//
// While a level runs, redraws one line on stderr a few times a second:
// the level, requests done and failed, and the time spent. Only when stderr
// is a terminal; piped output stays clean.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace sol::bench {

class Progress {
public:
  /// Enabled when `enabled` (normally: stderr is a terminal).
  explicit Progress(bool enabled);
  ~Progress();

  /// Starts showing `label` with `total` requests to go.
  void begin(std::string label, size_t total);
  void requestDone(bool ok);
  /// Clears the line.
  void end();

private:
  const bool enabled_;
  std::atomic<size_t> done_{0}, failed_{0};
  size_t total_ = 0;
  std::string label_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool running_ = false;
  std::thread thread_;
};

} // namespace sol::bench

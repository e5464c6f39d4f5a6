//===- RequestChannel.h - Engine outputs of one HTTP request ----*- C++ -*-===//
//
// The engine loop pushes the outputs of an HTTP request's engine requests
// (one per choice: n x prompts) into its channel; the HTTP thread waits on
// it. First the loop settles the submission (accepted, or rejected with the
// engine's reason); then outputs arrive, tagged with the choice index.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Request.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace sol {

class RequestChannel {
public:
  enum class State { Pending, Accepted, Rejected };

  struct Item {
    int32_t index = 0; // the choice
    RequestOutput output;
    /// Set when the engine failed while running the request (it is over).
    std::string error;
  };

  explicit RequestChannel(int32_t numChoices) : numChoices_(numChoices) {}

  int32_t numChoices() const { return numChoices_; }

  // The engine loop's side.
  void accept();
  void reject(std::string message);
  void push(int32_t index, RequestOutput output);
  /// push() without waking the HTTP thread; notify() wakes it. The engine
  /// thread queues a step's outputs this way and leaves the wake-ups (a
  /// system call each) to another thread, so the GPU waits less for it.
  void pushQuiet(int32_t index, RequestOutput output);
  void notify();
  void fail(int32_t index, std::string error);

  // The HTTP thread's side.
  /// Waits up to `timeout` for the submission to settle.
  State waitSettled(std::chrono::milliseconds timeout);
  const std::string &rejection() const { return rejection_; }
  /// Waits up to `timeout` for outputs; moves those queued into `out`
  /// (cleared first). Returns whether any were taken.
  bool take(std::vector<Item> &out, std::chrono::milliseconds timeout);

  /// Engine ids of the choices; the engine loop's thread only.
  std::vector<int64_t> engineIds;

private:
  const int32_t numChoices_;
  std::mutex mutex_;
  std::condition_variable ready_;
  State state_ = State::Pending;
  std::string rejection_;
  std::deque<Item> items_;
};

} // namespace sol

//===- EngineLoop.h - The engine on a thread of its own ---------*- C++ -*-===//
//
// The Engine is single-threaded; the server's HTTP threads are many. The
// loop owns the engine on one thread: it takes queued submissions and aborts,
// runs a step while anything is unfinished, and routes each step's outputs
// to the RequestChannel of the HTTP request they belong to. It also keeps a
// snapshot of the engine's stats for /metrics and /health, feeds the latency
// metrics, and logs one line of throughput every logInterval while busy.
//
// Overload: submissions are refused (SubmitStatus::Overloaded) while the
// requests not yet running (queued here or waiting in the engine) reach
// maxWaitingRequests, so a burst gets a quick 429 instead of an unbounded
// queue.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Engine.h"
#include "runtime/server/Metrics.h"
#include "runtime/server/RequestChannel.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sol {

struct EngineLoopOptions {
  /// Requests queued or waiting in the engine at most (see above).
  int32_t maxWaitingRequests = 1024;
  /// Seconds between throughput log lines while busy; 0: no log.
  double logIntervalS = 10;
};

class EngineLoop {
public:
  enum class SubmitStatus { Queued, Overloaded, Stopped };

  EngineLoop(Engine &engine, Metrics &metrics, EngineLoopOptions options);
  ~EngineLoop();
  EngineLoop(const EngineLoop &) = delete;
  EngineLoop &operator=(const EngineLoop &) = delete;

  void start();
  /// Aborts what is left and ends the thread.
  void stop();

  /// Queues one engine request per choice of an HTTP request. The channel
  /// settles (accepted or rejected) once the loop has submitted them.
  SubmitStatus submit(std::shared_ptr<RequestChannel> channel,
                      std::vector<Request> requests);
  /// Cancels the channel's requests (client gone); their KV blocks are freed.
  void abort(std::shared_ptr<RequestChannel> channel);
  /// Cancels every request in flight (shutdown).
  void abortAll();

  /// The engine's stats after the latest step.
  EngineStats stats() const;
  /// Engine requests submitted and not finished, plus those queued.
  int64_t inFlight() const;

private:
  struct Submission {
    std::shared_ptr<RequestChannel> channel;
    std::vector<Request> requests;
  };
  struct Route {
    std::shared_ptr<RequestChannel> channel;
    int32_t index = 0;
    RequestOutput::Clock::time_point lastToken;
    /// Aborted because a sibling choice was rejected: not a real request.
    bool silent = false;
  };

  void run();
  void submitNow(Submission &s);
  void route(RequestOutput &o);
  void failAll(const std::string &message);
  void publishStats();
  void maybeLog(bool force);
  /// Hands the channels that got outputs this step to the notifier thread.
  void postWakeUps();
  void notifyLoop();

  Engine &engine_;
  Metrics &metrics_;
  EngineLoopOptions options_;
  std::thread thread_;

  // Wake-ups of the HTTP threads (a futex call each, one per stream and
  // step), done off the engine thread (see RequestChannel::pushQuiet): the
  // GPU waits for the engine thread between steps, and serving 64 streams
  // of the Llama-3.2-1B shape ran 7% below --bench while they were on it
  // (bench/README.md; this change itself is not yet measured on a GPU).
  std::vector<std::shared_ptr<RequestChannel>> stepWakeUps_;
  std::thread notifier_;
  std::mutex notifyMutex_;
  std::condition_variable notifyReady_;
  std::vector<std::shared_ptr<RequestChannel>> wakeUps_;
  bool notifierStop_ = false;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Submission> pending_;
  int64_t pendingRequests_ = 0;
  std::vector<std::shared_ptr<RequestChannel>> aborts_;
  bool abortAll_ = false;
  bool stopping_ = false;
  EngineStats stats_;
  int64_t routed_ = 0;

  // The loop thread's own.
  std::map<int64_t, Route> routes_;
  std::chrono::steady_clock::time_point lastLog_;
  int64_t lastPromptTokens_ = 0, lastGeneratedTokens_ = 0;
};

} // namespace sol

//===- EngineLoop.cpp - The engine on a thread of its own -----------------===//
#include "runtime/server/EngineLoop.h"

#include "runtime/support/Error.h"

#include <cstdio>

namespace sol {

namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

} // namespace

EngineLoop::EngineLoop(Engine &engine, Metrics &metrics,
                       EngineLoopOptions options)
    : engine_(engine), metrics_(metrics), options_(options) {
  stats_ = engine_.stats();
}

EngineLoop::~EngineLoop() { stop(); }

void EngineLoop::start() {
  lastLog_ = std::chrono::steady_clock::now();
  notifier_ = std::thread([this] { notifyLoop(); });
  thread_ = std::thread([this] { run(); });
}

void EngineLoop::postWakeUps() {
  if (stepWakeUps_.empty())
    return;
  {
    std::lock_guard<std::mutex> lock(notifyMutex_);
    for (auto &channel : stepWakeUps_)
      wakeUps_.push_back(std::move(channel));
  }
  stepWakeUps_.clear();
  notifyReady_.notify_one();
}

void EngineLoop::notifyLoop() {
  std::vector<std::shared_ptr<RequestChannel>> batch;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(notifyMutex_);
      notifyReady_.wait(lock,
                        [&] { return notifierStop_ || !wakeUps_.empty(); });
      if (wakeUps_.empty() && notifierStop_)
        return;
      batch.swap(wakeUps_);
    }
    for (const auto &channel : batch)
      channel->notify();
    batch.clear();
  }
}

void EngineLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    abortAll_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
  {
    std::lock_guard<std::mutex> lock(notifyMutex_);
    notifierStop_ = true;
  }
  notifyReady_.notify_one();
  if (notifier_.joinable())
    notifier_.join();
}

EngineLoop::SubmitStatus
EngineLoop::submit(std::shared_ptr<RequestChannel> channel,
                   std::vector<Request> requests) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_)
      return SubmitStatus::Stopped;
    const int64_t waiting = pendingRequests_ + stats_.numWaiting;
    // A request larger than the bound still goes in when nothing waits.
    if (waiting > 0 && waiting + int64_t(requests.size()) >
                           int64_t(options_.maxWaitingRequests))
      return SubmitStatus::Overloaded;
    pendingRequests_ += static_cast<int64_t>(requests.size());
    pending_.push_back({std::move(channel), std::move(requests)});
  }
  wake_.notify_all();
  return SubmitStatus::Queued;
}

void EngineLoop::abort(std::shared_ptr<RequestChannel> channel) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborts_.push_back(std::move(channel));
  }
  wake_.notify_all();
}

void EngineLoop::abortAll() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abortAll_ = true;
  }
  wake_.notify_all();
}

EngineStats EngineLoop::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

int64_t EngineLoop::inFlight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return routed_ + pendingRequests_;
}

void EngineLoop::submitNow(Submission &s) {
  RequestChannel &channel = *s.channel;
  for (size_t i = 0; i < s.requests.size(); ++i) {
    try {
      const int64_t id = engine_.submit(std::move(s.requests[i]));
      channel.engineIds.push_back(id);
      routes_[id] = {s.channel, static_cast<int32_t>(i), {}, false};
    } catch (const std::exception &e) {
      // All or nothing: the choices already submitted go, silently.
      for (int64_t id : channel.engineIds) {
        routes_[id].silent = true;
        engine_.abort(id);
      }
      channel.reject(e.what());
      return;
    }
  }
  channel.accept();
}

void EngineLoop::route(RequestOutput &o) {
  auto it = routes_.find(o.id);
  if (it == routes_.end())
    return;
  Route &r = it->second;
  if (!r.silent && !o.newTokenIds.empty()) {
    if (o.numOutputTokens == static_cast<int32_t>(o.newTokenIds.size()))
      metrics_.observeTtft(seconds(o.firstTokenTime - o.arrivalTime));
    else
      metrics_.observeInterTokenLatency(seconds(o.lastTokenTime - r.lastToken));
    r.lastToken = o.lastTokenTime;
  }
  const bool finished = o.finished;
  if (finished && !r.silent)
    metrics_.observeFinished(
        std::string(finishReasonName(o.finishReason)),
        seconds(RequestOutput::Clock::now() - o.arrivalTime));
  if (!r.silent) {
    r.channel->pushQuiet(r.index, std::move(o));
    if (stepWakeUps_.empty() || stepWakeUps_.back() != r.channel)
      stepWakeUps_.push_back(r.channel);
  }
  if (finished)
    routes_.erase(it);
}

void EngineLoop::failAll(const std::string &message) {
  std::fprintf(stderr, "solrun: error: the engine failed: %s\n",
               message.c_str());
  for (auto &[id, r] : routes_) {
    engine_.abort(id);
    if (!r.silent)
      r.channel->fail(r.index, message);
    r.silent = true; // the abort output that follows is not news
  }
}

void EngineLoop::publishStats() {
  EngineStats s = engine_.stats();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_ = s;
  routed_ = static_cast<int64_t>(routes_.size());
}

void EngineLoop::maybeLog(bool force) {
  if (options_.logIntervalS <= 0)
    return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = seconds(now - lastLog_);
  if (elapsed < options_.logIntervalS && !force)
    return;
  const EngineStats s = engine_.stats();
  const int64_t prompt = s.promptTokens - lastPromptTokens_;
  const int64_t generated = s.generatedTokens - lastGeneratedTokens_;
  if (prompt > 0 || generated > 0 || s.numRunning > 0 || s.numWaiting > 0)
    std::fprintf(
        stderr,
        "solrun: prompt throughput %.1f tokens/s, generation throughput %.1f "
        "tokens/s, running %d reqs, waiting %d reqs, KV cache %.1f%% (%d of "
        "%d blocks), prefix-cache hit rate %.1f%%\n",
        double(prompt) / elapsed, double(generated) / elapsed, s.numRunning,
        s.numWaiting,
        s.kvBlocksTotal ? 100.0 * s.kvBlocksUsed / s.kvBlocksTotal : 0.0,
        s.kvBlocksUsed, s.kvBlocksTotal,
        s.prefixCacheQueries
            ? 100.0 * double(s.prefixCacheHits) / double(s.prefixCacheQueries)
            : 0.0);
  lastLog_ = now;
  lastPromptTokens_ = s.promptTokens;
  lastGeneratedTokens_ = s.generatedTokens;
}

void EngineLoop::run() {
  std::vector<Submission> submissions;
  std::vector<std::shared_ptr<RequestChannel>> aborts;
  while (true) {
    bool abortAll = false, stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto ready = [&] {
        return stopping_ || abortAll_ || !pending_.empty() ||
               !aborts_.empty() || engine_.hasUnfinished();
      };
      // Idle: wake for the last log line of a busy interval.
      if (!ready())
        wake_.wait_for(lock,
                       std::chrono::duration<double>(options_.logIntervalS > 0
                                                         ? options_.logIntervalS
                                                         : 3600.0),
                       ready);
      submissions.swap(pending_);
      aborts.swap(aborts_);
      abortAll = abortAll_;
      abortAll_ = false;
      stopping = stopping_;
      int64_t n = 0;
      for (const Submission &s : submissions)
        n += static_cast<int64_t>(s.requests.size());
      pendingRequests_ -= n;
    }
    for (Submission &s : submissions) {
      if (stopping)
        s.channel->reject("the server is shutting down");
      else
        submitNow(s);
    }
    submissions.clear();
    for (const auto &channel : aborts)
      for (int64_t id : channel->engineIds)
        engine_.abort(id);
    aborts.clear();
    if (abortAll)
      for (const auto &[id, r] : routes_)
        engine_.abort(id);
    if (engine_.hasUnfinished()) {
      try {
        std::vector<RequestOutput> outputs = engine_.step();
        for (RequestOutput &o : outputs)
          route(o);
      } catch (const std::exception &e) {
        failAll(e.what());
      }
      postWakeUps();
    }
    publishStats();
    maybeLog(false);
    if (stopping && !engine_.hasUnfinished())
      break;
  }
}

} // namespace sol

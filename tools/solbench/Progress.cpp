//===- Progress.cpp - solbench: a progress line on a terminal -------------===//
#include "tools/solbench/Progress.h"

#include <chrono>
#include <cstdio>

namespace sol::bench {

Progress::Progress(bool enabled) : enabled_(enabled) {}

Progress::~Progress() { end(); }

void Progress::begin(std::string label, size_t total) {
  end();
  if (!enabled_)
    return;
  label_ = std::move(label);
  total_ = total;
  done_ = 0;
  failed_ = 0;
  running_ = true;
  thread_ = std::thread([this] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (running_) {
      const double s = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      std::fprintf(stderr, "\r\033[K%s: %zu/%zu done, %zu failed, %.1f s",
                   label_.c_str(), done_.load(), total_, failed_.load(), s);
      std::fflush(stderr);
      wake_.wait_for(lock, std::chrono::milliseconds(250));
    }
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  });
}

void Progress::requestDone(bool ok) {
  ++done_;
  if (!ok)
    ++failed_;
}

void Progress::end() {
  if (!thread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
  wake_.notify_all();
  thread_.join();
}

} // namespace sol::bench

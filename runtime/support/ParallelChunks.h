//===- ParallelChunks.h - A loop split over std::threads --------*- C++ -*-===//
//
// The one loop splitter of the runtime's CPU code and the compiler
// (quantization, calibration, the reference executor's ParallelFor):
// threads are started per call, which the loops worth splitting
// (milliseconds and up) easily pay for.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace sol {

/// Runs body(begin, end) over disjoint chunks covering [0, count) on up to
/// `maxThreads` threads (0: hardware_concurrency()), the caller's included;
/// one thread per `minWorkPerThread` of `work` (a rough operation count), so
/// inline when the loop is too small to pay for threads. Rethrows the first
/// exception a chunk threw.
template <typename Body>
void parallelChunks(int64_t count, int64_t work, const Body &body,
                    int64_t maxThreads = 0,
                    int64_t minWorkPerThread = int64_t{1} << 18) {
  const int64_t cores =
      maxThreads > 0
          ? maxThreads
          : std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t threads =
      std::min({cores, count, std::max<int64_t>(1, work / minWorkPerThread)});
  if (threads <= 1) {
    if (count > 0)
      body(int64_t{0}, count);
    return;
  }
  std::exception_ptr error;
  std::mutex mutex;
  auto run = [&](int64_t begin, int64_t end) {
    try {
      body(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error)
        error = std::current_exception();
    }
  };
  const int64_t chunk = (count + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int64_t begin = chunk; begin < count; begin += chunk) {
    const int64_t end = std::min(count, begin + chunk);
    try {
      pool.emplace_back(run, begin, end);
    } catch (const std::system_error &) {
      run(begin, end); // no thread to be had: do the chunk here
    }
  }
  run(0, std::min(count, chunk));
  for (std::thread &thread : pool)
    thread.join();
  if (error)
    std::rethrow_exception(error);
}

} // namespace sol

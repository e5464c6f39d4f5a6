//===- ParallelFor.cpp - Splits a loop over std::threads ------------------===//

#include "runtime/reference/ParallelFor.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace sol::reference {
namespace {

// Below this many multiply-adds a loop runs in well under a millisecond on
// one core, less than what starting threads costs.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 20;

} // namespace

void parallelFor(int64_t count, int numThreads, int64_t work,
                 const std::function<void(int64_t, int64_t)> &body) {
  if (count <= 0)
    return;
  int64_t threads = std::min<int64_t>(numThreads, count);
  threads = std::min<int64_t>(threads,
                              std::max<int64_t>(work / kMinWorkPerThread, 1));
  if (threads <= 1) {
    body(0, count);
    return;
  }
  std::exception_ptr firstError;
  std::mutex errorMutex;
  auto run = [&](int64_t begin, int64_t end) {
    try {
      body(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(errorMutex);
      if (!firstError)
        firstError = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads - 1));
  const int64_t chunk = count / threads;
  const int64_t extra = count % threads;
  int64_t begin = 0;
  for (int64_t i = 0; i < threads; ++i) {
    const int64_t end = begin + chunk + (i < extra ? 1 : 0);
    if (i + 1 == threads) {
      run(begin, end); // the caller takes the last range
    } else {
      try {
        workers.emplace_back(run, begin, end);
      } catch (const std::system_error &) {
        run(begin, end); // no thread to be had: do it here
      }
    }
    begin = end;
  }
  for (std::thread &w : workers)
    w.join();
  if (firstError)
    std::rethrow_exception(firstError);
}

} // namespace sol::reference

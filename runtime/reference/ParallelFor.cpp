//===- ParallelFor.cpp - Splits a loop over std::threads ------------------===//

#include "runtime/reference/ParallelFor.h"

#include "runtime/support/ParallelChunks.h"

namespace sol::reference {

void parallelFor(int64_t count, int numThreads, int64_t work,
                 const std::function<void(int64_t, int64_t)> &body) {
  // Below 2^20 multiply-adds a thread's share runs in well under a
  // millisecond, less than what starting the thread costs.
  parallelChunks(count, work, body, std::max(numThreads, 1), int64_t{1} << 20);
}

} // namespace sol::reference

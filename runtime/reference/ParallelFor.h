//===- ParallelFor.h - Splits a loop over std::threads ----------*- C++ -*-===//
//
// The reference executor is an oracle first, but a 1B-shape model's LM head
// (128256 x 2048) still has to finish in seconds, so its big loops run on a
// few threads. Threads are started per call: the loops worth splitting take
// milliseconds, far more than a thread start.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>

namespace sol::reference {

/// Runs body(begin, end) over disjoint ranges covering [0, count), on up to
/// `numThreads` threads (the caller's included). Runs inline when
/// numThreads <= 1 or `work` (a rough count of multiply-adds) is too small to
/// pay for threads. Rethrows the first exception a range threw.
void parallelFor(int64_t count, int numThreads, int64_t work,
                 const std::function<void(int64_t begin, int64_t end)> &body);

} // namespace sol::reference

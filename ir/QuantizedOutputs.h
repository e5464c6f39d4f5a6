//===- QuantizedOutputs.h - A quantized weight's tensors, made once -*- C++
//-*-===//
//
// A quantized weight is two or three tensors of the weight store (codes,
// scales, zero points) that one computation makes together: quantizing a
// float weight, or unpacking a checkpoint's packed one. This computes them
// on the first read of any of them and drops them once each was read, so
// only the weights being written are held (a 14336 x 4096 weight is 235 MB
// of float32 while it is quantized). A sharded weight is computed per
// tensor-parallel rank: the plan writer reads one rank's weights at a time.
// No MLIR here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/WeightStore.h"
#include "runtime/support/Quantize.h"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace sol {

class QuantizedOutputs {
public:
  using Compute =
      std::function<quant::QuantizedWeight(const WeightStore &, int rank)>;

  /// Adds `name` (the codes, `codes` dtype and shape), `name.scales` (f32,
  /// `groups` shape) and, when `withZeros`, `name.zeros` (u8, `groups`
  /// shape) to `store`, all made by one call of `compute`.
  static void addTo(WeightStore &store, const std::string &name, DType codes,
                    std::vector<int64_t> codeShape,
                    std::vector<int64_t> groupShape, bool withZeros,
                    Compute compute, bool sharded = false);

  QuantizedOutputs(Compute compute, int outputs)
      : compute_(std::move(compute)), outputs_(outputs), unread_(outputs) {}

  /// Writes output `which` (0 codes, 1 scales, 2 zeros) of rank `rank` to
  /// `sink`.
  void write(const WeightStore &store, int which, const ByteSink &sink,
             int rank);

private:
  Compute compute_;
  std::mutex mutex_;
  std::optional<quant::QuantizedWeight> weight_;
  int rank_ = 0; // whose weight_ is
  bool read_[3] = {false, false, false};
  int outputs_, unread_;
};

} // namespace sol

//===- QuantizedOutputs.cpp - A quantized weight's tensors, made once -----===//
#include "ir/QuantizedOutputs.h"

#include <algorithm>

namespace sol {

void QuantizedOutputs::addTo(WeightStore &store, const std::string &name,
                             DType codes, std::vector<int64_t> codeShape,
                             std::vector<int64_t> groupShape, bool withZeros,
                             Compute compute, bool sharded) {
  const int outputs = withZeros ? 3 : 2;
  auto once = std::make_shared<QuantizedOutputs>(std::move(compute), outputs);
  static const char *const suffixes[] = {"", ".scales", ".zeros"};
  const DType dtypes[] = {codes, DType::F32, DType::U8};
  for (int which = 0; which < outputs; ++which)
    store.addProduced(
        name + suffixes[which], dtypes[which],
        which == 0 ? codeShape : groupShape,
        [once, which](const WeightStore &s, const ByteSink &sink, int rank) {
          once->write(s, which, sink, rank);
        },
        sharded);
}

void QuantizedOutputs::write(const WeightStore &store, int which,
                             const ByteSink &sink, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (weight_ && rank != rank_) { // another rank's shard: start afresh
    weight_.reset();
    std::fill(std::begin(read_), std::end(read_), false);
    unread_ = outputs_;
  }
  if (!weight_) {
    weight_ = compute_(store, rank);
    rank_ = rank;
  }
  auto bytes = [](const auto &v) {
    return std::as_bytes(std::span(v.data(), v.size()));
  };
  sink(which == 0   ? bytes(weight_->codes)
       : which == 1 ? bytes(weight_->scales)
                    : bytes(weight_->zeros));
  if (!read_[which]) {
    read_[which] = true;
    if (--unread_ == 0)
      weight_.reset();
  }
}

} // namespace sol

//===- ReferenceAttention.cpp - Float32 RoPE, KV write and attention ------===//

#include "runtime/reference/ReferenceAttention.h"

#include "runtime/reference/Fp8E4M3.h"
#include "runtime/reference/ParallelFor.h"
#include "runtime/reference/ReferenceKernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sol::reference {

int64_t firstAttendedPosition(int64_t pos, int64_t slidingWindow) {
  return slidingWindow > 0 ? std::max<int64_t>(0, pos - slidingWindow + 1) : 0;
}

void ropeKvWriteRows(std::span<float> qkv, int64_t rows, const PlanOp &op,
                     const RopeInfo &rope, const StepPlacement &placement,
                     PagedKvCache &cache) {
  const int64_t hd = op.headDim;
  const int64_t width = (op.heads + 2 * op.kvHeads) * hd;
  const int32_t blockSize = cache.layout().blockSize;
  for (int64_t t = 0; t < rows; ++t) {
    float *row = qkv.data() + t * width;
    const int32_t pos = placement.positions[static_cast<size_t>(t)];
    // q heads then k heads are contiguous: rotate all of them.
    for (int64_t h = 0; h < op.heads + op.kvHeads; ++h)
      rotateHalf({row + h * hd, static_cast<size_t>(hd)},
                 !rope.longInvFreq.empty() && pos >= rope.longFrom
                     ? rope.longInvFreq
                     : rope.invFreq,
                 rope.attentionScaling, pos);
    const int32_t seq = placement.tokenSeq[static_cast<size_t>(t)];
    const int64_t block = placement.block(seq, pos, blockSize);
    const int64_t slot = pos % blockSize;
    const float *k = row + op.heads * hd;
    const float *v = k + op.kvHeads * hd;
    for (int64_t g = 0; g < op.kvHeads; ++g) {
      std::span<float> kRow = cache.key(op.layer, block, slot, g);
      std::span<float> vRow = cache.value(op.layer, block, slot, g);
      std::copy_n(k + g * hd, hd, kRow.data());
      std::copy_n(v + g * hd, hd, vRow.data());
      if (cache.layout().fp8) {
        quantizeKvRow(kRow);
        quantizeKvRow(vRow);
      }
    }
  }
}

void attentionRows(std::span<float> out, std::span<const float> qkv,
                   int64_t rows, const PlanOp &op, std::span<const float> sinks,
                   const StepPlacement &placement, const PagedKvCache &cache,
                   int numThreads) {
  const int64_t hd = op.headDim;
  const int64_t qkvWidth = (op.heads + 2 * op.kvHeads) * hd;
  const int64_t outWidth = op.heads * hd;
  const int64_t group = op.heads / op.kvHeads;
  const int32_t blockSize = cache.layout().blockSize;

  int64_t work = 0;
  for (int64_t t = 0; t < rows; ++t)
    work += (placement.positions[static_cast<size_t>(t)] + 1) * 2 * outWidth;

  // One item per (token, head).
  parallelFor(
      rows * op.heads, numThreads, work, [&](int64_t begin, int64_t end) {
        std::vector<double> scores;
        std::vector<double> acc(static_cast<size_t>(hd));
        for (int64_t item = begin; item < end; ++item) {
          const int64_t t = item / op.heads;
          const int64_t h = item % op.heads;
          const int64_t g = h / group;
          const int32_t pos = placement.positions[static_cast<size_t>(t)];
          const int32_t seq = placement.tokenSeq[static_cast<size_t>(t)];
          const int64_t lo = firstAttendedPosition(pos, op.slidingWindow);
          const float *q = qkv.data() + t * qkvWidth + h * hd;

          scores.resize(static_cast<size_t>(pos - lo + 1));
          double maxScore = -INFINITY;
          for (int64_t j = lo; j <= pos; ++j) {
            const int32_t p = static_cast<int32_t>(j);
            const float *k =
                cache
                    .key(op.layer, placement.block(seq, p, blockSize),
                         p % blockSize, g)
                    .data();
            double dot = 0.0;
            for (int64_t d = 0; d < hd; ++d)
              dot += static_cast<double>(q[d]) * k[d];
            double s = dot * op.scale;
            if (op.softcap > 0) // Gemma 2's attention-logit soft-capping
              s = op.softcap * std::tanh(s / op.softcap);
            scores[static_cast<size_t>(j - lo)] = s;
            maxScore = std::max(maxScore, s);
          }
          // A sink is one more logit in the softmax, of no key.
          const double sink =
              sinks.empty() ? -INFINITY : double(sinks[size_t(h)]);
          maxScore = std::max(maxScore, sink);
          double sum = sinks.empty() ? 0.0 : std::exp(sink - maxScore);
          for (double &s : scores) {
            s = std::exp(s - maxScore);
            sum += s;
          }
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t j = lo; j <= pos; ++j) {
            const int32_t p = static_cast<int32_t>(j);
            const float *v =
                cache
                    .value(op.layer, placement.block(seq, p, blockSize),
                           p % blockSize, g)
                    .data();
            const double w = scores[static_cast<size_t>(j - lo)];
            for (int64_t d = 0; d < hd; ++d)
              acc[static_cast<size_t>(d)] += w * v[d];
          }
          float *y = out.data() + t * outWidth + h * hd;
          for (int64_t d = 0; d < hd; ++d)
            y[d] = static_cast<float>(acc[static_cast<size_t>(d)] / sum);
        }
      });
}

} // namespace sol::reference

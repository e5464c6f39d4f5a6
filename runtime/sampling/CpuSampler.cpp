//===- CpuSampler.cpp - Reference per-request sampling on the CPU ---------===//

#include "runtime/sampling/CpuSampler.h"

#include "runtime/sampling/Random.h"
#include "runtime/sampling/SamplingMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sol::sampling {

namespace {

/// The lowest index of the largest canonical value (0 when all are -inf or
/// NaN).
int32_t argmaxOf(std::span<const float> v, float *maxValue = nullptr) {
  int32_t best = 0;
  float bestValue = -INFINITY;
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = canonicalLogit(v[i]);
    if (x > bestValue) {
      bestValue = x;
      best = static_cast<int32_t>(i);
    }
  }
  if (maxValue)
    *maxValue = bestValue;
  return best;
}

/// max and log(sum(exp(l - max))) of the raw logits, in double.
struct LogSoftmax {
  double max = -INFINITY;
  double logZ = -INFINITY;
};

LogSoftmax logSoftmaxOf(std::span<const float> logits) {
  LogSoftmax s;
  for (float v : logits)
    s.max = std::max(s.max, static_cast<double>(canonicalLogit(v)));
  if (!std::isfinite(s.max)) {
    s.logZ = s.max;
    return s;
  }
  double sum = 0.0;
  for (float v : logits)
    sum += std::exp(static_cast<double>(canonicalLogit(v)) - s.max);
  s.logZ = s.max + std::log(sum);
  return s;
}

} // namespace

RowPenalties rowPenalties(const PenaltyTokens &p, size_t row) {
  if (p.offsets.empty())
    return {};
  const auto begin = static_cast<size_t>(p.offsets[row]);
  const auto count = static_cast<size_t>(p.offsets[row + 1]) - begin;
  return {p.ids.subspan(begin, count), p.outputCounts.subspan(begin, count),
          p.inPrompt.subspan(begin, count)};
}

RowBias rowBias(const LogitBias &b, size_t row) {
  if (b.offsets.empty())
    return {};
  const auto begin = static_cast<size_t>(b.offsets[row]);
  const auto count = static_cast<size_t>(b.offsets[row + 1]) - begin;
  return {b.ids.subspan(begin, count), b.values.subspan(begin, count)};
}

std::vector<float> CpuSampler::penalized(std::span<const float> logits,
                                         const SamplingRow &params,
                                         const RowPenalties &penalties,
                                         const RowBias &bias) {
  std::vector<float> out(logits.begin(), logits.end());
  for (size_t e = 0; e < bias.ids.size(); ++e) {
    const auto id = static_cast<size_t>(bias.ids[e]);
    out[id] = biasedLogit(logits[id], bias.values[e]);
  }
  for (size_t e = 0; e < penalties.ids.size(); ++e) {
    const auto id = static_cast<size_t>(penalties.ids[e]);
    out[id] =
        penalizedLogit(out[id], params.repetitionPenalty,
                       params.presencePenalty, params.frequencyPenalty,
                       penalties.outputCounts[e], penalties.inPrompt[e] != 0);
  }
  return out;
}

std::span<const float> CpuSampler::applyPenalties(std::span<const float> logits,
                                                  const SamplingRow &params,
                                                  const RowPenalties &penalties,
                                                  const RowBias &bias) {
  if (penalties.ids.empty() && bias.ids.empty())
    return logits;
  penalized_ = penalized(logits, params, penalties, bias);
  return penalized_;
}

int32_t CpuSampler::keptMasses(std::span<const float> l,
                               const SamplingRow &params) {
  if (!(params.temperature > 0.0f))
    return argmaxOf(l);
  const float invT = inverseTemperature(params.temperature);
  float lmax = 0.0f;
  const int32_t greedy = argmaxOf(l, &lmax);
  if (std::isinf(invT))
    return greedy;
  const float zmax = scaledLogit(lmax, invT);
  if (!std::isfinite(zmax))
    return greedy;

  const size_t V = l.size();
  distance_.resize(V);
  for (size_t i = 0; i < V; ++i)
    distance_[i] =
        distanceFromMax(zmax, scaledLogit(canonicalLogit(l[i]), invT));

  // Top-k: d <= the k-th smallest d.
  float dk = INFINITY;
  if (params.topK > 0 && static_cast<size_t>(params.topK) < V) {
    scratch_.assign(distance_.begin(), distance_.end());
    std::nth_element(scratch_.begin(), scratch_.begin() + (params.topK - 1),
                     scratch_.end());
    dk = scratch_[static_cast<size_t>(params.topK - 1)];
  }
  mass_.assign(V, 0);
  uint64_t massK = 0;
  for (size_t i = 0; i < V; ++i)
    if (distance_[i] <= dk) {
      mass_[i] = fixedMass(expNegative(distance_[i]));
      massK += mass_[i];
    }

  // Top-p: the smallest prefix in ascending d whose mass reaches the target.
  float dp = INFINITY;
  if (params.topP < 1.0f) {
    const uint64_t target = topPTarget(params.topP, massK);
    order_.clear();
    for (size_t i = 0; i < V; ++i)
      if (mass_[i] > 0)
        order_.push_back(static_cast<int32_t>(i));
    std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
      return distance_[static_cast<size_t>(a)] !=
                     distance_[static_cast<size_t>(b)]
                 ? distance_[static_cast<size_t>(a)] <
                       distance_[static_cast<size_t>(b)]
                 : a < b;
    });
    uint64_t cum = 0;
    for (int32_t i : order_) {
      cum += mass_[static_cast<size_t>(i)];
      if (cum >= target) {
        dp = distance_[static_cast<size_t>(i)];
        break;
      }
    }
  }

  const float cut = std::min(dk, dp);
  const bool minP = params.minP > 0.0f;
  for (size_t i = 0; i < V; ++i)
    if (distance_[i] > cut ||
        (minP && !(expNegative(distance_[i]) >= params.minP)))
      mass_[i] = 0;
  return -1;
}

int32_t CpuSampler::sample(std::span<const float> logits,
                           const SamplingRow &params,
                           const RowPenalties &penalties, const RowBias &bias) {
  const std::span<const float> l =
      applyPenalties(logits, params, penalties, bias);
  const int32_t greedy = keptMasses(l, params);
  if (greedy >= 0)
    return greedy;
  uint64_t total = 0;
  for (uint64_t m : mass_)
    total += m;
  const uint64_t target = drawTarget(
      uniform(params.seed, static_cast<uint32_t>(params.counter)), total);
  uint64_t cum = 0;
  for (size_t i = 0; i < mass_.size(); ++i) {
    cum += mass_[i];
    if (cum > target)
      return static_cast<int32_t>(i);
  }
  // Unreachable: the token of largest logit is always kept with mass 2^44,
  // and target < total.
  return argmaxOf(l);
}

std::vector<double> CpuSampler::distribution(std::span<const float> logits,
                                             const SamplingRow &params,
                                             const RowPenalties &penalties,
                                             const RowBias &bias) {
  const std::span<const float> l =
      applyPenalties(logits, params, penalties, bias);
  std::vector<double> p(l.size(), 0.0);
  const int32_t greedy = keptMasses(l, params);
  if (greedy >= 0) {
    p[static_cast<size_t>(greedy)] = 1.0;
    return p;
  }
  uint64_t total = 0;
  for (uint64_t m : mass_)
    total += m;
  for (size_t i = 0; i < l.size(); ++i)
    p[i] = static_cast<double>(mass_[i]) / static_cast<double>(total);
  return p;
}

float CpuSampler::logprob(std::span<const float> logits, int32_t id) {
  const LogSoftmax s = logSoftmaxOf(logits);
  return static_cast<float>(
      static_cast<double>(canonicalLogit(logits[static_cast<size_t>(id)])) -
      s.logZ);
}

void CpuSampler::topLogprobs(std::span<const float> logits,
                             std::span<int32_t> ids,
                             std::span<float> logprobs) {
  const size_t n = std::min(ids.size(), logits.size());
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int32_t>(i);
  auto better = [&](int32_t a, int32_t b) {
    const float va = canonicalLogit(logits[static_cast<size_t>(a)]);
    const float vb = canonicalLogit(logits[static_cast<size_t>(b)]);
    return va != vb ? va > vb : a < b;
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(n),
                    order.end(), better);
  const LogSoftmax s = logSoftmaxOf(logits);
  for (size_t j = 0; j < n; ++j) {
    ids[j] = order[j];
    logprobs[j] =
        static_cast<float>(static_cast<double>(canonicalLogit(
                               logits[static_cast<size_t>(order[j])])) -
                           s.logZ);
  }
}

void CpuSampler::sampleStep(std::span<const float> logits, int64_t vocab,
                            const StepBatch &batch, const StepOutput &out) {
  const size_t R = batch.logitRows.size();
  const auto V = static_cast<size_t>(vocab);
  const auto n = static_cast<size_t>(batch.numTopLogprobs);
  for (size_t r = 0; r < R; ++r) {
    const std::span<const float> row = logits.subspan(r * V, V);
    int32_t chosen = -1;
    if (!out.argmax.empty() || !out.logprobs.empty()) {
      const SamplingRow params =
          batch.sampling.empty() ? SamplingRow{} : batch.sampling[r];
      chosen = sample(row, params, rowPenalties(batch.penalties, r),
                      rowBias(batch.logitBias, r));
    }
    if (!out.argmax.empty())
      out.argmax[r] = chosen;
    if (!out.logprobs.empty())
      out.logprobs[r] = logprob(row, chosen);
    if (n > 0 && !out.topIds.empty())
      topLogprobs(row, out.topIds.subspan(r * n, n),
                  out.topLogprobs.subspan(r * n, n));
  }
}

} // namespace sol::sampling

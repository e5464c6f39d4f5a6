//===- CpuSampler.h - Reference per-request sampling on the CPU -*- C++ -*-===//
//
// Picks the token of one logits row the way the GPU kernel
// (codegen/kernels/Sampling.cuh) does, operation for operation, so the two
// give the same token for the same inputs (docs/sampling.md):
//
//  0. the logit bias added to the raw logits (SamplingMath.h: biasedLogit;
//     -inf bans a token);
//  1. penalties on the biased logits (SamplingMath.h: penalizedLogit);
//  2. temperature <= 0: greedy, the lowest index of the largest penalized
//     logit (NaN never wins); otherwise z = logit * (1 / temperature),
//     d = max(z) - z, and each token weighs mass = trunc(exp(-d) * 2^44);
//  3. top-k keeps d <= the k-th smallest d (ties kept); top-p keeps, in
//     ascending d, the smallest prefix whose mass reaches p times the top-k
//     set's mass (ties at the cut kept); min-p keeps exp(-d) >= minP;
//  4. the draw: u = uniform(seed, counter) (Random.h) and the first kept
//     token, in vocabulary order, whose cumulative mass exceeds
//     trunc(u * total kept mass).
//
// Logprobs follow OpenAI: log_softmax of the raw logits (no bias, no
// penalties, temperature 1), computed here in double; top logprobs list the
// most likely ids first, the lower id first among equal logits.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/Executor.h"

#include <cstdint>
#include <span>
#include <vector>

namespace sol::sampling {

/// The penalty entries of one row.
struct RowPenalties {
  std::span<const int32_t> ids;
  std::span<const int32_t> outputCounts;
  std::span<const uint8_t> inPrompt;
};

/// The logit-bias entries of one row.
struct RowBias {
  std::span<const int32_t> ids;
  std::span<const float> values;
};

/// Row `row`'s slice of a step's penalty lists (empty when it has none).
/// The lists must have passed validateSampling.
RowPenalties rowPenalties(const PenaltyTokens &penalties, size_t row);
/// Row `row`'s slice of a step's logit-bias lists (empty when it has none).
RowBias rowBias(const LogitBias &bias, size_t row);

class CpuSampler {
public:
  /// The token for one row of raw logits (left unchanged).
  int32_t sample(std::span<const float> logits, const SamplingRow &params,
                 const RowPenalties &penalties = {}, const RowBias &bias = {});

  /// The distribution sample() draws from: per token, its kept mass over the
  /// total kept mass (0 for filtered tokens); for greedy rows, 1 at the
  /// chosen token.
  std::vector<double> distribution(std::span<const float> logits,
                                   const SamplingRow &params,
                                   const RowPenalties &penalties = {},
                                   const RowBias &bias = {});

  /// The logits after the bias, then the penalties.
  static std::vector<float> penalized(std::span<const float> logits,
                                      const SamplingRow &params,
                                      const RowPenalties &penalties,
                                      const RowBias &bias = {});

  /// log_softmax(logits)[id], in double.
  static float logprob(std::span<const float> logits, int32_t id);

  /// The ids.size() most likely ids (most likely first, lower id first on
  /// ties) and their log-probabilities; ids.size() <= logits.size().
  static void topLogprobs(std::span<const float> logits, std::span<int32_t> ids,
                          std::span<float> logprobs);

  /// A whole step: `logits` holds R rows of `vocab` values, one per
  /// batch.logitRows entry; fills whichever of out.argmax, out.logprobs,
  /// out.topIds and out.topLogprobs are non-empty (out.logits is not
  /// touched). The batch and outputs must have passed validateSampling.
  void sampleStep(std::span<const float> logits, int64_t vocab,
                  const StepBatch &batch, const StepOutput &out);

private:
  /// Fills mass_ with each token's kept mass (0 when filtered) for a sampled
  /// row; returns -1, or the token when the row is effectively greedy.
  int32_t keptMasses(std::span<const float> logits, const SamplingRow &params);
  std::span<const float> applyPenalties(std::span<const float> logits,
                                        const SamplingRow &params,
                                        const RowPenalties &penalties,
                                        const RowBias &bias);

  std::vector<float> penalized_;
  std::vector<float> distance_;
  std::vector<float> scratch_;
  std::vector<uint64_t> mass_;
  std::vector<int32_t> order_;
};

} // namespace sol::sampling

//===- RandomWeights.h - The weights of a plan without them -----*- C++ -*-===//
//
// `solc --load-format dummy` writes a plan from a config alone, without
// weight bytes (Plan.random_weights), as vLLM's `--load-format dummy` does:
// a 70B shape can be benchmarked without 141 GB of checkpoint on disk. Both
// executors then take each weight's bytes from here: seeded random values
// of its dtype and shape, the same on every run, finite and of a scale that
// keeps activations finite (a mixture's router still spreads the tokens
// over the experts). Useful for speed only: the model knows nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/plan/Plan_generated.h"
#include "runtime/support/DType.h"

namespace sol {

class PlanFile;

/// The bytes weight `w` holds on one rank by its dtype and shape (what its
/// section holds, or would). Throws sol::Error for a negative dimension or
/// an overflowing size.
uint64_t weightStorageBytes(const fb::Weight &w);

/// The seed of weight `index` (`w`) on tensor-parallel rank `rank`: each
/// rank's shard of a split weight differs, a replicated one is the same on
/// every rank.
uint64_t randomWeightSeed(const fb::Weight &w, int index, int rank);

/// The random values of a weight of `dtype` ("matrix": two or more
/// dimensions) into `out`, element i from (seed ^ i) alone: matrices around
/// 0 (std 0.02 / sqrt(3)), vectors (norms, biases) around 1, float32 tensors
/// (quantization scales, Gemma's 1 + w norms) small and positive; quantized
/// codes anywhere in range but never an fp8 NaN; int4 zero points in the
/// middle. codegen/kernels/RandomWeights.cuh computes the same bytes on a
/// GPU. Throws sol::Error for a dtype without random values.
void fillRandomWeight(DType dtype, bool matrix, uint64_t seed,
                      std::span<std::byte> out);

/// The bytes tensor-parallel rank `rank` holds of weight `index` of `file`:
/// the plan's own, or for a plan with random weights its random values,
/// generated into `scratch`.
std::span<const std::byte> weightBytesOrRandom(const PlanFile &file, int index,
                                               int rank,
                                               std::vector<std::byte> &scratch);

} // namespace sol

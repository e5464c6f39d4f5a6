//===- StepSampling.h - A step's sampling inputs, checked -------*- C++ -*-===//
//
// What both executors check about StepBatch::sampling / penalties /
// numTopLogprobs and the StepOutput spans that receive the results, before
// they touch any state.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/Executor.h"

#include <cstdint>

namespace sol::sampling {

/// Throws sol::Error naming the field (and row or entry) when the step's
/// sampling inputs or result spans are malformed: a sampling span that is
/// neither empty nor one row per logits row; a temperature that is negative,
/// NaN or infinite; topK < 0; topP outside (0, 1]; minP outside [0, 1]; a
/// repetition penalty <= 0 or not finite; a presence or frequency penalty
/// that is not finite; numTopLogprobs outside 0..min(kMaxTopLogprobs,
/// vocab); penalty lists whose offsets are not R + 1 long, do not start at 0,
/// decrease or end elsewhere than at the lists' length, whose columns differ
/// in length, whose ids fall outside the vocabulary or repeat within a row,
/// or whose output counts are negative; logit-bias lists malformed the same
/// way or with a NaN or +infinity bias; logprobs / topIds / topLogprobs
/// spans of the wrong size.
void validateSampling(const StepBatch &batch, const StepOutput &out,
                      int64_t vocab);

/// True when the step needs more than the plain greedy argmax: logprobs or
/// top logprobs are asked for, or chosen ids are and some row has
/// temperature > 0, a non-empty penalty list or a logit bias.
bool stepNeedsSampling(const StepBatch &batch, const StepOutput &out);

} // namespace sol::sampling

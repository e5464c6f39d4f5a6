//===- StepSampling.cpp - A step's sampling inputs, checked ---------------===//

#include "runtime/sampling/StepSampling.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace sol::sampling {

namespace {

void validateRow(const SamplingRow &s, size_t r) {
  if (!(s.temperature >= 0.0f) || std::isinf(s.temperature))
    fail("sampling row ", r, ": temperature must be a finite number >= 0 ",
         "(0 = greedy), got ", s.temperature);
  if (s.topK < 0)
    fail("sampling row ", r, ": topK must be >= 0 (0 = every token), got ",
         s.topK);
  if (!(s.topP > 0.0f && s.topP <= 1.0f))
    fail("sampling row ", r, ": topP must be in (0, 1], got ", s.topP);
  if (!(s.minP >= 0.0f && s.minP <= 1.0f))
    fail("sampling row ", r, ": minP must be in [0, 1], got ", s.minP);
  if (!(s.repetitionPenalty > 0.0f) || std::isinf(s.repetitionPenalty))
    fail("sampling row ", r,
         ": repetitionPenalty must be a finite number > 0 (1 = none), got ",
         s.repetitionPenalty);
  if (!std::isfinite(s.presencePenalty))
    fail("sampling row ", r, ": presencePenalty must be finite, got ",
         s.presencePenalty);
  if (!std::isfinite(s.frequencyPenalty))
    fail("sampling row ", r, ": frequencyPenalty must be finite, got ",
         s.frequencyPenalty);
}

/// The shape of a per-row CSR list named `name` (penalties, logitBias):
/// R + 1 offsets from 0, never decreasing, ending at `entries`.
void validateOffsets(const char *name, std::span<const int32_t> offsets,
                     size_t rows, size_t entries) {
  if (offsets.size() != rows + 1)
    fail(name, ".offsets holds ", offsets.size(),
         " entries, expected R + 1 = ", rows + 1);
  if (offsets[0] != 0)
    fail(name, ".offsets[0] must be 0, got ", offsets[0]);
  for (size_t r = 0; r < rows; ++r)
    if (offsets[r + 1] < offsets[r])
      fail(name, ".offsets decreases at row ", r, ": ", offsets[r], " then ",
           offsets[r + 1]);
  if (static_cast<size_t>(offsets[rows]) != entries)
    fail(name, ".offsets[", rows, "] is ", offsets[rows], " but ", name,
         ".ids holds ", entries, " entries");
}

/// Calls check(r, e, id) for every entry of a CSR list after checking its
/// id is in the vocabulary and not repeated within its row.
template <typename Check>
void forEachEntry(const char *name, std::span<const int32_t> offsets,
                  std::span<const int32_t> ids, size_t rows, int64_t vocab,
                  Check check) {
  // Repeats are found with per-row stamps in a vocabulary-sized table.
  thread_local std::vector<uint32_t> stamps;
  thread_local uint32_t generation = 0;
  if (stamps.size() != static_cast<size_t>(vocab)) {
    stamps.assign(static_cast<size_t>(vocab), 0);
    generation = 0;
  }
  for (size_t r = 0; r < rows; ++r) {
    if (++generation == 0) {
      std::fill(stamps.begin(), stamps.end(), 0);
      generation = 1;
    }
    for (auto e = static_cast<size_t>(offsets[r]);
         e < static_cast<size_t>(offsets[r + 1]); ++e) {
      const int32_t id = ids[e];
      if (id < 0 || id >= vocab)
        fail(name, " row ", r, " entry ", e, ": token id ", id,
             " is outside the vocabulary of ", vocab, " ids");
      check(r, e, id);
      if (stamps[static_cast<size_t>(id)] == generation)
        fail(name, " row ", r, " lists token id ", id,
             " twice; each token may appear once per row");
      stamps[static_cast<size_t>(id)] = generation;
    }
  }
}

void validatePenalties(const PenaltyTokens &p, size_t rows, int64_t vocab) {
  if (p.offsets.empty() && p.ids.empty() && p.outputCounts.empty() &&
      p.inPrompt.empty())
    return;
  validateOffsets("penalties", p.offsets, rows, p.ids.size());
  if (p.outputCounts.size() != p.ids.size())
    fail("penalties.outputCounts holds ", p.outputCounts.size(),
         " entries but penalties.ids holds ", p.ids.size());
  if (p.inPrompt.size() != p.ids.size())
    fail("penalties.inPrompt holds ", p.inPrompt.size(),
         " entries but penalties.ids holds ", p.ids.size());
  forEachEntry("penalties", p.offsets, p.ids, rows, vocab,
               [&](size_t r, size_t e, int32_t) {
                 if (p.outputCounts[e] < 0)
                   fail("penalties row ", r, " entry ", e, ": outputCounts is ",
                        p.outputCounts[e], "; counts must be >= 0");
               });
}

void validateBias(const LogitBias &b, size_t rows, int64_t vocab) {
  if (b.offsets.empty() && b.ids.empty() && b.values.empty())
    return;
  validateOffsets("logitBias", b.offsets, rows, b.ids.size());
  if (b.values.size() != b.ids.size())
    fail("logitBias.values holds ", b.values.size(),
         " entries but logitBias.ids holds ", b.ids.size());
  forEachEntry("logitBias", b.offsets, b.ids, rows, vocab,
               [&](size_t r, size_t e, int32_t id) {
                 const float v = b.values[e];
                 if (std::isnan(v) || v == INFINITY)
                   fail("logitBias row ", r, " entry ", e, " (token ", id,
                        "): the bias ", "is ", v,
                        "; it must be finite, or -inf to ban the token");
               });
}

} // namespace

void validateSampling(const StepBatch &batch, const StepOutput &out,
                      int64_t vocab) {
  const size_t rows = batch.logitRows.size();
  if (!batch.sampling.empty() && batch.sampling.size() != rows)
    fail("sampling holds ", batch.sampling.size(), " rows, expected one per ",
         "logits row (", rows, ") or none");
  for (size_t r = 0; r < batch.sampling.size(); ++r)
    validateRow(batch.sampling[r], r);
  const int64_t maxTop = std::min<int64_t>(kMaxTopLogprobs, vocab);
  if (batch.numTopLogprobs < 0 || batch.numTopLogprobs > maxTop)
    fail("numTopLogprobs must be in 0..", maxTop, ", got ",
         batch.numTopLogprobs);
  validatePenalties(batch.penalties, rows, vocab);
  validateBias(batch.logitBias, rows, vocab);

  if (!out.logprobs.empty() && out.logprobs.size() != rows)
    fail("the logprobs output holds ", out.logprobs.size(),
         " floats, expected ", rows, " (one per logits row) or none");
  const size_t top = rows * static_cast<size_t>(batch.numTopLogprobs);
  if (out.topIds.size() != out.topLogprobs.size())
    fail("the topIds output holds ", out.topIds.size(),
         " ids but topLogprobs holds ", out.topLogprobs.size(), " floats");
  if (!out.topIds.empty() && out.topIds.size() != top)
    fail("the topIds output holds ", out.topIds.size(), " ids, expected R x ",
         "numTopLogprobs = ", rows, " x ", batch.numTopLogprobs, " = ", top);
  if (batch.numTopLogprobs > 0 && out.topIds.empty())
    fail("numTopLogprobs is ", batch.numTopLogprobs,
         " but the topIds and topLogprobs outputs are empty");
}

bool stepNeedsSampling(const StepBatch &batch, const StepOutput &out) {
  if (!out.logprobs.empty() || batch.numTopLogprobs > 0)
    return true;
  if (out.argmax.empty())
    return false; // logits only: nothing to pick
  if (!batch.penalties.ids.empty() || !batch.logitBias.ids.empty())
    return true;
  return std::any_of(batch.sampling.begin(), batch.sampling.end(),
                     [](const SamplingRow &s) { return s.temperature > 0.0f; });
}

} // namespace sol::sampling

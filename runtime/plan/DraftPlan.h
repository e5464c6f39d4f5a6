//===- DraftPlan.h - What a draft plan shares with its target ---*- C++ -*-===//
//
// A draft model proposes token ids for a target plan, so both must have one
// vocabulary and one tokenizer (a draft that spells tokens differently
// proposes nonsense). solrun checks a draft plan it is given beside the
// target; solc --draft checks the one it packs into the target's plan.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/PlanFile.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace sol {

/// The target's side of the check.
struct DraftTarget {
  std::string name; // "plan PATH" or "checkpoint PATH", for messages
  int64_t vocabSize = 0;
  std::string_view tokenizerJson; // empty: none
};

/// The target side of `plan`.
DraftTarget draftTargetOf(const PlanFile &plan);

/// Throws sol::Error naming both, starting with `context` (the option that
/// asked), when `draft` cannot propose for `target`: another vocabulary
/// size, another tokenizer, or a tokenizer in one of them only.
void checkDraftMatches(std::string_view context, const DraftTarget &target,
                       const PlanFile &draft);

} // namespace sol

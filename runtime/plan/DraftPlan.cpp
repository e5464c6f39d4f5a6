//===- DraftPlan.cpp - What a draft plan shares with its target -----------===//
#include "runtime/plan/DraftPlan.h"

#include "runtime/support/Error.h"

namespace sol {

namespace {

std::string_view tokenizerJson(const PlanFile &plan) {
  auto span = plan.section(plan.plan().tokenizer_json());
  return {reinterpret_cast<const char *>(span.data()), span.size()};
}

} // namespace

DraftTarget draftTargetOf(const PlanFile &plan) {
  return {"plan " + plan.path().string(), plan.plan().model()->vocab_size(),
          tokenizerJson(plan)};
}

void checkDraftMatches(std::string_view context, const DraftTarget &target,
                       const PlanFile &draft) {
  const std::string &t = target.name;
  const std::string d = draft.path().string();
  const int64_t dv = draft.plan().model()->vocab_size();
  if (target.vocabSize != dv)
    fail(context, ": the draft plan ", d, " has a vocabulary of ", dv,
         " tokens and the target ", t, " one of ", target.vocabSize,
         "; a draft model must use the target's tokenizer and vocabulary");
  const std::string_view tt = target.tokenizerJson, dt = tokenizerJson(draft);
  if (tt.empty() != dt.empty())
    fail(context, ": the ", tt.empty() ? "draft plan " : "target ",
         tt.empty() ? d : t, " embeds a tokenizer and the ",
         tt.empty() ? "target " : "draft plan ", tt.empty() ? t : d,
         " does not, so they cannot be checked to spell tokens alike; compile "
         "both from checkpoints with the same tokenizer.json");
  if (tt != dt)
    fail(context, ": the draft plan ", d, " has another tokenizer than the ",
         "target ", t, " (tokenizer.json ", dt.size(), " bytes against ",
         tt.size(),
         " bytes, different contents); a draft model must use the target's "
         "tokenizer");
}

} // namespace sol

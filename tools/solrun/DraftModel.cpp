//===- DraftModel.cpp - The draft plan of draft-model speculation ---------===//
#include "tools/solrun/DraftModel.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace sol {

namespace {

std::string_view tokenizerJson(const PlanFile &plan) {
  auto span = plan.section(plan.plan().tokenizer_json());
  return {reinterpret_cast<const char *>(span.data()), span.size()};
}

} // namespace

void checkDraftMatchesTarget(const PlanFile &target, const PlanFile &draft) {
  const std::string t = target.path().string(), d = draft.path().string();
  const int64_t tv = target.plan().model()->vocab_size();
  const int64_t dv = draft.plan().model()->vocab_size();
  if (tv != dv)
    fail("--speculative-config: the draft plan ", d, " has a vocabulary of ",
         dv, " tokens and the target plan ", t, " one of ", tv,
         "; a draft model must use the target's tokenizer and vocabulary");
  const std::string_view tt = tokenizerJson(target), dt = tokenizerJson(draft);
  if (tt.empty() != dt.empty())
    fail("--speculative-config: the ", tt.empty() ? "draft" : "target",
         " plan ", tt.empty() ? d : t, " embeds a tokenizer and the ",
         tt.empty() ? "target" : "draft", " plan ", tt.empty() ? t : d,
         " does not, so they cannot be checked to spell tokens alike; compile "
         "both from checkpoints with the same tokenizer.json");
  if (tt != dt) {
    fail("--speculative-config: the draft plan ", d,
         " has another tokenizer than the target plan ", t, " (tokenizer.json ",
         dt.size(), " bytes against ", tt.size(),
         " bytes, different contents); a draft model must use the target's "
         "tokenizer");
  }
}

std::optional<DraftModel> openDraftModel(const SpeculativeConfig &speculative,
                                         const PlanFile &target,
                                         const std::string &device,
                                         const ExecutorOptions &targetOptions,
                                         int32_t maxNumSeqs) {
  if (speculative.method != SpeculativeConfig::Method::DraftModel)
    return std::nullopt;
  DraftModel draft;
  draft.plan =
      std::make_unique<PlanFile>(PlanFile::open(speculative.draftModel));
  checkDraftMatchesTarget(target, *draft.plan);
  const int64_t targetLen =
      targetOptions.maxModelLen > 0
          ? targetOptions.maxModelLen
          : target.plan().model()->max_position_embeddings();
  draft.maxModelLen = std::min<int64_t>(
      targetLen, draft.plan->plan().model()->max_position_embeddings());
  int32_t seqs = maxNumSeqs > 0 ? maxNumSeqs : kDefaultMaxNumSeqs;
  if (speculative.disableByBatchSize > 0)
    seqs = std::min(seqs, speculative.disableByBatchSize);
  ExecutorOptions options = targetOptions;
  options.maxModelLen = draft.maxModelLen;
  options.maxSeqs = seqs;
  options.maxKvTokens = int64_t(seqs) * draft.maxModelLen;
  // The target's per-op and per-step profiles are what the flags ask for.
  options.profileOps = options.profileSteps = false;
  draft.executor = makeExecutor(*draft.plan, device, options);
  return draft;
}

} // namespace sol

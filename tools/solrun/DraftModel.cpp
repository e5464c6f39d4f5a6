//===- DraftModel.cpp - The draft plan of draft-model speculation ---------===//
#include "tools/solrun/DraftModel.h"

#include "runtime/plan/DraftPlan.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace sol {

std::optional<DraftModel> openDraftModel(const SpeculativeConfig &speculative,
                                         const PlanFile &target,
                                         const std::string &device,
                                         const ExecutorOptions &targetOptions,
                                         int32_t maxNumSeqs) {
  if (speculative.method != SpeculativeConfig::Method::DraftModel)
    return std::nullopt;
  DraftModel draft;
  if (!speculative.draftModel.empty()) {
    draft.plan =
        std::make_unique<PlanFile>(PlanFile::open(speculative.draftModel));
    checkDraftMatches("--speculative-config", draftTargetOf(target),
                      *draft.plan);
  } else if (const fb::Section *packed = target.plan().draft_plan();
             packed && packed->size() > 0) {
    // Packed by solc --draft, which checked it against the target.
    draft.plan = std::make_unique<PlanFile>(target.embedded(
        *packed, target.path().string() + " (its draft plan)", {}));
  } else {
    fail("--speculative-config: \"method\" \"draft_model\" needs \"model\": "
         "the path of a draft plan, or a plan compiled with solc --draft; ",
         target.path().string(), " holds no draft");
  }
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

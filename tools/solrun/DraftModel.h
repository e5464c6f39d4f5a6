//===- DraftModel.h - The draft plan of draft-model speculation -*- C++ -*-===//
//
// `--speculative-config '{"model": "draft.plan", ...}'` names a second plan
// that proposes tokens for the target (runtime/engine/DraftModelProposer.h);
// `{"method": "draft_model", ...}` without a model takes the draft that solc
// --draft packed into the target's plan.
// solrun opens it beside the target, checks that both share a vocabulary and
// a tokenizer (a draft that spells tokens differently proposes nonsense),
// and builds its executor first: on a GPU the draft's KV cache is sized for
// the sequences that speculate, and the target's cache takes what is left.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Engine.h"
#include "runtime/executor/ExecutorFactory.h"
#include "runtime/plan/PlanFile.h"

#include <memory>
#include <string>

namespace sol {

struct DraftModel {
  std::unique_ptr<PlanFile> plan;
  std::unique_ptr<Executor> executor;
  /// The longest sequence its executor holds: the target's maximum model
  /// length, or the draft's max_position_embeddings when that is shorter.
  int64_t maxModelLen = 0;

  /// Points `config` at this draft (EngineConfig::draftExecutor).
  void attach(EngineConfig &config) const {
    config.draftExecutor = executor.get();
    config.draftMaxModelLen = maxModelLen;
  }
};

/// Opens the draft plan `speculative` names, or else the one packed into
/// `target` by solc --draft (nothing when its method is not DraftModel),
/// checks it against `target` (runtime/plan/DraftPlan.h) and builds its
/// executor on
/// `device`. `targetOptions` are those the target's executor will get
/// (maxModelLen resolved); `maxNumSeqs` is the engine's limit (0: its
/// default): the draft's cache holds min(maxNumSeqs, disable_by_batch_size)
/// sequences. Call it before making the target's executor.
std::optional<DraftModel> openDraftModel(const SpeculativeConfig &speculative,
                                         const PlanFile &target,
                                         const std::string &device,
                                         const ExecutorOptions &targetOptions,
                                         int32_t maxNumSeqs);

} // namespace sol

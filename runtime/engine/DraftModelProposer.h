//===- DraftModelProposer.h - Draft tokens from a smaller model -*- C++ -*-===//
//
// Draft-model speculative decoding: a smaller plan with the target's
// tokenizer runs a few greedy decode steps ahead of the target, and the
// target checks all of them in one step (Engine::collect). The draft runs on
// an executor of its own, with a KV cache and block manager of its own.
//
// The draft proposes greedily (argmax), so its proposal for a position is a
// deterministic function of the tokens before it. The engine's acceptance
// rule (a draft stands when it equals the token the target draws at its
// position, with the draw a function of the request's seed and output
// number) is then exact for sampled requests too: every output equals the
// one plain decoding gives with the same seed, which is stronger than
// keeping the distribution and lets tests check it token for token.
// Leviathan et al.'s p/q rejection would accept more drafts of sampled
// requests but needs the draft's distribution and gives different tokens.
//
// KV reuse: for each sequence the proposer keeps the tokens whose K/V its
// cache holds (the sequence's, then the drafts it ran). The next call keeps
// the longest prefix they share with the sequence's tokens (the accepted
// drafts stay, the rejected ones go) and runs only the rest, so the draft's
// prompt is computed once and each round costs num_speculative_tokens
// one-token steps for all speculating sequences together.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/BlockManager.h"
#include "runtime/engine/Sequence.h"
#include "runtime/executor/Executor.h"

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace sol {

class DraftModelProposer {
public:
  /// `maxModelLen`: the longest sequence the draft executor was sized for
  /// (sequences past it get no drafts). `maxNumSeqs`, `maxNumBatchedTokens`:
  /// the most sequences and tokens one draft step holds. Throws sol::Error
  /// on limits < 1.
  DraftModelProposer(Executor &draft, int64_t maxModelLen, int32_t maxNumSeqs,
                     int32_t maxNumBatchedTokens);

  /// Proposes up to `room[i]` tokens to follow the tokens of `seqs[i]` and
  /// stores them in seqs[i]->draft (left empty for a room <= 0 or a sequence
  /// the draft cannot hold). `live` lists every sequence that may speculate
  /// later: the K/V kept for any other sequence is released first (finished,
  /// aborted or preempted ones). On an executor error every sequence's kept
  /// K/V is released and the error rethrown; no draft is set.
  void propose(std::span<Sequence *const> live, std::span<Sequence *const> seqs,
               std::span<const int32_t> room);
  /// Releases what is kept for sequence `id` (no-op when nothing is).
  void forget(int64_t id);

  const BlockManager &blockManager() const { return blocks_; }
  /// Draft steps run so far.
  int64_t numSteps() const { return numSteps_; }

private:
  struct State {
    BlockTable blocks;
    /// The tokens whose K/V the blocks hold, from position 0.
    std::vector<int32_t> tokens;
  };
  /// One sequence's part of this round.
  struct Work {
    Sequence *seq;
    State *state;
    int32_t room;
    /// Tokens to run next, from position state->tokens.size(): the
    /// sequence's uncomputed ones, then the latest proposal.
    std::vector<int32_t> pending;
    std::vector<int32_t> proposals;
  };
  /// Runs one draft step: the pending tokens of the unfinished items, within
  /// the step's budget; an item whose pending tokens all ran gets a logits
  /// row, whose argmax is its next proposal.
  void runStep(std::span<Work> work);
  /// The step of the tokens staged in stepTokens_, positions_, tokenSeq_
  /// and logitRows_, whose sequence i is states[i]: their block tables at
  /// one width.
  StepBatch stagedBatch(std::span<const State *const> states);
  /// Runs the remaining steps when every unfinished item has one pending
  /// token, queued back to back on an executor that chains steps: each
  /// step's tokens are the previous step's proposals, fed on the device.
  void runChained(std::span<Work> work);
  void releaseAll();

  Executor &executor_;
  int64_t maxModelLen_;
  int32_t maxNumSeqs_, maxNumBatchedTokens_;
  BlockManager blocks_;
  std::map<int64_t, State> states_;
  int64_t numSteps_ = 0;

  // Step scratch.
  std::vector<int32_t> stepTokens_, positions_, tokenSeq_, logitRows_,
      blockTables_, chosen_, chainedRows_;
  /// The ids of two queued steps (runChained).
  std::vector<int32_t> chainedChosen_[2];
  std::vector<size_t> rowWork_;
};

} // namespace sol

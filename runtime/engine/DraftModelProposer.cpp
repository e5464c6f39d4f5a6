//===- DraftModelProposer.cpp - Draft tokens from a smaller model ---------===//
#include "runtime/engine/DraftModelProposer.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <unordered_set>

namespace sol {

DraftModelProposer::DraftModelProposer(Executor &draft, int64_t maxModelLen,
                                       int32_t maxNumSeqs,
                                       int32_t maxNumBatchedTokens)
    : executor_(draft), maxModelLen_(maxModelLen),
      maxNumSeqs_(std::min(maxNumSeqs, draft.maxTokensPerStep())),
      maxNumBatchedTokens_(
          std::min(maxNumBatchedTokens, draft.maxTokensPerStep())),
      blocks_(draft.numKvBlocks(), draft.blockSize(),
              /*enablePrefixCaching=*/false) {
  if (maxModelLen < 1 || maxNumSeqs < 1 || maxNumBatchedTokens < 1)
    fail("draft model: limits must be >= 1, got max model length ", maxModelLen,
         ", ", maxNumSeqs, " sequences and ", maxNumBatchedTokens,
         " tokens a step");
}

void DraftModelProposer::forget(int64_t id) {
  auto it = states_.find(id);
  if (it == states_.end())
    return;
  blocks_.release(it->second.blocks);
  states_.erase(it);
}

void DraftModelProposer::releaseAll() {
  for (auto &[id, state] : states_)
    blocks_.release(state.blocks);
  states_.clear();
}

void DraftModelProposer::propose(std::span<Sequence *const> live,
                                 std::span<Sequence *const> seqs,
                                 std::span<const int32_t> room) {
  if (room.size() != seqs.size())
    fail("internal error: draft model: ", seqs.size(), " sequences and ",
         room.size(), " room counts");
  // What finished, was aborted or preempted frees its blocks for the others.
  std::unordered_set<int64_t> liveIds;
  for (const Sequence *seq : live)
    liveIds.insert(seq->id);
  for (auto it = states_.begin(); it != states_.end();) {
    if (liveIds.count(it->first)) {
      ++it;
      continue;
    }
    blocks_.release(it->second.blocks);
    it = states_.erase(it);
  }

  std::vector<Work> work;
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence *seq = seqs[i];
    seq->draft.clear();
    const int64_t numTokens = seq->numTokens();
    // The last proposal is not run: positions up to numTokens + room - 2.
    const int32_t r = static_cast<int32_t>(
        std::min<int64_t>(room[i], maxModelLen_ - numTokens + 1));
    if (r <= 0)
      continue;
    State &state = states_[seq->id];
    // Keep the K/V of the longest shared prefix, but rerun the last token at
    // least: its logits give the first proposal.
    const size_t shared = static_cast<size_t>(
        std::mismatch(state.tokens.begin(), state.tokens.end(),
                      seq->tokens.begin(), seq->tokens.end())
            .first -
        state.tokens.begin());
    const size_t keep = std::min(shared, seq->tokens.size() - 1);
    state.tokens.resize(keep);
    blocks_.shrink(state.blocks, static_cast<int64_t>(keep));
    if (!blocks_.grow(state.blocks, numTokens + r - 1)) {
      // No room in the draft's cache: this sequence decodes without drafts
      // (its kept K/V goes too, for the others).
      blocks_.release(state.blocks);
      states_.erase(seq->id);
      continue;
    }
    work.push_back({seq,
                    &state,
                    r,
                    std::vector<int32_t>(seq->tokens.begin() +
                                             static_cast<std::ptrdiff_t>(keep),
                                         seq->tokens.end()),
                    {}});
  }
  auto unfinished = [](const Work &w) {
    return static_cast<int32_t>(w.proposals.size()) < w.room;
  };
  try {
    while (std::any_of(work.begin(), work.end(), unfinished)) {
      // Once every sequence is down to one token a step, an executor that
      // chains steps gets them all queued back to back.
      if (executor_.chainsSteps() &&
          std::all_of(work.begin(), work.end(), [&](const Work &w) {
            return !unfinished(w) || w.pending.size() == 1;
          })) {
        runChained(work);
        break;
      }
      runStep(work);
    }
  } catch (...) {
    // Blocks may hold K/V the state does not list: start over.
    releaseAll();
    throw;
  }
  for (Work &w : work)
    w.seq->draft = std::move(w.proposals);
}

StepBatch
DraftModelProposer::stagedBatch(std::span<const State *const> states) {
  int32_t widest = 0;
  for (const State *state : states)
    widest =
        std::max(widest, static_cast<int32_t>(state->blocks.blocks.size()));
  const int32_t width =
      blockTableWidth(widest, blocks_.blocksFor(maxModelLen_));
  blockTables_.assign(states.size() * static_cast<size_t>(width), 0);
  for (size_t s = 0; s < states.size(); ++s)
    std::copy(states[s]->blocks.blocks.begin(), states[s]->blocks.blocks.end(),
              blockTables_.begin() + static_cast<std::ptrdiff_t>(s * width));
  StepBatch batch;
  batch.tokens = stepTokens_;
  batch.positions = positions_;
  batch.tokenSeq = tokenSeq_;
  batch.logitRows = logitRows_;
  batch.blockTables = blockTables_;
  batch.numSeqs = static_cast<int32_t>(states.size());
  batch.maxBlocksPerSeq = width;
  return batch;
}

void DraftModelProposer::runStep(std::span<Work> work) {
  stepTokens_.clear();
  positions_.clear();
  tokenSeq_.clear();
  logitRows_.clear();
  rowWork_.clear();
  std::vector<std::pair<size_t, int32_t>> ran; // work index, tokens run
  int32_t budget = maxNumBatchedTokens_;
  for (size_t i = 0; i < work.size() && budget > 0; ++i) {
    Work &w = work[i];
    if (static_cast<int32_t>(w.proposals.size()) >= w.room)
      continue;
    if (static_cast<int32_t>(ran.size()) == maxNumSeqs_)
      break;
    const int32_t n = std::min(budget, static_cast<int32_t>(w.pending.size()));
    const int32_t seqIndex = static_cast<int32_t>(ran.size());
    const int32_t first = static_cast<int32_t>(w.state->tokens.size());
    for (int32_t k = 0; k < n; ++k) {
      stepTokens_.push_back(w.pending[static_cast<size_t>(k)]);
      positions_.push_back(first + k);
      tokenSeq_.push_back(seqIndex);
    }
    if (n == static_cast<int32_t>(w.pending.size())) {
      logitRows_.push_back(static_cast<int32_t>(stepTokens_.size()) - 1);
      rowWork_.push_back(i);
    }
    budget -= n;
    ran.emplace_back(i, n);
  }
  if (ran.empty())
    fail("internal error: draft model: a step with nothing to run");
  std::vector<const State *> states;
  for (const auto &[i, n] : ran)
    states.push_back(work[i].state);
  chosen_.assign(logitRows_.size(), -1);
  const StepBatch batch = stagedBatch(states);
  StepOutput out;
  out.argmax = chosen_; // greedy: no sampling rows
  executor_.step(batch, out);
  ++numSteps_;

  for (const auto &[i, n] : ran) {
    Work &w = work[i];
    w.state->tokens.insert(w.state->tokens.end(), w.pending.begin(),
                           w.pending.begin() + n);
    w.pending.erase(w.pending.begin(), w.pending.begin() + n);
  }
  for (size_t r = 0; r < rowWork_.size(); ++r) {
    Work &w = work[rowWork_[r]];
    const int32_t id = chosen_[r];
    if (id < 0)
      fail("the draft model's ", executor_.name(),
           " executor returned no token for logits row ", r);
    w.proposals.push_back(id);
    if (static_cast<int32_t>(w.proposals.size()) < w.room)
      w.pending.push_back(id);
  }
}

void DraftModelProposer::runChained(std::span<Work> work) {
  // Step s runs, for each item that still needs proposals, the token at
  // position state->tokens.size() + s: its pending token in step 0, after
  // that the proposal of step s - 1, which the executor feeds from that
  // step's row (StepBatch::chainedRows) before the host has it. The host
  // reads a step's proposals after queueing the next one.
  std::vector<int32_t> steps(work.size(), 0); // steps each item runs
  std::vector<size_t> before(work.size(), 0); // its proposals before them
  int32_t maxSteps = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    before[i] = work[i].proposals.size();
    steps[i] = std::max(0, work[i].room - static_cast<int32_t>(before[i]));
    maxSteps = std::max(maxSteps, steps[i]);
  }
  std::vector<int32_t> rowOf(work.size(), -1);
  std::vector<size_t> stepItems[2];
  int queued = 0;
  auto retire = [&](int slot) {
    --queued;
    executor_.finishStep();
    ++numSteps_;
    const std::vector<size_t> &done = stepItems[slot];
    for (size_t r = 0; r < done.size(); ++r) {
      const int32_t id = chainedChosen_[slot][r];
      if (id < 0)
        fail("the draft model's ", executor_.name(),
             " executor returned no token for logits row ", r);
      work[done[r]].proposals.push_back(id);
    }
  };
  try {
    for (int32_t s = 0; s < maxSteps; ++s) {
      const int slot = s % 2;
      std::vector<size_t> &items = stepItems[slot];
      items.clear();
      stepTokens_.clear();
      positions_.clear();
      tokenSeq_.clear();
      logitRows_.clear();
      chainedRows_.clear();
      for (size_t i = 0; i < work.size(); ++i) {
        if (steps[i] <= s)
          continue;
        const Work &w = work[i];
        const int32_t k = static_cast<int32_t>(items.size());
        items.push_back(i);
        stepTokens_.push_back(s == 0 ? w.pending.front() : 0);
        positions_.push_back(static_cast<int32_t>(w.state->tokens.size()) + s);
        tokenSeq_.push_back(k);
        logitRows_.push_back(k);
        chainedRows_.push_back(s == 0 ? -1 : rowOf[i]);
        rowOf[i] = k;
      }
      std::vector<const State *> states;
      for (size_t i : items)
        states.push_back(work[i].state);
      chainedChosen_[slot].assign(items.size(), -1);
      StepBatch batch = stagedBatch(states);
      if (s > 0)
        batch.chainedRows = chainedRows_;
      StepOutput out;
      out.argmax = chainedChosen_[slot];
      executor_.submitStep(batch, out);
      ++queued;
      if (queued == 2)
        retire(1 - slot);
    }
    if (queued > 0)
      retire((maxSteps - 1) % 2);
  } catch (...) {
    for (; queued > 0; --queued) {
      try {
        executor_.finishStep();
      } catch (...) {
      }
    }
    throw;
  }
  // The K/V now held: the pending token and every proposal but the last.
  for (size_t i = 0; i < work.size(); ++i) {
    if (steps[i] == 0)
      continue;
    Work &w = work[i];
    w.state->tokens.push_back(w.pending.front());
    w.state->tokens.insert(w.state->tokens.end(),
                           w.proposals.begin() +
                               static_cast<std::ptrdiff_t>(before[i]),
                           w.proposals.end() - 1);
    w.pending.clear();
  }
}

} // namespace sol

//===- Scheduler.cpp - Iteration-level scheduling of sequences ------------===//
#include "runtime/engine/Scheduler.h"

#include "runtime/support/Error.h"

#include <algorithm>

namespace sol {

Scheduler::Scheduler(const SchedulerConfig &config, BlockManager &blocks)
    : config_(config), blocks_(blocks) {
  if (config.maxNumSeqs < 1)
    fail("--max-num-seqs must be >= 1, got ", config.maxNumSeqs);
  if (config.maxNumBatchedTokens < 1)
    fail("--max-num-batched-tokens must be >= 1, got ",
         config.maxNumBatchedTokens);
}

void Scheduler::add(Sequence &seq) {
  if (!seq.blocks.blocks.empty() || seq.numComputed != 0)
    fail("internal error: a sequence joins the waiting queue holding KV "
         "blocks");
  seq.status = SequenceStatus::Waiting;
  waiting_.push_back(&seq);
}

void Scheduler::remove(Sequence &seq) {
  if (auto it = std::find(running_.begin(), running_.end(), &seq);
      it != running_.end())
    running_.erase(it);
  else if (auto w = std::find(waiting_.begin(), waiting_.end(), &seq);
           w != waiting_.end())
    waiting_.erase(w);
  blocks_.release(seq.blocks);
  seq.numComputed = 0;
}

void Scheduler::push(Schedule &out, Sequence &seq, int32_t n, int32_t &budget) {
  seq.scheduledTokens = n;
  // Speculative tokens come after the last one: the step samples.
  out.chunks.push_back({&seq, n, n >= seq.numUncomputed()});
  out.numTokens += n;
  budget -= n;
}

void Scheduler::preempt(Sequence &victim, Schedule &out, int32_t &budget) {
  if (victim.scheduledTokens > 0) {
    // Already in this step (a decode of pass 1): take it out again.
    auto it =
        std::find_if(out.chunks.begin(), out.chunks.end(),
                     [&](const ScheduledChunk &c) { return c.seq == &victim; });
    out.numTokens -= it->numTokens;
    budget += it->numTokens;
    out.chunks.erase(it);
    victim.scheduledTokens = 0;
  }
  running_.erase(std::find(running_.begin(), running_.end(), &victim));
  victim.draft.clear();
  blocks_.release(victim.blocks);
  victim.numComputed = 0;
  victim.status = SequenceStatus::Waiting;
  ++victim.numPreemptions;
  waiting_.push_front(&victim);
  ++out.numPreempted;
  ++numPreemptions_;
}

bool Scheduler::reserve(Sequence &seq, int32_t n, Schedule &out,
                        int32_t &budget) {
  while (!blocks_.grow(seq.blocks, int64_t(seq.numComputed) + n)) {
    Sequence &victim = *running_.back();
    preempt(victim, out, budget);
    if (&victim == &seq)
      return false;
  }
  return true;
}

void Scheduler::admit(Schedule &out, int32_t &budget) {
  const int32_t bs = blocks_.blockSize();
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < config_.maxNumSeqs) {
    Sequence &seq = *waiting_.front();
    // Reuse cached full blocks, but compute at least the last token (a
    // pending one included: numComputed is 0 here).
    const int32_t total = seq.numUncomputed();
    const PrefixMatch match = blocks_.findPrefix(seq.tokens, (total - 1) / bs);
    const int32_t cached = static_cast<int32_t>(match.blocks.size()) * bs;
    const int32_t n = std::min(total - cached, budget);
    const int32_t fresh = blocks_.blocksFor(int64_t(cached) + n) -
                          static_cast<int32_t>(match.blocks.size());
    if (blocks_.blocksToTake(match, fresh) > blocks_.numAvailable())
      break; // first come, first served: the head waits, so do the others
    blocks_.takePrefix(seq.blocks, match, seq.numTokens());
    if (!blocks_.grow(seq.blocks, int64_t(cached) + n))
      fail("internal error: KV blocks counted available were not");
    seq.numComputed = cached;
    if (seq.numCachedTokens < 0)
      seq.numCachedTokens = cached;
    waiting_.pop_front();
    seq.status = SequenceStatus::Running;
    running_.push_back(&seq);
    push(out, seq, n, budget);
  }
}

Schedule Scheduler::schedule() {
  Schedule out;
  int32_t budget = config_.maxNumBatchedTokens;
  for (Sequence *seq : running_)
    seq->scheduledTokens = 0;

  // 1. Decodes. Victims come from the back, so running_[i] stays in place
  // unless it is the victim itself (then it was the last one).
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence &seq = *running_[i];
    if (seq.numUncomputed() != 1)
      continue;
    // Speculative tokens only where they fit without preempting anyone.
    const auto drafts =
        std::min<size_t>(seq.draft.size(), static_cast<size_t>(budget - 1));
    if (drafts > 0 &&
        blocks_.grow(seq.blocks, int64_t(seq.numComputed) + 1 +
                                     static_cast<int64_t>(drafts))) {
      seq.draft.resize(drafts);
      push(out, seq, 1 + static_cast<int32_t>(drafts), budget);
      continue;
    }
    seq.draft.clear();
    if (reserve(seq, 1, out, budget))
      push(out, seq, 1, budget);
  }
  // 2. Chunks of partly computed prompts (or recomputations) of running.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence &seq = *running_[i];
    if (seq.scheduledTokens > 0 || seq.numUncomputed() <= 1)
      continue;
    const int32_t n = std::min(seq.numUncomputed(), budget);
    if (reserve(seq, n, out, budget))
      push(out, seq, n, budget);
  }
  // 3. Admissions, unless this step had to preempt.
  if (out.numPreempted == 0)
    admit(out, budget);
  return out;
}

void Scheduler::advance(Sequence &seq, int32_t n) {
  seq.numComputed += n;
  blocks_.commitFullBlocks(seq.blocks, seq.tokens, seq.numComputed);
}

void Scheduler::commit(const Schedule &schedule) {
  for (const ScheduledChunk &c : schedule.chunks) {
    Sequence &seq = *c.seq;
    seq.numComputed += c.numTokens;
    seq.scheduledTokens = 0;
    blocks_.commitFullBlocks(seq.blocks, seq.tokens, seq.numComputed);
  }
}

} // namespace sol

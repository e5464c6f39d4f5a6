//===- Scheduler.h - Iteration-level scheduling of sequences ----*- C++ -*-===//
//
// Decides, step by step, which tokens of which sequences the executor runs
// (continuous batching with chunked prefill, as vLLM V1):
//
//  1. every running sequence that waits for its next token gets its one
//     decode token, oldest admission first, followed by its speculative
//     tokens (Sequence::draft) where the budget and free blocks allow
//     (never at the cost of a preemption);
//  2. running sequences with a partly computed prompt get chunks of the
//     remaining token budget, oldest first;
//  3. waiting sequences are admitted strictly first come, first served (the
//     head of the queue blocks the rest) while the budget, maxNumSeqs and
//     the free KV blocks allow; a new sequence first takes the longest chain
//     of cached prefix blocks, never its last token, so the step has logits.
//
// When a running sequence needs a block and none is available, the most
// recently admitted running sequence is preempted by recompute: its blocks
// are released and it goes back to the front of the waiting queue, where it
// later recomputes prompt + generated-so-far and continues exactly. A step
// that preempted admits no waiting sequence.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/BlockManager.h"
#include "runtime/engine/Sequence.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace sol {

struct SchedulerConfig {
  /// Running sequences at most (decoding or prefilling).
  int32_t maxNumSeqs = 256;
  /// Tokens per step at most.
  int32_t maxNumBatchedTokens = 2048;
};

/// `numTokens` tokens of `seq` from position seq->numComputed; `sample` when
/// they reach its last token, so the step yields its next token.
struct ScheduledChunk {
  Sequence *seq = nullptr;
  int32_t numTokens = 0;
  bool sample = false;
};

struct Schedule {
  /// Decodes first, then prompt chunks of running, then admitted sequences.
  std::vector<ScheduledChunk> chunks;
  int32_t numTokens = 0;
  /// Sequences preempted while building this step.
  int32_t numPreempted = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
public:
  /// Throws sol::Error unless both limits are >= 1.
  Scheduler(const SchedulerConfig &config, BlockManager &blocks);

  const SchedulerConfig &config() const { return config_; }

  /// Queues a sequence (it must hold no blocks) at the back.
  void add(Sequence &seq);
  /// Takes a sequence out (finished or aborted): off the queues, its blocks
  /// released. No-op when it is in neither queue.
  void remove(Sequence &seq);

  /// The next step. Empty when nothing is waiting or running.
  Schedule schedule();
  /// After the executor ran `schedule`: advances numComputed and registers
  /// the blocks that became full in the prefix cache.
  void commit(const Schedule &schedule);
  /// Counts `n` more tokens of `seq` as computed (speculative tokens that
  /// were accepted and appended) and registers the blocks that became full.
  void advance(Sequence &seq, int32_t n);

  const std::vector<Sequence *> &running() const { return running_; }
  const std::deque<Sequence *> &waiting() const { return waiting_; }
  int64_t numPreemptions() const { return numPreemptions_; }

private:
  /// Grows seq's blocks for `n` more tokens, preempting the most recently
  /// admitted running sequences while that fails. False when `seq` itself
  /// was preempted.
  bool reserve(Sequence &seq, int32_t n, Schedule &out, int32_t &budget);
  void preempt(Sequence &victim, Schedule &out, int32_t &budget);
  void push(Schedule &out, Sequence &seq, int32_t n, int32_t &budget);
  /// Admits waiting sequences while they fit.
  void admit(Schedule &out, int32_t &budget);

  SchedulerConfig config_;
  BlockManager &blocks_;
  std::vector<Sequence *> running_; // admission order
  std::deque<Sequence *> waiting_;
  int64_t numPreemptions_ = 0;
};

} // namespace sol

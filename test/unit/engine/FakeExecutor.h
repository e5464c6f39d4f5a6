//===- FakeExecutor.h - A context-hashing stand-in for a model --*- C++ -*-===//
//
// An executor for engine tests that runs in microseconds yet punishes every
// bookkeeping error the way a real model would: each step writes its tokens
// (with their positions) into a paged "KV cache" through the block tables,
// and a logits row's next token is a function of the whole context read
// back through the sequence's block table. A wrong block id, a stale block,
// a prefix-cache hit on the wrong tokens or a bad recompute changes the
// context and so the tokens; reading a slot that holds another position is
// an error. Every batch is recorded (deep copies) for structural checks.
//
// With `chains` set it behaves as an asynchronous executor: submitStep()
// runs the step at once (as a device would, in order) but writes the
// outputs only when finishStep() retires it, and chained tokens take the
// previous submitted step's ids. An engine that reads results too early,
// feeds the wrong row or queues too much gets wrong tokens or an error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/Executor.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace sol::test {

/// A deep copy of a StepBatch.
struct RecordedBatch {
  std::vector<int32_t> tokens, positions, tokenSeq, logitRows, blockTables;
  std::vector<int32_t> chainedRows; // as submitted; `tokens` resolved
  int32_t numSeqs = 0, maxBlocksPerSeq = 0;
  std::vector<SamplingRow> sampling;
  std::vector<int32_t> penaltyOffsets, penaltyIds, penaltyCounts;
  std::vector<uint8_t> penaltyInPrompt;
  std::vector<int32_t> biasOffsets, biasIds;
  std::vector<float> biasValues;
  int32_t numTopLogprobs = 0;
  bool logprobsRequested = false;
};

class FakeExecutor final : public Executor {
public:
  /// The next token after `context` (all ids of one sequence so far).
  using Model = std::function<int32_t(std::span<const int32_t> context)>;

  FakeExecutor(int32_t numBlocks, int32_t blockSize, int32_t maxTokensPerStep,
               int32_t vocab);

  /// The default model: a hash of the context, modulo the vocabulary.
  static int32_t hashModel(std::span<const int32_t> context, int32_t vocab);
  /// A model whose next token is the one `period` positions back (1 while
  /// the context is shorter): a context of period p repeats, so prompt
  /// lookup and drafts with this model propose tokens it then draws.
  static Model periodic(size_t period);

  std::string name() const override { return "fake"; }
  int32_t numKvBlocks() const override { return numBlocks_; }
  int32_t blockSize() const override { return blockSize_; }
  int32_t maxTokensPerStep() const override { return maxTokens_; }
  void step(const StepBatch &batch, const StepOutput &out) override;
  bool chainsSteps() const override { return chains; }
  void submitStep(const StepBatch &batch, const StepOutput &out) override;
  void finishStep() override;

  /// Replaces the model (default: hashModel).
  Model model;
  /// Honour StepBatch::logitBias bans: a model token banned (-inf) in its
  /// row becomes the next id that is not. Other biases are ignored.
  bool honorBans = false;
  bool record = true;
  /// Queue steps and accept chained rows (see above).
  bool chains = false;
  /// Steps submitted and not retired (at most 2).
  int queued() const { return static_cast<int>(queue_.size()); }
  /// With `chains`: the finishStep() that retires the step submitted as
  /// number failAtSubmit (1-based) throws instead of writing its outputs, as
  /// a device error would; 0: never.
  int64_t failAtSubmit = 0;
  std::vector<RecordedBatch> batches;
  int64_t numSteps = 0;

  /// The logprob and top entries the fake reports for a chosen id.
  static float logprobOf(int32_t id) { return -0.125f * float(id % 8); }

private:
  /// Runs the step; results go to `result` (out's shape) rather than `out`.
  void run(const StepBatch &batch, const StepOutput &out,
           std::span<const int32_t> tokens);
  struct Queued {
    StepOutput out;
    int64_t number = 0;
    std::vector<int32_t> argmax, topIds;
    std::vector<float> logprobs, topLogprobs;
  };
  std::vector<Queued> queue_;
  int64_t submitted_ = 0;
  /// The ids chosen by the last submitted step (chained rows read them).
  std::vector<int32_t> lastChosen_;
  int32_t numBlocks_, blockSize_, maxTokens_, vocab_;
  /// Per slot: the token and position written there (-1: never).
  std::vector<int32_t> kvToken_, kvPos_;
};

} // namespace sol::test

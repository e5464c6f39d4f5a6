//===- Sequence.h - The engine's state of one request -----------*- C++ -*-===//
//
// A request as the scheduler sees it: its token ids (prompt, then the
// generated ones), how many of them have their K/V in the cache
// (numComputed), and the blocks that hold them. Each step computes some of
// the tokens [numComputed, tokens.size()); a step that reaches the last one
// yields the logits of the next token. A fresh prompt and a sequence that
// lost its cache to preemption (numComputed back to 0, prompt + generated
// ids recomputed) are thus the same case.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/BlockManager.h"
#include "runtime/engine/Request.h"
#include "runtime/engine/StopChecker.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace sol {

enum class SequenceStatus { Waiting, Running, Finished };

/// The tokens a request's penalties apply to, kept sorted by id: how often
/// each occurs in the output and whether it occurs in the prompt (the rows
/// of PenaltyTokens in Executor.h).
class PenaltyTokenSet {
public:
  explicit PenaltyTokenSet(std::span<const int32_t> prompt);
  void addOutput(int32_t id);

  const std::vector<int32_t> &ids() const { return ids_; }
  const std::vector<int32_t> &outputCounts() const { return counts_; }
  const std::vector<uint8_t> &inPrompt() const { return inPrompt_; }

private:
  std::vector<int32_t> ids_, counts_;
  std::vector<uint8_t> inPrompt_;
};

struct Sequence {
  using Clock = std::chrono::steady_clock;

  Sequence(int64_t id, Request request, uint64_t seed,
           std::span<const int32_t> defaultEos, const Tokenizer *tokenizer);

  int64_t id;
  Request request;
  /// Prompt ids, then the generated ids.
  std::vector<int32_t> tokens;
  int32_t promptLen;
  /// Leading tokens whose K/V is in `blocks`.
  int32_t numComputed = 0;
  BlockTable blocks;
  /// The draw seed (the request's, or one picked at submission).
  uint64_t seed;
  SequenceStatus status = SequenceStatus::Waiting;
  FinishReason finishReason = FinishReason::None;
  /// Prompt tokens the prefix cache held at the first admission (-1 before).
  int32_t numCachedTokens = -1;
  int32_t numPreemptions = 0;
  /// Tokens this sequence runs in the step being built (scheduler scratch).
  int32_t scheduledTokens = 0;
  /// Set by the engine while it schedules a step ahead (async scheduling):
  /// the logits row of the queued step that draws this sequence's next
  /// token, whose id the host does not have yet, so it counts as a token to
  /// compute at position numTokens(); -1 otherwise.
  int32_t pendingRow = -1;
  /// Speculative tokens proposed for the positions after the last token
  /// (n-gram prompt lookup), set by the engine while it builds a step: the
  /// scheduler runs them with the decode token, all or as many as the token
  /// budget and the free KV blocks allow, and the step checks them.
  std::vector<int32_t> draft;
  Clock::time_point arrivalTime, firstTokenTime, lastTokenTime;
  StopChecker stop;
  /// Present when the request has penalties.
  std::unique_ptr<PenaltyTokenSet> penalties;

  int32_t numTokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t numOutput() const { return numTokens() - promptLen; }
  /// Tokens still to compute before the next token can be drawn.
  int32_t numUncomputed() const {
    return numTokens() + (pendingRow >= 0 ? 1 : 0) - numComputed;
  }
  std::span<const int32_t> outputIds() const {
    return std::span<const int32_t>(tokens).subspan(
        static_cast<size_t>(promptLen));
  }

  /// Appends a generated id (penalty counts follow).
  void appendOutput(int32_t id);
};

} // namespace sol

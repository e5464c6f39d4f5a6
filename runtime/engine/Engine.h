//===- Engine.h - Batched generation over an executor -----------*- C++ -*-===//
//
// The engine serves many requests at once on one executor: a Scheduler
// (continuous batching, chunked prefill, preemption by recompute) over a
// BlockManager (paged KV cache, prefix caching). Each step() builds one
// StepBatch (tokens of decodes and prompt chunks, their block tables, one
// SamplingRow per logits row, the penalty tokens and the logit biases, which
// ban EOS and stop ids below min_tokens), runs it, appends the
// drawn tokens, applies the stop conditions and reports what changed.
//
// Async scheduling: on executors that chain steps (Executor::chainsSteps),
// the next step is scheduled and queued before the current one's tokens
// reach the host: each sequence drawing a token counts it as pending, and
// the device feeds it into the next step (StepBatch::chainedRows). The host
// then appends tokens, checks stops and builds the following batch while
// the device runs. A sequence that stops meanwhile has its queued token
// discarded; its K/V write lands in a block it no longer uses, which the
// device overwrites, in order, before any later step reads it
// (docs/engine.md).
//
// Single-threaded: submit(), abort() and step() are called from one thread
// (a server wraps the engine in its own loop).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/BlockManager.h"
#include "runtime/engine/Request.h"
#include "runtime/engine/Scheduler.h"
#include "runtime/engine/Sequence.h"
#include "runtime/engine/SpeculativeConfig.h"
#include "runtime/executor/Executor.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

namespace sol {

class DraftModelProposer;
class Tokenizer;

/// Running sequences at most when EngineConfig::maxNumSeqs is 0 (and the
/// token budget allows as many).
inline constexpr int32_t kDefaultMaxNumSeqs = 256;

struct EngineConfig {
  /// Columns of a logits row; token ids are < vocabSize.
  int64_t vocabSize = 0;
  /// Longest sequence (prompt + max tokens) a request may ask for.
  int64_t maxModelLen = 0;
  /// Running sequences at most; 0: min(kDefaultMaxNumSeqs, the token budget).
  int32_t maxNumSeqs = 0;
  /// Tokens per step at most; 0: executor.maxTokensPerStep().
  int32_t maxNumBatchedTokens = 0;
  bool enablePrefixCaching = false;
  /// End-of-sequence ids of requests that do not name their own.
  std::vector<int32_t> eosTokenIds;
  /// For stop strings and output text; may be null. Must outlive the engine.
  const Tokenizer *tokenizer = nullptr;
  /// Seeds the seeds of requests that bring none; absent: random.
  std::optional<uint64_t> seed;
  /// Queue the next decode step while the current one runs, where the
  /// executor can (solrun --async-scheduling on|off; docs/engine.md).
  bool asyncScheduling = true;
  /// Speculative decoding (solrun --speculative-config): n-gram prompt
  /// lookup or a draft model proposes tokens that a decode step checks in
  /// one pass. Steps that speculate are not queued ahead (their tokens
  /// decide the next).
  SpeculativeConfig speculative;
  /// The draft model's executor (speculative.method DraftModel; must
  /// outlive the engine), its vocabulary the engine's, and the longest
  /// sequence it was sized for (0: maxModelLen); longer ones get no drafts.
  Executor *draftExecutor = nullptr;
  int64_t draftMaxModelLen = 0;
};

struct EngineStats {
  int32_t numRunning = 0;
  int32_t numWaiting = 0;
  int64_t numPreemptions = 0;
  int32_t kvBlocksUsed = 0;   // referenced by a sequence
  int32_t kvBlocksCached = 0; // unreferenced, kept by the prefix cache
  int32_t kvBlocksTotal = 0;
  int32_t peakKvBlocksUsed = 0;
  /// Tokens with K/V in the cache, summed over sequences (peak over steps).
  int64_t peakKvTokens = 0;
  /// Prompt tokens looked up in the prefix cache, and those found.
  int64_t prefixCacheQueries = 0;
  int64_t prefixCacheHits = 0;
  int64_t numRequests = 0;  // submitted
  int64_t promptTokens = 0; // of the submitted requests
  int64_t generatedTokens = 0;
  int64_t computedTokens = 0; // run through the executor (with recompute)
  int64_t numSteps = 0;
  /// Steps queued before the previous step's tokens were on the host, and
  /// their tokens discarded because the sequence had stopped.
  int64_t chainedSteps = 0;
  int64_t discardedTokens = 0;
  /// Speculative decoding: decode steps of a sequence that carried proposed
  /// tokens, the tokens proposed, and those accepted (equal to the token
  /// drawn at their position).
  int64_t specDrafts = 0;
  int64_t specProposedTokens = 0;
  int64_t specAcceptedTokens = 0;
  /// Steps the draft model's executor ran (draft-model speculation).
  int64_t specDraftModelSteps = 0;
};

/// One window of a teacher-forced scoring pass (Engine::scoreWindows): a
/// sequence of its own, from position 0.
struct ScoreWindow {
  std::span<const int32_t> ids;
  /// ids[t] is scored under the logits of position t - 1 for t in
  /// [firstScored, ids.size()); 1 <= firstScored <= ids.size() (equal:
  /// nothing scored).
  int32_t firstScored = 1;
};

/// One scored id, as Engine::scoreWindows hands it to its callback.
struct ScoredToken {
  int32_t window = 0;   // index into the windows
  int32_t position = 0; // t, within the window
  /// Rank among all scored ids: windows in order, positions increasing.
  int64_t index = 0;
  int32_t target = 0; // ids[t]
  /// log_softmax(logits)[target], computed in double.
  double logprob = 0;
  /// The vocabulary's logits at position t - 1; valid during the call.
  std::span<const float> logits;
};

struct ScoreOptions {
  /// Logits one step copies to the host at most (rows x vocab x 4 bytes;
  /// one row at least): steps score fewer positions rather than exceed it.
  std::size_t maxLogitsBytesPerStep = std::size_t(256) << 20;
  /// Threads computing the rows' log-softmax; 0: the hardware's, at most 16.
  int32_t numThreads = 0;
};

/// What Engine::scoreWindows ran.
struct ScoreSummary {
  int64_t scored = 0; // ids scored (callbacks made)
  int64_t steps = 0;
  int64_t computedTokens = 0;
  int32_t maxWindowsPerStep = 0; // most windows that shared a step
};

class Engine {
public:
  /// Throws sol::Error on an invalid configuration (limits < 1 or beyond
  /// what the executor supports).
  Engine(Executor &executor, EngineConfig config);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  const EngineConfig &config() const { return config_; }
  const SchedulerConfig &schedulerConfig() const { return scheduler_.config(); }

  /// Queues a request; returns its id. Throws sol::Error naming the problem
  /// when it can never be served: an empty prompt, ids outside the
  /// vocabulary, prompt + max_tokens beyond maxModelLen or the whole KV
  /// cache, invalid sampling parameters, stop strings without a tokenizer.
  int64_t submit(Request request);
  /// The checks of submit() on a prompt that will grow by `newTokens`.
  void checkPrompt(std::span<const int32_t> promptIds, int64_t newTokens) const;
  /// Ends a request: its blocks are freed now and the next step() reports
  /// it finished with "abort". False when the id is unknown or finished.
  bool abort(int64_t id);

  /// Runs one step; returns one output per request that got a token or
  /// finished (aborted ones included). Empty when there is nothing to do.
  /// With async scheduling the next step may be queued on the executor when
  /// this returns; it is retired by the next step(), promptLogits() or the
  /// destructor. An executor error sends the sequences of the queued steps
  /// back to the waiting queue (they recompute) and is rethrown.
  std::vector<RequestOutput> step();
  /// Whether any request is waiting, running or has an unreported abort.
  bool hasUnfinished() const;

  EngineStats stats() const;
  const BlockManager &blockManager() const { return blocks_; }
  /// The draft model's proposer (speculative method DraftModel), else null.
  const DraftModelProposer *draftProposer() const {
    return draftProposer_.get();
  }

  /// Teacher-forced logits of every prompt position (prompt.size() x vocab),
  /// run outside the scheduler on blocks of its own (released after).
  std::vector<float> promptLogits(std::span<const int32_t> promptIds);

  /// Teacher-forced scoring of many windows (a perplexity pass), outside
  /// the scheduler: each window is a sequence of its own with KV blocks of
  /// its own (released when it is done), several share a step (at most
  /// maxNumSeqs, maxNumBatchedTokens tokens), and a window longer than the
  /// budget runs in chunks over several steps, its earlier chunks staying in
  /// the KV cache. Only the rows that score something are asked for (a
  /// window's last id is never computed: it is only a target), bounded per
  /// step by `options.maxLogitsBytesPerStep`. `onToken` gets every scored
  /// id once: one window's positions in increasing order, windows possibly
  /// interleaved (ScoredToken::index places each). Retires a queued step
  /// first, as promptLogits. Throws sol::Error, before running anything, on
  /// a window with ids outside the vocabulary, longer than maxModelLen, or
  /// needing more KV blocks than are available.
  ScoreSummary
  scoreWindows(std::span<const ScoreWindow> windows,
               const std::function<void(const ScoredToken &)> &onToken,
               const ScoreOptions &options = {});

private:
  /// One sequence's part of a step being built: `numTokens` tokens from
  /// position seq->numComputed; `chainedRow` >= 0 for a decode token that is
  /// the id chosen for that row of the step queued just before (not yet on
  /// the host, so the sequence has one output more than seq->numOutput()).
  struct PlannedChunk {
    Sequence *seq = nullptr;
    int32_t numTokens = 0;
    bool sample = false;
    int32_t chainedRow = -1;
  };
  /// Whether decode steps propose speculative tokens now (enabled, and not
  /// more running sequences than disable_by_batch_size).
  bool speculating() const;
  /// Sets Sequence::draft of each running sequence that decodes next.
  void proposeDrafts();
  /// Drops what the draft model keeps for a sequence that is gone.
  void forgetDraft(int64_t id);
  /// A step handed to the executor and not yet retired. Sequences are named
  /// by id: one may finish or be aborted while its step is queued.
  struct LaunchedStep {
    struct Chunk {
      int64_t seq;
      int32_t numTokens; // the speculative ones included
      bool sample;
      /// Speculative tokens after the decode token: one logits row each
      /// besides the decode token's.
      std::vector<int32_t> draft;
    };
    std::vector<Chunk> chunks;
    /// The scheduler has counted its tokens as computed (done early when a
    /// chained step was built on top of it).
    bool committed = false;
    int slot = 0; // which of outputs_ receives its results
    int32_t numTop = 0;
  };
  /// Where a step's results land; two, so that a queued step's never
  /// overwrite those of the step being read.
  struct OutputSlot {
    std::vector<int32_t> chosen, topIds;
    std::vector<float> logprobs, topLogprobs;
  };

  /// Builds the batch of `chunks` and submits it to the executor.
  LaunchedStep launch(std::span<const PlannedChunk> chunks);
  /// Whether the next step can be scheduled before `step`'s results are on
  /// the host: the executor chains steps, `step` is all one-token chunks
  /// (decodes; after prompt work, arrivals are admitted sooner by the step
  /// built after it) and no sequence that samples in it has penalties
  /// (their lists need its last token).
  bool canScheduleAhead(const LaunchedStep &step) const;
  /// Commits `step`, then schedules and queues the next step as the
  /// scheduler would after it, each sequence that samples in `step` (below
  /// max_tokens) counting its token as pending: its decode token is fed
  /// from its row of `step`. Nothing when there is nothing to run.
  std::optional<LaunchedStep> launchAhead(LaunchedStep &step);
  /// Retires `step` on the executor, commits it and appends the outputs of
  /// its sequences that still run.
  void collect(LaunchedStep &step, std::vector<RequestOutput> &outputs);
  void commit(LaunchedStep &step);
  /// After an executor error: retire whatever is queued, send the sequences
  /// of committed steps back to the waiting queue, forget the steps.
  void recoverFromExecutorError(std::span<LaunchedStep *const> steps);
  Sequence *find(int64_t id) const;
  /// Retires the queued step, if any (its outputs go to pending_ for the
  /// next step() to report), before the engine runs steps of its own.
  void retireInFlight();
  /// Appends the logit-bias entries of `seq`'s token number numOutput + 1:
  /// the request's logitBias, and -inf for its EOS and stop ids while it is
  /// below min_tokens.
  void appendBias(const Sequence &seq, int32_t numOutput);

  Executor &executor_;
  EngineConfig config_;
  BlockManager blocks_;
  Scheduler scheduler_;
  std::map<int64_t, std::unique_ptr<Sequence>> sequences_;
  std::unique_ptr<DraftModelProposer> draftProposer_;
  /// Outputs for the next step() to report: aborts, and those of a step
  /// retired outside step().
  std::vector<RequestOutput> pending_;
  std::optional<LaunchedStep> inFlight_;
  int queued_ = 0; // steps submitted and not retired
  int nextSlot_ = 0;
  OutputSlot outputs_[2];
  int64_t nextId_ = 0;
  std::mt19937_64 seedRng_;
  EngineStats counters_; // the cumulative fields

  // Step scratch, kept to avoid reallocating every step.
  std::vector<PlannedChunk> planned_;
  std::vector<Sequence *> pendingSeqs_; // launchAhead's, to clear
  std::vector<int32_t> tokens_, positions_, tokenSeq_, logitRows_, blockTables_,
      chainedRows_, penaltyOffsets_, penaltyIds_, penaltyCounts_;
  std::vector<int32_t> biasOffsets_, biasIds_;
  std::vector<float> biasValues_;
  std::vector<uint8_t> penaltyInPrompt_;
  std::vector<SamplingRow> sampling_;
};

} // namespace sol

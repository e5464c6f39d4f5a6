//===- Engine.cpp - Batched generation over an executor -------------------===//
#include "runtime/engine/Engine.h"

#include "runtime/engine/DraftModelProposer.h"
#include "runtime/engine/NgramProposer.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <thread>
#include <utility>

namespace sol {

namespace {

EngineConfig resolve(const Executor &executor, EngineConfig c) {
  const int32_t stepCap = executor.maxTokensPerStep();
  if (c.vocabSize < 1)
    fail("engine: the vocabulary size is ", c.vocabSize, "; it must be >= 1");
  if (c.maxModelLen < 1)
    fail("--max-model-len must be >= 1, got ", c.maxModelLen);
  if (c.maxNumBatchedTokens < 0 || c.maxNumSeqs < 0)
    fail("--max-num-batched-tokens and --max-num-seqs must be >= 1, got ",
         c.maxNumBatchedTokens, " and ", c.maxNumSeqs);
  if (c.maxNumBatchedTokens == 0)
    c.maxNumBatchedTokens = stepCap;
  if (c.maxNumBatchedTokens > stepCap)
    fail("--max-num-batched-tokens ", c.maxNumBatchedTokens, " exceeds the ",
         stepCap, " tokens one step of this executor may ",
         "hold (the plan's limit, set by solc --max-num-batched-tokens)");
  if (c.maxNumSeqs == 0)
    c.maxNumSeqs = std::min(kDefaultMaxNumSeqs, c.maxNumBatchedTokens);
  if (c.maxNumSeqs > c.maxNumBatchedTokens)
    fail("--max-num-seqs ", c.maxNumSeqs, " exceeds --max-num-batched-tokens ",
         c.maxNumBatchedTokens,
         ": every running sequence needs a token of the step's budget; lower "
         "--max-num-seqs");
  const bool draftModel =
      c.speculative.method == SpeculativeConfig::Method::DraftModel;
  if (draftModel != (c.draftExecutor != nullptr))
    fail("internal error: engine: ",
         draftModel ? "a draft model without its executor"
                    : "a draft executor without draft-model speculation");
  if (c.draftMaxModelLen <= 0 || c.draftMaxModelLen > c.maxModelLen)
    c.draftMaxModelLen = c.maxModelLen;
  return c;
}

bool inRange(float v, float lo, float hi) {
  return std::isfinite(v) && v >= lo && v <= hi;
}

void checkSampling(const Request &r, int64_t vocab) {
  const SamplingParams &p = r.sampling;
  if (!(std::isfinite(p.temperature) && p.temperature >= 0.0f))
    fail("temperature must be >= 0 (0: greedy), got ", p.temperature);
  if (p.topK < 0)
    fail("top_k must be >= 0 (0: all tokens), got ", p.topK);
  if (!(std::isfinite(p.topP) && p.topP > 0.0f && p.topP <= 1.0f))
    fail("top_p must be in (0, 1], got ", p.topP);
  if (!inRange(p.minP, 0.0f, 1.0f))
    fail("min_p must be in [0, 1], got ", p.minP);
  if (!(std::isfinite(p.repetitionPenalty) && p.repetitionPenalty > 0.0f))
    fail("repetition_penalty must be > 0 (1: none), got ", p.repetitionPenalty);
  if (!inRange(p.presencePenalty, -2.0f, 2.0f))
    fail("presence_penalty must be in [-2, 2], got ", p.presencePenalty);
  if (!inRange(p.frequencyPenalty, -2.0f, 2.0f))
    fail("frequency_penalty must be in [-2, 2], got ", p.frequencyPenalty);
  if (r.logprobs && (*r.logprobs < 0 || *r.logprobs > kMaxTopLogprobs))
    fail("logprobs must be in [0, ", kMaxTopLogprobs, "], got ", *r.logprobs);
  if (r.minTokens < 0 || r.minTokens > r.maxTokens)
    fail("min_tokens must be in [0, max_tokens = ", r.maxTokens, "], got ",
         r.minTokens);
  for (int32_t id : r.stopTokenIds)
    if (id < 0 || id >= vocab)
      fail("stop token id ", id, " is outside the vocabulary [0, ", vocab, ")");
  if (r.eosTokenIds)
    for (int32_t id : *r.eosTokenIds)
      if (id < 0 || id >= vocab)
        fail("EOS token id ", id, " is outside the vocabulary [0, ", vocab,
             ")");
  for (const auto &[id, bias] : r.logitBias) {
    if (id < 0 || id >= vocab)
      fail("logit_bias names token id ", id, ", outside the vocabulary [0, ",
           vocab, ")");
    if (!inRange(bias, -100.0f, 100.0f))
      fail("logit_bias of token ", id, " is ", bias,
           "; biases must be in [-100, 100]");
  }
}

} // namespace

Engine::Engine(Executor &executor, EngineConfig config)
    : executor_(executor), config_(resolve(executor, std::move(config))),
      blocks_(executor.numKvBlocks(), executor.blockSize(),
              config_.enablePrefixCaching),
      scheduler_({config_.maxNumSeqs, config_.maxNumBatchedTokens}, blocks_),
      seedRng_(config_.seed ? *config_.seed : std::random_device{}()) {
  counters_.kvBlocksTotal = blocks_.numBlocks();
  if (config_.draftExecutor)
    draftProposer_ = std::make_unique<DraftModelProposer>(
        *config_.draftExecutor, config_.draftMaxModelLen, config_.maxNumSeqs,
        config_.maxNumBatchedTokens);
}

Engine::~Engine() {
  // The executor may still write a queued step's results into outputs_.
  for (; queued_ > 0; --queued_) {
    try {
      executor_.finishStep();
    } catch (...) {
    }
  }
}

void Engine::checkPrompt(std::span<const int32_t> ids,
                         int64_t newTokens) const {
  if (ids.empty())
    fail("the prompt is empty; give at least one token id");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= config_.vocabSize)
      fail("prompt token ", i, " has id ", ids[i],
           ", outside the vocabulary [0, ", config_.vocabSize, ")");
  const int64_t total = static_cast<int64_t>(ids.size()) + newTokens;
  if (total > config_.maxModelLen)
    fail("the prompt (", ids.size(), " tokens) plus ", newTokens,
         " new tokens exceeds the maximum model length of ",
         config_.maxModelLen, " tokens (--max-model-len)");
  const int64_t capacity =
      int64_t(blocks_.numBlocks()) * int64_t(blocks_.blockSize());
  if (total > capacity)
    fail("the KV cache holds ", capacity, " tokens (", blocks_.numBlocks(),
         " blocks of ", blocks_.blockSize(), ") but this request needs ", total,
         " (prompt ", ids.size(), " + ", newTokens,
         " new tokens); lower max_tokens or raise --gpu-memory-utilization");
}

int64_t Engine::submit(Request request) {
  if (request.maxTokens < 1)
    fail("max_tokens must be >= 1, got ", request.maxTokens);
  checkPrompt(request.promptIds, request.maxTokens);
  checkSampling(request, config_.vocabSize);
  const uint64_t seed =
      request.sampling.seed ? *request.sampling.seed : seedRng_();
  const int64_t id = nextId_;
  auto seq = std::make_unique<Sequence>(id, std::move(request), seed,
                                        config_.eosTokenIds, config_.tokenizer);
  ++nextId_;
  ++counters_.numRequests;
  counters_.promptTokens += seq->promptLen;
  scheduler_.add(*seq);
  sequences_.emplace(id, std::move(seq));
  return id;
}

namespace {

RequestOutput outputOf(const Sequence &seq) {
  RequestOutput o;
  o.id = seq.id;
  o.numPromptTokens = seq.promptLen;
  o.numOutputTokens = seq.numOutput();
  o.numCachedTokens = std::max(seq.numCachedTokens, 0);
  o.numPreemptions = seq.numPreemptions;
  o.arrivalTime = seq.arrivalTime;
  o.firstTokenTime = seq.firstTokenTime;
  o.lastTokenTime = seq.lastTokenTime;
  return o;
}

} // namespace

bool Engine::abort(int64_t id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end())
    return false;
  Sequence &seq = *it->second;
  scheduler_.remove(seq);
  seq.status = SequenceStatus::Finished;
  seq.finishReason = FinishReason::Abort;
  RequestOutput o = outputOf(seq);
  o.finished = true;
  o.finishReason = FinishReason::Abort;
  o.newText = seq.stop.takeText(/*finished=*/true);
  pending_.push_back(std::move(o));
  forgetDraft(id);
  sequences_.erase(it);
  return true;
}

bool Engine::hasUnfinished() const {
  return !sequences_.empty() || !pending_.empty();
}

Sequence *Engine::find(int64_t id) const {
  auto it = sequences_.find(id);
  return it == sequences_.end() ? nullptr : it->second.get();
}

bool Engine::speculating() const {
  const SpeculativeConfig &spec = config_.speculative;
  return spec.enabled() && (spec.disableByBatchSize == 0 ||
                            static_cast<int32_t>(scheduler_.running().size()) <=
                                spec.disableByBatchSize);
}

void Engine::proposeDrafts() {
  const SpeculativeConfig &spec = config_.speculative;
  std::vector<Sequence *> drafting;
  std::vector<int32_t> room;
  for (Sequence *seq : scheduler_.running()) {
    seq->draft.clear();
    if (seq->numUncomputed() != 1 || seq->pendingRow >= 0)
      continue;
    // All proposed tokens accepted, the step yields one more: the output
    // stays within max_tokens (and so within maxModelLen).
    const int64_t r = std::min<int64_t>(spec.numSpeculativeTokens,
                                        int64_t(seq->request.maxTokens) -
                                            seq->numOutput() - 1);
    if (r <= 0)
      continue;
    if (!draftProposer_) {
      seq->draft = proposeNgram(seq->tokens, spec.promptLookupMin,
                                spec.promptLookupMax, static_cast<int32_t>(r));
      continue;
    }
    drafting.push_back(seq);
    room.push_back(static_cast<int32_t>(r));
  }
  if (draftProposer_ && !drafting.empty())
    draftProposer_->propose(scheduler_.running(), drafting, room);
}

void Engine::forgetDraft(int64_t id) {
  if (draftProposer_)
    draftProposer_->forget(id);
}

std::vector<RequestOutput> Engine::step() {
  if (!inFlight_) {
    if (speculating())
      proposeDrafts();
    const Schedule schedule = scheduler_.schedule();
    if (schedule.empty()) {
      // Submission guarantees every request fits the whole cache alone.
      if (!scheduler_.running().empty() || !scheduler_.waiting().empty())
        fail("internal error: the scheduler found nothing to run for ",
             scheduler_.running().size(), " running and ",
             scheduler_.waiting().size(), " waiting requests");
      return std::exchange(pending_, {});
    }
    planned_.clear();
    for (const ScheduledChunk &c : schedule.chunks)
      planned_.push_back({c.seq, c.numTokens, c.sample, -1});
    struct ClearDrafts {
      const std::vector<Sequence *> &seqs;
      ~ClearDrafts() {
        for (Sequence *seq : seqs)
          seq->draft.clear();
      }
    } clearDrafts{scheduler_.running()};
    inFlight_ = launch(planned_); // throws before queueing anything
  }
  // Outputs of earlier retirements and aborts come first; a failed step
  // leaves them for the next call.
  std::vector<RequestOutput> outputs = pending_;
  std::optional<LaunchedStep> next;
  try {
    if (canScheduleAhead(*inFlight_))
      next = launchAhead(*inFlight_);
    collect(*inFlight_, outputs);
  } catch (...) {
    LaunchedStep *steps[] = {&*inFlight_, next ? &*next : nullptr};
    recoverFromExecutorError(steps);
    throw;
  }
  pending_.clear();
  inFlight_ = std::move(next);
  return outputs;
}

Engine::LaunchedStep Engine::launch(std::span<const PlannedChunk> chunks) {
  tokens_.clear();
  positions_.clear();
  tokenSeq_.clear();
  logitRows_.clear();
  chainedRows_.clear();
  sampling_.clear();
  penaltyOffsets_.clear();
  penaltyIds_.clear();
  penaltyCounts_.clear();
  penaltyInPrompt_.clear();
  biasOffsets_.clear();
  biasIds_.clear();
  biasValues_.clear();
  auto numOutput = [](const PlannedChunk &c) {
    return c.seq->numOutput() + (c.chainedRow >= 0 ? 1 : 0);
  };
  int32_t maxBlocks = 0;
  bool plainGreedy = true, anyPenalties = false, anyLogprobs = false,
       anyBias = false, anyChained = false;
  int32_t numTop = 0;
  for (const PlannedChunk &c : chunks) {
    maxBlocks =
        std::max(maxBlocks, static_cast<int32_t>(c.seq->blocks.blocks.size()));
    anyChained |= c.chainedRow >= 0;
    if (!c.sample)
      continue;
    const Request &r = c.seq->request;
    plainGreedy &= r.sampling.greedy() && !r.sampling.hasPenalties();
    anyPenalties |= r.sampling.hasPenalties();
    anyBias |= !r.logitBias.empty() || numOutput(c) < r.minTokens;
    if (r.logprobs) {
      anyLogprobs = true;
      numTop = std::max(numTop, *r.logprobs);
    }
  }
  maxBlocks =
      blockTableWidth(maxBlocks, blocks_.blocksFor(config_.maxModelLen));
  const int32_t numSeqs = static_cast<int32_t>(chunks.size());
  blockTables_.assign(static_cast<size_t>(numSeqs) * size_t(maxBlocks), 0);
  if (anyPenalties)
    penaltyOffsets_.push_back(0);
  if (anyBias)
    biasOffsets_.push_back(0);
  LaunchedStep launched;
  for (int32_t i = 0; i < numSeqs; ++i) {
    const PlannedChunk &c = chunks[static_cast<size_t>(i)];
    const Sequence &seq = *c.seq;
    // The scheduler ran the sequence's speculative tokens after its decode
    // token (as many as fitted); a chained step has none.
    const int32_t numDraft =
        c.chainedRow < 0 ? seq.numComputed + c.numTokens - seq.numTokens() : 0;
    if (numDraft > static_cast<int32_t>(seq.draft.size()))
      fail("internal error: sequence ", seq.id, " runs ", numDraft,
           " positions past its tokens with ", seq.draft.size(),
           " speculative ones");
    launched.chunks.push_back({seq.id, c.numTokens, c.sample, {}});
    if (numDraft > 0)
      launched.chunks.back().draft.assign(seq.draft.begin(),
                                          seq.draft.begin() + numDraft);
    for (int32_t k = 0; k < c.numTokens; ++k) {
      const int32_t pos = seq.numComputed + k;
      // A pending token is not on the host yet: the executor feeds it.
      const bool pending = c.chainedRow >= 0 && pos == seq.numTokens();
      if (c.chainedRow >= 0 && pos > seq.numTokens())
        fail("internal error: sequence ", seq.id, " runs position ", pos,
             " without its token");
      tokens_.push_back(
          pending ? 0
          : pos < seq.numTokens()
              ? seq.tokens[static_cast<size_t>(pos)]
              : seq.draft[static_cast<size_t>(pos - seq.numTokens())]);
      positions_.push_back(pos);
      tokenSeq_.push_back(i);
      if (anyChained)
        chainedRows_.push_back(pending ? c.chainedRow : -1);
    }
    std::copy(seq.blocks.blocks.begin(), seq.blocks.blocks.end(),
              blockTables_.begin() + int64_t(i) * maxBlocks);
    if (!c.sample)
      continue;
    // One row per speculative token besides the decode token's: row j draws
    // output number numOutput + j as if the j tokens before it were drawn.
    const std::vector<int32_t> &draft = launched.chunks.back().draft;
    std::unique_ptr<PenaltyTokenSet> draftPenalties;
    if (seq.penalties && !draft.empty())
      draftPenalties = std::make_unique<PenaltyTokenSet>(*seq.penalties);
    for (size_t j = 0; j <= draft.size(); ++j) {
      const int32_t rowOutput = numOutput(c) + static_cast<int32_t>(j);
      if (j > 0 && draftPenalties)
        draftPenalties->addOutput(draft[j - 1]);
      logitRows_.push_back(static_cast<int32_t>(tokens_.size()) - 1 -
                           static_cast<int32_t>(draft.size() - j));
      const SamplingParams &p = seq.request.sampling;
      if (!plainGreedy) {
        SamplingRow row;
        row.temperature = p.temperature;
        row.topK = p.topK;
        row.topP = p.topP;
        row.minP = p.minP;
        row.repetitionPenalty = p.repetitionPenalty;
        row.presencePenalty = p.presencePenalty;
        row.frequencyPenalty = p.frequencyPenalty;
        row.seed = seq.seed;
        row.counter = rowOutput;
        sampling_.push_back(row);
      }
      if (anyPenalties) {
        if (seq.penalties) {
          const PenaltyTokenSet &set =
              draftPenalties ? *draftPenalties : *seq.penalties;
          penaltyIds_.insert(penaltyIds_.end(), set.ids().begin(),
                             set.ids().end());
          penaltyCounts_.insert(penaltyCounts_.end(),
                                set.outputCounts().begin(),
                                set.outputCounts().end());
          penaltyInPrompt_.insert(penaltyInPrompt_.end(),
                                  set.inPrompt().begin(), set.inPrompt().end());
        }
        penaltyOffsets_.push_back(static_cast<int32_t>(penaltyIds_.size()));
      }
      if (anyBias) {
        appendBias(seq, rowOutput);
        biasOffsets_.push_back(static_cast<int32_t>(biasIds_.size()));
      }
    }
  }
  const size_t R = logitRows_.size();
  launched.slot = nextSlot_;
  launched.numTop = anyLogprobs ? numTop : 0;
  OutputSlot &o = outputs_[launched.slot];
  o.chosen.assign(R, -1);
  o.logprobs.assign(anyLogprobs ? R : 0, 0.0f);
  o.topIds.assign(anyLogprobs ? R * size_t(numTop) : 0, 0);
  o.topLogprobs.assign(o.topIds.size(), 0.0f);

  StepBatch batch;
  batch.tokens = tokens_;
  batch.positions = positions_;
  batch.tokenSeq = tokenSeq_;
  batch.logitRows = logitRows_;
  batch.blockTables = blockTables_;
  batch.numSeqs = numSeqs;
  batch.maxBlocksPerSeq = maxBlocks;
  batch.sampling = sampling_;
  batch.penalties = {penaltyOffsets_, penaltyIds_, penaltyCounts_,
                     penaltyInPrompt_};
  batch.logitBias = {biasOffsets_, biasIds_, biasValues_};
  batch.numTopLogprobs = launched.numTop;
  batch.chainedRows = chainedRows_;
  StepOutput out;
  out.argmax = o.chosen;
  out.logprobs = o.logprobs;
  out.topIds = o.topIds;
  out.topLogprobs = o.topLogprobs;
  executor_.submitStep(batch, out);
  ++queued_;
  nextSlot_ = 1 - nextSlot_;
  ++counters_.numSteps;
  counters_.computedTokens += static_cast<int64_t>(tokens_.size());
  if (anyChained)
    ++counters_.chainedSteps;
  return launched;
}

bool Engine::canScheduleAhead(const LaunchedStep &step) const {
  // A speculating step's accepted tokens decide the next step's positions.
  if (!config_.asyncScheduling || !executor_.chainsSteps() || speculating())
    return false;
  for (const LaunchedStep::Chunk &c : step.chunks) {
    // Behind a step with prompt work (milliseconds of GPU time, against the
    // tens of microseconds of host work it would hide), requests that arrive
    // meanwhile are better admitted by the step built after it: queued
    // ahead, that step would make them wait for one more such step.
    if (c.numTokens > 1)
      return false;
    // Penalty lists count the last token, which the host has not seen.
    if (const Sequence *seq = find(c.seq); seq && c.sample && seq->penalties)
      return false;
  }
  return true;
}

std::optional<Engine::LaunchedStep> Engine::launchAhead(LaunchedStep &step) {
  commit(step);
  // The sequences whose next token `step` draws: pending for the scheduler,
  // fed from their rows. One that draws its last token (max_tokens) is done.
  pendingSeqs_.clear();
  int32_t row = 0;
  for (const LaunchedStep::Chunk &c : step.chunks) {
    if (!c.sample)
      continue;
    const int32_t r = row++;
    Sequence *seq = find(c.seq);
    if (!seq || seq->numOutput() + 1 >= seq->request.maxTokens)
      continue;
    seq->pendingRow = r;
    pendingSeqs_.push_back(seq);
  }
  struct ClearPending {
    std::vector<Sequence *> &seqs;
    ~ClearPending() {
      for (Sequence *seq : seqs)
        seq->pendingRow = -1;
    }
  } clear{pendingSeqs_};
  const Schedule schedule = scheduler_.schedule();
  if (schedule.empty())
    return std::nullopt;
  planned_.clear();
  for (const ScheduledChunk &c : schedule.chunks)
    planned_.push_back({c.seq, c.numTokens, c.sample, c.seq->pendingRow});
  return launch(planned_);
}

void Engine::commit(LaunchedStep &step) {
  if (step.committed)
    return;
  Schedule live;
  // Speculative tokens count as computed once accepted (collect()).
  for (const LaunchedStep::Chunk &c : step.chunks)
    if (Sequence *seq = find(c.seq))
      live.chunks.push_back(
          {seq, c.numTokens - static_cast<int32_t>(c.draft.size()), c.sample});
  scheduler_.commit(live);
  step.committed = true;
  counters_.peakKvBlocksUsed =
      std::max(counters_.peakKvBlocksUsed, blocks_.numReferenced());
  int64_t kvTokens = 0;
  for (const Sequence *seq : scheduler_.running())
    kvTokens += seq->numComputed;
  counters_.peakKvTokens = std::max(counters_.peakKvTokens, kvTokens);
}

void Engine::collect(LaunchedStep &step, std::vector<RequestOutput> &outputs) {
  --queued_; // retired even when it fails
  executor_.finishStep();
  commit(step);
  const OutputSlot &res = outputs_[step.slot];
  const auto now = Sequence::Clock::now();
  size_t row = 0;
  for (const LaunchedStep::Chunk &c : step.chunks) {
    if (!c.sample)
      continue;
    const size_t first = row;
    row += 1 + c.draft.size();
    Sequence *found = find(c.seq);
    if (!found) {
      ++counters_.discardedTokens; // stopped or aborted while queued
      continue;
    }
    Sequence &seq = *found;
    RequestOutput o = outputOf(seq);
    FinishReason reason = FinishReason::None;
    // Row j's token is drawn as if the speculative tokens before it were the
    // sequence's: it stands while they all equal the tokens drawn at their
    // positions. For greedy rows that is verification against the argmax;
    // for sampled ones, with a proposal that is one token, it is exactly
    // rejection sampling (accept d with probability p(d), else draw from p
    // without d): the draw is the same function of (seed, output number)
    // with or without speculation.
    int32_t accepted = 0;
    for (size_t j = 0; j <= c.draft.size(); ++j) {
      const size_t r = first + j;
      const int32_t id = res.chosen[r];
      if (id < 0 || id >= config_.vocabSize)
        fail("the ", executor_.name(), " executor returned token id ", id,
             " for logits row ", r, ", outside the vocabulary [0, ",
             config_.vocabSize, ")");
      seq.appendOutput(id);
      ++counters_.generatedTokens;
      if (seq.numOutput() == 1)
        seq.firstTokenTime = now;
      seq.lastTokenTime = now;
      reason = seq.stop.push(id, seq.numOutput());
      o.newTokenIds.push_back(id);
      if (seq.request.logprobs) {
        o.logprobs.push_back(res.logprobs[r]);
        std::vector<TopLogprob> top;
        for (int32_t k = 0; k < *seq.request.logprobs; ++k) {
          const size_t at = r * size_t(step.numTop) + size_t(k);
          top.push_back({res.topIds[at], res.topLogprobs[at]});
        }
        o.topLogprobs.push_back(std::move(top));
      }
      if (reason != FinishReason::None || j == c.draft.size() ||
          id != c.draft[j])
        break;
      ++accepted;
    }
    {
      // The counts and times as they are after this step's tokens.
      RequestOutput after = outputOf(seq);
      after.newTokenIds = std::move(o.newTokenIds);
      after.logprobs = std::move(o.logprobs);
      after.topLogprobs = std::move(o.topLogprobs);
      o = std::move(after);
    }
    if (!c.draft.empty()) {
      ++counters_.specDrafts;
      counters_.specProposedTokens += static_cast<int64_t>(c.draft.size());
      counters_.specAcceptedTokens += accepted;
    }
    if (reason != FinishReason::None) {
      scheduler_.remove(seq);
      seq.status = SequenceStatus::Finished;
      seq.finishReason = reason;
      o.finished = true;
      o.finishReason = reason;
    } else if (!c.draft.empty()) {
      // The accepted tokens' K/V is in the cache; the rejected ones' blocks
      // go back (their slots are overwritten before anything reads them).
      scheduler_.advance(seq, accepted);
      blocks_.shrink(seq.blocks, seq.numTokens());
    }
    o.newText = seq.stop.takeText(o.finished);
    const bool finished = o.finished;
    outputs.push_back(std::move(o));
    if (finished) {
      forgetDraft(seq.id);
      sequences_.erase(seq.id); // `seq` is gone from here on
    }
  }
}

void Engine::recoverFromExecutorError(std::span<LaunchedStep *const> steps) {
  for (; queued_ > 0; --queued_) {
    try {
      executor_.finishStep();
    } catch (...) {
      // Already failing: the first error is the one reported.
    }
  }
  // A committed step's sequences count tokens as cached whose results never
  // arrived: they recompute from the start, keeping every token they have.
  for (LaunchedStep *step : steps) {
    if (!step || !step->committed)
      continue;
    for (const LaunchedStep::Chunk &c : step->chunks)
      if (Sequence *seq = find(c.seq);
          seq && seq->status == SequenceStatus::Running) {
        scheduler_.remove(*seq);
        scheduler_.add(*seq);
      }
  }
  inFlight_.reset();
}

void Engine::appendBias(const Sequence &seq, int32_t numOutput) {
  const Request &r = seq.request;
  const size_t begin = biasIds_.size();
  for (const auto &[id, bias] : r.logitBias) {
    biasIds_.push_back(id);
    biasValues_.push_back(bias);
  }
  if (numOutput >= r.minTokens)
    return;
  // Below min_tokens nothing may stop the request (vLLM): its EOS and stop
  // ids are banned, overriding any bias the request gives them.
  auto ban = [&](int32_t id) {
    if (id < 0 || id >= config_.vocabSize)
      return; // an engine default outside the vocabulary is never drawn
    const auto first = biasIds_.begin() + static_cast<std::ptrdiff_t>(begin);
    const auto it = std::find(first, biasIds_.end(), id);
    if (it != biasIds_.end()) {
      biasValues_[static_cast<size_t>(it - biasIds_.begin())] = -INFINITY;
      return;
    }
    biasIds_.push_back(id);
    biasValues_.push_back(-INFINITY);
  };
  if (!r.ignoreEos)
    for (int32_t id : r.eosTokenIds ? *r.eosTokenIds : config_.eosTokenIds)
      ban(id);
  for (int32_t id : r.stopTokenIds)
    ban(id);
}

EngineStats Engine::stats() const {
  EngineStats s = counters_;
  s.numRunning = static_cast<int32_t>(scheduler_.running().size());
  s.numWaiting = static_cast<int32_t>(scheduler_.waiting().size());
  s.numPreemptions = scheduler_.numPreemptions();
  s.kvBlocksUsed = blocks_.numReferenced();
  s.kvBlocksCached = blocks_.numCached();
  s.kvBlocksTotal = blocks_.numBlocks();
  s.prefixCacheQueries = blocks_.queriedTokens();
  s.prefixCacheHits = blocks_.hitTokens();
  if (draftProposer_)
    s.specDraftModelSteps = draftProposer_->numSteps();
  return s;
}

void Engine::retireInFlight() {
  if (!inFlight_)
    return;
  // The next step() reports its outputs.
  try {
    collect(*inFlight_, pending_);
  } catch (...) {
    LaunchedStep *steps[] = {&*inFlight_};
    recoverFromExecutorError(steps);
    throw;
  }
  inFlight_.reset();
}

std::vector<float> Engine::promptLogits(std::span<const int32_t> prompt) {
  checkPrompt(prompt, 0);
  retireInFlight();
  std::vector<int32_t> table;
  const int32_t need = blocks_.blocksFor(static_cast<int64_t>(prompt.size()));
  if (!blocks_.allocate(need, table))
    fail("the KV cache has ", blocks_.numAvailable(),
         " blocks available but the prompt needs ", need,
         "; wait for running requests to finish");
  struct Release {
    BlockManager &blocks;
    std::vector<int32_t> &table;
    ~Release() { blocks.release(std::span<const int32_t>(table)); }
  } release{blocks_, table};

  const size_t vocab = static_cast<size_t>(config_.vocabSize);
  std::vector<float> logits(prompt.size() * vocab);
  std::vector<int32_t> positions, tokenSeq, rows;
  const size_t chunk = static_cast<size_t>(config_.maxNumBatchedTokens);
  for (size_t begin = 0; begin < prompt.size(); begin += chunk) {
    const size_t n = std::min(chunk, prompt.size() - begin);
    positions.resize(n);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(begin));
    tokenSeq.assign(n, 0);
    rows.resize(n);
    std::iota(rows.begin(), rows.end(), 0);
    StepBatch batch;
    batch.tokens = prompt.subspan(begin, n);
    batch.positions = positions;
    batch.tokenSeq = tokenSeq;
    batch.logitRows = rows;
    batch.blockTables = table;
    batch.numSeqs = 1;
    batch.maxBlocksPerSeq = need;
    StepOutput out;
    out.logits = {logits.data() + begin * vocab, n * vocab};
    executor_.step(batch, out);
  }
  return logits;
}

namespace {

/// log_softmax(row r)[targets[r]] of each row of `logits` (rows x vocab), in
/// double, the rows split over up to `numThreads` threads.
void targetLogprobs(std::span<const float> logits, size_t vocab,
                    std::span<const int32_t> targets, std::span<double> out,
                    int32_t numThreads) {
  auto rows = [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      const float *x = logits.data() + r * vocab;
      double max = -std::numeric_limits<double>::infinity();
      for (size_t v = 0; v < vocab; ++v)
        max = std::max(max, double(x[v]));
      double sum = 0;
      for (size_t v = 0; v < vocab; ++v)
        sum += std::exp(double(x[v]) - max);
      out[r] = double(x[targets[r]]) - (max + std::log(sum));
    }
  };
  const size_t n = targets.size();
  // Threads only pay off on large rows x vocab (a big vocabulary).
  const size_t threads = std::min<size_t>(size_t(std::max(numThreads, 1)),
                                          std::max<size_t>(1, n * vocab >> 20));
  if (threads <= 1 || n < 2) {
    rows(0, n);
    return;
  }
  std::vector<std::thread> pool;
  const size_t per = (n + threads - 1) / threads;
  for (size_t begin = per; begin < n; begin += per)
    pool.emplace_back(rows, begin, std::min(n, begin + per));
  rows(0, std::min(n, per));
  for (std::thread &t : pool)
    t.join();
}

} // namespace

ScoreSummary
Engine::scoreWindows(std::span<const ScoreWindow> windows,
                     const std::function<void(const ScoredToken &)> &onToken,
                     const ScoreOptions &options) {
  // Every window is checked before anything runs. A window's last id is
  // only a target: its inputs are ids[0, size - 1), and rows
  // [firstScored - 1, size - 1) score something.
  std::vector<int64_t> firstIndex(windows.size());
  int64_t numScored = 0;
  int32_t mostBlocks = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    const ScoreWindow &w = windows[i];
    if (w.firstScored < 1 || size_t(w.firstScored) > w.ids.size())
      fail("scoring window ", i, " of ", w.ids.size(),
           " ids: its first scored position ", w.firstScored, " is outside 1..",
           w.ids.size());
    if (int64_t(w.ids.size()) > config_.maxModelLen)
      fail("scoring window ", i, " holds ", w.ids.size(),
           " ids, beyond the maximum model length of ", config_.maxModelLen,
           " tokens (--max-model-len)");
    for (size_t t = 0; t < w.ids.size(); ++t)
      if (w.ids[t] < 0 || w.ids[t] >= config_.vocabSize)
        fail("scoring window ", i, " has id ", w.ids[t], " at position ", t,
             ", outside the vocabulary [0, ", config_.vocabSize, ")");
    firstIndex[i] = numScored;
    const int32_t inputs = static_cast<int32_t>(w.ids.size()) - 1;
    numScored += inputs + 1 - w.firstScored;
    if (inputs + 1 > w.firstScored)
      mostBlocks = std::max(mostBlocks, blocks_.blocksFor(inputs));
  }
  retireInFlight();
  if (mostBlocks > blocks_.numAvailable())
    fail("a scoring window needs ", mostBlocks, " KV-cache blocks of ",
         blocks_.blockSize(), " tokens but ", blocks_.numAvailable(), " of ",
         blocks_.numBlocks(),
         " are available; use a shorter window or wait for running requests "
         "to finish");

  const size_t vocab = static_cast<size_t>(config_.vocabSize);
  const int32_t budget = config_.maxNumBatchedTokens;
  const size_t maxSeqs = static_cast<size_t>(config_.maxNumSeqs);
  const int32_t maxRows = static_cast<int32_t>(std::clamp<size_t>(
      options.maxLogitsBytesPerStep / (vocab * sizeof(float)), 1,
      size_t(budget)));
  const int32_t numThreads =
      options.numThreads > 0
          ? options.numThreads
          : static_cast<int32_t>(
                std::clamp(std::thread::hardware_concurrency(), 1u, 16u));

  // Windows holding KV blocks, in admission order; whatever happens, their
  // blocks go back.
  struct Active {
    int32_t window = 0;
    int32_t computed = 0; // inputs with K/V in the cache
    std::vector<int32_t> blocks;
  };
  struct ActiveWindows {
    BlockManager &blocks;
    std::deque<Active> list;
    ~ActiveWindows() {
      for (Active &a : list)
        blocks.release(std::span<const int32_t>(a.blocks));
    }
  } active{blocks_, {}};
  struct Chunk {
    Active *active;
    int32_t count;
  };
  std::vector<Chunk> chunks;
  std::vector<int32_t> tokens, positions, tokenSeq, logitRows, blockTables,
      targets;
  std::vector<ScoredToken> scored; // one per logits row, logits unset
  std::vector<double> logprobs;
  std::vector<float> logits;
  ScoreSummary summary;
  size_t next = 0; // the next window to admit
  const auto scoresNothing = [&](size_t i) {
    return size_t(windows[i].firstScored) == windows[i].ids.size();
  };
  for (;;) {
    while (next < windows.size() && scoresNothing(next))
      ++next;
    if (active.list.empty() && next == windows.size())
      break;
    // Plan the step: windows already started first, in order, then new
    // ones, while tokens, logits rows, sequences and blocks remain. The
    // first window always gets a chunk, so every step makes progress.
    chunks.clear();
    int32_t tokensLeft = budget, rowsLeft = maxRows;
    // How many of `w`'s inputs from `computed` on the step can take.
    auto take = [&](const ScoreWindow &w, int32_t computed) {
      const int32_t inputs = static_cast<int32_t>(w.ids.size()) - 1;
      const int32_t firstRow = std::max(computed, w.firstScored - 1);
      int32_t n = std::min(inputs - computed, tokensLeft);
      if (computed + n > firstRow)
        n = std::min(n, firstRow + rowsLeft - computed);
      tokensLeft -= n;
      rowsLeft -= std::max(0, computed + n - firstRow);
      return n;
    };
    bool full = false;
    for (Active &a : active.list) {
      const int32_t n =
          chunks.size() < maxSeqs
              ? take(windows[static_cast<size_t>(a.window)], a.computed)
              : 0;
      if (n == 0) {
        full = true;
        break;
      }
      chunks.push_back({&a, n});
    }
    while (!full && next < windows.size() && chunks.size() < maxSeqs &&
           tokensLeft > 0 && rowsLeft > 0) {
      if (scoresNothing(next)) {
        ++next;
        continue;
      }
      const ScoreWindow &w = windows[next];
      const int32_t need =
          blocks_.blocksFor(static_cast<int64_t>(w.ids.size()) - 1);
      std::vector<int32_t> table;
      if (!blocks_.allocate(need, table))
        break;
      active.list.push_back({static_cast<int32_t>(next), 0, std::move(table)});
      chunks.push_back({&active.list.back(), take(w, 0)});
      ++next;
    }

    // The batch: one sequence per chunk, rows for the scored positions.
    tokens.clear();
    positions.clear();
    tokenSeq.clear();
    logitRows.clear();
    targets.clear();
    scored.clear();
    int32_t maxBlocks = 0;
    for (const Chunk &c : chunks)
      maxBlocks =
          std::max(maxBlocks, static_cast<int32_t>(c.active->blocks.size()));
    maxBlocks =
        blockTableWidth(maxBlocks, blocks_.blocksFor(config_.maxModelLen));
    blockTables.assign(chunks.size() * size_t(maxBlocks), 0);
    for (size_t i = 0; i < chunks.size(); ++i) {
      const Active &a = *chunks[i].active;
      const ScoreWindow &w = windows[static_cast<size_t>(a.window)];
      for (int32_t p = a.computed; p < a.computed + chunks[i].count; ++p) {
        const size_t t = static_cast<size_t>(p);
        if (p + 1 >= w.firstScored) {
          logitRows.push_back(static_cast<int32_t>(tokens.size()));
          targets.push_back(w.ids[t + 1]);
          ScoredToken s;
          s.window = a.window;
          s.position = p + 1;
          s.index =
              firstIndex[static_cast<size_t>(a.window)] + p + 1 - w.firstScored;
          s.target = w.ids[t + 1];
          scored.push_back(s);
        }
        tokens.push_back(w.ids[t]);
        positions.push_back(p);
        tokenSeq.push_back(static_cast<int32_t>(i));
      }
      std::copy(a.blocks.begin(), a.blocks.end(),
                blockTables.begin() + int64_t(i) * maxBlocks);
    }
    const size_t R = logitRows.size();
    // An executor returns at least one row: a step of context only asks
    // for its last token's and takes nothing back.
    const int32_t lastToken = static_cast<int32_t>(tokens.size()) - 1;
    logits.resize(R * vocab);
    StepBatch batch;
    batch.tokens = tokens;
    batch.positions = positions;
    batch.tokenSeq = tokenSeq;
    batch.logitRows = R ? std::span<const int32_t>(logitRows)
                        : std::span<const int32_t>(&lastToken, 1);
    batch.blockTables = blockTables;
    batch.numSeqs = static_cast<int32_t>(chunks.size());
    batch.maxBlocksPerSeq = maxBlocks;
    StepOutput out;
    out.logits = logits;
    executor_.step(batch, out);
    ++summary.steps;
    summary.computedTokens += static_cast<int64_t>(tokens.size());
    summary.maxWindowsPerStep = std::max(summary.maxWindowsPerStep,
                                         static_cast<int32_t>(chunks.size()));

    logprobs.resize(R);
    targetLogprobs(logits, vocab, targets, logprobs, numThreads);
    for (size_t r = 0; r < R; ++r) {
      scored[r].logprob = logprobs[r];
      scored[r].logits =
          std::span<const float>(logits).subspan(r * vocab, vocab);
      onToken(scored[r]);
    }
    summary.scored += static_cast<int64_t>(R);

    // Windows whose inputs are all computed are done.
    const auto done = [&](const Active &a) {
      return size_t(a.computed) + 1 ==
             windows[static_cast<size_t>(a.window)].ids.size();
    };
    for (const Chunk &c : chunks) {
      c.active->computed += c.count;
      if (done(*c.active))
        blocks_.release(
            std::span<const int32_t>(std::exchange(c.active->blocks, {})));
    }
    std::erase_if(active.list, done);
  }
  return summary;
}

} // namespace sol

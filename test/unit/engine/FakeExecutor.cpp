//===- FakeExecutor.cpp - A context-hashing stand-in for a model ----------===//
#include "FakeExecutor.h"

#include "runtime/support/Error.h"

#include <cmath>

namespace sol::test {

FakeExecutor::FakeExecutor(int32_t numBlocks, int32_t blockSize,
                           int32_t maxTokensPerStep, int32_t vocab)
    : numBlocks_(numBlocks), blockSize_(blockSize),
      maxTokens_(maxTokensPerStep), vocab_(vocab),
      kvToken_(size_t(numBlocks) * size_t(blockSize), -1),
      kvPos_(size_t(numBlocks) * size_t(blockSize), -1) {
  model = [vocab](std::span<const int32_t> c) { return hashModel(c, vocab); };
}

FakeExecutor::Model FakeExecutor::periodic(size_t period) {
  return [period](std::span<const int32_t> ctx) {
    return ctx.size() >= period ? ctx[ctx.size() - period] : 1;
  };
}

int32_t FakeExecutor::hashModel(std::span<const int32_t> context,
                                int32_t vocab) {
  uint64_t h = 1469598103934665603ULL; // FNV-1a
  for (int32_t t : context) {
    h ^= static_cast<uint64_t>(t) + 0x9e3779b97f4a7c15ULL;
    h *= 1099511628211ULL;
  }
  h ^= h >> 29;
  return static_cast<int32_t>(h % static_cast<uint64_t>(vocab));
}

void FakeExecutor::step(const StepBatch &b, const StepOutput &out) {
  if (!b.chainedRows.empty())
    fail("fake: chained rows in step(); they need submitStep()");
  if (!queue_.empty())
    fail("fake: step() while ", queue_.size(), " steps are queued");
  run(b, out, b.tokens);
  lastChosen_.assign(out.argmax.begin(), out.argmax.end());
}

void FakeExecutor::submitStep(const StepBatch &b, const StepOutput &out) {
  if (!chains) {
    step(b, out);
    return;
  }
  if (queue_.size() >= 2)
    fail("fake: a third step queued");
  std::vector<int32_t> tokens(b.tokens.begin(), b.tokens.end());
  if (!b.chainedRows.empty()) {
    if (b.chainedRows.size() != tokens.size())
      fail("fake: ", b.chainedRows.size(), " chained rows for ", tokens.size(),
           " tokens");
    for (size_t t = 0; t < tokens.size(); ++t) {
      const int32_t r = b.chainedRows[t];
      if (r < -1 || r >= static_cast<int32_t>(lastChosen_.size()))
        fail("fake: token ", t, " chains row ", r, " of a step with ",
             lastChosen_.size(), " rows");
      if (r >= 0)
        tokens[t] = lastChosen_[size_t(r)];
    }
  }
  Queued q;
  q.out = out;
  q.number = ++submitted_;
  q.argmax.resize(out.argmax.size());
  q.logprobs.resize(out.logprobs.size());
  q.topIds.resize(out.topIds.size());
  q.topLogprobs.resize(out.topLogprobs.size());
  StepOutput into;
  into.argmax = q.argmax;
  into.logprobs = q.logprobs;
  into.topIds = q.topIds;
  into.topLogprobs = q.topLogprobs;
  run(b, into, tokens);
  if (record)
    batches.back().chainedRows.assign(b.chainedRows.begin(),
                                      b.chainedRows.end());
  lastChosen_ = q.argmax;
  queue_.push_back(std::move(q));
}

void FakeExecutor::finishStep() {
  if (queue_.empty())
    return;
  Queued q = std::move(queue_.front());
  queue_.erase(queue_.begin());
  if (q.number == failAtSubmit)
    fail("fake: the device failed in step ", q.number);
  std::copy(q.argmax.begin(), q.argmax.end(), q.out.argmax.begin());
  std::copy(q.logprobs.begin(), q.logprobs.end(), q.out.logprobs.begin());
  std::copy(q.topIds.begin(), q.topIds.end(), q.out.topIds.begin());
  std::copy(q.topLogprobs.begin(), q.topLogprobs.end(),
            q.out.topLogprobs.begin());
}

void FakeExecutor::run(const StepBatch &b, const StepOutput &out,
                       std::span<const int32_t> tokens) {
  const size_t T = b.tokens.size(), R = b.logitRows.size();
  if (T == 0 || T > size_t(maxTokens_))
    fail("fake: step of ", T, " tokens (max ", maxTokens_, ")");
  if (b.positions.size() != T || b.tokenSeq.size() != T)
    fail("fake: positions/tokenSeq sizes differ from tokens");
  if (b.blockTables.size() != size_t(b.numSeqs) * size_t(b.maxBlocksPerSeq))
    fail("fake: block tables of the wrong size");
  if (!b.sampling.empty() && b.sampling.size() != R)
    fail("fake: ", b.sampling.size(), " sampling rows for ", R, " logits rows");
  if (!b.penalties.offsets.empty() && b.penalties.offsets.size() != R + 1)
    fail("fake: penalty offsets of the wrong size");
  if (!b.logitBias.offsets.empty() && b.logitBias.offsets.size() != R + 1)
    fail("fake: logit-bias offsets of the wrong size");
  if (out.argmax.size() != R)
    fail("fake: argmax output of ", out.argmax.size(), " for ", R, " rows");
  for (int32_t id : b.blockTables)
    if (id < 0 || id >= numBlocks_)
      fail("fake: block id ", id, " out of range (padding must be valid)");
  auto slot = [&](int32_t seq, int32_t pos) {
    if (pos / blockSize_ >= b.maxBlocksPerSeq)
      fail("fake: position ", pos, " beyond the block table");
    const int32_t block =
        b.blockTables[size_t(seq) * size_t(b.maxBlocksPerSeq) +
                      size_t(pos / blockSize_)];
    return size_t(block) * size_t(blockSize_) + size_t(pos % blockSize_);
  };
  for (size_t t = 0; t < T; ++t) {
    if (b.tokenSeq[t] < 0 || b.tokenSeq[t] >= b.numSeqs)
      fail("fake: token ", t, " of sequence ", b.tokenSeq[t]);
    if (tokens[t] < 0 || tokens[t] >= vocab_)
      fail("fake: token id ", tokens[t], " outside the vocabulary");
  }
  if (record) {
    RecordedBatch r;
    r.tokens.assign(tokens.begin(), tokens.end());
    r.positions.assign(b.positions.begin(), b.positions.end());
    r.tokenSeq.assign(b.tokenSeq.begin(), b.tokenSeq.end());
    r.logitRows.assign(b.logitRows.begin(), b.logitRows.end());
    r.blockTables.assign(b.blockTables.begin(), b.blockTables.end());
    r.numSeqs = b.numSeqs;
    r.maxBlocksPerSeq = b.maxBlocksPerSeq;
    r.sampling.assign(b.sampling.begin(), b.sampling.end());
    r.penaltyOffsets.assign(b.penalties.offsets.begin(),
                            b.penalties.offsets.end());
    r.penaltyIds.assign(b.penalties.ids.begin(), b.penalties.ids.end());
    r.penaltyCounts.assign(b.penalties.outputCounts.begin(),
                           b.penalties.outputCounts.end());
    r.penaltyInPrompt.assign(b.penalties.inPrompt.begin(),
                             b.penalties.inPrompt.end());
    r.biasOffsets.assign(b.logitBias.offsets.begin(),
                         b.logitBias.offsets.end());
    r.biasIds.assign(b.logitBias.ids.begin(), b.logitBias.ids.end());
    r.biasValues.assign(b.logitBias.values.begin(), b.logitBias.values.end());
    r.numTopLogprobs = b.numTopLogprobs;
    r.logprobsRequested = !out.logprobs.empty();
    batches.push_back(std::move(r));
  }
  ++numSteps;
  // "Attention": K/V first, then every row reads its context back.
  for (size_t t = 0; t < T; ++t) {
    const size_t s = slot(b.tokenSeq[t], b.positions[t]);
    kvToken_[s] = tokens[t];
    kvPos_[s] = b.positions[t];
  }
  std::vector<int32_t> context;
  for (size_t r = 0; r < R; ++r) {
    const int32_t t = b.logitRows[r];
    const int32_t seq = b.tokenSeq[size_t(t)], pos = b.positions[size_t(t)];
    context.clear();
    for (int32_t p = 0; p <= pos; ++p) {
      const size_t s = slot(seq, p);
      if (kvPos_[s] != p)
        fail("fake: sequence ", seq, " reads position ", p,
             " from a slot that holds position ", kvPos_[s]);
      context.push_back(kvToken_[s]);
    }
    int32_t id = model(context);
    if (honorBans && !b.logitBias.offsets.empty()) {
      auto banned = [&](int32_t t) {
        for (int32_t e = b.logitBias.offsets[r]; e < b.logitBias.offsets[r + 1];
             ++e)
          if (b.logitBias.ids[size_t(e)] == t &&
              b.logitBias.values[size_t(e)] == -INFINITY)
            return true;
        return false;
      };
      for (int32_t tries = 0; banned(id); ++tries) {
        if (tries == vocab_)
          fail("fake: every token of row ", r, " is banned");
        id = (id + 1) % vocab_;
      }
    }
    out.argmax[r] = id;
    if (!out.logprobs.empty())
      out.logprobs[r] = logprobOf(id);
    for (int32_t k = 0; k < b.numTopLogprobs && !out.topIds.empty(); ++k) {
      out.topIds[r * size_t(b.numTopLogprobs) + size_t(k)] = (id + k) % vocab_;
      out.topLogprobs[r * size_t(b.numTopLogprobs) + size_t(k)] = -float(k);
    }
  }
}

} // namespace sol::test

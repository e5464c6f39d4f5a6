//===- Generator.cpp - Generates tokens for one prompt --------------------===//
#include "runtime/engine/Generator.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace sol {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// Blocks of one sequence, returned to the allocator when it goes.
class SequenceBlocks {
public:
  SequenceBlocks(KvBlockAllocator &allocator, int64_t tokens, int32_t blockSize)
      : allocator_(allocator) {
    int64_t needed = (tokens + blockSize - 1) / blockSize;
    if (needed > allocator.numFree())
      fail("the KV cache holds ", int64_t(allocator.numFree()) * blockSize,
           " tokens but this request needs ", tokens,
           "; lower --max-tokens or raise --gpu-memory-utilization");
    allocator.allocate(static_cast<int32_t>(needed), blocks_);
  }
  ~SequenceBlocks() { allocator_.release(blocks_); }
  const std::vector<int32_t> &ids() const { return blocks_; }

private:
  KvBlockAllocator &allocator_;
  std::vector<int32_t> blocks_;
};

} // namespace

Generator::Generator(Executor &executor, int64_t vocabSize, int64_t maxModelLen)
    : executor_(executor), vocabSize_(vocabSize), maxModelLen_(maxModelLen),
      blocks_(executor.numKvBlocks()) {}

void Generator::checkPrompt(const std::vector<int32_t> &ids,
                            int64_t extra) const {
  if (ids.empty())
    fail("the prompt is empty; give at least one token id");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocabSize_)
      fail("prompt token ", i, " has id ", ids[i],
           ", outside the vocabulary [0, ", vocabSize_, ")");
  int64_t total = static_cast<int64_t>(ids.size()) + extra;
  if (total > maxModelLen_)
    fail("the prompt (", ids.size(), " tokens) plus ", extra,
         " new tokens exceeds the maximum model length of ", maxModelLen_,
         " tokens (--max-model-len)");
}

void Generator::prefill(
    const std::vector<int32_t> &prompt, const std::vector<int32_t> &blockIds,
    bool allRows,
    const std::function<StepOutput(size_t begin, size_t n)> &output) {
  std::vector<int32_t> positions, tokenSeq, rows;
  const size_t chunk = static_cast<size_t>(executor_.maxTokensPerStep());
  for (size_t begin = 0; begin < prompt.size(); begin += chunk) {
    const size_t n = std::min(chunk, prompt.size() - begin);
    positions.resize(n);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(begin));
    tokenSeq.assign(n, 0);
    rows.resize(allRows ? n : 1);
    std::iota(rows.begin(), rows.end(),
              static_cast<int32_t>(allRows ? 0 : n - 1));
    StepBatch batch{{prompt.data() + begin, n},
                    positions,
                    tokenSeq,
                    rows,
                    blockIds,
                    1,
                    static_cast<int32_t>(blockIds.size())};
    executor_.step(batch, output(begin, n));
  }
}

GenerationResult Generator::generate(const GenerationRequest &request) {
  if (request.maxTokens < 0)
    fail("--max-tokens must be >= 0, got ", request.maxTokens);
  const std::vector<int32_t> &prompt = request.promptIds;
  checkPrompt(prompt, request.maxTokens);
  const int64_t total = static_cast<int64_t>(prompt.size()) + request.maxTokens;
  SequenceBlocks seq(blocks_, total, executor_.blockSize());
  const auto &blockIds = seq.ids();
  const int32_t maxBlocks = static_cast<int32_t>(blockIds.size());

  GenerationResult result;
  result.finishReason = "length";
  auto isEos = [&](int32_t id) {
    return !request.ignoreEos &&
           std::find(request.eosTokenIds.begin(), request.eosTokenIds.end(),
                     id) != request.eosTokenIds.end();
  };

  const auto start = Clock::now();
  int32_t next = 0;
  prefill(prompt, blockIds, /*allRows=*/false, [&](size_t, size_t) {
    return StepOutput{{}, {&next, 1}};
  });
  if (request.maxTokens == 0)
    return result;
  result.ttftMs = msSince(start);
  result.ids.push_back(next);
  if (request.onToken)
    request.onToken(next);

  const auto decodeStart = Clock::now();
  int32_t position = static_cast<int32_t>(prompt.size());
  int32_t token = next;
  int32_t zero = 0;
  while (!isEos(token) &&
         static_cast<int32_t>(result.ids.size()) < request.maxTokens) {
    StepBatch batch{{&token, 1}, {&position, 1}, {&zero, 1},
                    {&zero, 1},  blockIds,       1,
                    maxBlocks};
    executor_.step(batch, {{}, {&next, 1}});
    result.ids.push_back(next);
    if (request.onToken)
      request.onToken(next);
    token = next;
    ++position;
  }
  if (isEos(token))
    result.finishReason = "stop";
  size_t decoded = result.ids.size() - 1;
  if (decoded > 0) {
    result.tpotMs = msSince(decodeStart) / static_cast<double>(decoded);
    result.decodeTokensPerS = 1000.0 / result.tpotMs;
  }
  return result;
}

std::vector<float> Generator::promptLogits(const std::vector<int32_t> &prompt) {
  checkPrompt(prompt, 0);
  SequenceBlocks seq(blocks_, static_cast<int64_t>(prompt.size()),
                     executor_.blockSize());
  std::vector<float> logits(prompt.size() * static_cast<size_t>(vocabSize_));
  const size_t vocab = static_cast<size_t>(vocabSize_);
  prefill(prompt, seq.ids(), /*allRows=*/true, [&](size_t begin, size_t n) {
    return StepOutput{{logits.data() + begin * vocab, n * vocab}, {}};
  });
  return logits;
}

} // namespace sol

//===- Sequence.cpp - The engine's state of one request -------------------===//
#include "runtime/engine/Sequence.h"

#include <algorithm>

namespace sol {

PenaltyTokenSet::PenaltyTokenSet(std::span<const int32_t> prompt)
    : ids_(prompt.begin(), prompt.end()) {
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  counts_.assign(ids_.size(), 0);
  inPrompt_.assign(ids_.size(), 1);
}

void PenaltyTokenSet::addOutput(int32_t id) {
  auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
  const auto i = it - ids_.begin();
  if (it == ids_.end() || *it != id) {
    ids_.insert(it, id);
    counts_.insert(counts_.begin() + i, 0);
    inPrompt_.insert(inPrompt_.begin() + i, 0);
  }
  ++counts_[static_cast<size_t>(i)];
}

Sequence::Sequence(int64_t id, Request req, uint64_t seed,
                   std::span<const int32_t> defaultEos,
                   const Tokenizer *tokenizer)
    : id(id), request(std::move(req)), tokens(request.promptIds),
      promptLen(static_cast<int32_t>(request.promptIds.size())), seed(seed),
      arrivalTime(Clock::now()), stop(request, defaultEos, tokenizer) {
  tokens.reserve(tokens.size() + static_cast<size_t>(request.maxTokens));
  if (request.sampling.hasPenalties())
    penalties = std::make_unique<PenaltyTokenSet>(request.promptIds);
}

void Sequence::appendOutput(int32_t id) {
  tokens.push_back(id);
  if (penalties)
    penalties->addOutput(id);
}

} // namespace sol

//===- EngineTestSupport.h - Shared helpers of the engine tests -*- C++ -*-===//
#pragma once

#include "runtime/engine/Engine.h"
#include "runtime/support/Error.h"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace sol::test {

/// The sol::Error message of `body`, or "" when it does not throw.
template <typename Body> std::string engineErrorOf(Body &&body) {
  try {
    body();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// The engine configuration of the fake-executor tests: a vocabulary of
/// `vocab` ids, a fixed seed.
inline EngineConfig fakeConfig(int64_t vocab, int64_t maxModelLen = 256) {
  EngineConfig c;
  c.vocabSize = vocab;
  c.maxModelLen = maxModelLen;
  c.seed = 1234;
  return c;
}

/// A greedy request.
inline Request greedy(std::vector<int32_t> prompt, int32_t maxTokens) {
  Request r;
  r.promptIds = std::move(prompt);
  r.maxTokens = maxTokens;
  return r;
}

/// What a request produced: all ids and the finish reason.
struct Finished {
  std::vector<int32_t> ids;
  FinishReason reason = FinishReason::None;
  std::string text;
  /// Chosen-token logprobs and top entries, when the request asked.
  std::vector<float> logprobs;
  std::vector<std::vector<TopLogprob>> topLogprobs;
  bool operator==(const Finished &o) const {
    return ids == o.ids && reason == o.reason;
  }
};

/// Adds one step output to what its request produced so far.
inline void accumulate(std::map<int64_t, Finished> &out,
                       const RequestOutput &o) {
  Finished &f = out[o.id];
  f.ids.insert(f.ids.end(), o.newTokenIds.begin(), o.newTokenIds.end());
  f.logprobs.insert(f.logprobs.end(), o.logprobs.begin(), o.logprobs.end());
  f.topLogprobs.insert(f.topLogprobs.end(), o.topLogprobs.begin(),
                       o.topLogprobs.end());
  f.text += o.newText;
  if (o.finished)
    f.reason = o.finishReason;
}

/// Steps `engine` until every request finished; returns them by id. Fails
/// the test (throws) when the engine stalls.
inline std::map<int64_t, Finished> runToEnd(Engine &engine,
                                            int64_t maxSteps = 1000000) {
  std::map<int64_t, Finished> out;
  for (int64_t steps = 0; engine.hasUnfinished(); ++steps) {
    if (steps >= maxSteps)
      fail("the engine did not finish in ", maxSteps, " steps");
    for (const RequestOutput &o : engine.step())
      accumulate(out, o);
  }
  return out;
}

/// Submits `requests` keeping at most `inFlight` unfinished (a server's
/// steady load: few waiting, so async scheduling chains most steps) and
/// steps until all finished. Returns the outputs by request index.
inline std::vector<Finished>
runRolling(Engine &engine, const std::vector<Request> &requests, int inFlight) {
  std::map<int64_t, Finished> byId;
  std::map<int64_t, size_t> index;
  size_t next = 0;
  int unfinished = 0;
  auto topUp = [&] {
    for (; next < requests.size() && unfinished < inFlight; ++next) {
      index[engine.submit(requests[next])] = next;
      ++unfinished;
    }
  };
  topUp();
  for (int64_t steps = 0; engine.hasUnfinished(); ++steps) {
    if (steps >= 1000000)
      fail("the engine did not finish in 1000000 steps");
    for (const RequestOutput &o : engine.step()) {
      accumulate(byId, o);
      unfinished -= o.finished;
    }
    topUp();
  }
  std::vector<Finished> out(requests.size());
  for (auto &[id, f] : byId)
    out.at(index.at(id)) = std::move(f);
  return out;
}

/// The stop rules of a request applied to a token stream, independently of
/// the engine (no stop strings).
inline Finished
generateAlone(const Request &r, std::span<const int32_t> defaultEos,
              const std::function<int32_t(std::span<const int32_t>)> &next) {
  std::vector<int32_t> context = r.promptIds;
  std::vector<int32_t> eos(defaultEos.begin(), defaultEos.end());
  if (r.eosTokenIds)
    eos = *r.eosTokenIds;
  Finished f;
  for (int32_t n = 1;; ++n) {
    const int32_t id = next(context);
    context.push_back(id);
    f.ids.push_back(id);
    const bool mayStop = n >= r.minTokens;
    auto has = [&](const std::vector<int32_t> &v) {
      return std::find(v.begin(), v.end(), id) != v.end();
    };
    if (mayStop && ((!r.ignoreEos && has(eos)) || has(r.stopTokenIds))) {
      f.reason = FinishReason::Stop;
      return f;
    }
    if (n >= r.maxTokens) {
      f.reason = FinishReason::Length;
      return f;
    }
  }
}

inline std::vector<int32_t> randomIds(std::mt19937 &rng, size_t n,
                                      int32_t vocab) {
  std::vector<int32_t> ids(n);
  for (int32_t &t : ids)
    t = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return ids;
}

inline int32_t uniform(std::mt19937 &rng, int32_t lo, int32_t hi) {
  return lo + static_cast<int32_t>(rng() % static_cast<uint32_t>(hi - lo + 1));
}

} // namespace sol::test

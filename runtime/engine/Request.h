//===- Request.h - What a user asks the engine for, and gets back -*- C++
//-*-===//
//
// A generation request (prompt ids, sampling parameters, stop conditions) as
// the engine accepts it, and the per-step output it reports back. The names
// follow vLLM's SamplingParams / RequestOutput where they overlap.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sol {

/// How a request picks its tokens (see SamplingRow in Executor.h).
struct SamplingParams {
  float temperature = 0.0f; // 0: greedy
  int32_t topK = 0;         // 0: all tokens
  float topP = 1.0f;
  float minP = 0.0f;
  float repetitionPenalty = 1.0f;
  float presencePenalty = 0.0f;
  float frequencyPenalty = 0.0f;
  /// The draws are a pure function of the seed and the output index; a
  /// request without one gets a random seed at submission.
  std::optional<uint64_t> seed;

  bool greedy() const { return temperature <= 0.0f; }
  bool hasPenalties() const {
    return repetitionPenalty != 1.0f || presencePenalty != 0.0f ||
           frequencyPenalty != 0.0f;
  }
};

struct Request {
  std::vector<int32_t> promptIds;
  SamplingParams sampling;
  /// Most tokens to generate (>= 1).
  int32_t maxTokens = 16;
  /// No stop condition (EOS, stop ids, stop strings) ends the request before
  /// it has this many tokens: while fewer have been generated, its EOS ids
  /// (unless ignoreEos) and stop token ids are banned (a -inf logit bias, as
  /// vLLM), so none is drawn. Stop strings cannot be banned; one completed
  /// earlier stays in the text.
  int32_t minTokens = 0;
  /// Keep generating past end-of-sequence ids.
  bool ignoreEos = false;
  /// End-of-sequence ids; absent: the engine's (the plan's) defaults.
  std::optional<std::vector<int32_t>> eosTokenIds;
  /// Ids that end the request ("stop", the id kept in the output ids).
  std::vector<int32_t> stopTokenIds;
  /// Strings that end the request ("stop"); the text returned ends before
  /// the stop string. Needs an engine built with a tokenizer.
  std::vector<std::string> stop;
  /// Added to the logits of these token ids before sampling (OpenAI's
  /// logit_bias): each bias in [-100, 100], each id in the vocabulary;
  /// -100 all but bans a token, 100 all but forces it. Logprobs stay those of
  /// the unbiased logits.
  std::map<int32_t, float> logitBias;
  /// Build the output text here (RequestOutput::newText) when the engine has
  /// a tokenizer. A server that detokenizes on its own threads turns it off
  /// for requests without stop strings, so the engine thread, which the GPU
  /// waits on between steps, does less; requests with stop strings are
  /// always detokenized here.
  bool detokenize = true;
  /// Log-probabilities: absent for none; k (0..kMaxTopLogprobs) for the
  /// chosen token's and the k most likely tokens' log-probabilities.
  std::optional<int32_t> logprobs;
};

enum class FinishReason { None, Stop, Length, Abort };

/// "stop", "length", "abort" ("" for None): OpenAI's finish_reason values.
std::string_view finishReasonName(FinishReason reason);

struct TopLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
};

/// What one step produced for one request: the tokens it generated (one per
/// step, none when only a prompt chunk ran) and, when it finished, why.
struct RequestOutput {
  using Clock = std::chrono::steady_clock;

  int64_t id = 0;
  std::vector<int32_t> newTokenIds;
  /// Per new token, when the request asked for logprobs.
  std::vector<float> logprobs;
  std::vector<std::vector<TopLogprob>> topLogprobs;
  /// Text that became final in this step (engines with a tokenizer only):
  /// UTF-8 safe, special tokens skipped, stop strings cut, and a possible
  /// stop-string prefix held back until it is decided.
  std::string newText;
  bool finished = false;
  FinishReason finishReason = FinishReason::None;

  int32_t numPromptTokens = 0;
  int32_t numOutputTokens = 0; // so far
  /// Prompt tokens found in the prefix cache at the first admission.
  int32_t numCachedTokens = 0;
  /// How often the request was preempted (its KV recomputed).
  int32_t numPreemptions = 0;
  /// Submission, first and latest token (host clock, results on the host).
  Clock::time_point arrivalTime, firstTokenTime, lastTokenTime;

  /// Time to first token (0 before it).
  double ttftMs() const;
  /// Mean time per output token after the first (0 with fewer than two).
  double tpotMs() const;
};

} // namespace sol

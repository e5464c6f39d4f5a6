//===- Perplexity.h - solrun --perplexity: strided perplexity ---*- C++ -*-===//
//
// The perplexity of a model on a text (or a list of token ids), as
// Transformers' strided recipe computes it: windows of W ids every S ids,
// each scoring the positions the previous one did not reach
// (runtime/engine/PerplexityWindows.h), batched over the engine
// (Engine::scoreWindows); NLL = mean of -log_softmax over the scored
// positions, perplexity = exp(NLL). Prints one line, or one JSON object.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/executor/ExecutorFactory.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sol {

class PlanFile;

struct PerplexityOptions {
  /// --perplexity FILE: a text, encoded whole with the plan's tokenizer
  /// (special tokens added, as Transformers' tokenizer(text)).
  std::string textFile;
  /// --perplexity-ids FILE: token ids (a JSON array, or integers separated
  /// by whitespace or commas).
  std::string idsFile;
  int64_t window = 0;      // 0: min(1024, the maximum model length)
  int64_t stride = 0;      // 0: window / 2
  int64_t limitTokens = 0; // 0: every id
  bool json = false;
  /// float32 logits of each scored position (n_scored x vocab), in order.
  std::string logitsOut;
  /// int32 argmax of each scored position's logits (n_scored), in order.
  std::string argmaxOut;
  int32_t maxNumSeqs = 0;          // 0: the engine's default
  int32_t maxNumBatchedTokens = 0; // 0: the plan's tokens per step
};

/// Token ids from the contents of a --perplexity-ids file named `source`: a
/// JSON array of integers, or integers separated by whitespace or commas.
/// Throws sol::Error naming the first bad entry.
std::vector<int32_t> parseTokenIdList(std::string_view text,
                                      const std::string &source);

/// Runs the perplexity pass on `device` and prints the result. Returns the
/// exit code; throws sol::Error on bad options or input.
int runPerplexity(const PlanFile &plan, const std::string &device,
                  ExecutorOptions executor, const PerplexityOptions &options);

} // namespace sol

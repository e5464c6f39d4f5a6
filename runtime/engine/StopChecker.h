//===- StopChecker.h - When a request is done, and its text -----*- C++ -*-===//
//
// Applies a request's stop conditions to each generated token, in vLLM's
// order: nothing stops a request before min_tokens; then an EOS id (unless
// ignore_eos) or a stop_token_id ends it with "stop" (the id stays in the
// output ids, its text is left out); then a stop string in the decoded text
// ends it with "stop" (the text is cut where the stop string begins); then
// max_tokens ends it with "length".
//
// With a tokenizer it also produces the output text incrementally (UTF-8
// safe, special tokens skipped). While stop strings are pending, the last
// (longest stop string - 1) bytes are held back: they might be the start of
// a stop string that the next token completes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Request.h"
#include "runtime/tokenizer/IncrementalDetokenizer.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sol {

class Tokenizer;

class StopChecker {
public:
  /// `eosTokenIds` are used unless the request names its own. `tokenizer`
  /// may be null (no text; the request must have no stop strings) and must
  /// outlive the checker.
  StopChecker(const Request &request, std::span<const int32_t> eosTokenIds,
              const Tokenizer *tokenizer);

  /// Takes the next generated id; `numOutput` counts it. Returns why the
  /// request ends with it, or FinishReason::None.
  FinishReason push(int32_t id, int32_t numOutput);

  /// The text that became final since the last call (all of it once the
  /// request finished, or when `finished` is true).
  std::string takeText(bool finished);

  /// The whole output text so far (stop string cut), including what is held
  /// back.
  const std::string &text() const { return text_; }

private:
  bool isEos(int32_t id) const;

  std::vector<int32_t> eos_, stopIds_;
  std::vector<std::string> stop_;
  int32_t minTokens_, maxTokens_;
  bool ignoreEos_;
  size_t holdBack_ = 0; // longest stop string - 1
  std::optional<IncrementalDetokenizer> detokenizer_;
  std::string text_;
  size_t sent_ = 0;
  bool done_ = false;
};

} // namespace sol

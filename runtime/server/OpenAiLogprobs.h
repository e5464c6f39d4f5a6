//===- OpenAiLogprobs.h - Logprobs in OpenAI's two formats -------*- C++
//-*-===//
//
// Completions use the legacy format
//   {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{tok: lp}],
//    "text_offset": [...]}
// and chat the newer one
//   {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
// Tokens are shown as their decoded text (a token holding part of a UTF-8
// character shows U+FFFD; `bytes` has the raw bytes), or "token_id:N" when
// the model has no tokenizer. -inf becomes -9999.0 as in vLLM (JSON has no
// infinities).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/engine/Request.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace sol {

class Tokenizer;

class OpenAiLogprobs {
public:
  /// `tokenizer` may be null.
  OpenAiLogprobs(const Tokenizer *tokenizer, bool chat)
      : tokenizer_(tokenizer), chat_(chat) {}

  /// The logprobs of the tokens in `o` (it must carry them), continuing the
  /// text offsets of earlier calls on this object.
  nlohmann::ordered_json format(const RequestOutput &o);
  /// Appends `part` (from format()) to `all`, which starts null.
  void append(nlohmann::ordered_json &all,
              const nlohmann::ordered_json &part) const;

private:
  std::string tokenText(int32_t id) const;

  const Tokenizer *tokenizer_;
  bool chat_;
  int64_t textOffset_ = 0;
};

} // namespace sol

//===- StopChecker.cpp - When a request is done, and its text -------------===//
#include "runtime/engine/StopChecker.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>

namespace sol {

StopChecker::StopChecker(const Request &request,
                         std::span<const int32_t> eosTokenIds,
                         const Tokenizer *tokenizer)
    : stopIds_(request.stopTokenIds), stop_(request.stop),
      minTokens_(request.minTokens), maxTokens_(request.maxTokens),
      ignoreEos_(request.ignoreEos) {
  if (request.eosTokenIds)
    eos_ = *request.eosTokenIds;
  else
    eos_.assign(eosTokenIds.begin(), eosTokenIds.end());
  if (!stop_.empty() && !tokenizer)
    fail("stop strings need the model's tokenizer, and this engine has none "
         "(the plan has no tokenizer.json); use stop token ids instead");
  for (const std::string &s : stop_) {
    if (s.empty())
      fail("a stop string is empty; give non-empty strings");
    holdBack_ = std::max(holdBack_, s.size() - 1);
  }
  if (tokenizer && (request.detokenize || !stop_.empty()))
    detokenizer_.emplace(*tokenizer, /*skipSpecialTokens=*/true);
}

bool StopChecker::isEos(int32_t id) const {
  return !ignoreEos_ && std::find(eos_.begin(), eos_.end(), id) != eos_.end();
}

FinishReason StopChecker::push(int32_t id, int32_t numOutput) {
  if (done_)
    fail("internal error: a token was added to a finished request");
  const bool mayStop = numOutput >= minTokens_;
  auto finishText = [&] {
    if (detokenizer_)
      text_ += detokenizer_->finish();
  };
  // The earliest stop string that begins at or after `from`; cuts the text.
  auto cutAtStop = [&](size_t from) {
    size_t best = std::string::npos;
    for (const std::string &s : stop_)
      best = std::min(best, text_.find(s, from));
    if (best == std::string::npos)
      return false;
    text_.resize(best);
    return true;
  };
  if (mayStop && (isEos(id) || std::find(stopIds_.begin(), stopIds_.end(),
                                         id) != stopIds_.end())) {
    done_ = true;
    finishText();
    return FinishReason::Stop;
  }
  const size_t before = text_.size();
  if (detokenizer_)
    text_ += detokenizer_->push(static_cast<TokenId>(id));
  // A stop string may straddle the previous text and this token's.
  const size_t from = before > holdBack_ ? before - holdBack_ : 0;
  if (mayStop && !stop_.empty() && cutAtStop(from)) {
    done_ = true;
    return FinishReason::Stop;
  }
  if (numOutput >= maxTokens_) {
    done_ = true;
    const size_t flushed = text_.size();
    finishText();
    if (mayStop && !stop_.empty() && text_.size() > flushed &&
        cutAtStop(flushed > holdBack_ ? flushed - holdBack_ : 0))
      return FinishReason::Stop;
    return FinishReason::Length;
  }
  return FinishReason::None;
}

std::string StopChecker::takeText(bool finished) {
  size_t end = text_.size();
  if (!done_ && !finished) {
    end = end > holdBack_ ? end - holdBack_ : 0;
    // Never split a UTF-8 character.
    while (end > sent_ && end < text_.size() &&
           (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80)
      --end;
  }
  if (end <= sent_)
    return {};
  std::string chunk = text_.substr(sent_, end - sent_);
  sent_ = end;
  return chunk;
}

} // namespace sol

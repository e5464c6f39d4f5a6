//===- OpenAiLogprobs.cpp - Logprobs in OpenAI's two formats --------------===//
#include "runtime/server/OpenAiLogprobs.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <cmath>

namespace sol {

namespace {

using Json = nlohmann::ordered_json;

double finite(float lp) { return std::isfinite(lp) ? double(lp) : -9999.0; }

/// Code points in valid UTF-8 (offsets count characters, as Python does).
int64_t codePoints(const std::string &s) {
  int64_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xc0) != 0x80;
  return n;
}

} // namespace

std::string OpenAiLogprobs::tokenText(int32_t id) const {
  if (!tokenizer_)
    return cat("token_id:", id);
  const TokenId one[] = {static_cast<TokenId>(id)};
  return tokenizer_->decode(one, false);
}

Json OpenAiLogprobs::format(const RequestOutput &o) {
  const size_t n = o.newTokenIds.size();
  auto bytesOf = [&](int32_t id) {
    Json b = Json::array();
    if (!tokenizer_)
      return b;
    for (unsigned char c : tokenizer_->tokenBytes(static_cast<TokenId>(id)))
      b.push_back(int(c));
    return b;
  };
  if (chat_) {
    Json content = Json::array();
    for (size_t i = 0; i < n && i < o.logprobs.size(); ++i) {
      const int32_t id = o.newTokenIds[i];
      Json e;
      e["token"] = tokenText(id);
      e["logprob"] = finite(o.logprobs[i]);
      e["bytes"] = bytesOf(id);
      Json top = Json::array();
      if (i < o.topLogprobs.size())
        for (const TopLogprob &t : o.topLogprobs[i]) {
          Json x;
          x["token"] = tokenText(t.id);
          x["logprob"] = finite(t.logprob);
          x["bytes"] = bytesOf(t.id);
          top.push_back(std::move(x));
        }
      e["top_logprobs"] = std::move(top);
      content.push_back(std::move(e));
    }
    Json j;
    j["content"] = std::move(content);
    return j;
  }
  Json tokens = Json::array(), lps = Json::array(), tops = Json::array(),
       offsets = Json::array();
  for (size_t i = 0; i < n && i < o.logprobs.size(); ++i) {
    const int32_t id = o.newTokenIds[i];
    const std::string text = tokenText(id);
    tokens.push_back(text);
    lps.push_back(finite(o.logprobs[i]));
    // As vLLM: the chosen token, then the top ones.
    Json top = Json::object();
    top[text] = finite(o.logprobs[i]);
    if (i < o.topLogprobs.size())
      for (const TopLogprob &t : o.topLogprobs[i])
        top[tokenText(t.id)] = finite(t.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(textOffset_);
    textOffset_ += codePoints(text);
  }
  Json j;
  j["tokens"] = std::move(tokens);
  j["token_logprobs"] = std::move(lps);
  j["top_logprobs"] = std::move(tops);
  j["text_offset"] = std::move(offsets);
  return j;
}

void OpenAiLogprobs::append(Json &all, const Json &part) const {
  if (all.is_null()) {
    all = part;
    return;
  }
  for (auto &[key, value] : part.items())
    for (const Json &x : value)
      all[key].push_back(x);
}

} // namespace sol

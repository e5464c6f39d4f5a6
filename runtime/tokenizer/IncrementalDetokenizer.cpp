//===- IncrementalDetokenizer.cpp - Streaming decode of token ids ---------===//

#include "runtime/tokenizer/IncrementalDetokenizer.h"

#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/support/Utf8.h"

namespace sol {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer &tokenizer,
                                               bool skipSpecialTokens)
    : tokenizer_(&tokenizer), skipSpecialTokens_(skipSpecialTokens) {}

std::string IncrementalDetokenizer::push(TokenId id) {
  if (skipSpecialTokens_ && tokenizer_->isSpecial(id))
    return {};
  pending_.append(tokenizer_->tokenBytes(id));
  // Replacement is decided left to right, one unit at a time, so emitting
  // every unit except a truncated one at the very end gives the same text
  // as repairing all bytes at once.
  std::string out;
  std::size_t pos = 0;
  while (pos < pending_.size()) {
    const utf8::Unit unit = utf8::decodeUnit(pending_, pos);
    if (unit.status == utf8::UnitStatus::Truncated)
      break;
    if (unit.status == utf8::UnitStatus::Valid)
      out.append(pending_, pos, unit.length);
    else
      out.append(utf8::kReplacementCharacter);
    pos += unit.length;
  }
  pending_.erase(0, pos);
  return out;
}

std::string IncrementalDetokenizer::finish() {
  std::string out = utf8::repair(pending_);
  pending_.clear();
  return out;
}

} // namespace sol

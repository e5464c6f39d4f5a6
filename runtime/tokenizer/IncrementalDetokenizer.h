//===- IncrementalDetokenizer.h - Streaming decode of token ids -*- C++ -*-===//
//
// Turns ids into text as they are generated. A token may end in the middle
// of a UTF-8 character (emoji and CJK often span tokens), so the bytes of an
// unfinished character are held back until the next token completes it or
// proves it broken. Every chunk is valid UTF-8, and the chunks of push() and
// finish() concatenate to exactly Tokenizer::decode() of all ids.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/TokenId.h"

#include <string>

namespace sol {

class Tokenizer;

class IncrementalDetokenizer {
public:
  /// `tokenizer` must outlive this object.
  explicit IncrementalDetokenizer(const Tokenizer &tokenizer,
                                  bool skipSpecialTokens = false);

  /// Adds one id; returns the text that became final (possibly empty).
  std::string push(TokenId id);

  /// Ends the stream: returns the held-back bytes, an unfinished character
  /// becoming U+FFFD as in decode(). The detokenizer can then be reused.
  std::string finish();

  /// Bytes held back, waiting for the rest of a character (0 to 3).
  std::size_t pendingBytes() const { return pending_.size(); }

private:
  const Tokenizer *tokenizer_;
  bool skipSpecialTokens_;
  std::string pending_;
};

} // namespace sol

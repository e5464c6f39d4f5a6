//===- Tokenizer.h - Hugging Face byte-level BPE tokenizers -----*- C++ -*-===//
//
// sol::Tokenizer loads a Hugging Face `tokenizer.json` (and optionally its
// `tokenizer_config.json`) and encodes and decodes exactly as
// `transformers.AutoTokenizer` 5.x does for byte-level BPE tokenizers such as
// those of Qwen2/2.5/3 and Llama 3.x; test/unit/tokenizer checks this against
// goldens written by scripts/make-tokenizer-goldens.py; README.md beside
// this file describes the pipeline, the goldens and the measured speed.
//
// Pipeline of encode(): repair invalid UTF-8 (see below), split out added
// tokens, normalize, split again on normalized added tokens, pre-tokenize
// (regex), BPE each piece, then add the post-processor's special tokens when
// asked. decode() concatenates the bytes of the tokens and repairs the result.
//
// Invalid UTF-8: HF only ever sees Python `str`, so Sol first converts input
// bytes as Python's `bytes.decode("utf-8", errors="replace")` would: each
// maximal ill-formed subpart becomes one U+FFFD. Decoded text is repaired the
// same way, so decode() always returns valid UTF-8.
//
// Clean-up of spaces: transformers 5.x ignores `clean_up_tokenization_spaces`
// for BPE models (it would strip spaces before punctuation), so decode()
// never applies it; Llama 3.1's config sets it, to no effect.
//
// Thread safety: a loaded Tokenizer is immutable apart from an internal,
// synchronized word cache; encode() and decode() may run concurrently.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/TokenId.h"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sol {

class Tokenizer {
public:
  /// Builds a tokenizer from the text of tokenizer.json and, when not empty,
  /// of tokenizer_config.json (bos/eos names, add_bos_token). `sourceName`
  /// names the input in error messages.
  static Tokenizer fromJson(std::string_view tokenizerJson,
                            std::string_view configJson = {},
                            std::string_view sourceName = "tokenizer.json");

  /// Reads `tokenizerJson`, and `configJson` when given.
  static Tokenizer
  fromFiles(const std::filesystem::path &tokenizerJson,
            const std::optional<std::filesystem::path> &configJson = {});

  /// Reads DIR/tokenizer.json and, if it exists, DIR/tokenizer_config.json.
  static Tokenizer fromDirectory(const std::filesystem::path &directory);

  Tokenizer(Tokenizer &&) noexcept;
  Tokenizer &operator=(Tokenizer &&) noexcept;
  ~Tokenizer();

  /// Token ids of `text` (any bytes; see the invalid UTF-8 note above).
  /// `addSpecialTokens` adds what the post-processor adds (Llama 3: BOS).
  std::vector<TokenId> encode(std::string_view text,
                              bool addSpecialTokens = false) const;

  /// Text of `ids`; ids outside the vocabulary are skipped, as HF does.
  std::string decode(std::span<const TokenId> ids,
                     bool skipSpecialTokens = false) const;

  /// The raw bytes decode() produces for `id` before UTF-8 repair (a token
  /// may hold part of a character). Empty for unknown ids.
  std::string_view tokenBytes(TokenId id) const;

  /// Size of the model vocabulary, without added tokens (HF `vocab_size`).
  std::size_t vocabSize() const;
  /// Vocabulary plus added tokens (HF `len(tokenizer)`).
  std::size_t size() const;

  /// The id of a token string as written in tokenizer.json: an added token's
  /// content ("<|im_end|>") or a vocabulary spelling ("Ġworld").
  std::optional<TokenId> tokenToId(std::string_view token) const;
  /// The inverse of tokenToId().
  std::optional<std::string> idToToken(TokenId id) const;

  /// True for added tokens marked "special" (skipped by skipSpecialTokens).
  bool isSpecial(TokenId id) const;
  /// True for any added token.
  bool isAdded(TokenId id) const;

  /// BOS/EOS from tokenizer_config.json, when it names them.
  const std::optional<std::string> &bosToken() const;
  const std::optional<std::string> &eosToken() const;
  std::optional<TokenId> bosTokenId() const;
  std::optional<TokenId> eosTokenId() const;
  /// `add_bos_token` of tokenizer_config.json, when present. Informational:
  /// what encode() adds is decided by tokenizer.json's post_processor, as in
  /// transformers' generic tokenizer class.
  std::optional<bool> configAddBosToken() const;

  /// Ids that encode(text, true) puts before and after the text.
  const std::vector<TokenId> &specialPrefix() const;
  const std::vector<TokenId> &specialSuffix() const;

private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace sol

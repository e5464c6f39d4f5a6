//===- AddedVocabulary.h - Added and special tokens -------------*- C++ -*-===//
//
// The "added_tokens" of tokenizer.json are found in the text before any
// normalization or pre-tokenization, exactly as Hugging Face tokenizers does
// it: leftmost-longest matching, then the `single_word`, `lstrip` and `rstrip`
// rules. Tokens with `normalized: false` are matched on the raw text; tokens
// with `normalized: true` on the normalized pieces between them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/StringMap.h"
#include "runtime/tokenizer/TokenId.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sol {

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool singleWord = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

class AddedVocabulary {
public:
  /// A piece of the text: [begin, end) bytes, an added token if `id` is set.
  struct Piece {
    std::size_t begin;
    std::size_t end;
    std::optional<TokenId> id;
  };

  /// Adds a token. `matchText` is what is searched for: the content, or its
  /// normalized form for tokens with `normalized: true`.
  void add(AddedToken token, std::string matchText);

  bool empty() const { return tokens_.empty(); }
  bool hasNormalizedTokens() const { return !normalizedTrie_.empty(); }

  /// Splits `text` into added tokens and the text between them. Searches the
  /// tokens with `normalized == fromNormalized`. Empty text gives no pieces.
  void split(std::string_view text, bool fromNormalized,
             std::vector<Piece> &out) const;

  const AddedToken *find(TokenId id) const;
  std::optional<TokenId> idOf(std::string_view content) const;
  const std::vector<AddedToken> &tokens() const { return tokens_; }

private:
  // A byte trie; node 0 is the root.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, std::uint32_t>> children;
      int token = -1; // index into tokens_ when a token ends here
    };
    std::vector<Node> nodes;
    bool firstByte[256] = {};
    bool empty() const { return nodes.empty(); }
    void insert(std::string_view text, int token);
    /// Length and token of the longest token starting at `pos`, if any.
    std::optional<std::pair<std::size_t, int>> longestAt(std::string_view text,
                                                         std::size_t pos) const;
  };

  std::vector<AddedToken> tokens_;
  std::unordered_map<TokenId, std::size_t> indexOfId_;
  StringMap<TokenId> idOfContent_;
  Trie rawTrie_;
  Trie normalizedTrie_;
};

} // namespace sol

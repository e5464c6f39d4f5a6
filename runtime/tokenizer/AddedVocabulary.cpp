//===- AddedVocabulary.cpp - Added and special tokens ---------------------===//

#include "runtime/tokenizer/AddedVocabulary.h"

#include "runtime/tokenizer/UnicodeClasses.h"
#include "runtime/support/Utf8.h"

namespace sol {
namespace {

/// The code point that ends at byte `end` (exclusive) of valid UTF-8 text.
char32_t codePointBefore(std::string_view text, std::size_t end) {
  std::size_t begin = end - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80)
    --begin;
  return utf8::decodeUnit(text, begin).codePoint;
}

/// Where the run of white space that ends at `end` begins (Rust `\s*$`).
std::size_t whiteSpaceRunStart(std::string_view text, std::size_t end) {
  while (end > 0) {
    std::size_t begin = end - 1;
    while (begin > 0 &&
           (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80)
      --begin;
    if (!unicode::isWhiteSpace(utf8::decodeUnit(text, begin).codePoint))
      break;
    end = begin;
  }
  return end;
}

/// Where the run of white space that starts at `begin` ends (Rust `^\s*`).
std::size_t whiteSpaceRunEnd(std::string_view text, std::size_t begin) {
  while (begin < text.size()) {
    const utf8::Unit unit = utf8::decodeUnit(text, begin);
    if (!unicode::isWhiteSpace(unit.codePoint))
      break;
    begin += unit.length;
  }
  return begin;
}

} // namespace

void AddedVocabulary::Trie::insert(std::string_view text, int token) {
  if (nodes.empty())
    nodes.emplace_back();
  std::uint32_t node = 0;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    std::uint32_t next = 0;
    for (const auto &[label, child] : nodes[node].children)
      if (label == byte)
        next = child;
    if (next == 0) {
      next = static_cast<std::uint32_t>(nodes.size());
      nodes[node].children.emplace_back(byte, next);
      nodes.emplace_back();
    }
    node = next;
  }
  // HF keeps one pattern per text; the last one added wins, like a map.
  nodes[node].token = token;
  firstByte[static_cast<unsigned char>(text.front())] = true;
}

std::optional<std::pair<std::size_t, int>>
AddedVocabulary::Trie::longestAt(std::string_view text, std::size_t pos) const {
  std::optional<std::pair<std::size_t, int>> best;
  std::uint32_t node = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::uint32_t next = 0;
    for (const auto &[label, child] : nodes[node].children)
      if (label == byte)
        next = child;
    if (next == 0)
      break;
    node = next;
    if (nodes[node].token >= 0)
      best = std::make_pair(i + 1 - pos, nodes[node].token);
  }
  return best;
}

void AddedVocabulary::add(AddedToken token, std::string matchText) {
  // HF ignores tokens with empty content.
  if (token.content.empty() || matchText.empty())
    return;
  const int index = static_cast<int>(tokens_.size());
  (token.normalized ? normalizedTrie_ : rawTrie_).insert(matchText, index);
  indexOfId_[token.id] = tokens_.size();
  idOfContent_[token.content] = token.id;
  tokens_.push_back(std::move(token));
}

void AddedVocabulary::split(std::string_view text, bool fromNormalized,
                            std::vector<Piece> &out) const {
  const Trie &trie = fromNormalized ? normalizedTrie_ : rawTrie_;
  if (text.empty())
    return;
  if (trie.empty()) {
    out.push_back({0, text.size(), std::nullopt});
    return;
  }
  // Mirrors AddedVocabulary::find_matches of HF tokenizers, including how a
  // stripped token may claim white space an earlier token already claimed.
  std::size_t startOffset = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.firstByte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto match = trie.longestAt(text, pos);
    if (!match) {
      ++pos;
      continue;
    }
    const std::size_t matchBegin = pos;
    const std::size_t matchEnd = pos + match->first;
    pos = matchEnd; // non-overlapping matches
    const AddedToken &token = tokens_[match->second];
    std::size_t begin = matchBegin, end = matchEnd;
    if (token.singleWord) {
      const bool wordBefore =
          begin > 0 && unicode::isWordCharacter(codePointBefore(text, begin));
      const bool wordAfter =
          end < text.size() &&
          unicode::isWordCharacter(utf8::decodeUnit(text, end).codePoint);
      if (wordBefore || wordAfter)
        continue;
    }
    if (token.lstrip)
      begin = std::max(whiteSpaceRunStart(text, begin), startOffset);
    if (token.rstrip)
      end = whiteSpaceRunEnd(text, end);
    if (startOffset < begin)
      out.push_back({startOffset, begin, std::nullopt});
    out.push_back({begin, end, token.id});
    startOffset = end;
  }
  if (startOffset != text.size())
    out.push_back({startOffset, text.size(), std::nullopt});
}

const AddedToken *AddedVocabulary::find(TokenId id) const {
  const auto it = indexOfId_.find(id);
  return it == indexOfId_.end() ? nullptr : &tokens_[it->second];
}

std::optional<TokenId> AddedVocabulary::idOf(std::string_view content) const {
  const auto it = idOfContent_.find(content);
  if (it == idOfContent_.end())
    return std::nullopt;
  return it->second;
}

} // namespace sol

//===- TokenizerJson.h - Fast reading of tokenizer.json ---------*- C++ -*-===//
//
// tokenizer.json is 9-11 MB, nearly all of it the BPE vocabulary and merges.
// Building a JSON DOM of those (a std::map node per entry) took most of a
// second; this reader streams them into plain vectors with nlohmann's SAX
// interface and builds a DOM only for the small rest of the file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/TokenId.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sol {

struct TokenizerJson {
  /// A string stored in `strings`.
  struct Ref {
    std::uint32_t offset;
    std::uint32_t length;
  };

  /// The whole file except model.vocab and model.merges.
  nlohmann::json root;
  /// The text of the vocabulary spellings and merge parts, back to back: one
  /// buffer instead of half a million small strings.
  std::string strings;
  /// model.vocab entries in file order: (spelling, id).
  std::vector<std::pair<Ref, TokenId>> vocab;
  /// model.merges in file order, in either the "a b" or the ["a", "b"] form;
  /// legacy "#version" lines are dropped as HF does.
  std::vector<std::pair<Ref, Ref>> merges;
  bool hasVocab = false;
  bool hasMerges = false;

  std::string_view view(Ref ref) const {
    return std::string_view(strings).substr(ref.offset, ref.length);
  }
};

/// Parses the text of a tokenizer.json; `where` names it in errors.
TokenizerJson readTokenizerJson(std::string_view text, std::string_view where);

} // namespace sol

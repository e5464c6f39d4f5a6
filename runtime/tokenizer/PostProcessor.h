//===- PostProcessor.h - The `post_processor` of tokenizer.json -*- C++ -*-===//
//
// What `add_special_tokens=True` adds around one sequence. Supported:
// TemplateProcessing (its "single" template), ByteLevel (offsets only, no ids),
// RobertaProcessing, BertProcessing, and Sequence of those.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/TokenId.h"

#include <nlohmann/json_fwd.hpp>

#include <string_view>
#include <vector>

namespace sol {

class PostProcessor {
public:
  /// Parses the "post_processor" value (may be null).
  static PostProcessor fromJson(const nlohmann::json &value,
                                std::string_view where);

  /// Wraps `ids` with the special tokens of the single-sequence template.
  void addSpecialTokens(std::vector<TokenId> &ids) const;

  const std::vector<TokenId> &prefix() const { return prefix_; }
  const std::vector<TokenId> &suffix() const { return suffix_; }

private:
  void parse(const nlohmann::json &value, std::string_view where);

  std::vector<TokenId> prefix_;
  std::vector<TokenId> suffix_;
};

} // namespace sol

//===- PreTokenizer.h - The `pre_tokenizer` of tokenizer.json ---*- C++ -*-===//
//
// Supported: Split (Regex or String pattern; every delimiter behavior;
// invert), ByteLevel (add_prefix_space, use_regex with the GPT-2 pattern) and
// Sequence of those. ByteLevel must be present: Sol's BPE works on raw bytes,
// which is what ByteLevel's byte-to-character mapping amounts to. trim_offsets
// only changes offsets, which Sol does not report.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/tokenizer/Regex.h"

#include <nlohmann/json_fwd.hpp>

#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace sol {

class PreTokenizer {
public:
  /// Parses the "pre_tokenizer" value; `where` names the file in errors.
  static PreTokenizer fromJson(const nlohmann::json &value,
                               std::string_view where);

  /// Receives the pre-tokens of split(), in order.
  class Sink {
  public:
    virtual void piece(std::string_view piece) = 0;

  protected:
    ~Sink() = default;
  };

  /// Splits (normalized) `text` into pre-tokens and hands them to `sink` as
  /// they are found: a 1 MB text never becomes a vector of pieces. A piece
  /// points into `text` or, when a prefix space was added, into `arena`.
  void split(std::string_view text, std::deque<std::string> &arena,
             Sink &sink) const;

  /// split() into a vector, for tests.
  std::vector<std::string_view> split(std::string_view text,
                                      std::deque<std::string> &arena) const;

  /// How a Split step treats the matched delimiters (HF names).
  enum class Behavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous
  };

private:
  struct Step {
    enum class Kind { Split, ByteLevel } kind;
    // Split
    std::vector<Regex> regex; // zero or one; a vector keeps Step movable
    Behavior behavior = Behavior::Isolated;
    bool invert = false;
    // ByteLevel
    bool addPrefixSpace = false;
    bool useRegex = false;
  };

  class Run;

  static void parseInto(const nlohmann::json &value, std::string_view where,
                        std::vector<Step> &steps);

  std::vector<Step> steps_;
};

} // namespace sol

//===- PreTokenizer.cpp - The `pre_tokenizer` of tokenizer.json -----------===//

#include "runtime/tokenizer/PreTokenizer.h"

#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

namespace sol {
namespace {

// The GPT-2 pattern that ByteLevel applies when "use_regex" is true.
constexpr std::string_view kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

PreTokenizer::Behavior parseBehavior(const nlohmann::json &value,
                                     std::string_view where) {
  const std::string name = value.is_string() ? value.get<std::string>() : "";
  if (name == "Removed")
    return PreTokenizer::Behavior::Removed;
  if (name == "Isolated")
    return PreTokenizer::Behavior::Isolated;
  if (name == "MergedWithPrevious")
    return PreTokenizer::Behavior::MergedWithPrevious;
  if (name == "MergedWithNext")
    return PreTokenizer::Behavior::MergedWithNext;
  if (name == "Contiguous")
    return PreTokenizer::Behavior::Contiguous;
  fail(where, ": Split \"behavior\" \"", name,
       "\" is unknown (expected Removed, Isolated, MergedWithPrevious, "
       "MergedWithNext or Contiguous)");
}

} // namespace

void PreTokenizer::parseInto(const nlohmann::json &value,
                             std::string_view where, std::vector<Step> &steps) {
  if (!value.is_object() || !value.contains("type") ||
      !value["type"].is_string())
    fail(where, ": a pre_tokenizer must be an object with a string \"type\"");
  const std::string type = value["type"].get<std::string>();
  if (type == "Sequence") {
    if (!value.contains("pretokenizers") || !value["pretokenizers"].is_array())
      fail(where, ": pre_tokenizer Sequence needs a \"pretokenizers\" array");
    for (const nlohmann::json &child : value["pretokenizers"])
      parseInto(child, where, steps);
  } else if (type == "Split") {
    Step step{Step::Kind::Split, {}};
    if (!value.contains("pattern") || !value["pattern"].is_object())
      fail(where, ": Split needs a \"pattern\" object");
    const nlohmann::json &pattern = value["pattern"];
    if (pattern.contains("Regex") && pattern["Regex"].is_string())
      step.regex.push_back(Regex::fromPattern(
          pattern["Regex"].get<std::string>(), cat(where, ": Split pattern")));
    else if (pattern.contains("String") && pattern["String"].is_string())
      step.regex.push_back(Regex::literal(pattern["String"].get<std::string>(),
                                          cat(where, ": Split pattern")));
    else
      fail(where,
           ": Split \"pattern\" must be {\"Regex\": ...} or {\"String\": ...}");
    step.behavior =
        parseBehavior(value.value("behavior", nlohmann::json()), where);
    step.invert = value.value("invert", false);
    steps.push_back(std::move(step));
  } else if (type == "ByteLevel") {
    Step step{Step::Kind::ByteLevel, {}};
    step.addPrefixSpace = value.value("add_prefix_space", true);
    step.useRegex = value.value("use_regex", true);
    if (step.useRegex)
      step.regex.push_back(Regex::fromPattern(kByteLevelPattern, "ByteLevel"));
    steps.push_back(std::move(step));
  } else {
    fail(where, ": pre_tokenizer type \"", type,
         "\" is not supported by Sol (supported: Sequence, Split, ByteLevel)");
  }
}

PreTokenizer PreTokenizer::fromJson(const nlohmann::json &value,
                                    std::string_view where) {
  PreTokenizer preTokenizer;
  if (!value.is_null())
    parseInto(value, where, preTokenizer.steps_);
  bool hasByteLevel = false;
  for (const Step &step : preTokenizer.steps_)
    hasByteLevel |= step.kind == Step::Kind::ByteLevel;
  if (!hasByteLevel)
    fail(where, ": Sol supports byte-level BPE tokenizers only, and this "
                "pre_tokenizer has no ByteLevel step");
  return preTokenizer;
}

/// The state of one split(): a regex matcher per step, reused for every
/// piece that reaches the step, and scratch space.
class PreTokenizer::Run {
public:
  Run(const PreTokenizer &owner, std::deque<std::string> &arena, Sink &sink)
      : steps_(owner.steps_), arena_(arena), sink_(sink) {
    for (const Step &step : steps_)
      matchers_.emplace_back(step.regex.empty() ? std::nullopt
                                                : std::optional<Regex::Matcher>(
                                                      step.regex.front()));
  }

  /// Runs `piece` through steps [index, end) and hands the results on.
  void process(std::size_t index, std::string_view piece) {
    if (piece.empty())
      return; // HF drops empty pieces after every split
    if (index == steps_.size()) {
      sink_.piece(piece);
      return;
    }
    const Step &step = steps_[index];
    if (step.kind == Step::Kind::ByteLevel) {
      // HF prepends the space to every piece that lacks one.
      if (step.addPrefixSpace && piece.front() != ' ') {
        arena_.push_back(cat(" ", piece));
        piece = arena_.back();
      }
      if (step.useRegex)
        splitIsolated(index, piece, false);
      else
        process(index + 1, piece);
      return;
    }
    if (step.behavior == Behavior::Isolated)
      splitIsolated(index, piece, step.invert);
    else
      splitMerging(index, piece);
  }

private:
  struct Span {
    std::size_t begin, end;
    bool isMatch;
  };

  /// Isolated: every match and every gap is a piece (invert changes nothing).
  void splitIsolated(std::size_t index, std::string_view piece, bool) {
    Regex::Matcher &matcher = *matchers_[index];
    matcher.reset(piece);
    Regex::Match match;
    std::size_t previous = 0;
    while (matcher.next(match)) {
      if (previous != match.first)
        process(index + 1, piece.substr(previous, match.first - previous));
      process(index + 1, piece.substr(match.first, match.second - match.first));
      previous = match.second;
    }
    if (previous != piece.size())
      process(index + 1, piece.substr(previous));
  }

  /// The other behaviors, as NormalizedString::split of HF tokenizers does
  /// them: flag matches and gaps, then merge or drop.
  void splitMerging(std::size_t index, std::string_view piece) {
    const Step &step = steps_[index];
    std::vector<Span> spans;
    Regex::Matcher &matcher = *matchers_[index];
    matcher.reset(piece);
    Regex::Match match;
    std::size_t previous = 0;
    while (matcher.next(match)) {
      if (previous != match.first)
        spans.push_back({previous, match.first, step.invert});
      spans.push_back({match.first, match.second, !step.invert});
      previous = match.second;
    }
    if (previous != piece.size())
      spans.push_back({previous, piece.size(), step.invert});

    std::vector<Span> kept;
    bool previousMatch = false;
    switch (step.behavior) {
    case Behavior::Isolated: // (handled by splitIsolated; kept for safety)
    case Behavior::Removed:
      for (const Span &s : spans)
        if (step.behavior == Behavior::Isolated || !s.isMatch)
          kept.push_back(s);
      break;
    case Behavior::Contiguous:
      for (const Span &s : spans) {
        if (s.isMatch == previousMatch && !kept.empty())
          kept.back().end = s.end;
        else
          kept.push_back(s);
        previousMatch = s.isMatch;
      }
      break;
    case Behavior::MergedWithPrevious:
      for (const Span &s : spans) {
        if (s.isMatch && !previousMatch && !kept.empty())
          kept.back().end = s.end;
        else
          kept.push_back(s);
        previousMatch = s.isMatch;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->isMatch && !previousMatch && !kept.empty())
          kept.back().begin = it->begin;
        else
          kept.push_back(*it);
        previousMatch = it->isMatch;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
    for (const Span &s : kept)
      process(index + 1, piece.substr(s.begin, s.end - s.begin));
  }

  const std::vector<Step> &steps_;
  std::deque<std::string> &arena_;
  Sink &sink_;
  std::vector<std::optional<Regex::Matcher>> matchers_;
};

void PreTokenizer::split(std::string_view text, std::deque<std::string> &arena,
                         Sink &sink) const {
  Run run(*this, arena, sink);
  run.process(0, text);
}

std::vector<std::string_view>
PreTokenizer::split(std::string_view text,
                    std::deque<std::string> &arena) const {
  struct Collect final : Sink {
    std::vector<std::string_view> pieces;
    void piece(std::string_view p) override { pieces.push_back(p); }
  } collect;
  split(text, arena, collect);
  return std::move(collect.pieces);
}

} // namespace sol

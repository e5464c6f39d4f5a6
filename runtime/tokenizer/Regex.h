//===- Regex.h - PCRE2 regex for pre-tokenizer patterns ---------*- C++ -*-===//
//
// tokenizer.json patterns are written for Oniguruma (what HF tokenizers uses).
// PCRE2 with UTF + UCP and JIT runs them with the same leftmost-first
// backtracking semantics; the only difference that matters, `\s`, is rewritten
// to Unicode's White_Space set (PCRE2 also counts U+180E as a space).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sol {

class Regex {
public:
  /// A match: byte offsets [begin, end) into the searched text.
  using Match = std::pair<std::size_t, std::size_t>;

  /// Compiles an Oniguruma-style `pattern`; `where` names it in errors.
  static Regex fromPattern(std::string_view pattern, std::string_view where);
  /// A regex that matches `text` literally.
  static Regex literal(std::string_view text, std::string_view where);

  Regex(Regex &&) noexcept;
  Regex &operator=(Regex &&) noexcept;
  ~Regex();

  /// Iterates over the non-overlapping matches in a text (valid UTF-8),
  /// left to right; after an empty match the search resumes one character
  /// on. A matcher can be reset to a new text and so reused without
  /// allocating. Not thread-safe: use one per thread.
  class Matcher {
  public:
    explicit Matcher(const Regex &regex);
    Matcher(Matcher &&) noexcept;
    Matcher &operator=(Matcher &&) noexcept;
    ~Matcher();

    void reset(std::string_view text);
    /// The next match, or false when there is none.
    bool next(Match &match);

  private:
    struct Data;
    const Regex *regex_;
    std::unique_ptr<Data> data_;
    std::string_view text_;
    std::size_t start_ = 0;
    bool done_ = true;
  };

  /// Appends to `out` every match in `text` (see Matcher).
  void findAll(std::string_view text, std::vector<Match> &out) const;

  /// The pattern as given to PCRE2 (after the `\s` rewrite), for tests.
  const std::string &compiledPattern() const { return pattern_; }

private:
  struct Code;
  Regex(std::string pattern, bool isLiteral, std::string_view where);

  std::string pattern_;
  std::unique_ptr<Code> code_;
};

/// Rewrites `\s` and `\S` (outside and inside character classes) to the
/// White_Space property, leaving everything else as is.
std::string translateOnigurumaPattern(std::string_view pattern);

} // namespace sol

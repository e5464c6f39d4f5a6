//===- Regex.cpp - PCRE2 regex for pre-tokenizer patterns -----------------===//

#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/tokenizer/Regex.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/UnicodeClasses.h"
#include "runtime/support/Utf8.h"

#include <pcre2.h>

namespace sol {

struct Regex::Code {
  pcre2_code *code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

std::string translateOnigurumaPattern(std::string_view pattern) {
  const std::string ws = unicode::kWhiteSpaceClassBody;
  std::string out;
  out.reserve(pattern.size() + 64);
  bool inClass = false;
  std::size_t classStart = 0; // index in `pattern` just after '[' or '[^'
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 's') {
        out += inClass ? ws : "[" + ws + "]";
      } else if (next == 'S' && !inClass) {
        out += "[^" + ws + "]";
      } else {
        // `\S` inside a class has no class-body spelling: keep PCRE2's.
        out += c;
        out += next;
      }
      ++i;
      continue;
    }
    if (!inClass && c == '[') {
      inClass = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') {
        out += '^';
        ++i;
      }
      classStart = i + 1;
      continue;
    }
    if (inClass && c == '[' && i + 1 < pattern.size() &&
        pattern[i + 1] == ':') {
      // POSIX class such as [:alpha:]: copy through its closing ":]".
      const std::size_t close = pattern.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(pattern.substr(i, close + 2 - i));
        i = close + 1;
        continue;
      }
    }
    if (inClass && c == ']' && i != classStart)
      inClass = false;
    out += c;
  }
  return out;
}

Regex Regex::fromPattern(std::string_view pattern, std::string_view where) {
  return Regex(translateOnigurumaPattern(pattern), false, where);
}

Regex Regex::literal(std::string_view text, std::string_view where) {
  return Regex(std::string(text), true, where);
}

Regex::Regex(std::string pattern, bool isLiteral, std::string_view where)
    : pattern_(std::move(pattern)), code_(std::make_unique<Code>()) {
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  // PCRE2 rejects PCRE2_UCP together with PCRE2_LITERAL (it means nothing).
  const uint32_t options =
      isLiteral ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()),
                              pattern_.size(), options, &errorCode,
                              &errorOffset, nullptr);
  if (!code_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(errorCode, message, sizeof(message));
    fail(where, ": cannot compile the regular expression '", pattern_,
         "' at offset ", errorOffset, ": ", reinterpret_cast<char *>(message));
  }
  // JIT makes matching several times faster; without it PCRE2 interprets.
  (void)pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);
}

Regex::Regex(Regex &&) noexcept = default;
Regex &Regex::operator=(Regex &&) noexcept = default;
Regex::~Regex() = default;

struct Regex::Matcher::Data {
  pcre2_match_data *matchData = nullptr;
  ~Data() { pcre2_match_data_free(matchData); }
};

Regex::Matcher::Matcher(const Regex &regex)
    : regex_(&regex), data_(std::make_unique<Data>()) {
  data_->matchData =
      pcre2_match_data_create_from_pattern(regex.code_->code, nullptr);
  if (!data_->matchData)
    fail("out of memory while matching a pre-tokenizer regex");
}
Regex::Matcher::Matcher(Matcher &&) noexcept = default;
Regex::Matcher &Regex::Matcher::operator=(Matcher &&) noexcept = default;
Regex::Matcher::~Matcher() = default;

void Regex::Matcher::reset(std::string_view text) {
  text_ = text;
  start_ = 0;
  done_ = false;
}

bool Regex::Matcher::next(Match &match) {
  if (done_ || start_ > text_.size())
    return false;
  const int rc = pcre2_match(
      regex_->code_->code, reinterpret_cast<PCRE2_SPTR>(text_.data()),
      text_.size(), start_, PCRE2_NO_UTF_CHECK, data_->matchData, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) {
    done_ = true;
    return false;
  }
  if (rc < 0) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof(message));
    fail("pre-tokenizer regex '", regex_->pattern_, "' failed at byte ", start_,
         " of a ", text_.size(),
         "-byte text: ", reinterpret_cast<char *>(message));
  }
  const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(data_->matchData);
  match = {ovector[0], ovector[1]};
  if (match.second > match.first)
    start_ = match.second;
  else if (match.second < text_.size())
    start_ = match.second + utf8::decodeUnit(text_, match.second).length;
  else
    done_ = true;
  return true;
}

void Regex::findAll(std::string_view text, std::vector<Match> &out) const {
  Matcher matcher(*this);
  matcher.reset(text);
  Match match;
  while (matcher.next(match))
    out.push_back(match);
}

} // namespace sol

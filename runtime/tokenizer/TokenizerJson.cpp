//===- TokenizerJson.cpp - Fast reading of tokenizer.json -----------------===//

#include "runtime/tokenizer/TokenizerJson.h"

#include "runtime/support/Error.h"

namespace sol {
namespace {

using json = nlohmann::json;

/// Builds a DOM like nlohmann's own SAX DOM parser, except that the entries
/// of model.vocab and model.merges go to TokenizerJson's vectors.
class Reader : public json::json_sax_t {
public:
  explicit Reader(TokenizerJson &out) : out_(out) {}

  std::string error;

  bool null() override { return scalar(nullptr); }
  bool boolean(bool v) override { return scalar(v); }
  bool number_integer(number_integer_t v) override { return scalar(v); }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::Vocab) {
      if (v > 0xFFFFFFFFull)
        return badVocabId();
      out_.vocab.emplace_back(store(key_), static_cast<TokenId>(v));
      return true;
    }
    return scalar(v);
  }
  bool number_float(number_float_t v, const string_t &) override {
    return scalar(v);
  }
  bool binary(binary_t &) override { return fail("unexpected binary value"); }

  bool string(string_t &v) override {
    if (mode_ == Mode::Merges) {
      if (depth() == modeDepth_)
        return legacyMerge(v);
      if (depth() == modeDepth_ + 1) {
        mergeParts_.push_back(store(v));
        return true;
      }
      return badMerge();
    }
    if (mode_ == Mode::Vocab)
      return badVocabId();
    return value(std::move(v));
  }

  bool start_object(std::size_t) override {
    if (mode_ == Mode::Merges)
      return badMerge();
    if (mode_ == Mode::Vocab)
      return badVocabId();
    if (isModelMember("vocab")) {
      out_.hasVocab = true;
      enter(Mode::Vocab);
      return true;
    }
    return open(json::object());
  }
  bool end_object() override {
    if (mode_ == Mode::Vocab) {
      mode_ = Mode::Dom;
      kinds_.pop_back();
      return true;
    }
    return close();
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::Vocab)
      return badVocabId();
    if (mode_ == Mode::Merges) {
      if (depth() != modeDepth_)
        return badMerge();
      kinds_.push_back(Kind::MergeArray);
      mergeParts_.clear();
      return true;
    }
    if (isModelMember("merges")) {
      out_.hasMerges = true;
      enter(Mode::Merges);
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::Merges) {
      if (kinds_.back() == Kind::MergeArray) {
        kinds_.pop_back();
        if (mergeParts_.size() != 2)
          return badMerge();
        out_.merges.emplace_back(mergeParts_[0], mergeParts_[1]);
        return true;
      }
      mode_ = Mode::Dom;
      kinds_.pop_back();
      return true;
    }
    return close();
  }

  bool key(string_t &k) override {
    key_ = std::move(k);
    if (mode_ == Mode::Dom)
      keys_.back() = key_;
    return true;
  }

  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &e) override {
    error = cat("not valid JSON (byte ", position, "): ", e.what());
    return false;
  }

private:
  enum class Mode { Dom, Vocab, Merges };
  enum class Kind { Object, Array, Vocab, Merges, MergeArray };

  std::size_t depth() const { return kinds_.size(); }

  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }
  bool badVocabId() {
    return fail(cat("model.vocab entry \"", key_,
                    "\" must map to a non-negative integer id"));
  }
  bool badMerge() {
    return fail(cat("model.merges entry ", out_.merges.size() + 1,
                    " must be a string \"a b\" or an array [\"a\", \"b\"]"));
  }
  bool legacyMerge(const std::string &line) {
    if (line.rfind("#version", 0) == 0)
      return true;
    // HF requires exactly two parts separated by one space.
    const std::size_t space = line.find(' ');
    if (space == std::string::npos ||
        line.find(' ', space + 1) != std::string::npos)
      return fail(cat("model.merges entry ", out_.merges.size() + 1, " (\"",
                      line, "\") must be two tokens separated by one space"));
    const TokenizerJson::Ref whole = store(line);
    out_.merges.emplace_back(
        TokenizerJson::Ref{whole.offset, static_cast<std::uint32_t>(space)},
        TokenizerJson::Ref{whole.offset + static_cast<std::uint32_t>(space) + 1,
                           whole.length - static_cast<std::uint32_t>(space) -
                               1});
    return true;
  }

  TokenizerJson::Ref store(std::string_view text) {
    // The input is at most a few hundred MB; refs are 32-bit.
    if (out_.strings.size() + text.size() > 0xFFFFFFFFull)
      sol::fail("tokenizer.json vocabulary is larger than 4 GB");
    const TokenizerJson::Ref ref{
        static_cast<std::uint32_t>(out_.strings.size()),
        static_cast<std::uint32_t>(text.size())};
    out_.strings.append(text);
    return ref;
  }

  /// True when the value about to start is root["model"][name].
  bool isModelMember(const char *name) const {
    return depth() == 2 && kinds_[0] == Kind::Object && keys_[0] == "model" &&
           kinds_[1] == Kind::Object && keys_[1] == name;
  }
  void enter(Mode mode) {
    mode_ = mode;
    kinds_.push_back(mode == Mode::Vocab ? Kind::Vocab : Kind::Merges);
    modeDepth_ = depth();
  }

  /// Stores a scalar or a new container in the current container.
  json *insert(json v) {
    if (stack_.empty()) {
      out_.root = std::move(v);
      return &out_.root;
    }
    json &parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json &slot = parent[keys_.back()];
    slot = std::move(v);
    return &slot;
  }
  /// A scalar outside vocab/merges; inside them it is an error.
  template <typename T> bool scalar(T &&v) {
    if (mode_ == Mode::Vocab)
      return badVocabId();
    if (mode_ == Mode::Merges)
      return badMerge();
    return value(std::forward<T>(v));
  }
  template <typename T> bool value(T &&v) {
    insert(json(std::forward<T>(v)));
    return true;
  }
  bool open(json container) {
    const bool isObject = container.is_object();
    stack_.push_back(insert(std::move(container)));
    kinds_.push_back(isObject ? Kind::Object : Kind::Array);
    keys_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    kinds_.pop_back();
    keys_.pop_back();
    return true;
  }

  TokenizerJson &out_;
  Mode mode_ = Mode::Dom;
  std::size_t modeDepth_ = 0;
  std::vector<json *> stack_;     // open DOM containers
  std::vector<Kind> kinds_;       // every open container, DOM or streamed
  std::vector<std::string> keys_; // current key of each open DOM container
  std::string key_;
  std::vector<TokenizerJson::Ref> mergeParts_;
};

} // namespace

TokenizerJson readTokenizerJson(std::string_view text, std::string_view where) {
  TokenizerJson out;
  // Spellings and merge parts are nearly all of the file.
  out.strings.reserve(text.size() / 2);
  Reader reader(out);
  const bool ok = json::sax_parse(text.begin(), text.end(), &reader,
                                  json::input_format_t::json, true);
  if (!ok)
    sol::fail(where, ": ",
              reader.error.empty() ? std::string("not valid JSON")
                                   : reader.error);
  return out;
}

} // namespace sol

//===- Workload.cpp - solbench: the prompts sent to the server ------------===//
#include "tools/solbench/Workload.h"

#include "runtime/support/Error.h"
#include "runtime/support/Utf8.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>
#include <fstream>
#include <random>

namespace sol::bench {

namespace {

// Frequent English words: most are one token in the usual BPE vocabularies
// (with their leading space), so N of them make a prompt of about N tokens.
const char *const kWords[] = {
    "the",     "of",    "and",    "to",     "in",      "is",     "you",
    "that",    "it",    "he",     "was",    "for",     "on",     "are",
    "as",      "with",  "his",    "they",   "at",      "be",     "this",
    "have",    "from",  "or",     "one",    "had",     "by",     "word",
    "but",     "not",   "what",   "all",    "were",    "we",     "when",
    "your",    "can",   "said",   "there",  "use",     "an",     "each",
    "which",   "she",   "do",     "how",    "their",   "if",     "will",
    "up",      "other", "about",  "out",    "many",    "then",   "them",
    "these",   "so",    "some",   "her",    "would",   "make",   "like",
    "him",     "into",  "time",   "has",    "look",    "two",    "more",
    "write",   "go",    "see",    "number", "no",      "way",    "could",
    "people",  "my",    "than",   "first",  "water",   "been",   "call",
    "who",     "oil",   "its",    "now",    "find",    "long",   "down",
    "day",     "did",   "get",    "come",   "made",    "may",    "part",
    "over",    "new",   "sound",  "take",   "only",    "little", "work",
    "know",    "place", "year",   "live",   "me",      "back",   "give",
    "most",    "very",  "after",  "thing",  "our",     "just",   "name",
    "good",    "man",   "think",  "say",    "great",   "where",  "help",
    "through", "much",  "before", "line",   "right",   "too",    "mean",
    "old",     "any",   "same",   "tell",   "boy",     "follow", "came",
    "want",    "show",  "also",   "around", "form",    "three",  "small",
    "set",     "put",   "end",    "does",   "another", "well",   "large",
    "must",    "big",   "even",   "such",   "because", "turn",   "here",
    "why",     "ask",   "went",   "men",    "read",    "need",   "land",
    "house",   "world", "still",  "learn",  "should",  "city",   "tree",
};

int32_t draw(LengthRange r, std::mt19937_64 &rng) {
  return std::uniform_int_distribution<int32_t>(r.lo, r.hi)(rng);
}

/// A rough token count of text for when there is no tokenizer: about four
/// bytes per token in English.
int64_t estimateTokens(const std::string &text) {
  return std::max<int64_t>(1, static_cast<int64_t>((text.size() + 3) / 4));
}

} // namespace

IdRange idRangeForVocab(int64_t vocabSize) {
  if (vocabSize < 2 || vocabSize > INT32_MAX)
    fail("--vocab-size ", vocabSize, " is out of range (2 to ", INT32_MAX, ")");
  const int64_t margin = std::min<int64_t>(1000, vocabSize / 4);
  return {static_cast<int32_t>(margin),
          static_cast<int32_t>(vocabSize - margin)};
}

Workload Workload::synthetic(Endpoint endpoint, LengthRange inputLen,
                             LengthRange outputLen, IdRange ids,
                             const Tokenizer *tokenizer, uint64_t seed) {
  if (ids.lo < 0 || ids.lo >= ids.hi)
    fail("empty token id range [", ids.lo, ", ", ids.hi, ")");
  Workload w;
  w.endpoint_ = endpoint;
  w.inputLen_ = inputLen;
  w.outputLen_ = outputLen;
  w.ids_ = ids;
  w.tokenizer_ = tokenizer;
  w.seed_ = seed;
  return w;
}

Workload Workload::dataset(const std::string &path, Endpoint endpoint,
                           std::optional<LengthRange> outputLen,
                           const Tokenizer *tokenizer, uint64_t seed) {
  std::ifstream in(path);
  if (!in)
    fail("--dataset: cannot read '", path, "'");
  Workload w;
  w.endpoint_ = endpoint;
  w.outputOverride_ = outputLen;
  w.tokenizer_ = tokenizer;
  w.seed_ = seed;
  const bool chat = endpoint == Endpoint::Chat;
  auto count = [&](const std::string &text) -> int64_t {
    return tokenizer ? static_cast<int64_t>(tokenizer->encode(text).size())
                     : estimateTokens(text);
  };
  std::string line;
  size_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto bad = [&](const auto &...what) {
      fail(path, ":", lineNo, ": ", what...);
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error &e) {
      std::string why = e.what();
      // Drop nlohmann's "[json.exception.parse_error.101] parse error at
      // line 1, " (the line is the file's): keep "column N: what".
      if (size_t b = why.find("] "); b != std::string::npos)
        why = why.substr(b + 2);
      if (size_t c = why.find("column "); c != std::string::npos)
        why = why.substr(c);
      bad("not valid JSON: ", why);
    }
    if (!j.is_object())
      bad("expected a JSON object {\"prompt\": ..., \"max_tokens\": N} or "
          "{\"messages\": [...], \"max_tokens\": N}, got ",
          j.type_name());
    const bool hasPrompt = j.contains("prompt");
    const bool hasMessages = j.contains("messages");
    if (hasPrompt == hasMessages)
      bad(hasPrompt ? "has both \"prompt\" and \"messages\"; give one"
                    : "has neither \"prompt\" nor \"messages\"");
    Prompt p;
    if (hasPrompt) {
      const nlohmann::json &v = j["prompt"];
      if (v.is_string()) {
        if (v.get_ref<const std::string &>().empty())
          bad("\"prompt\" is empty");
        if (chat) {
          p.messages =
              nlohmann::json::array({{{"role", "user"}, {"content", v}}});
        } else {
          p.text = v.get<std::string>();
        }
        p.promptTokens = count(v.get<std::string>());
      } else if (v.is_array()) {
        if (chat)
          bad("a \"prompt\" of token ids needs --endpoint completions (chat "
              "takes text)");
        if (v.empty())
          bad("\"prompt\" is an empty array");
        for (size_t i = 0; i < v.size(); ++i) {
          if (!v[i].is_number_integer() || v[i].get<int64_t>() < 0 ||
              v[i].get<int64_t>() > INT32_MAX)
            bad("\"prompt\"[", i,
                "] is not a token id (a non-negative "
                "integer): ",
                v[i].dump());
          p.ids.push_back(v[i].get<int32_t>());
        }
        p.promptTokens = static_cast<int64_t>(p.ids.size());
      } else {
        bad("\"prompt\" must be a string or an array of token ids, got ",
            v.type_name());
      }
    } else {
      if (!chat)
        bad("\"messages\" needs --endpoint chat (completions takes "
            "\"prompt\")");
      const nlohmann::json &v = j["messages"];
      if (!v.is_array() || v.empty())
        bad("\"messages\" must be a non-empty array of {\"role\": ..., "
            "\"content\": ...}");
      for (size_t i = 0; i < v.size(); ++i) {
        const nlohmann::json &m = v[i];
        if (!m.is_object())
          bad("\"messages\"[", i, "] is not an object");
        if (!m.contains("role") || !m["role"].is_string())
          bad("\"messages\"[", i, "] has no \"role\" string");
        if (!m.contains("content") ||
            !(m["content"].is_string() || m["content"].is_array()))
          bad("\"messages\"[", i,
              "] has no \"content\" (a string or an array of parts)");
        p.promptTokens += m["content"].is_string()
                              ? count(m["content"].get<std::string>())
                              : count(m["content"].dump());
      }
      p.messages = v;
    }
    if (j.contains("max_tokens")) {
      const nlohmann::json &v = j["max_tokens"];
      if (!v.is_number_integer() || v.get<int64_t>() < 1 ||
          v.get<int64_t>() > INT32_MAX)
        bad("\"max_tokens\" must be a positive integer, got ", v.dump());
      p.maxTokens = v.get<int32_t>();
    } else if (!outputLen) {
      bad("no \"max_tokens\" (give it on every line, or --output-len for "
          "all)");
    }
    w.dataset_.push_back(std::move(p));
  }
  if (in.bad())
    fail("--dataset: error reading '", path, "'");
  if (w.dataset_.empty())
    fail("--dataset: '", path, "' holds no requests (no non-empty lines)");
  return w;
}

std::vector<Prompt> Workload::prompts(size_t level, size_t count) const {
  std::seed_seq seq{static_cast<uint32_t>(seed_),
                    static_cast<uint32_t>(seed_ >> 32),
                    static_cast<uint32_t>(level)};
  std::mt19937_64 rng(seq);
  std::vector<Prompt> out;
  out.reserve(count);
  if (isDataset()) {
    for (size_t i = 0; i < count; ++i) {
      Prompt p = dataset_[i % dataset_.size()];
      if (outputOverride_)
        p.maxTokens = draw(*outputOverride_, rng);
      out.push_back(std::move(p));
    }
    return out;
  }

  std::uniform_int_distribution<int32_t> anyId(ids_.lo, ids_.hi - 1);
  auto randomId = [&] {
    int32_t id = anyId(rng);
    // Keep special and added tokens (BOS, EOS, chat markers) out of prompts.
    for (int tries = 0; tokenizer_ && tries < 100 &&
                        (id >= static_cast<int32_t>(tokenizer_->size()) ||
                         tokenizer_->isSpecial(id) || tokenizer_->isAdded(id));
         ++tries)
      id = anyId(rng);
    return id;
  };
  std::uniform_int_distribution<size_t> anyWord(0, std::size(kWords) - 1);
  for (size_t i = 0; i < count; ++i) {
    Prompt p;
    const int32_t n = draw(inputLen_, rng);
    p.maxTokens = draw(outputLen_, rng);
    if (endpoint_ == Endpoint::Completions) {
      for (int32_t k = 0; k < n; ++k)
        p.ids.push_back(randomId());
      p.promptTokens = n;
      out.push_back(std::move(p));
      continue;
    }
    std::string text;
    if (tokenizer_) {
      // Random tokens as text; re-encoding may merge or split them, so trim
      // or extend until the text is n tokens again.
      std::vector<TokenId> ids;
      for (int32_t k = 0; k < n; ++k)
        ids.push_back(randomId());
      size_t got = 0;
      for (int round = 0; round < 10; ++round) {
        text = utf8::repair(tokenizer_->decode(ids, true));
        std::vector<TokenId> again = tokenizer_->encode(text);
        got = again.size();
        if (got == static_cast<size_t>(n))
          break;
        if (got > static_cast<size_t>(n)) {
          again.resize(static_cast<size_t>(n));
        } else {
          while (again.size() < static_cast<size_t>(n))
            again.push_back(randomId());
        }
        ids = std::move(again);
      }
      p.promptTokens = static_cast<int64_t>(got);
    } else {
      for (int32_t k = 0; k < n; ++k) {
        if (k)
          text += ' ';
        text += kWords[anyWord(rng)];
      }
      p.promptTokens = n;
    }
    p.messages = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
    out.push_back(std::move(p));
  }
  return out;
}

} // namespace sol::bench

//===- BpeModel.cpp - Byte-level BPE: vocabulary, merges, caching ---------===//

#include "runtime/tokenizer/BpeModel.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/ByteLevelAlphabet.h"
#include "runtime/tokenizer/StringMap.h"
#include "runtime/tokenizer/TokenizerJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <mutex>
#include <queue>

namespace sol {

//===----------------------------------------------------------------------===//
// Vocabulary: the bytes of every token in one buffer, and an open-addressing
// index from bytes to id. Loading does ~800k lookups (three per merge); a
// flat table with a hash tag avoids most cache misses of a node-based map.
//===----------------------------------------------------------------------===//

class BpeModel::Vocabulary {
public:
  enum class Kind : std::uint8_t { Unused, Bytes, Spelling };

  /// Adds `id` with `text`: raw bytes (Kind::Bytes) or, for a spelling
  /// outside the byte alphabet, the spelling itself (Kind::Spelling).
  void add(TokenId id, std::string_view text, Kind kind) {
    if (id >= kinds_.size()) {
      kinds_.resize(id + 1, Kind::Unused);
      refs_.resize(id + 1, Ref{0, 0});
    }
    if (kinds_[id] != Kind::Unused)
      --count_; // the same id twice: the later entry wins
    kinds_[id] = kind;
    refs_[id] = {static_cast<std::uint32_t>(text_.size()),
                 static_cast<std::uint32_t>(text.size())};
    text_.append(text);
    ++count_;
  }

  /// Builds the indexes; call once after the last add().
  void index() {
    const std::size_t capacity =
        std::bit_ceil(std::max<std::size_t>(16, kinds_.size() * 2));
    slots_.assign(capacity, Slot{kEmpty, 0});
    mask_ = capacity - 1;
    for (TokenId id = 0; id < kinds_.size(); ++id) {
      if (kinds_[id] == Kind::Unused)
        continue;
      const std::uint64_t h = hash(textOf(id), kinds_[id]);
      std::size_t i = h & mask_;
      for (;; i = (i + 1) & mask_) {
        if (slots_[i].id == kEmpty)
          break;
        if (slots_[i].tag == tagOf(h) && kinds_[slots_[i].id] == kinds_[id] &&
            textOf(slots_[i].id) == textOf(id))
          break; // duplicate text (a malformed file): keep the larger id
      }
      if (slots_[i].id != kEmpty && slots_[i].id != id) {
        kinds_[slots_[i].id] = Kind::Unused;
        --count_;
      }
      slots_[i] = {id, tagOf(h)};
    }
  }

  std::optional<TokenId> find(std::string_view text, Kind kind) const {
    const std::uint64_t h = hash(text, kind);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot &slot = slots_[i];
      if (slot.id == kEmpty)
        return std::nullopt;
      if (slot.tag == tagOf(h) && kinds_[slot.id] == kind &&
          textOf(slot.id) == text)
        return slot.id;
    }
  }

  Kind kindOf(TokenId id) const {
    return id < kinds_.size() ? kinds_[id] : Kind::Unused;
  }
  std::string_view textOf(TokenId id) const {
    return std::string_view(text_).substr(refs_[id].offset, refs_[id].length);
  }
  std::size_t count() const { return count_; }
  TokenId idLimit() const { return static_cast<TokenId>(kinds_.size()); }
  void reserve(std::size_t tokens, std::size_t bytes) {
    text_.reserve(bytes);
    kinds_.reserve(tokens);
    refs_.reserve(tokens);
  }

private:
  static constexpr TokenId kEmpty = ~TokenId{0};
  struct Ref {
    std::uint32_t offset, length;
  };
  struct Slot {
    TokenId id;
    std::uint32_t tag;
  };
  static std::uint64_t hash(std::string_view text, Kind kind) {
    return std::hash<std::string_view>{}(text) ^
           (kind == Kind::Spelling ? 0x9E3779B97F4A7C15ull : 0);
  }
  static std::uint32_t tagOf(std::uint64_t h) {
    return static_cast<std::uint32_t>(h >> 32);
  }

  std::string text_;
  std::vector<Kind> kinds_;
  std::vector<Ref> refs_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t count_ = 0;
};

//===----------------------------------------------------------------------===//
// MergeTable: (left id, right id) -> (rank, merged id), open addressing.
// A flat table keeps the hot lookup of the merge loop to one cache miss.
//===----------------------------------------------------------------------===//

class BpeModel::MergeTable {
public:
  explicit MergeTable(std::size_t expected) {
    // Load factor at most 2/3: linear probing stays short, the table small.
    const std::size_t capacity =
        std::bit_ceil(std::max<std::size_t>(16, expected * 3 / 2));
    slots_.assign(capacity, Slot{kEmpty, {0, 0}});
    mask_ = capacity - 1;
  }

  /// Inserts or overwrites: like HF's HashMap collect, a later duplicate wins.
  void put(TokenId left, TokenId right, Merge merge) {
    const std::uint64_t key = pack(left, right);
    for (std::size_t i = hash(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == kEmpty || slots_[i].key == key) {
        slots_[i] = {key, merge};
        return;
      }
    }
  }

  const Merge *get(TokenId left, TokenId right) const {
    const std::uint64_t key = pack(left, right);
    for (std::size_t i = hash(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key)
        return &slots_[i].merge;
      if (slots_[i].key == kEmpty)
        return nullptr;
    }
  }

private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key;
    Merge merge;
  };
  static std::uint64_t pack(TokenId left, TokenId right) {
    return (std::uint64_t{left} << 32) | right;
  }
  std::size_t hash(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) &
           mask_;
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

//===----------------------------------------------------------------------===//
// WordCache: word bytes -> ids, sharded so that threads rarely contend.
//===----------------------------------------------------------------------===//

class BpeModel::WordCache {
public:
  static constexpr std::size_t kMaxWordBytes = 256;

  bool lookup(std::string_view word, std::vector<TokenId> &out) {
    Shard &shard = shardFor(word);
    std::lock_guard<std::mutex> lock(shard.mutex);
    const auto it = shard.entries.find(word);
    if (it == shard.entries.end())
      return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }

  void store(std::string_view word, const TokenId *ids, std::size_t count) {
    Shard &shard = shardFor(word);
    std::lock_guard<std::mutex> lock(shard.mutex);
    // A full shard starts over, so a long-running server keeps caching the
    // words it sees now rather than those of its first requests.
    if (shard.entries.size() >= kEntriesPerShard)
      shard.entries.clear();
    shard.entries.emplace(std::string(word),
                          std::vector<TokenId>(ids, ids + count));
  }

private:
  static constexpr std::size_t kShards = 16;
  static constexpr std::size_t kEntriesPerShard = 8192;
  struct Shard {
    std::mutex mutex;
    StringMap<std::vector<TokenId>> entries;
  };
  Shard &shardFor(std::string_view word) {
    return shards_[StringHash{}(word) % kShards];
  }
  Shard shards_[kShards];
};

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

BpeModel::BpeModel()
    : vocab_(std::make_unique<Vocabulary>()),
      cache_(std::make_unique<WordCache>()) {}
BpeModel::BpeModel(BpeModel &&) noexcept = default;
BpeModel &BpeModel::operator=(BpeModel &&) noexcept = default;
BpeModel::~BpeModel() = default;

namespace {

constexpr TokenId kMaxVocabularyId = 1u << 24;

bool isNullOrEmptyString(const nlohmann::json &value) {
  return value.is_null() ||
         (value.is_string() && value.get_ref<const std::string &>().empty());
}

} // namespace

BpeModel BpeModel::fromJson(const TokenizerJson &file, std::string_view where) {
  const nlohmann::json &options = file.root["model"];
  if (!options.is_object())
    fail(where, ": \"model\" must be an object");
  const std::string type = options.value("type", std::string("BPE"));
  if (type != "BPE")
    fail(where, ": model type \"", type,
         "\" is not supported by Sol (only byte-level \"BPE\")");
  if (options.value("byte_fallback", false))
    fail(where, ": BPE with \"byte_fallback\": true is not supported by Sol");
  if (options.contains("dropout") && !options["dropout"].is_null() &&
      options["dropout"].get<double>() != 0.0)
    fail(where,
         ": BPE \"dropout\" must be null (it makes tokenization random)");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (options.contains(key) && !isNullOrEmptyString(options[key]))
      fail(where, ": BPE \"", key, "\" is not supported by Sol");

  BpeModel bpe;
  bpe.ignoreMerges_ = options.value("ignore_merges", false);
  bpe.fuseUnk_ = options.value("fuse_unk", false);

  Vocabulary &vocab = *bpe.vocab_;
  vocab.reserve(file.vocab.size(), file.strings.size());
  std::string raw;
  for (const auto &[ref, id] : file.vocab) {
    const std::string_view spelling = file.view(ref);
    // Ids index dense tables: refuse absurd ones rather than allocate GBs.
    if (id >= kMaxVocabularyId)
      fail(where, ": vocabulary entry \"", spelling, "\" has id ", id,
           ", larger than Sol accepts (", kMaxVocabularyId, ")");
    // A spelling outside the byte alphabet can never be produced by
    // byte-level pre-tokenization; the ByteLevel decoder emits it as is.
    if (byte_level::decodeInto(spelling, raw))
      vocab.add(id, raw, Vocabulary::Kind::Bytes);
    else
      vocab.add(id, spelling, Vocabulary::Kind::Spelling);
  }
  vocab.index();
  bpe.idOfByte_.fill(-1);
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    if (std::optional<TokenId> id =
            vocab.find(std::string_view(&byte, 1), Vocabulary::Kind::Bytes))
      bpe.idOfByte_[b] = *id;
  }

  if (options.contains("unk_token") && !options["unk_token"].is_null()) {
    const std::string unk = options["unk_token"].get<std::string>();
    bpe.unkId_ = bpe.idOfSpelling(unk);
    if (!bpe.unkId_)
      fail(where, ": BPE \"unk_token\" \"", unk, "\" is not in the vocabulary");
  }

  bpe.merges_ = std::make_unique<MergeTable>(file.merges.size());
  std::string merged;
  std::uint32_t rank = 0;
  for (const auto &[leftRef, rightRef] : file.merges) {
    const std::string_view left = file.view(leftRef),
                           right = file.view(rightRef);
    const std::optional<TokenId> leftId = bpe.idOfSpelling(left);
    const std::optional<TokenId> rightId = bpe.idOfSpelling(right);
    merged.assign(left).append(right);
    const std::optional<TokenId> mergedId = bpe.idOfSpelling(merged);
    if (!leftId || !rightId || !mergedId)
      fail(where, ": merge ", rank + 1, " (\"", left, "\" + \"", right,
           "\") uses \"",
           !leftId    ? left
           : !rightId ? right
                      : merged,
           "\", which is not in the vocabulary");
    bpe.merges_->put(*leftId, *rightId, {rank, *mergedId});
    ++rank;
  }
  return bpe;
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

void BpeModel::mergeSymbols(std::vector<TokenId> &ids) const {
  const std::size_t n = ids.size();
  if (n < 2)
    return;
  // Symbols form a doubly linked list; a merged-away symbol is marked dead.
  std::vector<std::int32_t> prev(n), next(n);
  std::vector<bool> dead(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<std::int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
  }
  struct Candidate {
    std::uint32_t rank;
    std::uint32_t pos;
    TokenId newId;
    bool operator>(const Candidate &other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (const Merge *m = merges_->get(ids[i], ids[i + 1]))
      queue.push({m->rank, static_cast<std::uint32_t>(i), m->newId});

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (dead[top.pos] || next[top.pos] < 0)
      continue;
    const auto right = static_cast<std::size_t>(next[top.pos]);
    // A stale entry is recognised as HF does: by the merged id only.
    const Merge *current = merges_->get(ids[top.pos], ids[right]);
    if (!current || current->newId != top.newId)
      continue;
    ids[top.pos] = top.newId;
    dead[right] = true;
    next[top.pos] = next[right];
    if (next[right] >= 0)
      prev[next[right]] = static_cast<std::int32_t>(top.pos);
    if (prev[top.pos] >= 0) {
      const auto left = static_cast<std::size_t>(prev[top.pos]);
      if (const Merge *m = merges_->get(ids[left], ids[top.pos]))
        queue.push({m->rank, static_cast<std::uint32_t>(left), m->newId});
    }
    if (next[top.pos] >= 0) {
      const auto after = static_cast<std::size_t>(next[top.pos]);
      if (const Merge *m = merges_->get(ids[top.pos], ids[after]))
        queue.push({m->rank, top.pos, m->newId});
    }
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!dead[i])
      ids[kept++] = ids[i];
  ids.resize(kept);
}

void BpeModel::encodeWord(std::string_view bytes,
                          std::vector<TokenId> &out) const {
  if (bytes.empty())
    return;
  if (ignoreMerges_) {
    // Llama 3: a pre-token that is itself in the vocabulary is emitted as is.
    if (std::optional<TokenId> id =
            vocab_->find(bytes, Vocabulary::Kind::Bytes)) {
      out.push_back(*id);
      return;
    }
  }
  if (bytes.size() == 1 &&
      idOfByte_[static_cast<unsigned char>(bytes[0])] >= 0) {
    out.push_back(
        static_cast<TokenId>(idOfByte_[static_cast<unsigned char>(bytes[0])]));
    return;
  }
  const bool cacheable = bytes.size() <= WordCache::kMaxWordBytes;
  if (cacheable && cache_->lookup(bytes, out))
    return;

  std::vector<TokenId> symbols;
  symbols.reserve(bytes.size());
  // A byte without a token becomes the unknown token (fused when fuse_unk);
  // without an unk_token it is dropped, as HF does.
  bool lastWasUnk = false;
  for (char c : bytes) {
    const std::int64_t id = idOfByte_[static_cast<unsigned char>(c)];
    if (id >= 0) {
      symbols.push_back(static_cast<TokenId>(id));
      lastWasUnk = false;
    } else if (unkId_) {
      if (!(fuseUnk_ && lastWasUnk))
        symbols.push_back(*unkId_);
      lastWasUnk = true;
    }
  }
  mergeSymbols(symbols);
  if (cacheable)
    cache_->store(bytes, symbols.data(), symbols.size());
  out.insert(out.end(), symbols.begin(), symbols.end());
}

//===----------------------------------------------------------------------===//
// Lookups
//===----------------------------------------------------------------------===//

std::size_t BpeModel::vocabSize() const { return vocab_->count(); }
TokenId BpeModel::idLimit() const { return vocab_->idLimit(); }

std::optional<TokenId> BpeModel::idOfSpelling(std::string_view spelling) const {
  thread_local std::string raw;
  if (byte_level::decodeInto(spelling, raw))
    return vocab_->find(raw, Vocabulary::Kind::Bytes);
  return vocab_->find(spelling, Vocabulary::Kind::Spelling);
}

std::optional<std::string> BpeModel::spellingOf(TokenId id) const {
  switch (vocab_->kindOf(id)) {
  case Vocabulary::Kind::Unused:
    return std::nullopt;
  case Vocabulary::Kind::Spelling:
    return std::string(vocab_->textOf(id));
  case Vocabulary::Kind::Bytes:
    break;
  }
  return byte_level::encode(vocab_->textOf(id));
}

std::string_view BpeModel::bytesOf(TokenId id) const {
  if (vocab_->kindOf(id) == Vocabulary::Kind::Unused)
    return {};
  return vocab_->textOf(id);
}

} // namespace sol

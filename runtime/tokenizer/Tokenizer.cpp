//===- Tokenizer.cpp - Hugging Face byte-level BPE tokenizers -------------===//

#include "runtime/tokenizer/Tokenizer.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/AddedVocabulary.h"
#include "runtime/tokenizer/BpeModel.h"
#include "runtime/tokenizer/ByteLevelAlphabet.h"
#include "runtime/tokenizer/Normalizer.h"
#include "runtime/tokenizer/PostProcessor.h"
#include "runtime/tokenizer/PreTokenizer.h"
#include "runtime/tokenizer/TokenizerJson.h"
#include "runtime/support/Utf8.h"

#include <nlohmann/json.hpp>

#include <deque>
#include <fstream>
#include <sstream>

namespace sol {

struct Tokenizer::Impl {
  Impl(BpeModel model, Normalizer normalizer, PreTokenizer preTokenizer,
       PostProcessor postProcessor)
      : model(std::move(model)), normalizer(std::move(normalizer)),
        preTokenizer(std::move(preTokenizer)),
        postProcessor(std::move(postProcessor)) {}

  BpeModel model;
  Normalizer normalizer;
  PreTokenizer preTokenizer;
  PostProcessor postProcessor;
  AddedVocabulary added;
  // By id: the bytes the ByteLevel decoder produces for an added token.
  std::vector<std::string> addedBytes;
  std::vector<bool> isAddedId;
  std::vector<bool> isSpecialId;
  std::size_t size = 0;
  std::optional<std::string> bosToken, eosToken;
  std::optional<TokenId> bosId, eosId;
  std::optional<bool> addBosToken;

  void encodeText(std::string_view text, std::vector<TokenId> &out) const;
  void encodeNormalized(std::string_view text, std::vector<TokenId> &out) const;
};

namespace {

// Ids index dense tables: refuse absurd ones rather than allocate gigabytes.
constexpr std::uint64_t kMaxTokenId = 1u << 24;

nlohmann::json parseJson(std::string_view text, std::string_view where) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error &e) {
    fail(where, ": not valid JSON: ", e.what());
  }
}

std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open ", path.string(), " for reading");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    fail("error while reading ", path.string());
  return std::move(contents).str();
}

bool flag(const nlohmann::json &object, const char *key, bool fallback,
          std::string_view where) {
  if (!object.contains(key))
    return fallback;
  if (!object[key].is_boolean())
    fail(where, ": added token field \"", key, "\" must be true or false");
  return object[key].get<bool>();
}

/// The ByteLevel decoder's bytes for a token string: the bytes its
/// characters stand for, or its own UTF-8 when one is outside the alphabet.
std::string byteLevelDecoded(const std::string &token) {
  if (std::optional<std::string> raw = byte_level::decode(token))
    return std::move(*raw);
  return token;
}

/// A token name in tokenizer_config.json: "text", {"content": "text"}, null.
std::optional<std::string> configTokenName(const nlohmann::json &config,
                                           const char *key,
                                           std::string_view where) {
  if (!config.contains(key) || config[key].is_null())
    return std::nullopt;
  const nlohmann::json &value = config[key];
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_object() && value.contains("content") &&
      value["content"].is_string())
    return value["content"].get<std::string>();
  fail(where, ": \"", key, "\" must be a string, {\"content\": ...} or null");
}

void checkDecoder(const nlohmann::json &decoder, std::string_view where) {
  if (decoder.is_object() && decoder.value("type", "") == "ByteLevel")
    return;
  if (decoder.is_object() && decoder.value("type", "") == "Sequence" &&
      decoder.contains("decoders") && decoder["decoders"].is_array()) {
    for (const nlohmann::json &child : decoder["decoders"])
      checkDecoder(child, where);
    if (!decoder["decoders"].empty())
      return;
  }
  fail(where, ": decoder ",
       decoder.is_null() ? std::string("null") : decoder.dump().substr(0, 80),
       " is not supported by Sol (byte-level BPE needs a ByteLevel decoder)");
}

} // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;
Tokenizer &Tokenizer::operator=(Tokenizer &&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::fromJson(std::string_view tokenizerJson,
                              std::string_view configJson,
                              std::string_view sourceName) {
  const std::string where(sourceName);
  TokenizerJson file = readTokenizerJson(tokenizerJson, where);
  const nlohmann::json &root = file.root;
  if (!root.is_object())
    fail(where, ": expected a JSON object at the top level");
  if (!root.contains("model") || !root["model"].is_object())
    fail(where, ": has no \"model\" object; is this a Hugging Face "
                "tokenizer.json?");
  // Well-formed vocab and merges were streamed out of the DOM; what is left
  // there has the wrong type.
  if (!file.hasVocab)
    fail(where, ": model.vocab must be an object of token -> id");
  if (!file.hasMerges)
    fail(where, ": model.merges must be an array");

  const nlohmann::json null;
  auto impl = std::make_unique<Impl>(
      BpeModel::fromJson(file, where),
      Normalizer::fromJson(root.value("normalizer", null), where),
      PreTokenizer::fromJson(root.value("pre_tokenizer", null), where),
      PostProcessor::fromJson(root.value("post_processor", null), where));
  checkDecoder(root.value("decoder", null), where);

  Impl &t = *impl;
  std::size_t idLimit = t.model.idLimit();
  std::size_t overlapping = 0;
  if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
    if (!root["added_tokens"].is_array())
      fail(where, ": \"added_tokens\" must be an array");
    for (const nlohmann::json &entry : root["added_tokens"]) {
      if (!entry.is_object() || !entry.contains("content") ||
          !entry["content"].is_string() || !entry.contains("id") ||
          !entry["id"].is_number_unsigned())
        fail(where, ": each added token needs a string \"content\" and an "
                    "integer \"id\"");
      AddedToken token;
      token.content = entry["content"].get<std::string>();
      if (token.content.empty())
        continue; // HF ignores empty added tokens
      if (entry["id"].get<std::uint64_t>() >= kMaxTokenId)
        fail(where, ": added token \"", token.content, "\" has id ",
             entry["id"].get<std::uint64_t>(), ", larger than Sol accepts (",
             kMaxTokenId, ")");
      token.special = flag(entry, "special", false, where);
      token.singleWord = flag(entry, "single_word", false, where);
      token.lstrip = flag(entry, "lstrip", false, where);
      token.rstrip = flag(entry, "rstrip", false, where);
      token.normalized = flag(entry, "normalized", !token.special, where);
      if (!utf8::isValid(token.content))
        fail(where, ": added token ", entry["id"].get<TokenId>(),
             " is not valid UTF-8");
      // Like HF, a content already in the vocabulary keeps the vocabulary id.
      const std::optional<TokenId> existing =
          t.model.idOfSpelling(token.content);
      token.id = existing ? *existing : entry["id"].get<TokenId>();
      if (existing)
        ++overlapping;
      // A normalized token is searched for, and decoded, in normalized form.
      std::string surface = token.normalized
                                ? t.normalizer.normalize(token.content)
                                : token.content;
      idLimit = std::max<std::size_t>(idLimit, token.id + 1);
      if (t.addedBytes.size() < idLimit) {
        t.addedBytes.resize(idLimit);
        t.isAddedId.resize(idLimit, false);
        t.isSpecialId.resize(idLimit, false);
      }
      t.addedBytes[token.id] = byteLevelDecoded(surface);
      t.isAddedId[token.id] = true;
      t.isSpecialId[token.id] = token.special;
      t.added.add(std::move(token), std::move(surface));
    }
  }
  t.addedBytes.resize(idLimit);
  t.isAddedId.resize(idLimit, false);
  t.isSpecialId.resize(idLimit, false);
  t.size = t.model.vocabSize() + t.added.tokens().size() - overlapping;

  Tokenizer tokenizer(std::move(impl));
  if (!configJson.empty()) {
    const std::string configWhere = "tokenizer_config.json";
    const nlohmann::json config = parseJson(configJson, configWhere);
    if (!config.is_object())
      fail(configWhere, ": expected a JSON object at the top level");
    Impl &c = *tokenizer.impl_;
    c.bosToken = configTokenName(config, "bos_token", configWhere);
    c.eosToken = configTokenName(config, "eos_token", configWhere);
    for (auto [name, id, key] :
         {std::tuple{&c.bosToken, &c.bosId, "bos_token"},
          std::tuple{&c.eosToken, &c.eosId, "eos_token"}}) {
      if (!*name)
        continue;
      *id = tokenizer.tokenToId(**name);
      if (!*id)
        fail(configWhere, ": ", key, " \"", **name, "\" is not a token of ",
             where);
    }
    if (config.contains("add_bos_token") &&
        config["add_bos_token"].is_boolean())
      c.addBosToken = config["add_bos_token"].get<bool>();
  }
  return tokenizer;
}

Tokenizer
Tokenizer::fromFiles(const std::filesystem::path &tokenizerJson,
                     const std::optional<std::filesystem::path> &configJson) {
  const std::string text = readFile(tokenizerJson);
  const std::string config = configJson ? readFile(*configJson) : std::string();
  if (configJson && config.empty())
    fail(configJson->string(), ": file is empty");
  return fromJson(text, config, tokenizerJson.string());
}

Tokenizer Tokenizer::fromDirectory(const std::filesystem::path &directory) {
  const std::filesystem::path tokenizerJson = directory / "tokenizer.json";
  if (!std::filesystem::exists(tokenizerJson))
    fail(directory.string(), ": no tokenizer.json in this directory");
  const std::filesystem::path config = directory / "tokenizer_config.json";
  return fromFiles(tokenizerJson,
                   std::filesystem::exists(config)
                       ? std::optional<std::filesystem::path>(config)
                       : std::nullopt);
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

void Tokenizer::Impl::encodeNormalized(std::string_view text,
                                       std::vector<TokenId> &out) const {
  struct ToModel final : PreTokenizer::Sink {
    ToModel(const BpeModel &model, std::vector<TokenId> &out)
        : model(model), out(out) {}
    void piece(std::string_view word) override { model.encodeWord(word, out); }
    const BpeModel &model;
    std::vector<TokenId> &out;
  } toModel(model, out);
  std::deque<std::string> arena;
  preTokenizer.split(text, arena, toModel);
}

void Tokenizer::Impl::encodeText(std::string_view text,
                                 std::vector<TokenId> &out) const {
  std::vector<AddedVocabulary::Piece> rawPieces;
  added.split(text, /*fromNormalized=*/false, rawPieces);
  std::vector<AddedVocabulary::Piece> normalizedPieces;
  for (const AddedVocabulary::Piece &piece : rawPieces) {
    if (piece.id) {
      out.push_back(*piece.id);
      continue;
    }
    const std::string_view slice =
        text.substr(piece.begin, piece.end - piece.begin);
    if (normalizer.isIdentity() && !added.hasNormalizedTokens()) {
      encodeNormalized(slice, out);
      continue;
    }
    const std::string normalized = normalizer.normalize(slice);
    normalizedPieces.clear();
    added.split(normalized, /*fromNormalized=*/true, normalizedPieces);
    for (const AddedVocabulary::Piece &inner : normalizedPieces) {
      if (inner.id)
        out.push_back(*inner.id);
      else
        encodeNormalized(std::string_view(normalized)
                             .substr(inner.begin, inner.end - inner.begin),
                         out);
    }
  }
}

std::vector<TokenId> Tokenizer::encode(std::string_view text,
                                       bool addSpecialTokens) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  if (utf8::isValid(text)) {
    impl_->encodeText(text, ids);
  } else {
    const std::string repaired = utf8::repair(text);
    impl_->encodeText(repaired, ids);
  }
  if (addSpecialTokens)
    impl_->postProcessor.addSpecialTokens(ids);
  return ids;
}

//===----------------------------------------------------------------------===//
// Decoding and lookups
//===----------------------------------------------------------------------===//

std::string_view Tokenizer::tokenBytes(TokenId id) const {
  if (id < impl_->isAddedId.size() && impl_->isAddedId[id])
    return impl_->addedBytes[id];
  return impl_->model.bytesOf(id);
}

std::string Tokenizer::decode(std::span<const TokenId> ids,
                              bool skipSpecialTokens) const {
  std::string bytes;
  bytes.reserve(ids.size() * 4);
  for (TokenId id : ids) {
    if (skipSpecialTokens && isSpecial(id))
      continue;
    bytes.append(tokenBytes(id));
  }
  if (utf8::isValid(bytes))
    return bytes;
  return utf8::repair(bytes);
}

std::size_t Tokenizer::vocabSize() const { return impl_->model.vocabSize(); }
std::size_t Tokenizer::size() const { return impl_->size; }

std::optional<TokenId> Tokenizer::tokenToId(std::string_view token) const {
  if (std::optional<TokenId> id = impl_->added.idOf(token))
    return id;
  return impl_->model.idOfSpelling(token);
}

std::optional<std::string> Tokenizer::idToToken(TokenId id) const {
  if (const AddedToken *token = impl_->added.find(id))
    return token->content;
  return impl_->model.spellingOf(id);
}

bool Tokenizer::isSpecial(TokenId id) const {
  return id < impl_->isSpecialId.size() && impl_->isSpecialId[id];
}

bool Tokenizer::isAdded(TokenId id) const {
  return id < impl_->isAddedId.size() && impl_->isAddedId[id];
}

const std::optional<std::string> &Tokenizer::bosToken() const {
  return impl_->bosToken;
}
const std::optional<std::string> &Tokenizer::eosToken() const {
  return impl_->eosToken;
}
std::optional<TokenId> Tokenizer::bosTokenId() const { return impl_->bosId; }
std::optional<TokenId> Tokenizer::eosTokenId() const { return impl_->eosId; }
std::optional<bool> Tokenizer::configAddBosToken() const {
  return impl_->addBosToken;
}
const std::vector<TokenId> &Tokenizer::specialPrefix() const {
  return impl_->postProcessor.prefix();
}
const std::vector<TokenId> &Tokenizer::specialSuffix() const {
  return impl_->postProcessor.suffix();
}

} // namespace sol

//===- TextModel.cpp - A model's tokenizer and chat template --------------===//
#include "runtime/engine/TextModel.h"

#include "runtime/chat/TokenizerConfigFile.h"

#include "runtime/support/Error.h"

namespace sol {

namespace {

std::optional<ChatTemplate> chatTemplateOf(std::string_view configJson,
                                           std::string_view origin) {
  if (configJson.empty() ||
      configJson.find("\"chat_template\"") == std::string_view::npos)
    return std::nullopt;
  return ChatTemplate::fromTokenizerConfig(configJson, origin);
}

} // namespace

TextModel TextModel::fromPlan(const PlanFile &plan) {
  auto bytes = [&](const fb::Section *s) {
    auto span = plan.section(s);
    return std::string_view(reinterpret_cast<const char *>(span.data()),
                            span.size());
  };
  std::string_view tokenizerJson = bytes(plan.plan().tokenizer_json());
  std::string_view configJson = bytes(plan.plan().tokenizer_config_json());
  if (tokenizerJson.empty())
    fail(plan.path().string(),
         ": the plan has no tokenizer (its checkpoint had no tokenizer.json); "
         "use --prompt-ids, or copy tokenizer.json and tokenizer_config.json "
         "into the checkpoint and run solc again");
  std::string origin = plan.path().string() + " (tokenizer.json)";
  return {Tokenizer::fromJson(tokenizerJson, configJson, origin),
          chatTemplateOf(configJson,
                         plan.path().string() + " (tokenizer_config.json)")};
}

TextModel TextModel::fromDirectory(const std::filesystem::path &dir) {
  if (!std::filesystem::exists(dir / "tokenizer.json"))
    fail(dir.string(), ": no tokenizer.json in this directory");
  const std::string config = readTokenizerConfig(dir).value_or("");
  return {Tokenizer::fromDirectory(dir),
          chatTemplateOf(config, (dir / "tokenizer_config.json").string())};
}

TextModel TextModel::load(const std::filesystem::path &path) {
  if (std::filesystem::is_directory(path))
    return fromDirectory(path);
  return fromPlan(PlanFile::open(path));
}

} // namespace sol

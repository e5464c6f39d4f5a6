//===- ChatTemplate.cpp - Render chat requests to prompt text -------------===//

#include "runtime/chat/ChatTemplate.h"

#include "runtime/chat/PyJson.h"
#include "runtime/chat/PyStr.h"
#include "runtime/chat/Template.h"
#include "runtime/support/Error.h"

#include <fstream>
#include <sstream>

namespace sol {
namespace {

/// The special tokens Transformers puts in special_tokens_map.
constexpr const char *kSpecialTokenNames[] = {
    "bos_token", "eos_token", "unk_token", "sep_token",
    "pad_token", "cls_token", "mask_token"};

/// A special token is a string or an AddedToken object {"content": ...}.
std::optional<std::string> tokenText(const nlohmann::ordered_json &value) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_object() && value.contains("content") &&
      value["content"].is_string())
    return value["content"].get<std::string>();
  return std::nullopt;
}

/// Python truthiness of a JSON value, as `if add_generation_prompt:` sees it.
bool valueIsTrue(const nlohmann::ordered_json &value) {
  return jinja::valueFromJson(value).truthy();
}

std::shared_ptr<const jinja::Template> compile(std::string_view source,
                                               std::string_view origin) {
  try {
    return std::make_shared<const jinja::Template>(source);
  } catch (const Error &e) {
    fail(origin, ": ", e.what());
  }
}

} // namespace

ChatTemplate::ChatTemplate(
    std::string_view templateSource,
    const std::map<std::string, std::string> &specialTokens,
    std::string_view origin)
    : origin_(origin), specialTokens_(specialTokens) {
  templates_["default"] = compile(templateSource, origin);
}

ChatTemplate ChatTemplate::fromTokenizerConfig(std::string_view configJson,
                                               std::string_view origin) {
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(configJson);
  } catch (const nlohmann::json::exception &e) {
    fail(origin, ": not valid JSON: ", e.what());
  }
  if (!config.is_object())
    fail(origin, ": expected a JSON object");
  ChatTemplate result;
  result.origin_ = std::string(origin);
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null())
    fail(origin, ": has no \"chat_template\"; this tokenizer has no chat "
                 "format (use a raw prompt, or pass a template explicitly)");
  if (it->is_string()) {
    result.templates_["default"] =
        compile(it->get<std::string>(), cat(origin, " chat_template"));
  } else if (it->is_array()) {
    for (const auto &entry : *it) {
      if (!entry.is_object() || !entry.contains("name") ||
          !entry.contains("template") || !entry["name"].is_string() ||
          !entry["template"].is_string())
        fail(origin, ": \"chat_template\" list entries must be objects with "
                     "string \"name\" and \"template\"");
      std::string name = entry["name"].get<std::string>();
      result.templates_[name] =
          compile(entry["template"].get<std::string>(),
                  cat(origin, " chat_template '", name, "'"));
    }
  } else {
    fail(origin, ": \"chat_template\" must be a string or a list of named "
                 "templates");
  }
  for (const char *name : kSpecialTokenNames)
    if (auto found = config.find(name); found != config.end())
      if (auto text = tokenText(*found))
        result.specialTokens_[name] = *text;
  return result;
}

ChatTemplate ChatTemplate::fromTokenizerConfigFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open tokenizer config '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  return fromTokenizerConfig(text.str(), path);
}

std::string ChatTemplate::render(const nlohmann::json &request) const {
  return render(nlohmann::ordered_json(request));
}

std::string ChatTemplate::render(const nlohmann::ordered_json &request) const {
  if (!request.is_object())
    fail("chat request must be a JSON object with a \"messages\" array");
  auto messages = request.find("messages");
  if (messages == request.end() || !messages->is_array())
    fail("chat request has no \"messages\" array");
  if (messages->empty())
    fail("chat request has an empty \"messages\" array");

  bool hasTools = request.contains("tools") && !request["tools"].is_null();
  // Transformers picks the "tool_use" template when tools are given and the
  // tokenizer has one, else "default".
  const char *templateName =
      hasTools && templates_.count("tool_use") ? "tool_use" : "default";
  auto chosen = templates_.find(templateName);
  if (chosen == templates_.end())
    fail(origin_, ": has named chat templates but none called \"default\"");

  jinja::DictData variables;
  for (const auto &[name, text] : specialTokens_)
    variables.set(name, jinja::Value(text));
  variables.set("tools", jinja::Value::none());
  variables.set("documents", jinja::Value::none());
  variables.set("add_generation_prompt", jinja::Value(false));
  bool continueFinal = false;
  for (const auto &[key, value] : request.items()) {
    if (key == "continue_final_message") {
      continueFinal = valueIsTrue(value);
      continue;
    }
    variables.set(key, jinja::valueFromJson(value));
  }
  auto generationPrompt = request.find("add_generation_prompt");
  if (continueFinal && generationPrompt != request.end() &&
      valueIsTrue(*generationPrompt))
    fail("chat request sets both continue_final_message and "
         "add_generation_prompt; continue_final_message continues the final "
         "message, add_generation_prompt starts a new one");

  std::string rendered;
  try {
    rendered = chosen->second->render(variables);
  } catch (const Error &e) {
    fail(origin_, ": ", e.what());
  }
  if (!continueFinal)
    return rendered;

  // Transformers cuts the output right after the final message's content.
  const auto &last = messages->back();
  if (!last.is_object() || !last.contains("content") ||
      !last["content"].is_string())
    fail("continue_final_message needs the final message's \"content\" to be "
         "a string");
  std::string content = last["content"].get<std::string>();
  std::string stripped = jinja::py::strip(content, std::nullopt);
  size_t at = rendered.rfind(stripped);
  if (at == std::string::npos)
    fail("continue_final_message is set but the final message does not "
         "appear in the rendered chat template");
  std::string leftStripped =
      jinja::py::strip(content, std::nullopt, true, false);
  if (rendered.substr(at, leftStripped.size()) == content)
    return rendered.substr(0, at + leftStripped.size());
  return rendered.substr(0, at + stripped.size());
}

} // namespace sol

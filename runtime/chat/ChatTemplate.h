//===- ChatTemplate.h - Render chat requests to prompt text -----*- C++ -*-===//
//
// sol::ChatTemplate turns an OpenAI-style chat request into the prompt text
// a model was trained on, byte for byte what Hugging Face Transformers'
//   tokenizer.apply_chat_template(messages, tools=tools,
//       add_generation_prompt=..., tokenize=False, **extra)
// returns. It runs the model's Jinja `chat_template` (from
// tokenizer_config.json) on Sol's own Jinja interpreter, configured as
// Transformers configures Jinja2: ImmutableSandboxedEnvironment with
// trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, the
// loopcontrols extension (break/continue), Transformers' {% generation %}
// tag, tojson = json.dumps(x, ensure_ascii=False, ...) and the globals
// raise_exception(msg) and strftime_now(fmt).
//
// Template variables, as Transformers passes them:
//   messages, tools (None when absent), documents (None when absent),
//   add_generation_prompt (False when absent), the tokenizer's special
//   tokens (bos_token, eos_token, ... as strings; absent when null), and
//   every other key of the request (e.g. enable_thinking), which override
//   special tokens of the same name.
// "continue_final_message": true is handled as Transformers does (the
// output is cut after the final message's content) and is not a variable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace sol {
namespace jinja {
class Template;
struct DictData;
} // namespace jinja

class ChatTemplate {
public:
  /// Builds from the text of a tokenizer_config.json: its `chat_template`
  /// (a string, or a list of {"name", "template"} of which "default" and
  /// "tool_use" are used) and its special tokens. `origin` names the file
  /// in error messages.
  static ChatTemplate
  fromTokenizerConfig(std::string_view configJson,
                      std::string_view origin = "tokenizer_config.json");

  /// Reads and parses a tokenizer_config.json file.
  static ChatTemplate fromTokenizerConfigFile(const std::string &path);

  /// Builds from a raw template string; `specialTokens` maps names such as
  /// "bos_token" to their text.
  explicit ChatTemplate(
      std::string_view templateSource,
      const std::map<std::string, std::string> &specialTokens = {},
      std::string_view origin = "chat template");

  /// Renders a request {"messages": [...], "tools": [...],
  /// "add_generation_prompt": bool, ...extra kwargs}. Parse requests with
  /// nlohmann::ordered_json so tool schemas keep their key order (Python
  /// dicts do, and tojson prints them in that order).
  std::string render(const nlohmann::ordered_json &request) const;

  /// Same, for a request parsed with nlohmann::json. Its objects have
  /// sorted keys, so tojson output may differ from Transformers' when the
  /// request's key order was not sorted.
  std::string render(const nlohmann::json &request) const;

  /// Special tokens the template sees (name -> text).
  const std::map<std::string, std::string> &specialTokens() const {
    return specialTokens_;
  }

private:
  ChatTemplate() = default;

  std::string origin_;
  std::map<std::string, std::shared_ptr<const jinja::Template>> templates_;
  std::map<std::string, std::string> specialTokens_;
};

} // namespace sol

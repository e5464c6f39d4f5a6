//===- TokenizerConfigFile.h - A directory's tokenizer config -*- C++ -*-===//
//
// Checkpoints saved by recent Transformers keep the chat template beside
// tokenizer_config.json, in chat_template.jinja (and named ones in
// additional_chat_templates/<name>.jinja), and Transformers lets those files
// take priority over the config's "chat_template". Sol reads one tokenizer
// config, so the files are merged into it here, once, for the compiler and
// for solrun's model directories alike.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace sol {

/// `dir`'s tokenizer_config.json with its chat template files merged in:
/// chat_template.jinja alone becomes "chat_template"; with named templates
/// from additional_chat_templates/, "chat_template" becomes the list of
/// {"name", "template"} objects (chat_template.jinja as "default"). The file
/// unchanged when there are no template files; nullopt when there is
/// neither a config nor a template file. sol::Error naming the file for one
/// that cannot be read or is not a JSON object.
std::optional<std::string>
readTokenizerConfig(const std::filesystem::path &dir);

} // namespace sol

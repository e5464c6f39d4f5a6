//===- TokenizerConfigFile.cpp - A directory's tokenizer config ----------===//
#include "runtime/chat/TokenizerConfigFile.h"

#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

namespace sol {
namespace {

std::string readFile(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    fail("cannot read ", p.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

} // namespace

std::optional<std::string>
readTokenizerConfig(const std::filesystem::path &dir) {
  const std::filesystem::path configPath = dir / "tokenizer_config.json";
  std::optional<std::string> text;
  if (std::filesystem::exists(configPath))
    text = readFile(configPath);
  // The template files, "default" first, then by name.
  std::vector<std::pair<std::string, std::string>> templates;
  if (std::filesystem::exists(dir / "chat_template.jinja"))
    templates.emplace_back("default", readFile(dir / "chat_template.jinja"));
  const std::filesystem::path extra = dir / "additional_chat_templates";
  if (std::filesystem::is_directory(extra)) {
    std::vector<std::filesystem::path> files;
    for (const auto &entry : std::filesystem::directory_iterator(extra))
      if (entry.is_regular_file() && entry.path().extension() == ".jinja")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path &f : files)
      templates.emplace_back(f.stem().string(), readFile(f));
  }
  if (templates.empty())
    return text;
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (text) {
    try {
      config = nlohmann::ordered_json::parse(*text);
    } catch (const nlohmann::json::exception &e) {
      fail(configPath.string(), ": not valid JSON: ", e.what());
    }
    if (!config.is_object())
      fail(configPath.string(), ": expected a JSON object");
  }
  if (templates.size() == 1 && templates[0].first == "default") {
    config["chat_template"] = templates[0].second;
  } else {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto &[name, source] : templates)
      list.push_back({{"name", name}, {"template", source}});
    config["chat_template"] = std::move(list);
  }
  return config.dump();
}

} // namespace sol

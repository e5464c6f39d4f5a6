//===- PostProcessor.cpp - The `post_processor` of tokenizer.json ---------===//

#include "runtime/tokenizer/PostProcessor.h"

#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

namespace sol {
namespace {

/// The id of a ["token", id] pair (Roberta/Bert "cls" and "sep").
TokenId pairId(const nlohmann::json &value, std::string_view where,
               std::string_view name) {
  if (!value.is_array() || value.size() != 2 || !value[1].is_number_unsigned())
    fail(where, ": post_processor \"", name, "\" must be [\"token\", id]");
  return value[1].get<TokenId>();
}

} // namespace

PostProcessor PostProcessor::fromJson(const nlohmann::json &value,
                                      std::string_view where) {
  PostProcessor processor;
  if (!value.is_null())
    processor.parse(value, where);
  return processor;
}

void PostProcessor::parse(const nlohmann::json &value, std::string_view where) {
  if (!value.is_object() || !value.contains("type") ||
      !value["type"].is_string())
    fail(where, ": a post_processor must be an object with a string \"type\"");
  const std::string type = value["type"].get<std::string>();
  if (type == "Sequence") {
    if (!value.contains("processors") || !value["processors"].is_array())
      fail(where, ": post_processor Sequence needs a \"processors\" array");
    for (const nlohmann::json &child : value["processors"])
      parse(child, where);
  } else if (type == "ByteLevel") {
    // Only trims offsets.
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    // A later processor wraps the result of an earlier one.
    prefix_.insert(prefix_.begin(),
                   pairId(value.value("cls", nlohmann::json()), where, "cls"));
    suffix_.push_back(
        pairId(value.value("sep", nlohmann::json()), where, "sep"));
  } else if (type == "TemplateProcessing") {
    if (!value.contains("single") || !value["single"].is_array())
      fail(where, ": TemplateProcessing needs a \"single\" array");
    const nlohmann::json specials =
        value.value("special_tokens", nlohmann::json::object());
    std::vector<TokenId> before, after;
    bool sawSequence = false;
    for (const nlohmann::json &item : value["single"]) {
      if (item.contains("Sequence")) {
        if (sawSequence)
          fail(where, ": TemplateProcessing \"single\" has two sequences");
        sawSequence = true;
        continue;
      }
      if (!item.contains("SpecialToken") ||
          !item["SpecialToken"].contains("id"))
        fail(where,
             ": TemplateProcessing items must be Sequence or SpecialToken");
      const std::string name = item["SpecialToken"]["id"].get<std::string>();
      if (!specials.contains(name) || !specials[name].contains("ids") ||
          !specials[name]["ids"].is_array())
        fail(where, ": TemplateProcessing uses special token \"", name,
             "\", which \"special_tokens\" does not define");
      for (const nlohmann::json &id : specials[name]["ids"])
        (sawSequence ? after : before).push_back(id.get<TokenId>());
    }
    if (!sawSequence)
      fail(where, ": TemplateProcessing \"single\" has no Sequence");
    prefix_.insert(prefix_.begin(), before.begin(), before.end());
    suffix_.insert(suffix_.end(), after.begin(), after.end());
  } else {
    fail(
        where, ": post_processor type \"", type,
        "\" is not supported by Sol (supported: TemplateProcessing, ByteLevel, "
        "RobertaProcessing, BertProcessing, Sequence)");
  }
}

void PostProcessor::addSpecialTokens(std::vector<TokenId> &ids) const {
  if (prefix_.empty() && suffix_.empty())
    return;
  ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
  ids.insert(ids.end(), suffix_.begin(), suffix_.end());
}

} // namespace sol

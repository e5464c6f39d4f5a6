//===- TokenizerTool.cpp - solrun --tokenizer: prompts for debugging ------===//
#include "tools/solrun/TokenizerTool.h"

#include "runtime/engine/TextModel.h"
#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <iterator>

namespace sol {

namespace {

std::vector<TokenId> idsFrom(const nlohmann::json &j) {
  if (!j.is_array())
    fail("--decode expects a JSON array of token ids, got ", j.type_name());
  std::vector<TokenId> ids;
  for (const auto &v : j) {
    if (!v.is_number_integer())
      fail("--decode expects integer token ids, got ", v.dump());
    ids.push_back(v.get<TokenId>());
  }
  return ids;
}

/// One request -> one result, as JSON (jsonl) or raw text.
std::string process(const TextModel &model, const TokenizerToolOptions &o,
                    const std::string &input, bool jsonl) {
  if (o.encode) {
    std::string text =
        jsonl ? nlohmann::json::parse(input).get<std::string>() : input;
    return nlohmann::json(model.tokenizer.encode(text, o.addSpecialTokens))
        .dump();
  }
  if (o.decode) {
    std::string text = model.tokenizer.decode(
        idsFrom(nlohmann::json::parse(input)), o.skipSpecialTokens);
    return jsonl ? nlohmann::json(text).dump(
                       -1, ' ', false, nlohmann::json::error_handler_t::replace)
                 : text;
  }
  if (!model.chatTemplate)
    fail(o.source, ": no chat template (no chat_template in "
                   "tokenizer_config.json, no chat_template.jinja beside it)");
  std::string rendered =
      model.chatTemplate->render(nlohmann::ordered_json::parse(input));
  return jsonl ? nlohmann::json(rendered).dump(
                     -1, ' ', false, nlohmann::json::error_handler_t::replace)
               : rendered;
}

} // namespace

int runTokenizerTool(const TokenizerToolOptions &o) {
  if (int(o.encode) + int(o.decode) + int(o.renderChat) != 1)
    fail("--tokenizer needs exactly one of --encode, --decode, --render-chat");
  TextModel model = TextModel::load(o.source);
  if (!o.jsonl) {
    std::string input{std::istreambuf_iterator<char>(std::cin), {}};
    try {
      std::cout << process(model, o, input, false) << "\n";
    } catch (const nlohmann::json::exception &e) {
      fail("invalid JSON on standard input: ", e.what());
    }
    return 0;
  }
  // A bad line gets an {"error": ...} line of its own; the others go on.
  std::string line;
  int lineNo = 0, failed = 0;
  while (std::getline(std::cin, line)) {
    ++lineNo;
    std::string error;
    try {
      std::cout << process(model, o, line, true) << "\n";
      continue;
    } catch (const nlohmann::json::exception &e) {
      error = cat("line ", lineNo, ": invalid JSON: ", e.what());
    } catch (const Error &e) {
      error = cat("line ", lineNo, ": ", e.what());
    }
    ++failed;
    std::cout << nlohmann::json{{"error", error}}.dump() << "\n";
  }
  if (failed)
    std::cerr << "solrun: " << failed << " of " << lineNo << " lines failed\n";
  return failed ? 1 : 0;
}

} // namespace sol

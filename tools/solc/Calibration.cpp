//===- Calibration.cpp - solc's calibration tokens ------------------------===//
#include "tools/solc/Calibration.h"

#include "runtime/support/Error.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>

namespace sol {

/// data/calibration/brown.txt, compiled in (CalibrationText.cpp, generated).
extern const std::string_view kDefaultCalibrationText;

namespace {

/// The text of `path`: the whole file, or for JSON Lines (".jsonl") the
/// "text" field of every line, joined by blank lines.
std::string readCalibrationText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot read the calibration file ", path);
  if (!path.ends_with(".jsonl")) {
    std::ostringstream all;
    all << in.rdbuf();
    return all.str();
  }
  std::string text, line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception &e) {
      fail(path, ":", number, ": not a JSON object (", e.what(), ")");
    }
    if (!record.is_object() || !record.contains("text") ||
        !record["text"].is_string())
      fail(path, ":", number,
           ": each line must be a JSON object with a string \"text\"");
    if (!text.empty())
      text += "\n\n";
    text += record["text"].get<std::string>();
  }
  return text;
}

} // namespace

std::vector<std::vector<int32_t>>
calibrationSequences(const ModelAssets &assets, const std::string &path,
                     int64_t maxTokens, int64_t sequenceLength, bool quiet) {
  if (!assets.tokenizerJson)
    fail("calibration needs the model's tokenizer (tokenizer.json beside "
         "config.json)");
  const Tokenizer tokenizer = Tokenizer::fromJson(
      *assets.tokenizerJson, assets.tokenizerConfigJson.value_or(""));
  const std::string text = path.empty() ? std::string(kDefaultCalibrationText)
                                        : readCalibrationText(path);
  const std::vector<TokenId> ids = tokenizer.encode(text);
  const std::string source = path.empty() ? "the built-in calibration text"
                                          : "calibration file " + path;
  const int64_t available = static_cast<int64_t>(ids.size()) / sequenceLength;
  if (available == 0)
    fail(source, " has ", ids.size(), " tokens, fewer than one sequence of ",
         sequenceLength);
  const int64_t count = std::min(available, maxTokens / sequenceLength);
  if (count == 0)
    fail("--calib-tokens ", maxTokens, " is less than one sequence of ",
         sequenceLength, " tokens");
  if (count * sequenceLength < maxTokens && !quiet)
    std::cerr << "solc: note: " << source << " has " << ids.size()
              << " tokens; calibrating on " << count * sequenceLength << " ("
              << count << " sequences of " << sequenceLength << ") rather than "
              << maxTokens << "\n";
  std::vector<std::vector<int32_t>> sequences(static_cast<size_t>(count));
  for (int64_t s = 0; s < count; ++s)
    sequences[s].assign(ids.begin() + s * sequenceLength,
                        ids.begin() + (s + 1) * sequenceLength);
  return sequences;
}

} // namespace sol

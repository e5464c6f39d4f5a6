//===- TokenizerTool.h - solrun --tokenizer: prompts for debugging -*- C++
//-*-===//
#pragma once

#include <string>

namespace sol {

struct TokenizerToolOptions {
  std::string source; // model directory or plan
  bool encode = false, decode = false, renderChat = false;
  bool jsonl = false;
  bool addSpecialTokens = false;
  bool skipSpecialTokens = false;
};

/// Reads standard input and writes the result to standard output:
///   --encode        UTF-8 text -> JSON array of ids
///   --decode        JSON array of ids -> text
///   --render-chat   {"messages": [...], "tools": [...], ...} -> prompt text
/// With --jsonl every input line is one JSON value (a string for --encode)
/// and every output line the JSON result. Returns the exit code.
int runTokenizerTool(const TokenizerToolOptions &options);

} // namespace sol

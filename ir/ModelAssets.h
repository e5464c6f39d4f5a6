//===- ModelAssets.h - What a plan carries beside the model ------*- C++ -*-===//
//
// The format-neutral part of an import that is not computation: where the
// model came from, its tokenizer and chat template, and its generation
// defaults. Importers fill it (from tokenizer.json, generation_config.json,
// genai_config.json...); the plan writer stores it. No MLIR here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sol {

/// Sampling defaults a plan applies when a request does not say.
struct GenerationDefaults {
  std::vector<int64_t> eosTokenIds;
  std::optional<int64_t> bosTokenId;
  std::optional<int64_t> padTokenId;
  bool doSample = false;
  float temperature = 1.0f;
  int32_t topK = 0;
  float topP = 1.0f;
  float repetitionPenalty = 1.0f;
  int64_t maxNewTokens = -1; // -1: none
};

struct ModelAssets {
  /// What solc was given (a directory or a file), as given.
  std::string source;
  /// The source's configuration, recorded verbatim in the plan and hashed
  /// into its content hash (config.json of a Hugging Face checkpoint).
  std::string sourceConfig;
  /// Hugging Face tokenizer files, verbatim; the chat template lives in the
  /// tokenizer config.
  std::optional<std::string> tokenizerJson;
  std::optional<std::string> tokenizerConfigJson;
  GenerationDefaults generation;
};

} // namespace sol

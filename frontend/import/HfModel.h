//===- HfModel.h - A Hugging Face model directory opened for import -*- C++
//-*-===//
//
// No MLIR here: the plan emitter reads weights and metadata through it too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/hf/GenerationConfig.h"
#include "frontend/hf/ModelConfig.h"
#include "frontend/hf/Safetensors.h"

#include <filesystem>
#include <optional>

namespace sol {

/// A checkpoint directory opened for import: its config, mapped weights, and
/// the files the plan carries along (tokenizer, generation defaults).
struct HfModel {
  std::filesystem::path directory;
  hf::ModelConfig config;
  hf::Checkpoint checkpoint;
  std::optional<hf::GenerationConfig> generation;
  std::optional<std::filesystem::path> tokenizerJson;
  std::optional<std::filesystem::path> tokenizerConfigJson;

  /// Reads config.json and the safetensors headers of `dir`, and checks every
  /// weight's name, shape and dtype against the config. With
  /// `withoutWeights` (solc --load-format dummy), reads no safetensors: the
  /// checkpoint holds the config's expected tensors as bf16 zeros. Throws
  /// sol::Error.
  static HfModel open(const std::filesystem::path &dir,
                      bool withoutWeights = false);
};

} // namespace sol

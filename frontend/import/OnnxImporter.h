//===- OnnxImporter.h - ONNX graph -> sol dialect ---------------*- C++ -*-===//
//
// Writes an ONNX graph into a `sol` module as it is: one `sol.onnx` op per
// node, graph inputs and outputs as the function's arguments and results,
// large initializers as `sol.weight`s of the weight store (views into the
// mapped model or external-data files), small ones and Constant nodes as
// `sol.onnx_constant`s whose values the raise passes read. The sol-raise
// passes then turn the graph into the module the Hugging Face importer
// writes for the same model.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/import/ImportedModel.h"

#include <filesystem>
#include <optional>

namespace sol {

/// The ONNX file `source` stands for: itself when it is a file; in a
/// directory, its `model.onnx`, or its only `*.onnx` file. nullopt when a
/// directory holds none; sol::Error when it holds several and no model.onnx
/// (naming them).
std::optional<std::filesystem::path>
findOnnxModel(const std::filesystem::path &source);

/// Imports the ONNX model at `path`, with config.json, generation_config.json,
/// tokenizer.json, tokenizer_config.json and genai_config.json found beside
/// it. Throws sol::Error naming the problem (a malformed file, a node input
/// that nothing produces, an attribute Sol cannot represent).
ImportedModel importOnnxModel(mlir::MLIRContext &context,
                              const std::filesystem::path &path);

} // namespace sol

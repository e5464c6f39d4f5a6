//===- ImportedModel.h - What an importer hands the compiler ----*- C++ -*-===//
//
// The contract between the importers and the rest of the compiler: a `sol`
// module, the weight store its `sol.weight` ops name, and the assets the
// plan carries. Passes and code generation read only these, never the
// source format.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/ModelAssets.h"
#include "ir/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <filesystem>

namespace sol {

struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  WeightStore weights;
  ModelAssets assets;
};

/// Imports the model at `source`: an ONNX file, a directory holding one
/// (model.onnx), or a Hugging Face checkpoint directory. Throws sol::Error
/// naming the problem (not a model, an unsupported format or architecture,
/// a malformed file). With `withoutWeights` (solc --load-format dummy), a
/// Hugging Face directory needs only its config.json: the weight store holds
/// zeros of the expected shapes, for a plan without weight bytes.
ImportedModel importModel(mlir::MLIRContext &context,
                          const std::filesystem::path &source,
                          bool withoutWeights = false);

} // namespace sol

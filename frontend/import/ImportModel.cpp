//===- ImportModel.cpp - Which importer a model path needs ----------------===//
#include "frontend/import/HfImporter.h"
#include "frontend/import/OnnxImporter.h"

#include <memory>

namespace sol {

ImportedModel importModel(mlir::MLIRContext &context,
                          const std::filesystem::path &source) {
  namespace fs = std::filesystem;
  // A checkpoint directory may also hold an ONNX export; its safetensors
  // (the original weights) win.
  bool hasSafetensors = false;
  if (fs::is_directory(source))
    for (const fs::directory_entry &e : fs::directory_iterator(source))
      hasSafetensors |= e.path().extension() == ".safetensors" ||
                        e.path().filename() == "model.safetensors.index.json";
  if (!hasSafetensors)
    if (std::optional<fs::path> onnx = findOnnxModel(source))
      return importOnnxModel(context, *onnx);
  return importHfModel(context,
                       std::make_shared<const HfModel>(HfModel::open(source)));
}

} // namespace sol

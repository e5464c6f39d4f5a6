//===- ImportModel.cpp - Which importer a model path needs ----------------===//
#include "frontend/import/HfImporter.h"
#include "frontend/import/OnnxImporter.h"
#include "runtime/support/Error.h"

#include <memory>

namespace sol {

ImportedModel importModel(mlir::MLIRContext &context,
                          const std::filesystem::path &source,
                          bool withoutWeights) {
  namespace fs = std::filesystem;
  if (withoutWeights) {
    if (!fs::is_directory(source) || !fs::exists(source / "config.json"))
      fail(source.string(), ": --load-format dummy compiles a Hugging Face "
                            "model from its config.json alone; give the "
                            "directory that holds it");
    return importHfModel(
        context, std::make_shared<const HfModel>(HfModel::open(source, true)));
  }
  // A checkpoint directory may also hold an ONNX export; its safetensors
  // weights (model.safetensors, model-0000x-of-0000n.safetensors or their
  // index) win. Other safetensors files (goldens beside a graph) do not make
  // a checkpoint.
  bool hasSafetensors = false;
  if (fs::is_directory(source))
    for (const fs::directory_entry &e : fs::directory_iterator(source)) {
      const std::string name = e.path().filename().string();
      hasSafetensors |=
          name == "model.safetensors.index.json" ||
          (name.starts_with("model") && e.path().extension() == ".safetensors");
    }
  if (!hasSafetensors)
    if (std::optional<fs::path> onnx = findOnnxModel(source))
      return importOnnxModel(context, *onnx);
  return importHfModel(context,
                       std::make_shared<const HfModel>(HfModel::open(source)));
}

} // namespace sol

//===- HfModel.cpp - A Hugging Face model directory opened for import -----===//
#include "frontend/import/HfModel.h"

#include "frontend/hf/ExpectedWeights.h"
#include "runtime/support/Error.h"
#include "runtime/tokenizer/Tokenizer.h"

namespace sol {

namespace {

/// The tensors a checkpoint of `config` holds, as bf16 (float weights) or
/// their format's dtype, without bytes.
hf::Checkpoint expectedCheckpoint(const std::filesystem::path &dir,
                                  const hf::ModelConfig &config) {
  // MXFP4 experts (gpt-oss) are read as they are stored: their codes and
  // exponents get random bytes at load like any weight. Other formats are
  // unpacked by the importer from bytes a dummy checkpoint does not have.
  if (config.quantization &&
      config.quantization->method != hf::QuantMethod::Mxfp4)
    fail(dir.string(), ": --load-format dummy compiles a model from its "
                       "config.json alone, but this config describes a "
                       "quantized checkpoint (quantization_config); drop it "
                       "and give solc --quant instead");
  std::vector<hf::TensorView> tensors;
  for (const hf::ExpectedTensor &e : hf::expectedWeights(config)) {
    if (e.optional)
      continue;
    hf::TensorView t;
    t.name = e.name;
    t.dtype = e.dtypes.empty() ? DType::BF16 : e.dtypes.front();
    t.shape = e.shape;
    tensors.push_back(std::move(t));
  }
  return hf::Checkpoint::withoutWeights(dir, std::move(tensors));
}

} // namespace

HfModel HfModel::open(const std::filesystem::path &dir, bool withoutWeights) {
  if (!std::filesystem::is_directory(dir))
    fail(dir.string(), ": not a directory; solc expects a Hugging Face model "
                       "directory holding config.json and *.safetensors");
  hf::ModelConfig config = hf::loadModelConfig(dir);
  hf::Checkpoint checkpoint = withoutWeights ? expectedCheckpoint(dir, config)
                                             : hf::Checkpoint::open(dir);
  HfModel model{dir,
                std::move(config),
                std::move(checkpoint),
                hf::loadGenerationConfig(dir),
                std::nullopt,
                std::nullopt};
  // transformers 4 saved a multimodal Gemma 3's text model under
  // language_model.model., transformers 5 under model.language_model.
  if (model.config.multimodal &&
      !model.checkpoint.find(model.config.weightPrefix +
                             "embed_tokens.weight") &&
      model.checkpoint.find("language_model.model.embed_tokens.weight"))
    model.config.weightPrefix = "language_model.model.";
  hf::checkWeights(model.checkpoint, model.config);
  if (std::filesystem::exists(dir / "tokenizer.json"))
    model.tokenizerJson = dir / "tokenizer.json";
  if (std::filesystem::exists(dir / "tokenizer_config.json"))
    model.tokenizerConfigJson = dir / "tokenizer_config.json";
  if (model.tokenizerJson) {
    // An id the embedding table does not have would read past it.
    Tokenizer tokenizer =
        Tokenizer::fromFiles(*model.tokenizerJson, model.tokenizerConfigJson);
    if (static_cast<int64_t>(tokenizer.size()) > model.config.vocabSize)
      fail(model.tokenizerJson->string(), " has ", tokenizer.size(),
           " tokens (vocabulary and added tokens) but config.json's "
           "vocab_size is ",
           model.config.vocabSize,
           ": the tokenizer does not belong to this model");
  }
  return model;
}

} // namespace sol

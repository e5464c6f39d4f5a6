//===- HfImporter.h - Hugging Face checkpoint -> sol dialect ----*- C++ -*-===//
//
// Builds the `sol` module of a Hugging Face decoder-only checkpoint. Weights
// stay in the (mapped) safetensors files; the module refers to them by name
// and the weight store holds views of them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/import/HfModel.h"
#include "frontend/import/ImportedModel.h"
#include "ir/SolDialect.h"

#include <memory>

namespace sol {

/// The forward step of `model` as a `sol` module with one function:
///
///   func.func @forward(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
///                      %token_seq: tensor<?xi32>, %logit_rows: tensor<?xi32>)
///       -> tensor<?xVxf32>
///
/// over a flat batch of tokens from many sequences (`token_seq` names each
/// token's sequence; `logit_rows` the tokens whose logits are wanted), so one
/// function serves prefill chunks and batched decode alike. Activations are
/// bf16; weights stored in f16 or f32 are converted by sol.convert_weight.
/// The linears of an already-quantized checkpoint (model.config.quantization:
/// AutoAWQ, GPTQ, compressed-tensors fp8) are quantized `sol.linear`s whose
/// codes, scales and zero points are tensors of the store in Sol's formats
/// (runtime/support/Quantize.h), repacked from the checkpoint's when read.
/// The store keeps `model` (its mapped files) alive.
ImportedModel importHfModel(mlir::MLIRContext &context,
                            std::shared_ptr<const HfModel> model);

/// The #sol.rope of a checkpoint's config (theta, scaling and its
/// parameters, with the format's defaults resolved).
RopeAttr ropeAttrOf(mlir::MLIRContext *ctx, const hf::ModelConfig &config,
                    int64_t layer = 0);

} // namespace sol

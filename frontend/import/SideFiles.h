//===- SideFiles.h - The files beside a model that a plan carries -*- C++
//-*-===//
//
// Whatever the model format, a plan carries the tokenizer, the chat template
// and the generation defaults found beside it; both importers fill
// ModelAssets through these.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/hf/GenerationConfig.h"
#include "ir/ModelAssets.h"

#include <filesystem>
#include <optional>
#include <string>

namespace sol {

/// The whole file as a string; sol::Error naming the path on failure.
std::string readText(const std::filesystem::path &path);

/// The plan's generation defaults: the model config's token ids, overridden
/// by generation_config.json where it sets them.
GenerationDefaults
generationDefaults(std::vector<int64_t> configEosTokenIds,
                   std::optional<int64_t> configBosTokenId,
                   const std::optional<hf::GenerationConfig> &generation);

} // namespace sol

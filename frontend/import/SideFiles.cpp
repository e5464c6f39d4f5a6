//===- SideFiles.cpp - The files beside a model that a plan carries -------===//
#include "frontend/import/SideFiles.h"

#include "runtime/support/Error.h"

#include <fstream>
#include <iterator>

namespace sol {

std::string readText(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot read ", path.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

GenerationDefaults
generationDefaults(std::vector<int64_t> configEosTokenIds,
                   std::optional<int64_t> configBosTokenId,
                   const std::optional<hf::GenerationConfig> &generation) {
  GenerationDefaults gen;
  gen.eosTokenIds = std::move(configEosTokenIds);
  gen.bosTokenId = configBosTokenId;
  if (const auto &g = generation) {
    if (!g->eosTokenIds.empty())
      gen.eosTokenIds = g->eosTokenIds;
    if (g->bosTokenId)
      gen.bosTokenId = g->bosTokenId;
    gen.padTokenId = g->padTokenId;
    gen.doSample = g->doSample.value_or(false);
    gen.temperature = static_cast<float>(g->temperature.value_or(1.0));
    gen.topK = static_cast<int32_t>(g->topK.value_or(0));
    gen.topP = static_cast<float>(g->topP.value_or(1.0));
    gen.repetitionPenalty =
        static_cast<float>(g->repetitionPenalty.value_or(1.0));
    gen.maxNewTokens = g->maxNewTokens.value_or(-1);
  }
  return gen;
}

} // namespace sol

//===- KernelSourceBuilder.cpp - Kernel instances -> NVRTC sources --------===//

#include "codegen/nvrtc/KernelSourceBuilder.h"

#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "runtime/support/Error.h"

#include <map>
#include <set>

namespace sol::nvrtc {

std::vector<KernelSource>
buildKernelSources(std::span<const cuda::KernelInstance> instances,
                   std::size_t maxPerSource) {
  if (maxPerSource == 0)
    maxPerSource = 1;
  // Sorted containers keep the sources, and so the cache keys, stable.
  std::map<std::string, std::set<std::string>> byHeader;
  for (const cuda::KernelInstance &instance : instances) {
    if (findEmbeddedKernelHeader(instance.header) == nullptr)
      fail("kernel ", instance.nameExpression, " names header '",
           instance.header, "', which is not among the embedded kernels");
    byHeader[instance.header].insert(instance.nameExpression);
  }
  const std::span<const HeaderFile> headers = embeddedKernelHeaders();
  std::vector<KernelSource> sources;
  for (const auto &[header, names] : byHeader) {
    std::size_t part = 0;
    for (auto it = names.begin(); it != names.end();) {
      KernelSource source;
      std::string stem = header.substr(0, header.rfind('.'));
      source.name = cat(stem, "_", part++, ".cu");
      source.code = cat("#include \"", header, "\"\n");
      source.archSpecific = cuda::needsArchSpecificTarget(header);
      source.headers.assign(headers.begin(), headers.end());
      for (std::size_t i = 0; i < maxPerSource && it != names.end(); ++i)
        source.nameExpressions.push_back(*it++);
      sources.push_back(std::move(source));
    }
  }
  return sources;
}

} // namespace sol::nvrtc

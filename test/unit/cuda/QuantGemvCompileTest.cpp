//===- QuantGemvCompileTest.cpp - linear_gemv_quant compiles with NVRTC ---===//
//
// Every linear_gemv_quant instance QuantGemvSpec::choose picks for the
// decode linears (1, 2, 4 and 8 rows) of the supported model shapes, in all
// three weight formats, compiles for sm_90 through the path solc uses,
// takes QuantLinearArgs, and fits in registers: no spills, no stack, and at
// least the two blocks per SM its launch bound asks for. The resources are
// printed (registers, blocks per SM by registers, shared memory) so that a
// change can be compared.
//
//===----------------------------------------------------------------------===//

#include "KernelResources.h"
#include "NvrtcTestSupport.h"
#include "codegen/kernels/LaunchArgs.h"
#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace sol::test {
namespace {

using cuda::KernelInstance;
using cuda::LinearEpilogue;
using cuda::LinearOutput;
using cuda::QuantGemvSpec;
using cuda::WeightFormat;

struct QuantModel {
  const char *name;
  int hidden, intermediate, qHeads, kvHeads, headDim, vocab;
  bool qkvBias;
};

const QuantModel kModels[] = {
    {"Llama-3.2-1B", 2048, 8192, 32, 8, 64, 128256, false},
    {"Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256, false},
    {"Qwen2.5-1.5B", 1536, 8960, 12, 2, 128, 151936, true},
    {"sol-tiny", 384, 1024, 6, 3, 64, 8192, false},
};

struct QuantCase {
  std::string label; // model, linear, format, rows
  QuantGemvSpec spec;
  int outFeatures;
};

const char *formatName(WeightFormat f) {
  return f == WeightFormat::Int8   ? "int8"
         : f == WeightFormat::Int4 ? "int4"
                                   : "fp8";
}

/// The decode linears of a layer (and the LM head behind the final norm).
std::vector<QuantCase> quantCases() {
  std::vector<QuantCase> cases;
  for (const QuantModel &m : kModels) {
    struct Linear {
      const char *name;
      int n, k;
      LinearOutput output;
      bool bias;
      LinearEpilogue epilogue;
      bool norm;
    };
    const Linear linears[] = {
        {"qkv", (m.qHeads + 2 * m.kvHeads) * m.headDim, m.hidden,
         LinearOutput::Bf16, m.qkvBias, LinearEpilogue::None, true},
        {"o", m.hidden, m.qHeads * m.headDim, LinearOutput::Bf16, false,
         LinearEpilogue::Residual, false},
        {"gate_up", 2 * m.intermediate, m.hidden, LinearOutput::Bf16, false,
         LinearEpilogue::Swiglu, true},
        {"down", m.hidden, m.intermediate, LinearOutput::Bf16, false,
         LinearEpilogue::Residual, false},
        {"lm_head", m.vocab, m.hidden, LinearOutput::Fp32, false,
         LinearEpilogue::None, true},
    };
    for (WeightFormat f :
         {WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Fp8})
      for (const Linear &l : linears)
        for (int rows : {1, 2, 4, 8}) {
          const int group = f == WeightFormat::Int4 ? 128 : 0;
          cases.push_back(
              {sol::cat(m.name, " ", l.name, " ", formatName(f), " T=", rows),
               QuantGemvSpec::choose(l.n, l.k, rows, f, l.output, l.bias,
                                     l.epilogue, l.norm, group),
               l.n});
        }
  }
  return cases;
}

TEST(QuantGemvCompile, EveryModelInstanceCompilesForSm90) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false; // really compile
  options.ptxasVerbose = true;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  const std::vector<QuantCase> cases = quantCases();
  std::vector<KernelInstance> instances;
  for (const QuantCase &c : cases)
    if (std::find(instances.begin(), instances.end(), c.spec.instance()) ==
        instances.end())
      instances.push_back(c.spec.instance());
  const std::vector<nvrtc::KernelSource> sources =
      nvrtc::buildKernelSources(instances);
  const std::vector<nvrtc::CompiledKernels> compiled =
      compiler->compileAll(sources);
  ASSERT_EQ(compiled.size(), sources.size());

  const std::string_view takes =
      kernels::LaunchArgsName<kernels::QuantLinearArgs>::kMangled.view();
  std::map<std::string, KernelResources> resources;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const nvrtc::CompiledKernels &kernels = compiled[i];
    EXPECT_FALSE(kernels.cubin.empty()) << sources[i].name;
    const std::map<std::string, KernelResources> report =
        parsePtxasReport(kernels.log);
    for (const std::string &expr : sources[i].nameExpressions) {
      const auto lowered = kernels.loweredNames.find(expr);
      ASSERT_NE(lowered, kernels.loweredNames.end()) << expr;
      EXPECT_TRUE(std::string_view(lowered->second).ends_with(takes))
          << expr << " lowered to " << lowered->second;
      const auto used = report.find(lowered->second);
      ASSERT_NE(used, report.end()) << expr << ": no ptxas report in the log";
      KernelResources r = used->second;
      r.threads = maxThreadsPerBlock(kernels.ptx, lowered->second);
      r.blocksPerSm = blocksPerSm(r.registers, r.threads);
      EXPECT_EQ(r.threads, 256) << expr;
      EXPECT_EQ(r.spillBytes, 0) << expr << " spills";
      EXPECT_EQ(r.stackBytes, 0) << expr << " has a stack frame";
      EXPECT_GE(r.blocksPerSm, 2)
          << expr << ": " << r.registers << " registers";
      resources[expr] = r;
    }
  }
  EXPECT_EQ(resources.size(), instances.size());

  // The table: one line per case, resources of its instance.
  // Blocks per SM by registers and by shared memory (228 KB an SM, 1 KB
  // of it reserved per block, static shared memory not counted).
  std::printf("%-34s %-6s %3s %3s %8s %5s %6s %6s\n", "case", "grid", "R", "WK",
              "smem", "regs", "by_reg", "by_smem");
  for (const QuantCase &c : cases) {
    const auto it = resources.find(c.spec.instance().nameExpression);
    if (it == resources.end())
      continue;
    const cuda::LaunchDims d = c.spec.dims(c.outFeatures);
    const int bySmem = static_cast<int>(228 * 1024 / (d.sharedBytes + 1024));
    std::printf("%-34s %-6u %3d %3d %8u %5d %6d %6d\n", c.label.c_str(),
                d.grid.x, c.spec.rowsPerWarp, c.spec.warpsK, d.sharedBytes,
                it->second.registers, it->second.blocksPerSm,
                std::min(bySmem, 32));
  }
}

} // namespace
} // namespace sol::test

//===- KernelCompileTest.cpp - Every kernel compiles with NVRTC -----------===//
//
// Compiles every instantiation the supported model shapes need for sm_90,
// exactly as solc does, and checks the host-side launch specs against the
// kernels' own constants.
//
//===----------------------------------------------------------------------===//

#include "ModelKernelInstances.h"
#include "NvrtcTestSupport.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

namespace sol::test {
namespace {

using cuda::GemmSpec;
using cuda::GemvSpec;
using cuda::LinearOutput;
using cuda::RmsNormSpec;

TEST(KernelCompile, EveryModelInstanceCompilesForSm90) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false; // really compile
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  const std::vector<cuda::KernelInstance> instances = modelKernelInstances();
  ASSERT_GT(instances.size(), 50u);
  const std::vector<nvrtc::KernelSource> sources =
      nvrtc::buildKernelSources(instances);
  const std::vector<nvrtc::CompiledKernels> compiled =
      compiler->compileAll(sources);
  ASSERT_EQ(compiled.size(), sources.size());

  std::size_t found = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const nvrtc::CompiledKernels &kernels = compiled[i];
    EXPECT_FALSE(kernels.cubin.empty()) << sources[i].name;
    // A cubin is an ELF file.
    ASSERT_GE(kernels.cubin.size(), 4u);
    EXPECT_EQ(kernels.cubin[0], 0x7f);
    EXPECT_EQ(kernels.cubin[1], 'E');
    EXPECT_NE(kernels.ptx.find(".target sm_90"), std::string::npos)
        << sources[i].name;
    for (const std::string &expr : sources[i].nameExpressions) {
      auto it = kernels.loweredNames.find(expr);
      ASSERT_NE(it, kernels.loweredNames.end()) << expr;
      EXPECT_EQ(it->second.rfind("_ZN3sol7kernels", 0), 0u)
          << expr << " lowered to " << it->second;
      EXPECT_NE(kernels.ptx.find(".entry " + it->second), std::string::npos)
          << expr << " has no entry in the PTX";
      ++found;
    }
  }
  EXPECT_EQ(found, instances.size());
}

// The launch geometry in KernelSpecs.cpp duplicates constants of the kernel
// headers; NVRTC evaluates static_asserts that compare the two.
TEST(KernelCompile, HostSpecsMatchKernelConstants) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  std::string code = "#include \"RmsNorm.cuh\"\n#include \"LinearGemm.cuh\"\n"
                     "#include \"LinearGemv.cuh\"\n#include \"Argmax.cuh\"\n"
                     "#include \"PagedAttention.cuh\"\n"
                     "#include \"RopeKvWrite.cuh\"\n"
                     "using namespace sol::kernels;\n";
  for (int dim :
       {64, 128, 256, 896, 1024, 1536, 2048, 3584, 4096, 5120, 8192, 16384}) {
    const RmsNormSpec spec{dim};
    code += sol::cat("static_assert(RmsNormShape<", dim,
                     ">::kBlockThreads == ", spec.blockThreads(), ");\n",
                     "static_assert(RmsNormShape<", dim,
                     ">::kRowsPerBlock == ", spec.rowsPerBlock(), ");\n",
                     "static_assert(RmsNormShape<", dim,
                     ">::kThreadsPerRow == ", spec.threadsPerRow(), ");\n");
  }
  for (const GemmSpec &spec :
       {GemmSpec::choose(4096, 4096, LinearOutput::Bf16, false),
        GemmSpec::choose(16, 4096, LinearOutput::Bf16, false)}) {
    code += sol::cat("static_assert(GemmShape<", spec.tileM, ", ", spec.tileN,
                     ", ", spec.warpsM, ", ", spec.warpsN, ", ", spec.stages,
                     ">::kSharedBytes == ", spec.sharedBytes(), ");\n",
                     "static_assert(GemmShape<", spec.tileM, ", ", spec.tileN,
                     ", ", spec.warpsM, ", ", spec.warpsN, ", ", spec.stages,
                     ">::kThreads == ", spec.threads(), ");\n");
  }
  code += sol::cat(
      "static_assert(kGemvThreads == ", GemvSpec{2048}.dims(8).block.x, ");\n",
      "static_assert(kArgmaxThreads == ", cuda::ArgmaxSpec{}.dims(1).block.x,
      ");\n", "static_assert(kPagedAttentionThreads == ",
      cuda::PagedAttentionSpec{32, 8, 64}.dims(1, 1).block.x, ");\n",
      "static_assert(kRopeThreads == ",
      cuda::RopeKvWriteSpec{32, 8, 64}.dims(1).block.x, ");\n",
      "static_assert(kDefaultKvBlockSize == ",
      cuda::PagedAttentionSpec{}.blockSize, ");\n");

  nvrtc::KernelSource source;
  source.name = "spec_consistency.cu";
  source.code = code;
  auto headers = nvrtc::embeddedKernelHeaders();
  source.headers.assign(headers.begin(), headers.end());
  EXPECT_NO_THROW(compiler->compile(source)) << code;
}

// The same static_assert machinery must be able to fail, or the test above
// proves nothing.
TEST(KernelCompile, MismatchedSpecIsCaught) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  nvrtc::KernelSource source;
  source.name = "spec_mismatch.cu";
  source.code = "#include \"RmsNorm.cuh\"\n"
                "static_assert(sol::kernels::RmsNormShape<2048>::"
                "kBlockThreads == 257, \"mismatch\");\n";
  auto headers = nvrtc::embeddedKernelHeaders();
  source.headers.assign(headers.begin(), headers.end());
  EXPECT_THROW(compiler->compile(source), sol::Error);
}

} // namespace
} // namespace sol::test

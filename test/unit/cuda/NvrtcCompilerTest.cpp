//===- NvrtcCompilerTest.cpp - The NVRTC driver's behaviour ---------------===//

#include "NvrtcTestSupport.h"
#include "codegen/nvrtc/NvrtcLibrary.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

namespace sol::test {
namespace {

using nvrtc::KernelSource;
using nvrtc::NvrtcOptions;

KernelSource scaleKernel() {
  KernelSource source;
  source.name = "scale.cu";
  source.code = "#include \"scale.cuh\"\n";
  source.headers = {{"scale.cuh", R"(
#include <cuda_bf16.h>
namespace demo {
template <int F> __global__ void scale(__nv_bfloat16 *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2bfloat16(__bfloat162float(x[i]) * F);
}
} // namespace demo
extern "C" __global__ void plain(float *x) { x[threadIdx.x] = 1.0f; }
)"}};
  source.nameExpressions = {"demo::scale<2>", "demo::scale<3>", "plain"};
  return source;
}

TEST(NvrtcCompiler, CompilesTemplatesAndExternCKernels) {
  std::string reason;
  NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  const nvrtc::CompiledKernels kernels = compiler->compile(scaleKernel());
  EXPECT_FALSE(kernels.fromCache);
  EXPECT_EQ(kernels.loweredNames.at("demo::scale<2>"),
            "_ZN4demo5scaleILi2EEEvP13__nv_bfloat16i");
  EXPECT_EQ(kernels.loweredNames.at("demo::scale<3>"),
            "_ZN4demo5scaleILi3EEEvP13__nv_bfloat16i");
  EXPECT_EQ(kernels.loweredNames.at("plain"), "plain");
  EXPECT_NE(kernels.ptx.find(".entry plain"), std::string::npos);
  EXPECT_GT(kernels.cubin.size(), 1000u);
  EXPECT_FALSE(compiler->nvrtcVersion().empty());
}

// An archSpecific source compiles for sm_90a (its PTX targets it, wgmma
// assembles), a plain one for sm_90; the cache keeps them apart.
TEST(NvrtcCompiler, ArchSpecificSourcesCompileForSm90a) {
  std::string reason;
  NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  KernelSource source;
  source.name = "fence.cu";
  source.code = R"(
extern "C" __global__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
)";
  source.nameExpressions = {"fence"};
  EXPECT_THROW(compiler->compile(source), sol::Error); // sm_90: no wgmma
  source.archSpecific = true;
  EXPECT_EQ(compiler->archFor(source), "sm_90a");
  const nvrtc::CompiledKernels kernels = compiler->compile(source);
  EXPECT_EQ(kernels.arch, "sm_90a");
  EXPECT_NE(kernels.ptx.find(".target sm_90a"), std::string::npos);
  EXPECT_EQ(compiler->compile(scaleKernel()).arch, "sm_90");
}

TEST(NvrtcCompiler, CompileErrorNamesTheSourceAndShowsTheLog) {
  std::string reason;
  NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  KernelSource source;
  source.name = "broken.cu";
  source.code = "__global__ void k(int *x) { x[0] = undeclared_thing; }\n";
  source.nameExpressions = {"k"};
  try {
    compiler->compile(source);
    FAIL() << "a kernel with an error compiled";
  } catch (const sol::Error &e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("broken.cu"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared_thing"), std::string::npos) << message;
    EXPECT_NE(message.find("sm_90"), std::string::npos) << message;
  }
}

TEST(NvrtcCompiler, UnknownNameExpressionIsAnError) {
  std::string reason;
  NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  KernelSource source = scaleKernel();
  source.nameExpressions = {"demo::no_such_kernel<1>"};
  EXPECT_THROW(compiler->compile(source), sol::Error);
}

TEST(NvrtcCompiler, PtxasReportIsInTheLogWhenAsked) {
  std::string reason;
  NvrtcOptions options;
  options.useCache = false;
  options.ptxasVerbose = true;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  const nvrtc::CompiledKernels kernels = compiler->compile(scaleKernel());
  EXPECT_NE(kernels.log.find("registers"), std::string::npos) << kernels.log;
  EXPECT_NE(kernels.log.find("spill"), std::string::npos) << kernels.log;
}

TEST(NvrtcCompiler, CompileAllKeepsOrderAndReportsEveryFailure) {
  std::string reason;
  NvrtcOptions options;
  options.useCache = false;
  options.threads = 3;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  std::vector<KernelSource> good;
  for (int f = 1; f <= 4; ++f) {
    KernelSource source = scaleKernel();
    source.name = "scale" + std::to_string(f) + ".cu";
    source.nameExpressions = {"demo::scale<" + std::to_string(f) + ">"};
    good.push_back(source);
  }
  const auto compiled = compiler->compileAll(good);
  ASSERT_EQ(compiled.size(), 4u);
  for (int f = 1; f <= 4; ++f)
    EXPECT_EQ(compiled[f - 1].loweredNames.begin()->second,
              "_ZN4demo5scaleILi" + std::to_string(f) +
                  "EEEvP13__nv_bfloat16i");

  std::vector<KernelSource> mixed = good;
  mixed[1].code = "this is not C++";
  mixed[1].name = "bad_one.cu";
  mixed[3].code = "neither is this";
  mixed[3].name = "bad_two.cu";
  try {
    compiler->compileAll(mixed);
    FAIL() << "broken sources compiled";
  } catch (const sol::Error &e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("2 of 4"), std::string::npos) << message;
    EXPECT_NE(message.find("bad_one.cu"), std::string::npos) << message;
    EXPECT_NE(message.find("bad_two.cu"), std::string::npos) << message;
  }
}

TEST(NvrtcCompiler, RejectsAnInvalidArchitecture) {
  NvrtcOptions options;
  options.gpuArch = "volta";
  try {
    nvrtc::NvrtcCompiler compiler(options);
    FAIL() << "accepted gpuArch 'volta'";
  } catch (const sol::Error &e) {
    EXPECT_NE(std::string(e.what()).find("volta"), std::string::npos);
  }
}

TEST(NvrtcCompiler, MissingCudaHeadersAreAClearError) {
  std::string reason;
  if (!makeCompiler({}, reason))
    GTEST_SKIP() << "NVRTC not available: " << reason;
  NvrtcOptions options;
  options.cudaIncludeDir = "/nonexistent/cuda/include";
  try {
    nvrtc::NvrtcCompiler compiler(options);
    FAIL() << "accepted a CUDA include directory without headers";
  } catch (const sol::Error &e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("cuda_bf16.h"), std::string::npos) << message;
    EXPECT_NE(message.find("/nonexistent/cuda/include"), std::string::npos);
  }
}

TEST(NvrtcLibrary, MissingLibraryIsAClearError) {
  try {
    nvrtc::loadNvrtcFrom({"/nonexistent/libnvrtc.so.13"});
    FAIL() << "loaded a library that does not exist";
  } catch (const sol::Error &e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("/nonexistent/libnvrtc.so.13"), std::string::npos)
        << message;
    EXPECT_NE(message.find("SOL_NVRTC_LIBRARY"), std::string::npos) << message;
  }
}

TEST(NvrtcLibrary, ALibraryWithoutNvrtcIsRejected) {
  // libc is loadable but is not NVRTC.
  try {
    nvrtc::loadNvrtcFrom({"libc.so.6"});
    FAIL() << "accepted libc as NVRTC";
  } catch (const sol::Error &e) {
    EXPECT_NE(std::string(e.what()).find("nvrtcVersion"), std::string::npos)
        << e.what();
  }
}

TEST(NvrtcCompiler, VirtualArchitectureNames) {
  EXPECT_EQ(nvrtc::virtualArchFor("sm_90"), "compute_90");
  EXPECT_EQ(nvrtc::virtualArchFor("sm_90a"), "compute_90a");
  EXPECT_THROW(nvrtc::virtualArchFor("compute_90"), sol::Error);
}

} // namespace
} // namespace sol::test

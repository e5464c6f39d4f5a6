//===- KernelCompileTest.cpp - Every kernel compiles with NVRTC -----------===//
//
// Compiles every instantiation the supported model shapes need for sm_90,
// exactly as solc does, checks that none needs more registers per block or
// stack than kernel-resources.txt records, and checks the host-side launch
// specs against the kernels' own constants.
//
//===----------------------------------------------------------------------===//

#include "KernelResources.h"
#include "ModelKernelInstances.h"
#include "NvrtcTestSupport.h"
#include "codegen/kernels/LaunchArgs.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string_view>
#include <utility>

namespace sol::test {
namespace {

using cuda::GemmSpec;
using cuda::GemvSpec;
using cuda::LinearEpilogue;
using cuda::LinearOutput;
using cuda::RmsNormSpec;
using cuda::SkinnySpec;

TEST(KernelCompile, EveryModelInstanceCompilesForSm90) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false; // really compile
  options.ptxasVerbose = true;
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
  std::map<std::string, KernelResources> resources;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const nvrtc::CompiledKernels &kernels = compiled[i];
    const std::map<std::string, KernelResources> report =
        parsePtxasReport(kernels.log);
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
      EXPECT_TRUE(takesItsLaunchArgs(expr, it->second))
          << expr << " lowered to " << it->second;
      EXPECT_NE(kernels.ptx.find(".entry " + it->second), std::string::npos)
          << expr << " has no entry in the PTX";
      const auto used = report.find(it->second);
      ASSERT_NE(used, report.end()) << expr << ": no ptxas report in the log:\n"
                                    << kernels.log;
      KernelResources r = used->second;
      r.threads = maxThreadsPerBlock(kernels.ptx, it->second);
      EXPECT_GT(r.threads, 0) << expr << " declares no __launch_bounds__";
      EXPECT_GT(r.registers, 0) << expr;
      r.blocksPerSm = blocksPerSm(r.registers, r.threads);
      resources[expr] = r;
      ++found;
    }
  }
  EXPECT_EQ(found, instances.size());

  // Occupancy against the committed table.
  const std::filesystem::path tablePath = SOL_KERNEL_RESOURCES_FILE;
  if (const char *out = std::getenv("SOL_WRITE_KERNEL_RESOURCES")) {
    writeResourceTable(out, resources);
    GTEST_SKIP() << "wrote " << resources.size() << " kernels to " << out;
  }
  const std::map<std::string, KernelResources> table =
      readResourceTable(tablePath);
  const std::string rewrite = sol::cat(
      "; if the change is meant, rewrite the table: "
      "SOL_WRITE_KERNEL_RESOURCES=",
      tablePath.string(),
      " build/unittests/sol_nvrtc_tests "
      "--gtest_filter=KernelCompile.EveryModelInstanceCompilesForSm90");
  for (const auto &[expr, r] : resources) {
    const auto it = table.find(expr);
    if (it == table.end()) {
      ADD_FAILURE() << expr << " (" << r.registers << " registers, "
                    << r.blocksPerSm << " blocks per SM) is not in "
                    << tablePath.string() << rewrite;
      continue;
    }
    const KernelResources &was = it->second;
    EXPECT_GE(r.blocksPerSm, was.blocksPerSm)
        << expr << ": " << r.registers << " registers x " << r.threads
        << " threads fit " << r.blocksPerSm << " blocks per SM; the table has "
        << was.registers << " registers, " << was.blocksPerSm << rewrite;
    EXPECT_LE(r.stackBytes, was.stackBytes)
        << expr << ": a " << r.stackBytes << "-byte stack frame, the table has "
        << was.stackBytes << rewrite;
  }
  for (const auto &[expr, was] : table)
    EXPECT_TRUE(resources.count(expr))
        << expr << " is in " << tablePath.string()
        << " but no supported shape instantiates it" << rewrite;
}

TEST(KernelResources, ParsesThePtxasReport) {
  const std::string log =
      "ptxas info    : 56 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z6helperv\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes "
      "spill loads\n"
      "ptxas info    : Function properties for _Z1kv\n"
      "ptxas         .     32 bytes stack frame, 0 bytes spill stores, 0 bytes "
      "spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 256 bytes smem\n"
      "ptxas info    : Compiling entry function '_Z1jv' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1jv\n"
      "ptxas         .     0 bytes stack frame, 8 bytes spill stores, 12 bytes "
      "spill loads\n"
      "ptxas info    : Used 255 registers, used 0 barriers\n";
  const auto report = parsePtxasReport(log);
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report.at("_Z1kv").registers, 40);
  EXPECT_EQ(report.at("_Z1kv").stackBytes, 32);
  EXPECT_EQ(report.at("_Z1kv").spillBytes, 0);
  EXPECT_EQ(report.at("_Z1jv").registers, 255);
  EXPECT_EQ(report.at("_Z1jv").spillBytes, 20);

  const std::string ptx =
      ".visible .entry _Z1kv(\n)\n.maxntid 256, 1, 1\n{\n}\n"
      ".visible .entry _Z1jv(\n)\n{\n}\n";
  EXPECT_EQ(maxThreadsPerBlock(ptx, "_Z1kv"), 256);
  EXPECT_EQ(maxThreadsPerBlock(ptx, "_Z1jv"), 0);
  EXPECT_EQ(maxThreadsPerBlock(ptx, "_Z1xv"), 0);
}

TEST(KernelResources, BlocksPerSmFollowRegisterAllocation) {
  // 256 threads: 48 registers fit five blocks, 53 (allocated as 56) four.
  EXPECT_EQ(blocksPerSm(48, 256), 5);
  EXPECT_EQ(blocksPerSm(53, 256), 4);
  EXPECT_EQ(blocksPerSm(124, 256), 2);
  EXPECT_EQ(blocksPerSm(166, 256), 1);
  EXPECT_EQ(blocksPerSm(168, 128), 3);
  // Threads, then the 32-block limit, bound small kernels.
  EXPECT_EQ(blocksPerSm(16, 1024), 2);
  EXPECT_EQ(blocksPerSm(16, 32), 32);
  EXPECT_EQ(blocksPerSm(32, 0), 0);
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
                     "#include \"LinearSkinny.cuh\"\n"
                     "#include \"MoeGroupedGemm.cuh\"\n"
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
  code +=
      sol::cat("static_assert(kGemvThreads == ", GemvSpec{2048}.dims(8).block.x,
               ");\n", "static_assert(kArgmaxThreads == ",
               cuda::ArgmaxSpec{1000}.dims(1).block.x, ");\n",
               "static_assert(kPagedAttentionThreads == ",
               cuda::PagedAttentionSpec{32, 8, 64}.dims(1, 1).block.x, ");\n",
               "static_assert(kMaxAttentionSplits == ",
               cuda::PagedAttentionSpec::kMaxSplits, ");\n",
               "static_assert(kRopeThreads == ",
               cuda::RopeKvWriteSpec{32, 8, 64}.dims(1).block.x, ");\n",
               "static_assert(kDefaultKvBlockSize == ",
               cuda::PagedAttentionSpec{}.blockSize, ");\n");
  // linear_skinny's dynamic shared memory and block.
  for (const SkinnySpec &spec :
       {SkinnySpec{2048, 16, 2, 4, LinearOutput::Fp32, false,
                   LinearEpilogue::None, true},
        SkinnySpec{8192, 8, 1, 8, LinearOutput::Bf16, false,
                   LinearEpilogue::Residual, false},
        SkinnySpec{896, 16, 1, 2, LinearOutput::Bf16, true,
                   LinearEpilogue::Swiglu, true},
        SkinnySpec{72, 8, 2, 1, LinearOutput::Bf16, false, LinearEpilogue::None,
                   false}})
    code += sol::cat("static_assert(SkinnyShape<", spec.inFeatures, ", ",
                     spec.maxRows, ", ", spec.tiles, ", ", spec.warpsK, ", ",
                     spec.normPrologue ? "true" : "false",
                     ">::kSharedBytes == ", spec.sharedBytes(), ");\n",
                     "static_assert(SkinnyShape<", spec.inFeatures, ", ",
                     spec.maxRows, ", ", spec.tiles, ", ", spec.warpsK, ", ",
                     spec.normPrologue ? "true" : "false",
                     ">::kFeatures == ", spec.featuresPerBlock(), ");\n");
  code += sol::cat("static_assert(kSkinnyThreads == ",
                   SkinnySpec{2048}.dims(8).block.x, ");\n");
  // The MoE kernels' geometry, and their instances of the Qwen3-30B-A3B
  // (128 experts, 8 a token; bf16, and int8, fp8 and int4 experts),
  // Mixtral-8x7B (8, 2), gpt-oss-20b (32, 4; bf16 and MXFP4 experts) and
  // Qwen1.5-MoE-A2.7B (60, 4) shapes compiled in full.
  using Format = fb::ExpertFormat;
  for (const cuda::MoeSpec &moe :
       {cuda::MoeSpec{128, 8, 2048, 768},
        cuda::MoeSpec{128, 8, 2048, 768, Format::Int8},
        cuda::MoeSpec{128, 8, 2048, 768, Format::Fp8},
        cuda::MoeSpec{128, 8, 2048, 768, Format::Int4, 128},
        cuda::MoeSpec{8, 2, 4096, 14336}, cuda::MoeSpec{32, 4, 2880, 2880},
        cuda::MoeSpec{32, 4, 2880, 2880, Format::Mxfp4},
        cuda::MoeSpec{60, 4, 2048, 1408}}) {
    const bool quantized = moe.format != Format::Float;
    code += sol::cat(
        "static_assert(kMoeThreads == ", moe.gateUpDims(1).block.x, ");\n",
        "static_assert(kMoeThreads == ", moe.downDims(1).block.x, ");\n",
        "static_assert(kMoeRouteThreads == ", moe.routeDims(1).block.x, ");\n",
        "static_assert(", moe.routeDims(9).grid.x,
        " == (9 + kMoeRouteThreads / 32 - 1) / (kMoeRouteThreads / 32));\n",
        // A unit of blocks per expert in large steps, per slot in small
        // ones (moeBlockExpert).
        "static_assert(", moe.gateUpDims(4096).grid.x, " == ", moe.experts,
        " * ((", moe.width, " + kMoeRowsPerBlock - 1) / kMoeRowsPerBlock));\n",
        "static_assert(", moe.downDims(4096).grid.x, " == ", moe.experts,
        " * ((", moe.hidden, " + kMoeRowsPerBlock - 1) / kMoeRowsPerBlock));\n",
        "static_assert(", moe.downDims(1).grid.x, " == ", moe.topK, " * ((",
        moe.hidden, " + kMoeRowsPerBlock - 1) / kMoeRowsPerBlock));\n");
    std::vector<std::string> exprs = {
        moe.gateUp().nameExpression + "(const __grid_constant__ MoeGateUpArgs)",
        moe.down().nameExpression + "(const __grid_constant__ MoeDownArgs)"};
    if (!quantized) // the bf16 spec of the same shape has them
      for (const std::string &expr :
           {moe.route().nameExpression +
                "(const __grid_constant__ MoeRouteArgs)",
            moe.combine().nameExpression +
                "(const __grid_constant__ MoeCombineArgs)"})
        exprs.push_back(expr);
    // The grouped GEMMs' geometry, shared memory and instances, for each
    // tile size (moe_sort is the bf16 spec's).
    for (int tileRows : moe.groupedTileSizes(8192)) {
      const std::string shape = sol::cat("MoeGemmShape<", tileRows, ">");
      if (!quantized) {
        code += sol::cat(
            "static_assert(", shape, "::kBN == ", moe.kGroupedTileCols, ");\n",
            "static_assert(", shape,
            "::kThreads == ", moe.groupedGateUpDims(9, tileRows).block.x,
            ");\n", "static_assert(", shape,
            "::kSharedBytes == ", moe.groupedDownDims(9, tileRows).sharedBytes,
            ");\n", "static_assert(", moe.groupedDownDims(9, tileRows).grid.x,
            " == moeGemmTileBound(9 * ", moe.topK, ", ", moe.experts, ", ",
            tileRows, ") * ((", moe.hidden, " + 127) / 128));\n");
        exprs.push_back(moe.sort(tileRows).nameExpression +
                        "(const __grid_constant__ MoeSortArgs)");
      }
      exprs.push_back(moe.groupedGateUp(tileRows).nameExpression +
                      "(const __grid_constant__ MoeGroupedGemmArgs)");
      exprs.push_back(moe.groupedDown(tileRows).nameExpression +
                      "(const __grid_constant__ MoeGroupedGemmArgs)");
    }
    if (!quantized)
      code += sol::cat(
          "static_assert(kMoeSortThreads == ", moe.sortDims().block.x, ");\n");
    for (const std::string &expr : exprs)
      code += "template __global__ void " + expr + ";\n";
  }
  // A GPTQ act-order down projection's inputs (Llama-3.1-8B's 14,336).
  code += "#include \"GatherColumns.cuh\"\n"
          "template __global__ void sol::kernels::gather_columns<14336>("
          "const __grid_constant__ GatherColumnsArgs);\n";
  // Qwen1.5-MoE-A2.7B's shared-expert gate.
  code += "#include \"SigmoidGate.cuh\"\n"
          "template __global__ void sol::kernels::sigmoid_gate<2048, 2048>("
          "const __grid_constant__ SigmoidGateArgs);\n";
  // The epilogue values the specs put into linear_gemv / linear_gemm names.
  code += sol::cat(
      "static_assert(kEpilogueNone == ", static_cast<int>(LinearEpilogue::None),
      ");\n", "static_assert(kEpilogueResidual == ",
      static_cast<int>(LinearEpilogue::Residual), ");\n",
      "static_assert(kEpilogueSwiglu == ",
      static_cast<int>(LinearEpilogue::Swiglu), ");\n");

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

// Every fused variant of the linear kernels (each epilogue, with and without
// the norm prologue, bf16 and fp32 output) on the Llama-3.2-1B and
// Qwen2.5-1.5B shapes, including bias, swiglu without the prologue and the
// split-K finalize of each epilogue.
TEST(KernelCompile, FusedLinearVariantsCompile) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  struct Shape {
    int hidden, intermediate, qkv;
    bool qkvBias;
  };
  std::vector<cuda::KernelInstance> instances;
  auto add = [&instances](const cuda::KernelInstance &instance) {
    if (std::find(instances.begin(), instances.end(), instance) ==
        instances.end())
      instances.push_back(instance);
  };
  for (const Shape &s :
       {Shape{2048, 8192, 3072, false}, Shape{1536, 8960, 2048, true}}) {
    for (int rows : {1, 3, 8}) {
      for (bool norm : {false, true}) {
        add(GemvSpec::choose(s.qkv, s.hidden, rows, LinearOutput::Bf16,
                             s.qkvBias, LinearEpilogue::None, norm)
                .instance());
        add(GemvSpec::choose(s.hidden, s.hidden, rows, LinearOutput::Bf16,
                             false, LinearEpilogue::Residual, norm)
                .instance());
        add(GemvSpec::choose(2 * s.intermediate, s.hidden, rows,
                             LinearOutput::Bf16, false, LinearEpilogue::Swiglu,
                             norm)
                .instance());
      }
      add(GemvSpec::choose(s.hidden, s.intermediate, rows, LinearOutput::Bf16,
                           false, LinearEpilogue::Residual)
              .instance());
      add(GemvSpec::choose(151936, s.hidden, rows, LinearOutput::Fp32, false,
                           LinearEpilogue::None, true)
              .instance());
    }
    for (int rows : {16, 4096})
      for (bool bias : {false, true})
        for (LinearEpilogue e : {LinearEpilogue::None, LinearEpilogue::Residual,
                                 LinearEpilogue::Swiglu}) {
          add(GemmSpec::choose(rows, 2 * s.intermediate, LinearOutput::Bf16,
                               bias, e)
                  .instance());
          // With K: 16 rows split K, the finalize applies bias and epilogue.
          const GemmSpec split = GemmSpec::choose(
              rows, s.hidden, LinearOutput::Bf16, bias, e, 132, s.intermediate);
          add(split.instance());
          if (split.splitK > 1)
            add(split.finalizeInstance());
        }
  }
  // linear_skinny: every epilogue, bias, both prologues, fp32 logits, 8
  // and 16 rows, on the same shapes.
  for (const Shape &s :
       {Shape{2048, 8192, 3072, false}, Shape{1536, 8960, 2048, true}})
    for (int rows : {3, 13}) {
      for (bool norm : {false, true}) {
        add(SkinnySpec::choose(s.qkv, s.hidden, rows, LinearOutput::Bf16,
                               s.qkvBias, LinearEpilogue::None, norm)
                .instance());
        add(SkinnySpec::choose(s.hidden, s.hidden, rows, LinearOutput::Bf16,
                               false, LinearEpilogue::Residual, norm)
                .instance());
        add(SkinnySpec::choose(2 * s.intermediate, s.hidden, rows,
                               LinearOutput::Bf16, false,
                               LinearEpilogue::Swiglu, norm)
                .instance());
      }
      add(SkinnySpec::choose(s.hidden, s.intermediate, rows, LinearOutput::Bf16,
                             false, LinearEpilogue::Residual)
              .instance());
      add(SkinnySpec::choose(151936, s.hidden, rows, LinearOutput::Fp32, false,
                             LinearEpilogue::None, true)
              .instance());
    }
  // Odd K and N with bias: partial k steps, one warp along K.
  add(SkinnySpec::choose(1000, 896, 5, LinearOutput::Bf16, true,
                         LinearEpilogue::Swiglu, true)
          .instance());
  add(SkinnySpec::choose(264, 72, 9, LinearOutput::Bf16, true,
                         LinearEpilogue::Residual, false)
          .instance());
  // The 64 KB prologue (K = 4096, 8 rows) and an odd K / row count.
  add(GemvSpec::choose(6144, 4096, 8, LinearOutput::Bf16, false,
                       LinearEpilogue::None, true)
          .instance());
  add(GemvSpec::choose(1000, 896, 5, LinearOutput::Bf16, true,
                       LinearEpilogue::Swiglu, true)
          .instance());

  const std::vector<nvrtc::KernelSource> sources =
      nvrtc::buildKernelSources(instances);
  std::vector<nvrtc::CompiledKernels> compiled;
  try {
    compiled = compiler->compileAll(sources);
  } catch (const std::exception &e) {
    FAIL() << e.what();
  }
  ASSERT_EQ(compiled.size(), sources.size());
  std::size_t found = 0;
  for (std::size_t i = 0; i < sources.size(); ++i)
    for (const std::string &expr : sources[i].nameExpressions) {
      auto it = compiled[i].loweredNames.find(expr);
      ASSERT_NE(it, compiled[i].loweredNames.end()) << expr;
      EXPECT_NE(compiled[i].ptx.find(".entry " + it->second), std::string::npos)
          << expr << " has no entry in the PTX";
      EXPECT_TRUE(takesItsLaunchArgs(expr, it->second))
          << expr << " lowered to " << it->second;
      ++found;
    }
  EXPECT_EQ(found, instances.size());
}

// The kernels' own static_asserts reject what the specs reject: a swiglu
// GEMV whose warps hold an odd number of W rows (a gate without its up), an
// fp32 GEMM (or split-K finalize) with an epilogue, a split-K GEMM with one,
// and linear_skinny shapes it has no code for. The even / bf16 twins
// compile.
TEST(KernelCompile, FusedLinearKernelsRejectInvalidVariants) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  auto compileOne = [&](const std::string &header, const std::string &expr) {
    nvrtc::KernelSource source;
    source.name = "fused_variant.cu";
    source.code = "#include \"" + header + "\"\n";
    auto headers = nvrtc::embeddedKernelHeaders();
    source.headers.assign(headers.begin(), headers.end());
    source.nameExpressions = {expr};
    return compiler->compile(source);
  };
  auto expectRejected = [&](const std::string &header, const std::string &expr,
                            const std::string &message) {
    try {
      compileOne(header, expr);
      ADD_FAILURE() << expr << " compiled";
    } catch (const sol::Error &e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
          << expr << ": " << e.what();
    }
  };
  expectRejected(
      "LinearGemv.cuh",
      "sol::kernels::linear_gemv<2048, 1, 1, 8, __nv_bfloat16, false, 2, true>",
      "even RowsPerWarp");
  expectRejected(
      "LinearGemm.cuh",
      "sol::kernels::linear_gemm<64, 128, 2, 2, 4, float, false, 1, false>",
      "fp32 output: no epilogue");
  expectRejected(
      "LinearGemm.cuh",
      "sol::kernels::linear_gemm<128, 128, 2, 4, 3, float, false, 2, false>",
      "fp32 output: no epilogue");
  // A split-K GEMM leaves bias and epilogue to its finalize, which has the
  // fp32 rule too.
  expectRejected(
      "LinearGemm.cuh",
      "sol::kernels::linear_gemm<64, 128, 2, 2, 4, float, false, 1, true>",
      "split-K adds bias and epilogue");
  expectRejected("LinearGemm.cuh",
                 "sol::kernels::linear_splitk_finalize<float, false, 2>",
                 "fp32 output: no epilogue");
  expectRejected(
      "LinearSkinny.cuh",
      "sol::kernels::linear_skinny<2048, 4, 1, 8, __nv_bfloat16, false, 0, "
      "false>",
      "MaxRows must be 8 or 16");
  expectRejected(
      "LinearSkinny.cuh",
      "sol::kernels::linear_skinny<2048, 16, 4, 8, __nv_bfloat16, false, 0, "
      "false>",
      "Tiles (16-row tiles per warp) must be 1 or 2");
  EXPECT_NO_THROW(compileOne(
      "LinearGemv.cuh",
      "sol::kernels::linear_gemv<2048, 1, 2, 8, __nv_bfloat16, false, 2, "
      "true>"));
  EXPECT_NO_THROW(compileOne(
      "LinearGemm.cuh",
      "sol::kernels::linear_gemm<64, 128, 2, 2, 4, __nv_bfloat16, false, 1, "
      "false>"));
  EXPECT_NO_THROW(compileOne(
      "LinearGemm.cuh",
      "sol::kernels::linear_splitk_finalize<__nv_bfloat16, true, 2>"));
}

// The GPU calibration evaluator's kernels (Calibration.cuh, runtime sizes),
// compiled as CudaCalibrationEvaluator compiles them: each takes its
// launch-args struct, is bounded to kCalibThreads threads, keeps no stack
// frame and spills nothing, and two blocks fit an SM by registers
// (calib_attention_tc: an instance per head dim, bounded to
// kCalibAttentionTcThreads threads).
TEST(KernelCompile, CalibrationKernelsCompileForSm90) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  options.ptxasVerbose = true;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  using namespace kernels;
  const std::pair<std::string, std::string_view> kernelArgs[] = {
      {"sol::kernels::calib_embedding",
       LaunchArgsName<CalibEmbeddingArgs>::kMangled.view()},
      {"sol::kernels::calib_rms_norm",
       LaunchArgsName<CalibRmsNormArgs>::kMangled.view()},
      {"sol::kernels::calib_rope",
       LaunchArgsName<CalibRopeArgs>::kMangled.view()},
      {"sol::kernels::calib_attention",
       LaunchArgsName<CalibAttentionArgs>::kMangled.view()},
      {"sol::kernels::calib_elementwise",
       LaunchArgsName<CalibElementwiseArgs>::kMangled.view()},
      {"sol::kernels::calib_sigmoid_gate",
       LaunchArgsName<CalibSigmoidGateArgs>::kMangled.view()},
      {"sol::kernels::calib_column_abs_sum",
       LaunchArgsName<CalibColumnAbsSumArgs>::kMangled.view()},
      {"sol::kernels::calib_squared_error",
       LaunchArgsName<CalibSquaredErrorArgs>::kMangled.view()},
      {"sol::kernels::calib_awq_candidate",
       LaunchArgsName<CalibAwqCandidateArgs>::kMangled.view()},
      {"sol::kernels::calib_gram",
       LaunchArgsName<CalibGramArgs>::kMangled.view()},
      {"sol::kernels::calib_clip_search",
       LaunchArgsName<CalibClipSearchArgs>::kMangled.view()},
      {"sol::kernels::calib_to_bf16",
       LaunchArgsName<CalibToBf16Args>::kMangled.view()},
      {"sol::kernels::calib_gather_rows",
       LaunchArgsName<CalibGatherRowsArgs>::kMangled.view()},
      {"sol::kernels::calib_scatter_add_rows",
       LaunchArgsName<CalibScatterAddRowsArgs>::kMangled.view()}};
  // calib_attention_tc: an instance per head dim, blocks of
  // kCalibAttentionTcThreads.
  std::vector<std::string> tcKernels;
  for (int dim : {64, 80, 96, 128, 256})
    tcKernels.push_back("sol::kernels::calib_attention_tc<" +
                        std::to_string(dim) + ">");
  nvrtc::KernelSource source;
  source.name = "calibration.cu";
  source.code = "#include \"Calibration.cuh\"\n";
  auto headers = nvrtc::embeddedKernelHeaders();
  source.headers.assign(headers.begin(), headers.end());
  for (const auto &[expr, args] : kernelArgs)
    source.nameExpressions.push_back(expr);
  for (const std::string &expr : tcKernels)
    source.nameExpressions.push_back(expr);
  const nvrtc::CompiledKernels compiled = compiler->compile(source);
  EXPECT_NE(compiled.ptx.find(".target sm_90"), std::string::npos);
  const std::map<std::string, KernelResources> report =
      parsePtxasReport(compiled.log);
  for (const auto &[expr, args] : kernelArgs) {
    SCOPED_TRACE(expr);
    const auto it = compiled.loweredNames.find(expr);
    ASSERT_NE(it, compiled.loweredNames.end());
    const std::string &lowered = it->second;
    EXPECT_TRUE(std::string_view(lowered).ends_with(args)) << lowered;
    EXPECT_NE(compiled.ptx.find(".entry " + lowered), std::string::npos);
    EXPECT_EQ(maxThreadsPerBlock(compiled.ptx, lowered), kCalibThreads);
    const auto used = report.find(lowered);
    ASSERT_NE(used, report.end()) << compiled.log;
    EXPECT_EQ(used->second.stackBytes, 0);
    EXPECT_EQ(used->second.spillBytes, 0);
    EXPECT_GE(blocksPerSm(used->second.registers, kCalibThreads), 2)
        << used->second.registers << " registers";
  }
  for (const std::string &expr : tcKernels) {
    SCOPED_TRACE(expr);
    const auto it = compiled.loweredNames.find(expr);
    ASSERT_NE(it, compiled.loweredNames.end());
    const std::string &lowered = it->second;
    EXPECT_TRUE(std::string_view(lowered).ends_with(
        LaunchArgsName<CalibAttentionArgs>::kMangled.view()))
        << lowered;
    EXPECT_NE(compiled.ptx.find(".entry " + lowered), std::string::npos);
    EXPECT_EQ(maxThreadsPerBlock(compiled.ptx, lowered),
              kCalibAttentionTcThreads);
    const auto used = report.find(lowered);
    ASSERT_NE(used, report.end()) << compiled.log;
    EXPECT_EQ(used->second.stackBytes, 0);
    EXPECT_EQ(used->second.spillBytes, 0);
    EXPECT_GE(blocksPerSm(used->second.registers, kCalibAttentionTcThreads), 2)
        << used->second.registers << " registers";
  }
}

// linear_wgmma_fp8 for sm_90a: every epilogue and tile width compiles
// without spills, takes Fp8GemmArgs, declares its 384 threads, and the
// host's shared-memory size is the kernel's.
TEST(KernelCompile, Fp8WgmmaCompilesForSm90a) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  options.ptxasVerbose = true;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  std::vector<cuda::KernelInstance> instances;
  std::string asserts = "using namespace sol::kernels;\n";
  for (auto [tileN, stages] : {std::pair{256, 3}, {128, 5}})
    for (LinearEpilogue e : {LinearEpilogue::None, LinearEpilogue::Residual,
                             LinearEpilogue::Swiglu, LinearEpilogue::Geglu})
      for (bool bias : {false, true}) {
        cuda::Fp8WgmmaSpec spec = cuda::Fp8WgmmaSpec::choose(bias, e);
        if (bias && spec.tileN != tileN)
          continue; // biased linears take 128 columns (choose)
        spec.tileN = tileN;
        spec.stages = stages;
        ASSERT_TRUE(spec.fits());
        instances.push_back(spec.instance());
        asserts += sol::cat("static_assert(Fp8WgmmaShape<", tileN, ", ", stages,
                            ">::kSharedBytes == ", spec.sharedBytes(), ");\n");
      }
  std::vector<nvrtc::KernelSource> sources =
      nvrtc::buildKernelSources(instances);
  ASSERT_FALSE(sources.empty());
  sources[0].code += asserts;
  std::size_t found = 0;
  for (const nvrtc::KernelSource &source : sources) {
    EXPECT_TRUE(source.archSpecific);
    const nvrtc::CompiledKernels compiled = compiler->compile(source);
    EXPECT_NE(compiled.ptx.find(".target sm_90a"), std::string::npos);
    const std::map<std::string, KernelResources> report =
        parsePtxasReport(compiled.log);
    for (const std::string &expr : source.nameExpressions) {
      SCOPED_TRACE(expr);
      const auto it = compiled.loweredNames.find(expr);
      ASSERT_NE(it, compiled.loweredNames.end());
      EXPECT_TRUE(takesItsLaunchArgs(expr, it->second));
      EXPECT_EQ(maxThreadsPerBlock(compiled.ptx, it->second),
                cuda::Fp8WgmmaSpec::kThreads);
      const auto used = report.find(it->second);
      ASSERT_NE(used, report.end()) << compiled.log;
      EXPECT_EQ(used->second.stackBytes, 0);
      EXPECT_EQ(used->second.spillBytes, 0);
      ++found;
    }
  }
  EXPECT_EQ(found, instances.size());
}

// The calib_* grids the host launches (calib*Blocks), as documented.
TEST(KernelCompile, CalibrationLaunchGeometry) {
  using namespace kernels;
  EXPECT_EQ(calibAttentionBlocks(65536, 32),
            65536u / kCalibAttentionBlockTokens * 32);
  EXPECT_EQ(calibAttentionBlocks(65, 2), 4u);
  EXPECT_EQ(calibEmbeddingBlocks(70), 70u);
  EXPECT_EQ(calibRopeBlocks(70), 70u);
  EXPECT_EQ(calibSigmoidGateBlocks(70), 70u);
  EXPECT_EQ(calibRowBlocks(70), 70u);
  // A warp per run of `group` columns.
  EXPECT_EQ(calibRmsNormBlocks(65536, 4096, 4096), 8192u);
  EXPECT_EQ(calibRmsNormBlocks(65536, 4096, 128), 262144u);
  EXPECT_EQ(calibAwqCandidateBlocks(14336, 4096, 128), 57344u);
  // Not quantized (group does not divide cols): a thread per element.
  EXPECT_EQ(calibAwqCandidateBlocks(10, 100, 64), 4u);
  EXPECT_EQ(calibElementwiseBlocks(1000), 4u);
  EXPECT_EQ(calibElementwiseBlocks(1ull << 40),
            static_cast<unsigned>(kCalibMaxBlocks));
  EXPECT_EQ(calibSquaredErrorBlocks(1ull << 30),
            static_cast<unsigned>(kCalibSquaredErrorMaxBlocks));
  EXPECT_EQ(calibColumnAbsSumBlocks(65536, 4096), 16u * 256u);
  EXPECT_EQ(calibGramBlocks(4096, 128), 32u * 4u);
  EXPECT_EQ(calibGramBlocks(96, 32), 3u);
  EXPECT_EQ(calibClipSearchBlocks(14336, 4096, 128), 32u * 896u);
  EXPECT_EQ(calibClipSearchBlocks(17, 96, 32), 3u * 2u);
}

} // namespace
} // namespace sol::test

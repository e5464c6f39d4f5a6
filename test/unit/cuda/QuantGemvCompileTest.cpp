//===- QuantGemvCompileTest.cpp - The quantized linears compile with NVRTC ===//
//
// Every linear_gemv_quant instance QuantGemvSpec::choose picks for the
// decode linears (1, 2, 4 and 8 rows) of the supported model shapes (and
// linear_gemv_quant_mma's for their int4 weights at one row), and
// every linear_skinny_quant instance QuantSkinnySpec::choose picks for the
// Llama-3.2-1B and Llama-3.1-8B layers at 8 and 16 rows, in all three weight
// formats, compiles for sm_90 through the path solc uses, takes
// QuantLinearArgs, and fits in registers: no spills, no stack, and at least
// the two blocks per SM its launch bound asks for. The resources are
// printed (registers, blocks per SM by registers and by shared memory) so
// that a change can be compared. QuantSkinnySpec's shared memory and block
// are checked against the header's QuantSkinnyShape, and its instance()
// against what the kernel cannot run.
//
//===----------------------------------------------------------------------===//

#include "KernelResources.h"
#include "NvrtcTestSupport.h"
#include "codegen/kernels/LaunchArgs.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace sol::test {
namespace {

using cuda::KernelInstance;
using cuda::LinearEpilogue;
using cuda::LinearOutput;
using cuda::QuantGemmSpec;
using cuda::QuantGemvSpec;
using cuda::QuantSkinnySpec;
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

/// Compiles `instances` for sm_90 as solc does and checks that each takes
/// Args (QuantLinearArgs unless given), has 256 threads, no spills, no
/// stack frame and at least `minBlocksPerSm` blocks per SM by registers.
/// Resources by name expression.
template <typename Args = kernels::QuantLinearArgs>
std::map<std::string, KernelResources>
compileAndCheck(const nvrtc::NvrtcCompiler &compiler,
                const std::vector<KernelInstance> &instances,
                int minBlocksPerSm = 2) {
  const std::vector<nvrtc::KernelSource> sources =
      nvrtc::buildKernelSources(instances);
  const std::vector<nvrtc::CompiledKernels> compiled =
      compiler.compileAll(sources);
  EXPECT_EQ(compiled.size(), sources.size());

  const std::string_view takes = kernels::LaunchArgsName<Args>::kMangled.view();
  std::map<std::string, KernelResources> resources;
  for (std::size_t i = 0; i < sources.size() && i < compiled.size(); ++i) {
    const nvrtc::CompiledKernels &kernels = compiled[i];
    EXPECT_FALSE(kernels.cubin.empty()) << sources[i].name;
    const std::map<std::string, KernelResources> report =
        parsePtxasReport(kernels.log);
    for (const std::string &expr : sources[i].nameExpressions) {
      const auto lowered = kernels.loweredNames.find(expr);
      if (lowered == kernels.loweredNames.end()) {
        ADD_FAILURE() << expr << ": no lowered name";
        continue;
      }
      EXPECT_TRUE(std::string_view(lowered->second).ends_with(takes))
          << expr << " lowered to " << lowered->second;
      const auto used = report.find(lowered->second);
      if (used == report.end()) {
        ADD_FAILURE() << expr << ": no ptxas report in the log";
        continue;
      }
      KernelResources r = used->second;
      r.threads = maxThreadsPerBlock(kernels.ptx, lowered->second);
      r.blocksPerSm = blocksPerSm(r.registers, r.threads);
      EXPECT_EQ(r.threads, 256) << expr;
      EXPECT_EQ(r.spillBytes, 0) << expr << " spills";
      EXPECT_EQ(r.stackBytes, 0) << expr << " has a stack frame";
      EXPECT_GE(r.blocksPerSm, minBlocksPerSm)
          << expr << ": " << r.registers << " registers";
      resources[expr] = r;
    }
  }
  EXPECT_EQ(resources.size(), instances.size());
  return resources;
}

/// The instances of `cases`, each once.
template <typename Case>
std::vector<KernelInstance> uniqueInstances(const std::vector<Case> &cases) {
  std::vector<KernelInstance> instances;
  for (const Case &c : cases)
    if (std::find(instances.begin(), instances.end(), c.spec.instance()) ==
        instances.end())
      instances.push_back(c.spec.instance());
  return instances;
}

/// Blocks per SM by shared memory: 228 KB an SM, 1 KB of it reserved per
/// block.
int blocksBySharedMemory(int bytes) {
  return std::min(228 * 1024 / (bytes + 1024), 32);
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
  const std::map<std::string, KernelResources> resources =
      compileAndCheck(*compiler, uniqueInstances(cases));

  // The table: one line per case, resources of its instance (static
  // shared memory not counted).
  std::printf("%-34s %-6s %3s %3s %8s %5s %6s %6s\n", "case", "grid", "R", "WK",
              "smem", "regs", "by_reg", "by_smem");
  for (const QuantCase &c : cases) {
    const auto it = resources.find(c.spec.instance().nameExpression);
    if (it == resources.end())
      continue;
    const cuda::LaunchDims d = c.spec.dims(c.outFeatures);
    std::printf("%-34s %-6u %3d %3d %8u %5d %6d %6d\n", c.label.c_str(),
                d.grid.x, c.spec.rowsPerWarp, c.spec.warpsK, d.sharedBytes,
                it->second.registers, it->second.blocksPerSm,
                blocksBySharedMemory(static_cast<int>(d.sharedBytes)));
  }
}

// The linear_gemv_quant_mma instances of the same linears at one row (int4
// in groups of 128) compile the same way and fit two blocks an SM, and
// their shared memory is the header's.
TEST(QuantGemvCompile, MmaInstancesCompileForSm90) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false; // really compile
  options.ptxasVerbose = true;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  struct MmaCase {
    std::string label;
    cuda::QuantGemvMmaSpec spec;
  };
  std::vector<MmaCase> cases;
  std::string shapes = "#include \"LinearGemvQuantMma.cuh\"\n"
                       "using namespace sol::kernels;\n";
  for (const QuantCase &c : quantCases()) {
    const QuantGemvSpec &g = c.spec;
    if (g.maxRows != 1 ||
        !cuda::QuantGemvMmaSpec::runs(g.format, g.inFeatures, g.groupSize))
      continue;
    const cuda::QuantGemvMmaSpec spec =
        cuda::QuantGemvMmaSpec::choose(g.inFeatures, g.output, g.bias,
                                       g.epilogue, g.normPrologue, g.groupSize);
    cases.push_back({c.label, spec});
    shapes += sol::cat("static_assert(quant_gemv_mma::sharedBytes<",
                       g.inFeatures, ", ", g.normPrologue ? "true" : "false",
                       ">() == ", spec.sharedBytes(), ");\n");
  }
  ASSERT_FALSE(cases.empty());
  const std::map<std::string, KernelResources> resources =
      compileAndCheck(*compiler, uniqueInstances(cases));
  for (const MmaCase &c : cases) {
    const auto it = resources.find(c.spec.instance().nameExpression);
    if (it != resources.end())
      std::printf("%-34s T%d S%d D%d %6d %5d %6d\n", c.label.c_str(),
                  c.spec.tiles, c.spec.slicesK, c.spec.depth,
                  c.spec.sharedBytes(), it->second.registers,
                  it->second.blocksPerSm);
  }

  nvrtc::KernelSource source;
  source.name = "quant_gemv_mma_spec.cu";
  source.code = shapes;
  auto headers = nvrtc::embeddedKernelHeaders();
  source.headers.assign(headers.begin(), headers.end());
  EXPECT_NO_THROW(compiler->compile(source)) << shapes;
}

struct QuantSkinnyCase {
  std::string label; // model, linear, format, rows
  QuantSkinnySpec spec;
  int outFeatures;
};

/// The linears of a Llama-3.2-1B and a Llama-3.1-8B layer as the fused plan
/// runs them, at 8 and 16 rows (QuantSkinnySpec::choose picks by maxRows),
/// int4 in groups of 128. `tooLarge` gets those whose shared memory does
/// not fit.
std::vector<QuantSkinnyCase>
quantSkinnyCases(std::vector<std::string> &tooLarge) {
  struct Linear {
    const char *name;
    int n, k;
    LinearEpilogue epilogue;
    bool norm;
  };
  const Linear linears[] = {
      {"1B qkv", 3072, 2048, LinearEpilogue::None, true},
      {"1B o", 2048, 2048, LinearEpilogue::Residual, false},
      {"1B gate_up", 16384, 2048, LinearEpilogue::Swiglu, true},
      {"1B down", 2048, 8192, LinearEpilogue::Residual, false},
      {"8B qkv", 6144, 4096, LinearEpilogue::None, true},
      {"8B o", 4096, 4096, LinearEpilogue::Residual, false},
      {"8B gate_up", 28672, 4096, LinearEpilogue::Swiglu, true},
      {"8B down", 4096, 14336, LinearEpilogue::Residual, false},
  };
  std::vector<QuantSkinnyCase> cases;
  for (WeightFormat f :
       {WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Fp8})
    for (const Linear &l : linears)
      for (int rows : {8, 16}) {
        const QuantSkinnySpec spec = QuantSkinnySpec::choose(
            l.n, l.k, rows, f, LinearOutput::Bf16, false, l.epilogue, l.norm,
            f == WeightFormat::Int4 ? 128 : 0);
        const std::string label =
            sol::cat(l.name, " ", formatName(f), " T=", rows);
        if (spec.fits())
          cases.push_back({label, spec, l.n});
        else
          tooLarge.push_back(label);
      }
  return cases;
}

TEST(QuantSkinnyCompile, ModelInstancesCompileForSm90) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false; // really compile
  options.ptxasVerbose = true;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  std::vector<std::string> tooLarge;
  const std::vector<QuantSkinnyCase> cases = quantSkinnyCases(tooLarge);
  // Even 16 rows of fp8 x at K = 14,336 (8B down: 225 KB of E4M3 rows,
  // which the partial sums reuse) fit a block's shared memory.
  EXPECT_TRUE(tooLarge.empty()) << tooLarge.front();
  const std::map<std::string, KernelResources> resources =
      compileAndCheck(*compiler, uniqueInstances(cases));

  std::printf("%-24s %-6s %2s %2s %7s %5s %6s %7s\n", "case", "grid", "T", "WK",
              "smem", "regs", "by_reg", "by_smem");
  for (const QuantSkinnyCase &c : cases) {
    const auto it = resources.find(c.spec.instance().nameExpression);
    if (it == resources.end())
      continue;
    const cuda::LaunchDims d = c.spec.dims(c.outFeatures);
    const int shared = c.spec.sharedBytes() + c.spec.staticSharedBytes();
    std::printf("%-24s %-6u %2d %2d %7d %5d %6d %7d\n", c.label.c_str(),
                d.grid.x, c.spec.tiles, c.spec.warpsK, shared,
                it->second.registers, it->second.blocksPerSm,
                blocksBySharedMemory(shared));
  }
}

/// The kernels' spelling of a WeightFormat.
const char *enumName(WeightFormat f) {
  return f == WeightFormat::Int8   ? "Int8"
         : f == WeightFormat::Int4 ? "Int4"
                                   : "Fp8";
}

// QuantSkinnySpec's shared memory and block geometry are the header's.
TEST(QuantSkinnyCompile, SpecMatchesTheKernelShape) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  std::vector<std::string> tooLarge;
  std::vector<QuantSkinnySpec> specs;
  for (const QuantSkinnyCase &c : quantSkinnyCases(tooLarge))
    specs.push_back(c.spec);
  // Odd K, both tile counts and every warp split.
  for (int warpsK : {1, 2, 4, 8})
    for (WeightFormat f :
         {WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Fp8})
      specs.push_back({{f, f == WeightFormat::Int4 ? 384 : 208,
                        LinearOutput::Fp32, true, LinearEpilogue::None,
                        warpsK > 2, f == WeightFormat::Int4 ? 128 : 0},
                       16,
                       warpsK % 2 + 1,
                       warpsK});
  std::string code = "#include \"LinearSkinnyQuant.cuh\"\n"
                     "using namespace sol::kernels;\n";
  for (const QuantSkinnySpec &spec : specs) {
    const std::string shape =
        sol::cat("QuantSkinnyShape<WeightFormat::", enumName(spec.format), ", ",
                 spec.inFeatures, ", ", spec.maxRows, ", ", spec.tiles, ", ",
                 spec.warpsK, ", ", spec.normPrologue ? "true" : "false", ">");
    code += sol::cat("static_assert(", shape,
                     "::kSharedBytes == ", spec.sharedBytes(), ");\n",
                     "static_assert(", shape,
                     "::kFeatures == ", spec.featuresPerBlock(), ");\n");
  }
  code += sol::cat("static_assert(kSkinnyThreads == ",
                   QuantSkinnySpec{}.dims(16).block.x, ");\n");
  nvrtc::KernelSource source;
  source.name = "quant_skinny_spec.cu";
  source.code = code;
  auto headers = nvrtc::embeddedKernelHeaders();
  source.headers.assign(headers.begin(), headers.end());
  EXPECT_NO_THROW(compiler->compile(source)) << code;
}

/// instance()'s message for `spec`, or "" when it does not fail.
std::string instanceFailure(const QuantSkinnySpec &spec) {
  try {
    spec.instance();
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

TEST(QuantSkinnySpec, RefusesWhatTheKernelCannotRun) {
  const QuantSkinnySpec good{{WeightFormat::Int4, 2048, LinearOutput::Bf16,
                              false, LinearEpilogue::None, false, 128},
                             8,
                             1,
                             8};
  EXPECT_EQ(instanceFailure(good), "");
  EXPECT_EQ(good.instance().header, "LinearSkinnyQuant.cuh");
  EXPECT_EQ(good.instance().nameExpression,
            "sol::kernels::linear_skinny_quant<sol::kernels::WeightFormat::"
            "Int4, 2048, 8, 1, 8, __nv_bfloat16, false, 0, false, 128>");
  auto refused = [&](auto change, const char *says) {
    QuantSkinnySpec spec = good;
    change(spec);
    const std::string message = instanceFailure(spec);
    EXPECT_NE(message.find(says), std::string::npos)
        << "expected \"" << says << "\", got \"" << message << "\"";
  };
  // int4 groups must hold whole k steps of 128 values and divide K.
  refused([](QuantSkinnySpec &s) { s.groupSize = 64; }, "group size");
  refused([](QuantSkinnySpec &s) { s.groupSize = 0; }, "group size");
  refused([](QuantSkinnySpec &s) { s.groupSize = 384; }, "in features");
  refused(
      [](QuantSkinnySpec &s) {
        s.format = WeightFormat::Int8;
        s.groupSize = 128;
      },
      "one scale per row");
  refused(
      [](QuantSkinnySpec &s) {
        s.format = WeightFormat::Fp8;
        s.groupSize = 0;
        s.inFeatures = 2056;
      },
      "multiple of 16");
  refused([](QuantSkinnySpec &s) { s.maxRows = 4; }, "maxRows");
  refused([](QuantSkinnySpec &s) { s.tiles = 3; }, "tiles");
  refused([](QuantSkinnySpec &s) { s.warpsK = 3; }, "warpsK");
  refused(
      [](QuantSkinnySpec &s) {
        s.output = LinearOutput::Fp32;
        s.epilogue = LinearEpilogue::Residual;
      },
      "bf16 output");
  // 16 rows of E4M3 x at K = 16,384, and the norm prologue's bf16 rows at
  // K = 8,192.
  refused(
      [](QuantSkinnySpec &s) {
        s.format = WeightFormat::Fp8;
        s.groupSize = 0;
        s.inFeatures = 16384;
        s.maxRows = 16;
      },
      "shared memory");
  refused(
      [](QuantSkinnySpec &s) {
        s.inFeatures = 8192;
        s.maxRows = 16;
        s.normPrologue = true;
      },
      "shared memory");
  EXPECT_THROW(QuantSkinnySpec::choose(2048, 2048, 17, WeightFormat::Int8,
                                       LinearOutput::Bf16, false,
                                       LinearEpilogue::None, false, 0),
               std::exception);
  EXPECT_THROW(QuantSkinnySpec::choose(2048, 2048, 4, WeightFormat::Int4,
                                       LinearOutput::Bf16, false,
                                       LinearEpilogue::None, false, 32),
               std::exception);
}

// The geometry fills the GPU as linear_skinny's rule does: at 8 rows the
// most blocks within one wave of two blocks per SM.
TEST(QuantSkinnySpec, ChooseFillsTheGpu) {
  for (WeightFormat f :
       {WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Fp8})
    for (const auto &[n, k] : {std::pair{3072, 2048}, std::pair{16384, 2048},
                               std::pair{4096, 14336}, std::pair{28672, 4096}})
      for (int rows : {1, 8, 16}) {
        const QuantSkinnySpec spec = QuantSkinnySpec::choose(
            n, k, rows, f, LinearOutput::Bf16, false, LinearEpilogue::None,
            false, f == WeightFormat::Int4 ? 128 : 0, 132);
        SCOPED_TRACE(sol::cat(formatName(f), " ", n, "x", k, " rows ", rows));
        EXPECT_EQ(spec.maxRows, rows <= 8 ? 8 : 16);
        const unsigned blocks = spec.dims(n).grid.x;
        if (rows <= 8) {
          EXPECT_LE(blocks, 264u);
        }
        EXPECT_GE(blocks, 64u);
        // Every warp along K gets at least two 64-byte steps of a row.
        const int rowBytes = f == WeightFormat::Int4 ? k / 2 : k;
        EXPECT_GE(rowBytes / 64, 2 * spec.warpsK);
      }
}

// Every linear_gemm_quant instance (and split-K finalize) QuantGemmSpec
// picks for the Llama-3.2-1B and Llama-3.1-8B linears, int8 and int4, for
// each row bucket of batched decode compiles for sm_90, takes
// QuantGemmArgs, fits in registers without spills (one block per SM at
// least: 64-row int4 tiles hold two sets of accumulators), and its shared
// memory is the header's QuantGemmShape's.
TEST(QuantGemmCompile, SelectedInstancesCompileForSm90) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false; // really compile
  options.ptxasVerbose = true;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  struct Linear {
    int n, k;
    LinearEpilogue epilogue;
  };
  const Linear linears[] = {{3072, 2048, LinearEpilogue::None},
                            {2048, 2048, LinearEpilogue::Residual},
                            {16384, 2048, LinearEpilogue::Swiglu},
                            {2048, 8192, LinearEpilogue::Residual},
                            {28672, 4096, LinearEpilogue::Swiglu},
                            {4096, 14336, LinearEpilogue::Residual}};
  std::vector<KernelInstance> instances;
  std::string shapes = "#include \"LinearGemmQuant.cuh\"\n"
                       "using namespace sol::kernels;\n";
  for (WeightFormat f : {WeightFormat::Int8, WeightFormat::Int4})
    for (const Linear &l : linears)
      for (int rows : {16, 32, 64, 128}) {
        const QuantGemmSpec spec = QuantGemmSpec::choose(
            rows, l.n, l.k, f, LinearOutput::Bf16, false, l.epilogue,
            f == WeightFormat::Int4 ? 128 : 0);
        if (std::find(instances.begin(), instances.end(), spec.instance()) !=
            instances.end())
          continue;
        instances.push_back(spec.instance());
        shapes +=
            sol::cat("static_assert(QuantGemmShape<WeightFormat::", enumName(f),
                     ", ", spec.tileM, ", ", spec.tileN, ", ", spec.warpsM,
                     ", ", spec.warpsN, ", ", spec.stages, ", ", spec.kSub,
                     ">::kSharedBytes == ", spec.sharedBytes(), ");\n");
      }
  const std::map<std::string, KernelResources> resources =
      compileAndCheck<kernels::QuantGemmArgs>(*compiler, instances, 1);
  for (const auto &[expr, r] : resources)
    std::printf("%-100s %5d %6d\n", expr.c_str(), r.registers, r.blocksPerSm);

  nvrtc::KernelSource source;
  source.name = "quant_gemm_spec.cu";
  source.code = shapes;
  auto headers = nvrtc::embeddedKernelHeaders();
  source.headers.assign(headers.begin(), headers.end());
  EXPECT_NO_THROW(compiler->compile(source)) << shapes;
}

} // namespace
} // namespace sol::test

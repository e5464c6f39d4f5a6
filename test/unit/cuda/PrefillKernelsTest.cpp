//===- PrefillKernelsTest.cpp - The kernels of long-prompt steps ----------===//
//
// The host half of the tensor-core prefill attention: how a step's tokens
// are cut into tiles (every token in exactly one tile, a tile never crosses
// a sequence or a gap in positions), which steps and plans use it, and that
// its instances (bf16 and fp8 KV caches) compile with NVRTC with the
// constants the host assumes; and the
// SwiGLU over interleaved pairs that follows a cuBLASLt gate/up GEMM.
//
//===----------------------------------------------------------------------===//

#include "ModelKernelInstances.h"
#include "NvrtcTestSupport.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "runtime/cuda/KernelSelection.h"
#include "runtime/cuda/PrefillAttention.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace sol::test {
namespace {

using cuda::planPrefillTiles;
using cuda::PrefillAttentionSpec;
using cuda::PrefillTile;

struct Step {
  std::vector<int32_t> seq, pos;
  /// Appends `n` tokens of sequence `s` from position `from`.
  Step &run(int32_t s, int32_t from, int32_t n) {
    for (int32_t i = 0; i < n; ++i) {
      seq.push_back(s);
      pos.push_back(s < 0 ? 0 : from + i);
    }
    return *this;
  }
};

/// Every token in exactly one tile; each tile one sequence at consecutive
/// positions, 1..maxRows rows.
void expectPartition(const Step &step, const std::vector<PrefillTile> &tiles,
                     int maxRows) {
  std::vector<int> covered(step.seq.size(), 0);
  for (const PrefillTile &t : tiles) {
    ASSERT_GE(t.rows, 1);
    ASSERT_LE(t.rows, maxRows);
    ASSERT_GE(t.firstToken, 0);
    ASSERT_LE(t.firstToken + t.rows, static_cast<int32_t>(step.seq.size()));
    for (int32_t i = t.firstToken; i < t.firstToken + t.rows; ++i) {
      ++covered[i];
      if (i > t.firstToken) {
        EXPECT_EQ(step.seq[i], step.seq[t.firstToken]) << "token " << i;
        EXPECT_GE(step.seq[i], 0) << "padding shares a tile, token " << i;
        EXPECT_EQ(step.pos[i], step.pos[i - 1] + 1) << "token " << i;
      }
    }
  }
  for (std::size_t i = 0; i < covered.size(); ++i)
    EXPECT_EQ(covered[i], 1) << "token " << i;
}

TEST(PrefillTiles, OneLongPromptSplitsEvenly) {
  Step step;
  step.run(0, 0, 130); // 130 = 44 + 43 + 43, not 64 + 64 + 2
  const auto tiles = planPrefillTiles(step.seq, step.pos, 64);
  ASSERT_EQ(tiles.size(), 3u);
  expectPartition(step, tiles, 64);
  std::vector<int32_t> rows;
  for (const PrefillTile &t : tiles)
    rows.push_back(t.rows);
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, (std::vector<int32_t>{43, 43, 44}));
  // The tile ending at the highest position comes first.
  EXPECT_EQ(tiles.front().firstToken + tiles.front().rows, 130);
}

TEST(PrefillTiles, DecodesChunksAndPaddingMixed) {
  Step step;
  step.run(2, 40, 1)
      .run(0, 100, 1)
      .run(1, 16, 70) // a chunk after a cached prefix
      .run(3, 0, 64)
      .run(-1, 0, 3); // padding: one tile per token
  const auto tiles = planPrefillTiles(step.seq, step.pos, 64);
  expectPartition(step, tiles, 64);
  EXPECT_EQ(tiles.size(), 1u + 1u + 2u + 1u + 3u);
  EXPECT_EQ(cuda::longestPromptRun(step.seq, step.pos), 70);
  EXPECT_TRUE(cuda::usePrefillAttention(step.seq, step.pos));
}

TEST(PrefillTiles, SameSequenceWithAGapIsTwoRuns) {
  Step step;
  step.run(0, 0, 10).run(0, 20, 10); // positions jump: two runs
  const auto tiles = planPrefillTiles(step.seq, step.pos, 64);
  expectPartition(step, tiles, 64);
  EXPECT_EQ(tiles.size(), 2u);
}

TEST(PrefillTiles, DecodeStepsKeepPagedAttention) {
  Step step;
  for (int s = 0; s < 200; ++s)
    step.run(s, 500 + s, 1);
  EXPECT_EQ(cuda::longestPromptRun(step.seq, step.pos), 1);
  EXPECT_FALSE(cuda::usePrefillAttention(step.seq, step.pos));
  Step chunk;
  chunk.run(0, 0, 63);
  EXPECT_FALSE(cuda::usePrefillAttention(chunk.seq, chunk.pos));
  chunk.run(0, 63, 1);
  EXPECT_TRUE(cuda::usePrefillAttention(chunk.seq, chunk.pos));
}

TEST(PrefillTiles, RandomStepsArePartitioned) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Step step;
    const int runs = 1 + static_cast<int>(rng() % 12);
    for (int r = 0; r < runs; ++r)
      step.run(static_cast<int32_t>(rng() % 6) - 1,
               static_cast<int32_t>(rng() % 300),
               1 + static_cast<int32_t>(rng() % 200));
    const int maxRows = 1 + static_cast<int>(rng() % 64);
    expectPartition(step, planPrefillTiles(step.seq, step.pos, maxRows),
                    maxRows);
  }
}

TEST(PrefillTiles, BadInputsAreErrors) {
  const std::vector<int32_t> seq = {0, 0}, pos = {0};
  EXPECT_THROW(planPrefillTiles(seq, pos, 64), Error);
  const std::vector<int32_t> pos2 = {0, 1};
  EXPECT_THROW(planPrefillTiles(seq, pos2, 0), Error);
}

TEST(PrefillAttentionSpec, ShapesAndGeometry) {
  const PrefillAttentionSpec spec{32, 8, 128, 16};
  EXPECT_TRUE(spec.supported());
  EXPECT_EQ(spec.instance().nameExpression,
            "sol::kernels::prefill_attention<32, 8, 128, 16>");
  EXPECT_EQ(spec.dims(10).grid.x, 10u);
  EXPECT_EQ(spec.dims(10).grid.y, 32u);
  EXPECT_EQ(spec.dims(10).sharedBytes, 5u * 64 * 128 * 2);
  EXPECT_TRUE((PrefillAttentionSpec{32, 8, 96, 16}.supported()));
  EXPECT_EQ((PrefillAttentionSpec{32, 32, 96, 16}.dims(1).sharedBytes),
            5u * 64 * 104 * 2); // rows padded to 13 chunks
  EXPECT_FALSE((PrefillAttentionSpec{30, 8, 128, 16}.supported()));
  EXPECT_THROW((PrefillAttentionSpec{32, 8, 112, 16}.instance()), Error);
}

// The fp8 cache's kernel: its own name, the same grid and block, and shared
// memory for a staging tile of E4M3 K and V rows and two stages of scales.
TEST(PrefillAttentionSpec, Fp8ShapesAndGeometry) {
  const PrefillAttentionSpec spec{32, 8, 128, 32, true};
  EXPECT_TRUE(spec.supported());
  EXPECT_EQ(spec.instance().nameExpression,
            "sol::kernels::prefill_attention_fp8<32, 8, 128, 32>");
  EXPECT_EQ(spec.instance().header, "PrefillAttention.cuh");
  const PrefillAttentionSpec bf16{32, 8, 128, 32};
  EXPECT_EQ(spec.dims(10).grid.x, bf16.dims(10).grid.x);
  EXPECT_EQ(spec.dims(10).grid.y, 32u);
  EXPECT_EQ(spec.dims(10).block.x, bf16.dims(10).block.x);
  EXPECT_EQ(spec.dims(10).sharedBytes,
            5u * 64 * 128 * 2 + 2u * 64 * 128 + 2u * 2 * 64 * 4);
  EXPECT_EQ((PrefillAttentionSpec{32, 8, 64, 16, true}.sharedBytes()),
            5u * 64 * 64 * 2 + 2u * 64 * 64 + 2u * 2 * 64 * 4);
  EXPECT_EQ(
      (PrefillAttentionSpec{14, 2, 64, 16, true}.instance().nameExpression),
      "sol::kernels::prefill_attention_fp8<14, 2, 64, 16>");
  EXPECT_TRUE((PrefillAttentionSpec{32, 8, 256, 16, true}.supported()));
  EXPECT_EQ((PrefillAttentionSpec{32, 8, 80, 16, true}.sharedBytes()),
            5u * 64 * 88 * 2 + 2u * 64 * 80 + 2u * 2 * 64 * 4);
  EXPECT_THROW((PrefillAttentionSpec{32, 8, 512, 16, true}.instance()), Error);
}

// solc compiles the tensor-core prefill kernel into plans whose steps may
// hold a full tile of prompt tokens, for either cache dtype.
TEST(PrefillAttentionSpec, PlansWithLongStepsCompileIt) {
  cuda::OpDesc op;
  op.kind = OpKind::Attention;
  op.heads = 32, op.kvHeads = 8, op.headDim = 128;
  op.blockSize = 32;
  const auto has = [](const std::vector<cuda::KernelInstance> &kernels,
                      const std::string &name) {
    return std::any_of(kernels.begin(), kernels.end(),
                       [&](const auto &k) { return k.nameExpression == name; });
  };
  const std::string bf16 = "sol::kernels::prefill_attention<32, 8, 128, 32>";
  const std::string fp8 = "sol::kernels::prefill_attention_fp8<32, 8, 128, 32>";
  auto kernels = cuda::enumerateKernels(op, 2048, 4096);
  EXPECT_TRUE(has(kernels, bf16));
  EXPECT_FALSE(has(kernels, fp8));
  op.kvDtype = fb::DType::F8E4M3;
  kernels = cuda::enumerateKernels(op, 2048, 4096);
  EXPECT_TRUE(has(kernels, fp8));
  EXPECT_FALSE(has(kernels, bf16));
  EXPECT_TRUE(
      has(kernels, "sol::kernels::paged_attention_fp8<32, 8, 128, 32, false>"));
  // Decode steps' variant with the rope and KV append fused in.
  EXPECT_TRUE(
      has(kernels, "sol::kernels::paged_attention_fp8<32, 8, 128, 32, true>"));
  const PrefillAttentionSpec spec = cuda::prefillAttentionSpec(op);
  EXPECT_TRUE(spec.kvFp8);
  EXPECT_EQ(spec.blockSize, 32);
  // Steps too short for a tile never run it.
  kernels = cuda::enumerateKernels(op, PrefillAttentionSpec::kRows - 1, 4096);
  EXPECT_FALSE(has(kernels, fp8));
}

// Every supported model shape's instance compiles, and the host constants
// equal the kernel's.
TEST(PrefillAttentionSpec, InstancesCompileAndMatchTheKernel) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  std::string code = "#include \"PrefillAttention.cuh\"\n"
                     "using namespace sol::kernels;\n";
  code += cat("static_assert(kPrefillRows == ", PrefillAttentionSpec::kRows,
              ");\nstatic_assert(kPrefillKeys == ", PrefillAttentionSpec::kKeys,
              ");\nstatic_assert(kPrefillThreads == ",
              PrefillAttentionSpec::kThreads, ");\n");
  std::vector<cuda::KernelInstance> instances;
  for (const ModelShape &m : supportedModelShapes()) {
    for (bool fp8 : {false, true}) {
      const PrefillAttentionSpec spec{m.qHeads, m.kvHeads, m.headDim, 16, fp8};
      ASSERT_TRUE(spec.supported()) << m.name;
      code += cat("static_assert(PrefillAttentionShape<", m.headDim,
                  ">::", fp8 ? "kFp8SharedBytes" : "kSharedBytes",
                  " == ", spec.sharedBytes(), ");\n");
      if (std::find(instances.begin(), instances.end(), spec.instance()) ==
          instances.end())
        instances.push_back(spec.instance());
    }
  }
  // Head dims whose rows are padded (80, 96) or large (256).
  for (int hd : {80, 96, 256})
    for (bool fp8 : {false, true})
      code += cat("static_assert(PrefillAttentionShape<", hd,
                  ">::", fp8 ? "kFp8SharedBytes" : "kSharedBytes",
                  " == ", PrefillAttentionSpec{8, 4, hd, 16, fp8}.sharedBytes(),
                  ");\n");
  instances.push_back(PrefillAttentionSpec{32, 8, 64, 32}.instance());
  instances.push_back(PrefillAttentionSpec{32, 8, 64, 32, true}.instance());
  instances.push_back(PrefillAttentionSpec{28, 4, 128, 32, true}.instance());
  nvrtc::KernelSource constants;
  constants.name = "prefill_constants.cu";
  constants.code = code;
  auto headers = nvrtc::embeddedKernelHeaders();
  constants.headers.assign(headers.begin(), headers.end());
  EXPECT_NO_THROW(compiler->compile(constants)) << code;

  const auto sources = nvrtc::buildKernelSources(instances);
  const auto compiled = compiler->compileAll(sources);
  ASSERT_EQ(compiled.size(), sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    EXPECT_FALSE(compiled[i].cubin.empty()) << sources[i].name;
    for (const std::string &expr : sources[i].nameExpressions) {
      ASSERT_TRUE(compiled[i].loweredNames.count(expr)) << expr;
      EXPECT_TRUE(takesItsLaunchArgs(expr, compiled[i].loweredNames.at(expr)))
          << expr;
    }
  }
}

/// Every instance compiles with NVRTC and takes the launch-args struct the
/// executor passes it.
void expectCompilesTakingLaunchArgs(
    nvrtc::NvrtcCompiler &compiler,
    const std::vector<cuda::KernelInstance> &instances) {
  const auto sources = nvrtc::buildKernelSources(instances);
  const auto compiled = compiler.compileAll(sources);
  ASSERT_EQ(compiled.size(), sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i)
    for (const std::string &expr : sources[i].nameExpressions) {
      ASSERT_TRUE(compiled[i].loweredNames.count(expr)) << expr;
      EXPECT_TRUE(takesItsLaunchArgs(expr, compiled[i].loweredNames.at(expr)))
          << expr;
    }
}

TEST(SwigluPairs, InstancesCompileForModelShapes) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  std::vector<cuda::KernelInstance> instances;
  for (const ModelShape &m : supportedModelShapes())
    instances.push_back(cuda::SwigluPairsSpec{m.intermediate}.instance());
  EXPECT_EQ(instances[0].nameExpression, "sol::kernels::swiglu_pairs<8192>");
  EXPECT_THROW(cuda::SwigluPairsSpec{100}.instance(), Error);
  expectCompilesTakingLaunchArgs(*compiler, instances);
}

// quantize_rows_fp8 and repeat_scales (QuantizeActivations.cuh), the
// activations and weight scales of fp8 plans' W8A8 GEMMs, for every K of
// the supported shapes' linears that is a multiple of 128.
TEST(QuantizeRowsFp8, InstancesCompileForModelShapes) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  std::vector<cuda::KernelInstance> instances;
  for (const ModelShape &m : supportedModelShapes())
    for (int k : {m.hidden, m.intermediate})
      if (k % 128 == 0)
        instances.push_back(cuda::QuantizeRowsFp8Spec{k}.instance());
  instances.push_back(cuda::RepeatScalesSpec{}.instance());
  EXPECT_EQ(cuda::QuantizeRowsFp8Spec{14336}.scaleBlocks(), 112);
  EXPECT_THROW(cuda::QuantizeRowsFp8Spec{2064}.instance(), Error);
  EXPECT_EQ(cuda::RepeatScalesSpec{}.dims(28672 * 32).grid.x, 3584u);
  EXPECT_EQ(cuda::QuantizeRowsFp8Spec{2048}.instance().nameExpression,
            "sol::kernels::quantize_rows_fp8<2048>");
  EXPECT_THROW(cuda::QuantizeRowsFp8Spec{100}.instance(), Error);
  EXPECT_EQ(cuda::QuantizeRowsFp8Spec{2048}.dims(40).grid.x, 40u);
  expectCompilesTakingLaunchArgs(*compiler, instances);
}

} // namespace
} // namespace sol::test

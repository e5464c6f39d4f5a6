//===- ChunkAttentionTest.cpp - The attention of short prompt chunks ------===//
//
// The host half of chunk_attention: its tiles (a sequence's chunk packed
// G heads at a time, padding joined), its split rule (one block per
// multiprocessor, at most one cluster of 8), which steps and plans use it,
// and that its instances compile with NVRTC with the constants the host
// assumes.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/ChunkAttention.h"
#include "ModelKernelInstances.h"
#include "NvrtcTestSupport.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "runtime/cuda/KernelSelection.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sol::test {
namespace {

using cuda::ChunkAttentionSpec;
using cuda::planChunkTiles;
using cuda::PrefillTile;

TEST(ChunkAttentionSpec, TilesHoldSixtyFourRowsOfHeads) {
  EXPECT_EQ((ChunkAttentionSpec{32, 8, 64, 32}.tokensPerTile()), 16);
  EXPECT_EQ((ChunkAttentionSpec{12, 2, 128, 32}.tokensPerTile()), 10);
  EXPECT_EQ((ChunkAttentionSpec{28, 4, 128, 16}.tokensPerTile()), 9);
  EXPECT_EQ((ChunkAttentionSpec{16, 16, 64, 16}.tokensPerTile()), 64);
  // Head dims 64, 80, 96, 128 and 256.
  EXPECT_EQ((ChunkAttentionSpec{32, 32, 96, 16}.tokensPerTile()), 64);
  EXPECT_EQ((ChunkAttentionSpec{8, 4, 256, 16}.tokensPerTile()), 32);
  EXPECT_TRUE((ChunkAttentionSpec{32, 8, 80, 16}.supported()));
  EXPECT_FALSE((ChunkAttentionSpec{32, 8, 112, 16}.supported()));
  EXPECT_FALSE((ChunkAttentionSpec{128, 1, 64, 16}.supported())); // G > 64
  EXPECT_THROW((ChunkAttentionSpec{32, 8, 112, 16}.tokensPerTile()), Error);
  EXPECT_THROW((ChunkAttentionSpec{32, 8, 512, 16}.instance()), Error);
  EXPECT_EQ((ChunkAttentionSpec{8, 4, 256, 16, false, true}
                 .instance()
                 .nameExpression),
            "sol::kernels::chunk_attention<8, 4, 256, 16, true>");
}

TEST(ChunkAttentionSpec, NamesAndGeometry) {
  const ChunkAttentionSpec spec{32, 8, 64, 32};
  EXPECT_EQ(spec.instance().nameExpression,
            "sol::kernels::chunk_attention<32, 8, 64, 32>");
  EXPECT_EQ(spec.instance().header, "ChunkAttention.cuh");
  EXPECT_EQ(
      (ChunkAttentionSpec{32, 8, 128, 16, true}.instance().nameExpression),
      "sol::kernels::chunk_attention_fp8<32, 8, 128, 16>");
  const cuda::LaunchDims d = spec.dims(2, 8);
  EXPECT_EQ(d.grid.x, 16u); // tiles x kv heads
  EXPECT_EQ(d.grid.y, 8u);
  EXPECT_EQ(d.clusterY, 8u); // one cluster per (tile, kv head)
  EXPECT_EQ(d.block.x, 128u);
  EXPECT_EQ(d.sharedBytes, 5u * 64 * 64 * 2);
  EXPECT_EQ(spec.dims(1, 1).clusterY, 1u);
  EXPECT_THROW(spec.dims(1, 9), Error);
  EXPECT_THROW(spec.dims(1, 0), Error);
}

// The cached-prefix step (one 8-token tile, 8 kv heads) gets 8 splits; more
// tiles get fewer, down to 1; without clusters always 1.
TEST(ChunkAttentionSpec, SplitsKeepOneBlockPerMultiprocessor) {
  const ChunkAttentionSpec spec{32, 8, 64, 32};
  EXPECT_EQ(spec.chooseSplits(1, 132, true), 8);
  EXPECT_EQ(spec.chooseSplits(2, 132, true), 8);
  EXPECT_EQ(spec.chooseSplits(3, 132, true), 5);
  EXPECT_EQ(spec.chooseSplits(16, 132, true), 1);
  EXPECT_EQ(spec.chooseSplits(1, 132, false), 1);
  for (int tiles = 1; tiles <= 16; ++tiles) {
    const int s = spec.chooseSplits(tiles, 132, true);
    EXPECT_TRUE(s == 1 || tiles * 8 * s <= 132) << tiles;
  }
  // One tile, 1,032 positions: 17 key tiles at 8 splits walk 3 a block,
  // as paged_attention's 8 splits walk 129 positions (3 steps of 64).
  EXPECT_TRUE(spec.fits(1, 8, 1032, 8, 132));
  EXPECT_TRUE(spec.fits(16, 1, 64, 1, 132));
  EXPECT_FALSE(spec.fits(17, 1, 64, 1, 132)); // 136 blocks
  EXPECT_FALSE(spec.fits(0, 8, 64, 1, 132));
  // 16 tiles (decodes beside a chunk) at 4,096 positions: one split walks
  // 64 key tiles where paged_attention's 2 splits walk 32 steps.
  EXPECT_FALSE(spec.fits(16, 1, 4096, 2, 132));
  EXPECT_TRUE(spec.fits(16, 1, 128, 1, 132));
}

// The executor weighs chunk_attention against paged_attention's split
// count (attentionSplits, the split count selectKernels launches with):
// the cluster merge caps 1 token at 600 positions to 8 splits (13
// without), 16 tokens of 8 kv heads get 4 (one wave), the cached-prefix
// step 8.
TEST(ChunkAttentionSpec, PagedSplitsFollowTheClusterMerge) {
  cuda::OpDesc op;
  op.kind = OpKind::Attention;
  op.heads = 32, op.kvHeads = 8, op.headDim = 64;
  op.blockSize = 32;
  EXPECT_EQ(cuda::attentionSplits(op, 1, 600, true), 8);
  EXPECT_EQ(cuda::attentionSplits(op, 1, 600, false), 13);
  EXPECT_EQ(cuda::attentionSplits(op, 16, 4096, true), 4);
  EXPECT_EQ(cuda::attentionSplits(op, 8, 1056, true), 8);
  EXPECT_EQ(cuda::attentionSplits(op, 40, 4096, true), 1); // 320 blocks
  EXPECT_EQ(cuda::selectKernels(op, 1, 600, false, true).at(0).dims.grid.y, 8u);
}

TEST(ChunkTiles, ChunksDecodesAndPadding) {
  // Sequence 0: 8 tokens after a prefix; 1: a decode; 2: a 20-token chunk
  // (two tiles of 10 at 16 tokens a tile); then 5 padding tokens.
  std::vector<int32_t> seq, pos;
  auto run = [&](int32_t s, int32_t from, int32_t n) {
    for (int32_t i = 0; i < n; ++i) {
      seq.push_back(s);
      pos.push_back(s < 0 ? 0 : from + i);
    }
  };
  run(0, 1024, 8);
  run(1, 77, 1);
  run(2, 300, 20);
  run(-1, 0, 5);
  const std::vector<PrefillTile> tiles = planChunkTiles(seq, pos, 16);
  std::vector<int> covered(seq.size(), 0);
  int padding = 0;
  for (const PrefillTile &t : tiles) {
    ASSERT_GE(t.rows, 1);
    ASSERT_LE(t.rows, 16);
    for (int32_t i = t.firstToken; i < t.firstToken + t.rows; ++i) {
      ++covered[static_cast<std::size_t>(i)];
      EXPECT_EQ(seq[static_cast<std::size_t>(i)],
                seq[static_cast<std::size_t>(t.firstToken)]);
    }
    padding += seq[static_cast<std::size_t>(t.firstToken)] < 0;
  }
  for (int c : covered)
    EXPECT_EQ(c, 1);
  EXPECT_EQ(padding, 1); // the five padding tokens share one tile
  EXPECT_EQ(tiles.size(), 1u + 1u + 2u + 1u);
  // Padding beyond a tile's worth takes several.
  std::vector<int32_t> pads(40, -1), zeros(40, 0);
  EXPECT_EQ(planChunkTiles(pads, zeros, 16).size(), 3u);
}

// solc compiles chunk_attention into plans whose steps may hold two
// tokens, for the plan's cache dtype.
TEST(ChunkAttentionSpec, PlansCompileItForTheirCacheDtype) {
  cuda::OpDesc op;
  op.kind = OpKind::Attention;
  op.heads = 32, op.kvHeads = 8, op.headDim = 64;
  op.blockSize = 32;
  const auto has = [](const std::vector<cuda::KernelInstance> &kernels,
                      const std::string &name) {
    return std::any_of(kernels.begin(), kernels.end(),
                       [&](const auto &k) { return k.nameExpression == name; });
  };
  const std::string bf16 = "sol::kernels::chunk_attention<32, 8, 64, 32>";
  const std::string fp8 = "sol::kernels::chunk_attention_fp8<32, 8, 64, 32>";
  EXPECT_TRUE(has(cuda::enumerateKernels(op, 64, 4096), bf16));
  EXPECT_FALSE(has(cuda::enumerateKernels(op, 1, 4096), bf16));
  op.kvDtype = fb::DType::F8E4M3;
  EXPECT_TRUE(has(cuda::enumerateKernels(op, 64, 4096), fp8));
  EXPECT_FALSE(has(cuda::enumerateKernels(op, 64, 4096), bf16));
  // Head dim 256 keeps paged_attention (slower there), 80 and 96 take it,
  // soft-capped where the op is.
  op.kvDtype = fb::DType::BF16;
  op.heads = 8, op.kvHeads = 4, op.headDim = 256, op.softcap = 50.0f;
  EXPECT_FALSE(has(cuda::enumerateKernels(op, 64, 4096),
                   "sol::kernels::chunk_attention<8, 4, 256, 32, true>"));
  op.headDim = 96;
  EXPECT_TRUE(has(cuda::enumerateKernels(op, 64, 4096),
                  "sol::kernels::chunk_attention<8, 4, 96, 32, true>"));
}

TEST(ChunkAttentionSpec, InstancesCompileAndMatchTheKernel) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;
  std::string code = "#include \"ChunkAttention.cuh\"\n"
                     "using namespace sol::kernels;\n";
  code += cat(
      "static_assert(kMaxChunkSplits == ", ChunkAttentionSpec::kMaxSplits,
      ");\nstatic_assert(kPrefillRows == ", ChunkAttentionSpec::kRows, ");\n");
  for (int hd : {64, 80, 96, 128, 256})
    code +=
        cat("static_assert(PrefillAttentionShape<", hd, ">::kSharedBytes == ",
            ChunkAttentionSpec{32, 8, hd, 16}.sharedBytes(), ");\n");
  std::vector<cuda::KernelInstance> instances;
  for (const ModelShape &m : supportedModelShapes())
    for (bool fp8 : {false, true}) {
      const ChunkAttentionSpec spec{m.qHeads, m.kvHeads, m.headDim, 32, fp8};
      if (!spec.supported())
        continue;
      if (std::find(instances.begin(), instances.end(), spec.instance()) ==
          instances.end())
        instances.push_back(spec.instance());
    }
  ASSERT_FALSE(instances.empty());
  nvrtc::KernelSource constants;
  constants.name = "chunk_constants.cu";
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

} // namespace
} // namespace sol::test

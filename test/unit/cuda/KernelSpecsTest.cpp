//===- KernelSpecsTest.cpp - Names and launch geometry of the kernels -----===//

#include "runtime/cuda/KernelSpecs.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

namespace sol::test {
namespace {

using namespace cuda;

TEST(KernelSpecs, NameExpressions) {
  EXPECT_EQ(RmsNormSpec{2048}.instance().nameExpression,
            "sol::kernels::rms_norm<2048>");
  EXPECT_EQ(RmsNormSpec{2048}.instance().header, "RmsNorm.cuh");
  EXPECT_EQ(EmbeddingSpec{4096}.instance().nameExpression,
            "sol::kernels::embedding<4096>");
  EXPECT_EQ(ArgmaxSpec{}.instance().nameExpression, "sol::kernels::argmax");
  GemvSpec gemv{2048, 1, 4, 2, LinearOutput::Fp32, false};
  EXPECT_EQ(gemv.instance().nameExpression,
            "sol::kernels::linear_gemv<2048, 1, 4, 2, float, false>");
  GemmSpec gemm;
  gemm.bias = true;
  EXPECT_EQ(gemm.instance().nameExpression,
            "sol::kernels::linear_gemm<128, 128, 2, 4, 3, __nv_bfloat16, "
            "true>");
  EXPECT_EQ((RopeKvWriteSpec{32, 8, 64}.instance().nameExpression),
            "sol::kernels::rope_kv_write<32, 8, 64, 16>");
  const PagedAttentionSpec attention{28, 4, 128};
  EXPECT_EQ(attention.instance().nameExpression,
            "sol::kernels::paged_attention<28, 4, 128, 16>");
  EXPECT_EQ(attention.combineInstance().nameExpression,
            "sol::kernels::paged_attention_combine<28, 128>");
}

TEST(KernelSpecs, RmsNormGeometry) {
  // Head-dim rows share blocks; hidden-size rows get one block each.
  const RmsNormSpec head{128};
  EXPECT_EQ(head.threadsPerRow(), 16);
  EXPECT_EQ(head.rowsPerBlock(), 8);
  EXPECT_EQ(head.dims(32 * 3).grid.x, 12u);
  EXPECT_EQ(head.dims(33).grid.x, 5u);
  const RmsNormSpec hidden{3584};
  EXPECT_EQ(hidden.threadsPerRow(), 256);
  EXPECT_EQ(hidden.rowsPerBlock(), 1);
  EXPECT_EQ(hidden.dims(7).grid.x, 7u);
  EXPECT_EQ(RmsNormSpec{896}.threadsPerRow(), 128);
  EXPECT_THROW(RmsNormSpec{100}.instance(), sol::Error);
}

TEST(KernelSpecs, GemvChoice) {
  const GemvSpec one =
      GemvSpec::choose(128256, 2048, 1, LinearOutput::Fp32, false);
  EXPECT_EQ(one.maxRows, 1);
  EXPECT_EQ(one.output, LinearOutput::Fp32);
  EXPECT_EQ(GemvSpec::choose(2048, 2048, 3, LinearOutput::Bf16, false).maxRows,
            4);
  EXPECT_EQ(GemvSpec::choose(2048, 2048, 8, LinearOutput::Bf16, false).maxRows,
            8);
  // One or two rows: 4 rows per warp, K split over all 8 warps.
  EXPECT_EQ(one.rowsPerWarp, 4);
  EXPECT_EQ(one.warpsK, 8);
  const GemvSpec narrow =
      GemvSpec::choose(2048, 8192, 1, LinearOutput::Bf16, false);
  EXPECT_EQ(narrow.warpsK, 8);
  EXPECT_GE(static_cast<long long>(narrow.dims(2048).grid.x), 132);
  // Eight rows: 2 rows per warp, 4-way split, 8-way for long K.
  const GemvSpec eight =
      GemvSpec::choose(2048, 2048, 8, LinearOutput::Bf16, false);
  EXPECT_EQ(eight.rowsPerWarp, 2);
  EXPECT_EQ(eight.warpsK, 4);
  EXPECT_EQ(GemvSpec::choose(2048, 8192, 8, LinearOutput::Bf16, false).warpsK,
            8);
  // Short K keeps a full chunk per lane in every slice (896 / 8 = 112).
  EXPECT_EQ(GemvSpec::choose(4864, 896, 1, LinearOutput::Bf16, false).warpsK,
            2);
  EXPECT_THROW(GemvSpec::choose(2048, 2048, 9, LinearOutput::Bf16, false),
               sol::Error);
  EXPECT_THROW(GemvSpec::choose(2048, 2048, 0, LinearOutput::Bf16, false),
               sol::Error);
  EXPECT_THROW((GemvSpec{2048, 3, 4, 1}.instance()), sol::Error);
  // Rows of W per block = (8 / warpsK) * rowsPerWarp.
  EXPECT_EQ((GemvSpec{2048, 1, 4, 2}.dims(1000).grid.x), 63u);
}

TEST(KernelSpecs, GemmGeometry) {
  const GemmSpec big = GemmSpec::choose(4096, 4096, LinearOutput::Bf16, false);
  EXPECT_EQ(big.tileM, 128);
  EXPECT_EQ(big.sharedBytes(), 3 * 256 * 64 * 2);
  const LaunchDims dims = big.dims(1000, 3072);
  EXPECT_EQ(dims.grid.x, 8u);
  EXPECT_EQ(dims.grid.y, 24u);
  EXPECT_EQ(dims.block.x, 256u);
  EXPECT_EQ(dims.sharedBytes, 98304u);
  const GemmSpec small = GemmSpec::choose(64, 2048, LinearOutput::Bf16, false);
  EXPECT_EQ(small.tileM, 64);
  EXPECT_EQ(small.threads(), 128);
  EXPECT_THROW(big.dims(16, 100), sol::Error); // N not a multiple of 8
}

TEST(KernelSpecs, AttentionSplitsAndWorkspace) {
  const PagedAttentionSpec spec{32, 8, 128};
  EXPECT_EQ(spec.chooseSplits(1, 100), 1);    // short context
  EXPECT_EQ(spec.chooseSplits(256, 8192), 1); // enough blocks already
  const int splits = spec.chooseSplits(1, 4096);
  EXPECT_GT(splits, 1);
  EXPECT_LE(splits, 4096 / 128);
  EXPECT_EQ(spec.dims(3, 5).grid.x, 24u);
  EXPECT_EQ(spec.dims(3, 5).grid.y, 5u);
  EXPECT_EQ(spec.chooseSplits(1, 1 << 20), PagedAttentionSpec::kMaxSplits);
  EXPECT_EQ(spec.combineDims(3).grid.x, 96u);
  EXPECT_EQ(spec.combineDims(3).block.x, 128u);
  // Partial outputs [T, splits, Hq, HD] then (max, sum) [T, splits, Hq, 2].
  EXPECT_EQ(spec.workspaceFloats(2, 4), 2u * 4 * 32 * 130);
  EXPECT_THROW((PagedAttentionSpec{32, 8, 96}.instance()), sol::Error);
  EXPECT_THROW((PagedAttentionSpec{30, 8, 128}.instance()), sol::Error);
}

TEST(KernelSpecs, ElementwiseGeometry) {
  EXPECT_EQ(EmbeddingSpec{2048}.dims(3).grid.x, 3u);
  EXPECT_EQ(SwigluSpec{8192}.dims(1).grid.x, 4u);
  EXPECT_EQ(GatherRowsSpec{2048}.dims(1).block.x, 256u);
  EXPECT_EQ(ArgmaxSpec{}.dims(5).grid.x, 5u);
  EXPECT_EQ(SwigluSpec{8192}.dims(1 << 20).grid.x, 65535u); // grid-stride
}

} // namespace
} // namespace sol::test

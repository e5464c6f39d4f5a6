//===- KernelSpecsTest.cpp - Names and launch geometry of the kernels -----===//

#include "runtime/cuda/KernelSpecs.h"
#include "runtime/cuda/PrefillAttention.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <utility>

namespace sol::test {
namespace {

using namespace cuda;

TEST(KernelSpecs, EmbeddingClearingTheKeyRunsAsOneBlock) {
  // 8B's hidden size: a one-token step spans two blocks of 256 threads,
  // but a launch that clears the previous step's argmax key after reading
  // it must be one block (Embedding.cuh).
  const EmbeddingSpec spec{4096};
  EXPECT_EQ(spec.dims(1).grid.x, 2u);
  const LaunchDims chained = spec.keyChainedDims();
  EXPECT_EQ(chained.grid.x, 1u);
  EXPECT_EQ(chained.block.x, spec.dims(1).block.x);
  EXPECT_EQ(spec.dims(333).grid.x, 666u);
}

TEST(KernelSpecs, NameExpressions) {
  EXPECT_EQ(RmsNormSpec{2048}.instance().nameExpression,
            "sol::kernels::rms_norm<2048>");
  EXPECT_EQ(RmsNormSpec{2048}.instance().header, "RmsNorm.cuh");
  EXPECT_EQ(EmbeddingSpec{4096}.instance().nameExpression,
            "sol::kernels::embedding<4096>");
  EXPECT_EQ(ArgmaxSpec{}.instance().nameExpression, "sol::kernels::argmax");
  GemvSpec gemv{2048, 1, 4, 2, LinearOutput::Fp32, false};
  EXPECT_EQ(gemv.instance().nameExpression,
            "sol::kernels::linear_gemv<2048, 1, 4, 2, float, false, 0, false>");
  EXPECT_EQ(gemv.instance().header, "LinearGemv.cuh");
  // The residual add in the prologue names the defaulted L2Prefetch too, and
  // doubles the shared memory (the sums beside the normalised row); it needs
  // the norm prologue and one row.
  GemvSpec addNorm{
      2560, 1, 4, 1, LinearOutput::Bf16, false, LinearEpilogue::Geglu, true};
  addNorm.addNorm = GemvAddNorm::InputNorm;
  EXPECT_EQ(addNorm.instance().nameExpression,
            "sol::kernels::linear_gemv<2560, 1, 4, 1, __nv_bfloat16, false, "
            "3, true, false, 2>");
  EXPECT_EQ(addNorm.dims(20480).sharedBytes, 2u * 2560 * 2);
  addNorm.normPrologue = false;
  EXPECT_THROW(addNorm.instance(), sol::Error);
  addNorm.normPrologue = true;
  addNorm.maxRows = 2;
  EXPECT_THROW(addNorm.instance(), sol::Error);
  GemmSpec gemm;
  gemm.bias = true;
  EXPECT_EQ(gemm.instance().nameExpression,
            "sol::kernels::linear_gemm<128, 128, 2, 4, 3, __nv_bfloat16, "
            "true, 0, false>");
  EXPECT_EQ(gemm.instance().header, "LinearGemm.cuh");
  EXPECT_EQ((RopeKvWriteSpec{32, 8, 64}.instance().nameExpression),
            "sol::kernels::rope_kv_write<32, 8, 64, 16>");
  const PagedAttentionSpec attention{28, 4, 128};
  EXPECT_EQ(attention.instance().nameExpression,
            "sol::kernels::paged_attention<28, 4, 128, 16, false>");
  EXPECT_EQ((PagedAttentionSpec{28, 4, 128, 16, false, true}
                 .instance()
                 .nameExpression),
            "sol::kernels::paged_attention<28, 4, 128, 16, true>");
  // The KV layout's block size and dtype are part of the names.
  EXPECT_EQ((RopeKvWriteSpec{32, 8, 64, 32, true}.instance().nameExpression),
            "sol::kernels::rope_kv_write_fp8<32, 8, 64, 32>");
  EXPECT_EQ(
      (PagedAttentionSpec{28, 4, 128, 32, true}.instance().nameExpression),
      "sol::kernels::paged_attention_fp8<28, 4, 128, 32, false>");
  EXPECT_EQ((PagedAttentionSpec{28, 4, 128, 64}.instance().nameExpression),
            "sol::kernels::paged_attention<28, 4, 128, 64, false>");
  // The tensor-core prefill attention reads either cache.
  EXPECT_EQ((PrefillAttentionSpec{28, 4, 128, 32}.instance().nameExpression),
            "sol::kernels::prefill_attention<28, 4, 128, 32>");
  EXPECT_EQ(
      (PrefillAttentionSpec{28, 4, 128, 32, true}.instance().nameExpression),
      "sol::kernels::prefill_attention_fp8<28, 4, 128, 32>");
  // The soft-capping variants name their flag; the plain ones keep their
  // names.
  PagedAttentionSpec capped{8, 4, 256};
  capped.softcap = true;
  EXPECT_EQ(capped.instance().nameExpression,
            "sol::kernels::paged_attention<8, 4, 256, 16, false, false, true>");
  capped.fusedRope = capped.preloadWalk = true;
  EXPECT_EQ(capped.instance().nameExpression,
            "sol::kernels::paged_attention<8, 4, 256, 16, true, true, true>");
  EXPECT_EQ((PrefillAttentionSpec{8, 4, 256, 16, true, true}
                 .instance()
                 .nameExpression),
            "sol::kernels::prefill_attention_fp8<8, 4, 256, 16, true>");
}

TEST(KernelSpecs, PrefillAttentionGeometry) {
  // Same grid and block for both caches; fp8 adds a staging tile of E4M3 K
  // and V rows (2 x 64 x head_dim bytes) and two stages of their scales.
  for (int headDim : {64, 80, 96, 128, 256}) {
    const PrefillAttentionSpec bf16{32, 8, headDim, 16};
    const PrefillAttentionSpec fp8{32, 8, headDim, 16, true};
    // Rows of 80 and 96 are padded by a 16-byte chunk (an odd count).
    const int stride = headDim % 64 == 0 ? headDim : headDim + 8;
    EXPECT_EQ(bf16.rowStride(), stride);
    const LaunchDims b = bf16.dims(7), f = fp8.dims(7);
    EXPECT_EQ(f.grid.x, 7u);
    EXPECT_EQ(f.grid.y, 32u);
    EXPECT_EQ(f.grid.x, b.grid.x);
    EXPECT_EQ(f.grid.y, b.grid.y);
    EXPECT_EQ(f.block.x, b.block.x);
    EXPECT_EQ(b.sharedBytes, static_cast<unsigned>(5 * 64 * stride * 2));
    EXPECT_EQ(f.sharedBytes,
              b.sharedBytes + static_cast<unsigned>(2 * 64 * headDim + 1024));
    EXPECT_LE(f.sharedBytes, 227u * 1024);
  }
  EXPECT_TRUE((PrefillAttentionSpec{32, 8, 256, 16, true}.supported()));
  EXPECT_FALSE((PrefillAttentionSpec{32, 8, 112, 16}.supported()));
  EXPECT_THROW((PrefillAttentionSpec{32, 8, 32, 16, true}.instance()),
               sol::Error);
}

TEST(KernelSpecs, KvLayoutLimits) {
  // Block sizes are powers of two in [8, 256].
  for (int bad : {0, 4, 12, 24, 512})
    EXPECT_THROW((PagedAttentionSpec{32, 8, 128, bad}.instance()), sol::Error)
        << bad;
  EXPECT_THROW((RopeKvWriteSpec{32, 8, 128, 48}.instance()), sol::Error);
  EXPECT_NO_THROW((PagedAttentionSpec{32, 8, 128, 8}.instance()));
  EXPECT_NO_THROW((PagedAttentionSpec{32, 8, 128, 256}.instance()));
  // fp8: head dims that are multiples of 16 up to 256.
  EXPECT_THROW((PagedAttentionSpec{32, 8, 8, 16, true}.instance()), sol::Error);
  EXPECT_THROW((PagedAttentionSpec{32, 8, 72, 16, true}.instance()),
               sol::Error);
  EXPECT_THROW((RopeKvWriteSpec{32, 8, 512, 16, true}.instance()), sol::Error);
  for (int headDim : {64, 80, 96, 128, 256}) {
    EXPECT_NO_THROW((RopeKvWriteSpec{32, 8, headDim, 16, true}.instance()));
    EXPECT_NO_THROW((PagedAttentionSpec{32, 8, headDim, 16, true}.instance()));
    EXPECT_NO_THROW((PagedAttentionSpec{32, 8, headDim}.instance()));
    // Every one has the fused rope, bf16 and fp8, small and large groups.
    for (bool fp8 : {false, true})
      for (int q : {8, 56})
        EXPECT_TRUE((PagedAttentionSpec{q, 8, headDim, 16, fp8, true}
                         .fusedRopeSupported()))
            << headDim << " fp8 " << fp8 << " group " << q / 8;
  }
  // The fused rope needs both halves of a head on whole lanes: 8 values per
  // lane for bf16, 16 for fp8 with groups of at most 4 (else 8).
  EXPECT_TRUE(
      (PagedAttentionSpec{32, 8, 16, 16, false, true}.fusedRopeSupported()));
  EXPECT_FALSE(
      (PagedAttentionSpec{32, 8, 8, 16, false, true}.fusedRopeSupported()));
  EXPECT_FALSE(
      (PagedAttentionSpec{32, 8, 16, 16, true, true}.fusedRopeSupported()));
  EXPECT_TRUE(
      (PagedAttentionSpec{32, 8, 32, 16, true, true}.fusedRopeSupported()));
  EXPECT_TRUE(
      (PagedAttentionSpec{64, 8, 16, 16, true, true}.fusedRopeSupported()));
  EXPECT_THROW((PagedAttentionSpec{32, 8, 16, 16, true, true}.instance()),
               sol::Error);
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
  // One row (the measured rule): many rows of short K (N >= 8,192,
  // K <= 3,584) 4 rows per warp with K in one warp; other K <= 3,072 2 rows
  // per warp, K over 4 warps; longer K 8 rows per warp, K over 8 warps at
  // 8,192, else 4.
  EXPECT_EQ(one.rowsPerWarp, 4);
  EXPECT_EQ(one.warpsK, 1);
  const GemvSpec gateUpGemma =
      GemvSpec::choose(20480, 2560, 1, LinearOutput::Bf16, false);
  EXPECT_EQ(gateUpGemma.rowsPerWarp, 4);
  EXPECT_EQ(gateUpGemma.warpsK, 1);
  const GemvSpec qkv1b =
      GemvSpec::choose(3072, 2048, 1, LinearOutput::Bf16, false);
  EXPECT_EQ(qkv1b.rowsPerWarp, 2);
  EXPECT_EQ(qkv1b.warpsK, 4);
  const GemvSpec gateUp8b =
      GemvSpec::choose(28672, 4096, 1, LinearOutput::Bf16, false);
  EXPECT_EQ(gateUp8b.rowsPerWarp, 8);
  EXPECT_EQ(gateUp8b.warpsK, 4);
  const GemvSpec narrow =
      GemvSpec::choose(2048, 8192, 1, LinearOutput::Bf16, false);
  EXPECT_EQ(narrow.rowsPerWarp, 8);
  EXPECT_EQ(narrow.warpsK, 8);
  const GemvSpec down8b =
      GemvSpec::choose(4096, 14336, 1, LinearOutput::Bf16, false);
  EXPECT_EQ(down8b.rowsPerWarp, 8);
  EXPECT_EQ(down8b.warpsK, 4);
  // Two rows keep the earlier rule.
  const GemvSpec two =
      GemvSpec::choose(2048, 2048, 2, LinearOutput::Bf16, false);
  EXPECT_EQ(two.rowsPerWarp, 4);
  EXPECT_EQ(two.warpsK, 8);
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

// The epilogue is the kEpilogue* value (None 0, Residual 1, Swiglu 2), the
// norm prologue the last template argument.
TEST(KernelSpecs, FusedLinearNameExpressions) {
  const GemvSpec gateUp{
      2048, 1, 4, 8, LinearOutput::Bf16, false, LinearEpilogue::Swiglu, true};
  EXPECT_EQ(gateUp.instance().nameExpression,
            "sol::kernels::linear_gemv<2048, 1, 4, 8, __nv_bfloat16, false, 2, "
            "true>");
  const GemvSpec down{
      8192, 8, 2, 8, LinearOutput::Bf16, false, LinearEpilogue::Residual,
      false};
  EXPECT_EQ(down.instance().nameExpression,
            "sol::kernels::linear_gemv<8192, 8, 2, 8, __nv_bfloat16, false, 1, "
            "false>");
  const GemvSpec head{
      2048, 1, 4, 8, LinearOutput::Fp32, false, LinearEpilogue::None, true};
  EXPECT_EQ(head.instance().nameExpression,
            "sol::kernels::linear_gemv<2048, 1, 4, 8, float, false, 0, true>");
  // Qwen2.5-1.5B's QKV (with bias) behind its norm, 3 rows.
  const GemvSpec qkv = GemvSpec::choose(2048, 1536, 3, LinearOutput::Bf16, true,
                                        LinearEpilogue::None, true);
  EXPECT_EQ(qkv.instance().nameExpression,
            "sol::kernels::linear_gemv<1536, 4, 2, 4, __nv_bfloat16, true, 0, "
            "true>");

  const GemmSpec residual = GemmSpec::choose(4096, 2048, LinearOutput::Bf16,
                                             false, LinearEpilogue::Residual);
  EXPECT_EQ(residual.instance().nameExpression,
            "sol::kernels::linear_gemm<128, 128, 2, 4, 3, __nv_bfloat16, "
            "false, 1, false>");
  const GemmSpec swiglu = GemmSpec::choose(16, 16384, LinearOutput::Bf16, true,
                                           LinearEpilogue::Swiglu);
  EXPECT_EQ(swiglu.instance().nameExpression,
            "sol::kernels::linear_gemm<64, 128, 2, 2, 4, __nv_bfloat16, true, "
            "2, false>");
}

// A split-K GEMM writes fp32 partial sums without bias or epilogue; its
// finalize kernel applies both (and the output type).
TEST(KernelSpecs, SplitKGemmLeavesBiasAndEpilogueToTheFinalize) {
  const GemmSpec gateUp = GemmSpec::choose(16, 16384, LinearOutput::Bf16, false,
                                           LinearEpilogue::Swiglu, 132, 2048);
  ASSERT_GT(gateUp.splitK, 1);
  EXPECT_EQ(gateUp.epilogue, LinearEpilogue::Swiglu);
  EXPECT_EQ(gateUp.instance().nameExpression,
            "sol::kernels::linear_gemm<64, 128, 2, 2, 4, float, false, 0, "
            "true>");
  EXPECT_EQ(gateUp.finalizeInstance().nameExpression,
            "sol::kernels::linear_splitk_finalize<__nv_bfloat16, false, 2>");
  EXPECT_EQ(gateUp.finalizeInstance().header, "LinearGemm.cuh");
  EXPECT_EQ(gateUp.dims(9, 16384).grid.z, static_cast<unsigned>(gateUp.splitK));
  EXPECT_EQ(gateUp.dims(9, 16384).grid.y, 128u);
  // One thread per (gate, up) column pair of W's rows.
  EXPECT_EQ(gateUp.finalizeDims(9, 16384).block.x, 256u);
  EXPECT_EQ(gateUp.finalizeDims(9, 16384).grid.x, 9u * 8192 / 256);

  const GemmSpec residual = GemmSpec::choose(
      12, 264, LinearOutput::Bf16, true, LinearEpilogue::Residual, 132, 1024);
  ASSERT_GT(residual.splitK, 1);
  EXPECT_EQ(residual.instance().nameExpression,
            "sol::kernels::linear_gemm<64, 128, 2, 2, 4, float, false, 0, "
            "true>");
  EXPECT_EQ(residual.finalizeInstance().nameExpression,
            "sol::kernels::linear_splitk_finalize<__nv_bfloat16, true, 1>");

  const GemmSpec logits = GemmSpec::choose(12, 4096, LinearOutput::Fp32, false,
                                           LinearEpilogue::None, 132, 2048);
  ASSERT_GT(logits.splitK, 1);
  EXPECT_EQ(logits.finalizeInstance().nameExpression,
            "sol::kernels::linear_splitk_finalize<float, false, 0>");

  // No K, or enough row tiles: no split, the epilogue stays in the GEMM.
  EXPECT_EQ(GemmSpec::choose(16, 16384, LinearOutput::Bf16, false,
                             LinearEpilogue::Swiglu)
                .splitK,
            1);
  const GemmSpec prefill =
      GemmSpec::choose(4096, 2048, LinearOutput::Bf16, false,
                       LinearEpilogue::Residual, 132, 8192);
  EXPECT_EQ(prefill.splitK, 1);
  EXPECT_EQ(prefill.dims(4096, 2048).grid.z, 1u);
  EXPECT_EQ(prefill.instance().nameExpression,
            "sol::kernels::linear_gemm<128, 128, 2, 4, 3, __nv_bfloat16, "
            "false, 1, false>");

  // fp32 output with an epilogue is rejected on both kernels of a split.
  GemmSpec bad = logits;
  bad.epilogue = LinearEpilogue::Residual;
  EXPECT_THROW(bad.instance(), sol::Error);
  EXPECT_THROW(bad.finalizeInstance(), sol::Error);
}

TEST(KernelSpecs, GemvFusedChoice) {
  // The epilogue and the prologue are carried through and do not change the
  // measured configuration or the grid.
  for (int rows : {1, 3, 8}) {
    const GemvSpec plain =
        GemvSpec::choose(16384, 2048, rows, LinearOutput::Bf16, false);
    const GemvSpec fused =
        GemvSpec::choose(16384, 2048, rows, LinearOutput::Bf16, false,
                         LinearEpilogue::Swiglu, true);
    EXPECT_EQ(fused.epilogue, LinearEpilogue::Swiglu);
    EXPECT_TRUE(fused.normPrologue);
    EXPECT_EQ(fused.maxRows, plain.maxRows);
    EXPECT_EQ(fused.rowsPerWarp, plain.rowsPerWarp);
    EXPECT_EQ(fused.warpsK, plain.warpsK);
    EXPECT_EQ(fused.dims(16384).grid.x, plain.dims(16384).grid.x);
    EXPECT_EQ(fused.dims(16384).block.x, 256u);
  }
  const GemvSpec plain =
      GemvSpec::choose(2048, 2048, 1, LinearOutput::Bf16, false);
  EXPECT_EQ(plain.epilogue, LinearEpilogue::None);
  EXPECT_FALSE(plain.normPrologue);
  const GemvSpec residual = GemvSpec::choose(2048, 8192, 8, LinearOutput::Bf16,
                                             false, LinearEpilogue::Residual);
  EXPECT_EQ(residual.epilogue, LinearEpilogue::Residual);
  EXPECT_FALSE(residual.normPrologue);
  EXPECT_EQ(residual.warpsK, 8);
  // Every swiglu choice keeps gate/up pairs in one warp.
  for (int k : {896, 1536, 2048, 3584, 4096})
    for (int rows = 1; rows <= GemvSpec::kMaxRows; ++rows)
      EXPECT_EQ(GemvSpec::choose(2 * 4864, k, rows, LinearOutput::Bf16, false,
                                 LinearEpilogue::Swiglu, true)
                        .rowsPerWarp %
                    2,
                0)
          << "K " << k << ", rows " << rows;
}

TEST(KernelSpecs, GemvNormPrologueSharedMemory) {
  // The prologue keeps MaxRows normalised bf16 rows of K in dynamic shared
  // memory; without it the GEMV needs none.
  EXPECT_EQ(GemvSpec::choose(3072, 2048, 1, LinearOutput::Bf16, false)
                .dims(3072)
                .sharedBytes,
            0u);
  EXPECT_EQ(GemvSpec::choose(2048, 2048, 8, LinearOutput::Bf16, false,
                             LinearEpilogue::Residual)
                .dims(2048)
                .sharedBytes,
            0u);
  const auto shared = [](int n, int k, int rows, LinearOutput output) {
    return GemvSpec::choose(n, k, rows, output, false, LinearEpilogue::None,
                            true)
        .dims(n)
        .sharedBytes;
  };
  EXPECT_EQ(shared(3072, 2048, 1, LinearOutput::Bf16), 1u * 2048 * 2);
  EXPECT_EQ(shared(3072, 2048, 3, LinearOutput::Bf16), 4u * 2048 * 2);
  EXPECT_EQ(shared(3072, 2048, 8, LinearOutput::Bf16), 8u * 2048 * 2);
  EXPECT_EQ(shared(128256, 2048, 1, LinearOutput::Fp32), 4096u);
  // K = 4096 at 8 rows needs 64 KB: above the default 48 KB limit, so the
  // launcher must raise the kernel's limit first.
  EXPECT_EQ(shared(6144, 4096, 8, LinearOutput::Bf16), 65536u);
  EXPECT_GT(shared(6144, 4096, 8, LinearOutput::Bf16), 48u * 1024);
  EXPECT_EQ(shared(6144, 4096, 5, LinearOutput::Bf16), 65536u);
  EXPECT_EQ((GemvSpec{896, 2, 4, 2, LinearOutput::Bf16, false,
                      LinearEpilogue::Swiglu, true}
                 .dims(1000)
                 .sharedBytes),
            2u * 896 * 2);
}

TEST(KernelSpecs, FusedLinearErrors) {
  // An fp32 output (logits) takes no residual or swiglu epilogue.
  for (LinearEpilogue e : {LinearEpilogue::Residual, LinearEpilogue::Swiglu}) {
    EXPECT_THROW((GemvSpec{2048, 1, 4, 8, LinearOutput::Fp32, false, e, false}
                      .instance()),
                 sol::Error);
    EXPECT_THROW((GemvSpec{2048, 1, 4, 8, LinearOutput::Fp32, false, e, true}
                      .instance()),
                 sol::Error);
    EXPECT_THROW(
        GemmSpec::choose(4096, 2048, LinearOutput::Fp32, false, e).instance(),
        sol::Error);
    EXPECT_THROW(
        GemmSpec::choose(16, 2048, LinearOutput::Fp32, false, e).instance(),
        sol::Error);
    EXPECT_NO_THROW(
        GemmSpec::choose(16, 2048, LinearOutput::Bf16, false, e).instance());
  }
  EXPECT_NO_THROW((GemvSpec{2048, 1, 4, 8, LinearOutput::Fp32, false,
                            LinearEpilogue::None, true}
                       .instance()));
  // Swiglu needs both rows of a gate/up pair in one warp: an even
  // rowsPerWarp.
  EXPECT_THROW((GemvSpec{2048, 8, 1, 4, LinearOutput::Bf16, false,
                         LinearEpilogue::Swiglu, true}
                    .instance()),
               sol::Error);
  EXPECT_THROW((GemvSpec{2048, 1, 1, 8, LinearOutput::Bf16, false,
                         LinearEpilogue::Swiglu, false}
                    .instance()),
               sol::Error);
  EXPECT_NO_THROW((GemvSpec{2048, 1, 2, 8, LinearOutput::Bf16, false,
                            LinearEpilogue::Swiglu, false}
                       .instance()));
  // rowsPerWarp 1 is fine for the other epilogues.
  EXPECT_NO_THROW((GemvSpec{2048, 8, 1, 4, LinearOutput::Bf16, false,
                            LinearEpilogue::Residual, true}
                       .instance()));
}

TEST(KernelSpecs, SkinnyNameAndGeometry) {
  const SkinnySpec spec{
      2048, 16, 2, 4, LinearOutput::Fp32, false, LinearEpilogue::None, true};
  EXPECT_EQ(spec.instance().nameExpression,
            "sol::kernels::linear_skinny<2048, 16, 2, 4, float, false, 0, "
            "true>");
  EXPECT_EQ(spec.instance().header, "LinearSkinny.cuh");
  // A block covers 16 * tiles * (8 / warpsK) rows of W.
  EXPECT_EQ(spec.featuresPerBlock(), 64);
  const LaunchDims dims = spec.dims(128256);
  EXPECT_EQ(dims.block.x, 256u);
  EXPECT_EQ(dims.grid.x, 2004u);
  // All of its shared memory is dynamic: x rows of K + 32 bf16 under the
  // norm prologue, the warps' partial sums [warpsK][maxRows][features + 4]
  // in fp32, and the norm's per-warp sums of squares.
  EXPECT_EQ(
      dims.sharedBytes,
      static_cast<unsigned>(16 * 2080 * 2 + 4 * 16 * 68 * 4 + 16 * 8 * 4));
  const SkinnySpec plain{
      8192, 8, 1, 8, LinearOutput::Bf16, false, LinearEpilogue::Residual,
      false};
  EXPECT_EQ(plain.instance().nameExpression,
            "sol::kernels::linear_skinny<8192, 8, 1, 8, __nv_bfloat16, false, "
            "1, false>");
  EXPECT_EQ(plain.dims(2048).grid.x, 128u);
  EXPECT_EQ(plain.dims(2048).sharedBytes, 8u * 8 * 20 * 4);
  EXPECT_EQ(plain.dims(2047).grid.x, 128u);
  EXPECT_EQ(plain.dims(2049).grid.x, 129u);
}

TEST(KernelSpecs, SkinnyChoice) {
  const auto choose = [](int n, int k, int rows,
                         LinearOutput output = LinearOutput::Bf16,
                         LinearEpilogue epilogue = LinearEpilogue::None,
                         bool norm = false) {
    return SkinnySpec::choose(n, k, rows, output, false, epilogue, norm, 132);
  };
  // One n8 mma per tile and k step up to 8 rows, two above.
  for (int rows = 1; rows <= 8; ++rows)
    EXPECT_EQ(choose(3072, 2048, rows).maxRows, 8) << rows;
  for (int rows = 9; rows <= 16; ++rows)
    EXPECT_EQ(choose(3072, 2048, rows).maxRows, 16) << rows;
  // Up to 8 rows: the most blocks that fit one wave of two per SM (264),
  // and two tiles a warp when its K slice is 8 k steps or fewer.
  struct Expected {
    int n, k, tiles, warpsK;
    unsigned blocks;
  };
  for (const Expected &e : {Expected{3072, 2048, 2, 8, 96}, // Llama-3.2-1B QKV
                            Expected{2048, 2048, 2, 8, 64}, // o
                            Expected{16384, 2048, 2, 4, 256}, // gate/up
                            Expected{2048, 8192, 1, 8, 128},  // down
                            Expected{6144, 4096, 2, 8, 192}, // Llama-3.1-8B QKV
                            Expected{4096, 4096, 1, 8, 256}, // o
                            Expected{28672, 4096, 2, 2, 224},  // gate/up
                            Expected{4096, 14336, 1, 8, 256}}) // down
  {
    const SkinnySpec s = choose(e.n, e.k, 8);
    EXPECT_EQ(s.tiles, e.tiles) << e.n << "x" << e.k;
    EXPECT_EQ(s.warpsK, e.warpsK) << e.n << "x" << e.k;
    EXPECT_EQ(s.dims(e.n).grid.x, e.blocks) << e.n << "x" << e.k;
  }
  // 16 rows: one 16-row tile per block for narrow projections, K over all
  // 8 warps.
  for (auto [n, k] :
       {std::pair{3072, 2048}, std::pair{2048, 2048}, std::pair{2048, 8192},
        std::pair{6144, 4096}, std::pair{4096, 14336}}) {
    const SkinnySpec s = choose(n, k, 16);
    EXPECT_EQ(s.tiles, 1) << n << "x" << k;
    EXPECT_EQ(s.warpsK, 8) << n << "x" << k;
    EXPECT_EQ(s.featuresPerBlock(), 16);
  }
  // gate/up of Llama-3.2-1B at 16 rows: two tiles a warp (512 blocks of 32
  // rows).
  const SkinnySpec gateUp =
      choose(16384, 2048, 16, LinearOutput::Bf16, LinearEpilogue::Swiglu, true);
  EXPECT_EQ(gateUp.tiles, 2);
  EXPECT_EQ(gateUp.warpsK, 8);
  EXPECT_EQ(gateUp.dims(16384).grid.x, 512u);
  EXPECT_EQ(gateUp.epilogue, LinearEpilogue::Swiglu);
  EXPECT_TRUE(gateUp.normPrologue);
  // Outputs too wide for one wave: 64 rows a block (two warps along N).
  for (auto [n, k] : {std::pair{128256, 2048}, std::pair{128256, 4096}})
    for (int rows : {4, 16}) {
      const SkinnySpec s = choose(n, k, rows, LinearOutput::Bf16);
      EXPECT_EQ(s.tiles, 2) << n << "x" << k;
      EXPECT_EQ(s.warpsK, 4) << n << "x" << k;
      EXPECT_GE(s.dims(n).grid.x, 264u);
    }
  // Every choice gives each warp at least two k steps of 32; up to 8 rows
  // it runs in one wave whenever some configuration can, and above that it
  // fills the H200 at least once.
  for (int n : {2048, 3072, 4096, 6144, 16384, 28672, 128256})
    for (int k : {896, 2048, 4096, 8192, 14336})
      for (int rows : {2, 8, 9, 16}) {
        const SkinnySpec s = choose(n, k, rows);
        const unsigned blocks = s.dims(n).grid.x;
        if (rows > 8) {
          EXPECT_GE(blocks, 128u) << n << "x" << k;
        } else if (n <= 264 * 128) {
          EXPECT_LE(blocks, 264u) << n << "x" << k;
        }
        EXPECT_GE((k + 31) / 32 / s.warpsK, 2) << n << "x" << k;
      }
  // Short K: fewer warps along K (K = 72: three k steps, one warp).
  EXPECT_EQ(choose(264, 72, 5).warpsK, 1);
  EXPECT_EQ(choose(264, 72, 5).featuresPerBlock(), 128);
  EXPECT_EQ(choose(4864, 896, 5).warpsK, 8);
  EXPECT_THROW(choose(2048, 2048, 0), sol::Error);
  EXPECT_THROW(choose(2048, 2048, 17), sol::Error);
}

TEST(KernelSpecs, SkinnyErrors) {
  const SkinnySpec ok{
      2048, 8, 1, 8, LinearOutput::Bf16, false, LinearEpilogue::None, false};
  EXPECT_NO_THROW(ok.instance());
  SkinnySpec bad = ok;
  bad.maxRows = 4;
  EXPECT_THROW(bad.instance(), sol::Error);
  bad = ok;
  bad.tiles = 4;
  EXPECT_THROW(bad.instance(), sol::Error);
  bad = ok;
  bad.warpsK = 3;
  EXPECT_THROW(bad.instance(), sol::Error);
  bad = ok;
  bad.inFeatures = 2044;
  EXPECT_THROW(bad.instance(), sol::Error);
  for (LinearEpilogue e : {LinearEpilogue::Residual, LinearEpilogue::Swiglu}) {
    bad = ok;
    bad.output = LinearOutput::Fp32;
    bad.epilogue = e;
    EXPECT_THROW(bad.instance(), sol::Error);
  }
  // SwiGLU pairs need an even N.
  SkinnySpec swiglu = ok;
  swiglu.epilogue = LinearEpilogue::Swiglu;
  EXPECT_NO_THROW(swiglu.dims(1000));
  EXPECT_THROW(swiglu.dims(999), sol::Error);
  EXPECT_THROW(ok.dims(0), sol::Error);
  // The norm prologue keeps 16 rows of K in shared memory: K = 4096 fits
  // (about 150 KB), K = 8192 does not.
  const SkinnySpec wide = SkinnySpec::choose(8192, 4096, 16, LinearOutput::Bf16,
                                             false, LinearEpilogue::None, true);
  EXPECT_TRUE(wide.fits());
  EXPECT_GT(wide.sharedBytes(), 48 * 1024);
  const SkinnySpec huge = SkinnySpec::choose(8192, 8192, 16, LinearOutput::Bf16,
                                             false, LinearEpilogue::None, true);
  EXPECT_FALSE(huge.fits());
  EXPECT_THROW(huge.instance(), sol::Error);
  EXPECT_TRUE(SkinnySpec::choose(8192, 8192, 8, LinearOutput::Bf16, false,
                                 LinearEpilogue::None, true)
                  .fits());
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
  EXPECT_THROW(big.dims(16, 101), sol::Error); // N odd: column pairs
  EXPECT_EQ(big.dims(16, 60).grid.y, 1u);      // a router of 60 experts
  // The epilogue changes neither the tiles nor the grid: it runs over W's
  // rows (swiglu writes half as many output columns).
  const GemmSpec swiglu = GemmSpec::choose(4096, 16384, LinearOutput::Bf16,
                                           false, LinearEpilogue::Swiglu);
  EXPECT_EQ(swiglu.epilogue, LinearEpilogue::Swiglu);
  EXPECT_EQ(swiglu.tileM, big.tileM);
  EXPECT_EQ(swiglu.dims(1000, 16384).grid.y, 128u);
  EXPECT_EQ(swiglu.sharedBytes(), big.sharedBytes());
  EXPECT_EQ(GemmSpec::choose(64, 2048, LinearOutput::Bf16, false,
                             LinearEpilogue::Residual)
                .tileM,
            64);
}

TEST(KernelSpecs, AttentionSplitsAndWorkspace) {
  const PagedAttentionSpec spec{32, 8, 128};
  EXPECT_EQ(spec.chooseSplits(1, 48), 1);  // short context
  EXPECT_EQ(spec.chooseSplits(1, 100), 5); // about sqrt(context / 4)
  EXPECT_EQ(spec.chooseSplits(1, 256), 8);
  EXPECT_EQ(spec.chooseSplits(1, 1024), 16);
  EXPECT_EQ(spec.chooseSplits(4, 1024), 16);  // 4 x 8 x 16 = 4 blocks an SM
  EXPECT_EQ(spec.chooseSplits(256, 8192), 1); // enough blocks already
  const int splits = spec.chooseSplits(1, 4096);
  EXPECT_GT(splits, 1);
  EXPECT_LE(splits, 4096 / 32);
  EXPECT_EQ(spec.dims(3, 5).grid.x, 24u);
  EXPECT_EQ(spec.dims(3, 5).grid.y, 5u);
  EXPECT_EQ(spec.chooseSplits(1, 1 << 20), PagedAttentionSpec::kMaxSplits);
  // At most one wave of four blocks per SM: 8 tokens of 8 kv heads get 8
  // splits (512 blocks), not 9 (576 for 528 places).
  EXPECT_EQ(spec.chooseSplits(8, 2048), 8);
  EXPECT_EQ(spec.dims(3, 5).clusterY, 1u); // global merge by default
  // The cluster merge: at most 8 splits up to 1,024 positions, the global
  // merge's count beyond; dims() sets the cluster for 2..8 splits.
  PagedAttentionSpec cluster = spec;
  cluster.clusterMerge = true;
  EXPECT_EQ(cluster.chooseSplits(1, 256), 8);
  EXPECT_EQ(cluster.chooseSplits(1, 512), 8); // 12 with the global merge
  EXPECT_EQ(spec.chooseSplits(1, 512), 12);
  EXPECT_EQ(cluster.chooseSplits(1, 1024), 8);
  EXPECT_EQ(cluster.chooseSplits(1, 4096), spec.chooseSplits(1, 4096));
  EXPECT_EQ(cluster.dims(3, 5).clusterY, 5u);
  EXPECT_EQ(cluster.dims(3, 1).clusterY, 1u);
  EXPECT_EQ(cluster.dims(3, 12).clusterY, 1u);
  // Only grids of at most one block per SM merge in clusters.
  EXPECT_EQ(cluster.dims(2, 8).clusterY, 8u);  // 128 blocks
  EXPECT_EQ(cluster.dims(3, 8).clusterY, 1u);  // 192
  EXPECT_EQ(cluster.chooseSplits(8, 2048), 8); // global, one wave
  EXPECT_EQ(cluster.dims(8, 8).clusterY, 1u);
  EXPECT_EQ(cluster.chooseSplits(4, 1024), 16); // 32 blocks x 8 > 132
  EXPECT_EQ(spec.arrivalCount(3), 24u); // one counter per (token, kv head)
  // Partial outputs [T, splits, Hq, HD] then (max, sum) [T, splits, Hq, 2].
  EXPECT_EQ(spec.workspaceFloats(2, 4), 2u * 4 * 32 * 130);
  EXPECT_THROW((PagedAttentionSpec{32, 8, 264}.instance()), sol::Error);
  EXPECT_THROW((PagedAttentionSpec{32, 8, 100}.instance()), sol::Error);
  EXPECT_THROW((PagedAttentionSpec{30, 8, 128}.instance()), sol::Error);
}

TEST(KernelSpecs, ElementwiseGeometry) {
  EXPECT_EQ(EmbeddingSpec{2048}.dims(3).grid.x, 3u);
  EXPECT_EQ(SwigluSpec{8192}.dims(1).grid.x, 4u);
  EXPECT_EQ(GatherRowsSpec{2048}.dims(1).block.x, 256u);
  EXPECT_EQ(ArgmaxSpec{128256}.dims(5).grid.y, 5u);
  EXPECT_EQ(ArgmaxSpec{128256}.dims(5).grid.x, 32u);
  EXPECT_EQ(ArgmaxSpec{1001}.dims(3).grid.x, 1u);
  EXPECT_EQ(ArgmaxSpec{1 << 20}.splits(), 64);
  EXPECT_EQ(ArgmaxSpec{128256}.workspaceBytes(2), 2u * 32 * 8 + 2 * 4);
  EXPECT_THROW(ArgmaxSpec{}.dims(1), sol::Error);
  EXPECT_EQ(SwigluSpec{8192}.dims(1 << 20).grid.x, 65535u); // grid-stride
}

/// The message of the sol::Error `f` throws ("" if none).
template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const sol::Error &e) {
    return e.what();
  }
  return "";
}

TEST(KernelSpecs, QuantGemvNameAndGeometry) {
  QuantGemvSpec spec;
  spec.format = WeightFormat::Int4;
  spec.inFeatures = 2048;
  spec.maxRows = 8;
  spec.rowsPerWarp = 2;
  spec.warpsK = 4;
  spec.epilogue = LinearEpilogue::Swiglu;
  spec.normPrologue = true;
  spec.groupSize = 128;
  EXPECT_EQ(spec.instance().header, "LinearGemvQuant.cuh");
  EXPECT_EQ(spec.instance().nameExpression,
            "sol::kernels::linear_gemv_quant<sol::kernels::WeightFormat::Int4, "
            "2048, 8, 2, 4, __nv_bfloat16, false, 2, true, 128>");
  // 2 warps along N of 2 rows: 4 rows of W a block.
  const LaunchDims d = spec.dims(16384);
  EXPECT_EQ(d.grid.x, 4096u);
  EXPECT_EQ(d.block.x, 256u);
  EXPECT_EQ(d.sharedBytes, 8u * 2048 * 2); // the normalised rows
  EXPECT_EQ(spec.weightBytes(16384), 16384LL * 1024 + 16384LL * 16 * 5);

  QuantGemvSpec fp8{{WeightFormat::Fp8, 4096, LinearOutput::Fp32}, 1, 4, 8};
  EXPECT_EQ(fp8.instance().nameExpression,
            "sol::kernels::linear_gemv_quant<sol::kernels::WeightFormat::Fp8, "
            "4096, 1, 4, 8, float, false, 0, false, 0>");
  EXPECT_EQ(fp8.dims(1000).grid.x, 250u); // 4 rows a block, rounded up
  EXPECT_EQ(fp8.dims(1000).sharedBytes, 4096u * 2); // quantized x, always
  EXPECT_EQ(fp8.weightBytes(1000), 1000LL * 4096 + 4000);

  QuantGemvSpec int8{{WeightFormat::Int8, 8192}, 2, 4, 8};
  EXPECT_EQ(int8.instance().nameExpression,
            "sol::kernels::linear_gemv_quant<sol::kernels::WeightFormat::Int8, "
            "8192, 2, 4, 8, __nv_bfloat16, false, 0, false, 0>");
  EXPECT_EQ(int8.dims(2048).sharedBytes, 0u); // x through L1
  EXPECT_EQ(int8.dims(2048).grid.x, 512u);
}

TEST(KernelSpecs, QuantGemvMmaNameAndGeometry) {
  QuantGemvMmaSpec spec;
  static_cast<QuantLinearShape &>(spec) = {WeightFormat::Int4,
                                           4096,
                                           LinearOutput::Bf16,
                                           false,
                                           LinearEpilogue::Swiglu,
                                           true,
                                           128};
  spec.tiles = 2;
  spec.slicesK = 4;
  spec.depth = 3;
  EXPECT_EQ(spec.instance().header, "LinearGemvQuantMma.cuh");
  EXPECT_EQ(spec.instance().nameExpression,
            "sol::kernels::linear_gemv_quant_mma<4096, 2, 4, 3, __nv_bfloat16, "
            "false, 2, true, 128>");
  // Two 16-row tiles a block; x in the B order and the normalised row.
  const LaunchDims d = spec.dims(28672);
  EXPECT_EQ(d.grid.x, 896u);
  EXPECT_EQ(d.block.x, 256u);
  EXPECT_EQ(d.sharedBytes, 4096u * 4);
  EXPECT_EQ(spec.dims(40).grid.x, 2u); // a partial last block

  auto refused = [&](auto change, const char *says) {
    QuantGemvMmaSpec s = spec;
    change(s);
    const std::string message = errorOf([&] { s.instance(); });
    EXPECT_NE(message.find(says), std::string::npos)
        << "expected \"" << says << "\", got \"" << message << "\"";
  };
  refused(
      [](QuantGemvMmaSpec &s) {
        s.format = WeightFormat::Int8;
        s.groupSize = 0;
      },
      "int4 weights only");
  refused([](QuantGemvMmaSpec &s) { s.groupSize = 64; }, "group size");
  refused(
      [](QuantGemvMmaSpec &s) {
        s.inFeatures = 4160;
        s.groupSize = 64;
      },
      "multiple of 128");
  refused([](QuantGemvMmaSpec &s) { s.slicesK = 3; }, "slicesK");
  refused([](QuantGemvMmaSpec &s) { s.tiles = 4; }, "8 warps");
  refused([](QuantGemvMmaSpec &s) { s.depth = 7; }, "depth");
  refused(
      [](QuantGemvMmaSpec &s) {
        s.output = LinearOutput::Fp32;
        s.epilogue = LinearEpilogue::Residual;
      },
      "bf16 output");
  refused([](QuantGemvMmaSpec &s) { s.inFeatures = 65536; }, "shared memory");
}

// K splits over as many warps as leave each at least four 128-k blocks.
TEST(KernelSpecs, QuantGemvMmaChoice) {
  auto choose = [](int k) {
    return QuantGemvMmaSpec::choose(k, LinearOutput::Bf16, false,
                                    LinearEpilogue::None, false, 128);
  };
  EXPECT_EQ(choose(4096).slicesK, 8);
  EXPECT_EQ(choose(14336).slicesK, 8);
  EXPECT_EQ(choose(2048).slicesK, 4);
  EXPECT_EQ(choose(2048).tiles, 2);
  EXPECT_EQ(choose(384).slicesK, 1);
  EXPECT_EQ(choose(384).tiles, 8);
  EXPECT_TRUE(QuantGemvMmaSpec::runs(WeightFormat::Int4, 4096, 128));
  EXPECT_TRUE(QuantGemvMmaSpec::runs(WeightFormat::Int4, 1152, 384));
  EXPECT_FALSE(QuantGemvMmaSpec::runs(WeightFormat::Int4, 4096, 64));
  EXPECT_FALSE(QuantGemvMmaSpec::runs(WeightFormat::Int4, 4160, 64));
  EXPECT_FALSE(QuantGemvMmaSpec::runs(WeightFormat::Int8, 4096, 0));
  EXPECT_FALSE(QuantGemvMmaSpec::runs(WeightFormat::Fp8, 4096, 0));
}

TEST(KernelSpecs, QuantGemvChoice) {
  for (WeightFormat f :
       {WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Fp8}) {
    const int g = f == WeightFormat::Int4 ? 128 : 0;
    for (int rows = 1; rows <= 8; ++rows) {
      const QuantGemvSpec s =
          QuantGemvSpec::choose(3072, 2048, rows, f, LinearOutput::Bf16, false,
                                LinearEpilogue::None, true, g);
      EXPECT_EQ(s.maxRows, rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8);
      EXPECT_EQ(s.groupSize, g);
      EXPECT_TRUE(s.normPrologue);
      // Every warp's K slice has at least one load per lane.
      EXPECT_GE(2048 / s.vectorValues() / s.warpsK, 32) << rows;
      EXPECT_LE(s.rowsPerWarp * s.maxRows, 32);
    }
  }
  // One row: 2 weight rows a warp up to K = 3072, 4 beyond; K over 4 warps,
  // or 8 where every warp still gets two loads per lane.
  const QuantGemvSpec qkv = QuantGemvSpec::choose(
      3072, 2048, 1, WeightFormat::Int8, LinearOutput::Bf16, false);
  EXPECT_EQ(qkv.rowsPerWarp, 2);
  EXPECT_EQ(qkv.warpsK, 4);
  const QuantGemvSpec down = QuantGemvSpec::choose(
      2048, 8192, 1, WeightFormat::Int8, LinearOutput::Bf16, false);
  EXPECT_EQ(down.rowsPerWarp, 4);
  EXPECT_EQ(down.warpsK, 8);
  // int4 K = 2048 is 64 loads a row: 2 warps along K.
  EXPECT_EQ(QuantGemvSpec::choose(3072, 2048, 1, WeightFormat::Int4,
                                  LinearOutput::Bf16, false,
                                  LinearEpilogue::None, false, 128)
                .warpsK,
            2);
  // sol-tiny: K = 384 is 24 int8 loads, 12 int4 loads: one warp along K.
  EXPECT_EQ(QuantGemvSpec::choose(768, 384, 1, WeightFormat::Int4,
                                  LinearOutput::Bf16, false,
                                  LinearEpilogue::None, true, 128)
                .warpsK,
            1);
  // Large weights (int4 from 24 M, int8 and fp8 from 32 M): 8 weight rows
  // a warp, K over 4 warps, or over 1 for int8 and fp8 with N >= 16384;
  // fp8 with K > 8192 two rows a warp over all of K. Other fp8 weights: one
  // row a warp (two under SwiGLU), all of K in it.
  auto oneRow = [](int n, int k, WeightFormat f) {
    const QuantGemvSpec s = QuantGemvSpec::choose(
        n, k, 1, f, LinearOutput::Bf16, false, LinearEpilogue::None, false,
        f == WeightFormat::Int4 ? 128 : 0);
    return std::pair{s.rowsPerWarp, s.warpsK};
  };
  using RowsSplit = std::pair<int, int>;
  EXPECT_EQ(oneRow(28672, 4096, WeightFormat::Int4), RowsSplit(8, 4));
  EXPECT_EQ(oneRow(28672, 4096, WeightFormat::Int8), RowsSplit(8, 1));
  EXPECT_EQ(oneRow(4096, 14336, WeightFormat::Int8), RowsSplit(8, 4));
  EXPECT_EQ(oneRow(6144, 4096, WeightFormat::Int4), RowsSplit(8, 4));
  EXPECT_EQ(oneRow(6144, 4096, WeightFormat::Int8), RowsSplit(4, 4));
  EXPECT_EQ(oneRow(16384, 2048, WeightFormat::Int4), RowsSplit(8, 2));
  EXPECT_EQ(oneRow(4096, 4096, WeightFormat::Int4), RowsSplit(4, 4));
  EXPECT_EQ(oneRow(28672, 4096, WeightFormat::Fp8), RowsSplit(8, 1));
  EXPECT_EQ(oneRow(4096, 14336, WeightFormat::Fp8), RowsSplit(2, 1));
  EXPECT_EQ(oneRow(6144, 4096, WeightFormat::Fp8), RowsSplit(1, 1));
  EXPECT_EQ(QuantGemvSpec::choose(8192, 2048, 1, WeightFormat::Fp8,
                                  LinearOutput::Bf16, false,
                                  LinearEpilogue::Swiglu)
                .rowsPerWarp,
            2);
  // 8 rows: 2 weight rows a warp, K over 8 warps when long.
  const QuantGemvSpec eight = QuantGemvSpec::choose(
      4096, 14336, 8, WeightFormat::Fp8, LinearOutput::Bf16, false,
      LinearEpilogue::Residual);
  EXPECT_EQ(eight.rowsPerWarp, 2);
  EXPECT_EQ(eight.warpsK, 8);
  EXPECT_EQ(eight.dims(4096).sharedBytes, 8u * 14336 * 2); // fits 227 KB
}

TEST(KernelSpecs, QuantGemvErrors) {
  auto choose = [](int n, int k, int rows, WeightFormat f, int g,
                   LinearOutput out = LinearOutput::Bf16,
                   LinearEpilogue e = LinearEpilogue::None) {
    return
        [=] { QuantGemvSpec::choose(n, k, rows, f, out, false, e, false, g); };
  };
  EXPECT_EQ(errorOf(choose(2048, 2056, 1, WeightFormat::Int8, 0)),
            "linear_gemv_quant: in features (K) (2056) must be a multiple of "
            "16");
  EXPECT_EQ(errorOf(choose(2048, 2064, 1, WeightFormat::Int4, 48)),
            "linear_gemv_quant: in features (K) (2064) must be a multiple of "
            "32");
  EXPECT_EQ(errorOf(choose(2048, 2048, 1, WeightFormat::Int4, 48)),
            "linear_gemv_quant: the int4 group size (48) must be a multiple "
            "of 32");
  EXPECT_EQ(errorOf(choose(2048, 2048, 1, WeightFormat::Int4, 96)),
            "linear_gemv_quant: in features (K) (2048) must be a multiple of "
            "96");
  EXPECT_EQ(errorOf(choose(2048, 2048, 1, WeightFormat::Int4, 0)),
            "linear_gemv_quant: int4 weights need their group size, got 0");
  EXPECT_EQ(errorOf(choose(2048, 2048, 1, WeightFormat::Fp8, 128)),
            "linear_gemv_quant: Fp8 weights have one scale per row, not groups "
            "(group size 128)");
  EXPECT_EQ(errorOf(choose(2048, 2048, 9, WeightFormat::Int8, 0)),
            "linear_gemv_quant handles 1..8 rows, got 9");
  EXPECT_EQ(errorOf(choose(2048, 2048, 0, WeightFormat::Int8, 0)),
            "linear_gemv_quant handles 1..8 rows, got 0");
  EXPECT_EQ(errorOf(choose(2048, 2048, 1, WeightFormat::Int8, 0,
                           LinearOutput::Fp32, LinearEpilogue::Residual)),
            "linear_gemv_quant: the residual and gated epilogues need a bf16 "
            "output");
  // fp8 keeps maxRows quantized rows of x in shared memory.
  EXPECT_EQ(errorOf(choose(4096, 16384, 8, WeightFormat::Fp8, 0)),
            "linear_gemv_quant: 262144 bytes of shared memory for 8 rows of "
            "16384 features of fp8 activations, more than the 230400 bytes a "
            "block may have beside its static shared memory");
  EXPECT_EQ(errorOf(choose(4096, 16384, 8, WeightFormat::Int8, 0)), "");
  EXPECT_EQ(errorOf(choose(0, 2048, 1, WeightFormat::Int8, 0)),
            "linear_gemv_quant: out features (N) must be positive, got 0");
  // Swiglu: gate/up pairs in one warp, and an even N.
  QuantGemvSpec odd{{WeightFormat::Int8, 2048}, 1, 1, 4};
  odd.epilogue = LinearEpilogue::Swiglu;
  EXPECT_EQ(errorOf([&] { odd.instance(); }),
            "linear_gemv_quant: a gated epilogue needs an even rowsPerWarp");
  odd.rowsPerWarp = 2;
  EXPECT_EQ(errorOf([&] { odd.dims(1001); }),
            "linear_gemv_quant: out features (N) of a gated epilogue (1001) "
            "must be a multiple of 2");
  QuantGemvSpec wide{{WeightFormat::Int8, 2048}, 8, 8, 4};
  EXPECT_EQ(errorOf([&] { wide.instance(); }),
            "linear_gemv_quant: rowsPerWarp * maxRows must be at most 32, got "
            "8 * 8");
}

TEST(KernelSpecs, QuantGemmNameGeometryAndErrors) {
  // 64 rows of the 8B down projection: 32 column tiles split K 8 ways to
  // give 256 blocks; int8 stages of 1 sub-tile.
  QuantGemmSpec down = QuantGemmSpec::choose(
      64, 4096, 14336, WeightFormat::Int8, LinearOutput::Bf16, false,
      LinearEpilogue::Residual, 0, 132);
  EXPECT_EQ(down.tileM, 64);
  EXPECT_EQ(down.warpsM, 1);
  EXPECT_EQ(down.warpsN, 8);
  EXPECT_EQ(down.kSub, 1);
  EXPECT_EQ(down.stages, 4);
  EXPECT_EQ(down.splitK, 8);
  EXPECT_EQ(down.instance().header, "LinearGemmQuant.cuh");
  EXPECT_EQ(down.instance().nameExpression,
            "sol::kernels::linear_gemm_quant<sol::kernels::WeightFormat::Int8, "
            "64, 128, 1, 8, 4, 1, float, false, 0, true, 0>");
  EXPECT_EQ(down.finalizeInstance().nameExpression,
            "sol::kernels::linear_splitk_finalize<__nv_bfloat16, false, 1>");
  EXPECT_EQ(down.dims(40, 4096).grid.x, 32u * 8);
  EXPECT_EQ(down.dims(40, 4096).block.x, 256u);
  EXPECT_EQ(down.sharedBytes(), 4 * (64 * 128 + 128 * 64));
  EXPECT_EQ(down.weightBytes(4096, 14336), 4096LL * 14336 + 4 * 4096);
  // 16 rows take 16-row tiles, int4 4 sub-tiles a stage (128 bytes of each
  // W row); enough column tiles (224 for 100 multiprocessors) need no
  // split.
  const QuantGemmSpec gateUp = QuantGemmSpec::choose(
      16, 28672, 4096, WeightFormat::Int4, LinearOutput::Bf16, false,
      LinearEpilogue::Swiglu, 128, 100);
  EXPECT_EQ(gateUp.tileM, 16);
  EXPECT_EQ(gateUp.kSub, 4);
  EXPECT_EQ(gateUp.splitK, 1);
  EXPECT_EQ(gateUp.sharedBytes(), 4 * 4 * (16 * 128 + 128 * 32));
  EXPECT_EQ(gateUp.instance().nameExpression,
            "sol::kernels::linear_gemm_quant<sol::kernels::WeightFormat::Int4, "
            "16, 128, 1, 8, 4, 4, __nv_bfloat16, false, 2, false, 128>");
  // Splits keep 512 k each: K = 1024 splits at most twice.
  EXPECT_EQ(QuantGemmSpec::choose(16, 128, 1024, WeightFormat::Int8,
                                  LinearOutput::Bf16, false,
                                  LinearEpilogue::None, 0, 132)
                .splitK,
            2);

  EXPECT_TRUE(QuantGemmSpec::supports(WeightFormat::Int4, 4096, 4096, 64));
  EXPECT_FALSE(QuantGemmSpec::supports(WeightFormat::Int4, 4096, 4096, 32));
  EXPECT_FALSE(QuantGemmSpec::supports(WeightFormat::Fp8, 4096, 4096, 0));
  EXPECT_FALSE(QuantGemmSpec::supports(WeightFormat::Int8, 4096, 4000, 0));
  EXPECT_FALSE(QuantGemmSpec::supports(WeightFormat::Int8, 4100, 4096, 0));
  QuantGemmSpec bad = gateUp;
  bad.groupSize = 96;
  EXPECT_THROW(bad.instance(), sol::Error);
  bad = gateUp;
  bad.format = WeightFormat::Fp8;
  EXPECT_THROW(bad.instance(), sol::Error);
  bad = down;
  bad.groupSize = 128; // int8 has row scales
  EXPECT_THROW(bad.instance(), sol::Error);
  bad = down;
  bad.warpsN = 3;
  EXPECT_THROW(bad.instance(), sol::Error);
  bad = down;
  bad.kSub = 3;
  EXPECT_THROW(bad.instance(), sol::Error);
  EXPECT_THROW(down.dims(0, 4096), sol::Error);
  EXPECT_THROW(down.dims(16, 4100), sol::Error);
}

} // namespace
} // namespace sol::test

namespace sol::test {
namespace {
using namespace cuda;
// The grouped expert GEMMs take over from one slot an expert on average
// (one row always runs the one-row kernels); quantized experts have their
// own instances (codes decoded into the tiles), named by ExpertFormat's
// number.
TEST(KernelSpecs, MoeGroupedGemmRule) {
  using Format = fb::ExpertFormat;
  const MoeSpec qwen3{128, 8, 2048, 768};
  EXPECT_FALSE(qwen3.grouped(15));
  EXPECT_TRUE(qwen3.grouped(16));
  EXPECT_EQ(qwen3.path(1), MoeSpec::Path::Row);
  EXPECT_EQ(qwen3.path(15), MoeSpec::Path::Slots);
  EXPECT_EQ(qwen3.path(16), MoeSpec::Path::Grouped);
  const MoeSpec gptOssMxfp4{32, 4, 2880, 2880, Format::Mxfp4};
  EXPECT_FALSE(gptOssMxfp4.grouped(7));
  EXPECT_TRUE(gptOssMxfp4.grouped(8));
  // Mixtral-like: top 2 of 2 experts; one row is still the one-row path.
  EXPECT_EQ((MoeSpec{2, 2, 64, 32}.path(1)), MoeSpec::Path::Row);
  EXPECT_EQ((MoeSpec{2, 2, 64, 32}.path(2)), MoeSpec::Path::Grouped);
  EXPECT_EQ(gptOssMxfp4.groupedGateUp(64).nameExpression,
            "sol::kernels::moe_grouped_gemm<32, 2880, 5760, true, 1>");
  EXPECT_EQ(gptOssMxfp4.groupedDown(64).nameExpression,
            "sol::kernels::moe_grouped_gemm<32, 2880, 2880, false, 1>");
  EXPECT_EQ(gptOssMxfp4.groupedDown(32).nameExpression,
            "sol::kernels::moe_grouped_gemm<32, 2880, 2880, false, 1, 32>");
  EXPECT_EQ(gptOssMxfp4.gateUp().nameExpression,
            "sol::kernels::moe_gate_up<32, 2880, 2880, 1>");
  EXPECT_THROW((MoeSpec{32, 4, 2880, 2888, Format::Mxfp4}.groupedDown(64)),
               sol::Error);
  // int8 and fp8 rows are vectors of 16 codes; int4's of 32, in groups of a
  // multiple of 32 that divides the inputs.
  EXPECT_EQ((MoeSpec{128, 8, 2048, 768, Format::Int8}.down().nameExpression),
            "sol::kernels::moe_down<128, 2048, 768, 2>");
  EXPECT_EQ((MoeSpec{128, 8, 2048, 768, Format::Fp8}
                 .groupedGateUp(64)
                 .nameExpression),
            "sol::kernels::moe_grouped_gemm<128, 2048, 1536, true, 3>");
  EXPECT_EQ(
      (MoeSpec{128, 8, 2048, 768, Format::Int4, 128}.gateUp().nameExpression),
      "sol::kernels::moe_gate_up<128, 2048, 768, 4>");
  EXPECT_THROW((MoeSpec{8, 2, 64, 40, Format::Int8}.down()), sol::Error);
  EXPECT_NO_THROW((MoeSpec{8, 2, 64, 48, Format::Int8}.down()));
  EXPECT_THROW((MoeSpec{8, 2, 2048, 768, Format::Int4, 48}.gateUp()),
               sol::Error);
  EXPECT_THROW((MoeSpec{8, 2, 2048, 768, Format::Int4, 512}.down()),
               sol::Error); // 512 does not divide 768
  EXPECT_NO_THROW((MoeSpec{8, 2, 2048, 768, Format::Int4, 256}.down()));
  const MoeSpec mixtral{8, 2, 4096, 14336};
  EXPECT_TRUE(mixtral.grouped(32));
  EXPECT_EQ(mixtral.groupedGateUp(64).nameExpression,
            "sol::kernels::moe_grouped_gemm<8, 4096, 28672, true>");
  // Tiles hold twice an expert's even share of the step's slots: 16 up to
  // 8 slots an expert, 32 up to 16, then 64.
  EXPECT_EQ(qwen3.groupedTileRows(16), 16);
  EXPECT_EQ(qwen3.groupedTileRows(128), 16);
  EXPECT_EQ(qwen3.groupedTileRows(129), 32);
  EXPECT_EQ(qwen3.groupedTileRows(256), 32);
  EXPECT_EQ(qwen3.groupedTileRows(257), 64);
  EXPECT_EQ(mixtral.groupedTileRows(32), 16);
  EXPECT_EQ(mixtral.groupedTileRows(33), 32);
  EXPECT_EQ(mixtral.groupedTileRows(64), 32);
  EXPECT_EQ(mixtral.groupedTileRows(65), 64);
  EXPECT_EQ(gptOssMxfp4.groupedTileRows(64), 64);
  EXPECT_EQ((MoeSpec{32, 4, 2880, 2880}.groupedTileRows(64)), 16);
  EXPECT_EQ((MoeSpec{128, 8, 2048, 768, Format::Fp8}.groupedTileRows(64)), 32);
  EXPECT_EQ((MoeSpec{128, 8, 2048, 768, Format::Int4, 128}.groupedTileRows(64)),
            16);
  EXPECT_EQ(qwen3.groupedTileSizes(8192), (std::vector<int>{16, 32, 64}));
  EXPECT_EQ(qwen3.groupedTileSizes(200), (std::vector<int>{16, 32}));
  EXPECT_TRUE(qwen3.groupedTileSizes(15).empty());
  EXPECT_EQ(gptOssMxfp4.groupedTileSizes(8192), (std::vector<int>{64}));
  EXPECT_EQ(MoeSpec::groupedSharedBytes(64), 98304);
  EXPECT_EQ(MoeSpec::groupedSharedBytes(16), 73728);
  EXPECT_THROW(MoeSpec::groupedSharedBytes(48), sol::Error);
  EXPECT_THROW(qwen3.sort(8), sol::Error);
  EXPECT_EQ(qwen3.sort(32).nameExpression, "sol::kernels::moe_sort<128, 32>");
  EXPECT_EQ(mixtral.sortDims().block.x, 1024u);
  EXPECT_EQ(mixtral.sortDims().grid.x, 1u);
}
} // namespace
} // namespace sol::test

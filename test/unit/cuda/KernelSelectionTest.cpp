//===- KernelSelectionTest.cpp - Which kernels run a plan's linears -------===//
//
// The row rule of Linear and NormLinear ops (runtime/cuda/KernelSelection.h):
// linear_gemv for one row, linear_skinny for 2..8 (a NormLinear behind
// rms_norm), the GEMM above; the instances solc compiles into a plan. Which
// linears prefetch their weights into L2.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/KernelSelection.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sol::test {
namespace {

using namespace cuda;

/// Llama-3.2-1B's layers as the fused plan has them.
OpDesc linearOp(int n, int k, LinearEpilogue epilogue,
                fb::DType out = fb::DType::BF16) {
  OpDesc op;
  op.kind = OpKind::Linear;
  op.epilogue = epilogue;
  op.bufferWidths = {epilogue == LinearEpilogue::Swiglu ? n / 2 : n, k};
  op.outDtype = out;
  op.weightShapes = {{n, k}};
  op.weights = {0};
  return op;
}

OpDesc normLinearOp(int n, int k, LinearEpilogue epilogue,
                    fb::DType out = fb::DType::BF16) {
  OpDesc op = linearOp(n, k, epilogue, out);
  op.kind = OpKind::NormLinear;
  op.bufferWidths.push_back(k); // the normed scratch buffer
  op.weightShapes.insert(op.weightShapes.begin(), {k});
  op.weights = {0, 1};
  return op;
}

/// `op` with its W quantized as solc --quant writes it: the scales (and,
/// for int4, the zero points) follow W and the bias.
OpDesc quantized(OpDesc op, fb::WeightQuant quant, int groupSize = 0) {
  const std::vector<int64_t> w = op.weightShapes.at(op.linearWeight());
  op.quant = quant;
  op.groupSize = groupSize;
  const int64_t groups = groupSize > 0 ? w[1] / groupSize : 1;
  for (std::size_t i = 0; i < op.quantOperands(); ++i) {
    op.weightShapes.push_back({w[0], groups});
    op.weights.push_back(static_cast<int32_t>(op.weights.size()));
  }
  return op;
}

std::vector<std::string> headers(const std::vector<KernelLaunch> &launches) {
  std::vector<std::string> out;
  for (const KernelLaunch &l : launches)
    out.push_back(l.instance.header);
  return out;
}

using Headers = std::vector<std::string>;

TEST(KernelSelection, SkinnyRunsTwoToEightRows) {
  const OpDesc down = linearOp(2048, 8192, LinearEpilogue::Residual);
  EXPECT_EQ(headers(selectKernels(down, 1, 0)), Headers{"LinearGemv.cuh"});
  for (int rows = 2; rows <= SkinnySpec::kSelectedMaxRows; ++rows) {
    const std::vector<KernelLaunch> l = selectKernels(down, rows, 0);
    ASSERT_EQ(headers(l), Headers{"LinearSkinny.cuh"}) << rows;
    EXPECT_TRUE(isSinglePassLinear(l[0].instance));
    const SkinnySpec spec =
        SkinnySpec::choose(2048, 8192, rows, LinearOutput::Bf16, false,
                           LinearEpilogue::Residual, false);
    EXPECT_EQ(l[0].instance, spec.instance());
    EXPECT_EQ(l[0].dims.grid.x, spec.dims(2048).grid.x);
  }
  // 9 rows and more: the GEMM (cuBLASLt in the executor).
  for (int rows : {9, 16, 17})
    EXPECT_EQ(headers(selectKernels(down, rows, 0))[0], "LinearGemm.cuh");

  // A NormLinear normalises with rms_norm first, then linear_skinny
  // without the prologue (the 64 MB gate/up weight is not prefetched).
  const OpDesc gateUp = normLinearOp(16384, 2048, LinearEpilogue::Swiglu);
  for (int rows : {2, 5, 8}) {
    const std::vector<KernelLaunch> l = selectKernels(gateUp, rows, 0);
    ASSERT_EQ(headers(l), (Headers{"RmsNorm.cuh", "LinearSkinny.cuh"})) << rows;
    EXPECT_TRUE(l[1].instance.nameExpression.ends_with(", 2, false>"))
        << l[1].instance.nameExpression;
  }
  EXPECT_EQ(headers(selectKernels(gateUp, 9, 0))[0], "RmsNorm.cuh");
  // fp32 logits too.
  const OpDesc head =
      normLinearOp(128256, 2048, LinearEpilogue::None, fb::DType::F32);
  EXPECT_EQ(selectKernels(head, 4, 0)[1].instance.nameExpression,
            "sol::kernels::linear_skinny<2048, 8, 2, 4, float, false, 0, "
            "false>");
}

TEST(KernelSelection, SmallWeightsBehindIdleKernelsPrefetch) {
  // Llama-3.2-1B: QKV 12.6 MB behind rms_norm in linear_skinny: prefetched;
  // as one-row linear_gemv, behind the down projection: not.
  const OpDesc qkv = normLinearOp(3072, 2048, LinearEpilogue::None);
  const std::vector<KernelLaunch> q8 = selectKernels(qkv, 8, 0);
  ASSERT_EQ(headers(q8), (Headers{"RmsNorm.cuh", "LinearSkinny.cuh"}));
  EXPECT_TRUE(q8[1].instance.nameExpression.ends_with(", false, true>"))
      << q8[1].instance.nameExpression;
  EXPECT_TRUE(selectKernels(qkv, 1, 0)[0].instance.nameExpression.ends_with(
      ", 0, true>"));
  EXPECT_TRUE(prefetchesWeights(qkv, true));
  EXPECT_FALSE(prefetchesWeights(qkv, false));

  // The o projection after attention, in both kernels; the same op fed by
  // another kernel, and the 34 MB down projection, not.
  std::vector<OpDesc> ops(4);
  ops[0].kind = OpKind::Attention;
  ops[1] = linearOp(2048, 2048, LinearEpilogue::Residual);
  ops[2] = linearOp(2048, 2048, LinearEpilogue::Residual);
  ops[3] = linearOp(2048, 8192, LinearEpilogue::Residual);
  const std::vector<int> in = {-1, 7, 9, 7}, out = {7, 8, 9, 10};
  for (std::size_t i = 0; i < ops.size(); ++i)
    ops[i].buffers = {out[i], in[i]};
  markAttentionReaders(ops);
  EXPECT_TRUE(ops[1].readsAttention);
  EXPECT_FALSE(ops[2].readsAttention);
  EXPECT_TRUE(ops[3].readsAttention);
  const OpDesc &o = ops[1];
  EXPECT_TRUE(selectKernels(o, 1, 0)[0].instance.nameExpression.ends_with(
      ", false, true>"));
  EXPECT_TRUE(selectKernels(o, 4, 0)[0].instance.nameExpression.ends_with(
      ", false, true>"));
  EXPECT_TRUE(selectKernels(ops[2], 1, 0)[0].instance.nameExpression.ends_with(
      ", 1, false>"));
  EXPECT_FALSE(prefetchesWeights(ops[3], false));
  EXPECT_TRUE(selectKernels(ops[3], 1, 0)[0].instance.nameExpression.ends_with(
      ", 1, false>"));
}

TEST(KernelSelection, WideNormStaysInTheGemvPrologueForOneRow) {
  // One row: the norm in linear_gemv's prologue, even for K = 16384 (32 KB
  // of shared memory); 8 rows: rms_norm into scratch, then linear_skinny.
  const OpDesc wide = normLinearOp(4096, 16384, LinearEpilogue::None);
  EXPECT_EQ(headers(selectKernels(wide, 1, 0)), Headers{"LinearGemv.cuh"});
  const std::vector<KernelLaunch> l = selectKernels(wide, 8, 0);
  ASSERT_EQ(headers(l), (Headers{"RmsNorm.cuh", "LinearSkinny.cuh"}));
  EXPECT_NE(l[1].instance.nameExpression.find(", false>"), std::string::npos);
}

TEST(KernelSelection, PlansHoldTheInstancesOfEveryStepSize) {
  const OpDesc gateUp = normLinearOp(16384, 2048, LinearEpilogue::Swiglu);
  auto has = [](const std::vector<KernelInstance> &v, const std::string &h,
                int count) {
    return std::count_if(v.begin(), v.end(), [&](const KernelInstance &k) {
             return k.header == h;
           }) == count;
  };
  // gemv for one row, linear_skinny's 8-row instance (behind rms_norm) for
  // 2..8, the GEMM (and swiglu_pairs for cuBLASLt) from 9 on.
  const std::vector<KernelInstance> plan = enumerateKernels(gateUp, 64, 4096);
  EXPECT_TRUE(has(plan, "LinearGemv.cuh", 1));
  EXPECT_TRUE(has(plan, "LinearSkinny.cuh", 1));
  EXPECT_TRUE(has(plan, "RmsNorm.cuh", 1));
  EXPECT_TRUE(has(plan, "Swiglu.cuh", 1));
  EXPECT_FALSE(has(plan, "LinearGemm.cuh", 0));
  // Every launch of every step size is in it.
  for (int rows = 1; rows <= 64; ++rows)
    for (const KernelLaunch &l : selectKernels(gateUp, rows, 0))
      EXPECT_NE(std::find(plan.begin(), plan.end(), l.instance), plan.end())
          << rows << " rows: " << l.instance.nameExpression;
  // Steps of at most 4 tokens need only the 8-row instance.
  EXPECT_TRUE(has(enumerateKernels(gateUp, 4, 4096), "LinearSkinny.cuh", 1));
}

// A mixture of experts (Qwen3-30B-A3B's shape): the router's linear, as a
// Linear op of its own would run it, then routing and the routed experts'
// kernels; a plan holds them, for every step size the router needs.
TEST(KernelSelection, MoeRunsItsRouterThenTheRoutedExperts) {
  OpDesc moe;
  moe.kind = OpKind::Moe;
  moe.topK = 8;
  moe.bufferWidths = {2048, 2048};
  moe.weightShapes = {
      {128, 2048}, {128 * 768, 2048}, {128 * 768, 2048}, {128 * 2048, 768}};
  moe.weights = {0, 1, 2, 3};
  const OpDesc router = moeRouterLinear(moe);
  EXPECT_EQ(router.kind, OpKind::Linear);
  EXPECT_EQ(linearOp(128, 2048, LinearEpilogue::None).weightShapes,
            router.weightShapes);
  for (int rows : {1, 4, 15}) {
    SCOPED_TRACE(rows);
    const std::vector<KernelLaunch> launches = selectKernels(moe, rows, 0);
    const std::vector<KernelLaunch> linear = selectKernels(router, rows, 0);
    const std::vector<KernelLaunch> experts = moeLaunches(moe, rows);
    ASSERT_EQ(launches.size(), linear.size() + experts.size());
    for (std::size_t i = 0; i < linear.size(); ++i)
      EXPECT_EQ(launches[i].instance, linear[i].instance);
    if (rows == 1) {
      // One row: routing inside the gate/up kernel, the combination inside
      // down's; a warp takes one (gate, up) pair of bf16 rows of 2,048, and
      // one output of down.
      EXPECT_EQ(moePath(moe, rows), MoeSpec::Path::Row);
      ASSERT_EQ(experts.size(), 2u);
      EXPECT_EQ(experts[0].instance.nameExpression,
                "sol::kernels::moe_gate_up_row<128, 8, 2048, 768>");
      EXPECT_EQ(experts[0].instance.header, "MoeDecodeRow.cuh");
      EXPECT_EQ(experts[1].instance.nameExpression,
                "sol::kernels::moe_down_row<128, 8, 2048, 768>");
      EXPECT_EQ(experts[0].dims.grid.x, 8u * 768 / 4);
      EXPECT_EQ(experts[1].dims.grid.x, 2048u / 4);
      continue;
    }
    EXPECT_EQ(moePath(moe, rows), MoeSpec::Path::Slots);
    ASSERT_EQ(experts.size(), 4u);
    EXPECT_EQ(experts[0].instance.nameExpression,
              "sol::kernels::moe_route<128, 8>");
    EXPECT_EQ(experts[1].instance.nameExpression,
              "sol::kernels::moe_gate_up<128, 2048, 768>");
    EXPECT_EQ(experts[2].instance.nameExpression,
              "sol::kernels::moe_down<128, 2048, 768>");
    EXPECT_EQ(experts[3].instance.nameExpression,
              "sol::kernels::moe_combine<2048, 8>");
    // One warp a row routes; a block per 16 rows of each expert's weights,
    // or of each slot's expert when there are fewer slots than experts.
    const unsigned units = std::min(rows * 8, 128);
    EXPECT_EQ(experts[0].dims.grid.x, static_cast<unsigned>((rows + 3) / 4));
    EXPECT_EQ(experts[1].dims.grid.x, units * 48);
    EXPECT_EQ(experts[2].dims.grid.x, units * 128);
  }
  // int4 experts (groups of 128): a lane's rows of 2,048 are two 16-byte
  // vectors, so a warp takes 4 (gate, up) pairs.
  OpDesc int4 = moe;
  int4.expertFormat = fb::ExpertFormat::Int4;
  int4.groupSize = 128;
  EXPECT_EQ(moeLaunches(int4, 1)[0].instance.nameExpression,
            "sol::kernels::moe_gate_up_row<128, 8, 2048, 768, 4>");
  EXPECT_EQ(moeLaunches(int4, 1)[0].dims.grid.x, 8u * 768 / 16);
  // From one slot an expert on average (16 rows x 8 of 128 experts): the
  // slots sorted by expert, then the grouped GEMMs.
  EXPECT_EQ(moePath(moe, 15), MoeSpec::Path::Slots);
  EXPECT_EQ(moePath(moe, 16), MoeSpec::Path::Grouped);
  // A prompt's step: tiles of 64 slots (the experts get 128 each).
  const std::vector<KernelLaunch> grouped = moeLaunches(moe, 2048);
  ASSERT_EQ(grouped.size(), 5u);
  EXPECT_EQ(grouped[1].instance.nameExpression,
            "sol::kernels::moe_sort<128, 64>");
  EXPECT_EQ(grouped[2].instance.nameExpression,
            "sol::kernels::moe_grouped_gemm<128, 2048, 1536, true>");
  EXPECT_EQ(grouped[3].instance.nameExpression,
            "sol::kernels::moe_grouped_gemm<128, 768, 2048, false>");
  EXPECT_EQ(grouped[4].instance, moeLaunches(moe, 2)[3].instance);
  // 16,384 slots: 256 full tiles, and a partial one per expert at most.
  EXPECT_EQ(grouped[2].dims.grid.x, (256u + 128) * 12);
  EXPECT_EQ(grouped[3].dims.grid.x, (256u + 128) * 16);
  EXPECT_EQ(grouped[3].dims.sharedBytes, 98304u);
  // Batched decode of 64 sequences (4 slots an expert on average): tiles of
  // 16 slots, sorted the same way.
  const std::vector<KernelLaunch> batched = moeLaunches(moe, 64);
  ASSERT_EQ(batched.size(), 5u);
  EXPECT_EQ(batched[1].instance.nameExpression,
            "sol::kernels::moe_sort<128, 16>");
  EXPECT_EQ(batched[2].instance.nameExpression,
            "sol::kernels::moe_grouped_gemm<128, 2048, 1536, true, 0, 16>");
  EXPECT_EQ(batched[3].instance.nameExpression,
            "sol::kernels::moe_grouped_gemm<128, 768, 2048, false, 0, 16>");
  EXPECT_EQ(batched[3].dims.grid.x, (32u + 128) * 16);
  EXPECT_EQ(batched[3].dims.sharedBytes, 4u * (16 + 128) * 64 * 2);
  EXPECT_EQ(moeSortedInts(moe, 128), 128 * 8 + 2 * 129);
  const std::vector<KernelInstance> planned = enumerateKernels(moe, 2048, 0);
  for (std::size_t rows : {1, 2, 16, 64, 128, 256, 300, 2048})
    for (const KernelLaunch &l : moeLaunches(moe, static_cast<int>(rows)))
      EXPECT_NE(std::find(planned.begin(), planned.end(), l.instance),
                planned.end())
          << l.instance.nameExpression;
  // Plans of small steps only have no grouped GEMMs.
  for (const KernelInstance &k : enumerateKernels(moe, 15, 0))
    EXPECT_EQ(k.nameExpression.find("grouped"), std::string::npos);
  for (const KernelInstance &k : enumerateKernels(router, 2048, 0))
    EXPECT_NE(std::find(planned.begin(), planned.end(), k), planned.end());
  EXPECT_EQ(splitKWorkspaceFloats(moe, 2048),
            splitKWorkspaceFloats(router, 2048));
}

TEST(KernelSelection, SplitKWorkspace) {
  // Batched decode of 9..16 rows splits K in the GEMM (linear_skinny stops
  // at 8 rows).
  const OpDesc down = linearOp(2048, 8192, LinearEpilogue::Residual);
  EXPECT_EQ(splitKWorkspaceFloats(down, 16), 16u * 2048);
  EXPECT_EQ(splitKWorkspaceFloats(down, 8), 0u);
}

TEST(KernelSelection, FusedRopeOnlyWhereTheShapeHasIt) {
  OpDesc attention;
  attention.kind = OpKind::Attention;
  attention.heads = 32, attention.kvHeads = 8, attention.headDim = 64;
  attention.blockSize = 16;
  OpDesc rope = attention;
  rope.kind = OpKind::RopeKvWrite;
  rope.heads = 32, rope.kvHeads = 8, rope.headDim = 64;
  ASSERT_TRUE(attentionFusesRope(attention));
  EXPECT_TRUE(selectKernels(rope, 1, 0, true).empty());
  EXPECT_NE(selectKernels(attention, 1, 0, true)
                .at(0)
                .instance.nameExpression.find("64, 16, true"),
            std::string::npos);
  auto fusedIn = [](const std::vector<KernelInstance> &v) {
    return std::any_of(v.begin(), v.end(), [](const KernelInstance &k) {
      return k.nameExpression.find(", true>") != std::string::npos;
    });
  };
  EXPECT_TRUE(fusedIn(enumerateKernels(attention, 1, 4096)));
  // An fp8 cache with head dim 16 and groups of 4 holds a head in one lane
  // of 16 values: no fused variant. Plans leave it out, and the executor
  // must not ask for it (it would throw).
  attention.headDim = 16;
  attention.kvDtype = fb::DType::F8E4M3;
  EXPECT_FALSE(attentionFusesRope(attention));
  EXPECT_FALSE(fusedIn(enumerateKernels(attention, 1, 4096)));
  EXPECT_THROW(selectKernels(attention, 1, 0, true), sol::Error);
}

TEST(KernelSelection, DecodeAttentionDoesTheHeadNormItAbsorbs) {
  // Qwen3-30B-A3B's attention and its q/k head norm.
  OpDesc attention;
  attention.kind = OpKind::Attention;
  attention.buffers = {6, 5};
  attention.heads = 32, attention.kvHeads = 4, attention.headDim = 128;
  attention.blockSize = 16;
  OpDesc norm;
  norm.kind = OpKind::HeadRmsNorm;
  norm.buffers = {5};
  norm.heads = 32, norm.secondHeads = 4, norm.headDim = 128;
  norm.weights = {0, 1};
  norm.bufferWidths = {40 * 128};
  ASSERT_TRUE(attentionFusesHeadNorm(attention, norm));
  // Decode steps: no norm launch; the attention's fused variant with QkNorm
  // (and its preloading one for the batch-1 grid).
  EXPECT_TRUE(selectKernels(norm, 1, 0, true, true, true).empty());
  const std::string fused = selectKernels(attention, 1, 4096, true, true, true)
                                .at(0)
                                .instance.nameExpression;
  EXPECT_TRUE(fused.ends_with("<32, 4, 128, 16, true, true, false, true>"))
      << fused;
  // Prompt steps keep the norm and the plain kernel.
  EXPECT_EQ(selectKernels(norm, 8, 0, false, true, true).size(), 1u);
  EXPECT_TRUE(selectKernels(attention, 8, 4096, false, true, true)
                  .at(0)
                  .instance.nameExpression.ends_with("16, false>"));
  // Plans compile the QkNorm variants for such an attention, and only then.
  auto qkNormIn = [](const std::vector<KernelInstance> &v) {
    return std::ranges::count_if(v, [](const KernelInstance &k) {
      return k.nameExpression.ends_with("false, true>");
    });
  };
  EXPECT_EQ(qkNormIn(enumerateKernels(attention, 64, 4096, true)), 2);
  EXPECT_EQ(qkNormIn(enumerateKernels(attention, 64, 4096, false)), 0);
  // What the variant cannot do: an offset column, other heads, a norm of
  // another buffer; one weight for every head it can.
  OpDesc other = norm;
  other.column = 128;
  EXPECT_FALSE(attentionFusesHeadNorm(attention, other));
  other = norm;
  other.heads = 28;
  EXPECT_FALSE(attentionFusesHeadNorm(attention, other));
  other = norm;
  other.buffers = {7};
  EXPECT_FALSE(attentionFusesHeadNorm(attention, other));
  other = norm;
  other.heads = 36, other.secondHeads = 0, other.weights = {0};
  EXPECT_TRUE(attentionFusesHeadNorm(attention, other));
  EXPECT_THROW((PagedAttentionSpec{32, 4, 128, 16, false, false, false, false,
                                   false, true}
                    .instance()),
               sol::Error); // QkNorm without the fused rope
}

TEST(KernelSelection, SoftcappedAttentionRunsItsVariants) {
  // Gemma 2 (head dim 256, soft-capped scores): every attention kernel of
  // the op is the Softcap variant; an op without softcap keeps the plain
  // ones' names.
  OpDesc attention;
  attention.kind = OpKind::Attention;
  attention.heads = 8, attention.kvHeads = 4, attention.headDim = 256;
  attention.blockSize = 16;
  attention.softcap = 50.0f;
  EXPECT_EQ(selectKernels(attention, 1, 256, true, true)
                .at(0)
                .instance.nameExpression,
            "sol::kernels::paged_attention<8, 4, 256, 16, true, true, true>");
  EXPECT_EQ(selectKernels(attention, 64, 256, false, true)
                .at(0)
                .instance.nameExpression,
            "sol::kernels::paged_attention<8, 4, 256, 16, false, false, true>");
  for (const KernelInstance &k : enumerateKernels(attention, 128, 4096))
    EXPECT_NE(k.nameExpression.find(", true>"), std::string::npos)
        << k.nameExpression;
  attention.softcap = 0.0f;
  EXPECT_EQ(selectKernels(attention, 64, 256, false, true)
                .at(0)
                .instance.nameExpression,
            "sol::kernels::paged_attention<8, 4, 256, 16, false>");
}

TEST(KernelSelection, SmallFusedGridsPreloadTheirWalk) {
  // Batch-1 decode (8 kv heads x 8 splits = 64 blocks) runs the fused
  // kernel that preloads its walk, with each kv head's 4 query heads over
  // 2 blocks (128 blocks); 2 sequences preload without the split (256
  // blocks would be two waves); 64 sequences (512 blocks) and steps without
  // the fused rope do not preload. Plans hold every variant.
  OpDesc attention;
  attention.kind = OpKind::Attention;
  attention.heads = 32, attention.kvHeads = 8, attention.headDim = 64;
  attention.blockSize = 16;
  auto name = [&](int rows, bool fused) {
    return selectKernels(attention, rows, 256, fused, true)
        .at(0)
        .instance.nameExpression;
  };
  const std::string split =
      "sol::kernels::paged_attention<32, 8, 64, 16, true, true, false, "
      "false, 2>";
  const std::string preload =
      "sol::kernels::paged_attention<32, 8, 64, 16, true, true>";
  const std::string fused =
      "sol::kernels::paged_attention<32, 8, 64, 16, true>";
  EXPECT_EQ(name(1, true), split);
  EXPECT_EQ(name(2, true), preload);
  EXPECT_EQ(name(64, true), fused);
  EXPECT_EQ(name(1, false),
            "sol::kernels::paged_attention<32, 8, 64, 16, false>");
  const std::vector<KernelInstance> plan =
      enumerateKernels(attention, 64, 4096);
  for (const std::string &n : {split, preload, fused})
    EXPECT_TRUE(std::any_of(
        plan.begin(), plan.end(),
        [&](const KernelInstance &k) { return k.nameExpression == n; }))
        << n;
  PagedAttentionSpec spec{32, 8, 64, 16};
  spec.fusedRope = true;
  EXPECT_TRUE(spec.preloadsWalk(16, 1, 132)); // 8 x 16 = 128 blocks
  EXPECT_TRUE(spec.preloadsWalk(1, 8, 132));
  EXPECT_FALSE(spec.preloadsWalk(17, 1, 132));
  // Head splits: down to groups of 2 while one wave holds the grid, and
  // only into parts that divide the group.
  EXPECT_EQ(spec.chooseHeadSplit(1, 8, 132), 2);
  EXPECT_EQ(spec.chooseHeadSplit(2, 8, 132), 1);
  PagedAttentionSpec qwen3Moe{32, 4, 128, 16, false, true};
  EXPECT_EQ(qwen3Moe.chooseHeadSplit(1, 8, 132), 4); // 4 x 4 x 8 blocks
  EXPECT_EQ(qwen3Moe.chooseHeadSplit(1, 16, 132), 2);
  PagedAttentionSpec gptOss{64, 8, 64, 16, false, true};
  EXPECT_EQ(gptOss.chooseHeadSplit(1, 8, 132), 2);
  PagedAttentionSpec qwen05{14, 2, 64, 16, false, true};
  EXPECT_EQ(qwen05.chooseHeadSplit(1, 8, 132), 1); // 7 heads do not halve
  gptOss.preloadWalk = true;
  gptOss.headSplit = 2;
  EXPECT_EQ(gptOss.dims(1, 8).grid.x, 16u);
  EXPECT_EQ(gptOss.arrivalCount(1), 16u);
  gptOss.headSplit = 3; // not a power of two
  EXPECT_THROW(gptOss.instance(), sol::Error);
  gptOss.headSplit = 2;
  gptOss.preloadWalk = false; // a split needs the preload
  EXPECT_THROW(gptOss.instance(), sol::Error);
  spec.fusedRope = false;
  EXPECT_FALSE(spec.preloadsWalk(1, 1, 132));
  spec.preloadWalk = true; // without the fused rope: no such kernel
  EXPECT_THROW(spec.instance(), sol::Error);
}

TEST(KernelSelection, ArgmaxLmHeadIsTheOneRowGemvWithTheArgmaxEpilogue) {
  // The LM head (fp32 logits behind the final norm): the one-row GEMV's
  // configuration with epilogue 4 (kEpilogueArgmax), and plans hold it.
  const OpDesc head =
      normLinearOp(128256, 2048, LinearEpilogue::None, fb::DType::F32);
  const std::optional<KernelLaunch> fused = selectArgmaxLmHead(head);
  ASSERT_TRUE(fused.has_value());
  const KernelLaunch plain = selectKernels(head, 1, 0).at(0);
  EXPECT_EQ(fused->instance.nameExpression,
            "sol::kernels::linear_gemv<2048, 1, 4, 1, float, false, 4, true>");
  EXPECT_EQ(plain.instance.nameExpression,
            "sol::kernels::linear_gemv<2048, 1, 4, 1, float, false, 0, true>");
  EXPECT_EQ(fused->dims.grid.x, plain.dims.grid.x);
  const std::vector<KernelInstance> plan = enumerateKernels(head, 64, 4096);
  EXPECT_NE(std::find(plan.begin(), plan.end(), fused->instance), plan.end());
  // Without the norm too; not for bf16 outputs, biases or other epilogues.
  EXPECT_TRUE(selectArgmaxLmHead(
                  linearOp(32000, 2048, LinearEpilogue::None, fb::DType::F32))
                  .has_value());
  EXPECT_FALSE(
      selectArgmaxLmHead(normLinearOp(3072, 2048, LinearEpilogue::None))
          .has_value());
  OpDesc biased = head;
  biased.weightShapes.push_back({128256});
  biased.weights.push_back(2);
  EXPECT_FALSE(selectArgmaxLmHead(biased).has_value());
  EXPECT_FALSE(
      selectArgmaxLmHead(normLinearOp(2048, 2048, LinearEpilogue::Residual))
          .has_value());
  // GemvSpec refuses the epilogue beyond one row of fp32 logits.
  GemvSpec spec = GemvSpec::choose(32000, 2048, 2, LinearOutput::Fp32, false);
  spec.argmax = true;
  EXPECT_THROW(spec.instance(), sol::Error);
  spec = GemvSpec::choose(32000, 2048, 1, LinearOutput::Bf16, false);
  spec.argmax = true;
  EXPECT_THROW(spec.instance(), sol::Error);
}

// In plans for Hopper (OpDesc::wgmma, from the target) batched decode of
// kQuantWgmmaMinRows rows and more runs linear_wgmma_quant (int8 from 9
// rows, int4 past linear_skinny_quant's 16; split K with its finalize where
// the tiles are few); fewer rows keep linear_gemm_quant or
// linear_skinny_quant, and enumerateKernels compiles what selection picks.
TEST(KernelSelection, HopperPlansRunBatchedQuantizedDecodeOnWgmma) {
  for (const auto &[quant, group] :
       {std::pair{fb::WeightQuant::Int8, 0}, {fb::WeightQuant::Int4, 128}}) {
    OpDesc gateUp = quantized(normLinearOp(16384, 2048, LinearEpilogue::Swiglu),
                              quant, group);
    gateUp.wgmma = true;
    const WeightFormat format = quant == fb::WeightQuant::Int8
                                    ? WeightFormat::Int8
                                    : WeightFormat::Int4;
    const std::vector<KernelLaunch> eight = selectKernels(gateUp, 8, 0);
    EXPECT_NE(headers(eight), (Headers{"RmsNorm.cuh", "LinearWgmmaQuant.cuh"}));
    const std::vector<KernelLaunch> sixteen = selectKernels(gateUp, 16, 0);
    EXPECT_EQ(sixteen.at(1).instance.header, format == WeightFormat::Int8
                                                 ? "LinearWgmmaQuant.cuh"
                                                 : "LinearSkinnyQuant.cuh");
    const std::vector<KernelInstance> plan = enumerateKernels(gateUp, 128, 0);
    const int first = format == WeightFormat::Int8 ? kQuantWgmmaMinRows : 17;
    for (int rows : {first, 64, kQuantGemmMaxRows}) {
      const std::vector<KernelLaunch> l = selectKernels(gateUp, rows, 0);
      const QuantWgmmaSpec gemm = QuantWgmmaSpec::choose(
          gemmRowBucket(rows), 16384, 2048, format, LinearOutput::Bf16, false,
          LinearEpilogue::Swiglu, group);
      Headers want = {"RmsNorm.cuh", "LinearWgmmaQuant.cuh"};
      if (gemm.splitK > 1)
        want.push_back("LinearGemm.cuh");
      ASSERT_EQ(headers(l), want) << rows;
      EXPECT_TRUE(isQuantGemm(l[1].instance));
      EXPECT_EQ(l[1].instance, gemm.instance());
      EXPECT_EQ(l[1].dims.grid.x, gemm.dims(rows, 16384).grid.x);
      EXPECT_EQ(l[1].dims.block.x, 256u);
      EXPECT_TRUE(gemm.fits());
      for (const KernelLaunch &k : l)
        EXPECT_NE(std::find(plan.begin(), plan.end(), k.instance), plan.end())
            << k.instance.nameExpression;
      // Without the target's wgmma: linear_gemm_quant.
      OpDesc portable = gateUp;
      portable.wgmma = false;
      EXPECT_EQ(selectKernels(portable, rows, 0).at(1).instance.header,
                "LinearGemmQuant.cuh");
    }
  }
  EXPECT_TRUE(targetHasWgmma("sm_90"));
  EXPECT_TRUE(targetHasWgmma("sm_90a"));
  EXPECT_FALSE(targetHasWgmma("sm_100"));
  EXPECT_FALSE(targetHasWgmma("sm_89"));
  EXPECT_TRUE(needsArchSpecificTarget("LinearWgmmaQuant.cuh"));
  EXPECT_FALSE(needsArchSpecificTarget("LinearGemmQuant.cuh"));
}

// Four warpgroups where a matrix's tiles fill at most half of the
// multiprocessors and K splits into about a wave of slices (Llama-3.1-8B's
// QKV, o and down at 32-128 rows); two elsewhere (its gate/up, the 1B's
// shorter K).
TEST(KernelSelection, NarrowWgmmaLinearsTakeFourWarpGroups) {
  struct Case {
    int rows, n, k, warpGroups, splitK;
  };
  for (WeightFormat format : {WeightFormat::Int8, WeightFormat::Int4})
    for (const Case &c :
         {Case{64, 6144, 4096, 4, 6}, Case{32, 6144, 4096, 4, 6},
          Case{64, 4096, 4096, 4, 8}, Case{64, 4096, 14336, 4, 8},
          Case{64, 28672, 4096, 2, 1}, Case{128, 4096, 14336, 4, 8},
          Case{128, 4096, 4096, 4, 8}, Case{128, 6144, 4096, 4, 6},
          Case{128, 3072, 2048, 2, 4}, Case{128, 28672, 4096, 2, 1},
          Case{64, 3072, 2048, 2, 4}, Case{64, 16384, 2048, 2, 2},
          Case{64, 2048, 8192, 2, 8}}) {
      const QuantWgmmaSpec spec = QuantWgmmaSpec::choose(
          c.rows, c.n, c.k, format, LinearOutput::Bf16, false,
          LinearEpilogue::None, format == WeightFormat::Int4 ? 128 : 0, 132);
      EXPECT_EQ(spec.warpGroups, c.warpGroups)
          << c.rows << " x " << c.n << " x " << c.k;
      EXPECT_EQ(spec.splitK, c.splitK)
          << c.rows << " x " << c.n << " x " << c.k;
      EXPECT_EQ(spec.dims(c.rows, c.n).block.x,
                static_cast<unsigned>(128 * c.warpGroups));
      EXPECT_TRUE(spec.fits());
    }
}

TEST(KernelSelection, QuantizedWeightsRunTheQuantizedKernels) {
  // int4: one row on linear_gemv_quant, the norm in its prologue; 2..16
  // rows: rms_norm, then linear_skinny_quant; up to kQuantGemmMaxRows:
  // rms_norm, then linear_gemm_quant (and its split-K finalize where it
  // splits); more: dequantize_weight, then the bf16 kernels of the same op
  // over the copy.
  const OpDesc gateUp =
      quantized(normLinearOp(16384, 2048, LinearEpilogue::Swiglu),
                fb::WeightQuant::Int4, 128);
  const std::vector<KernelLaunch> one = selectKernels(gateUp, 1, 0);
  ASSERT_EQ(headers(one), Headers{"LinearGemvQuant.cuh"});
  EXPECT_TRUE(isQuantSinglePass(one[0].instance));
  EXPECT_FALSE(isSinglePassLinear(one[0].instance));
  const QuantGemvSpec spec = QuantGemvSpec::choose(
      16384, 2048, 1, WeightFormat::Int4, LinearOutput::Bf16, false,
      LinearEpilogue::Swiglu, true, 128);
  EXPECT_EQ(one[0].instance, spec.instance());
  for (int rows : {2, 8, 9, 16}) {
    const std::vector<KernelLaunch> l = selectKernels(gateUp, rows, 0);
    ASSERT_EQ(headers(l), (Headers{"RmsNorm.cuh", "LinearSkinnyQuant.cuh"}))
        << rows;
    EXPECT_TRUE(isQuantSinglePass(l[1].instance));
  }
  for (int rows : {17, 64, kQuantGemmMaxRows}) {
    const std::vector<KernelLaunch> l = selectKernels(gateUp, rows, 0);
    const QuantGemmSpec gemm = QuantGemmSpec::choose(
        gemmRowBucket(rows), 16384, 2048, WeightFormat::Int4,
        LinearOutput::Bf16, false, LinearEpilogue::Swiglu, 128);
    // 128 column tiles split K (fewer than 2 blocks a multiprocessor); the
    // finalize applies SwiGLU.
    Headers want = {"RmsNorm.cuh", "LinearGemmQuant.cuh"};
    if (gemm.splitK > 1)
      want.push_back("LinearGemm.cuh");
    ASSERT_EQ(headers(l), want) << rows;
    EXPECT_GT(gemm.splitK, 1) << rows;
    EXPECT_TRUE(isQuantGemm(l[1].instance));
    EXPECT_EQ(l[1].instance, gemm.instance());
    EXPECT_EQ(l[1].dims.grid.x, gemm.dims(rows, 16384).grid.x);
    if (gemm.splitK > 1)
      EXPECT_EQ(l[2].instance, gemm.finalizeInstance());
  }
  OpDesc plain = normLinearOp(16384, 2048, LinearEpilogue::Swiglu);
  for (int rows : {kQuantGemmMaxRows + 1, 512}) {
    const std::vector<KernelLaunch> l = selectKernels(gateUp, rows, 0);
    ASSERT_FALSE(l.empty());
    EXPECT_TRUE(isDequantize(l[0].instance)) << rows;
    EXPECT_EQ(l[0].instance.nameExpression,
              "sol::kernels::dequantize_weight<sol::kernels::WeightFormat::"
              "Int4, 128>");
    std::vector<KernelLaunch> rest(l.begin() + 1, l.end());
    EXPECT_EQ(headers(rest), headers(selectKernels(plain, rows, 0))) << rows;
  }
  EXPECT_FALSE(needsDequantizedCopy(gateUp, kQuantGemmMaxRows));
  EXPECT_TRUE(needsDequantizedCopy(gateUp, kQuantGemmMaxRows + 1));

  // fp8: linear_skinny_quant for 2..8 rows and for one row of a small
  // weight with K > 4096; linear_gemv_quant for other single rows (the norm
  // in its prologue).
  const OpDesc down = quantized(linearOp(2048, 8192, LinearEpilogue::Residual),
                                fb::WeightQuant::Fp8);
  EXPECT_EQ(headers(selectKernels(down, 1, 0)),
            Headers{"LinearSkinnyQuant.cuh"});
  EXPECT_EQ(headers(selectKernels(down, 5, 0)),
            Headers{"LinearSkinnyQuant.cuh"});
  EXPECT_TRUE(isDequantize(selectKernels(down, 9, 0).at(0).instance));
  EXPECT_TRUE(needsDequantizedCopy(down, 9));
  EXPECT_FALSE(needsDequantizedCopy(down, 8));
  // Steps of more rows may run the W8A8 GEMM on cuBLASLt instead of the
  // copy: plans of more than 8 tokens carry its activation and scale
  // kernels (K a multiple of 128); fewer tokens, or int8, none.
  auto names = [](const std::vector<KernelInstance> &plan) {
    std::vector<std::string> out;
    for (const KernelInstance &k : plan)
      out.push_back(k.nameExpression);
    return out;
  };
  const std::vector<std::string> fp8Plan = names(enumerateKernels(down, 64, 0));
  EXPECT_TRUE(
      std::ranges::count(fp8Plan, "sol::kernels::quantize_rows_fp8<8192>"));
  EXPECT_TRUE(std::ranges::count(fp8Plan, "sol::kernels::repeat_scales"));
  EXPECT_FALSE(std::ranges::count(names(enumerateKernels(down, 8, 0)),
                                  "sol::kernels::quantize_rows_fp8<8192>"));
  // Plans for Hopper of at least one 128-row tile carry Sol's own W8A8
  // GEMM (linear_wgmma_fp8) with the op's epilogue; others do not.
  const std::string fp8Wgmma =
      "sol::kernels::linear_wgmma_fp8<256, 3, false, 1>";
  EXPECT_FALSE(std::ranges::count(fp8Plan, fp8Wgmma));
  OpDesc downHopper = down;
  downHopper.wgmma = true;
  EXPECT_TRUE(std::ranges::count(names(enumerateKernels(downHopper, 2048, 0)),
                                 fp8Wgmma));
  EXPECT_FALSE(std::ranges::count(names(enumerateKernels(downHopper, 127, 0)),
                                  fp8Wgmma));
  const OpDesc downInt8 = quantized(
      linearOp(2048, 8192, LinearEpilogue::Residual), fb::WeightQuant::Int8);
  EXPECT_FALSE(std::ranges::count(names(enumerateKernels(downInt8, 64, 0)),
                                  "sol::kernels::repeat_scales"));
  const OpDesc qkv8 = quantized(normLinearOp(3072, 2048, LinearEpilogue::None),
                                fb::WeightQuant::Fp8);
  // A NormLinear's rows are normalised and quantized by one kernel; a
  // Linear has no norm to fuse.
  const std::string normQuantize = "sol::kernels::rms_norm_quantize_fp8<2048>";
  EXPECT_TRUE(
      std::ranges::count(names(enumerateKernels(qkv8, 64, 0)), normQuantize));
  EXPECT_FALSE(
      std::ranges::count(names(enumerateKernels(qkv8, 8, 0)), normQuantize));
  EXPECT_FALSE(
      std::ranges::count(fp8Plan, "sol::kernels::rms_norm_quantize_fp8<8192>"));
  EXPECT_EQ(headers(selectKernels(qkv8, 1, 0)), Headers{"LinearGemvQuant.cuh"});
  EXPECT_EQ(headers(selectKernels(qkv8, 2, 0)),
            (Headers{"RmsNorm.cuh", "LinearSkinnyQuant.cuh"}));
  const OpDesc gateUp8 = quantized(
      normLinearOp(28672, 4096, LinearEpilogue::Swiglu), fb::WeightQuant::Fp8);
  EXPECT_EQ(headers(selectKernels(gateUp8, 1, 0)),
            Headers{"LinearGemvQuant.cuh"});
  // int8: linear_gemv_quant for one row, linear_skinny_quant for 2..8,
  // linear_gemm_quant from 9 rows (split K: 16 column tiles of the o
  // projection leave the GPU idle).
  const OpDesc o8 = quantized(linearOp(2048, 2048, LinearEpilogue::Residual),
                              fb::WeightQuant::Int8);
  EXPECT_EQ(headers(selectKernels(o8, 1, 0)), Headers{"LinearGemvQuant.cuh"});
  for (int rows : {2, 4, 8})
    EXPECT_EQ(headers(selectKernels(o8, rows, 0)),
              Headers{"LinearSkinnyQuant.cuh"})
        << rows;
  for (int rows : {9, 16, 40}) {
    const std::vector<KernelLaunch> l = selectKernels(o8, rows, 0);
    ASSERT_EQ(l.size(), 2u) << rows;
    EXPECT_TRUE(isQuantGemm(l[0].instance)) << rows;
    EXPECT_TRUE(isSplitKFinalize(l[1].instance)) << rows;
  }
  EXPECT_GE(splitKWorkspaceFloats(o8, 16), 16u * 2048);

  // int4 carries its group size; a bias sits between W and the scales.
  OpDesc qkv = normLinearOp(3072, 2048, LinearEpilogue::None);
  qkv.weightShapes.push_back({3072});
  qkv.weights.push_back(2);
  qkv = quantized(qkv, fb::WeightQuant::Int4, 128);
  ASSERT_TRUE(qkv.hasBias());
  EXPECT_EQ(qkv.scalesWeight(), 3u);
  EXPECT_EQ(selectKernels(qkv, 1, 0).at(0).instance.nameExpression,
            QuantGemvSpec::choose(3072, 2048, 1, WeightFormat::Int4,
                                  LinearOutput::Bf16, true,
                                  LinearEpilogue::None, true, 128)
                .instance()
                .nameExpression);
  EXPECT_EQ(selectKernels(qkv, 200, 0).at(0).instance.nameExpression,
            "sol::kernels::dequantize_weight<sol::kernels::WeightFormat::"
            "Int4, 128>");
  // linear_skinny_quant's int4 steps are groups of 128: smaller groups
  // take linear_gemm_quant (groups of 64 and more), or the copy.
  const OpDesc small = quantized(linearOp(2048, 2048, LinearEpilogue::None),
                                 fb::WeightQuant::Int4, 64);
  EXPECT_TRUE(isQuantGemm(selectKernels(small, 4, 0).at(0).instance));
  const OpDesc tiny = quantized(linearOp(2048, 2048, LinearEpilogue::None),
                                fb::WeightQuant::Int4, 32);
  EXPECT_TRUE(isDequantize(selectKernels(tiny, 4, 0).at(0).instance));

  // A quantized LM head has no argmax epilogue; plans hold every instance
  // of every step size.
  const OpDesc head = quantized(
      normLinearOp(128256, 2048, LinearEpilogue::None, fb::DType::F32),
      fb::WeightQuant::Fp8);
  EXPECT_FALSE(selectArgmaxLmHead(head).has_value());
  const std::vector<KernelInstance> plan = enumerateKernels(gateUp, 64, 4096);
  for (int rows = 1; rows <= 64; ++rows)
    for (const KernelLaunch &l : selectKernels(gateUp, rows, 0))
      EXPECT_NE(std::find(plan.begin(), plan.end(), l.instance), plan.end())
          << rows << " " << l.instance.nameExpression;
}

TEST(KernelSelection, Fp8WgmmaGeometry) {
  const Fp8WgmmaSpec swiglu =
      Fp8WgmmaSpec::choose(false, LinearEpilogue::Swiglu);
  EXPECT_EQ(swiglu.instance().nameExpression,
            "sol::kernels::linear_wgmma_fp8<256, 3, false, 2>");
  EXPECT_EQ(swiglu.instance().header, "LinearWgmmaFp8.cuh");
  EXPECT_TRUE(needsArchSpecificTarget("LinearWgmmaFp8.cuh"));
  // The bf16 output tile, three stages of a 128-row x box and a 256-row W
  // box of 128 bytes, and the 1,024 bytes the alignment may take.
  EXPECT_EQ(swiglu.sharedBytes(), 128 * 256 * 2 + 3 * (128 + 256) * 128 + 1024);
  // Persistent: at most one block a multiprocessor.
  EXPECT_EQ(swiglu.tiles(2048, 28672), 16 * 112);
  LaunchDims d = swiglu.dims(2048, 28672, 132);
  EXPECT_EQ(d.grid.x, 132u);
  EXPECT_EQ(d.block.x, 384u);
  EXPECT_EQ(d.sharedBytes, static_cast<unsigned>(swiglu.sharedBytes()));
  // Partial tiles both ways: 129 rows are two row tiles, 520 columns three.
  d = swiglu.dims(129, 520, 132);
  EXPECT_EQ(d.grid.x, 6u);
  EXPECT_THROW(swiglu.dims(129, 522, 132), Error);
  EXPECT_THROW(swiglu.dims(0, 512, 132), Error);
  // It replaces cuBLASLt where each block has 64 k steps or more.
  const Fp8WgmmaSpec plain = Fp8WgmmaSpec::choose(false, LinearEpilogue::None);
  EXPECT_TRUE(plain.outrunsCublas(2048, 6144, 4096, 132));  // 8B q/k/v
  EXPECT_FALSE(plain.outrunsCublas(2048, 4096, 4096, 132)); // 8B o
  EXPECT_TRUE(plain.outrunsCublas(2048, 4096, 14336, 132)); // 8B down
  EXPECT_TRUE(plain.outrunsCublas(1024, 28672, 4096, 132)); // 8B gate/up
  EXPECT_FALSE(plain.outrunsCublas(2048, 3072, 2048, 132)); // 1B q/k/v
  EXPECT_FALSE(plain.outrunsCublas(128, 28672, 4096, 132)); // one row tile
  // A bias takes 128 columns (256 spill its pairs).
  EXPECT_EQ(Fp8WgmmaSpec::choose(true, LinearEpilogue::None)
                .instance()
                .nameExpression,
            "sol::kernels::linear_wgmma_fp8<128, 5, true, 0>");
  EXPECT_TRUE(Fp8WgmmaSpec::supports(520, 272));
  EXPECT_FALSE(Fp8WgmmaSpec::supports(520, 264)); // row pitch of 264 bytes
  EXPECT_FALSE(Fp8WgmmaSpec::supports(522, 272));
  Fp8WgmmaSpec bad = swiglu;
  bad.tileN = 192;
  EXPECT_THROW(bad.instance(), Error);
  bad = swiglu;
  bad.stages = 4; // 257 KB of shared memory
  EXPECT_FALSE(bad.fits());
  EXPECT_THROW(bad.instance(), Error);
  bad.tileN = 128;
  EXPECT_TRUE(bad.fits());
  EXPECT_EQ(bad.instance().nameExpression,
            "sol::kernels::linear_wgmma_fp8<128, 4, false, 2>");
  bad.stages = 6; // 225 KB beside the static 4.1 KB
  EXPECT_FALSE(bad.fits());
}

TEST(KernelSelection, NormWeightsAndSinksAreReadAsBf16) {
  // An ONNX gpt-oss plan holds sinks and norm weights in f32: the executor
  // rounds exactly these at upload (the attention kernels read bf16 sinks).
  OpDesc norm;
  norm.kind = OpKind::RmsNorm;
  norm.weights = {0};
  OpDesc addNorm = norm; // two norm weights (Gemma's after and before)
  addNorm.weights = {1, 2};
  const OpDesc normLinear = normLinearOp(64, 32, LinearEpilogue::None);
  OpDesc shifted = normLinear; // its norm weight 3, the linear's W 4
  shifted.weights = {3, 4};
  OpDesc sinks;
  sinks.kind = OpKind::Attention;
  sinks.weights = {5};
  OpDesc noSinks;
  noSinks.kind = OpKind::Attention;
  const std::vector<bool> read =
      weightsReadAsBf16({norm, addNorm, shifted, sinks, noSinks}, 7);
  EXPECT_EQ(read,
            (std::vector<bool>{true, true, true, true, false, true, false}));
}

TEST(KernelSelection, WeightDtypesTheKernelsRead) {
  using fb::DType;
  OpDesc sinks;
  sinks.kind = OpKind::Attention;
  sinks.name = "layers.0.attn";
  sinks.weights = {0};
  // An int8 linear: W, its f32 row scales.
  const OpDesc int8 =
      quantized(linearOp(64, 32, LinearEpilogue::None), fb::WeightQuant::Int8);
  OpDesc linear = int8;
  linear.weights = {1, 2};
  const std::vector<std::string> names = {"sinks", "w", "w.scales"};
  EXPECT_EQ(weightDtypeProblem({sinks, linear},
                               {DType::F32, DType::I8, DType::F32}, names),
            "");
  // An f32 W would be read as bf16 pairs; so would any f16 weight.
  linear.quant = fb::WeightQuant::None;
  linear.weights = {1};
  EXPECT_NE(
      weightDtypeProblem({linear}, {DType::F32, DType::F32, DType::F32}, names)
          .find("weight 'w' of op  is F32"),
      std::string::npos);
  EXPECT_NE(
      weightDtypeProblem({sinks}, {DType::F16, DType::BF16, DType::F32}, names)
          .find("weight 'sinks' of op layers.0.attn is F16"),
      std::string::npos);
}

} // namespace
} // namespace sol::test

//===- StaticLoweringTest.cpp - The CUDA choices solc records in a plan ---===//
//
// chooseStaticLowering (runtime/cuda/StaticLowering.h) on a two-layer step
// shaped like Llama-3.2-1B's (and with Qwen3's q/k head norms): each choice
// where it holds and the near misses where it must not; readStaticLowering's
// checks of a recorded choice.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/StaticLowering.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sol::test {
namespace {

using namespace cuda;

// Buffers: 0..3 the step inputs, 4 hidden, 5 qkv, 6 attention out, 7 normed
// scratch, 8 the gathered rows, 9 logits, 10 a second gather's rows.
OpDesc op(OpKind kind, std::vector<int32_t> buffers, int64_t layer = 0) {
  OpDesc d;
  d.kind = kind;
  d.buffers = std::move(buffers);
  d.layer = layer;
  d.heads = 32, d.kvHeads = 8, d.headDim = 64;
  d.blockSize = 16;
  return d;
}

OpDesc lmHead(bool bias = false) {
  OpDesc d = op(OpKind::NormLinear, {9, 8, 7});
  d.outDtype = fb::DType::F32;
  d.outRows = fb::Rows::Outputs;
  d.bufferWidths = {128256, 2048, 2048};
  d.weightShapes = {{2048}, {128256, 2048}};
  d.weights = {0, 1};
  if (bias) {
    d.weightShapes.push_back({128256});
    d.weights.push_back(2);
  }
  return d;
}

std::vector<OpDesc> step() {
  std::vector<OpDesc> ops{op(OpKind::Embedding, {4, 0})};
  for (int layer = 0; layer < 2; ++layer) {
    ops.push_back(op(OpKind::RopeKvWrite, {5}, layer));
    ops.push_back(op(OpKind::Attention, {6, 5}, layer));
  }
  ops.push_back(op(OpKind::GatherRows, {8, 4, 3}));
  ops.push_back(lmHead());
  return ops;
}

// Every buffer its own slot (10: a second gather's output).
const std::vector<int> kSlots{-1, -1, -1, -1, 0, 1, 2, 3, 4, 5, 6};

TEST(StaticLowering, LlamaShapedStepTakesEveryChoice) {
  const StaticLowering s = chooseStaticLowering(step(), kSlots, 2048);
  EXPECT_EQ(s.attentionRopeKvWrite,
            (std::vector<int>{-1, -1, 1, -1, 3, -1, -1}));
  EXPECT_TRUE(s.fusedRope());
  EXPECT_EQ(s.skippableGathers, std::vector<int>{5});
  EXPECT_TRUE(s.argmaxLmHead);
  EXPECT_TRUE(s.chunkAttention);
}

TEST(StaticLowering, FusedRopeNeedsEveryAttentionPairedAndSupported) {
  std::vector<OpDesc> ops = step();
  ops.erase(ops.begin() + 3); // layer 1 without its rope_kv_write
  EXPECT_FALSE(chooseStaticLowering(ops, kSlots, 2048).fusedRope());
  // fp8 cache, head dim 16: no fused variant (KernelSelection's rule).
  ops = step();
  for (OpDesc &d : ops)
    d.headDim = 16, d.kvDtype = fb::DType::F8E4M3;
  EXPECT_FALSE(chooseStaticLowering(ops, kSlots, 2048).fusedRope());
}

// Qwen3's step: each layer's QKV projection, a HeadRmsNorm in place on its
// output (q heads by weight 2, k heads by weight 3), RopeKvWrite,
// Attention: 0 embedding, 1-4 and 5-8 the layers, 9 gather, 10 LM head.
std::vector<OpDesc> qwen3Step() {
  std::vector<OpDesc> ops{op(OpKind::Embedding, {4, 0})};
  for (int layer = 0; layer < 2; ++layer) {
    ops.push_back(op(OpKind::Linear, {5, 4}));
    OpDesc norm = op(OpKind::HeadRmsNorm, {5});
    norm.heads = 32, norm.secondHeads = 8, norm.eps = 1e-6f;
    norm.weights = {2, 3};
    ops.push_back(norm);
    ops.push_back(op(OpKind::RopeKvWrite, {5}, layer));
    ops.push_back(op(OpKind::Attention, {6, 5}, layer));
  }
  ops.push_back(op(OpKind::GatherRows, {8, 4, 3}));
  ops.push_back(lmHead());
  return ops;
}

std::vector<int> absorbed(int layer0, int layer1, std::size_t ops = 11) {
  std::vector<int> v(ops, -1);
  v[4] = layer0, v[8] = layer1;
  return v;
}

TEST(StaticLowering, DecodeAttentionAbsorbsTheHeadNorm) {
  std::vector<OpDesc> ops = qwen3Step();
  StaticLowering s = chooseStaticLowering(ops, kSlots, 2048);
  EXPECT_EQ(s.attentionRopeKvWrite[4], 3);
  EXPECT_EQ(s.attentionRopeKvWrite[8], 7);
  EXPECT_EQ(s.attentionHeadNorm, absorbed(2, 6));
  EXPECT_EQ(s.headNormFused(ops.size()),
            (std::vector<bool>{false, false, true, false, true, false, true,
                               false, true, false, false}));
  // One weight for every head (q and k heads together) also fuses.
  ops[2].heads = 40, ops[2].secondHeads = 0, ops[2].weights = {2};
  EXPECT_EQ(chooseStaticLowering(ops, kSlots, 2048).attentionHeadNorm,
            absorbed(2, 6));
  // Near misses: another column, other heads, another head dim, a norm of
  // another buffer; each leaves the other layer fused.
  auto layer0 = [&](auto change) {
    std::vector<OpDesc> v = qwen3Step();
    change(v[2]);
    return chooseStaticLowering(v, kSlots, 2048).attentionHeadNorm;
  };
  EXPECT_EQ(layer0([](OpDesc &n) { n.column = 64; }), absorbed(-1, 6));
  EXPECT_EQ(layer0([](OpDesc &n) { n.secondHeads = 4; }), absorbed(-1, 6));
  EXPECT_EQ(layer0([](OpDesc &n) { n.headDim = 128; }), absorbed(-1, 6));
  EXPECT_EQ(layer0([](OpDesc &n) { n.buffers = {7}; }), absorbed(-1, 6));
  // An op after the attention that reads qkv before the next layer's
  // projection writes it needs the norm's output: no fusion there.
  ops = qwen3Step();
  ops.insert(ops.begin() + 5, op(OpKind::Add, {7, 4, 5}));
  std::vector<int> want(12, -1);
  want[9] = 7;
  EXPECT_EQ(chooseStaticLowering(ops, kSlots, 2048).attentionHeadNorm, want);
  // An op between the norm and the attention that touches qkv.
  ops = qwen3Step();
  ops.insert(ops.begin() + 3, op(OpKind::Add, {5, 5, 4}));
  EXPECT_EQ(chooseStaticLowering(ops, kSlots, 2048).attentionHeadNorm[5], -1);
  // Without the fused rope nothing absorbs a norm.
  ops = qwen3Step();
  ops.erase(ops.begin() + 7); // layer 1's rope_kv_write
  EXPECT_TRUE(
      chooseStaticLowering(ops, kSlots, 2048).attentionHeadNorm.empty());
  EXPECT_TRUE(
      chooseStaticLowering(step(), kSlots, 2048).attentionHeadNorm.empty());
}

TEST(StaticLowering, GatherKeptWhenItsInputSlotIsReusedTooEarly) {
  std::vector<int> slots = kSlots;
  slots[9] = 0; // the LM head writes its logits into the gather input's slot
  EXPECT_TRUE(
      chooseStaticLowering(step(), slots, 2048).skippableGathers.empty());
  // After the last reader of the gathered rows the slot may be reused.
  slots = kSlots;
  slots[10] = 0;
  std::vector<OpDesc> after = step();
  after.push_back(op(OpKind::Add, {10, 9, 9}));
  EXPECT_EQ(chooseStaticLowering(after, slots, 2048).skippableGathers,
            std::vector<int>{5});
  // Gemma's two gathers (hidden and the normed residual) both skip; a gather
  // of a gather's output does not (aliases do not chain).
  std::vector<OpDesc> ops = step();
  ops.insert(ops.end() - 1, op(OpKind::GatherRows, {10, 6, 3}));
  EXPECT_EQ(chooseStaticLowering(ops, kSlots, 2048).skippableGathers,
            (std::vector<int>{5, 6}));
  ops[6].buffers = {10, 8, 3};
  EXPECT_EQ(chooseStaticLowering(ops, kSlots, 2048).skippableGathers,
            std::vector<int>{5});
  ops = step();
  ops[5].buffers = {8, 0, 3}; // a gather of a step input
  EXPECT_TRUE(chooseStaticLowering(ops, kSlots, 2048).skippableGathers.empty());
}

TEST(StaticLowering, ArgmaxHeadOnlyForAPlainFloatLmHead) {
  std::vector<OpDesc> ops = step();
  ops.back() = lmHead(/*bias=*/true);
  EXPECT_FALSE(chooseStaticLowering(ops, kSlots, 2048).argmaxLmHead);
  ops.back() = lmHead();
  ops.back().outDtype = fb::DType::BF16;
  EXPECT_FALSE(chooseStaticLowering(ops, kSlots, 2048).argmaxLmHead);
}

TEST(StaticLowering, ChunkAttentionNeedsOneShapeAndSeveralTokens) {
  EXPECT_FALSE(chooseStaticLowering(step(), kSlots, 1).chunkAttention);
  std::vector<OpDesc> ops = step();
  ops[4].softcap = 50.0f; // one layer soft-capped: two specs
  EXPECT_FALSE(chooseStaticLowering(ops, kSlots, 2048).chunkAttention);
  ops = step();
  for (OpDesc &d : ops)
    d.headDim = 256; // supported, but plans keep paged_attention
  EXPECT_FALSE(chooseStaticLowering(ops, kSlots, 2048).chunkAttention);
}

// Gemma's MLP half: the o projection's output (buffer 6) normalised and
// added to the residual (hidden, 4) by an RmsNorm with an input norm into
// buffer 10, then the gate/up projection with GeGLU (into 5) and the
// down projection (into 6): 0 embedding, 1 o, 2 norm, 3 gate/up, 4 down, 5
// gather, 6 LM head.
OpDesc gemmaLinear(std::vector<int32_t> buffers, int64_t n, int64_t k) {
  OpDesc d = op(OpKind::Linear, std::move(buffers));
  d.outDtype = fb::DType::BF16;
  d.bufferWidths = {n, k};
  d.weights = {4};
  d.weightShapes = {{n, k}};
  return d;
}

std::vector<OpDesc> gemmaStep() {
  std::vector<OpDesc> ops{op(OpKind::Embedding, {4, 0})};
  ops.push_back(gemmaLinear({6, 5}, 2048, 2048));
  OpDesc norm = op(OpKind::RmsNorm, {10, 6, 4});
  norm.bufferWidths = {2048, 2048, 2048};
  norm.weights = {2, 3}; // the norm of the sum, the input norm
  norm.weightShapes = {{2048}, {2048}};
  ops.push_back(norm);
  OpDesc gateUp = gemmaLinear({5, 10}, 16384, 2048);
  gateUp.epilogue = fb::LinearEpilogue::Geglu;
  ops.push_back(gateUp);
  ops.push_back(gemmaLinear({6, 5}, 2048, 8192));
  ops.push_back(op(OpKind::GatherRows, {8, 4, 3}));
  ops.push_back(lmHead());
  return ops;
}

TEST(StaticLowering, OneRowLinearAbsorbsTheResidualNormBeforeIt) {
  const std::vector<OpDesc> ops = gemmaStep();
  const StaticLowering s = chooseStaticLowering(ops, kSlots, 2048);
  EXPECT_EQ(s.linearAddNorm, (std::vector<int>{-1, -1, -1, 2, -1, -1, -1}));
  const std::vector<GemvAddNorm> fused = s.addNormFused(ops);
  EXPECT_EQ(fused[2], GemvAddNorm::InputNorm);
  EXPECT_EQ(fused[3], GemvAddNorm::InputNorm);
  EXPECT_EQ(fused[1], GemvAddNorm::None);
  // Without the input norm, the plain residual add.
  std::vector<OpDesc> plain = ops;
  plain[2].weights = {2}, plain[2].weightShapes = {{2048}};
  EXPECT_EQ(chooseStaticLowering(plain, kSlots, 2048).addNormFused(plain)[3],
            GemvAddNorm::Residual);
  // One-row steps run no norm launch and linear_gemv with the add in its
  // prologue; other steps keep both.
  EXPECT_TRUE(
      selectKernels(ops[2], 1, 0, false, false, false, fused[2]).empty());
  EXPECT_EQ(selectKernels(ops[2], 2, 0, false, false, false, fused[2]).size(),
            1u);
  const std::vector<KernelLaunch> one =
      selectKernels(ops[3], 1, 0, false, false, false, fused[3]);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NE(one[0].instance.nameExpression.find(", true, false, 2>"),
            std::string::npos)
      << one[0].instance.nameExpression;
  EXPECT_EQ(one[0].dims.sharedBytes, 2u * 2048 * 2);
  const std::vector<KernelInstance> planned =
      enumerateKernels(ops[3], 2048, 4096, false, fused[3]);
  EXPECT_NE(std::find(planned.begin(), planned.end(), one[0].instance),
            planned.end());
}

TEST(StaticLowering, ResidualNormStaysWhereTheLinearCannotTakeIt) {
  auto pairs = [](const std::vector<OpDesc> &ops,
                  const std::vector<int> &slots = kSlots) {
    return chooseStaticLowering(ops, slots, 2048).linearAddNorm;
  };
  // The linear's output shares an arena slot with the norm's input (6):
  // blocks would write it while others read it.
  std::vector<int> slots = kSlots;
  slots[5] = slots[6];
  EXPECT_TRUE(pairs(gemmaStep(), slots).empty());
  // The norm's output is read after the linear.
  std::vector<OpDesc> ops = gemmaStep();
  ops.insert(ops.begin() + 4, op(OpKind::Add, {6, 10, 5}));
  EXPECT_TRUE(pairs(ops).empty());
  // An op between the norm and the linear.
  ops = gemmaStep();
  ops.insert(ops.begin() + 3, op(OpKind::RopeKvWrite, {5}));
  EXPECT_TRUE(pairs(ops).empty());
  // Quantized weights, fp32 output, a norm without a residual.
  ops = gemmaStep();
  ops[3].quant = fb::WeightQuant::Int8;
  EXPECT_TRUE(pairs(ops).empty());
  ops = gemmaStep();
  ops[3].outDtype = fb::DType::F32;
  EXPECT_TRUE(pairs(ops).empty());
  ops = gemmaStep();
  ops[2].buffers.pop_back();
  EXPECT_TRUE(pairs(ops).empty());
}

/// `s` as a plan records it.
struct Record {
  flatbuffers::FlatBufferBuilder b;
  explicit Record(const StaticLowering &s) {
    b.Finish(fb::CreateCudaLoweringDirect(
        b, &s.attentionRopeKvWrite, &s.skippableGathers, s.argmaxLmHead,
        s.chunkAttention, &s.attentionHeadNorm, &s.linearAddNorm));
  }
  const fb::CudaLowering *get() const {
    return flatbuffers::GetRoot<fb::CudaLowering>(b.GetBufferPointer());
  }
};

/// What readStaticLowering says of `s` recorded for `ops`: its error, or
/// "accepted".
std::string readMessage(const StaticLowering &s,
                        const std::vector<OpDesc> &ops) {
  try {
    readStaticLowering(Record(s).get(), ops, "p.plan");
  } catch (const sol::Error &e) {
    return e.what();
  }
  return "accepted";
}

TEST(StaticLowering, ReadBackAsChosen) {
  const std::vector<OpDesc> ops = step();
  const StaticLowering chosen = chooseStaticLowering(ops, kSlots, 2048);
  const StaticLowering read =
      readStaticLowering(Record(chosen).get(), ops, "p.plan");
  EXPECT_EQ(read.attentionRopeKvWrite, chosen.attentionRopeKvWrite);
  EXPECT_EQ(read.skippableGathers, chosen.skippableGathers);
  EXPECT_EQ(read.argmaxLmHead, chosen.argmaxLmHead);
  EXPECT_EQ(read.chunkAttention, chosen.chunkAttention);
  EXPECT_FALSE(readStaticLowering(Record(StaticLowering{}).get(), ops, "p.plan")
                   .fusedRope());
  const std::vector<OpDesc> qwen3 = qwen3Step();
  const StaticLowering normed = chooseStaticLowering(qwen3, kSlots, 2048);
  EXPECT_EQ(readStaticLowering(Record(normed).get(), qwen3, "p.plan")
                .attentionHeadNorm,
            normed.attentionHeadNorm);
}

TEST(StaticLowering, ReadRefusesAHeadNormTheAttentionCannotDo) {
  const std::vector<OpDesc> ops = qwen3Step();
  const StaticLowering good = chooseStaticLowering(ops, kSlots, 2048);
  auto message = [&](const StaticLowering &s) { return readMessage(s, ops); };
  StaticLowering s = good;
  s.attentionHeadNorm[4] = 3; // a RopeKvWrite
  EXPECT_NE(message(s).find("cannot absorb the head norm"), std::string::npos);
  s = good;
  s.attentionHeadNorm[4] = 6; // a norm after the attention
  EXPECT_NE(message(s).find("cannot absorb the head norm"), std::string::npos);
  s = good;
  s.attentionHeadNorm.pop_back();
  EXPECT_NE(message(s).find("attention_head_norm has 10 entries for 11 ops"),
            std::string::npos);
  s = good;
  s.attentionRopeKvWrite.clear(); // no fused rope, yet a head norm
  EXPECT_NE(message(s).find("no fused rope"), std::string::npos);
}

TEST(StaticLowering, ReadRefusesWhatThePlanCannotDo) {
  const std::vector<OpDesc> ops = step();
  const StaticLowering good = chooseStaticLowering(ops, kSlots, 2048);
  auto refused = [&](const StaticLowering &s, const std::string &what) {
    try {
      readStaticLowering(Record(s).get(), ops, "p.plan");
    } catch (const sol::Error &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("compile the model again"),
                std::string::npos);
      return;
    }
    ADD_FAILURE() << "accepted a record that should fail with: " << what;
  };
  EXPECT_THROW(readStaticLowering(nullptr, ops, "p.plan"), sol::Error);
  StaticLowering s = good;
  s.attentionRopeKvWrite[4] = 1; // layer 1's attention, layer 0's rope
  refused(s, "cannot absorb");
  s = good;
  s.attentionRopeKvWrite[0] = 1; // the embedding absorbs nothing
  refused(s, "is not an attention");
  s = good;
  s.attentionRopeKvWrite.pop_back();
  refused(s, "entries for 7 ops");
  s = good;
  s.skippableGathers = {4}; // an attention op
  refused(s, "not a gather");
  std::vector<OpDesc> biased = ops;
  biased.back() = lmHead(/*bias=*/true);
  try {
    readStaticLowering(Record(good).get(), biased, "p.plan");
    ADD_FAILURE() << "an LM head with a bias cannot keep the argmax";
  } catch (const sol::Error &e) {
    EXPECT_NE(std::string(e.what()).find("cannot keep the argmax"),
              std::string::npos);
  }
}

TEST(StaticLowering, ReadRefusesAResidualNormTheLinearCannotTake) {
  const std::vector<OpDesc> ops = gemmaStep();
  const StaticLowering good = chooseStaticLowering(ops, kSlots, 2048);
  auto message = [&](const StaticLowering &s) { return readMessage(s, ops); };
  EXPECT_EQ(message(good), "accepted");
  EXPECT_EQ(readStaticLowering(Record(good).get(), ops, "p.plan").linearAddNorm,
            good.linearAddNorm);
  StaticLowering s = good;
  s.linearAddNorm[4] = 3; // the down projection: no norm before it
  EXPECT_NE(message(s).find("cannot absorb the residual norm"),
            std::string::npos);
  s = good;
  s.linearAddNorm[3] = 1; // not the op right before
  EXPECT_NE(message(s).find("cannot absorb the residual norm"),
            std::string::npos);
  s = good;
  s.linearAddNorm.pop_back();
  EXPECT_NE(message(s).find("linear_add_norm has 6 entries for 7 ops"),
            std::string::npos);
}

} // namespace
} // namespace sol::test

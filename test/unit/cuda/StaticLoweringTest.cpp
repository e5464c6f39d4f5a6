//===- StaticLoweringTest.cpp - The CUDA choices solc records in a plan ---===//
//
// chooseStaticLowering (runtime/cuda/StaticLowering.h) on a two-layer step
// shaped like Llama-3.2-1B's: each choice where it holds and the near misses
// where it must not; readStaticLowering's checks of a recorded choice.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/StaticLowering.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

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

/// `s` as a plan records it.
struct Record {
  flatbuffers::FlatBufferBuilder b;
  explicit Record(const StaticLowering &s) {
    b.Finish(fb::CreateCudaLoweringDirect(b, &s.attentionRopeKvWrite,
                                          &s.skippableGathers, s.argmaxLmHead,
                                          s.chunkAttention));
  }
  const fb::CudaLowering *get() const {
    return flatbuffers::GetRoot<fb::CudaLowering>(b.GetBufferPointer());
  }
};

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

} // namespace
} // namespace sol::test

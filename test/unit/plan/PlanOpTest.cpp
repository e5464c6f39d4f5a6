//===- PlanOpTest.cpp - Plan ops through their typed tables and back
//-------===//
#include "runtime/plan/PlanOp.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

namespace sol {
namespace {

/// One op of every kind, each field set to a value of its own.
std::vector<PlanOp> everyKind() {
  std::vector<PlanOp> ops;
  auto add = [&](OpKind kind, std::vector<int32_t> buffers,
                 std::vector<int32_t> weights) -> PlanOp & {
    PlanOp op;
    op.kind = kind;
    op.name = std::string(opKindName(kind)) + ".op";
    op.buffers = std::move(buffers);
    op.weights = std::move(weights);
    ops.push_back(std::move(op));
    return ops.back();
  };
  add(OpKind::Embedding, {4, 0}, {7});
  add(OpKind::RmsNorm, {5, 4, 6}, {8}).eps = 1e-5f;
  add(OpKind::RmsNorm, {5, 4}, {8}).eps = 2e-6f;
  PlanOp &head = add(OpKind::HeadRmsNorm, {9}, {3});
  head.column = 128, head.heads = 4, head.headDim = 32, head.eps = 1e-6f;
  add(OpKind::Linear, {10, 5}, {11, 12}).epilogue =
      fb::LinearEpilogue::Residual;
  add(OpKind::Linear, {10, 5}, {11});
  PlanOp &nl = add(OpKind::NormLinear, {13, 4, 14}, {15, 16, 17});
  nl.eps = 3e-5f, nl.epilogue = fb::LinearEpilogue::Swiglu;
  PlanOp &rope = add(OpKind::RopeKvWrite, {9}, {});
  rope.layer = 3, rope.heads = 8, rope.kvHeads = 2, rope.headDim = 64,
  rope.rope = 1;
  PlanOp &attn = add(OpKind::Attention, {18, 9}, {});
  attn.layer = 3, attn.heads = 8, attn.kvHeads = 2, attn.headDim = 64,
  attn.slidingWindow = 4096, attn.scale = 0.125f;
  add(OpKind::Swiglu, {19, 13}, {});
  add(OpKind::Add, {20, 19, 18}, {});
  add(OpKind::GatherRows, {21, 20, 3}, {});
  PlanOp &concat = add(OpKind::ConcatColumns, {22, 9, 18, 19}, {});
  concat.columns = {0, 64, 0};
  concat.widths = {128, 64, 32};
  // Quantized linears: W[, bias], then scales (and int4 zero points).
  add(OpKind::Linear, {10, 5}, {23, 12, 24}).quant = fb::WeightQuant::Int8;
  PlanOp &int4 = add(OpKind::NormLinear, {13, 4, 14}, {15, 25, 26, 27});
  int4.quant = fb::WeightQuant::Int4, int4.groupSize = 128, int4.eps = 1e-5f;
  add(OpKind::Linear, {10, 5}, {28, 29}).quant = fb::WeightQuant::Fp8;
  PlanOp &moe = add(OpKind::Moe, {30, 4}, {31, 32, 33, 34});
  moe.topK = 8, moe.normalizeTopK = true,
  moe.activation = fb::GateActivation::GeluTanh;
  // Tensor-parallel collectives.
  add(OpKind::AllReduce, {10}, {});
  add(OpKind::AllGather, {36, 21}, {});
  // gpt-oss: attention sinks; experts with biases and the clamped SwiGLU.
  PlanOp &sinks = add(OpKind::Attention, {18, 9}, {37});
  sinks.layer = 1, sinks.heads = 8, sinks.kvHeads = 8, sinks.headDim = 64,
  sinks.scale = 0.125f;
  PlanOp &biased = add(OpKind::Moe, {30, 4}, {31, 32, 33, 34, 38, 39, 40, 41});
  biased.topK = 4, biased.normalizeTopK = true,
  biased.activation = fb::GateActivation::ClampedSilu,
  biased.activationLimit = 7.0f;
  // Qwen2-MoE's shared-expert gate.
  add(OpKind::SigmoidGate, {42, 20, 4}, {43});
  // gpt-oss's MXFP4 experts: biases, then the three scales.
  PlanOp &packed =
      add(OpKind::Moe, {30, 4}, {31, 32, 33, 34, 38, 39, 40, 41, 44, 45, 46});
  packed.topK = 4, packed.normalizeTopK = true,
  packed.activation = fb::GateActivation::ClampedSilu,
  packed.activationLimit = 7.0f, packed.expertFormat = fb::ExpertFormat::Mxfp4;
  // sol-quantize's int4 experts: three scales, three zero points, a group
  // size; int8 ones: three scales.
  PlanOp &int4Experts =
      add(OpKind::Moe, {30, 4}, {31, 32, 33, 34, 47, 48, 49, 50, 51, 52});
  int4Experts.topK = 2, int4Experts.expertFormat = fb::ExpertFormat::Int4,
  int4Experts.groupSize = 64;
  PlanOp &int8Experts = add(OpKind::Moe, {30, 4}, {31, 32, 33, 34, 47, 48, 49});
  int8Experts.topK = 2, int8Experts.expertFormat = fb::ExpertFormat::Int8;
  // A GPTQ act-order linear's inputs in its codes' order.
  PlanOp &gather = add(OpKind::GatherColumns, {53, 4}, {});
  gather.columns = {2, 0, 3, 1};
  return ops;
}

TEST(PlanOpTest, EveryKindRoundTrips) {
  const std::vector<PlanOp> ops = everyKind();
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Op>> encoded;
  for (const PlanOp &op : ops)
    encoded.push_back(encodePlanOp(b, op));
  auto vector = b.CreateVector(encoded);
  fb::PlanBuilder pb(b);
  pb.add_ops(vector);
  b.Finish(pb.Finish());
  const fb::Plan *plan = flatbuffers::GetRoot<fb::Plan>(b.GetBufferPointer());
  const std::vector<PlanOp> decoded = decodePlanOps(*plan, "test.plan");
  ASSERT_EQ(decoded.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const PlanOp &a = ops[i], &d = decoded[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(d.kind, a.kind);
    EXPECT_EQ(d.name, a.name);
    EXPECT_EQ(d.buffers, a.buffers);
    EXPECT_EQ(d.weights, a.weights);
    EXPECT_EQ(d.eps, a.eps);
    EXPECT_EQ(d.scale, a.scale);
    EXPECT_EQ(d.column, a.column);
    EXPECT_EQ(d.heads, a.heads);
    EXPECT_EQ(d.kvHeads, a.kvHeads);
    EXPECT_EQ(d.headDim, a.headDim);
    EXPECT_EQ(d.layer, a.layer);
    EXPECT_EQ(d.rope, a.rope);
    EXPECT_EQ(d.slidingWindow, a.slidingWindow);
    EXPECT_EQ(d.epilogue, a.epilogue);
    EXPECT_EQ(d.columns, a.columns);
    EXPECT_EQ(d.widths, a.widths);
    EXPECT_EQ(d.quant, a.quant);
    EXPECT_EQ(d.groupSize, a.groupSize);
    EXPECT_EQ(d.topK, a.topK);
    EXPECT_EQ(d.normalizeTopK, a.normalizeTopK);
    EXPECT_EQ(d.activation, a.activation);
    EXPECT_EQ(d.activationLimit, a.activationLimit);
    EXPECT_EQ(d.expertFormat, a.expertFormat);
  }
  EXPECT_TRUE(decoded[1].hasResidual());
  EXPECT_FALSE(decoded[2].hasResidual());
  EXPECT_TRUE(decoded[4].hasBias());
  EXPECT_FALSE(decoded[5].hasBias());
  EXPECT_TRUE(decoded[6].hasBias());
  // The quantized ones: bias, scales and zeros where they belong.
  EXPECT_TRUE(decoded[13].hasBias());
  EXPECT_EQ(decoded[13].scalesWeight(), 2u);
  EXPECT_FALSE(decoded[14].hasBias());
  EXPECT_EQ(decoded[14].quantOperands(), 2u);
  EXPECT_EQ(decoded[14].weights[decoded[14].scalesWeight() + 1], 27);
  EXPECT_FALSE(decoded[15].hasBias());
  EXPECT_EQ(decoded[15].weights[decoded[15].scalesWeight()], 29);
  EXPECT_FALSE(decoded[8].hasSinks());
  EXPECT_TRUE(decoded[19].hasSinks());
  EXPECT_FALSE(decoded[16].hasMoeBiases());
  EXPECT_TRUE(decoded[20].hasMoeBiases());
  EXPECT_FALSE(decoded[20].hasMxfp4Experts());
  EXPECT_TRUE(decoded[22].hasMxfp4Experts());
  EXPECT_TRUE(decoded[22].hasMoeBiases());
  EXPECT_EQ(decoded[22].weights[decoded[22].moeScalesWeight()], 44);
  EXPECT_FALSE(decoded[23].hasMoeBiases());
  EXPECT_EQ(decoded[23].moeQuantWeights(), 6u);
  EXPECT_EQ(decoded[23].weights[decoded[23].moeScalesWeight() + 3], 50);
  EXPECT_EQ(decoded[23].groupSize, 64);
  EXPECT_EQ(decoded[25].kind, OpKind::GatherColumns);
  EXPECT_EQ(decoded[25].columns, (std::vector<int64_t>{2, 0, 3, 1}));
  EXPECT_EQ(decoded[24].moeQuantWeights(), 3u);
  EXPECT_EQ(decoded[24].weights[decoded[24].moeScalesWeight()], 47);
}

TEST(PlanOpTest, QuantizedLinearsNeedTheirScales) {
  flatbuffers::FlatBufferBuilder b;
  auto params = fb::CreateLinearOp(b, 4, 5, 6, -1, fb::LinearEpilogue::None,
                                   fb::WeightQuant::Int4, 7, -1, 128);
  auto op =
      fb::CreateOpDirect(b, "int4", fb::OpParams::LinearOp, params.Union());
  auto vector = b.CreateVector(std::vector{op});
  fb::PlanBuilder pb(b);
  pb.add_ops(vector);
  b.Finish(pb.Finish());
  const fb::Plan *plan = flatbuffers::GetRoot<fb::Plan>(b.GetBufferPointer());
  try {
    decodePlanOps(*plan, "x.plan");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "plan x.plan: op #0 'int4' has Int4 weights "
                           "without their scales, zero points or group size");
  }
}

TEST(PlanOpTest, MoeBiasesComeAllOrNone) {
  flatbuffers::FlatBufferBuilder b;
  auto params = fb::CreateMoeOp(b, 1, 0, 2, 3, 4, 5, 2, true,
                                fb::GateActivation::Silu, /*router_bias=*/6);
  auto op = fb::CreateOpDirect(b, "moe", fb::OpParams::MoeOp, params.Union());
  auto vector = b.CreateVector(std::vector{op});
  fb::PlanBuilder pb(b);
  pb.add_ops(vector);
  b.Finish(pb.Finish());
  const fb::Plan *plan = flatbuffers::GetRoot<fb::Plan>(b.GetBufferPointer());
  try {
    decodePlanOps(*plan, "x.plan");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "plan x.plan: op #0 'moe' (Moe) has 1 of its four "
                           "biases; it needs all or none");
  }
}

TEST(PlanOpTest, UnknownKindsAreRefused) {
  flatbuffers::FlatBufferBuilder b;
  auto op = fb::CreateOpDirect(b, "future", static_cast<fb::OpParams>(99));
  auto vector = b.CreateVector(std::vector{op});
  fb::PlanBuilder pb(b);
  pb.add_ops(vector);
  b.Finish(pb.Finish());
  const fb::Plan *plan = flatbuffers::GetRoot<fb::Plan>(b.GetBufferPointer());
  try {
    decodePlanOps(*plan, "x.plan");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "plan x.plan: op #0 'future' has kind 99, which "
                           "this runtime does not know; this plan needs a "
                           "newer Sol runtime");
  }
}

} // namespace
} // namespace sol

//===- ReferenceValidationTest.cpp - Bad steps and bad plans are refused --===//
//
// Step inputs out of range are rejected with a message naming the problem
// before any state changes; inconsistent or corrupted plans are rejected at
// construction with a message naming the op; random corruption of a plan's
// metadata never crashes the executor.
//
//===----------------------------------------------------------------------===//

#include "TinyModel.h"

#include "runtime/reference/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>

using namespace sol;
using namespace sol::test;

namespace {

#define EXPECT_ERROR_HAS(body, text)                                           \
  do {                                                                         \
    const std::string message_ = errorOf([&] { body; });                       \
    EXPECT_NE(message_.find(text), std::string::npos)                          \
        << "message: '" << message_ << "'\nexpected to contain: '" << (text)   \
        << "'";                                                                \
  } while (0)

class ReferenceStepValidation : public ::testing::Test {
protected:
  ReferenceStepValidation()
      : file_(model_.plan.write()), ex_(file_, options()) {}
  static ReferenceExecutor::Options options() {
    ReferenceExecutor::Options o;
    o.numKvBlocks = 6;
    o.maxTokensPerStep = 8;
    return o;
  }
  std::vector<float> run(const TestStep &s) {
    return runStep(ex_, s, model_.config().vocab);
  }
  TestStep good() const { return TestStep::sequence({1, 2, 3}, 0, 2); }

  TinyModel model_;
  PlanFile file_;
  ReferenceExecutor ex_;
};

} // namespace

TEST_F(ReferenceStepValidation, TokenIdOutOfVocabulary) {
  TestStep s = good();
  s.tokens[1] = 70000;
  EXPECT_ERROR_HAS(run(s),
                   "token 1 has id 70000 but the vocabulary has 29 ids");
  s.tokens[1] = -1;
  EXPECT_ERROR_HAS(run(s), "token 1 has id -1");
}

TEST_F(ReferenceStepValidation, Positions) {
  TestStep s = good();
  s.positions[2] = -3;
  EXPECT_ERROR_HAS(run(s), "token 2 has position -3; positions must be >= 0");
  s.positions[2] = 4096;
  EXPECT_ERROR_HAS(run(s), "token 2 has position 4096, but the model supports "
                           "4096 positions");
  s.positions[2] = 8; // block-table entry 2 of a 2-entry table
  EXPECT_ERROR_HAS(run(s), "lives in block-table entry 2, but maxBlocksPerSeq "
                           "is 2");
  s = good();
  s.positions.pop_back();
  EXPECT_ERROR_HAS(run(s), "the step has 3 tokens but 2 positions");
}

TEST_F(ReferenceStepValidation, SequencesAndBlocks) {
  TestStep s = good();
  s.tokenSeq[0] = 1;
  EXPECT_ERROR_HAS(run(s), "token 0 belongs to sequence 1, but the step has 1 "
                           "sequences");
  s = good();
  s.blockTables = {0, 6};
  s.positions = {0, 1, 4}; // position 4 lives in entry 1
  EXPECT_ERROR_HAS(run(s), "sequence 0 has block id 6 in block-table entry 1");
  s.blockTables = {0, 1, 2};
  EXPECT_ERROR_HAS(run(s), "block tables hold 3 entries, but numSeqs x "
                           "maxBlocksPerSeq is 1 x 2 = 2");
  s = good();
  s.tokenSeq.push_back(0);
  EXPECT_ERROR_HAS(run(s), "3 tokens but 4 token_seq entries");
  s = good();
  s.numSeqs = 0;
  s.blockTables = {};
  EXPECT_ERROR_HAS(run(s), "numSeqs 0");
}

TEST_F(ReferenceStepValidation, LogitRowsAndOutputs) {
  TestStep s = good();
  s.logitRows = {0, 3};
  EXPECT_ERROR_HAS(run(s), "logits row 1 asks for token 3, but the step has 3 "
                           "tokens");
  s = good();
  std::vector<float> tooSmall(10);
  StepOutput out;
  out.logits = tooSmall;
  EXPECT_ERROR_HAS(ex_.step(s.view(), out),
                   "the logits output holds 10 floats, but 3 rows of 29 "
                   "logits need 87");
  std::vector<int32_t> ids(2);
  out = {};
  out.argmax = ids;
  EXPECT_ERROR_HAS(ex_.step(s.view(), out), "the argmax output holds 2 ids");
}

TEST_F(ReferenceStepValidation, StepSize) {
  TestStep s = TestStep::sequence({1, 2, 3, 4, 5, 6, 7, 8, 9}, 0, 3);
  EXPECT_ERROR_HAS(run(s), "the step has 9 tokens, but this executor runs at "
                           "most 8 tokens per step");
  s = TestStep::sequence({}, 0, 1);
  EXPECT_ERROR_HAS(run(s), "the step has no tokens");
}

TEST_F(ReferenceStepValidation, RejectedStepLeavesTheCacheAlone) {
  const int64_t V = model_.config().vocab;
  ReferenceExecutor clean(file_, options());
  runStep(clean, TestStep::sequence({1, 2, 3}, 0, 2), V);
  run(TestStep::sequence({1, 2, 3}, 0, 2));
  // Decoding position 3 reads positions 0..2 (and rewrites 3 identically).
  const TestStep decode = TestStep::sequence({4}, 3, 2);
  const auto expected = runStep(clean, decode, V);

  // Each bad step would overwrite position 1 with another token's K/V if the
  // executor ran anything before noticing the problem.
  TestStep bad = TestStep::sequence({7, 5}, 1, 2);
  std::vector<int32_t> wrongSize(1);
  StepOutput out;
  out.argmax = wrongSize;
  EXPECT_NE(errorOf([&] { ex_.step(bad.view(), out); }), "");
  ASSERT_EQ(run(decode), expected);

  bad = TestStep::sequence({7, 70000}, 1, 2);
  EXPECT_NE(errorOf([&] { run(bad); }), "");
  ASSERT_EQ(run(decode), expected);

  bad = TestStep::sequence({7, 5}, 1, 2);
  bad.blockTables = {0, 99};
  bad.positions = {1, 4};
  EXPECT_NE(errorOf([&] { run(bad); }), "");
  ASSERT_EQ(run(decode), expected);
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

namespace {

/// The construction error for a tiny model changed by `edit`.
template <typename Edit> std::string planError(Edit edit) {
  TinyModel model;
  edit(model.plan);
  return errorOf([&] {
    PlanFile f = model.plan.write();
    ReferenceExecutor ex(f);
  });
}

/// Index of the first op named `name`.
size_t opIndex(const TestPlan &p, const std::string &name) {
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].name == name)
      return i;
  ADD_FAILURE() << "no op " << name;
  return 0;
}

#define EXPECT_PLAN_ERROR(edit, text)                                          \
  do {                                                                         \
    const std::string message_ = planError([&](TestPlan &p) { edit; });        \
    EXPECT_NE(message_.find(text), std::string::npos)                          \
        << "message: '" << message_ << "'\nexpected to contain: '" << (text)   \
        << "'";                                                                \
  } while (0)

} // namespace

TEST(ReferencePlanCheck, TheTinyModelIsValid) {
  EXPECT_EQ(planError([](TestPlan &) {}), "");
}

TEST(ReferencePlanCheck, IndicesOutOfRange) {
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[1] = 999,
      "op #7 'model.layers.0.self_attn.o_proj' (Linear): buffer operand 1 is "
      "999, but the plan has");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[0] = -1,
      "buffer operand 0 is -1");
  EXPECT_PLAN_ERROR(p.ops[opIndex(p, "model.norm")].weights[0] = 1000,
                    "'model.norm' (RmsNorm): weight operand 0 is 1000");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.1.self_attn.rope")].rope = 3,
      "'model.layers.1.self_attn.rope' (RopeKvWrite): rope table 3 does not "
      "exist");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.1.self_attn")].layer = 2,
      "'model.layers.1.self_attn' (Attention): layer 2 is outside the KV "
      "cache's 2 layers");
}

TEST(ReferencePlanCheck, OperandCounts) {
  // Typed op tables leave an absent operand -1, which the range checks
  // catch; an optional operand's count decides its meaning.
  EXPECT_PLAN_ERROR(p.ops[opIndex(p, "model.embed_tokens")].weights.clear(),
                    "'model.embed_tokens' (Embedding): weight operand 0 is -1");
  EXPECT_PLAN_ERROR(p.ops[opIndex(p, "lm_head")].buffers.pop_back(),
                    "'lm_head' (Linear): buffer operand 1 is -1");
}

TEST(ReferencePlanCheck, UnknownOpKind) {
  EXPECT_PLAN_ERROR(p.ops[opIndex(p, "model.layers.0.mlp.act")].kind =
                        static_cast<OpKind>(42),
                    "'model.layers.0.mlp.act' has kind 43, which this runtime "
                    "does not know");
}

TEST(ReferencePlanCheck, WidthsMustAgree) {
  // A Linear whose input is narrower than W's columns.
  EXPECT_PLAN_ERROR(
      {
        const size_t i = opIndex(p, "model.layers.0.mlp.down_proj");
        p.ops[i].buffers[1] =
            p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[0];
      },
      "'model.layers.0.mlp.down_proj' (Linear): weight "
      "'model.layers.0.mlp.down_proj.weight' has shape [16, 24], expected "
      "[16, 16]");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.self_attn")].heads = 6,
      "'model.layers.0.self_attn' (Attention): qkv buffer 'qkv' has width 32, "
      "expected (heads + 2 * kv_heads) * head_dim = 40");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.self_attn.q_norm")].column = 30,
      "columns [30, 30 + 4 * 4) do not fit in buffer 'qkv' of width 32");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.self_attn.rope")].kvHeads = 1,
      "kv_heads 1 and head_dim 4 disagree with the KV cache layout");
  EXPECT_PLAN_ERROR(p.ropes[0].invFreq.push_back(0.5f),
                    "rope table 0 has 3 inv_freq values, expected head_dim / "
                    "2 = 2");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.mlp.act")].buffers[1] =
          p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[0],
      "'model.layers.0.mlp.act' (Swiglu): in 'o_proj' has width 16, expected "
      "twice the width of out 'act' (48)");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "logits_rows")].buffers[0] =
          p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[0],
      "'logits_rows' (GatherRows): buffers 'o_proj' (Tokens rows) and "
      "'logit_rows' (Outputs rows) must have the same rows");
}

// The tensor-parallel collectives: only in a plan split over ranks, and an
// AllGather's output as wide as the ranks' inputs side by side.
TEST(ReferencePlanCheck, Collectives) {
  auto insertBefore = [](TestPlan &p, const char *name, TestOp op) {
    p.ops.insert(p.ops.begin() + static_cast<std::ptrdiff_t>(opIndex(p, name)),
                 std::move(op));
  };
  EXPECT_PLAN_ERROR(
      {
        TestOp sum;
        sum.kind = OpKind::AllReduce;
        sum.name = "sum";
        sum.buffers = {
            p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[0]};
        insertBefore(p, "model.layers.0.mlp.down_proj", sum);
      },
      "'sum' (AllReduce): sums over tensor-parallel ranks, but the plan has "
      "one");
  EXPECT_PLAN_ERROR(
      {
        p.tensorParallelSize = 2;
        TestOp gather;
        gather.kind = OpKind::AllGather;
        gather.name = "gather";
        // (No braced list: its commas would split the macro's argument.)
        gather.buffers.push_back(
            p.buffer("wide", 10, RowSpace::Outputs, DType::F32));
        gather.buffers.push_back(
            p.buffer("narrow", 4, RowSpace::Outputs, DType::F32));
        insertBefore(p, "logits_rows", gather);
      },
      "'gather' (AllGather): out 'wide' has width 10, expected 2 ranks times "
      "the width 4 of in 'narrow'");
  EXPECT_PLAN_ERROR(p.tensorParallelSize = 0, "tensor_parallel_size is 0");
}

TEST(ReferencePlanCheck, BuffersAndDataFlow) {
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[1] = 1,
      "buffer operand 1 is the step input 'positions' where an activation "
      "buffer is expected");
  EXPECT_PLAN_ERROR(p.ops[opIndex(p, "model.embed_tokens")].buffers[1] = 5,
                    "'model.embed_tokens' (Embedding): buffer operand 1 is "
                    "'normed', but it must be one of the int32 step inputs");
  EXPECT_PLAN_ERROR(
      p.ops.erase(p.ops.begin() +
                  static_cast<int64_t>(opIndex(p, "model.layers.0.mlp.act"))),
      "'model.layers.0.mlp.down_proj' (Linear) reads buffer 'act' before any "
      "op of the step writes it");
  EXPECT_PLAN_ERROR(
      p.ops.erase(p.ops.begin() + static_cast<int64_t>(opIndex(
                                      p, "model.layers.1.self_attn.rope"))),
      "'model.layers.1.self_attn' (Attention) reads the KV cache of layer 1 "
      "before any RopeKvWrite of the step writes it");
  EXPECT_PLAN_ERROR(p.buffers[1].dtype = DType::F32,
                    "buffer 1 'positions' must be the step input positions: "
                    "I32, width 1, Tokens rows");
  EXPECT_PLAN_ERROR(p.buffers.resize(3), "has 3 buffers");
  EXPECT_PLAN_ERROR(p.ops.clear(), "has no ops");
  EXPECT_PLAN_ERROR(p.ops.pop_back(),
                    "the last op 'model.norm' must write the logits: an F32 "
                    "buffer with Outputs rows");
  EXPECT_PLAN_ERROR(
      p.buffers[static_cast<size_t>(p.ops.back().buffers[0])].dtype =
          DType::BF16,
      "buffer 'logits' is BF16 with Outputs rows");
  EXPECT_PLAN_ERROR(
      p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[1] =
          p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")].buffers[0],
      "buffer operands 0 and 1 are the same buffer 'o_proj'; this op cannot "
      "run in place");
}

TEST(ReferencePlanCheck, QuantizedLinears) {
  // An int8 linear whose codes are still bf16, and one whose scales are
  // missing (the op names W twice: the second is taken as its scales).
  auto makeInt8 = [](TestPlan &p) -> PlanOp & {
    PlanOp &op = p.ops[opIndex(p, "model.layers.0.self_attn.o_proj")];
    op.quant = fb::WeightQuant::Int8;
    op.weights.push_back(op.weights[0]);
    return op;
  };
  EXPECT_PLAN_ERROR(makeInt8(p),
                    "weight 'model.layers.0.self_attn.o_proj.weight' has "
                    "dtype BF16, expected I8");
  EXPECT_PLAN_ERROR(
      {
        PlanOp &op = makeInt8(p);
        op.weights.pop_back();
      },
      "has Int8 weights without their scales, zero points or group size");
}

TEST(ReferencePlanCheck, Weights) {
  EXPECT_PLAN_ERROR(p.weights[0].dtype = DType::I8,
                    "'model.embed_tokens' (Embedding): weight "
                    "'model.embed_tokens.weight' has dtype I8; the reference "
                    "executor runs BF16, F16 and F32 weights, and int8, fp8 "
                    "and int4 ones as the codes of a quantized linear");
  EXPECT_PLAN_ERROR(p.weights[0].bytes.resize(p.weights[0].bytes.size() - 2),
                    "weight 'model.embed_tokens.weight' has 926 bytes, but its "
                    "shape and dtype BF16 need 928");
  EXPECT_PLAN_ERROR(p.weights[0].shape[1] = 0, "has an invalid shape");
  EXPECT_PLAN_ERROR(p.ops[opIndex(p, "model.layers.0.input_layernorm")].eps =
                        -1.0f,
                    "eps is -1; it must be finite and >= 0");
}

TEST(ReferencePlanCheck, Options) {
  TinyModel model;
  PlanFile f = model.plan.write();
  ReferenceExecutor::Options o;
  o.numKvBlocks = -1;
  EXPECT_NE(errorOf([&] {
              ReferenceExecutor ex(f, o);
            }).find("reference executor options are invalid"),
            std::string::npos);
}

// Random byte changes in the metadata (checksum not verified, so they reach
// the executor): every outcome must be a sol::Error or a working executor,
// never a crash or another exception. The ASan build of this test catches
// out-of-bounds reads that would not crash.
TEST(ReferencePlanCheck, CorruptedMetadataNeverCrashes) {
  TinyModel model;
  const std::filesystem::path good = tempPlanPath();
  model.plan.writeFile(good);
  std::vector<char> bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::remove(good);
  PlanHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  const TestStep step = TestStep::sequence({1, 2, 3}, 0, 2);

  std::mt19937 rng(2024);
  int opened = 0, constructed = 0, stepped = 0;
  for (int iteration = 0; iteration < 400; ++iteration) {
    std::vector<char> mutated = bytes;
    const int flips = 1 + iteration % 3;
    for (int i = 0; i < flips; ++i) {
      std::uniform_int_distribution<uint64_t> where(
          header.metadataOffset,
          header.metadataOffset + header.metadataSize - 1);
      mutated[where(rng)] = static_cast<char>(rng());
    }
    const std::filesystem::path path = tempPlanPath();
    {
      std::ofstream out(path, std::ios::binary);
      out.write(mutated.data(), static_cast<std::streamsize>(mutated.size()));
    }
    try {
      PlanFile f = PlanFile::open(path, PlanFile::Options{false});
      ++opened;
      ReferenceExecutor::Options o;
      o.numKvBlocks = 4;
      ReferenceExecutor ex(f, o);
      ++constructed;
      std::vector<float> logits(3 * static_cast<size_t>(ex.vocabSize()));
      StepOutput out;
      out.logits = logits;
      ex.step(step.view(), out);
      ++stepped;
    } catch (const Error &) {
    }
    std::filesystem::remove(path);
  }
  // The corruption must reach the executor often enough to mean something.
  EXPECT_GT(opened, 50);
  EXPECT_GT(constructed, 10);
  std::cout << "opened " << opened << ", constructed " << constructed
            << ", stepped " << stepped << " of 400 corrupted plans\n";
}

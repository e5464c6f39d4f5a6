//===- TestPlan.cpp - Builds small plans for reference executor tests -----===//

#include "TestPlan.h"

#include <atomic>
#include <cstring>
#include <unistd.h>

namespace sol::test {

TestPlan::TestPlan() {
  buffer("tokens", 1, RowSpace::Tokens, DType::I32);
  buffer("positions", 1, RowSpace::Tokens, DType::I32);
  buffer("token_seq", 1, RowSpace::Tokens, DType::I32);
  buffer("logit_rows", 1, RowSpace::Outputs, DType::I32);
}

int TestPlan::weight(const std::string &name, std::vector<int64_t> shape,
                     const std::vector<float> &values, DType dtype) {
  TestWeight w{name, dtype, std::move(shape), {}};
  for (float v : values) {
    if (dtype == DType::F32) {
      const auto *p = reinterpret_cast<const std::byte *>(&v);
      w.bytes.insert(w.bytes.end(), p, p + sizeof v);
    } else {
      const uint16_t bits =
          dtype == DType::BF16 ? floatToBf16(v) : floatToHalf(v);
      const auto *p = reinterpret_cast<const std::byte *>(&bits);
      w.bytes.insert(w.bytes.end(), p, p + sizeof bits);
    }
  }
  weights.push_back(std::move(w));
  return static_cast<int>(weights.size()) - 1;
}

int TestPlan::buffer(const std::string &name, int64_t width, RowSpace rows,
                     DType dtype) {
  buffers.push_back({name, dtype, width, rows});
  return static_cast<int>(buffers.size()) - 1;
}

int TestPlan::rope(std::vector<float> invFreq, float attentionScaling) {
  ropes.push_back({std::move(invFreq), attentionScaling});
  return static_cast<int>(ropes.size()) - 1;
}

void TestPlan::kvCache(int32_t layers, int32_t kvHeads, int32_t headDim,
                       int32_t blockSize, bool fp8) {
  kvLayout = std::vector<int32_t>{layers, kvHeads, headDim, blockSize};
  kvFp8 = fp8;
}

void TestPlan::op(OpKind kind, const std::string &name,
                  std::vector<int32_t> opBuffers,
                  std::vector<int32_t> opWeights, std::vector<int64_t> ints,
                  std::vector<float> floats) {
  PlanOp o;
  o.kind = kind;
  o.name = name;
  o.buffers = std::move(opBuffers);
  o.weights = std::move(opWeights);
  auto i = [&](size_t at) { return at < ints.size() ? ints[at] : 0; };
  auto f = [&](size_t at) { return at < floats.size() ? floats[at] : 0.0f; };
  switch (kind) {
  case OpKind::RmsNorm:
    o.eps = f(0);
    break;
  case OpKind::HeadRmsNorm:
    o.column = i(0);
    o.heads = i(1);
    o.headDim = i(2);
    o.eps = f(0);
    break;
  case OpKind::Linear:
  case OpKind::NormLinear:
    o.epilogue = static_cast<fb::LinearEpilogue>(i(0));
    o.eps = f(0);
    break;
  case OpKind::RopeKvWrite:
  case OpKind::Attention:
    o.layer = i(0);
    o.heads = i(1);
    o.kvHeads = i(2);
    o.headDim = i(3);
    (kind == OpKind::RopeKvWrite ? o.rope : o.slidingWindow) = i(4);
    o.scale = f(0);
    break;
  case OpKind::Moe:
    o.topK = i(0);
    o.normalizeTopK = i(1) != 0;
    o.activation = static_cast<fb::GateActivation>(i(2));
    o.activationLimit = f(0);
    break;
  case OpKind::ConcatColumns:
    for (size_t at = 0; at + 1 < ints.size(); at += 2) {
      o.columns.push_back(ints[at]);
      o.widths.push_back(ints[at + 1]);
    }
    break;
  default:
    break;
  }
  ops.push_back(std::move(o));
}

void TestPlan::observe(int source) {
  const int logits =
      buffer("logits", buffers[static_cast<size_t>(source)].width,
             RowSpace::Outputs, DType::F32);
  op(OpKind::GatherRows, "observe", {logits, source, 3});
}

namespace {

// The plan's metadata; `sections` are where the weights were written.
flatbuffers::Offset<fb::Plan>
buildPlan(flatbuffers::FlatBufferBuilder &b, const TestPlan &plan,
          const std::vector<fb::Section> &sections) {
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const TestWeight &w = plan.weights[i];
    weights.push_back(fb::CreateWeightDirect(b, w.name.c_str(),
                                             static_cast<fb::DType>(w.dtype),
                                             &w.shape, &sections[i]));
  }
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const TestBuffer &buf : plan.buffers)
    buffers.push_back(fb::CreateBufferDirect(
        b, buf.name.c_str(), static_cast<fb::DType>(buf.dtype), buf.width,
        static_cast<fb::Rows>(buf.rows)));
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (const TestOp &op : plan.ops) {
    if (static_cast<int>(op.kind) >= kNumOpKinds) {
      // A kind from a newer solc: its union type, no table.
      ops.push_back(fb::CreateOpDirect(
          b, op.name.c_str(),
          static_cast<fb::OpParams>(static_cast<int>(op.kind) + 1)));
      continue;
    }
    ops.push_back(encodePlanOp(b, op));
  }
  std::vector<flatbuffers::Offset<fb::RopeTable>> ropes;
  for (const TestRope &r : plan.ropes)
    ropes.push_back(
        fb::CreateRopeTableDirect(b, &r.invFreq, r.attentionScaling));
  auto model = fb::CreateModelInfoDirect(
      b, "TestForCausalLM", "test", "0", "{}", plan.vocabSize, 0, 0,
      plan.maxPositionEmbeddings, fb::DType::BF16);
  flatbuffers::Offset<fb::KvCacheLayout> kv;
  if (plan.kvLayout)
    kv = fb::CreateKvCacheLayout(
        b, (*plan.kvLayout)[0], (*plan.kvLayout)[1], (*plan.kvLayout)[2],
        (*plan.kvLayout)[3], plan.kvFp8 ? fb::DType::F8E4M3 : fb::DType::BF16,
        fb::KvArrangement::BlockSlotHeadDim, 16,
        plan.kvFp8 ? fb::KvScales::PerTokenHead : fb::KvScales::Unscaled);
  auto weightsVec = b.CreateVector(weights);
  auto buffersVec = b.CreateVector(buffers);
  auto opsVec = b.CreateVector(ops);
  auto ropesVec = b.CreateVector(ropes);
  auto version = b.CreateString("reference-test");
  fb::PlanBuilder pb(b);
  pb.add_compiler_version(version);
  pb.add_model(model);
  if (plan.kvLayout)
    pb.add_kv_cache(kv);
  pb.add_rope(ropesVec);
  pb.add_weights(weightsVec);
  pb.add_buffers(buffersVec);
  pb.add_ops(opsVec);
  pb.add_max_tokens_per_step(plan.maxTokensPerStep);
  pb.add_tensor_parallel_size(plan.tensorParallelSize);
  return pb.Finish();
}

} // namespace

void TestPlan::writeFile(const std::filesystem::path &path) const {
  PlanWriter writer(path);
  std::vector<fb::Section> sections;
  for (const TestWeight &w : weights)
    sections.push_back(writer.addSection(w.bytes));
  flatbuffers::FlatBufferBuilder b;
  b.Finish(buildPlan(b, *this, sections));
  writer.finish({b.GetBufferPointer(), b.GetSize()});
}

PlanFile TestPlan::write() const {
  const std::filesystem::path path = tempPlanPath();
  writeFile(path);
  PlanFile file = PlanFile::open(path);
  // The mapping stays valid after the name is gone.
  std::filesystem::remove(path);
  return file;
}

std::filesystem::path tempPlanPath() {
  static std::atomic<int> counter{0};
  return std::filesystem::temp_directory_path() /
         ("sol-reference-test-" + std::to_string(::getpid()) + "-" +
          std::to_string(counter++) + ".plan");
}

TestStep TestStep::sequence(std::vector<int32_t> tokens, int32_t start,
                            int32_t maxBlocks) {
  TestStep s;
  const auto n = static_cast<int32_t>(tokens.size());
  s.tokens = std::move(tokens);
  for (int32_t i = 0; i < n; ++i) {
    s.positions.push_back(start + i);
    s.tokenSeq.push_back(0);
    s.logitRows.push_back(i);
  }
  for (int32_t i = 0; i < maxBlocks; ++i)
    s.blockTables.push_back(i);
  s.numSeqs = 1;
  s.maxBlocksPerSeq = maxBlocks;
  return s;
}

StepBatch TestStep::view() const {
  StepBatch b;
  b.tokens = tokens;
  b.positions = positions;
  b.tokenSeq = tokenSeq;
  b.logitRows = logitRows;
  b.blockTables = blockTables;
  b.numSeqs = numSeqs;
  b.maxBlocksPerSeq = maxBlocksPerSeq;
  return b;
}

std::vector<float> runStep(Executor &executor, const TestStep &step,
                           int64_t vocab, std::vector<int32_t> *argmax) {
  std::vector<float> logits(step.logitRows.size() * static_cast<size_t>(vocab));
  StepOutput out;
  out.logits = logits;
  if (argmax) {
    argmax->assign(step.logitRows.size(), -1);
    out.argmax = *argmax;
  }
  executor.step(step.view(), out);
  return logits;
}

} // namespace sol::test

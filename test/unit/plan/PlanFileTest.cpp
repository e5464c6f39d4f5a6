//===- PlanFileTest.cpp - Plan round trip and corruption ------------------===//
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/PlanOp.h"
#include "runtime/plan/RandomWeights.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

using namespace sol;

namespace {

std::filesystem::path tempPath(const std::string &name) {
  return std::filesystem::temp_directory_path() /
         ("sol-plan-test-" + std::to_string(::getpid()) + "-" + name);
}

/// Writes a small but complete plan: two weights, one op, a tokenizer, and
/// `draft` as its packed draft plan when given.
std::filesystem::path writeSamplePlan(const std::string &name,
                                      std::span<const std::byte> draft = {}) {
  auto path = tempPath(name);
  PlanWriter writer(path);
  std::vector<std::byte> w0(6 * 4), w1(5 * 2);
  for (size_t i = 0; i < w0.size(); ++i)
    w0[i] = std::byte(i * 7 + 1);
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = std::byte(200 - i);
  fb::Section s0 = writer.addSection(w0);
  fb::Section s1 = writer.addSection(w1);
  std::string tok = R"({"model": {"type": "BPE"}})";
  fb::Section st = writer.addSection(std::as_bytes(std::span(tok)));
  fb::Section sd = draft.empty() ? fb::Section() : writer.addSection(draft);

  flatbuffers::FlatBufferBuilder b;
  std::vector<int64_t> shape0 = {2, 3}, shape1 = {5};
  auto weights = b.CreateVector(std::vector<flatbuffers::Offset<fb::Weight>>{
      fb::CreateWeightDirect(b, "w0", fb::DType::F32, &shape0, &s0),
      fb::CreateWeightDirect(b, "w1", fb::DType::BF16, &shape1, &s1)});
  PlanOp embedding;
  embedding.kind = OpKind::Embedding;
  embedding.name = "model.embed_tokens";
  embedding.buffers = {4, 0};
  embedding.weights = {0};
  auto ops = b.CreateVector(
      std::vector<flatbuffers::Offset<fb::Op>>{encodePlanOp(b, embedding)});
  auto model = fb::CreateModelInfoDirect(b, "LlamaForCausalLM", "/models/x",
                                         "abc", "{}", 6, 3, 1, 128);
  fb::PlanBuilder pb(b);
  pb.add_compiler_version(b.CreateString("test"));
  pb.add_model(model);
  pb.add_weights(weights);
  pb.add_ops(ops);
  pb.add_tokenizer_json(&st);
  if (!draft.empty())
    pb.add_draft_plan(&sd);
  pb.add_max_tokens_per_step(64);
  b.Finish(pb.Finish());
  writer.finish({b.GetBufferPointer(), b.GetSize()});
  return path;
}

std::vector<char> readAll(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void writeAll(const std::filesystem::path &p, const std::vector<char> &bytes,
              size_t n) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(n));
}

std::string openError(const std::filesystem::path &p,
                      PlanFile::Options options = {}) {
  try {
    PlanFile::open(p, options);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(PlanFile, RoundTrip) {
  auto path = writeSamplePlan("roundtrip");
  PlanFile plan = PlanFile::open(path);
  const fb::Plan &p = plan.plan();
  EXPECT_EQ(p.compiler_version()->str(), "test");
  EXPECT_EQ(p.model()->architecture()->str(), "LlamaForCausalLM");
  EXPECT_EQ(p.model()->vocab_size(), 6);
  ASSERT_EQ(p.weights()->size(), 2u);
  EXPECT_EQ(p.weights()->Get(1)->name()->str(), "w1");
  EXPECT_EQ(p.weights()->Get(1)->dtype(), fb::DType::BF16);
  auto w0 = plan.weightBytes(0);
  ASSERT_EQ(w0.size(), 24u);
  EXPECT_EQ(w0[5], std::byte(5 * 7 + 1));
  auto w1 = plan.weightBytes(1);
  ASSERT_EQ(w1.size(), 10u);
  EXPECT_EQ(w1[9], std::byte(191));
  // Sections start 256-byte aligned in the file.
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(plan.weightBytes(i).data()) % 256,
              0u);
  auto tok = plan.section(p.tokenizer_json());
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(tok.data()), tok.size()),
            R"({"model": {"type": "BPE"}})");
  ASSERT_EQ(p.ops()->Get(0)->params_type(), fb::OpParams::EmbeddingOp);
  EXPECT_EQ(p.ops()->Get(0)->params_as_EmbeddingOp()->out(), 4);
  std::vector<PlanOp> decoded = decodePlanOps(p, "test");
  ASSERT_EQ(decoded.size(), 1u);
  EXPECT_EQ(decoded[0].kind, OpKind::Embedding);
  EXPECT_EQ(decoded[0].name, "model.embed_tokens");
  EXPECT_EQ(decoded[0].buffers, (std::vector<int32_t>{4, 0}));
  EXPECT_EQ(decoded[0].weights, (std::vector<int32_t>{0}));
  EXPECT_THROW(plan.weightBytes(2), Error);
  std::filesystem::remove(path);
}

/// A plan split over `ranks` tensor-parallel ranks with one replicated
/// weight and one weight whose rank r bytes are all r + 1; `shards` rank
/// sections are listed for the split weight.
std::filesystem::path writeShardedPlan(const std::string &name, int ranks,
                                       int shards) {
  auto path = tempPath(name);
  PlanWriter writer(path);
  std::vector<std::byte> whole(8, std::byte(9));
  fb::Section sw = writer.addSection(whole);
  std::vector<fb::Section> rankSections;
  for (int r = 0; r < shards; ++r) {
    std::vector<std::byte> part(4, std::byte(r + 1));
    rankSections.push_back(writer.addSection(part));
  }
  flatbuffers::FlatBufferBuilder b;
  std::vector<int64_t> shape0 = {4}, shape1 = {2};
  fb::Section empty(0, 0);
  auto weights = b.CreateVector(std::vector<flatbuffers::Offset<fb::Weight>>{
      fb::CreateWeightDirect(b, "norm", fb::DType::BF16, &shape0, &sw),
      fb::CreateWeightDirect(b, "proj~shard0/2", fb::DType::BF16, &shape1,
                             &empty, nullptr, &rankSections)});
  fb::PlanBuilder pb(b);
  pb.add_compiler_version(b.CreateString("test"));
  pb.add_weights(weights);
  pb.add_tensor_parallel_size(ranks);
  b.Finish(pb.Finish());
  writer.finish({b.GetBufferPointer(), b.GetSize()});
  return path;
}

// A split plan holds each rank's shard of a split weight and one copy of
// the others; every rank reads its own.
TEST(PlanFile, RankShards) {
  auto path = writeShardedPlan("sharded", 2, 2);
  PlanFile plan = PlanFile::open(path);
  EXPECT_EQ(plan.plan().tensor_parallel_size(), 2);
  for (int rank = 0; rank < 2; ++rank) {
    auto norm = plan.weightBytes(0, rank);
    ASSERT_EQ(norm.size(), 8u);
    EXPECT_EQ(norm[0], std::byte(9));
    auto proj = plan.weightBytes(1, rank);
    ASSERT_EQ(proj.size(), 4u);
    EXPECT_EQ(proj[3], std::byte(rank + 1));
  }
  EXPECT_THROW(plan.weightBytes(1, 2), Error);
  EXPECT_THROW(plan.weightBytes(1, -1), Error);
  std::filesystem::remove(path);

  // As many shards as ranks, and at least one rank.
  auto bad = writeShardedPlan("sharded-bad", 2, 3);
  EXPECT_NE(openError(bad).find("weight proj~shard0/2 has 3 rank shards but "
                                "the plan has 2 tensor-parallel ranks"),
            std::string::npos)
      << openError(bad);
  std::filesystem::remove(bad);
  auto zero = writeShardedPlan("sharded-zero", 0, 0);
  EXPECT_NE(openError(zero).find("tensor_parallel_size is 0"),
            std::string::npos)
      << openError(zero);
  std::filesystem::remove(zero);
}

// A plan without weight bytes (solc --load-format dummy): each weight's
// values are made from its dtype and shape, the same on every call, finite,
// per rank for a split weight and alike on every rank for the others.
TEST(PlanFile, RandomWeights) {
  auto path = tempPath("random");
  PlanWriter writer(path);
  flatbuffers::FlatBufferBuilder b;
  fb::Section empty(0, 0);
  std::vector<fb::Section> ranks = {empty, empty};
  std::vector<int64_t> matrix = {16, 64}, vector = {64};
  auto weight = [&](const char *name, fb::DType dtype,
                    std::vector<int64_t> &shape, bool split) {
    return fb::CreateWeightDirect(b, name, dtype, &shape, &empty, nullptr,
                                  split ? &ranks : nullptr);
  };
  auto weights = b.CreateVector(std::vector<flatbuffers::Offset<fb::Weight>>{
      weight("w", fb::DType::BF16, matrix, false),
      weight("norm", fb::DType::BF16, vector, false),
      weight("split", fb::DType::BF16, matrix, true),
      weight("fp8", fb::DType::F8E4M3, matrix, false),
      weight("scales", fb::DType::F32, vector, false),
      weight("int8", fb::DType::I8, matrix, false),
      weight("int4", fb::DType::I4, matrix, false),
      weight("zeros", fb::DType::U8, vector, false)});
  fb::PlanBuilder pb(b);
  pb.add_weights(weights);
  pb.add_tensor_parallel_size(2);
  pb.add_random_weights(true);
  b.Finish(pb.Finish());
  writer.finish({b.GetBufferPointer(), b.GetSize()});
  PlanFile plan = PlanFile::open(path);

  std::vector<std::byte> scratch, again;
  auto values = [&](int index, int rank) {
    auto bytes = weightBytesOrRandom(plan, index, rank, scratch);
    return std::vector<std::byte>(bytes.begin(), bytes.end());
  };
  auto bf16s = [](const std::vector<std::byte> &bytes) {
    std::vector<float> out(bytes.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = bf16ToFloat(h);
    }
    return out;
  };
  const std::vector<std::byte> w = values(0, 0);
  ASSERT_EQ(w.size(), 16u * 64 * 2);
  EXPECT_EQ(w, values(0, 1));            // replicated: alike
  EXPECT_EQ(w, values(0, 0));            // seeded: the same every call
  EXPECT_NE(values(2, 0), values(2, 1)); // a split weight: per rank
  EXPECT_NE(w, values(2, 0));            // each weight its own values
  float low = 1, high = -1;
  for (float v : bf16s(w)) {
    EXPECT_LE(std::abs(v), 0.0201f);
    low = std::min(low, v), high = std::max(high, v);
  }
  EXPECT_LT(low, -0.015f); // spread over the range, not a constant
  EXPECT_GT(high, 0.015f);
  for (float v : bf16s(values(1, 0)))
    EXPECT_NEAR(v, 1.0f, 0.021f); // vectors (norms) around 1
  for (std::byte code : values(3, 0))
    EXPECT_NE(static_cast<unsigned>(code) & 0x7F, 0x7Fu); // no fp8 NaN
  const std::vector<std::byte> scales = values(4, 0);
  ASSERT_EQ(scales.size(), 64u * 4);
  for (size_t i = 0; i < 64; ++i) {
    float v;
    std::memcpy(&v, scales.data() + 4 * i, 4);
    EXPECT_GT(v, 0.0f);
    EXPECT_LT(v, 0.02f);
  }
  for (std::byte code : values(5, 0))
    EXPECT_NE(static_cast<int8_t>(code), -128);
  EXPECT_EQ(values(6, 0).size(), 16u * 64 / 2);
  for (std::byte zero : values(7, 0))
    EXPECT_EQ(zero, std::byte(8));
  EXPECT_EQ(weightStorageBytes(*plan.plan().weights()->Get(6)), 512u);
  std::filesystem::remove(path);
}

// A plan packed into another (solc --draft) opens from its section, shares
// the mapping and is validated like a file.
TEST(PlanFile, EmbeddedPlan) {
  auto innerPath = writeSamplePlan("inner");
  std::vector<char> inner = readAll(innerPath);
  auto outerPath = writeSamplePlan("outer", std::as_bytes(std::span(inner)));
  PlanFile outer = PlanFile::open(outerPath);
  ASSERT_NE(outer.plan().draft_plan(), nullptr);
  PlanFile draft =
      outer.embedded(*outer.plan().draft_plan(), "outer (its draft)", {});
  EXPECT_EQ(draft.path(), "outer (its draft)");
  EXPECT_EQ(draft.plan().model()->vocab_size(), 6);
  EXPECT_EQ(draft.weightBytes(1)[9], std::byte(191));

  // A corrupted packed plan: the outer file is intact, the draft is not.
  inner[inner.size() - 3] ^= 0x40;
  auto badPath = writeSamplePlan("outer-bad", std::as_bytes(std::span(inner)));
  PlanFile bad = PlanFile::open(badPath);
  try {
    bad.embedded(*bad.plan().draft_plan(), "bad (its draft)", {});
    ADD_FAILURE() << "a corrupted packed plan opened";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("bad (its draft): plan checksum "
                                         "mismatch"),
              std::string::npos)
        << e.what();
  }
  for (const auto &p : {innerPath, outerPath, badPath})
    std::filesystem::remove(p);
}

TEST(PlanFile, NotAPlan) {
  auto path = tempPath("notaplan");
  std::vector<char> junk(1000, 'x');
  writeAll(path, junk, junk.size());
  EXPECT_NE(openError(path).find("not a Sol plan (no SOLPLAN magic)"),
            std::string::npos);
  writeAll(path, junk, 0);
  EXPECT_NE(openError(path).find("not a Sol plan"), std::string::npos);
  std::filesystem::remove(path);
  EXPECT_NE(openError(path).find(path.string()), std::string::npos);
}

TEST(PlanFile, OtherVersion) {
  auto path = writeSamplePlan("version");
  auto bytes = readAll(path);
  uint32_t v = kPlanFormatVersion + 1;
  std::memcpy(bytes.data() + 8, &v, 4);
  writeAll(path, bytes, bytes.size());
  std::string err = openError(path);
  EXPECT_NE(err.find("plan format version " + std::to_string(v) +
                     " but this solrun reads version " +
                     std::to_string(kPlanFormatVersion)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("upgrade solrun"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(PlanFile, EveryTruncationIsAnError) {
  auto path = writeSamplePlan("truncate");
  auto bytes = readAll(path);
  auto cut = tempPath("truncated");
  for (size_t n = 0; n < bytes.size(); ++n) {
    writeAll(cut, bytes, n);
    std::string err = openError(cut);
    ASSERT_FALSE(err.empty()) << "truncation to " << n << " bytes was accepted";
    if (n >= sizeof(PlanHeader)) {
      EXPECT_NE(err.find("truncated plan"), std::string::npos) << err;
    }
  }
  std::filesystem::remove(cut);
  std::filesystem::remove(path);
}

TEST(PlanFile, EveryByteFlipIsDetected) {
  auto path = writeSamplePlan("flip");
  auto bytes = readAll(path);
  auto bad = tempPath("flipped");
  for (size_t i = 0; i < bytes.size(); ++i) {
    // Header bytes past the fields are reserved and not interpreted.
    if (i >= 64 && i < sizeof(PlanHeader))
      continue;
    auto copy = bytes;
    copy[i] ^= 0x5a;
    writeAll(bad, copy, copy.size());
    EXPECT_FALSE(openError(bad).empty()) << "flip of byte " << i << " accepted";
  }
  std::filesystem::remove(bad);
  std::filesystem::remove(path);
}

TEST(PlanFile, CorruptMetadataWithoutChecksumNeverCrashes) {
  // With the checksum off, the flatbuffer verifier and the section bounds
  // checks are what stand between a corrupted file and a crash.
  auto path = writeSamplePlan("nochecksum");
  auto bytes = readAll(path);
  PlanHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  auto bad = tempPath("nochecksum-bad");
  int rejected = 0;
  for (uint64_t i = h.metadataOffset; i < h.fileSize; ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      auto copy = bytes;
      copy[i] ^= static_cast<char>(mask);
      writeAll(bad, copy, copy.size());
      try {
        PlanFile plan = PlanFile::open(bad, {.verifyChecksum = false});
        // Accepted: then every section access must stay inside the file.
        if (plan.plan().weights())
          for (unsigned w = 0; w < plan.plan().weights()->size(); ++w)
            (void)plan.weightBytes(static_cast<int>(w));
      } catch (const Error &) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
  std::filesystem::remove(bad);
  std::filesystem::remove(path);
}

TEST(PlanFile, ChecksumMismatchMessage) {
  auto path = writeSamplePlan("checksum");
  auto bytes = readAll(path);
  bytes[sizeof(PlanHeader) + 3] ^= 1; // inside the first weight
  writeAll(path, bytes, bytes.size());
  EXPECT_NE(openError(path).find("checksum mismatch"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(PlanWriter, AbandonedWriteLeavesNoFile) {
  auto path = tempPath("abandoned");
  {
    PlanWriter writer(path);
    std::vector<std::byte> data(10);
    writer.addSection(data);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  auto partial = path;
  partial += ".partial";
  EXPECT_FALSE(std::filesystem::exists(partial));
}

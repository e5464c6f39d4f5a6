//===- CheckpointTest.cpp - Checkpoint directories, single and sharded ----===//

#include "frontend/hf/Safetensors.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/hf/SafetensorsWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sol::hf {
namespace {

using test::errorOf;
using test::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char *kIndex = "model.safetensors.index.json";
constexpr const char *kShard1 = "model-00001-of-00002.safetensors";
constexpr const char *kShard2 = "model-00002-of-00002.safetensors";

class CheckpointTest : public ::testing::Test {
protected:
  void writeShards() {
    test::writeFile(dir / kShard1, test::validSafetensors(
                                       {{"model.embed_tokens.weight",
                                         "BF16",
                                         {2, 2},
                                         test::bf16Sequence(4)},
                                        {"model.layers.0.mlp.up_proj.weight",
                                         "BF16",
                                         {2, 2},
                                         test::bf16Sequence(4)}}));
    test::writeFile(
        dir / kShard2,
        test::validSafetensors(
            {{"model.norm.weight", "F32", {2}, std::string(8, '\0')}}));
  }
  void writeIndex(std::string_view weightMap) {
    test::writeFile(dir / kIndex,
                    std::string("{\"metadata\":{\"total_size\":24},"
                                "\"weight_map\":") +
                        std::string(weightMap) + "}");
  }
  std::string openError() {
    return errorOf([&] { Checkpoint::open(dir.path()); });
  }
  static std::string standardMap() {
    return cat("{\"model.embed_tokens.weight\":\"", kShard1,
               "\",\"model.layers.0.mlp.up_proj.weight\":\"", kShard1,
               "\",\"model.norm.weight\":\"", kShard2, "\"}");
  }

  TempDir dir;
};

TEST_F(CheckpointTest, OpensSingleFile) {
  test::writeFile(
      dir / "model.safetensors",
      test::validSafetensors({{"b", "BF16", {3}, test::bf16Sequence(3)},
                              {"a", "F32", {1}, std::string(4, '\0')}}));
  Checkpoint checkpoint = Checkpoint::open(dir.path());
  EXPECT_THAT(checkpoint.tensorNames(), ElementsAre("a", "b"));
  ASSERT_EQ(checkpoint.files().size(), 1u);
  EXPECT_EQ(checkpoint.files()[0].path(), dir / "model.safetensors");
  ASSERT_NE(checkpoint.find("b"), nullptr);
  EXPECT_EQ(checkpoint.find("b")->dtype, DType::BF16);
  EXPECT_EQ(checkpoint.find("c"), nullptr);
  EXPECT_EQ(&checkpoint.get("a"), checkpoint.find("a"));
  EXPECT_THAT(errorOf([&] { checkpoint.get("lm_head.weight"); }),
              HasSubstr("tensor 'lm_head.weight' is not in the checkpoint"));
}

TEST_F(CheckpointTest, OpensShardedCheckpoint) {
  writeShards();
  writeIndex(standardMap());
  Checkpoint checkpoint = Checkpoint::open(dir.path());
  EXPECT_THAT(checkpoint.tensorNames(),
              ElementsAre("model.embed_tokens.weight",
                          "model.layers.0.mlp.up_proj.weight",
                          "model.norm.weight"));
  ASSERT_EQ(checkpoint.files().size(), 2u);
  EXPECT_EQ(checkpoint.files()[0].path().filename(), kShard1);
  EXPECT_EQ(checkpoint.files()[1].path().filename(), kShard2);
  const TensorView *norm = checkpoint.find("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->dtype, DType::F32);
  // The view points into the second shard's mapping.
  const TensorView *inShard = checkpoint.files()[1].find("model.norm.weight");
  EXPECT_EQ(norm, inShard);

  // Moving the checkpoint keeps every view valid.
  Checkpoint moved = std::move(checkpoint);
  EXPECT_EQ(moved.find("model.norm.weight"), inShard);
  EXPECT_EQ(moved.get("model.embed_tokens.weight").bytes.size(), 8u);
}

TEST_F(CheckpointTest, SingleFileWinsOverIndex) {
  test::writeFile(
      dir / "model.safetensors",
      test::validSafetensors({{"w", "BF16", {1}, std::string(2, '\0')}}));
  test::writeFile(dir / kIndex, "this index is never read");
  EXPECT_THAT(Checkpoint::open(dir.path()).tensorNames(), ElementsAre("w"));
}

TEST_F(CheckpointTest, ReportsNoWeightsWithFilesLookedFor) {
  EXPECT_THAT(openError(),
              AllOf(HasSubstr("no weights found in '" + dir.path().string()),
                    HasSubstr("looked for model.safetensors and "
                              "model.safetensors.index.json"),
                    Not(HasSubstr("PyTorch"))));
  test::writeFile(dir / "pytorch_model.bin", "pickle");
  test::writeFile(dir / kShard1, "x");
  EXPECT_THAT(openError(),
              AllOf(HasSubstr("found PyTorch .bin/.pt files"),
                    HasSubstr("safe_serialization=True"),
                    HasSubstr("found " + std::string(kShard1) +
                              " but no model.safetensors.index.json")));
}

TEST_F(CheckpointTest, ReportsMissingOrNonDirectory) {
  EXPECT_THAT(errorOf([&] { Checkpoint::open(dir / "nope"); }),
              HasSubstr("does not exist"));
  test::writeFile(dir / "file", "x");
  EXPECT_THAT(errorOf([&] { Checkpoint::open(dir / "file"); }),
              HasSubstr("is not a directory"));
}

TEST_F(CheckpointTest, ReportsMissingShardWithATensorMappedToIt) {
  writeShards();
  std::filesystem::remove(dir / kShard2);
  writeIndex(standardMap());
  EXPECT_THAT(openError(),
              AllOf(HasSubstr(kIndex),
                    HasSubstr(std::string("shard '") + kShard2 + "'"),
                    HasSubstr("holding tensor 'model.norm.weight'"),
                    HasSubstr("missing")));
}

TEST_F(CheckpointTest, ReportsTensorListedInIndexButAbsentFromShard) {
  writeShards();
  writeIndex(cat("{\"model.embed_tokens.weight\":\"", kShard1,
                 "\",\"model.layers.0.self_attn.q_proj.weight\":\"", kShard2,
                 "\",\"model.norm.weight\":\"", kShard2, "\"}"));
  EXPECT_THAT(openError(),
              AllOf(HasSubstr("tensor 'model.layers.0.self_attn.q_proj.weight' "
                              "is listed in shard '" +
                              std::string(kShard2) +
                              "' but that file does not contain it")));
}

TEST_F(CheckpointTest, ReportsDuplicateTensorAcrossShards) {
  writeShards();
  test::writeFile(dir / kShard2,
                  test::validSafetensors(
                      {{"model.norm.weight", "F32", {2}, std::string(8, '\0')},
                       {"model.embed_tokens.weight",
                        "BF16",
                        {2, 2},
                        test::bf16Sequence(4)}}));
  writeIndex(standardMap());
  EXPECT_THAT(openError(),
              AllOf(HasSubstr("tensor 'model.embed_tokens.weight' occurs in "
                              "two shards"),
                    HasSubstr(kShard1), HasSubstr(kShard2)));
}

TEST_F(CheckpointTest, ReportsBadIndex) {
  writeShards();
  test::writeFile(dir / kIndex, "{\"weight_map\": {");
  EXPECT_THAT(openError(),
              AllOf(HasSubstr(kIndex), HasSubstr("not valid JSON")));
  test::writeFile(dir / kIndex, "[]");
  EXPECT_THAT(openError(), HasSubstr("must be a JSON object"));
  test::writeFile(dir / kIndex, "{\"metadata\":{}}");
  EXPECT_THAT(openError(), HasSubstr("has no \"weight_map\" object"));
  writeIndex("{}");
  EXPECT_THAT(openError(), HasSubstr("\"weight_map\" is empty"));
  writeIndex("{\"model.norm.weight\": 2}");
  EXPECT_THAT(openError(),
              HasSubstr("weight_map entry for tensor 'model.norm.weight' must "
                        "be a file name string"));
  test::writeFile(dir / kIndex, "");
  EXPECT_THAT(openError(), HasSubstr("not valid JSON"));
}

TEST_F(CheckpointTest, RejectsShardOutsideModelDirectory) {
  writeShards();
  writeIndex("{\"model.norm.weight\":\"../model-00002-of-00002.safetensors\"}");
  EXPECT_THAT(openError(), HasSubstr("not a file name inside the model "
                                     "directory"));
  writeIndex("{\"model.norm.weight\":\"/etc/passwd\"}");
  EXPECT_THAT(openError(), HasSubstr("not a file name inside the model "
                                     "directory"));
}

TEST_F(CheckpointTest, ReportsCorruptShardByName) {
  writeShards();
  test::writeFile(dir / kShard2, "short");
  writeIndex(standardMap());
  EXPECT_THAT(openError(),
              AllOf(HasSubstr(kShard2), HasSubstr("file is 5 bytes")));
}

} // namespace
} // namespace sol::hf

//===- SafetensorsTest.cpp - SafetensorsFile on valid and broken files ----===//

#include "frontend/hf/Safetensors.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/hf/SafetensorsWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace sol::hf {
namespace {

using test::errorOf;
using test::HeaderEntry;
using test::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

class SafetensorsTest : public ::testing::Test {
protected:
  /// Writes `bytes` as model.safetensors and returns the error of opening it.
  std::string openError(std::string_view bytes) {
    test::writeFile(path(), bytes);
    return errorOf([&] { SafetensorsFile::open(path()); });
  }
  /// A file whose header is `entries` and whose data region is `dataSize`
  /// zero bytes.
  std::string openError(const std::vector<HeaderEntry> &entries,
                        size_t dataSize) {
    return openError(test::safetensorsBytes(test::headerJson(entries),
                                            std::string(dataSize, '\0')));
  }
  std::filesystem::path path() const { return dir / "model.safetensors"; }

  TempDir dir;
};

TEST_F(SafetensorsTest, ReadsTensorsMetadataAndBytes) {
  test::writeFile(
      path(), test::validSafetensors(
                  {{"model.norm.weight", "BF16", {4}, test::bf16Sequence(4)},
                   {"a.scalar", "F32", {}, std::string("\0\0\x80\x3f", 4)},
                   {"emb", "BF16", {2, 3}, test::bf16Sequence(6)}},
                  {{"format", "pt"}}));
  SafetensorsFile file = SafetensorsFile::open(path());

  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.tensors()[0].name, "a.scalar"); // sorted by name
  EXPECT_EQ(file.tensors()[1].name, "emb");
  EXPECT_EQ(file.tensors()[2].name, "model.norm.weight");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.dataOffset() % 8, 0u);

  const TensorView *norm = file.find("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->dtype, DType::BF16);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{4}));
  ASSERT_EQ(norm->bytes.size(), 8u);
  uint16_t third;
  std::memcpy(&third, norm->bytes.data() + 4, 2);
  EXPECT_EQ(bf16ToFloat(third), 2.0f);

  const TensorView *scalar = file.find("a.scalar");
  ASSERT_NE(scalar, nullptr);
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->numElements(), 1);
  float one;
  std::memcpy(&one, scalar->bytes.data(), 4);
  EXPECT_EQ(one, 1.0f);

  const TensorView *emb = file.find("emb");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->numElements(), 6);
  // The emb bytes come right after the norm and scalar bytes (12 bytes).
  EXPECT_EQ(emb->bytes.data(), norm->bytes.data() + 12);
  EXPECT_EQ(file.find("missing"), nullptr);
  EXPECT_EQ(file.find("emc"), nullptr);
}

TEST_F(SafetensorsTest, ViewsStayValidAfterMove) {
  test::writeFile(path(), test::validSafetensors(
                              {{"w", "BF16", {3}, test::bf16Sequence(3)}}));
  SafetensorsFile original = SafetensorsFile::open(path());
  const std::byte *bytes = original.find("w")->bytes.data();
  SafetensorsFile moved = std::move(original);
  ASSERT_NE(moved.find("w"), nullptr);
  EXPECT_EQ(moved.find("w")->bytes.data(), bytes);
  uint16_t last;
  std::memcpy(&last, bytes + 4, 2);
  EXPECT_EQ(bf16ToFloat(last), 2.0f);
}

TEST_F(SafetensorsTest, AcceptsZeroLengthTensorsAndEmptyHeader) {
  test::writeFile(
      path(), test::validSafetensors({{"empty", "F32", {0, 4}, ""},
                                      {"w", "BF16", {2}, test::bf16Sequence(2)},
                                      {"empty2", "I64", {3, 0}, ""}}));
  SafetensorsFile file = SafetensorsFile::open(path());
  ASSERT_NE(file.find("empty"), nullptr);
  EXPECT_EQ(file.find("empty")->numElements(), 0);
  EXPECT_TRUE(file.find("empty")->bytes.empty());
  EXPECT_EQ(file.find("empty2")->shape, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(file.find("w")->bytes.size(), 4u);

  test::writeFile(path(), test::safetensorsBytes("{}", ""));
  EXPECT_TRUE(SafetensorsFile::open(path()).tensors().empty());
}

TEST_F(SafetensorsTest, RejectsFileShorterThanLengthField) {
  EXPECT_THAT(openError("abcde"),
              AllOf(HasSubstr(path().string()), HasSubstr("file is 5 bytes"),
                    HasSubstr("too short")));
  EXPECT_THAT(openError(""), HasSubstr("file is 0 bytes"));
}

TEST_F(SafetensorsTest, RejectsHeaderLongerThanFile) {
  EXPECT_THAT(openError(test::safetensorsBytes("{}", "", 100)),
              AllOf(HasSubstr(path().string()),
                    HasSubstr("header length is 100 bytes but only 2 bytes"),
                    HasSubstr("truncated")));
  // A length field of all ones must not wrap around in the bounds check.
  EXPECT_THAT(openError(test::safetensorsBytes("{}", "", ~uint64_t{0})),
              HasSubstr("-byte limit"));
}

TEST_F(SafetensorsTest, RejectsHeaderOverSizeLimit) {
  EXPECT_THAT(openError(test::safetensorsBytes("{}", "", 100'000'001)),
              AllOf(HasSubstr("100000001 bytes"),
                    HasSubstr("more than the 100000000-byte limit")));
}

TEST_F(SafetensorsTest, RejectsBadJson) {
  EXPECT_THAT(openError(test::safetensorsBytes("{\"a\": [1, 2", "")),
              AllOf(HasSubstr(path().string()), HasSubstr("not valid JSON")));
  EXPECT_THAT(openError(test::safetensorsBytes("{\"a\":\"\xff\"}", "")),
              HasSubstr("not valid JSON"));
}

TEST_F(SafetensorsTest, RejectsHeaderThatIsNotAnObject) {
  EXPECT_THAT(openError(test::safetensorsBytes("[1, 2]", "")),
              HasSubstr("header must be a JSON object, found array"));
  EXPECT_THAT(openError(test::safetensorsBytes("\"text\"", "")),
              HasSubstr("found string"));
}

TEST_F(SafetensorsTest, RejectsDeeplyNestedHeader) {
  std::string deep(10'000, '[');
  EXPECT_THAT(openError(test::safetensorsBytes(deep, "")),
              HasSubstr("nests JSON deeper than"));
}

TEST_F(SafetensorsTest, RejectsUnknownDtype) {
  EXPECT_THAT(openError({{"w", "F128", {2}, 0, 32}}, 32),
              AllOf(HasSubstr("tensor 'w' has unknown dtype 'F128'"),
                    HasSubstr("supported: BF16, F16, F32"),
                    HasSubstr("F8_E4M3")));
  // I4 is in Sol's table but is not a safetensors dtype.
  EXPECT_THAT(openError({{"w", "I4", {2}, 0, 1}}, 1),
              HasSubstr("unknown dtype 'I4'"));
}

TEST_F(SafetensorsTest, RejectsSizeThatDoesNotMatchShape) {
  EXPECT_THAT(openError({{"model.norm.weight", "BF16", {8}, 0, 10}}, 16),
              HasSubstr("model.safetensors: tensor 'model.norm.weight' has "
                        "data_offsets [0, 10] but shape [8] x BF16 needs 16 "
                        "bytes"));
  EXPECT_THAT(openError({{"w", "F32", {2, 3}, 0, 25}}, 32),
              HasSubstr("shape [2, 3] x F32 needs 24 bytes"));
}

TEST_F(SafetensorsTest, RejectsRangeOutsideData) {
  EXPECT_THAT(openError({{"w", "F32", {4}, 8, 24}}, 20),
              AllOf(HasSubstr("tensor 'w' has data_offsets [8, 24]"),
                    HasSubstr("data region is only 20 bytes")));
}

TEST_F(SafetensorsTest, RejectsDataShorterThanOffsets) {
  // A valid file cut short inside its data region.
  std::string bytes =
      test::validSafetensors({{"a", "BF16", {4}, test::bf16Sequence(4)},
                              {"b", "BF16", {4}, test::bf16Sequence(4)}});
  bytes.resize(bytes.size() - 3);
  EXPECT_THAT(openError(bytes),
              AllOf(HasSubstr("tensor 'b' has data_offsets [8, 16]"),
                    HasSubstr("data region is only 13 bytes"),
                    HasSubstr("truncated")));
}

TEST_F(SafetensorsTest, RejectsBeginAfterEnd) {
  EXPECT_THAT(openError({{"w", "F32", {0}, 8, 4}}, 16),
              HasSubstr("tensor 'w' has data_offsets [8, 4]: begin is after "
                        "end"));
}

TEST_F(SafetensorsTest, RejectsOverlappingRanges) {
  EXPECT_THAT(openError({{"first", "F32", {4}, 0, 16},
                         {"second", "F32", {2}, 8, 16},
                         {"third", "F32", {1}, 16, 20}},
                        20),
              AllOf(HasSubstr("'first' [0, 16)"), HasSubstr("'second' [8, 16)"),
                    HasSubstr("overlap")));
  // A tensor inside a larger one that does not start first.
  EXPECT_THAT(
      openError({{"outer", "F32", {8}, 0, 32},
                 {"late", "F32", {1}, 28, 32},
                 {"inner", "F32", {1}, 4, 8}},
                32),
      AllOf(HasSubstr("'outer'"), HasSubstr("'inner'"), HasSubstr("overlap")));
  // Two tensors at the same offsets.
  EXPECT_THAT(
      openError({{"x", "BF16", {2}, 0, 4}, {"y", "BF16", {2}, 0, 4}}, 4),
      HasSubstr("overlap"));
}

TEST_F(SafetensorsTest, RejectsNegativeOrNonIntegerShape) {
  EXPECT_THAT(openError({{"w", "F32", {-2}, 0, 0}}, 8),
              AllOf(HasSubstr("tensor 'w' has shape [-2]"),
                    HasSubstr("non-negative integers")));
  std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2.5],"
                       "\"data_offsets\":[0,8]}}";
  EXPECT_THAT(openError(test::safetensorsBytes(header, std::string(8, '\0'))),
              HasSubstr("non-negative integers"));
  header = "{\"w\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}";
  EXPECT_THAT(openError(test::safetensorsBytes(header, std::string(8, '\0'))),
              HasSubstr("tensor 'w' has no \"shape\" array"));
}

TEST_F(SafetensorsTest, RejectsShapeWhoseSizeOverflows) {
  EXPECT_THAT(
      openError({{"w", "F32", {int64_t{1} << 40, int64_t{1} << 40}, 0, 0}}, 0),
      HasSubstr("too many bytes to address"));
  EXPECT_THAT(openError({{"w", "F64", {int64_t{1} << 61}, 0, 0}}, 0),
              HasSubstr("too many bytes to address"));
}

TEST_F(SafetensorsTest, RejectsMalformedEntries) {
  auto headerError = [&](std::string header) {
    return openError(test::safetensorsBytes(header, std::string(8, '\0')));
  };
  EXPECT_THAT(headerError("{\"w\": 3}"),
              HasSubstr("tensor 'w' must be an object"));
  EXPECT_THAT(headerError("{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}"),
              HasSubstr("tensor 'w' has no \"dtype\" string"));
  EXPECT_THAT(headerError("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}"),
              HasSubstr("has no \"data_offsets\""));
  EXPECT_THAT(headerError("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,8,9]}}"),
              HasSubstr("has no \"data_offsets\" [begin, end] pair"));
  EXPECT_THAT(headerError("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[-8,0]}}"),
              HasSubstr("offsets must be non-negative integers"));
  EXPECT_THAT(headerError("{\"__metadata__\":{\"k\":1}}"),
              HasSubstr("'__metadata__' entry 'k' must be a string"));
  EXPECT_THAT(headerError("{\"__metadata__\":[]}"),
              HasSubstr("'__metadata__' must be an object"));
  EXPECT_THAT(headerError("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,8]},"
                          "\"w\":{\"dtype\":\"F32\",\"shape\":[0],"
                          "\"data_offsets\":[8,8]}}"),
              HasSubstr("lists 'w' twice"));
}

TEST_F(SafetensorsTest, ReportsMissingFileAndDirectory) {
  std::filesystem::path missing = dir / "absent.safetensors";
  EXPECT_THAT(errorOf([&] { SafetensorsFile::open(missing); }),
              AllOf(HasSubstr("cannot open '" + missing.string() + "'"),
                    HasSubstr("No such file or directory")));
  EXPECT_THAT(errorOf([&] { SafetensorsFile::open(dir.path()); }),
              HasSubstr("not a regular file"));
}

// Every prefix of a valid file, and every header byte replaced by a few
// interesting values, must either open or throw sol::Error; never crash (the
// ASan build of this test checks for out-of-bounds reads too).
TEST_F(SafetensorsTest, TruncatedAndCorruptedFilesOnlyThrowSolError) {
  const std::string valid = test::validSafetensors(
      {{"model.embed_tokens.weight", "BF16", {2, 3}, test::bf16Sequence(6)},
       {"empty", "F32", {0}, ""},
       {"s", "I32", {}, std::string(4, '\x7f')}},
      {{"format", "pt"}});
  const uint64_t headerEnd = 8 + (static_cast<uint8_t>(valid[0]) |
                                  static_cast<uint8_t>(valid[1]) << 8);

  size_t opened = 0, rejected = 0;
  auto attempt = [&](std::string_view bytes) {
    test::writeFile(path(), bytes);
    try {
      SafetensorsFile file = SafetensorsFile::open(path());
      // Touch every byte the reader hands out.
      unsigned sum = 0;
      for (const TensorView &tensor : file.tensors())
        for (std::byte b : tensor.bytes)
          sum += std::to_integer<unsigned>(b);
      (void)sum;
      ++opened;
    } catch (const sol::Error &) {
      ++rejected;
    }
  };
  for (size_t length = 0; length <= valid.size(); ++length)
    attempt(std::string_view(valid).substr(0, length));
  EXPECT_EQ(opened, 1u); // only the complete file is valid
  EXPECT_EQ(rejected, valid.size());

  const char replacements[] = {'\0', '"', '}', '9', '-', '\xff', '['};
  for (size_t at = 0; at < headerEnd; ++at)
    for (char replacement : replacements) {
      std::string corrupted = valid;
      if (corrupted[at] == replacement)
        continue;
      corrupted[at] = replacement;
      attempt(corrupted);
    }
  EXPECT_GT(rejected, valid.size()); // corruption was mostly caught
}

} // namespace
} // namespace sol::hf

//===- ProtoReaderTest.cpp - The wire-format reader on valid and broken input
//=//

#include "frontend/onnx/ProtoReader.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/onnx/ProtoWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>

namespace sol::onnx {
namespace {

using hf::test::errorOf;
using test::ProtoWriter;
using test::varintBytes;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::span<const std::byte> spanOf(const std::string &bytes) {
  return {reinterpret_cast<const std::byte *>(bytes.data()), bytes.size()};
}

const std::string kFile = "test.onnx";

/// Reads every field of `bytes` as a top-level message.
std::vector<ProtoField> readAll(const std::string &bytes) {
  ProtoReader reader(kFile, spanOf(bytes));
  std::vector<ProtoField> fields;
  ProtoField field;
  while (reader.next(field))
    fields.push_back(field);
  return fields;
}

TEST(ProtoReaderTest, ReadsEveryWireType) {
  ProtoWriter writer;
  writer.varint(1, 300)
      .fixed64(2, 0x0102030405060708)
      .bytes(3, "abc")
      .fixed32(4, 0xDEADBEEF)
      .varint(536870911, 1); // the largest field number
  std::string bytes = writer.str();
  ProtoReader reader(kFile, spanOf(bytes));
  ProtoField field;

  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(field.number, 1u);
  EXPECT_EQ(field.wireType, WireType::Varint);
  EXPECT_EQ(reader.uint64(field), 300u);
  EXPECT_EQ(field.offset, 0u);

  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(field.wireType, WireType::Fixed64);
  EXPECT_EQ(field.scalar, 0x0102030405060708u);

  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(field.wireType, WireType::Len);
  EXPECT_EQ(reader.string(field), "abc");
  EXPECT_EQ(field.end - field.begin, 3u);

  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(field.wireType, WireType::Fixed32);
  EXPECT_EQ(field.scalar, 0xDEADBEEFu);

  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(field.number, 536870911u);
  EXPECT_FALSE(reader.next(field));
}

TEST(ProtoReaderTest, ConvertsScalarsAsProtobufDoes) {
  std::string bytes = ProtoWriter()
                          .int64(1, -5) // ten bytes on the wire
                          .int64(2, -7)
                          .float32(3, 1.5f)
                          .str();
  ProtoReader reader(kFile, spanOf(bytes));
  ProtoField field;
  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(reader.int64(field), -5);
  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(reader.int32(field), -7);
  ASSERT_TRUE(reader.next(field));
  EXPECT_EQ(reader.float32(field), 1.5f);
}

TEST(ProtoReaderTest, NestedMessagesKnowTheirPath) {
  ProtoWriter inner;
  inner.varint(1, 7).bytes(2, "x");
  std::string bytes = ProtoWriter().message(5, inner).str();
  ProtoReader reader(kFile, spanOf(bytes));
  ProtoField field;
  ASSERT_TRUE(reader.next(field));
  ProtoReader sub = reader.message(field, "graph.node[3]");
  EXPECT_EQ(sub.path(), "graph.node[3]");
  ASSERT_TRUE(sub.next(field));
  EXPECT_EQ(sub.int64(field), 7);
  ASSERT_TRUE(sub.next(field));
  EXPECT_EQ(sub.string(field), "x");
  EXPECT_FALSE(sub.next(field));
  EXPECT_THAT(errorOf([&] { sub.malformed(9, "a test problem"); }),
              "test.onnx: malformed ONNX protobuf at byte 9 (graph.node[3]): "
              "a test problem; the file is truncated or not an ONNX model");
}

TEST(ProtoReaderTest, RepeatedNumbersArePackedOrNot) {
  std::string bytes = ProtoWriter()
                          .packedVarints(1, {1, -2, 300})
                          .int64(1, 4)
                          .packedFloats(2, {1.0f, 2.0f})
                          .float32(2, 3.0f)
                          .packedDoubles(3, {0.5})
                          .fixed64(3, 0x4000000000000000) // 2.0
                          .packedVarints(1, {})
                          .str();
  ProtoReader reader(kFile, spanOf(bytes));
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<uint64_t> counts;
  ProtoField field;
  while (reader.next(field)) {
    counts.push_back(reader.count(field, field.number == 1 ? ScalarKind::Varint
                                         : field.number == 2
                                             ? ScalarKind::Fixed32
                                             : ScalarKind::Fixed64));
    if (field.number == 1)
      reader.forEach(field, ScalarKind::Varint, [&](uint64_t bits) {
        ints.push_back(static_cast<int64_t>(bits));
      });
    if (field.number == 2)
      reader.forEach(field, ScalarKind::Fixed32, [&](uint64_t bits) {
        floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
      });
    if (field.number == 3)
      reader.forEach(field, ScalarKind::Fixed64, [&](uint64_t bits) {
        doubles.push_back(std::bit_cast<double>(bits));
      });
  }
  EXPECT_THAT(ints, ElementsAre(1, -2, 300, 4));
  EXPECT_THAT(floats, ElementsAre(1.0f, 2.0f, 3.0f));
  EXPECT_THAT(doubles, ElementsAre(0.5, 2.0));
  EXPECT_THAT(counts, ElementsAre(3u, 1u, 2u, 1u, 1u, 1u, 0u));
}

TEST(ProtoReaderTest, RejectsVarintsThatDoNotFit64Bits) {
  // Ten bytes whose last holds more than bit 63.
  std::string overflow = varintBytes(8) + std::string(9, '\xFF') + "\x02";
  EXPECT_THAT(
      errorOf([&] { readAll(overflow); }),
      AllOf(HasSubstr("at byte 0"), HasSubstr("field 1 overflows 64 bits")));
  std::string tooLong = varintBytes(8) + std::string(10, '\x80') + "\x01";
  EXPECT_THAT(errorOf([&] { readAll(tooLong); }),
              HasSubstr("field 1 is longer than 10 bytes"));
  // The largest value, ten bytes, is fine.
  std::string largest = varintBytes(8) + varintBytes(~uint64_t{0});
  EXPECT_EQ(readAll(largest).at(0).scalar, ~uint64_t{0});
}

TEST(ProtoReaderTest, RejectsFieldsThatRunPastTheirMessage) {
  EXPECT_THAT(errorOf([&] { readAll(varintBytes(8) + "\x80"); }),
              "test.onnx: malformed ONNX protobuf at byte 0 (ModelProto): "
              "field 1 runs past the end of the file (2 bytes); the file is "
              "truncated or not an ONNX model");
  EXPECT_THAT(errorOf([&] { readAll(std::string("\x80", 1)); }),
              HasSubstr("a field tag runs past the end of the file (1 bytes)"));
  EXPECT_THAT(
      errorOf([&] { readAll(ProtoWriter().tag(2, 1).raw("1234").str()); }),
      HasSubstr("field 2 (8-byte fixed) runs past the end of the file"));
  EXPECT_THAT(
      errorOf([&] { readAll(ProtoWriter().tag(2, 5).raw("12").str()); }),
      HasSubstr("field 2 (4-byte fixed) runs past the end"));
  EXPECT_THAT(
      errorOf([&] {
        readAll(ProtoWriter()
                    .tag(3, 2)
                    .raw("\x05"
                         "ab")
                    .str());
      }),
      HasSubstr("field 3 (length 5) runs past the end of the file (4 bytes)"));

  // Inside a sub-message the limit is the sub-message's end, not the file's.
  std::string bytes = ProtoWriter()
                          .bytes(7, ProtoWriter().tag(1, 2).raw("\x09").str())
                          .bytes(8, "padding that the inner field must not use")
                          .str();
  ProtoReader reader(kFile, spanOf(bytes));
  ProtoField field;
  ASSERT_TRUE(reader.next(field));
  ProtoReader graph = reader.message(field, "graph");
  EXPECT_THAT(errorOf([&] { graph.next(field); }),
              "test.onnx: malformed ONNX protobuf at byte 2 (graph): field 1 "
              "(length 9) runs past the end of its message (ends at byte 4); "
              "the file is truncated or not an ONNX model");
}

TEST(ProtoReaderTest, RejectsGroupsAndUndefinedWireTypes) {
  EXPECT_THAT(errorOf([&] { readAll(ProtoWriter().tag(4, 3).str()); }),
              HasSubstr("field 4 uses wire type 3 (group), which ONNX never "
                        "writes"));
  EXPECT_THAT(errorOf([&] { readAll(ProtoWriter().tag(4, 4).str()); }),
              HasSubstr("field 4 uses wire type 4 (group)"));
  EXPECT_THAT(errorOf([&] { readAll(ProtoWriter().tag(4, 6).str()); }),
              HasSubstr("field 4 has wire type 6, which protobuf does not "
                        "define"));
  EXPECT_THAT(errorOf([&] { readAll(ProtoWriter().tag(4, 7).str()); }),
              HasSubstr("wire type 7"));
}

TEST(ProtoReaderTest, RejectsBadTags) {
  EXPECT_THAT(errorOf([&] { readAll(std::string("\x00\x00", 2)); }),
              HasSubstr("field number 0 is not valid"));
  EXPECT_THAT(errorOf([&] { readAll(varintBytes(uint64_t{1} << 32)); }),
              HasSubstr("does not fit 32 bits"));
}

TEST(ProtoReaderTest, RejectsAWireTypeTheSchemaDoesNotGive) {
  std::string bytes = ProtoWriter().varint(8, 1).bytes(9, "ab").str();
  ProtoReader reader(kFile, spanOf(bytes));
  ProtoField varint, len;
  ASSERT_TRUE(reader.next(varint));
  ASSERT_TRUE(reader.next(len));
  EXPECT_THAT(errorOf([&] { reader.string(varint); }),
              HasSubstr("field 8 has wire type 0 (varint) where onnx.proto "
                        "declares 2 (length-delimited)"));
  EXPECT_THAT(errorOf([&] { reader.message(varint, "x"); }),
              HasSubstr("field 8 has wire type 0"));
  EXPECT_THAT(errorOf([&] { reader.int64(len); }),
              HasSubstr("field 9 has wire type 2 (length-delimited) where "
                        "onnx.proto declares 0 (varint)"));
  EXPECT_THAT(errorOf([&] { reader.float32(varint); }),
              HasSubstr("declares 5 (fixed32)"));
  EXPECT_THAT(errorOf([&] {
                reader.forEach(varint, ScalarKind::Fixed64, [](uint64_t) {});
              }),
              HasSubstr("declares 1 (fixed64)"));
}

TEST(ProtoReaderTest, RejectsBrokenPackedFields) {
  std::string bytes =
      ProtoWriter().bytes(4, "12345").bytes(5, "\x01\x80").str();
  ProtoReader reader(kFile, spanOf(bytes));
  ProtoField fixed, varints;
  ASSERT_TRUE(reader.next(fixed));
  ASSERT_TRUE(reader.next(varints));
  EXPECT_THAT(errorOf([&] {
                reader.forEach(fixed, ScalarKind::Fixed32, [](uint64_t) {});
              }),
              HasSubstr("packed field 4 holds 5 bytes, which is not a whole "
                        "number of 4-byte values"));
  std::vector<uint64_t> seen;
  EXPECT_THAT(errorOf([&] {
                reader.forEach(varints, ScalarKind::Varint,
                               [&](uint64_t bits) { seen.push_back(bits); });
              }),
              AllOf(HasSubstr("a value of packed field 5 runs past the end"),
                    HasSubstr("at byte 10")));
  EXPECT_THAT(seen, ElementsAre(1u));
  // count() does not read values: the truncated one is simply not counted.
  EXPECT_EQ(reader.count(varints, ScalarKind::Varint), 1u);
  EXPECT_THAT(errorOf([&] { reader.count(fixed, ScalarKind::Fixed32); }),
              HasSubstr("packed field 4 holds 5 bytes"));
}

} // namespace
} // namespace sol::onnx

//===- ProtoReader.cpp - Bounded protobuf wire-format reader --------------===//

#include "frontend/onnx/ProtoReader.h"

#include "runtime/support/Error.h"

#include <bit>

namespace sol::onnx {
namespace {

std::string_view wireTypeName(WireType type) {
  switch (type) {
  case WireType::Varint:
    return "varint";
  case WireType::Fixed64:
    return "fixed64";
  case WireType::Len:
    return "length-delimited";
  case WireType::StartGroup:
  case WireType::EndGroup:
    return "group";
  case WireType::Fixed32:
    return "fixed32";
  }
  return "unknown";
}

WireType wireTypeOf(ScalarKind kind) {
  switch (kind) {
  case ScalarKind::Varint:
    return WireType::Varint;
  case ScalarKind::Fixed32:
    return WireType::Fixed32;
  case ScalarKind::Fixed64:
    return WireType::Fixed64;
  }
  return WireType::Varint;
}

} // namespace

ProtoReader::ProtoReader(const std::string &fileName,
                         std::span<const std::byte> file)
    : ProtoReader(&fileName, file, 0, file.size(), "") {}

ProtoReader::ProtoReader(const std::string *fileName,
                         std::span<const std::byte> file, uint64_t begin,
                         uint64_t end, std::string path)
    : fileName_(fileName), file_(file), pos_(begin), end_(end),
      path_(std::move(path)) {}

void ProtoReader::malformed(uint64_t at, const std::string &problem) const {
  fail(*fileName_, ": malformed ONNX protobuf at byte ", at, " (",
       path_.empty() ? std::string("ModelProto") : path_, "): ", problem,
       "; the file is truncated or not an ONNX model");
}

std::string ProtoReader::endDescription(uint64_t end) const {
  if (end == file_.size())
    return cat("the file (", file_.size(), " bytes)");
  return cat("its message (ends at byte ", end, ")");
}

uint64_t ProtoReader::readVarint(uint64_t &pos, uint64_t end, uint64_t start,
                                 std::string_view what) const {
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos >= end)
      malformed(start,
                cat(what, " runs past the end of ", endDescription(end)));
    auto byte = static_cast<uint8_t>(file_[pos++]);
    // The tenth byte holds only bit 63; anything more cannot be a uint64.
    if (i == 9 && byte > 1)
      malformed(start, cat(what, (byte & 0x80) ? " is longer than 10 bytes"
                                               : " overflows 64 bits"));
    value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if (!(byte & 0x80))
      return value;
  }
  return value; // unreachable: the tenth byte either ends it or fails
}

uint64_t ProtoReader::readFixed(uint64_t pos, int width) const {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(file_[pos + i]))
             << (8 * i);
  return value;
}

bool ProtoReader::next(ProtoField &field) {
  if (pos_ >= end_)
    return false;
  field = {};
  field.offset = pos_;
  uint64_t tag = readVarint(pos_, end_, field.offset, "a field tag");
  if (tag >> 32)
    malformed(field.offset, cat("field tag ", tag,
                                " does not fit 32 bits (field numbers "
                                "stop at 536870911)"));
  field.number = static_cast<uint32_t>(tag >> 3);
  if (field.number == 0)
    malformed(field.offset, "field number 0 is not valid");
  auto wire = static_cast<unsigned>(tag & 7);
  field.wireType = static_cast<WireType>(wire);
  switch (wire) {
  case 0:
    field.scalar =
        readVarint(pos_, end_, field.offset, cat("field ", field.number));
    break;
  case 1:
  case 5: {
    int width = wire == 1 ? 8 : 4;
    if (end_ - pos_ < static_cast<uint64_t>(width))
      malformed(field.offset, cat("field ", field.number, " (", width,
                                  "-byte fixed) runs past the end of ",
                                  endDescription(end_)));
    field.scalar = readFixed(pos_, width);
    pos_ += width;
    break;
  }
  case 2: {
    uint64_t length = readVarint(pos_, end_, field.offset,
                                 cat("the length of field ", field.number));
    if (length > end_ - pos_)
      malformed(field.offset,
                cat("field ", field.number, " (length ", length,
                    ") runs past the end of ", endDescription(end_)));
    field.begin = pos_;
    field.end = pos_ + length;
    pos_ = field.end;
    break;
  }
  case 3:
  case 4:
    malformed(field.offset, cat("field ", field.number, " uses wire type ",
                                wire, " (group), which ONNX never writes"));
  default:
    malformed(field.offset, cat("field ", field.number, " has wire type ", wire,
                                ", which protobuf does not define"));
  }
  return true;
}

ProtoReader ProtoReader::message(const ProtoField &field,
                                 std::string path) const {
  expectWireType(field, WireType::Len);
  return ProtoReader(fileName_, file_, field.begin, field.end, std::move(path));
}

void ProtoReader::expectWireType(const ProtoField &field,
                                 WireType expected) const {
  if (field.wireType != expected)
    malformed(field.offset,
              cat("field ", field.number, " has wire type ",
                  static_cast<int>(field.wireType), " (",
                  wireTypeName(field.wireType), ") where onnx.proto declares ",
                  static_cast<int>(expected), " (", wireTypeName(expected),
                  ")"));
}

uint64_t ProtoReader::uint64(const ProtoField &field) const {
  expectWireType(field, WireType::Varint);
  return field.scalar;
}

int64_t ProtoReader::int64(const ProtoField &field) const {
  return static_cast<int64_t>(uint64(field));
}

int32_t ProtoReader::int32(const ProtoField &field) const {
  return static_cast<int32_t>(static_cast<uint32_t>(uint64(field)));
}

float ProtoReader::float32(const ProtoField &field) const {
  expectWireType(field, WireType::Fixed32);
  return std::bit_cast<float>(static_cast<uint32_t>(field.scalar));
}

std::span<const std::byte> ProtoReader::bytes(const ProtoField &field) const {
  expectWireType(field, WireType::Len);
  return file_.subspan(field.begin, field.end - field.begin);
}

std::string ProtoReader::string(const ProtoField &field) const {
  std::span<const std::byte> data = bytes(field);
  return std::string(reinterpret_cast<const char *>(data.data()), data.size());
}

uint64_t ProtoReader::scalar(const ProtoField &field, ScalarKind kind) const {
  expectWireType(field, wireTypeOf(kind));
  return field.scalar;
}

void ProtoReader::checkPackedLength(const ProtoField &field,
                                    ScalarKind kind) const {
  uint64_t length = field.end - field.begin;
  int width = kind == ScalarKind::Fixed32 ? 4 : 8;
  if (kind != ScalarKind::Varint && length % width != 0)
    malformed(field.offset,
              cat("packed field ", field.number, " holds ", length,
                  " bytes, which is not a whole number of ", width,
                  "-byte values"));
}

uint64_t ProtoReader::count(const ProtoField &field, ScalarKind kind) const {
  if (field.wireType != WireType::Len) {
    scalar(field, kind);
    return 1;
  }
  checkPackedLength(field, kind);
  uint64_t length = field.end - field.begin;
  if (kind != ScalarKind::Varint)
    return length / (kind == ScalarKind::Fixed32 ? 4 : 8);
  // A truncated last varint is not counted; forEach reports it.
  uint64_t values = 0;
  for (uint64_t pos = field.begin; pos < field.end; ++pos)
    values += (static_cast<uint8_t>(file_[pos]) & 0x80) == 0;
  return values;
}

uint64_t ProtoReader::packedValue(const ProtoField &field, ScalarKind kind,
                                  uint64_t &pos) const {
  if (kind == ScalarKind::Varint)
    return readVarint(pos, field.end, pos,
                      cat("a value of packed field ", field.number));
  int width = kind == ScalarKind::Fixed32 ? 4 : 8;
  uint64_t value = readFixed(pos, width); // checkPackedLength bounds it
  pos += width;
  return value;
}

} // namespace sol::onnx

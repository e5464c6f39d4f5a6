//===- ProtoReader.h - Bounded protobuf wire-format reader ------*- C++ -*-===//
//
// Reads one protobuf message out of a mapped file, field by field and without
// a schema: the caller (OnnxModel.cpp) says what each field number means.
// Every read is checked against the end of the enclosing message, so a
// truncated or hostile file ends in a sol::Error naming the file, the byte
// and the field path ("graph.node[3].attribute[0]"), never in a read past
// the mapping. Offsets are uint64_t: files over 4 GB read the same way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sol::onnx {

/// The wire types of protobuf's encoding. Groups (3, 4) are deprecated and
/// never written by ONNX; the reader rejects them.
enum class WireType : uint8_t {
  Varint = 0,
  Fixed64 = 1,
  Len = 2,
  StartGroup = 3,
  EndGroup = 4,
  Fixed32 = 5,
};

/// How the values of a repeated numeric field are encoded, one by one or
/// packed into one length-delimited field.
enum class ScalarKind { Varint, Fixed32, Fixed64 };

/// One field as it was read: its number, wire type and where it lies.
struct ProtoField {
  uint32_t number = 0;
  WireType wireType = WireType::Varint;
  /// Byte offset of the field's tag in the file, for messages.
  uint64_t offset = 0;
  /// The value of a Varint, Fixed32 or Fixed64 field.
  uint64_t scalar = 0;
  /// The payload of a Len field: [begin, end) in the file.
  uint64_t begin = 0;
  uint64_t end = 0;
};

class ProtoReader {
public:
  /// A reader over the whole of `file` as one top-level message. `fileName`
  /// is what errors call the file; it must outlive this reader and every
  /// reader made from it.
  ProtoReader(const std::string &fileName, std::span<const std::byte> file);

  /// The field path of this message ("" at the top level).
  const std::string &path() const { return path_; }
  const std::string &fileName() const { return *fileName_; }

  /// Reads the next field into `field`; false at the end of the message.
  bool next(ProtoField &field);

  /// The sub-message a Len field holds, called `path` in errors.
  ProtoReader message(const ProtoField &field, std::string path) const;

  /// The value of a field, after checking that its wire type is the one
  /// the schema gives it.
  uint64_t uint64(const ProtoField &field) const;
  int64_t int64(const ProtoField &field) const;
  /// As protobuf does, an int32 varint keeps its low 32 bits.
  int32_t int32(const ProtoField &field) const;
  float float32(const ProtoField &field) const;
  std::string string(const ProtoField &field) const;
  std::span<const std::byte> bytes(const ProtoField &field) const;

  /// Calls `each(uint64_t bits)` for every value of one occurrence of a
  /// repeated numeric field, packed (a Len field of values) or not (one
  /// value). proto2 writers choose per field, so both are accepted.
  template <typename Each>
  void forEach(const ProtoField &field, ScalarKind kind, Each &&each) const {
    if (field.wireType != WireType::Len) {
      each(scalar(field, kind));
      return;
    }
    checkPackedLength(field, kind);
    for (uint64_t pos = field.begin; pos < field.end;)
      each(packedValue(field, kind, pos));
  }

  /// The number of values forEach would visit, without decoding them (a
  /// packed varint field counts the bytes that end a varint), so that a
  /// caller can check the count before it allocates.
  uint64_t count(const ProtoField &field, ScalarKind kind) const;

  /// Throws "<file>: malformed ONNX protobuf at byte <at> (<path>):
  /// <problem>; the file is truncated or not an ONNX model".
  [[noreturn]] void malformed(uint64_t at, const std::string &problem) const;

private:
  ProtoReader(const std::string *fileName, std::span<const std::byte> file,
              uint64_t begin, uint64_t end, std::string path);

  /// Reads a varint at `pos` (advanced past it) that must end before `end`;
  /// `start` and `what` are for the error.
  uint64_t readVarint(uint64_t &pos, uint64_t end, uint64_t start,
                      std::string_view what) const;
  uint64_t readFixed(uint64_t pos, int width) const;
  uint64_t scalar(const ProtoField &field, ScalarKind kind) const;
  void checkPackedLength(const ProtoField &field, ScalarKind kind) const;
  uint64_t packedValue(const ProtoField &field, ScalarKind kind,
                       uint64_t &pos) const;
  void expectWireType(const ProtoField &field, WireType expected) const;
  /// "its message (ends at byte N)", or "the file (N bytes)" at the top.
  std::string endDescription(uint64_t end) const;

  const std::string *fileName_;
  std::span<const std::byte> file_;
  uint64_t pos_;
  uint64_t end_;
  std::string path_;
};

} // namespace sol::onnx

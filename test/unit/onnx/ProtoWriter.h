//===- ProtoWriter.h - Builds protobuf messages for tests -------*- C++ -*-===//
//
// Tests build their ONNX models, valid and deliberately broken, field by
// field, so each case shows the bytes the reader sees. Field numbers are
// onnx.proto's; the builders below make the messages most tests share.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/OnnxModel.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sol::onnx::test {

/// The varint encoding of `value`.
std::string varintBytes(uint64_t value);

/// One message, written in the order the calls are made (no validation).
class ProtoWriter {
public:
  ProtoWriter &varint(uint32_t field, uint64_t value);
  ProtoWriter &int64(uint32_t field, int64_t value) {
    return varint(field, static_cast<uint64_t>(value));
  }
  ProtoWriter &fixed32(uint32_t field, uint32_t bits);
  ProtoWriter &float32(uint32_t field, float value);
  ProtoWriter &fixed64(uint32_t field, uint64_t bits);
  ProtoWriter &bytes(uint32_t field, std::string_view data);
  ProtoWriter &message(uint32_t field, const ProtoWriter &inner) {
    return bytes(field, inner.str());
  }
  /// A repeated field as one packed (length-delimited) field.
  ProtoWriter &packedVarints(uint32_t field,
                             const std::vector<int64_t> &values);
  ProtoWriter &packedFloats(uint32_t field, const std::vector<float> &values);
  ProtoWriter &packedDoubles(uint32_t field, const std::vector<double> &values);
  /// A tag with any wire type (including the invalid ones) and no value.
  ProtoWriter &tag(uint32_t field, int wireType);
  /// Bytes appended as they are.
  ProtoWriter &raw(std::string_view bytes);

  const std::string &str() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

private:
  std::string bytes_;
};

/// A TensorProto with dims (unpacked, as protobuf writes a proto2 repeated
/// field without [packed = true]), data_type and name; the contents are the
/// caller's.
ProtoWriter tensorHeader(std::string_view name, ElemType type,
                         const std::vector<int64_t> &dims);

/// The bytes of `values`, for raw_data.
template <typename T> std::string rawBytes(const std::vector<T> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(T));
}

/// The external_data entries and data_location EXTERNAL, appended to a
/// tensor. Empty offset/length strings are left out.
void addExternalData(ProtoWriter &tensor, std::string_view location,
                     std::string_view offset = "",
                     std::string_view length = "");

/// A dim of a ValueInfo shape: a number or a symbol.
using ShapeDim = std::variant<int64_t, std::string>;

/// A ValueInfoProto of a tensor type with that shape.
ProtoWriter valueInfo(std::string_view name, ElemType type,
                      const std::vector<ShapeDim> &shape);

/// An AttributeProto: the name, the value fields `value` holds, then the
/// type, in onnx.proto's field order.
ProtoWriter attribute(std::string_view name, Attribute::Type type,
                      const ProtoWriter &value);

/// A NodeProto with inputs, outputs, name and op_type; attributes are the
/// caller's.
ProtoWriter nodeHeader(std::string_view opType, std::string_view name,
                       std::initializer_list<std::string_view> inputs,
                       std::initializer_list<std::string_view> outputs);

/// A ModelProto: ir_version 8, producer "sol-test", the graph, then
/// opset_import ai.onnx 17, in onnx.proto's field order.
ProtoWriter modelWith(const ProtoWriter &graph);

} // namespace sol::onnx::test

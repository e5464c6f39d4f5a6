//===- ProtoWriter.cpp - Builds protobuf messages for tests ---------------===//

#include "test/unit/onnx/ProtoWriter.h"

#include <bit>

namespace sol::onnx::test {

std::string varintBytes(uint64_t value) {
  std::string out;
  do {
    auto byte = static_cast<uint8_t>(value & 0x7F);
    value >>= 7;
    out.push_back(static_cast<char>(value ? byte | 0x80 : byte));
  } while (value);
  return out;
}

namespace {

std::string littleEndian(uint64_t bits, int width) {
  std::string out;
  for (int i = 0; i < width; ++i)
    out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  return out;
}

} // namespace

ProtoWriter &ProtoWriter::tag(uint32_t field, int wireType) {
  bytes_ += varintBytes((static_cast<uint64_t>(field) << 3) | wireType);
  return *this;
}

ProtoWriter &ProtoWriter::varint(uint32_t field, uint64_t value) {
  tag(field, 0);
  bytes_ += varintBytes(value);
  return *this;
}

ProtoWriter &ProtoWriter::fixed32(uint32_t field, uint32_t bits) {
  tag(field, 5);
  bytes_ += littleEndian(bits, 4);
  return *this;
}

ProtoWriter &ProtoWriter::float32(uint32_t field, float value) {
  return fixed32(field, std::bit_cast<uint32_t>(value));
}

ProtoWriter &ProtoWriter::fixed64(uint32_t field, uint64_t bits) {
  tag(field, 1);
  bytes_ += littleEndian(bits, 8);
  return *this;
}

ProtoWriter &ProtoWriter::bytes(uint32_t field, std::string_view data) {
  tag(field, 2);
  bytes_ += varintBytes(data.size());
  bytes_ += data;
  return *this;
}

ProtoWriter &ProtoWriter::packedVarints(uint32_t field,
                                        const std::vector<int64_t> &values) {
  std::string payload;
  for (int64_t value : values)
    payload += varintBytes(static_cast<uint64_t>(value));
  return bytes(field, payload);
}

ProtoWriter &ProtoWriter::packedFloats(uint32_t field,
                                       const std::vector<float> &values) {
  std::string payload;
  for (float value : values)
    payload += littleEndian(std::bit_cast<uint32_t>(value), 4);
  return bytes(field, payload);
}

ProtoWriter &ProtoWriter::packedDoubles(uint32_t field,
                                        const std::vector<double> &values) {
  std::string payload;
  for (double value : values)
    payload += littleEndian(std::bit_cast<uint64_t>(value), 8);
  return bytes(field, payload);
}

ProtoWriter &ProtoWriter::raw(std::string_view bytes) {
  bytes_ += bytes;
  return *this;
}

ProtoWriter tensorHeader(std::string_view name, ElemType type,
                         const std::vector<int64_t> &dims) {
  ProtoWriter tensor;
  for (int64_t dim : dims)
    tensor.int64(1, dim);
  tensor.varint(2, static_cast<uint64_t>(type));
  tensor.bytes(8, name);
  return tensor;
}

void addExternalData(ProtoWriter &tensor, std::string_view location,
                     std::string_view offset, std::string_view length) {
  auto entry = [&](std::string_view key, std::string_view value) {
    tensor.message(13, ProtoWriter().bytes(1, key).bytes(2, value));
  };
  entry("location", location);
  if (!offset.empty())
    entry("offset", offset);
  if (!length.empty())
    entry("length", length);
  tensor.varint(14, 1);
}

ProtoWriter valueInfo(std::string_view name, ElemType type,
                      const std::vector<ShapeDim> &shape) {
  ProtoWriter dims;
  for (const ShapeDim &dim : shape) {
    ProtoWriter d;
    if (const auto *value = std::get_if<int64_t>(&dim))
      d.int64(1, *value);
    else
      d.bytes(2, std::get<std::string>(dim));
    dims.message(1, d);
  }
  ProtoWriter tensorType;
  tensorType.varint(1, static_cast<uint64_t>(type)).message(2, dims);
  return ProtoWriter().bytes(1, name).message(
      2, ProtoWriter().message(1, tensorType));
}

ProtoWriter attribute(std::string_view name, Attribute::Type type,
                      const ProtoWriter &value) {
  return ProtoWriter()
      .bytes(1, name)
      .raw(value.str())
      .varint(20, static_cast<uint64_t>(type));
}

ProtoWriter nodeHeader(std::string_view opType, std::string_view name,
                       std::initializer_list<std::string_view> inputs,
                       std::initializer_list<std::string_view> outputs) {
  ProtoWriter node;
  for (std::string_view input : inputs)
    node.bytes(1, input);
  for (std::string_view output : outputs)
    node.bytes(2, output);
  node.bytes(3, name).bytes(4, opType);
  return node;
}

ProtoWriter modelWith(const ProtoWriter &graph) {
  return ProtoWriter()
      .varint(1, 8)
      .bytes(2, "sol-test")
      .message(7, graph)
      .message(8, ProtoWriter().bytes(1, "").varint(2, 17));
}

} // namespace sol::onnx::test

//===- OnnxModel.cpp - An ONNX model file, read without protobuf ----------===//
//
// Field numbers are onnx.proto's. Fields Sol does not use (doc strings,
// training info, quantization annotations...) are skipped by the wire
// reader, which still checks that they lie inside their message.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxModel.h"

#include "frontend/onnx/ProtoReader.h"
#include "runtime/support/Error.h"
#include "runtime/support/MappedFile.h"

#include <algorithm>
#include <array>
#include <bit>
#include <deque>

namespace sol::onnx {
namespace detail {

/// What Model::State holds, at namespace scope so that the decoder (not a
/// member of Model) can fill it.
struct ModelContents {
  ModelContents(std::filesystem::path path, MappedFile file)
      : path(std::move(path)), file(std::move(file)) {}

  std::filesystem::path path;
  MappedFile file;
  int64_t irVersion = 0;
  std::string producerName;
  std::string producerVersion;
  std::map<std::string, int64_t> opsets;
  std::map<std::string, std::string> metadata;
  int64_t functionCount = 0;
  Graph graph;
  /// External-data files by normalised location, each mapped once however
  /// many tensors point into it.
  std::map<std::string, MappedFile> externalFiles;
  /// Contents converted from typed fields (float_data, int32_data...). A
  /// deque: adding a buffer never moves the earlier ones that spans see.
  std::deque<std::vector<std::byte>> converted;
};

} // namespace detail

struct Model::State : detail::ModelContents {
  using ModelContents::ModelContents;
};

namespace {

/// Hostile-input limits. Real models nest a few subgraphs (If, Loop, Scan
/// bodies) and have tensors of rank 8 at most.
constexpr int kMaxGraphDepth = 32;
constexpr size_t kMaxDims = 64;

/// The highest TensorProto.DataType onnx.proto defines.
constexpr int32_t kLastElemType = static_cast<int32_t>(ElemType::Float4E2M1);

std::string join(const std::string &path, std::string_view field) {
  return path.empty() ? std::string(field) : cat(path, '.', field);
}

std::string indexed(const std::string &path, std::string_view field,
                    size_t index) {
  return cat(join(path, field), '[', index, ']');
}

std::string formatDims(const std::vector<int64_t> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += cat(i ? ", " : "", dims[i]);
  return out + "]";
}

/// onnx.proto calls the default domain both "" and "ai.onnx".
std::string normalizeDomain(std::string domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

bool isFourBit(ElemType type) {
  return type == ElemType::Int4 || type == ElemType::Uint4 ||
         type == ElemType::Float4E2M1;
}

/// A decimal unsigned integer (external_data's offset and length are
/// strings), or nullopt for anything else, overflow included.
std::optional<uint64_t> parseDecimal(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(c - '0'), &value))
      return std::nullopt;
  }
  return value;
}

/// The fields that can hold a tensor's contents.
enum class Source {
  RawData,
  FloatData,
  Int32Data,
  StringData,
  Int64Data,
  DoubleData,
  Uint64Data,
  External,
};
constexpr size_t kNumSources = 8;

/// How a typed field encodes its values.
ScalarKind scalarKind(Source source) {
  switch (source) {
  case Source::FloatData:
    return ScalarKind::Fixed32;
  case Source::DoubleData:
    return ScalarKind::Fixed64;
  default:
    return ScalarKind::Varint;
  }
}

std::string_view sourceName(Source source) {
  static constexpr std::array<std::string_view, kNumSources> kNames = {
      "raw_data",   "float_data",  "int32_data",  "string_data",
      "int64_data", "double_data", "uint64_data", "external data"};
  return kNames[static_cast<size_t>(source)];
}

/// A TensorProto's fields as read, checked only once all are in: data_type
/// may follow the data, and proto2 merges a message that occurs twice.
struct TensorFields {
  std::string name;
  int32_t dataType = 0;
  std::vector<int64_t> dims;
  size_t dimCount = 0; // dims holds at most kMaxDims + 1 of them
  bool segment = false;
  bool hasRawData = false;
  std::span<const std::byte> rawData;
  /// The readers of the TensorProto's occurrences (usually one).
  std::vector<ProtoReader> parts;
  /// Where each typed field occurs, by Source: the part and the field.
  /// Values are converted once the type is known, straight into the
  /// tensor's bytes, so a hostile file cannot make them cost more memory
  /// than the tensor they claim to be.
  std::array<std::vector<std::pair<size_t, ProtoField>>, kNumSources> typed;
  std::array<uint64_t, kNumSources> valueCounts{};
  uint64_t stringCount = 0;
  std::vector<std::pair<std::string, std::string>> externalData;
  int32_t dataLocation = 0;
};

/// How a typed field stores one element type: the types it may hold, how
/// many of its values an element takes, and the bytes one value becomes.
struct TypedLayout {
  int valuesPerElement = 1; // 2 for complex numbers
  bool packsTwoElements = false;
  int bytesPerValue = 0;
  /// Whether values are narrowed, and the range they must then lie in.
  bool bounded = false;
  int64_t min = 0;
  int64_t max = 0;
};

/// The layout of `type` in `source`, or nullopt when onnx.proto does not
/// allow that field for that type.
std::optional<TypedLayout> typedLayout(Source source, ElemType type) {
  switch (source) {
  case Source::FloatData:
    if (type == ElemType::Float)
      return TypedLayout{1, false, 4};
    if (type == ElemType::Complex64)
      return TypedLayout{2, false, 4};
    return std::nullopt;
  case Source::DoubleData:
    if (type == ElemType::Double)
      return TypedLayout{1, false, 8};
    if (type == ElemType::Complex128)
      return TypedLayout{2, false, 8};
    return std::nullopt;
  case Source::Int64Data:
    if (type == ElemType::Int64)
      return TypedLayout{1, false, 8};
    return std::nullopt;
  case Source::Uint64Data:
    if (type == ElemType::Uint64)
      return TypedLayout{1, false, 8};
    if (type == ElemType::Uint32)
      return TypedLayout{1, false, 4, true, 0, 0xFFFFFFFF};
    return std::nullopt;
  case Source::Int32Data:
    // Bit-pattern types (float16, float8, packed 4-bit pairs) are accepted
    // whether the writer sign-extended them or not.
    switch (type) {
    case ElemType::Int32:
      return TypedLayout{1, false, 4};
    case ElemType::Int16:
      return TypedLayout{1, false, 2, true, -32768, 32767};
    case ElemType::Uint16:
      return TypedLayout{1, false, 2, true, 0, 65535};
    case ElemType::Float16:
    case ElemType::BFloat16:
      return TypedLayout{1, false, 2, true, -32768, 65535};
    case ElemType::Int8:
      return TypedLayout{1, false, 1, true, -128, 127};
    case ElemType::Uint8:
      return TypedLayout{1, false, 1, true, 0, 255};
    case ElemType::Bool:
      return TypedLayout{1, false, 1, true, 0, 1};
    case ElemType::Float8E4M3FN:
    case ElemType::Float8E4M3FNUZ:
    case ElemType::Float8E5M2:
    case ElemType::Float8E5M2FNUZ:
      return TypedLayout{1, false, 1, true, -128, 255};
    case ElemType::Int4:
    case ElemType::Uint4:
    case ElemType::Float4E2M1:
      // onnx.proto: two 4-bit values per int32_data entry, first element
      // in the low nibble, which is raw_data's layout once narrowed.
      return TypedLayout{1, true, 1, true, -128, 255};
    default:
      return std::nullopt;
    }
  default:
    return std::nullopt;
  }
}

std::string_view allowedTypes(Source source) {
  switch (source) {
  case Source::FloatData:
    return "FLOAT and COMPLEX64";
  case Source::DoubleData:
    return "DOUBLE and COMPLEX128";
  case Source::Int64Data:
    return "INT64";
  case Source::Uint64Data:
    return "UINT32 and UINT64";
  case Source::Int32Data:
    return "INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16, the "
           "FLOAT8 types and the 4-bit types";
  default:
    return "no numeric type";
  }
}

/// Fills a ModelContents from the model file's bytes.
class Decoder {
public:
  explicit Decoder(detail::ModelContents &model)
      : model_(model), fileName_(model.path.string()) {}

  void decodeModel();

private:
  [[noreturn]] void invalid(const std::string &where,
                            const std::string &problem) const {
    fail(fileName_, ": ", where, ": ", problem);
  }

  void decodeGraph(ProtoReader reader, Graph &graph, int depth);
  Node decodeNode(ProtoReader reader, int depth);
  Attribute decodeAttribute(ProtoReader reader, int depth);
  ValueInfo decodeValueInfo(ProtoReader reader);
  void decodeTensorType(ProtoReader reader, ValueInfo &info);
  void decodeShape(ProtoReader reader, std::vector<Dim> &shape);
  std::pair<std::string, std::string> decodeEntry(ProtoReader reader);
  void collectTensor(ProtoReader reader, TensorFields &fields);
  Tensor finishTensor(TensorFields &fields, const std::string &path);
  void convertTyped(Source source, const TensorFields &fields, Tensor &tensor,
                    int64_t count, const std::string &where);
  void resolveExternal(const TensorFields &fields, Tensor &tensor,
                       uint64_t byteSize, const std::string &where);
  const MappedFile &externalFile(const std::string &location,
                                 const std::string &where);

  detail::ModelContents &model_;
  std::string fileName_;
};

void Decoder::decodeModel() {
  ProtoReader reader(fileName_, model_.file.bytes());
  bool hasGraph = false;
  bool hasOpset = false;
  size_t opsetIndex = 0;
  size_t metadataIndex = 0;
  ProtoField field;
  while (reader.next(field)) {
    switch (field.number) {
    case 1:
      model_.irVersion = reader.int64(field);
      break;
    case 2:
      model_.producerName = reader.string(field);
      break;
    case 3:
      model_.producerVersion = reader.string(field);
      break;
    case 7:
      // A second occurrence merges into the first, as protobuf does.
      decodeGraph(reader.message(field, "graph"), model_.graph, 0);
      hasGraph = true;
      break;
    case 8: {
      std::string path = indexed("", "opset_import", opsetIndex++);
      ProtoReader opset = reader.message(field, path);
      std::string domain;
      int64_t version = 0;
      ProtoField inner;
      while (opset.next(inner)) {
        if (inner.number == 1)
          domain = normalizeDomain(opset.string(inner));
        else if (inner.number == 2)
          version = opset.int64(inner);
      }
      auto [it, inserted] = model_.opsets.emplace(domain, version);
      if (!inserted && it->second != version)
        invalid(path,
                cat("domain '", domain.empty() ? "ai.onnx" : domain,
                    "' is imported twice, at versions ", it->second, " and ",
                    version, "; a model imports one version per domain"));
      hasOpset = true;
      break;
    }
    case 14: {
      auto [key, value] = decodeEntry(reader.message(
          field, indexed("", "metadata_props", metadataIndex++)));
      model_.metadata[key] = std::move(value);
      break;
    }
    case 25:
      reader.bytes(field); // checks the wire type; the body is not read
      ++model_.functionCount;
      break;
    default:
      break;
    }
  }
  if (model_.file.size() == 0)
    fail(fileName_, ": the file is empty, not an ONNX model");
  if (!hasGraph)
    fail(fileName_, ": the model has no graph (ModelProto field 7); the file "
                    "is truncated or not an ONNX model");
  // opset_import is required since IR version 3; without it a file cut
  // right after its graph would pass for a whole model.
  if (!hasOpset && model_.irVersion >= 3)
    fail(fileName_, ": the model (IR version ", model_.irVersion,
         ") has no opset_import (ModelProto field 8), which ONNX requires; "
         "the file is truncated or was not written by an ONNX exporter");
}

std::pair<std::string, std::string> Decoder::decodeEntry(ProtoReader reader) {
  std::pair<std::string, std::string> entry;
  ProtoField field;
  while (reader.next(field)) {
    if (field.number == 1)
      entry.first = reader.string(field);
    else if (field.number == 2)
      entry.second = reader.string(field);
  }
  return entry;
}

void Decoder::decodeGraph(ProtoReader reader, Graph &graph, int depth) {
  if (depth > kMaxGraphDepth)
    invalid(reader.path(),
            cat("subgraphs nest more than ", kMaxGraphDepth,
                " levels deep; real models nest a few (If, Loop and Scan "
                "bodies), so the file is corrupt or hostile"));
  const std::string &path = reader.path();
  ProtoField field;
  while (reader.next(field)) {
    switch (field.number) {
    case 1:
      graph.nodes.push_back(decodeNode(
          reader.message(field, indexed(path, "node", graph.nodes.size())),
          depth));
      break;
    case 2:
      graph.name = reader.string(field);
      break;
    case 5: {
      std::string where =
          indexed(path, "initializer", graph.initializers.size());
      TensorFields fields;
      collectTensor(reader.message(field, where), fields);
      graph.initializers.push_back(finishTensor(fields, where));
      break;
    }
    case 11:
      graph.inputs.push_back(decodeValueInfo(
          reader.message(field, indexed(path, "input", graph.inputs.size()))));
      break;
    case 12:
      graph.outputs.push_back(decodeValueInfo(reader.message(
          field, indexed(path, "output", graph.outputs.size()))));
      break;
    case 13:
      graph.valueInfo.push_back(decodeValueInfo(reader.message(
          field, indexed(path, "value_info", graph.valueInfo.size()))));
      break;
    case 15:
      reader.bytes(field);
      ++graph.sparseInitializerCount;
      break;
    default:
      break;
    }
  }
}

Node Decoder::decodeNode(ProtoReader reader, int depth) {
  Node node;
  const std::string &path = reader.path();
  ProtoField field;
  while (reader.next(field)) {
    switch (field.number) {
    case 1:
      node.inputs.push_back(reader.string(field));
      break;
    case 2:
      node.outputs.push_back(reader.string(field));
      break;
    case 3:
      node.name = reader.string(field);
      break;
    case 4:
      node.opType = reader.string(field);
      break;
    case 5:
      node.attributes.push_back(decodeAttribute(
          reader.message(field,
                         indexed(path, "attribute", node.attributes.size())),
          depth));
      break;
    case 7:
      node.domain = normalizeDomain(reader.string(field));
      break;
    default:
      break;
    }
  }
  return node;
}

Attribute Decoder::decodeAttribute(ProtoReader reader, int depth) {
  using Type = Attribute::Type;
  constexpr int kLastType = static_cast<int>(Type::TypeProtos);
  const std::string path = reader.path();
  // Everything is read before anything is kept: `type` (field 20) follows
  // the values in the canonical field order.
  Attribute read;
  std::optional<int32_t> declaredType;
  std::string refAttrName;
  std::array<bool, kLastType + 1> present{};
  auto mark = [&](Type type) { present[static_cast<int>(type)] = true; };
  std::vector<ProtoReader> t, g, tensors, graphs;
  ProtoField field;
  while (reader.next(field)) {
    switch (field.number) {
    case 1:
      read.name = reader.string(field);
      break;
    case 2:
      read.f = reader.float32(field);
      mark(Type::Float);
      break;
    case 3:
      read.i = reader.int64(field);
      mark(Type::Int);
      break;
    case 4:
      read.s = reader.string(field);
      mark(Type::String);
      break;
    case 5:
      t.push_back(reader.message(field, join(path, "t")));
      mark(Type::Tensor);
      break;
    case 6:
      g.push_back(reader.message(field, join(path, "g")));
      mark(Type::Graph);
      break;
    case 7:
      reader.forEach(field, ScalarKind::Fixed32, [&](uint64_t bits) {
        read.floats.push_back(
            std::bit_cast<float>(static_cast<uint32_t>(bits)));
      });
      mark(Type::Floats);
      break;
    case 8:
      reader.forEach(field, ScalarKind::Varint, [&](uint64_t bits) {
        read.ints.push_back(static_cast<int64_t>(bits));
      });
      mark(Type::Ints);
      break;
    case 9:
      read.strings.push_back(reader.string(field));
      mark(Type::Strings);
      break;
    case 10:
      tensors.push_back(
          reader.message(field, indexed(path, "tensors", tensors.size())));
      mark(Type::Tensors);
      break;
    case 11:
      graphs.push_back(
          reader.message(field, indexed(path, "graphs", graphs.size())));
      mark(Type::Graphs);
      break;
    case 14:
      reader.bytes(field);
      mark(Type::TypeProto);
      break;
    case 15:
      reader.bytes(field);
      mark(Type::TypeProtos);
      break;
    case 20:
      declaredType = reader.int32(field);
      break;
    case 21:
      refAttrName = reader.string(field);
      break;
    case 22:
      reader.bytes(field);
      mark(Type::SparseTensor);
      break;
    case 23:
      reader.bytes(field);
      mark(Type::SparseTensors);
      break;
    default:
      break;
    }
  }

  std::string where = cat(path, " (attribute '", read.name, "')");
  if (!refAttrName.empty())
    invalid(where, cat("refers to the function attribute '", refAttrName,
                       "' (ref_attr_name), which is only valid inside a "
                       "function body, not in a model's graph"));
  int type = 0;
  if (declaredType) {
    type = *declaredType;
    if (type <= 0 || type > kLastType)
      invalid(where,
              cat("has type ", type, ", which is not an AttributeProto type ",
                  "(1 to ", kLastType, ")"));
  } else {
    // IR version 1 had no `type`: the one value field present says it.
    for (int candidate = 1; candidate <= kLastType; ++candidate) {
      if (!present[candidate])
        continue;
      if (type != 0)
        invalid(where, cat("has no type field and holds both ",
                           attributeTypeName(static_cast<Type>(type)), " and ",
                           attributeTypeName(static_cast<Type>(candidate)),
                           " values; it needs a type (field 20)"));
      type = candidate;
    }
    if (type == 0)
      invalid(where, "has neither a type (field 20) nor a value");
  }

  Attribute attribute;
  attribute.name = std::move(read.name);
  attribute.type = static_cast<Type>(type);
  switch (attribute.type) {
  case Type::Float:
    attribute.f = read.f;
    break;
  case Type::Int:
    attribute.i = read.i;
    break;
  case Type::String:
    attribute.s = std::move(read.s);
    break;
  case Type::Tensor: {
    if (t.empty())
      invalid(where, "has type TENSOR but no tensor (field 5)");
    TensorFields fields;
    for (ProtoReader &part : t)
      collectTensor(part, fields);
    attribute.t =
        std::make_shared<const Tensor>(finishTensor(fields, join(path, "t")));
    break;
  }
  case Type::Graph: {
    if (g.empty())
      invalid(where, "has type GRAPH but no graph (field 6)");
    auto graph = std::make_shared<Graph>();
    for (ProtoReader &part : g)
      decodeGraph(part, *graph, depth + 1);
    attribute.g = std::move(graph);
    break;
  }
  case Type::Floats:
    attribute.floats = std::move(read.floats);
    break;
  case Type::Ints:
    attribute.ints = std::move(read.ints);
    break;
  case Type::Strings:
    attribute.strings = std::move(read.strings);
    break;
  case Type::Tensors:
    for (ProtoReader &part : tensors) {
      TensorFields fields;
      collectTensor(part, fields);
      attribute.tensors.push_back(
          std::make_shared<const Tensor>(finishTensor(fields, part.path())));
    }
    break;
  case Type::Graphs:
    for (ProtoReader &part : graphs) {
      auto graph = std::make_shared<Graph>();
      decodeGraph(part, *graph, depth + 1);
      attribute.graphs.push_back(std::move(graph));
    }
    break;
  default:
    break; // sparse tensors and type protos: the type alone is kept
  }
  return attribute;
}

ValueInfo Decoder::decodeValueInfo(ProtoReader reader) {
  ValueInfo info;
  ProtoField field;
  while (reader.next(field)) {
    if (field.number == 1) {
      info.name = reader.string(field);
    } else if (field.number == 2) {
      // TypeProto: only tensor_type (1) is read; sequences, maps and
      // sparse tensors leave elemType Undefined.
      ProtoReader type = reader.message(field, join(reader.path(), "type"));
      ProtoField inner;
      while (type.next(inner))
        if (inner.number == 1)
          decodeTensorType(
              type.message(inner, join(type.path(), "tensor_type")), info);
    }
  }
  return info;
}

void Decoder::decodeTensorType(ProtoReader reader, ValueInfo &info) {
  ProtoField field;
  while (reader.next(field)) {
    if (field.number == 1) {
      info.elemType = static_cast<ElemType>(reader.int32(field));
    } else if (field.number == 2) {
      if (!info.shape)
        info.shape.emplace();
      decodeShape(reader.message(field, join(reader.path(), "shape")),
                  *info.shape);
    }
  }
}

void Decoder::decodeShape(ProtoReader reader, std::vector<Dim> &shape) {
  ProtoField field;
  while (reader.next(field)) {
    if (field.number != 1)
      continue;
    ProtoReader dimReader =
        reader.message(field, indexed(reader.path(), "dim", shape.size()));
    Dim dim;
    ProtoField inner;
    while (dimReader.next(inner)) {
      // dim_value and dim_param are a oneof: the last one read wins.
      if (inner.number == 1) {
        dim.value = dimReader.int64(inner);
        dim.param.clear();
      } else if (inner.number == 2) {
        dim.param = dimReader.string(inner);
        dim.value.reset();
      }
    }
    shape.push_back(std::move(dim));
  }
}

void Decoder::collectTensor(ProtoReader reader, TensorFields &fields) {
  size_t part = fields.parts.size();
  fields.parts.push_back(reader);
  auto append = [&](const ProtoField &field, Source source) {
    auto index = static_cast<size_t>(source);
    fields.valueCounts[index] += reader.count(field, scalarKind(source));
    fields.typed[index].emplace_back(part, field);
  };
  ProtoField field;
  while (reader.next(field)) {
    switch (field.number) {
    case 1:
      reader.forEach(field, ScalarKind::Varint, [&](uint64_t bits) {
        // A hostile file may list millions of dims; keep one past the limit
        // so that finishTensor reports it.
        if (fields.dims.size() <= kMaxDims)
          fields.dims.push_back(static_cast<int64_t>(bits));
        ++fields.dimCount;
      });
      break;
    case 2:
      fields.dataType = reader.int32(field);
      break;
    case 3:
      reader.bytes(field);
      fields.segment = true;
      break;
    case 4:
      append(field, Source::FloatData);
      break;
    case 5:
      append(field, Source::Int32Data);
      break;
    case 6:
      reader.bytes(field);
      ++fields.stringCount;
      break;
    case 7:
      append(field, Source::Int64Data);
      break;
    case 8:
      fields.name = reader.string(field);
      break;
    case 9:
      fields.rawData = reader.bytes(field);
      fields.hasRawData = true;
      break;
    case 10:
      append(field, Source::DoubleData);
      break;
    case 11:
      append(field, Source::Uint64Data);
      break;
    case 13:
      fields.externalData.push_back(decodeEntry(
          reader.message(field, indexed(reader.path(), "external_data",
                                        fields.externalData.size()))));
      break;
    case 14:
      fields.dataLocation = reader.int32(field);
      break;
    default:
      break;
    }
  }
}

Tensor Decoder::finishTensor(TensorFields &fields, const std::string &path) {
  Tensor tensor;
  tensor.name = std::move(fields.name);
  tensor.elemType = static_cast<ElemType>(fields.dataType);
  const std::string where =
      tensor.name.empty() ? path : cat(path, " (tensor '", tensor.name, "')");

  if (fields.segment)
    invalid(where, "is segmented (TensorProto.segment), which is not "
                   "supported; save the model with each tensor whole");
  if (fields.dimCount > kMaxDims)
    invalid(where, cat("has ", fields.dimCount, " dims; at most ", kMaxDims,
                       " are accepted"));
  tensor.dims = std::move(fields.dims);
  int64_t count = 1;
  bool empty = false;
  for (size_t i = 0; i < tensor.dims.size(); ++i) {
    if (tensor.dims[i] < 0)
      invalid(where, cat("dims[", i, "] is ", tensor.dims[i],
                         "; a tensor's dims must be >= 0"));
    empty = empty || tensor.dims[i] == 0;
  }
  for (int64_t dim : tensor.dims)
    if (!empty && __builtin_mul_overflow(count, dim, &count))
      invalid(where, cat("dims ", formatDims(tensor.dims),
                         " have more elements than int64 can count"));
  if (empty)
    count = 0;

  const bool isString = tensor.elemType == ElemType::String;
  if (fields.dataType == 0)
    invalid(where, "has no data_type (or UNDEFINED, 0); every tensor "
                   "needs one");
  if (fields.dataType < 0 || fields.dataType > kLastElemType)
    invalid(where, cat("has data_type ", fields.dataType,
                       ", which is not a TensorProto.DataType this reader "
                       "knows (1 to ",
                       kLastElemType, ")"));
  std::optional<uint64_t> byteSize = rawByteSize(tensor.elemType, count);
  if (!isString && !byteSize)
    invalid(where,
            cat(elemTypeName(tensor.elemType), " ", formatDims(tensor.dims),
                " is more bytes than 64 bits can count"));
  const std::string typeAndDims =
      cat(elemTypeName(tensor.elemType), " ", formatDims(tensor.dims));

  if (fields.dataLocation != 0 && fields.dataLocation != 1)
    invalid(where, cat("data_location is ", fields.dataLocation,
                       "; onnx.proto defines 0 (DEFAULT) and 1 (EXTERNAL)"));
  if (!fields.externalData.empty() && fields.dataLocation != 1)
    invalid(where, "has external_data entries but data_location is DEFAULT; "
                   "the exporter must set data_location to EXTERNAL (1)");

  std::vector<Source> sources;
  if (fields.hasRawData)
    sources.push_back(Source::RawData);
  for (Source source : {Source::FloatData, Source::Int32Data, Source::Int64Data,
                        Source::DoubleData, Source::Uint64Data})
    if (fields.valueCounts[static_cast<size_t>(source)] > 0)
      sources.push_back(source);
  if (fields.stringCount)
    sources.push_back(Source::StringData);
  if (fields.dataLocation == 1)
    sources.push_back(Source::External);
  if (sources.size() > 1)
    invalid(where, cat("has both ", sourceName(sources[0]), " and ",
                       sourceName(sources[1]),
                       "; a tensor's contents must be in exactly one"));

  if (isString) {
    // Sol reads no string contents; their count is still checked.
    if (!sources.empty() && sources[0] != Source::StringData)
      invalid(where,
              cat("is a STRING tensor but its contents are in ",
                  sourceName(sources[0]), "; STRING tensors use string_data"));
    if (fields.stringCount != static_cast<uint64_t>(count))
      invalid(where, cat(typeAndDims, " has ", count,
                         " elements, but string_data holds ",
                         fields.stringCount, " strings"));
    tensor.origin = "string_data";
    return tensor;
  }
  if (sources.empty()) {
    if (count > 0)
      invalid(where, cat(typeAndDims, " has ", count,
                         " elements but no contents: none of raw_data, the "
                         "typed *_data fields or external data is set, so the "
                         "file was written without this tensor's data"));
    tensor.origin = "no data (0 elements)";
    return tensor;
  }

  switch (sources[0]) {
  case Source::RawData:
    if (fields.rawData.size() != *byteSize)
      invalid(where, cat(typeAndDims, " is ", *byteSize,
                         " bytes, but raw_data holds ", fields.rawData.size()));
    tensor.bytes = fields.rawData; // a view of the mapped file: no copy
    tensor.origin = "raw_data";
    break;
  case Source::StringData:
    invalid(where, cat("string_data is only for STRING tensors, but "
                       "data_type is ",
                       elemTypeName(tensor.elemType)));
  case Source::External:
    resolveExternal(fields, tensor, *byteSize, where);
    break;
  default:
    convertTyped(sources[0], fields, tensor, count, where);
    break;
  }
  if (tensor.bytes.size() != *byteSize)
    invalid(where, cat(typeAndDims, " is ", *byteSize, " bytes, but ",
                       tensor.origin, " gives ", tensor.bytes.size()));
  return tensor;
}

void Decoder::convertTyped(Source source, const TensorFields &fields,
                           Tensor &tensor, int64_t count,
                           const std::string &where) {
  std::string_view name = sourceName(source);
  std::optional<TypedLayout> layout = typedLayout(source, tensor.elemType);
  if (!layout)
    invalid(where, cat(name, " cannot hold ", elemTypeName(tensor.elemType),
                       " values; onnx.proto allows it for ",
                       allowedTypes(source), " only"));
  auto index = static_cast<size_t>(source);
  uint64_t held = fields.valueCounts[index];
  auto elements = static_cast<uint64_t>(count);
  uint64_t expected = layout->packsTwoElements
                          ? (elements + 1) / 2
                          : elements * layout->valuesPerElement;
  if (held != expected) {
    std::string detail;
    if (layout->packsTwoElements)
      detail = cat(" (", expected, " values, two 4-bit elements in each)");
    else if (layout->valuesPerElement == 2)
      detail = cat(" (", expected, " values, real and imaginary parts)");
    invalid(where, cat(elemTypeName(tensor.elemType), " ",
                       formatDims(tensor.dims), " has ", elements, " elements",
                       detail, ", but ", name, " holds ", held, " values"));
  }

  std::vector<std::byte> &out = model_.converted.emplace_back();
  out.reserve(held * layout->bytesPerValue);
  uint64_t i = 0;
  auto convert = [&](uint64_t bits) {
    if (layout->bounded) {
      bool fits = false;
      std::string shown;
      if (source == Source::Uint64Data) {
        fits = bits <= static_cast<uint64_t>(layout->max);
        shown = cat(bits);
      } else {
        // int32_data is int32 on the wire: its low 32 bits, sign-extended.
        int64_t value = static_cast<int32_t>(static_cast<uint32_t>(bits));
        fits = value >= layout->min && value <= layout->max;
        shown = cat(value);
      }
      if (!fits)
        invalid(where,
                cat(name, "[", i, "] is ", shown, ", which does not fit ",
                    elemTypeName(tensor.elemType)));
    }
    for (int b = 0; b < layout->bytesPerValue; ++b)
      out.push_back(static_cast<std::byte>((bits >> (8 * b)) & 0xFF));
    ++i;
  };
  for (const auto &[part, field] : fields.typed[index])
    fields.parts[part].forEach(field, scalarKind(source), convert);
  tensor.bytes = out;
  tensor.origin = std::string(name);
}

void Decoder::resolveExternal(const TensorFields &fields, Tensor &tensor,
                              uint64_t byteSize, const std::string &where) {
  std::optional<std::string> location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &[key, value] : fields.externalData) {
    if (key == "location") {
      location = value;
    } else if (key == "offset" || key == "length") {
      std::optional<uint64_t> number = parseDecimal(value);
      if (!number)
        invalid(where, cat("external data ", key, " '", value,
                           "' is not a decimal byte count"));
      if (key == "offset")
        offset = *number;
      else
        length = number;
    }
    // "checksum" (a SHA-1 of the whole file) is not verified: that would
    // read every byte of a file that is mapped so as not to.
  }
  if (!location || location->empty())
    invalid(where, "has data_location EXTERNAL but no external_data "
                   "'location' naming the file that holds its contents");
  std::filesystem::path relative(*location);
  if (relative.has_root_path())
    invalid(where, cat("external data location '", *location,
                       "' is an absolute path; ONNX requires a path relative "
                       "to the model's directory"));
  for (const std::filesystem::path &part : relative)
    if (part == "..")
      invalid(where, cat("external data location '", *location,
                         "' has a '..' component; ONNX requires a path inside "
                         "the model's directory"));

  uint64_t size = length.value_or(byteSize);
  if (size != byteSize)
    invalid(where, cat(elemTypeName(tensor.elemType), " ",
                       formatDims(tensor.dims), " is ", byteSize,
                       " bytes, but its external data length is ", size));
  const MappedFile &file = externalFile(*location, where);
  if (offset > file.size() || size > file.size() - offset)
    invalid(where, cat("external data offset ", offset, " + length ", size,
                       " runs past the end of '", *location, "' (", file.size(),
                       " bytes)"));
  tensor.bytes = file.bytes().subspan(offset, size);
  tensor.origin = cat("external data '", *location, "' at offset ", offset);
}

const MappedFile &Decoder::externalFile(const std::string &location,
                                        const std::string &where) {
  std::string key = std::filesystem::path(location).lexically_normal().string();
  auto it = model_.externalFiles.find(key);
  if (it != model_.externalFiles.end())
    return it->second;
  std::filesystem::path full = model_.path.parent_path() / key;
  try {
    return model_.externalFiles.emplace(key, MappedFile::open(full))
        .first->second;
  } catch (const Error &error) {
    invalid(where, cat("cannot read its external data file '", location, "' (",
                       full.string(), "): ", error.what()));
  }
}

} // namespace

std::string elemTypeName(ElemType type) {
  static constexpr std::array<std::string_view, kLastElemType + 1> kNames = {
      "UNDEFINED",      "FLOAT",        "UINT8",          "INT8",
      "UINT16",         "INT16",        "INT32",          "INT64",
      "STRING",         "BOOL",         "FLOAT16",        "DOUBLE",
      "UINT32",         "UINT64",       "COMPLEX64",      "COMPLEX128",
      "BFLOAT16",       "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4",        "INT4",           "FLOAT4E2M1"};
  auto index = static_cast<int32_t>(type);
  if (index < 0 || index > kLastElemType)
    return cat("type ", index);
  return std::string(kNames[index]);
}

std::optional<DType> toDType(ElemType type) {
  switch (type) {
  case ElemType::Float:
    return DType::F32;
  case ElemType::Float16:
    return DType::F16;
  case ElemType::BFloat16:
    return DType::BF16;
  case ElemType::Double:
    return DType::F64;
  case ElemType::Int8:
    return DType::I8;
  case ElemType::Uint8:
    return DType::U8;
  case ElemType::Int16:
    return DType::I16;
  case ElemType::Int32:
    return DType::I32;
  case ElemType::Int64:
    return DType::I64;
  case ElemType::Uint16:
    return DType::U16;
  case ElemType::Uint32:
    return DType::U32;
  case ElemType::Uint64:
    return DType::U64;
  case ElemType::Bool:
    return DType::Bool;
  case ElemType::Float8E4M3FN:
    return DType::F8E4M3;
  case ElemType::Float8E5M2:
    return DType::F8E5M2;
  case ElemType::Int4:
    return DType::I4;
  default:
    return std::nullopt;
  }
}

std::optional<uint64_t> rawByteSize(ElemType type, int64_t count) {
  if (count < 0)
    return std::nullopt;
  auto elements = static_cast<uint64_t>(count);
  if (isFourBit(type))
    return elements / 2 + elements % 2;
  uint64_t width = 0;
  switch (type) {
  case ElemType::Uint8:
  case ElemType::Int8:
  case ElemType::Bool:
  case ElemType::Float8E4M3FN:
  case ElemType::Float8E4M3FNUZ:
  case ElemType::Float8E5M2:
  case ElemType::Float8E5M2FNUZ:
    width = 1;
    break;
  case ElemType::Uint16:
  case ElemType::Int16:
  case ElemType::Float16:
  case ElemType::BFloat16:
    width = 2;
    break;
  case ElemType::Float:
  case ElemType::Int32:
  case ElemType::Uint32:
    width = 4;
    break;
  case ElemType::Int64:
  case ElemType::Double:
  case ElemType::Uint64:
  case ElemType::Complex64:
    width = 8;
    break;
  case ElemType::Complex128:
    width = 16;
    break;
  default:
    return std::nullopt; // String, Undefined and numbers onnx.proto lacks
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, width, &bytes))
    return std::nullopt;
  return bytes;
}

std::string attributeTypeName(Attribute::Type type) {
  static constexpr std::array<std::string_view, 15> kNames = {
      "UNDEFINED",      "FLOAT",      "INT",        "STRING",
      "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
      "STRINGS",        "TENSORS",    "GRAPHS",     "SPARSE_TENSOR",
      "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  auto index = static_cast<int32_t>(type);
  if (index < 0 || index >= static_cast<int32_t>(kNames.size()))
    return cat("type ", index);
  return std::string(kNames[index]);
}

int64_t Tensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : dims)
    count *= dim; // Model::open checked that the product fits
  return count;
}

const Attribute *Node::attribute(std::string_view name) const {
  auto it = std::find_if(
      attributes.begin(), attributes.end(),
      [&](const Attribute &candidate) { return candidate.name == name; });
  return it == attributes.end() ? nullptr : &*it;
}

Model Model::open(const std::filesystem::path &path) {
  auto state = std::make_shared<State>(path, MappedFile::open(path));
  Decoder(*state).decodeModel();
  return Model(std::move(state));
}

const std::filesystem::path &Model::path() const { return state_->path; }
int64_t Model::irVersion() const { return state_->irVersion; }
std::string_view Model::producerName() const { return state_->producerName; }
std::string_view Model::producerVersion() const {
  return state_->producerVersion;
}
const std::map<std::string, int64_t> &Model::opsets() const {
  return state_->opsets;
}
const std::map<std::string, std::string> &Model::metadata() const {
  return state_->metadata;
}
int64_t Model::functionCount() const { return state_->functionCount; }
const Graph &Model::graph() const { return state_->graph; }
std::shared_ptr<const void> Model::keepAlive() const { return state_; }

} // namespace sol::onnx

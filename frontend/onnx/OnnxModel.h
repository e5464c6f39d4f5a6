//===- OnnxModel.h - An ONNX model file, read without protobuf --*- C++ -*-===//
//
// Reads an ONNX `ModelProto` straight from the protobuf wire format: the
// file is mapped, the graph (nodes, value infos, initializer headers) is
// decoded into the plain structs below, and tensor contents stay where they
// are: spans into the mapped model file or into mapped external-data files.
// A 16 GB model therefore costs page tables, not a copy, and graphs whose
// weights live in external data (any size) read the same way as small ones.
//
// Why not libprotobuf + onnx.pb.h: Debian ships libonnx only as a shared
// library (solc links statically to run on machines without it), protobuf's
// parser copies every inline `raw_data` into the message and stops at 2 GB,
// and its errors ("failed to parse") name neither the field nor the byte.
// The subset of onnx.proto that Sol reads is small and stable.
//
// No MLIR here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/DType.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sol::onnx {

/// TensorProto.DataType, numbered as in onnx.proto.
enum class ElemType : int32_t {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  Uint32 = 12,
  Uint64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  Uint4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
};

/// "FLOAT", "INT64", ... as onnx.proto spells them; "type 99" for numbers it
/// does not define.
std::string elemTypeName(ElemType type);
/// The Sol dtype of an ONNX element type (Float -> F32, Int4 -> I4, ...), or
/// nullopt for types Sol has none for (String, Complex*, FNUZ floats, Uint4,
/// Float4E2M1).
std::optional<DType> toDType(ElemType type);
/// Bytes that `count` elements occupy in raw_data (4-bit types pack two per
/// byte, rounded up); nullopt for String and undefined types.
std::optional<uint64_t> rawByteSize(ElemType type, int64_t count);

/// One dimension of a value's shape: a number, or a symbol ("batch_size",
/// "sequence_length") or nothing when unknown.
struct Dim {
  std::optional<int64_t> value;
  std::string param;
};

/// A graph input, output or value_info entry.
struct ValueInfo {
  std::string name;
  /// Undefined when the entry has no tensor type (a sequence, a map...).
  ElemType elemType = ElemType::Undefined;
  /// nullopt when the type gives no shape (rank unknown).
  std::optional<std::vector<Dim>> shape;
};

/// A tensor's header and contents: an initializer, a Constant node's value,
/// or a tensor attribute.
struct Tensor {
  std::string name;
  ElemType elemType = ElemType::Undefined;
  std::vector<int64_t> dims;
  /// The contents in raw_data's little-endian layout (4-bit types packed
  /// two per byte, low nibble first), whichever field or external file held
  /// them. Valid as long as the Model that read it.
  std::span<const std::byte> bytes;
  /// Where the contents came from, for messages: "raw_data",
  /// "float_data", "external data 'model.onnx_data' at offset 1024", ...
  std::string origin;

  /// Product of dims (1 for a scalar).
  int64_t numElements() const;
};

struct Graph;

/// AttributeProto. Only the field its `type` names is set.
struct Attribute {
  enum class Type : int32_t {
    Undefined = 0,
    Float = 1,
    Int = 2,
    String = 3,
    Tensor = 4,
    Graph = 5,
    Floats = 6,
    Ints = 7,
    Strings = 8,
    Tensors = 9,
    Graphs = 10,
    SparseTensor = 11,
    SparseTensors = 12,
    TypeProto = 13,
    TypeProtos = 14,
  };

  std::string name;
  Type type = Type::Undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<const onnx::Tensor> t;
  std::shared_ptr<const onnx::Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<std::shared_ptr<const onnx::Tensor>> tensors;
  std::vector<std::shared_ptr<const onnx::Graph>> graphs;
};

/// "FLOAT", "INTS", "GRAPH", ... as onnx.proto spells them.
std::string attributeTypeName(Attribute::Type type);

struct Node {
  std::string name;
  std::string opType;
  /// "" for the default domain (ai.onnx); "com.microsoft", ...
  std::string domain;
  /// An empty name is an omitted optional input or output.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;

  /// The attribute called `name`, or nullptr.
  const Attribute *attribute(std::string_view name) const;
};

struct Graph {
  std::string name;
  /// In the file's order (ONNX requires it to be topological).
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> valueInfo;
  /// Number of sparse_initializer entries (Sol reads none; the importer
  /// reports them).
  int64_t sparseInitializerCount = 0;
};

class Model {
public:
  /// Maps `path` (an .onnx file) and decodes it. External data files are
  /// looked up beside it (`location` must be a relative path without `..`),
  /// mapped once each, and every tensor's offset and length checked against
  /// the file. Throws sol::Error naming the file, the field path
  /// ("graph.node[12].attribute[0].t") and the problem: truncated or
  /// malformed protobuf, a tensor whose byte count does not match its type
  /// and dims, a missing, short or unsafe external-data file.
  static Model open(const std::filesystem::path &path);

  const std::filesystem::path &path() const;
  int64_t irVersion() const;
  std::string_view producerName() const;
  std::string_view producerVersion() const;
  /// opset_import: domain ("" for ai.onnx) -> version.
  const std::map<std::string, int64_t> &opsets() const;
  /// metadata_props, key -> value.
  const std::map<std::string, std::string> &metadata() const;
  /// Number of local functions (ModelProto.functions); Sol inlines none.
  int64_t functionCount() const;
  const Graph &graph() const;

  /// The mapped files and decoded contents, for a WeightStore to retain so
  /// that tensor spans outlive this object.
  std::shared_ptr<const void> keepAlive() const;

private:
  struct State;
  explicit Model(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

} // namespace sol::onnx

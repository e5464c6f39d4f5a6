//===- Safetensors.h - The one safetensors reader of Sol --------*- C++ -*-===//
//
// Reads Hugging Face safetensors files and checkpoint directories without
// copying weights: headers are parsed and validated up front, tensor bytes are
// spans into read-only mmaps that the OS pages in on first touch.
//
// Format: 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
//  "__metadata__": {"key": "value"}}, then the data region; offsets are
// relative to the data region.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/DType.h"
#include "runtime/support/MappedFile.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sol::hf {

/// One tensor of a safetensors file; `bytes` points into the file's mapping
/// and stays valid as long as the SafetensorsFile/Checkpoint that owns it.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;

  /// Product of the shape (1 for a scalar, 0 if any dimension is 0).
  int64_t numElements() const;
};

class SafetensorsFile {
public:
  /// Largest header accepted, as in the Hugging Face reference reader.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  /// Maps `path` and validates its header: length prefix, JSON object,
  /// `__metadata__` as a string->string map, every tensor's dtype, shape and
  /// data_offsets (inside the data region, size equal to shape x dtype, no
  /// two tensors overlapping). Throws sol::Error naming the file, the tensor
  /// and the problem. Gaps between tensors and trailing bytes are allowed.
  static SafetensorsFile open(const std::filesystem::path &path);

  const std::filesystem::path &path() const { return file_.path(); }

  /// All tensors, sorted by name.
  std::span<const TensorView> tensors() const { return tensors_; }

  /// The tensor called `name`, or nullptr.
  const TensorView *find(std::string_view name) const;

  /// The `__metadata__` map (empty when the header has none).
  const std::map<std::string, std::string, std::less<>> &metadata() const {
    return metadata_;
  }

  /// Offset of the data region in the file (8 + header length).
  uint64_t dataOffset() const { return dataOffset_; }

private:
  explicit SafetensorsFile(MappedFile file) : file_(std::move(file)) {}
  void parseHeader();

  MappedFile file_;
  uint64_t dataOffset_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

/// A Hugging Face model directory's weights: `model.safetensors`, or
/// `model.safetensors.index.json` (its `weight_map`: tensor -> shard file)
/// and the shards it names. Only headers are read; weights stay mapped.
class Checkpoint {
public:
  static constexpr std::string_view kSingleFileName = "model.safetensors";
  static constexpr std::string_view kIndexFileName =
      "model.safetensors.index.json";

  /// Opens the weights of the model directory `dir`. A single
  /// model.safetensors wins over an index (as in transformers). Throws
  /// sol::Error when no weights are found (naming the files looked for), the
  /// index is malformed or names a file outside `dir`, a shard is missing
  /// (naming the shard and a tensor mapped to it), a tensor of the index is
  /// absent from its shard, or one tensor name occurs in two shards.
  static Checkpoint open(const std::filesystem::path &dir);
  /// A checkpoint of `dir` whose tensors have the names, dtypes and shapes
  /// of `tensors` and zero bytes (solc --load-format dummy: a plan from the
  /// config alone, whose runtime fills the weights at random).
  static Checkpoint withoutWeights(const std::filesystem::path &dir,
                                   std::vector<TensorView> tensors);

  const std::filesystem::path &directory() const { return dir_; }

  /// The tensor called `name`, or nullptr.
  const TensorView *find(std::string_view name) const;

  /// The tensor called `name`; throws sol::Error naming it when absent.
  const TensorView &get(std::string_view name) const;

  /// Every tensor name, sorted.
  std::vector<std::string> tensorNames() const;

  /// The mapped files: one, or the shards sorted by file name (none for a
  /// checkpoint withoutWeights).
  std::span<const SafetensorsFile> files() const { return files_; }

  /// Every tensor, by name.
  std::vector<const TensorView *> tensors() const;

private:
  Checkpoint() = default;
  void indexTensors();

  std::filesystem::path dir_;
  std::vector<SafetensorsFile> files_;
  // withoutWeights: the tensors, and the zero bytes they all view.
  std::vector<TensorView> synthetic_;
  std::shared_ptr<const MappedFile> zeros_;
  // Points into files_[i].tensors(); those vectors' buffers never move.
  std::map<std::string, const TensorView *, std::less<>> byName_;
};

} // namespace sol::hf

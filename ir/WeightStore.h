//===- WeightStore.h - The tensors a sol module's weights name --*- C++ -*-===//
//
// `sol.weight @name` refers to a tensor of the weight store. Importers fill
// it with views of the source's bytes (mapped safetensors today, ONNX
// initializers next); passes add tensors they derive (a fused projection's
// concatenated weight, a converted or quantized one) as producers that run
// when the bytes are read, so a 16 GB model is never copied in memory. The
// plan writer copies each weight's bytes from here. No MLIR here.
//
// Tensor parallelism: a tensor may be *sharded*, holding different bytes for
// each rank (sol.shard_weight's slices, and every tensor derived from one).
// Reads name the rank; a tensor that is not sharded ignores it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/DType.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sol {

/// Receives a tensor's bytes in order, in one or more pieces.
using ByteSink = std::function<void(std::span<const std::byte>)>;

class WeightStore {
public:
  /// Writes a derived tensor's bytes for tensor-parallel rank `rank` to the
  /// sink, reading its sources (for the same rank) from the store.
  using Producer = std::function<void(const WeightStore &store,
                                      const ByteSink &sink, int rank)>;

  struct Tensor {
    std::string name;
    DType dtype = DType::BF16;
    std::vector<int64_t> shape;
    /// The bytes, for a tensor held elsewhere (empty for a produced one).
    std::span<const std::byte> bytes;
    /// Set for a derived tensor.
    Producer produce;
    /// Its bytes differ between tensor-parallel ranks (a produced tensor).
    bool sharded = false;

    int64_t numElements() const;
    /// Storage bytes (I4 packs two per byte).
    uint64_t byteSize() const;
  };

  WeightStore() = default;
  WeightStore(WeightStore &&) = default;
  WeightStore &operator=(WeightStore &&) = default;
  WeightStore(const WeightStore &) = delete;
  WeightStore &operator=(const WeightStore &) = delete;

  /// Adds a tensor whose bytes live elsewhere for the store's lifetime (see
  /// retain). Throws sol::Error when the name is taken or the byte count does
  /// not match dtype and shape.
  void addView(std::string name, DType dtype, std::vector<int64_t> shape,
               std::span<const std::byte> bytes);
  /// Adds a tensor computed when it is read, `sharded` when its bytes
  /// depend on the rank read. Throws when the name is taken.
  void addProduced(std::string name, DType dtype, std::vector<int64_t> shape,
                   Producer produce, bool sharded = false);
  /// Keeps `owner` (a mapped file, a parsed model) alive as long as the
  /// store, so views into it stay valid.
  void retain(std::shared_ptr<const void> owner);

  bool contains(std::string_view name) const;
  /// The tensor called `name`; throws sol::Error naming it when absent.
  const Tensor &get(std::string_view name) const;
  /// Streams the bytes of `name` that rank `rank` holds to `sink` (a view in
  /// pieces of at most 64 MB, a producer as it writes). Throws when a
  /// producer writes a byte count other than the tensor's.
  void read(std::string_view name, const ByteSink &sink, int rank = 0) const;
  /// The bytes of `name` in one piece: the view itself, or a producer's
  /// output collected into `scratch`.
  std::span<const std::byte> contiguous(std::string_view name,
                                        std::vector<std::byte> &scratch,
                                        int rank = 0) const;
  /// The values of a f32, f16 or bf16 tensor as float32; throws sol::Error
  /// for other dtypes.
  std::vector<float> readFloat(std::string_view name, int rank = 0) const;
  /// Every name, sorted.
  std::vector<std::string> names() const;

private:
  std::map<std::string, Tensor, std::less<>> tensors_;
  std::vector<std::shared_ptr<const void>> owners_;
};

} // namespace sol

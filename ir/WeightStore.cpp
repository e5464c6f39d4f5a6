//===- WeightStore.cpp - The tensors a sol module's weights name ----------===//
#include "ir/WeightStore.h"

#include "runtime/support/Error.h"
#include "runtime/support/ParallelChunks.h"

#include <algorithm>
#include <cstring>

namespace sol {

int64_t WeightStore::Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

uint64_t WeightStore::Tensor::byteSize() const {
  std::optional<uint64_t> bytes =
      dtypeStorageBytes(dtype, static_cast<uint64_t>(numElements()));
  if (!bytes)
    fail("weight ", name, ": its byte size overflows");
  return *bytes;
}

void WeightStore::addView(std::string name, DType dtype,
                          std::vector<int64_t> shape,
                          std::span<const std::byte> bytes) {
  Tensor t{name, dtype, std::move(shape), bytes, {}};
  if (t.byteSize() != bytes.size())
    fail("weight ", name, " has ", bytes.size(), " bytes, but ",
         dtypeName(dtype), " of its shape needs ", t.byteSize());
  if (!tensors_.emplace(name, std::move(t)).second)
    fail("the weight store already holds a tensor called ", name);
}

void WeightStore::addProduced(std::string name, DType dtype,
                              std::vector<int64_t> shape, Producer produce,
                              bool sharded) {
  Tensor t{name, dtype, std::move(shape), {}, std::move(produce), sharded};
  (void)t.byteSize(); // checks for overflow
  if (!tensors_.emplace(name, std::move(t)).second)
    fail("the weight store already holds a tensor called ", name);
}

void WeightStore::retain(std::shared_ptr<const void> owner) {
  owners_.push_back(std::move(owner));
}

bool WeightStore::contains(std::string_view name) const {
  return tensors_.find(name) != tensors_.end();
}

const WeightStore::Tensor &WeightStore::get(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    fail("the weight store has no tensor called ", name);
  return it->second;
}

void WeightStore::read(std::string_view name, const ByteSink &sink,
                       int rank) const {
  const Tensor &t = get(name);
  if (!t.produce) {
    // Pieces of 64 MB keep a caller's progress line moving.
    constexpr size_t kPiece = size_t(64) << 20;
    for (size_t off = 0; off < t.bytes.size(); off += kPiece)
      sink(t.bytes.subspan(off, std::min(kPiece, t.bytes.size() - off)));
    return;
  }
  uint64_t written = 0;
  t.produce(
      *this,
      [&](std::span<const std::byte> piece) {
        written += piece.size();
        sink(piece);
      },
      rank);
  if (written != t.byteSize())
    fail("internal error: the producer of weight ", t.name, " wrote ", written,
         " bytes, expected ", t.byteSize());
}

std::span<const std::byte>
WeightStore::contiguous(std::string_view name, std::vector<std::byte> &scratch,
                        int rank) const {
  const Tensor &t = get(name);
  if (!t.produce)
    return t.bytes;
  scratch.clear();
  scratch.reserve(t.byteSize());
  read(
      name,
      [&](std::span<const std::byte> piece) {
        scratch.insert(scratch.end(), piece.begin(), piece.end());
      },
      rank);
  return scratch;
}

std::vector<float> WeightStore::readFloat(std::string_view name,
                                          int rank) const {
  const DType dtype = get(name).dtype;
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    fail("weight ", name, " is ", dtypeName(dtype),
         ", not a float tensor (f32, f16 or bf16)");
  const size_t bytes = dtypeBits(dtype) / 8;
  // Sized once: growing piece by piece would copy gigabytes.
  std::vector<float> values(get(name).byteSize() / bytes);
  size_t at = 0;
  read(
      name,
      [&](std::span<const std::byte> piece) {
        const size_t count = piece.size() / bytes;
        if (at + count > values.size())
          fail("internal error: weight ", name, " holds more than its ",
               values.size(), " values");
        if (dtype == DType::F32) {
          std::memcpy(&values[at], piece.data(), 4 * count);
          at += count;
          return;
        }
        // Calibration reads every weight of a model this way: convert on
        // every core.
        parallelChunks(static_cast<int64_t>(count), static_cast<int64_t>(count),
                       [&](int64_t begin, int64_t end) {
                         for (int64_t i = begin; i < end; ++i) {
                           uint16_t h;
                           std::memcpy(&h, piece.data() + 2 * i, 2);
                           values[at + i] = dtype == DType::F16
                                                ? halfToFloat(h)
                                                : bf16ToFloat(h);
                         }
                       });
        at += count;
      },
      rank);
  return values;
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto &[name, t] : tensors_)
    out.push_back(name);
  return out;
}

} // namespace sol

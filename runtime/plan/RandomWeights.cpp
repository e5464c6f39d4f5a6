//===- RandomWeights.cpp - The weights of a plan without them -------------===//
#include "runtime/plan/RandomWeights.h"

#include "runtime/plan/PlanDType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"
#include "runtime/support/ParallelChunks.h"

#include <climits>
#include <cstdint>
#include <cstring>

namespace sol {
namespace {

/// splitmix64: a counter-based generator, so chunks fill in parallel and
/// every value depends only on (seed, position).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A uniform value in [-1, 1) from 24 random bits.
float uniform(uint64_t bits) {
  return static_cast<float>(bits & 0xFFFFFF) / float(1 << 23) - 1.0f;
}

void writeElement(DType dtype, bool matrix, uint64_t bits, std::byte *out) {
  switch (dtype) {
  case DType::BF16:
  case DType::F16: {
    const float v =
        matrix ? 0.02f * uniform(bits) : 1.0f + 0.02f * uniform(bits);
    const uint16_t h = dtype == DType::BF16 ? floatToBf16(v) : floatToHalf(v);
    std::memcpy(out, &h, 2);
    return;
  }
  case DType::F32: {
    const float v = 0.01f * (1.0f + 0.5f * uniform(bits));
    std::memcpy(out, &v, 4);
    return;
  }
  case DType::F8E4M3: {
    // Sign, exponent 1..7 (magnitudes 2^-6 .. 2), any mantissa.
    const unsigned sign = bits & 1, exponent = 1 + (bits >> 1) % 7,
                   mantissa = (bits >> 4) & 7;
    *out = std::byte(sign << 7 | exponent << 3 | mantissa);
    return;
  }
  case DType::I8:
    *out = std::byte(static_cast<uint8_t>(static_cast<int>(bits % 255) - 127));
    return;
  case DType::U8:
    *out = std::byte(8);
    return;
  case DType::I4:
    *out = std::byte(bits & 0xFF); // two codes 0..15
    return;
  default:
    fail("a plan with random weights has a weight of dtype ", dtype,
         ", which has no random values");
  }
}

} // namespace

uint64_t weightStorageBytes(const fb::Weight &w) {
  const std::string name = w.name() ? w.name()->str() : "?";
  uint64_t elements = 1;
  if (w.shape())
    for (int64_t d : *w.shape()) {
      if (d < 0)
        fail("weight ", name, " has a negative dimension");
      if (d > 0 && elements > UINT64_MAX / static_cast<uint64_t>(d))
        fail("weight ", name, " is too large");
      elements *= static_cast<uint64_t>(d);
    }
  const std::optional<uint64_t> bytes =
      dtypeStorageBytes(toDType(w.dtype()), elements);
  if (!bytes)
    fail("weight ", name, " is too large");
  return *bytes;
}

uint64_t randomWeightSeed(const fb::Weight &w, int index, int rank) {
  return mix(static_cast<uint64_t>(index) * 0x100000001b3ULL +
             static_cast<uint64_t>(w.rank_data() ? rank + 1 : 0));
}

void fillRandomWeight(DType dtype, bool matrix, uint64_t seed,
                      std::span<std::byte> out) {
  const size_t width = dtype == DType::I4 ? 1 : dtypeBits(dtype) / 8;
  const int64_t count = static_cast<int64_t>(out.size() / width);
  parallelChunks(count, count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      writeElement(dtype, matrix, mix(seed ^ static_cast<uint64_t>(i)),
                   out.data() + static_cast<size_t>(i) * width);
  });
}

std::span<const std::byte>
weightBytesOrRandom(const PlanFile &file, int index, int rank,
                    std::vector<std::byte> &scratch) {
  const fb::Plan &plan = file.plan();
  if (!plan.random_weights())
    return file.weightBytes(index, rank);
  (void)file.weightBytes(index, rank); // range checks
  const fb::Weight *w = plan.weights()->Get(static_cast<uint32_t>(index));
  const uint64_t bytes = weightStorageBytes(*w);
  scratch.resize(bytes);
  fillRandomWeight(toDType(w->dtype()), w->shape() && w->shape()->size() >= 2,
                   randomWeightSeed(*w, index, rank), scratch);
  return scratch;
}

} // namespace sol

//===- RandomWeightsEmulationTest.cpp - random_weights on the CPU ---------===//
//
// codegen/kernels/RandomWeights.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation must write, for every element kind, the
// bytes the host's fillRandomWeight (runtime/plan/RandomWeights.cpp) makes
// from the same seed: a plan without weight bytes then holds the same
// weights on the GPU as on the CPU. An f32 norm weight's bf16 copy is the
// host value rounded to bf16. Outputs start as poison, and a guard element
// after the last stays untouched.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "RandomWeights.cuh"

#include "runtime/plan/RandomWeights.h"
#include "runtime/support/DType.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using namespace sol::kernels;
using sol::DType;

constexpr long long kCount = 3000; // several grid-stride rounds
constexpr unsigned long long kSeed = 0x1234abcd5678ef01ULL;

/// random_weights over `count` elements of `width` bytes, `kind`; one
/// poisoned guard element after them.
std::vector<std::byte> device(int kind, std::size_t width) {
  std::vector<std::byte> out((kCount + 1) * width, std::byte{0xA5});
  RandomWeightsArgs args;
  args.out = out.data();
  args.seed = kSeed;
  args.count = kCount;
  args.kind = kind;
  cuda_emulation::launch(3, 256, [&] { random_weights(args); });
  for (std::size_t i = kCount * width; i < out.size(); ++i)
    EXPECT_EQ(out[i], std::byte{0xA5}) << "guard byte written";
  out.resize(kCount * width);
  return out;
}

std::vector<std::byte> host(DType dtype, bool matrix, std::size_t width) {
  std::vector<std::byte> out(kCount * width);
  sol::fillRandomWeight(dtype, matrix, kSeed, out);
  return out;
}

TEST(RandomWeightsEmulation, DeviceBytesAreTheHosts) {
  struct Case {
    int kind;
    DType dtype;
    bool matrix;
    std::size_t width;
  };
  for (const Case &c : {Case{kRandomBf16Matrix, DType::BF16, true, 2},
                        Case{kRandomBf16Vector, DType::BF16, false, 2},
                        Case{kRandomF32, DType::F32, false, 4},
                        Case{kRandomE4m3, DType::F8E4M3, true, 1},
                        Case{kRandomI8, DType::I8, true, 1},
                        Case{kRandomU8, DType::U8, true, 1},
                        Case{kRandomI4, DType::I4, true, 1}}) {
    SCOPED_TRACE(c.kind);
    const std::vector<std::byte> d = device(c.kind, c.width);
    const std::vector<std::byte> h = host(c.dtype, c.matrix, c.width);
    EXPECT_EQ(std::memcmp(d.data(), h.data(), d.size()), 0);
    if (c.kind != kRandomU8) // E8M0 scales are one value by design
      EXPECT_NE(std::memcmp(d.data(), d.data() + c.width, c.width), 0)
          << "the first two elements are equal";
  }
}

TEST(RandomWeightsEmulation, NormWeightAsBf16IsTheHostValueRounded) {
  const std::vector<std::byte> d = device(kRandomF32AsBf16, 2);
  const std::vector<std::byte> h = host(DType::F32, false, 4);
  for (long long i = 0; i < kCount; ++i) {
    float f;
    std::memcpy(&f, h.data() + i * 4, 4);
    uint16_t want = sol::floatToBf16(f), got;
    std::memcpy(&got, d.data() + i * 2, 2);
    ASSERT_EQ(got, want) << "element " << i;
  }
}

} // namespace

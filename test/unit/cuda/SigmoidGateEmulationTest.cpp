//===- SigmoidGateEmulationTest.cpp - sigmoid_gate on the CPU -------------===//
//
// codegen/kernels/SigmoidGate.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation, against a float64 reference that rounds
// where the kernel documents (the gate's dot product and its sigmoid to
// bf16, then the product): a hidden size that leaves threads idle, one
// that gives each thread two vectors, and rows past `rows` left alone.
// The outputs start as NaN, so an element the kernel does not write fails.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "SigmoidGate.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

Bf16 toBf16(float f) { return __float2bfloat16_rn(f); }
float val(Bf16 v) { return __bfloat162float(v); }
float bf(double f) { return val(toBf16(static_cast<float>(f))); }

constexpr Bf16 kNan{0x7fc1};

template <int D, int H> void check(int rows, int allocated) {
  std::mt19937 rng(D + H);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  auto random = [&](std::size_t n, float scale) {
    std::vector<Bf16> v(n);
    for (Bf16 &x : v)
      x = toBf16(scale * d(rng));
    return v;
  };
  const std::vector<Bf16> value =
      random(static_cast<std::size_t>(allocated) * D, 4.0f);
  const std::vector<Bf16> in =
      random(static_cast<std::size_t>(allocated) * H, 1.0f);
  const std::vector<Bf16> weight = random(H, 0.3f);
  std::vector<Bf16> out(static_cast<std::size_t>(allocated) * D, kNan);
  SigmoidGateArgs args;
  args.out = out.data();
  args.value = value.data();
  args.in = in.data();
  args.weight = weight.data();
  args.rows = rows;
  cuda_emulation::launch(rows, kSigmoidGateThreads,
                         [&] { sigmoid_gate<D, H>(args); });
  for (int r = 0; r < allocated; ++r) {
    double z = 0;
    for (int i = 0; i < H; ++i)
      z += double(val(in[r * H + i])) * val(weight[i]);
    const float g = bf(1.0 / (1.0 + std::exp(-double(bf(z)))));
    for (int j = 0; j < D; ++j) {
      SCOPED_TRACE(testing::Message() << "row " << r << " column " << j);
      const float got = val(out[r * D + j]);
      if (r >= rows) {
        EXPECT_TRUE(std::isnan(got)); // not this launch's row
        continue;
      }
      const float want = bf(double(g) * val(value[r * D + j]));
      // The kernel sums the dot product in float32 in another order: its
      // bf16 rounding of z may land one unit away.
      EXPECT_NEAR(got, want, 0.01 * std::abs(want) + 1e-6);
    }
  }
}

TEST(SigmoidGateEmulation, NarrowHidden) { check<64, 40>(3, 4); }

TEST(SigmoidGateEmulation, TwoVectorsPerThread) { check<1032, 2048>(2, 2); }

} // namespace

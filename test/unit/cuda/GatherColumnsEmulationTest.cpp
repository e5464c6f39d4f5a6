//===- GatherColumnsEmulationTest.cpp - gather_columns on the CPU ---------===//
//
// codegen/kernels/GatherColumns.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation: every output column is its input
// column, bit for bit, for a width below one block's threads and one that
// gives each thread several columns; rows past `rows` are left alone (the
// outputs start as NaN, so a column the kernel does not write fails).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "GatherColumns.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace {

using namespace sol::kernels;
using Bf16 = __nv_bfloat16;

constexpr Bf16 kNan{0x7fc1};

uint16_t bits(Bf16 v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}

template <int W> void check(int rows, int allocated) {
  std::mt19937 rng(W);
  std::vector<int> columns(W);
  std::iota(columns.begin(), columns.end(), 0);
  std::shuffle(columns.begin(), columns.end(), rng);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<Bf16> in(static_cast<std::size_t>(allocated) * W);
  for (Bf16 &v : in)
    v = __float2bfloat16_rn(d(rng));
  std::vector<Bf16> out(in.size(), kNan);
  GatherColumnsArgs args;
  args.out = out.data();
  args.in = in.data();
  args.columns = columns.data();
  args.rows = rows;
  cuda_emulation::launch(allocated, kGatherColumnsThreads,
                         [&] { gather_columns<W>(args); });
  for (int r = 0; r < allocated; ++r)
    for (int j = 0; j < W; ++j) {
      const Bf16 got = out[static_cast<std::size_t>(r) * W + j];
      const uint16_t want =
          r < rows ? bits(in[static_cast<std::size_t>(r) * W + columns[j]])
                   : bits(kNan);
      ASSERT_EQ(bits(got), want) << "row " << r << " column " << j;
    }
}

TEST(GatherColumnsEmulation, FewColumns) { check<96>(3, 4); }
TEST(GatherColumnsEmulation, ManyColumnsPerThread) { check<1000>(2, 3); }

} // namespace

//===- CalibrationAttentionEmulationTest.cpp - calib_attention_tc ---------===//
//
// codegen/kernels/CalibrationAttention.cuh (through Calibration.cuh, as
// NVRTC compiles it) as host C++ against the thread-per-CUDA-thread
// emulation, with the ldmatrix and bf16 mma stand-ins. The kernel rounds q,
// k, v and the softmax weights to bf16, so it is compared with attention in
// double twice:
//  * on the bf16-rounded q, k and v, where only the weights' rounding
//    (relative 2^-9 each) and fp32 sums remain: every (token, head) row
//    within kRowBound of its norm, so that a key missing from or added to
//    a row's softmax fails even in rows of a hundred keys;
//  * on the float inputs (what calib_attention computes), within
//    kExactBound as a whole (Frobenius norms), for scores of moderate size
//    (a bf16 q . k moves a score by about |score| 2^-8).
// Outputs start as NaN (every element must be written) and shared memory
// as bf16 NaNs (no read of an unwritten tile element may reach an output).
// Each case also runs on a grid smaller than calibAttentionTcBlocks(), so
// that blocks take more than one block tile.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "Calibration.cuh"

#include "CalibrationAttentionReference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace sol::kernels;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
// Per (token, head) row against double attention on the bf16-rounded
// inputs: the bf16 weights' rounding, averaged over a row's keys.
constexpr double kRowBound = 5e-3;
// The whole output against double attention on the float inputs.
constexpr double kExactBound = 1e-2;

struct Case {
  int heads, kvHeads, dim;
  std::vector<int> lengths; // of the sequences, in order
  int window;
  float scale, softcap;
  // k row t of a sequence times 1 + keyGrowth * (t - start): later keys
  // score higher, so that rows' running maxima keep rising (rescales).
  float keyGrowth = 0.0f;
  bool checkExact = true;
  unsigned smallGrid = 3;
};

std::vector<float> uniform(std::mt19937 &rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

std::vector<float> roundedToBf16(std::vector<float> v) {
  for (float &x : v)
    x = roundToBf16(x);
  return v;
}

// calib_attention's definition in double.
std::vector<double> reference(const Case &c, const std::vector<int> &seqStart,
                              const std::vector<float> &q,
                              const std::vector<float> &k,
                              const std::vector<float> &v) {
  return sol::test::referenceCalibAttention(
      {c.heads, c.kvHeads, c.dim, c.window, c.scale, c.softcap}, seqStart, q,
      k, v);
}

template <int HD>
void launchTc(const CalibAttentionArgs &args, unsigned blocks) {
  // 0xff bytes: bf16 NaNs (and float NaNs in the staging tile).
  std::vector<unsigned char> shared(calibAttentionTcSharedBytes(HD), 0xff);
  cuda_emulation::dynamicShared = shared.data();
  cuda_emulation::launch(static_cast<int>(blocks), kCalibAttentionTcThreads,
                         [&] { calib_attention_tc<HD>(args); });
  cuda_emulation::dynamicShared = nullptr;
}

void launchTc(const CalibAttentionArgs &args, unsigned blocks) {
  switch (args.dim) {
  case 16:
    return launchTc<16>(args, blocks);
  case 48:
    return launchTc<48>(args, blocks);
  case 64:
    return launchTc<64>(args, blocks);
  case 80:
    return launchTc<80>(args, blocks);
  case 96:
    return launchTc<96>(args, blocks);
  case 112:
    return launchTc<112>(args, blocks);
  case 128:
    return launchTc<128>(args, blocks);
  case 144:
    return launchTc<144>(args, blocks);
  case 208:
    return launchTc<208>(args, blocks);
  case 256:
    return launchTc<256>(args, blocks);
  default:
    FAIL() << "no instance for head dim " << args.dim;
  }
}

void check(const Case &c) {
  SCOPED_TRACE(testing::Message()
               << c.heads << " heads, " << c.kvHeads << " kv heads, dim "
               << c.dim << ", window " << c.window << ", softcap " << c.softcap
               << ", key growth " << c.keyGrowth);
  ASSERT_TRUE(calibAttentionTcSupports(c.dim));
  std::mt19937 rng(c.dim * 7 + c.heads + c.window);
  std::vector<int> seqStart;
  for (int len : c.lengths) {
    const int start = static_cast<int>(seqStart.size());
    seqStart.insert(seqStart.end(), len, start);
  }
  const int tokens = static_cast<int>(seqStart.size());
  const int qCols = c.heads * c.dim, kvCols = c.kvHeads * c.dim;
  const std::vector<float> q = uniform(rng, tokens * qCols, -1, 1);
  std::vector<float> k = uniform(rng, tokens * kvCols, -1, 1);
  const std::vector<float> v = uniform(rng, tokens * kvCols, -1, 1);
  for (int t = 0; t < tokens; ++t)
    for (int i = 0; i < kvCols; ++i)
      k[t * kvCols + i] *= 1.0f + c.keyGrowth * (t - seqStart[t]);
  const std::vector<double> exact = reference(c, seqStart, q, k, v);
  const std::vector<double> rounded = reference(
      c, seqStart, roundedToBf16(q), roundedToBf16(k), roundedToBf16(v));

  std::vector<unsigned> grids = {calibAttentionTcBlocks(tokens, c.heads)};
  if (c.smallGrid && c.smallGrid < grids[0])
    grids.push_back(c.smallGrid);
  for (unsigned blocks : grids) {
    SCOPED_TRACE(testing::Message() << blocks << " blocks");
    std::vector<float> out(static_cast<size_t>(tokens) * qCols, kNan);
    CalibAttentionArgs args;
    args.out = out.data();
    args.q = q.data();
    args.k = k.data();
    args.v = v.data();
    args.seqStart = seqStart.data();
    args.tokens = tokens;
    args.heads = c.heads;
    args.kvHeads = c.kvHeads;
    args.dim = c.dim;
    args.window = c.window;
    args.scale = c.scale;
    args.softcap = c.softcap;
    launchTc(args, blocks);

    double diff = 0.0, norm = 0.0, worstRow = 0.0;
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < c.heads; ++h) {
        double rowDiff = 0.0, rowNorm = 0.0;
        for (int d = 0; d < c.dim; ++d) {
          const size_t i = static_cast<size_t>(t) * qCols + h * c.dim + d;
          ASSERT_TRUE(std::isfinite(out[i]))
              << "token " << t << " head " << h << " column " << d << ": "
              << out[i];
          rowDiff += (out[i] - rounded[i]) * (out[i] - rounded[i]);
          rowNorm += rounded[i] * rounded[i];
          diff += (out[i] - exact[i]) * (out[i] - exact[i]);
          norm += exact[i] * exact[i];
        }
        const double rel = std::sqrt(rowDiff / rowNorm);
        worstRow = std::max(worstRow, rel);
        ASSERT_LE(rel, kRowBound) << "token " << t << " head " << h;
      }
    const double relExact = std::sqrt(diff / norm);
    std::printf("  dim %d, %d/%d heads, %d tokens, %u blocks: worst row %.2e "
                "(bf16 inputs), whole %.2e (float inputs)\n",
                c.dim, c.heads, c.kvHeads, tokens, blocks, worstRow, relExact);
    if (c.checkExact) {
      EXPECT_LE(relExact, kExactBound);
    }
  }
}

TEST(CalibrationAttentionEmulation, Geometry) {
  for (int dim = 16; dim <= 256; dim += 16) {
    EXPECT_TRUE(calibAttentionTcSupports(dim)) << dim;
    // Within sm_90's 227 KB of shared memory a block.
    EXPECT_LE(calibAttentionTcSharedBytes(dim), 227u * 1024) << dim;
    EXPECT_EQ(calibAttentionTcKeys(dim) % 16, 0) << dim;
  }
  EXPECT_FALSE(calibAttentionTcSupports(0));
  EXPECT_FALSE(calibAttentionTcSupports(72));
  EXPECT_FALSE(calibAttentionTcSupports(272));
  EXPECT_EQ(kCalibAttentionTcRows, 64);
  EXPECT_EQ(calibAttentionTcBlocks(64, 8), 8u);
  EXPECT_EQ(calibAttentionTcBlocks(65, 8), 16u);
  EXPECT_EQ(calibAttentionTcBlocks(0, 8), 1u);
  EXPECT_EQ(calibAttentionTcBlocks(61952, 32), 968u * 32u);
}

// Grouped-query heads (4 per kv head), sequences of 23, 14, 1 and 70 tokens
// (108: the last block tile is partial; the 1-token sequence shares a block
// tile and a key tile with both neighbours).
TEST(CalibrationAttentionEmulation, GqaDim64) {
  check({8, 2, 64, {23, 14, 1, 70}, 0, 0.3f, 0.0f});
}

// Multi-head (no grouping) at 80, whose rows are padded rather than
// swizzled; a 1-token sequence first.
TEST(CalibrationAttentionEmulation, MhaDim80) {
  check({3, 3, 80, {1, 37, 90}, 0, 0.25f, 0.0f});
}

// Groups of 3 at 96, a window of 20 shorter than both sequences.
TEST(CalibrationAttentionEmulation, WindowDim96) {
  check({6, 2, 96, {50, 33}, 20, 0.2f, 0.0f});
}

// 128 (Llama's heads), groups of 4, soft-capping, a sequence longer than
// two block tiles beside short ones.
TEST(CalibrationAttentionEmulation, SoftcapDim128) {
  check({4, 1, 128, {130, 1, 45}, 0, 0.15f, 2.0f});
}

// 128 with a window that crosses block tiles and sequence boundaries.
TEST(CalibrationAttentionEmulation, WindowAcrossTilesDim128) {
  check({2, 2, 128, {70, 3, 60}, 40, 0.15f, 0.0f});
}

// 256 (Gemma's heads: K/V staged by cp.async, Q read from shared memory
// per key tile), a window and soft-capping.
TEST(CalibrationAttentionEmulation, WindowSoftcapDim256) {
  check({4, 1, 256, {40, 27, 1}, 16, 0.1f, 1.5f});
}

// Keys growing along the sequence: each row's running max keeps rising
// past the rescale slack. Scores reach the hundreds, where bf16 q and k
// alone move them by more than 1, so only the bf16-input comparison holds.
TEST(CalibrationAttentionEmulation, RisingScoresRescale) {
  Case c{2, 1, 64, {150, 20}, 0, 0.5f, 0.0f, 0.15f};
  c.checkExact = false;
  check(c);
}

// Other multiples of 16: 16 and 48 (padded rows, 64-key tiles), 112 (32-key
// tiles), 144 and 208 (cp.async staging; a tile's float4s do not divide
// evenly among the threads).
TEST(CalibrationAttentionEmulation, OtherHeadDims) {
  for (int dim : {16, 48, 112, 144, 208})
    check({2, 1, dim, {19, 50}, 0, 0.3f, 0.0f});
}

} // namespace

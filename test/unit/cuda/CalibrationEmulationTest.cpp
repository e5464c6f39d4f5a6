//===- CalibrationEmulationTest.cpp - The calibration kernels on the CPU --===//
//
// codegen/kernels/Calibration.cuh compiled as host C++ against the
// thread-per-CUDA-thread emulation. Each kernel is checked against a
// reference written here from passes/TensorEvaluator.cpp's formulas, or, for
// the int4 kernels, against runtime/support/Quantize's functions themselves,
// which they must match bit for bit. Sizes leave partial tiles, and each
// kernel runs with the grid calib*Blocks() gives and with a smaller one, so
// that the grid-stride loops take more than one turn. Outputs start as NaN,
// so an element a kernel does not write fails.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "Calibration.cuh"

#include "CalibrationAttentionReference.h"
#include "runtime/support/Activations.h"
#include "runtime/support/Quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace sol::kernels;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<float> uniform(std::mt19937 &rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

template <typename F> void run(unsigned blocks, F kernel) {
  cuda_emulation::launch(static_cast<int>(blocks), kCalibThreads, kernel);
}

// Within rel * |want| + abs of want (NaN fails).
void expectClose(float got, double want, double rel, double abs) {
  EXPECT_TRUE(std::abs(got - want) <= rel * std::abs(want) + abs)
      << "got " << got << ", want " << want;
}

TEST(CalibrationEmulation, Embedding) {
  std::mt19937 rng(1);
  const int vocab = 11, tokens = 5;
  struct Case {
    int width;
    float scale;
    unsigned blocks;
  };
  for (const auto [width, scale, blocks] :
       {Case{300, 2.5f, calibEmbeddingBlocks(tokens)}, Case{70, 1.0f, 2u}}) {
    const std::vector<float> table = uniform(rng, vocab * width, -2, 2);
    std::vector<int> ids(tokens);
    for (int &id : ids)
      id = static_cast<int>(rng() % vocab);
    std::vector<float> out(tokens * width, kNan);
    CalibEmbeddingArgs args;
    args.out = out.data();
    args.table = table.data();
    args.ids = ids.data();
    args.tokens = tokens;
    args.width = width;
    args.scale = scale;
    run(blocks, [&] { calib_embedding(args); });
    for (int t = 0; t < tokens; ++t)
      for (int c = 0; c < width; ++c)
        ASSERT_EQ(out[t * width + c], table[ids[t] * width + c] * scale)
            << "token " << t << " column " << c;
  }
}

// The CPU's inverseRms (double, in order) and scaling; the kernel sums the
// squares in another order, so the result may differ in the last bit.
TEST(CalibrationEmulation, RmsNormWholeRowsAndHeads) {
  std::mt19937 rng(2);
  const int rows = 5, cols = 256;
  const float eps = 1e-6f;
  for (int group : {cols, 64})
    for (unsigned blocks : {calibRmsNormBlocks(rows, cols, group), 1u}) {
      SCOPED_TRACE(testing::Message()
                   << "group " << group << ", " << blocks << " blocks");
      const std::vector<float> x = uniform(rng, rows * cols, -3, 3);
      const std::vector<float> w = uniform(rng, group, 0.5f, 1.5f);
      std::vector<float> out(rows * cols, kNan);
      CalibRmsNormArgs args;
      args.out = out.data();
      args.x = x.data();
      args.weight = w.data();
      args.rows = rows;
      args.cols = cols;
      args.group = group;
      args.eps = eps;
      run(blocks, [&] { calib_rms_norm(args); });
      for (int t = 0; t < rows; ++t)
        for (int c0 = 0; c0 < cols; c0 += group) {
          const float *src = x.data() + t * cols + c0;
          double sum = 0.0;
          for (int j = 0; j < group; ++j)
            sum += static_cast<double>(src[j]) * src[j];
          const double inv = 1.0 / std::sqrt(sum / group + eps);
          for (int j = 0; j < group; ++j)
            expectClose(out[t * cols + c0 + j],
                        static_cast<float>(src[j] * inv) * w[j], 1e-6, 0);
        }
    }
}

// Exactly the CPU's float operations (no fused multiply-adds).
TEST(CalibrationEmulation, Rope) {
  std::mt19937 rng(3);
  const int tokens = 6, heads = 3, dim = 64, half = dim / 2, positions = 11;
  const std::vector<float> x = uniform(rng, tokens * heads * dim, -2, 2);
  const std::vector<float> cosTable = uniform(rng, positions * half, -1, 1);
  const std::vector<float> sinTable = uniform(rng, positions * half, -1, 1);
  std::vector<int> pos(tokens);
  for (int &p : pos)
    p = static_cast<int>(rng() % positions);
  for (unsigned blocks : {calibRopeBlocks(tokens), 4u}) {
    std::vector<float> out(x.size(), kNan);
    CalibRopeArgs args;
    args.out = out.data();
    args.x = x.data();
    args.cosTable = cosTable.data();
    args.sinTable = sinTable.data();
    args.positions = pos.data();
    args.tokens = tokens;
    args.heads = heads;
    args.dim = dim;
    run(blocks, [&] { calib_rope(args); });
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i) {
          const int lo = (t * heads + h) * dim + i;
          const float c = cosTable[pos[t] * half + i];
          const float s = sinTable[pos[t] * half + i];
          const float x1 = x[lo], x2 = x[lo + half];
          ASSERT_EQ(out[lo], x1 * c - x2 * s) << t << " " << h << " " << i;
          ASSERT_EQ(out[lo + half], x2 * c + x1 * s)
              << t << " " << h << " " << i;
        }
  }
}

struct AttentionCase {
  int heads, kvHeads, dim;
  std::vector<int> lengths; // of the sequences, in order
  int window;
  float scale, softcap;
};

// TensorEvaluator's attendRowBody in double: causal within each sequence,
// the last `window` keys, softcap on the scaled score, exact softmax. With
// smallGrid, once more with that many blocks.
void checkAttention(const AttentionCase &a, unsigned smallGrid = 0) {
  SCOPED_TRACE(testing::Message() << a.heads << " heads, " << a.kvHeads
                                  << " kv heads, dim " << a.dim << ", window "
                                  << a.window << ", softcap " << a.softcap);
  std::mt19937 rng(a.dim + a.heads + a.window);
  std::vector<int> seqStart;
  for (int len : a.lengths) {
    const int start = static_cast<int>(seqStart.size());
    seqStart.insert(seqStart.end(), len, start);
  }
  const int tokens = static_cast<int>(seqStart.size());
  const int qCols = a.heads * a.dim, kvCols = a.kvHeads * a.dim;
  const std::vector<float> q = uniform(rng, tokens * qCols, -1, 1);
  const std::vector<float> k = uniform(rng, tokens * kvCols, -1, 1);
  const std::vector<float> v = uniform(rng, tokens * kvCols, -1, 1);
  const std::vector<double> want = sol::test::referenceCalibAttention(
      {a.heads, a.kvHeads, a.dim, a.window, a.scale, a.softcap}, seqStart, q, k,
      v);
  std::vector<unsigned> grids = {calibAttentionBlocks(tokens, a.heads)};
  if (smallGrid)
    grids.push_back(smallGrid);
  for (unsigned blocks : grids) {
    std::vector<float> out(tokens * qCols, kNan);
    CalibAttentionArgs args;
    args.out = out.data();
    args.q = q.data();
    args.k = k.data();
    args.v = v.data();
    args.seqStart = seqStart.data();
    args.tokens = tokens;
    args.heads = a.heads;
    args.kvHeads = a.kvHeads;
    args.dim = a.dim;
    args.window = a.window;
    args.scale = a.scale;
    args.softcap = a.softcap;
    run(blocks, [&] { calib_attention(args); });
    for (int i = 0; i < tokens * qCols; ++i) {
      SCOPED_TRACE(testing::Message()
                   << "token " << i / qCols << " column " << i % qCols << ", "
                   << blocks << " blocks");
      expectClose(out[i], want[i], 1e-4, 1e-5);
      if (testing::Test::HasFailure())
        return;
    }
  }
}

// Grouped-query heads (4 per kv head), two sequences of other lengths than
// the tiles, no window or cap.
TEST(CalibrationEmulation, AttentionGqaTwoSequences) {
  checkAttention({8, 2, 64, {23, 14}, 0, 0.3f, 0.0f});
}

// A window shorter than both sequences, with a softcap, one kv head.
TEST(CalibrationEmulation, AttentionWindowAndSoftcap) {
  checkAttention({4, 1, 128, {19, 17}, 5, 0.4f, 2.0f}, 3);
}

// The wide-head path (two float4 slices a lane, two passes of two queries).
TEST(CalibrationEmulation, AttentionHeadDim256) {
  checkAttention({2, 2, 256, {9, 12}, 0, 0.1f, 1.5f}, 1);
}

// Head dims that leave lanes without a slice, a sequence of several chunks.
TEST(CalibrationEmulation, AttentionOddHeadDims) {
  checkAttention({3, 1, 80, {7, 30}, 11, 0.25f, 0.0f});
  checkAttention({2, 1, 96, {45}, 0, 0.2f, 0.0f});
}

TEST(CalibrationEmulation, Elementwise) {
  std::mt19937 rng(5);
  const int cols = 37;
  const unsigned long long count = 27 * cols;
  const std::vector<float> a = uniform(rng, count, -6, 6);
  const std::vector<float> b = uniform(rng, count, -2, 2);
  for (int op : {kCalibAdd, kCalibSwiglu, kCalibGegelu, kCalibAddBias})
    for (unsigned blocks : {calibElementwiseBlocks(count), 2u}) {
      SCOPED_TRACE(testing::Message()
                   << "op " << op << ", " << blocks << " blocks");
      std::vector<float> out(count, kNan);
      CalibElementwiseArgs args;
      args.out = out.data();
      args.a = a.data();
      args.b = b.data();
      args.count = count;
      args.cols = cols;
      args.op = op;
      if (op == kCalibAddBias) {
        out = a; // in place, as the host adds a linear's bias
        args.a = out.data();
      }
      run(blocks, [&] { calib_elementwise(args); });
      for (unsigned long long i = 0; i < count; ++i) {
        switch (op) {
        case kCalibAdd:
          ASSERT_EQ(out[i], a[i] + b[i]) << i;
          break;
        case kCalibAddBias:
          ASSERT_EQ(out[i], a[i] + b[i % cols]) << i;
          break;
        case kCalibSwiglu:
          expectClose(out[i], sol::silu(a[i]) * b[i], 1e-5, 0);
          break;
        case kCalibGegelu:
          expectClose(out[i], sol::geluTanh(a[i]) * b[i], 1e-5, 0);
          break;
        }
      }
    }
}

TEST(CalibrationEmulation, SigmoidGate) {
  std::mt19937 rng(6);
  const int rows = 3, valueCols = 300, inCols = 70;
  const std::vector<float> value = uniform(rng, rows * valueCols, -4, 4);
  const std::vector<float> in = uniform(rng, rows * inCols, -1, 1);
  const std::vector<float> w = uniform(rng, inCols, -0.5f, 0.5f);
  for (unsigned blocks : {calibSigmoidGateBlocks(rows), 2u}) {
    std::vector<float> out(rows * valueCols, kNan);
    CalibSigmoidGateArgs args;
    args.out = out.data();
    args.value = value.data();
    args.in = in.data();
    args.weight = w.data();
    args.rows = rows;
    args.valueCols = valueCols;
    args.inCols = inCols;
    run(blocks, [&] { calib_sigmoid_gate(args); });
    for (int r = 0; r < rows; ++r) {
      double z = 0.0;
      for (int i = 0; i < inCols; ++i)
        z += static_cast<double>(in[r * inCols + i]) * w[i];
      const double g = 1.0 / (1.0 + std::exp(-z));
      for (int j = 0; j < valueCols; ++j)
        expectClose(out[r * valueCols + j], value[r * valueCols + j] * g, 1e-5,
                    1e-7);
    }
  }
}

// Two column tiles and two row tiles, added to what sums held.
TEST(CalibrationEmulation, ColumnAbsSum) {
  std::mt19937 rng(7);
  const int rows = 300, cols = 270;
  const std::vector<float> x = uniform(rng, rows * cols, -3, 3);
  for (unsigned blocks : {calibColumnAbsSumBlocks(rows, cols), 1u}) {
    std::vector<double> sums(cols, 1.5);
    CalibColumnAbsSumArgs args;
    args.sums = sums.data();
    args.x = x.data();
    args.rows = rows;
    args.cols = cols;
    run(blocks, [&] { calib_column_abs_sum(args); });
    for (int c = 0; c < cols; ++c) {
      double want = 0.0;
      for (int r = 0; r < rows; ++r)
        want += std::fabs(x[r * cols + c]);
      EXPECT_NEAR(sums[c], 1.5 + want, 1e-12 * want) << c;
    }
  }
}

TEST(CalibrationEmulation, SquaredError) {
  std::mt19937 rng(8);
  const unsigned long long count = 1500;
  const std::vector<float> a = uniform(rng, count, -2, 2);
  const std::vector<float> b = uniform(rng, count, -2, 2);
  double want = 0.25;
  for (unsigned long long i = 0; i < count; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    want += d * d;
  }
  for (unsigned blocks : {calibSquaredErrorBlocks(count), 3u}) {
    double sum = 0.25;
    CalibSquaredErrorArgs args;
    args.sum = &sum;
    args.a = a.data();
    args.b = b.data();
    args.count = count;
    run(blocks, [&] { calib_squared_error(args); });
    EXPECT_NEAR(sum, want, 1e-12 * want);
  }
}

// quantizeInt4 + dequantize of w * s, then / s, bit for bit: groups of
// mixed signs, all positive, all zero, constant.
TEST(CalibrationEmulation, AwqCandidateIsTheCpuRoundTrip) {
  std::mt19937 rng(9);
  struct Shape {
    int rows, cols, group;
  };
  for (const Shape &shape : {Shape{7, 192, 64}, Shape{5, 256, 256},
                             Shape{9, 96, 32}, Shape{4, 100, 64}}) {
    const int rows = shape.rows, cols = shape.cols, group = shape.group;
    const bool quantize = cols % group == 0;
    std::vector<float> w = uniform(rng, rows * cols, -1, 1);
    for (int c = 0; c < cols; ++c) {
      w[cols + c] = std::abs(w[cols + c]); // row 1: positive
      w[2 * cols + c] = 0.0f;              // row 2: zero
      w[3 * cols + c] = 0.375f;            // row 3: constant
    }
    const std::vector<float> s = uniform(rng, cols, 0.25f, 3.0f);
    std::vector<float> want(rows * cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        want[r * cols + c] = w[r * cols + c] * s[c];
    if (quantize)
      sol::quant::dequantize(sol::quant::quantizeInt4(want, rows, cols, group),
                             want);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        want[r * cols + c] /= s[c];
    for (unsigned blocks : {calibAwqCandidateBlocks(rows, cols, group), 1u}) {
      SCOPED_TRACE(testing::Message()
                   << rows << " x " << cols << " in groups of " << group << ", "
                   << blocks << " blocks");
      std::vector<bf16> out(rows * cols, __float2bfloat16_rn(kNan));
      CalibAwqCandidateArgs args;
      args.out = out.data();
      args.weight = w.data();
      args.scales = s.data();
      args.rows = rows;
      args.cols = cols;
      args.group = group;
      args.quantize = quantize;
      run(blocks, [&] { calib_awq_candidate(args); });
      // The round trip in float as the CPU's, then rounded once to bf16.
      for (int i = 0; i < rows * cols; ++i)
        ASSERT_EQ(__bfloat16_as_ushort(out[i]),
                  __bfloat16_as_ushort(__float2bfloat16_rn(want[i])))
            << "row " << i / cols << " column " << i % cols;
    }
  }
}

TEST(CalibrationEmulation, ToBf16RoundsToNearestEven) {
  std::mt19937 rng(10);
  std::vector<float> in = uniform(rng, 1000, -5, 5);
  in[0] = 1.0f + 1.0f / 256; // a tie: rounds to the even 1.0
  in[1] = 1.0f + 3.0f / 256; // a tie: rounds up to the even 1 + 4/256
  in[2] = 0.0f;
  in[3] = -3.0e38f;
  for (unsigned blocks :
       {calibElementwiseBlocks(static_cast<unsigned long long>(in.size())),
        1u}) {
    std::vector<bf16> out(in.size(), __float2bfloat16_rn(kNan));
    CalibToBf16Args args;
    args.out = out.data();
    args.in = in.data();
    args.count = in.size();
    run(blocks, [&] { calib_to_bf16(args); });
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_EQ(__bfloat16_as_ushort(out[i]),
                __bfloat16_as_ushort(__float2bfloat16_rn(in[i])))
          << i;
    EXPECT_EQ(__bfloat162float(out[0]), 1.0f);
    EXPECT_EQ(__bfloat162float(out[1]), 1.0f + 4.0f / 256);
  }
}

// A mixture's expert: its tokens' rows gathered in bf16 (repeated and
// unordered rows allowed), and its outputs added back times their weights
// as the CPU's mixture adds them (w * y rounded, then added).
TEST(CalibrationEmulation, GatherRowsRoundsTheRowsToBf16) {
  std::mt19937 rng(11);
  const int rows = 9, cols = 300;
  const std::vector<float> x = uniform(rng, rows * cols, -3, 3);
  const std::vector<int> pick = {7, 0, 3, 3, 8};
  const int count = static_cast<int>(pick.size());
  for (unsigned blocks : {calibRowBlocks(count), 2u}) {
    std::vector<bf16> out(count * cols, __float2bfloat16_rn(kNan));
    CalibGatherRowsArgs args;
    args.out = out.data();
    args.x = x.data();
    args.rows = pick.data();
    args.count = count;
    args.cols = cols;
    run(blocks, [&] { calib_gather_rows(args); });
    for (int i = 0; i < count; ++i)
      for (int c = 0; c < cols; ++c)
        ASSERT_EQ(
            __bfloat16_as_ushort(out[i * cols + c]),
            __bfloat16_as_ushort(__float2bfloat16_rn(x[pick[i] * cols + c])))
            << i << ", " << c;
  }
}

TEST(CalibrationEmulation, ScatterAddRowsIsTheCpuMixtureSum) {
  std::mt19937 rng(12);
  const int rows = 8, cols = 300;
  const std::vector<float> start = uniform(rng, rows * cols, -1, 1);
  const std::vector<int> pick = {6, 1, 4};
  const std::vector<float> weights = {0.25f, 0.6f, 0.15f};
  const int count = static_cast<int>(pick.size());
  const std::vector<float> y = uniform(rng, count * cols, -5, 5);
  for (unsigned blocks : {calibRowBlocks(count), 1u}) {
    std::vector<float> out = start;
    CalibScatterAddRowsArgs args;
    args.out = out.data();
    args.y = y.data();
    args.rows = pick.data();
    args.weights = weights.data();
    args.count = count;
    args.cols = cols;
    run(blocks, [&] { calib_scatter_add_rows(args); });
    std::vector<float> want = start;
    for (int i = 0; i < count; ++i)
      for (int c = 0; c < cols; ++c) {
        volatile float product = weights[i] * y[i * cols + c];
        want[pick[i] * cols + c] += product;
      }
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        ASSERT_EQ(out[r * cols + c], want[r * cols + c]) << r << ", " << c;
  }
}

// searchInt4Clip's Gram matrices: float sums in row order, exactly.
std::vector<float> cpuGram(const std::vector<float> &x, int rows, int cols,
                           int group) {
  std::vector<float> gram(cols / group * group * group, 0.0f);
  for (int g = 0; g < cols / group; ++g)
    for (int t = 0; t < rows; ++t) {
      const float *xg = x.data() + t * cols + g * group;
      for (int i = 0; i < group; ++i)
        for (int j = 0; j < group; ++j)
          gram[(g * group + i) * group + j] += xg[i] * xg[j];
    }
  return gram;
}

std::vector<float> runGram(const std::vector<float> &x, int rows, int cols,
                           int group, unsigned blocks) {
  std::vector<float> gram(cols / group * group * group, kNan);
  CalibGramArgs args;
  args.gram = gram.data();
  args.x = x.data();
  args.rows = rows;
  args.cols = cols;
  args.group = group;
  run(blocks, [&] { calib_gram(args); });
  return gram;
}

TEST(CalibrationEmulation, GramIsExactAndSymmetric) {
  std::mt19937 rng(10);
  const int rows = 37, cols = 192;
  const std::vector<float> x = uniform(rng, rows * cols, -2, 2);
  for (int group : {64, 96, 32}) {
    const std::vector<float> want = cpuGram(x, rows, cols, group);
    for (unsigned blocks : {calibGramBlocks(cols, group), 2u}) {
      SCOPED_TRACE(testing::Message()
                   << "group " << group << ", " << blocks << " blocks");
      const std::vector<float> gram = runGram(x, rows, cols, group, blocks);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(gram[i], want[i]) << i;
      for (int g = 0; g < cols / group; ++g)
        for (int i = 0; i < group; ++i)
          for (int j = 0; j < i; ++j)
            ASSERT_EQ(gram[(g * group + i) * group + j],
                      gram[(g * group + j) * group + i]);
    }
  }
}

// calib_gram then calib_clip_search give quant::searchInt4Clip's ratios
// exactly (its Gram form: more calibration rows than group members).
TEST(CalibrationEmulation, ClipSearchIsTheCpuSearch) {
  struct Case {
    int n, k, group, xRows;
  };
  const int gridPoints = 20;
  const int candidates = std::max(1, static_cast<int>(gridPoints * 0.5f));
  for (const Case &c : {Case{37, 256, 64, 100}, Case{20, 256, 128, 150},
                        Case{17, 96, 32, 40}, Case{18, 256, 256, 300}}) {
    SCOPED_TRACE(testing::Message() << c.n << " x " << c.k << " in groups of "
                                    << c.group << ", " << c.xRows << " rows");
    std::mt19937 rng(c.n * c.k + c.group);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    // Weights with outliers (clipping pays), inputs of uneven columns.
    std::vector<float> w(c.n * c.k), x(c.xRows * c.k);
    for (float &v : w)
      v = normal(rng) * (rng() % 23 == 0 ? 6.0f : 1.0f);
    for (int t = 0; t < c.xRows; ++t)
      for (int j = 0; j < c.k; ++j)
        x[t * c.k + j] = normal(rng) * (1.0f + (j % 7) * 0.5f);
    const std::vector<float> want = sol::quant::searchInt4Clip(
        w, c.n, c.k, c.group, x, c.xRows, gridPoints);
    const std::vector<float> gram =
        runGram(x, c.xRows, c.k, c.group, calibGramBlocks(c.k, c.group));
    const int groups = c.k / c.group;
    // The grid calibClipSearchBlocks gives, and two blocks for the first.
    std::vector<unsigned> grids = {calibClipSearchBlocks(c.n, c.k, c.group)};
    if (c.group == 64)
      grids.push_back(2);
    for (unsigned blocks : grids) {
      std::vector<float> ratios(c.n * groups, kNan);
      CalibClipSearchArgs args;
      args.ratios = ratios.data();
      args.weight = w.data();
      args.gram = gram.data();
      args.rows = c.n;
      args.cols = c.k;
      args.group = c.group;
      args.gridPoints = gridPoints;
      args.candidates = candidates;
      run(blocks, [&] { calib_clip_search(args); });
      int clipped = 0;
      for (int i = 0; i < c.n * groups; ++i) {
        ASSERT_EQ(ratios[i], want[i])
            << "row " << i / groups << " group " << i % groups << ", " << blocks
            << " blocks";
        clipped += want[i] < 1.0f;
      }
      EXPECT_GT(clipped, 0) << "no group clipped: the case checks little";
    }
  }
}

} // namespace

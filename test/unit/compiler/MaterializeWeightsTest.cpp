//===- MaterializeWeightsTest.cpp - sol-materialize-weights, byte for byte ===//
//
// The lit tests show the IR the pass leaves; these check the bytes its
// producers write into the weight store: concatenation, gate/up
// interleaving, dtype conversion (round to nearest even), transposition
// (of 2-D weights and of stacked experts), strided row slices, reshapes,
// MXFP4 dequantization, a chain of them, and AWQ's scaling and clamping.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstring>

namespace sol {
namespace {

template <typename T> std::span<const std::byte> raw(const std::vector<T> &v) {
  return std::as_bytes(std::span(v));
}

template <typename T>
std::vector<T> readAs(const WeightStore &store, std::string_view name) {
  std::vector<std::byte> bytes;
  store.read(name, [&](std::span<const std::byte> piece) {
    bytes.insert(bytes.end(), piece.begin(), piece.end());
  });
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// Parses `ir`, runs the pass with `store`, returns the weight names the
/// function's sol.linear ops read, in order: each one's weight, then its
/// scales and zero points when `quantOperands`.
std::vector<std::string> materialize(const std::string &ir, WeightStore &store,
                                     bool quantOperands = false) {
  mlir::MLIRContext context;
  context.loadDialect<SolDialect, mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
  EXPECT_TRUE(module);
  mlir::PassManager pm(&context);
  pm.addPass(createSolMaterializeWeights(store));
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  std::vector<std::string> names;
  module->walk([&](LinearOp op) {
    for (mlir::Value v :
         {op.getWeight(), op.getWeightScales(), op.getWeightZeros()}) {
      if (!v || (!quantOperands && v != op.getWeight()))
        continue;
      auto w = v.getDefiningOp<WeightOp>();
      EXPECT_TRUE(w) << "a linear still reads a weight transform";
      if (w)
        names.push_back(w.getName().str());
    }
  });
  return names;
}

TEST(MaterializeWeightsTest, ConcatInterleaveConvertTranspose) {
  // a: 2x2 bf16, b: 1x2 bf16, c: 2x2 f32, t: 2x3 bf16 (an [in, out] weight).
  const std::vector<uint16_t> a = {1, 2, 3, 4}, b = {5, 6},
                              t = {1, 2, 3, 4, 5, 6};
  const std::vector<float> c = {1.0f, -2.5f, 3.0078125f, 1.00390625f};
  WeightStore store;
  store.addView("l.q", DType::BF16, {2, 2}, raw(a));
  store.addView("l.k", DType::BF16, {1, 2}, raw(b));
  store.addView("l.c", DType::F32, {2, 2}, raw(c));
  store.addView("l.t", DType::BF16, {2, 3}, raw(t));
  const std::string ir = R"mlir(
func.func @f(%x: tensor<?x2xbf16>) -> (tensor<?x3xbf16>, tensor<?x4xbf16>, tensor<?x2xbf16>, tensor<?x4xbf16>) {
  %q = sol.weight @l.q : tensor<2x2xbf16>
  %k = sol.weight @l.k : tensor<1x2xbf16>
  %c = sol.weight @l.c : tensor<2x2xf32>
  %t = sol.weight @l.t : tensor<2x3xbf16>
  %qk = sol.concat_weights %q, %k : (tensor<2x2xbf16>, tensor<1x2xbf16>) -> tensor<3x2xbf16>
  %cb = sol.convert_weight %c : tensor<2x2xf32> -> tensor<2x2xbf16>
  %gu = sol.interleave_rows %q, %cb : tensor<2x2xbf16> -> tensor<4x2xbf16>
  %tt = sol.transpose_weight %t : tensor<2x3xbf16> -> tensor<3x2xbf16>
  %tt4 = sol.concat_weights %tt, %k : (tensor<3x2xbf16>, tensor<1x2xbf16>) -> tensor<4x2xbf16>
  %y1 = sol.linear %x, %qk : (tensor<?x2xbf16>, tensor<3x2xbf16>) -> tensor<?x3xbf16>
  %y2 = sol.linear %x, %gu {epilogue = #sol<epilogue swiglu>} : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x2xbf16>
  %y3 = sol.linear %x, %cb : (tensor<?x2xbf16>, tensor<2x2xbf16>) -> tensor<?x2xbf16>
  %y4 = sol.linear %x, %tt4 : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
  return %y1, %y4, %y2, %y4 : tensor<?x3xbf16>, tensor<?x4xbf16>, tensor<?x2xbf16>, tensor<?x4xbf16>
}
)mlir";
  std::vector<std::string> names = materialize(ir, store);
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "l.{q,k}");
  EXPECT_EQ(names[1], "l.{q,c~BF16}");
  EXPECT_EQ(names[2], "l.c~BF16");
  EXPECT_EQ(names[3], "l.{t~t,k}");

  EXPECT_EQ(readAs<uint16_t>(store, names[0]),
            (std::vector<uint16_t>{1, 2, 3, 4, 5, 6}));
  // bf16 of 1, -2.5, 3.0078125 and 1.00390625: the last two lie halfway
  // between two bf16 values and round to the even one (3.0, 1.0).
  const std::vector<uint16_t> converted = {0x3F80, 0xC020, 0x4040, 0x3F80};
  EXPECT_EQ(readAs<uint16_t>(store, names[2]), converted);
  // Row 2i of q, then row i of the converted c.
  EXPECT_EQ(
      readAs<uint16_t>(store, names[1]),
      (std::vector<uint16_t>{1, 2, 0x3F80, 0xC020, 3, 4, 0x4040, 0x3F80}));
  // [2, 3] -> [3, 2], then k's row.
  EXPECT_EQ(readAs<uint16_t>(store, names[3]),
            (std::vector<uint16_t>{1, 4, 2, 5, 3, 6, 5, 6}));
}

// gpt-oss's experts: [E, K, N] transposed per expert, interleaved gate/up
// rows split by strided slices; MXFP4 blocks dequantized.
TEST(MaterializeWeightsTest, StackedExpertsAndMxfp4) {
  // Two experts of [K = 2, N = 4] (inputs first), values e*100 + k*10 + n.
  std::vector<uint16_t> w;
  for (int e = 0; e < 2; ++e)
    for (int k = 0; k < 2; ++k)
      for (int n = 0; n < 4; ++n)
        w.push_back(static_cast<uint16_t>(e * 100 + k * 10 + n));
  // One MXFP4 row of 32 values: bytes 0x21 (low 1 -> 0.5, high 2 -> 1.0),
  // then 0xF8 (-0.0, -6.0), the rest 0x77 (6.0, 6.0); scale 2^(128 - 127).
  std::vector<uint8_t> blocks(16, 0x77), scales = {128};
  blocks[0] = 0x21;
  blocks[1] = 0xF8;
  WeightStore store;
  store.addView("x.gate_up", DType::BF16, {2, 2, 4}, raw(w));
  store.addView("x.blocks", DType::U8, {1, 1, 1, 16}, raw(blocks));
  store.addView("x.scales", DType::U8, {1, 1, 1}, raw(scales));
  const std::string ir = R"mlir(
func.func @f(%x: tensor<?x2xbf16>, %y: tensor<?x32xbf16>) -> (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<?x2xbf16>, tensor<?x1xbf16>) {
  %w = sol.weight @x.gate_up : tensor<2x2x4xbf16>
  %t = sol.transpose_weight %w : tensor<2x2x4xbf16> -> tensor<8x2xbf16>
  %g = sol.slice_rows %t {offset = 0 : i64, stride = 2 : i64} : tensor<8x2xbf16> -> tensor<4x2xbf16>
  %u = sol.slice_rows %t {offset = 1 : i64, stride = 2 : i64} : tensor<8x2xbf16> -> tensor<4x2xbf16>
  %r = sol.reshape_weight %w : tensor<2x2x4xbf16> -> tensor<8x2xbf16>
  %r2 = sol.slice_rows %r {offset = 6 : i64} : tensor<8x2xbf16> -> tensor<2x2xbf16>
  %b = sol.weight @x.blocks : tensor<1x1x1x16xui8>
  %s = sol.weight @x.scales : tensor<1x1x1xui8>
  %m = sol.dequantize_mxfp4 %b, %s : (tensor<1x1x1x16xui8>, tensor<1x1x1xui8>) -> tensor<1x32xbf16>
  %y1 = sol.linear %x, %g : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
  %y2 = sol.linear %x, %u : (tensor<?x2xbf16>, tensor<4x2xbf16>) -> tensor<?x4xbf16>
  %y3 = sol.linear %x, %r2 : (tensor<?x2xbf16>, tensor<2x2xbf16>) -> tensor<?x2xbf16>
  %y4 = sol.linear %y, %m : (tensor<?x32xbf16>, tensor<1x32xbf16>) -> tensor<?x1xbf16>
  return %y1, %y2, %y3, %y4 : tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<?x2xbf16>, tensor<?x1xbf16>
}
)mlir";
  std::vector<std::string> names = materialize(ir, store);
  ASSERT_EQ(names.size(), 4u);
  // Expert e's transposed rows are n = 0..3 of (k = 0, k = 1); gate takes
  // the even rows of all experts, up the odd ones.
  EXPECT_EQ(readAs<uint16_t>(store, names[0]),
            (std::vector<uint16_t>{0, 10, 2, 12, 100, 110, 102, 112}));
  EXPECT_EQ(readAs<uint16_t>(store, names[1]),
            (std::vector<uint16_t>{1, 11, 3, 13, 101, 111, 103, 113}));
  // The same elements in the same order: rows 6 and 7 of [8, 2].
  EXPECT_EQ(readAs<uint16_t>(store, names[2]),
            (std::vector<uint16_t>{110, 111, 112, 113}));
  std::vector<uint16_t> want(32, 0x4140); // bf16 12.0 = 6 * 2
  want[0] = 0x3F80;                       // 0.5 * 2
  want[1] = 0x4000;                       // 1.0 * 2
  want[2] = 0x8000;                       // -0.0
  want[3] = 0xC140;                       // -6.0 * 2
  EXPECT_EQ(readAs<uint16_t>(store, names[3]), want);
}

// A block-scaled fp8 weight: each code times its block's scale, rounded to
// bf16; a partial last block of columns and of rows.
TEST(MaterializeWeightsTest, DequantizesFp8Blocks) {
  // [3, 3] codes in blocks of 2 x 2: scales [2, 2].
  const std::vector<uint8_t> codes = {0x38, 0x40, 0x44,  // 1, 2, 3
                                      0xB8, 0x00, 0x7E,  // -1, 0, 448
                                      0x30, 0x01, 0x48}; // 0.5, 2^-9, 4
  const std::vector<float> scales = {2.0f, 0.25f, 1.0f / 3.0f, 10.0f};
  WeightStore store;
  store.addView("f.codes", DType::F8E4M3, {3, 3}, raw(codes));
  store.addView("f.scales", DType::F32, {2, 2}, raw(scales));
  const std::string ir = R"mlir(
func.func @f(%x: tensor<?x3xbf16>) -> tensor<?x3xbf16> {
  %c = sol.weight @f.codes : tensor<3x3xf8E4M3FN>
  %s = sol.weight @f.scales : tensor<2x2xf32>
  %w = sol.dequantize_fp8_blocks %c, %s {block_rows = 2, block_cols = 2} : (tensor<3x3xf8E4M3FN>, tensor<2x2xf32>) -> tensor<3x3xbf16>
  %y = sol.linear %x, %w : (tensor<?x3xbf16>, tensor<3x3xbf16>) -> tensor<?x3xbf16>
  return %y : tensor<?x3xbf16>
}
)mlir";
  std::vector<std::string> names = materialize(ir, store);
  ASSERT_EQ(names.size(), 1u);
  const std::vector<float> want = {2.0f,           4.0f, 0.75f, // 1*2, 2*2, 3/4
                                   -2.0f,          0.0f, 112.0f, 0.5f / 3.0f,
                                   1.0f / 1536.0f, 40.0f};
  std::vector<uint16_t> bits(want.size());
  for (size_t i = 0; i < want.size(); ++i)
    bits[i] = floatToBf16(want[i]);
  EXPECT_EQ(readAs<uint16_t>(store, names[0]), bits);
}

TEST(MaterializeWeightsTest, ClashingNamesGetASuffix) {
  const std::vector<uint16_t> a = {1, 2}, b = {3, 4};
  WeightStore store;
  store.addView("m.gate", DType::BF16, {1, 2}, raw(a));
  store.addView("m.up", DType::BF16, {1, 2}, raw(b));
  const std::string ir = R"mlir(
func.func @f(%x: tensor<?x2xbf16>) -> (tensor<?x2xbf16>, tensor<?x1xbf16>) {
  %g = sol.weight @m.gate : tensor<1x2xbf16>
  %u = sol.weight @m.up : tensor<1x2xbf16>
  %c = sol.concat_weights %g, %u : (tensor<1x2xbf16>, tensor<1x2xbf16>) -> tensor<2x2xbf16>
  %i = sol.interleave_rows %g, %u : tensor<1x2xbf16> -> tensor<2x2xbf16>
  %y1 = sol.linear %x, %c : (tensor<?x2xbf16>, tensor<2x2xbf16>) -> tensor<?x2xbf16>
  %y2 = sol.linear %x, %i {epilogue = #sol<epilogue swiglu>} : (tensor<?x2xbf16>, tensor<2x2xbf16>) -> tensor<?x1xbf16>
  return %y1, %y2 : tensor<?x2xbf16>, tensor<?x1xbf16>
}
)mlir";
  std::vector<std::string> names = materialize(ir, store);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "m.{gate,up}");
  EXPECT_EQ(names[1], "m.{gate,up}#2");
  EXPECT_EQ(readAs<uint16_t>(store, names[1]),
            (std::vector<uint16_t>{1, 2, 3, 4}));
}

TEST(MaterializeWeightsTest, AwqScaleAndClamp) {
  // w: 2x4 f32 (two rows of two groups of 2), s: 4 column scales, r: per
  // (row, group) clipping ratios.
  const std::vector<float> w = {1.0f,  -2.0f, 4.0f,  8.0f,
                                -1.0f, 3.0f,  -6.0f, 2.0f};
  const std::vector<float> s = {2.0f, 0.5f, 1.0f, 0.25f};
  const std::vector<float> r = {0.5f, 1.0f, 1.0f, 0.5f};
  const std::vector<float> rows = {2.0f, 4.0f};
  WeightStore store;
  store.addView("l.w", DType::F32, {2, 4}, raw(w));
  store.addView("l.s", DType::F32, {4}, raw(s));
  store.addView("l.r", DType::F32, {2, 2}, raw(r));
  store.addView("l.rows", DType::F32, {2}, raw(rows));
  const std::string ir = R"mlir(
func.func @f(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = sol.weight @l.w : tensor<2x4xf32>
  %s = sol.weight @l.s : tensor<4xf32>
  %r = sol.weight @l.r : tensor<2x2xf32>
  %rows = sol.weight @l.rows : tensor<2xf32>
  %ws = sol.scale_weight %w, %s {axis = 1 : i64} : tensor<2x4xf32>, tensor<4xf32>
  %wc = sol.clamp_weight %ws, %r {group_size = 2 : i64} : tensor<2x4xf32>, tensor<2x2xf32>
  %wd = sol.scale_weight %w, %rows {axis = 0 : i64, divide} : tensor<2x4xf32>, tensor<2xf32>
  %y1 = sol.linear %x, %wc : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
  %y2 = sol.linear %x, %wd : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
  return %y1, %y2 : tensor<?x2xf32>, tensor<?x2xf32>
}
)mlir";
  std::vector<std::string> names = materialize(ir, store);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "l.w~scaled~clamped");
  // Scaled: {2, -1, 4, 2 | -2, 1.5, -6, 0.5}. Group (0, 0) = {2, -1} with
  // ratio 0.5 clamps to [-0.5, 1]; group (1, 1) = {-6, 0.5} to [-3, 0.25].
  EXPECT_EQ(
      readAs<float>(store, names[0]),
      (std::vector<float>{1.0f, -0.5f, 4.0f, 2.0f, -2.0f, 1.5f, -3.0f, 0.25f}));
  // Row 0 divided by 2, row 1 by 4.
  EXPECT_EQ(readAs<float>(store, names[1]),
            (std::vector<float>{0.5f, -1.0f, 2.0f, 4.0f, -0.25f, 0.75f, -1.5f,
                                0.5f}));
}

TEST(MaterializeWeightsTest, BlockScalesTakeARowOfScalesPerBlockOfRows) {
  // A [4, 2] weight of two stacked experts (2 rows each) and [2, 2] scales:
  // expert 0's columns times {2, 3}, expert 1's times {0.5, 4}.
  const std::vector<float> w = {1.0f, 1.0f, -2.0f, 2.0f,
                                4.0f, 1.0f, 8.0f,  -0.5f};
  const std::vector<float> s = {2.0f, 3.0f, 0.5f, 4.0f};
  WeightStore store;
  store.addView("m.down", DType::F32, {4, 2}, raw(w));
  store.addView("m.s", DType::F32, {2, 2}, raw(s));
  const std::string ir = R"mlir(
func.func @f(%x: tensor<?x2xf32>) -> tensor<?x4xf32> {
  %w = sol.weight @m.down : tensor<4x2xf32>
  %s = sol.weight @m.s : tensor<2x2xf32>
  %ws = sol.scale_weight %w, %s {axis = 1 : i64} : tensor<4x2xf32>, tensor<2x2xf32>
  %y = sol.linear %x, %ws : (tensor<?x2xf32>, tensor<4x2xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
)mlir";
  std::vector<std::string> names = materialize(ir, store);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(
      readAs<float>(store, names[0]),
      (std::vector<float>{2.0f, 3.0f, -4.0f, 6.0f, 2.0f, 4.0f, 4.0f, -2.0f}));
}

TEST(MaterializeWeightsTest, QuantizedPartsStackAndInterleave) {
  // int4 codes [N, 4]: two per byte, low nibble first, rows of 2 bytes.
  const std::vector<uint8_t> q = {0x10, 0x32, 0x54, 0x76}, k = {0x98, 0xBA},
                             qz = {1, 2, 3, 4}, kz = {5, 6};
  const std::vector<float> qs = {0.5f, 1.5f, 2.5f, 3.5f}, ks = {4.5f, 5.5f};
  // fp8 gate and up [2, 2] with per-row scales.
  const std::vector<uint8_t> g = {0x01, 0x02, 0x03, 0x04},
                             u = {0x81, 0x82, 0x83, 0x84};
  const std::vector<float> gs = {1.0f, 2.0f}, us = {3.0f, 4.0f};
  WeightStore store;
  store.addView("a.q.w~int4", DType::I4, {2, 4}, raw(q));
  store.addView("a.k.w~int4", DType::I4, {1, 4}, raw(k));
  store.addView("a.q.w~int4.scales", DType::F32, {2, 2}, raw(qs));
  store.addView("a.k.w~int4.scales", DType::F32, {1, 2}, raw(ks));
  store.addView("a.q.w~int4.zeros", DType::U8, {2, 2}, raw(qz));
  store.addView("a.k.w~int4.zeros", DType::U8, {1, 2}, raw(kz));
  store.addView("m.gate.w", DType::F8E4M3, {2, 2}, raw(g));
  store.addView("m.up.w", DType::F8E4M3, {2, 2}, raw(u));
  store.addView("m.gate.w~fp8.scales", DType::F32, {2}, raw(gs));
  store.addView("m.up.w~fp8.scales", DType::F32, {2}, raw(us));
  const std::string ir = R"mlir(
func.func @f(%x: tensor<?x4xbf16>, %x2: tensor<?x2xbf16>) -> (tensor<?x3xbf16>, tensor<?x4xbf16>, tensor<?x2xbf16>) {
  %q = sol.weight @"a.q.w~int4" : tensor<2x4xi4>
  %k = sol.weight @"a.k.w~int4" : tensor<1x4xi4>
  %qs = sol.weight @"a.q.w~int4.scales" : tensor<2x2xf32>
  %ks = sol.weight @"a.k.w~int4.scales" : tensor<1x2xf32>
  %qz = sol.weight @"a.q.w~int4.zeros" : tensor<2x2xui8>
  %kz = sol.weight @"a.k.w~int4.zeros" : tensor<1x2xui8>
  %c = sol.concat_weights %q, %k : (tensor<2x4xi4>, tensor<1x4xi4>) -> tensor<3x4xi4>
  %s = sol.concat_weights %qs, %ks : (tensor<2x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  %z = sol.concat_weights %qz, %kz : (tensor<2x2xui8>, tensor<1x2xui8>) -> tensor<3x2xui8>
  %y1 = sol.linear %x, %c scales %s zeros %z {group_size = 2 : i64, quant = #sol<quant int4>} : (tensor<?x4xbf16>, tensor<3x4xi4> scales tensor<3x2xf32> zeros tensor<3x2xui8>) -> tensor<?x3xbf16>
  %ic = sol.interleave_rows %q, %q : tensor<2x4xi4> -> tensor<4x4xi4>
  %is = sol.interleave_rows %qs, %qs : tensor<2x2xf32> -> tensor<4x2xf32>
  %iz = sol.interleave_rows %qz, %qz : tensor<2x2xui8> -> tensor<4x2xui8>
  %y2 = sol.linear %x, %ic scales %is zeros %iz {group_size = 2 : i64, quant = #sol<quant int4>} : (tensor<?x4xbf16>, tensor<4x4xi4> scales tensor<4x2xf32> zeros tensor<4x2xui8>) -> tensor<?x4xbf16>
  %g = sol.weight @m.gate.w : tensor<2x2xf8E4M3FN>
  %u = sol.weight @m.up.w : tensor<2x2xf8E4M3FN>
  %gs = sol.weight @"m.gate.w~fp8.scales" : tensor<2xf32>
  %us = sol.weight @"m.up.w~fp8.scales" : tensor<2xf32>
  %gu = sol.interleave_rows %g, %u : tensor<2x2xf8E4M3FN> -> tensor<4x2xf8E4M3FN>
  %gus = sol.interleave_rows %gs, %us : tensor<2xf32> -> tensor<4xf32>
  %y3 = sol.linear %x2, %gu scales %gus {epilogue = #sol<epilogue swiglu>, quant = #sol<quant fp8>} : (tensor<?x2xbf16>, tensor<4x2xf8E4M3FN> scales tensor<4xf32>) -> tensor<?x2xbf16>
  return %y1, %y2, %y3 : tensor<?x3xbf16>, tensor<?x4xbf16>, tensor<?x2xbf16>
}
)mlir";
  std::vector<std::string> names =
      materialize(ir, store, /*quantOperands=*/true);
  ASSERT_EQ(names.size(), 8u);
  EXPECT_EQ(names[0], "a.{q,k}.w~int4");
  EXPECT_EQ(names[1], "a.{q,k}.w~int4.scales");
  EXPECT_EQ(names[2], "a.{q,k}.w~int4.zeros");
  EXPECT_EQ(names[6], "m.{gate,up}.w");
  EXPECT_EQ(names[7], "m.{gate,up}.w~fp8.scales");

  // Stacked rows: q's bytes, then k's.
  EXPECT_EQ(readAs<uint8_t>(store, names[0]),
            (std::vector<uint8_t>{0x10, 0x32, 0x54, 0x76, 0x98, 0xBA}));
  EXPECT_EQ(readAs<float>(store, names[1]),
            (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(readAs<uint8_t>(store, names[2]),
            (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  // Interleaved rows: a packed int4 row is K/2 = 2 bytes, a scale or zero
  // row one per group.
  EXPECT_EQ(
      readAs<uint8_t>(store, names[3]),
      (std::vector<uint8_t>{0x10, 0x32, 0x10, 0x32, 0x54, 0x76, 0x54, 0x76}));
  EXPECT_EQ(
      readAs<float>(store, names[4]),
      (std::vector<float>{0.5f, 1.5f, 0.5f, 1.5f, 2.5f, 3.5f, 2.5f, 3.5f}));
  EXPECT_EQ(readAs<uint8_t>(store, names[5]),
            (std::vector<uint8_t>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(
      readAs<uint8_t>(store, names[6]),
      (std::vector<uint8_t>{0x01, 0x02, 0x81, 0x82, 0x03, 0x04, 0x83, 0x84}));
  EXPECT_EQ(readAs<float>(store, names[7]),
            (std::vector<float>{1.0f, 3.0f, 2.0f, 4.0f}));
}

} // namespace
} // namespace sol

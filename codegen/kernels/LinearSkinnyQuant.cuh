//===- LinearSkinnyQuant.cuh - linear_skinny over int8, int4, fp8 weights -===//
//
// linear_skinny (LinearSkinny.cuh) for the quantized weights of
// linear_gemv_quant (LinearGemvQuant.cuh; the formats of
// runtime/support/Quantize.h): y = epilogue(x . W'^T + b) for 1..16 rows of
// bf16 x on the tensor cores, every code read once. 1..8 rows run with
// MaxRows 8, 9..16 with MaxRows 16.
//
// "Swap AB" as in linear_skinny: A is a 16-row tile of W read straight from
// global memory into mma fragments, B is x^T, D is y^T for 16 features and
// 8 tokens (a second n8 mma for tokens 8..15), and k is permuted
// identically for A and B. With g = lane / 4 and q = lane % 4, lane (g, q)
// loads per k step ONE 16-byte vector of codes of each of its W rows (rows
// g and g + 8 of each tile) at byte 16q of the step, so the four lanes of a
// row read 64 contiguous bytes, and a step is 64 k of int8 or fp8 codes or
// 128 k of int4 codes:
//  * int8 (W8A16), step k0..k0+63: the lane's vector is W[n][k0 + 16q, +16).
//    It is dequantized to bf16 in registers, exactly (|q| <= 127 has at
//    most 7 significant bits: float(q) by dequantInt8's 2^23 trick has 16
//    low zero bits, so one byte permute packs the high halves of two such
//    floats into a bf16 pair), as two 8-value vectors lo_c, hi_c (k0 + 16q
//    + 8c, +8), c = 0, 1. Each goes through skinnyMma against the matching
//    x vector xv_c = x[token g][k0 + 16q + 8c, +8): LinearSkinny.cuh's
//    table with the vector at k0 + 16q + 8c instead of k0 + 8q, four mmas a
//    step, each of the 64 k once. The per-row scale multiplies the fp32
//    sums at the end (exact: q * scale is never rounded to bf16).
//  * int4 (W4A16), step k0..k0+127: the lane's vector is W[n][k0 + 32q,
//    +32), word c the 8 values k0 + 32q + 8c.., byte j of a word values 2j
//    (low nibble) and 2j + 1. A byte permute puts byte j of the word and of
//    the word >> 4 under the two halves of a bf16 pair, each nibble under
//    the bf16 exponent of 128 (128 + code), and one bf16x2 fma takes 128 +
//    zero off both (dequantInt4's trick): code - zero exactly, in k order.
//    So word c is a bf16 vector of 8 k and the step is four skinnyMma
//    calls against x[token g][k0 + 32q + 8c, +8). GroupSize % 128 == 0
//    makes a step exactly one group (k0 is a multiple of 128), so the
//    step's mmas go into zeroed accumulators that are folded into the sums
//    with the group scale of feature g (c0, c1) and g + 8 (c2, c3); the
//    scales and zeros travel with the codes.
//  * fp8 (W8A8), step k0..k0+63, on the E4M3 tensor cores (mma.m16n8k32,
//    sm_89+): the lane's vector is 16 codes W[n][k0 + 16q, +16), word i the
//    4 codes k0 + 16q + 4i... The PTX ISA's m16n8k32 8-bit fragments are
//      A: a0 = (row g, cols 4q..4q+3), a1 = (row g+8, cols 4q..4q+3),
//         a2 = (row g, cols 16+4q..16+4q+3), a3 = (row g+8, the same);
//      B: b0 = (rows 4q..4q+3, col g), b1 = (rows 16+4q..16+4q+3, col g);
//      C: as m16n8k16's (c0, c1 = row g, cols 2q, 2q+1; c2, c3 = row g+8);
//    the lowest byte of a register holding the lowest column (B: row). The
//    two mmas of a step take
//      mma 1: a = {lo.x, hi.x, lo.y, hi.y}, b = {xv.x, xv.y},
//      mma 2: a = {lo.z, hi.z, lo.w, hi.w}, b = {xv.z, xv.w},
//    with xv = xq[token g][k0 + 16q, +16): skinnyMma's registers, so mma
//    column 4q + e holds real k 16q + e (mma 1) or 16q + 8 + e (mma 2), and
//    column 16 + 4q + e holds 16q + 4 + e (or 16q + 12 + e), for A and B
//    alike. xq is x quantized by the block in a prologue, into shared
//    memory: sx[t] = max|x[t]| / 448 (1 if 0), xq = e4m3(x / sx), rounded
//    to nearest even and saturated (linear_gemv_quant's rule and code:
//    quant_gemv::quantizeRowsFp8), after the norm prologue if any; y = sum
//    * scale[n] * sx[t] in fp32. sm_90 has no E4M3 mma.sync of its own:
//    ptxas converts the fragments to f16 (exactly: every E4M3 value is an
//    f16) for the f16 mma, 16 more instructions an mma and registers for
//    the f16 fragments, which the load budget leaves room for.
// (test/unit/cuda/QuantSkinnyEmulationTest.cpp runs this kernel on the CPU
// against mma stand-ins built from the PTX ISA's tables.)
//
// Loads: codes stream past L1 (ld.global.nc.L1::no_allocate); without a
// prologue x comes through L1 (loadActivation16) as in linear_skinny, with
// the norm prologue or fp8 from shared memory, read at the step. A warp
// keeps Depth k steps of codes (and int4's scales and zeros) in flight in
// a ring of registers and x XDepth (1 or 2) steps ahead, the two chosen
// within a budget of 16-byte loads a lane (quant_skinny::depth; smaller
// than linear_skinny's, dequantization needing registers too). The first
// Depth steps of codes, the scales and the norm weight are loaded before
// waitForPredecessor(); under a prologue with barriers the first codes use
// loadStreamingInOrder16, which ptxas keeps ahead of them.
//
// The block, its reduction and its epilogue are linear_skinny's: 8 warps,
// (8 / WarpsK) along N times WarpsK along K, Tiles 16-row tiles a warp;
// skinnyReduceEpilogue sums the warps' C fragments through shared memory
// (over x's rows once every warp is done with them) and runs the epilogue
// (bias, residual add or SwiGLU over interleaved gate/up rows, the same
// bf16 roundings) with coalesced stores. Tokens past `rows` get zero B
// fragments and are never stored; features past N re-read row N - 1 and are
// never stored. With NormPrologue, x is first replaced by
// skinnyNormPrologue's bf16(norm_w * bf16(x * rsqrt(mean(x^2) + eps))).
//
// Launch: QuantLinearArgs (LaunchArgs.h), 256 threads,
// ceil(N / (16 * Tiles * (8 / WarpsK))) blocks and
// QuantSkinnyShape::kSharedBytes of dynamic shared memory
// (QuantSkinnySpec in runtime/cuda/KernelSpecs.h). Requires K a multiple of
// a vector's values (16 for int8 and fp8; int4: GroupSize, a multiple of
// 128, divides K), 16-byte aligned x and codes, sm_89+ for fp8.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearGemvQuant.cuh"
#include "LinearSkinny.cuh"

namespace sol {
namespace kernels {

namespace quant_skinny {

// Values 8c .. 8c + 7 of a vector of 16 int8 codes as a bf16 vector.
__device__ __forceinline__ uint4 int8Chunk(const uint4 &v, int c) {
  float f[8];
  quant_gemv::dequantInt8(v, c, f);
  unsigned pair[4];
#pragma unroll
  for (int p = 0; p < 4; ++p)
    pair[p] = __byte_perm(__float_as_uint(f[2 * p]),
                          __float_as_uint(f[2 * p + 1]), 0x7632u);
  return make_uint4(pair[0], pair[1], pair[2], pair[3]);
}

// Values 8c .. 8c + 7 of a vector of 32 int4 codes minus the zero point
// (negativeZero: quant_gemv::int4NegativeZero) as a bf16 vector.
__device__ __forceinline__ uint4 int4Chunk(const uint4 &v, int c,
                                           unsigned negativeZero) {
  const unsigned w = quant_gemv::vectorWord(v, c);
  const unsigned high = w >> 4;
  unsigned pair[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // Byte j of w (low nibble: value 2j) and of w >> 4 (value 2j + 1).
    const unsigned biased =
        (__byte_perm(w, high, 0x4400u + 0x1111u * j) & 0x000f000fu) |
        0x43004300u;
    pair[j] = quant_gemv::fmaBf16x2(biased, 0x3f803f80u, negativeZero);
  }
  return make_uint4(pair[0], pair[1], pair[2], pair[3]);
}

// Chunk c of a lane's vector of codes as skinnyMma's A operand: a bf16
// vector of 8 k (int8, int4), or the 16 E4M3 codes themselves.
template <WeightFormat F>
__device__ __forceinline__ uint4 weightChunk(const uint4 &v, int c,
                                             unsigned negativeZero) {
  if constexpr (F == WeightFormat::Int8)
    return int8Chunk(v, c);
  else if constexpr (F == WeightFormat::Int4)
    return int4Chunk(v, c, negativeZero);
  else
    return v;
}

// 16-byte loads a lane keeps in flight (4 registers each), fewer than
// linear_skinny's 20: dequantization needs registers of its own (the bf16
// chunks; for fp8 the f16 fragments ptxas converts E4M3 ones to, sm_90
// having no E4M3 mma.sync of its own), and at two blocks per SM about 3
// loads a lane already cover DRAM latency.
constexpr int kLoadBudget = 12;
constexpr int kFp8LoadBudget = 8;

// The x steps a warp keeps in flight: two (x comes from L1 or L2) unless
// they would take more than half of the load budget, in 16-byte loads.
__host__ __device__ constexpr int xDepth(int steps, int xLoads, int budget) {
  return xLoads == 0 || 4 * xLoads > budget ? 1 : constMin(steps, 2);
}

// The steps of codes a warp keeps in flight: what the load budget leaves
// beside XDepth steps of x, a multiple of XDepth, or a few steps less if
// that divides the warp's steps (no partial pass).
__host__ __device__ constexpr int depth(int steps, int weightLoads, int xLoads,
                                        int xDepth, int budget) {
  const int most = constMax(
      xDepth, constMin(steps, (budget - xDepth * xLoads) / weightLoads) /
                  xDepth * xDepth);
  for (int d = most; 4 * d >= 3 * most; d -= xDepth)
    if (steps % d == 0)
      return d;
  return most;
}

} // namespace quant_skinny

// The block's geometry and its dynamic shared memory: x's rows (the norm
// prologue's bf16 rows, fp8's E4M3 rows), which the warps' partial sums
// overwrite at the end, the norm's per-warp sums of squares (NormPrologue
// only), fp8's activation scales. runtime/cuda/KernelSpecs.cpp mirrors it.
template <WeightFormat F, int K, int MaxRows, int Tiles, int WarpsK,
          bool NormPrologue>
struct QuantSkinnyShape {
  static constexpr bool kFp8 = F == WeightFormat::Fp8;
  static constexpr int kWarpsN = kSkinnyWarps / WarpsK;
  static constexpr int kFeatures = 16 * Tiles * kWarpsN;
  // bf16 rows; 16 bytes of padding put the 32-byte x reads of rows g and
  // g + 1 of an int8 step on different banks.
  static constexpr int kXStride = roundUp(K, 64) + 8;
  static constexpr int kXBytes = NormPrologue ? MaxRows * kXStride * 2 : 0;
  // E4M3 rows; 64 bytes of padding do the same for fp8's 16-byte reads.
  static constexpr int kQStride = roundUp(K, 128) + 64;
  static constexpr int kQBytes = kFp8 ? MaxRows * kQStride : 0;
  // Partial sums [WarpsK][MaxRows][kFeatures + 4] (skinnyReduceEpilogue).
  static constexpr int kReduceBytes = WarpsK * MaxRows * (kFeatures + 4) * 4;
  static constexpr int kOperandBytes =
      constMax(kXBytes + kQBytes, kReduceBytes);
  static constexpr int kNormBytes =
      NormPrologue ? MaxRows * kSkinnyWarps * 4 : 0;
  static constexpr int kScaleBytes = kFp8 ? MaxRows * 4 : 0;
  static constexpr int kSharedBytes = kOperandBytes + kNormBytes + kScaleBytes;
};

// y = epilogue(x . W'^T + b) for `rows` (<= MaxRows) rows (see the top of
// the file). GroupSize: the int4 group (a multiple of 128 dividing K); 0 for
// int8 and fp8. Epilogue is kEpilogueNone, Residual or Swiglu (Common.cuh);
// residual and swiglu need bf16 y, and swiglu makes y [rows, N / 2].
template <WeightFormat F, int K, int MaxRows, int Tiles, int WarpsK,
          typename OutT, bool HasBias, int Epilogue, bool NormPrologue,
          int GroupSize>
__global__ void __launch_bounds__(kSkinnyThreads, 2)
    linear_skinny_quant(const __grid_constant__ QuantLinearArgs args) {
  using Shape = QuantSkinnyShape<F, K, MaxRows, Tiles, WarpsK, NormPrologue>;
  constexpr bool kInt4 = F == WeightFormat::Int4;
  constexpr bool kFp8 = F == WeightFormat::Fp8;
  // Values of a lane's 16-byte vector of codes.
  constexpr int E = quant_gemv::kVectorValues<F>;
  static_assert(K % E == 0, "linear_skinny_quant: K must be a multiple of "
                            "the 16 (int8, fp8) or 32 (int4) values of a "
                            "vector");
  static_assert(kInt4 ? GroupSize > 0 && GroupSize % 128 == 0 &&
                            K % GroupSize == 0
                      : GroupSize == 0,
                "linear_skinny_quant: int4 groups are a multiple of 128 (a "
                "k step) that divides K; int8 and fp8 take GroupSize 0");
  static_assert(MaxRows == 8 || MaxRows == 16,
                "linear_skinny_quant: MaxRows must be 8 or 16");
  static_assert(Tiles == 1 || Tiles == 2,
                "linear_skinny_quant: Tiles must be 1 or 2");
  static_assert(WarpsK >= 1 && kSkinnyWarps % WarpsK == 0,
                "linear_skinny_quant: WarpsK must divide 8");
  static_assert(Epilogue == kEpilogueNone || Epilogue == kEpilogueResidual ||
                    isGatedEpilogue(Epilogue),
                "linear_skinny_quant: no such epilogue");
  constexpr int kGroups = MaxRows / 8; // n8 mmas per tile and chunk
  constexpr int kRowBytes = kInt4 ? K / 2 : K;
  constexpr int kVecs = K / E; // 16-byte vectors of codes in a row
  // Each warp's K slice is a whole number of steps of 4 vectors.
  constexpr int kSlice = roundUp(ceilDiv(kVecs, WarpsK), 4);
  constexpr int kSteps = kSlice / 4;
  constexpr bool kWholeSteps = kSlice * WarpsK == kVecs;
  // skinnyMma calls per tile, token group and step: one per 16-byte x
  // vector (8 bf16 values, or 16 E4M3 codes) a lane reads.
  constexpr int kChunks = kFp8 ? 1 : E / 8;
  constexpr bool kXShared = NormPrologue || kFp8;
  constexpr int kGroupsPerRow = kInt4 ? K / GroupSize : 1;
  // 16-byte loads per step: codes (int4's scales and zeros take 4
  // registers a tile too; fp8's f16 fragments, converted for each mma,
  // grow with the token groups) and x.
  constexpr int kWeightLoads =
      2 * Tiles * (kFp8 ? kGroups : 1) + (kInt4 ? Tiles : 0);
  constexpr int kXLoads = kXShared ? 0 : kGroups * kChunks;
  constexpr int kBudget =
      kFp8 ? quant_skinny::kFp8LoadBudget : quant_skinny::kLoadBudget;
  constexpr int kXDepth = quant_skinny::xDepth(kSteps, kXLoads, kBudget);
  constexpr int kDepth =
      quant_skinny::depth(kSteps, kWeightLoads, kXLoads, kXDepth, kBudget);

  OutT *const y = static_cast<OutT *>(args.y);
  const bf16 *const x = args.x;
  const int rows = args.rows;
  const int N = args.n;

  unsigned char *const shared = dynamicSharedMemory();
  bf16 *const xs = reinterpret_cast<bf16 *>(shared);
  unsigned char *const xq = shared + Shape::kXBytes;
  float *const reduce = reinterpret_cast<float *>(shared);
  auto *const normPartial =
      reinterpret_cast<float(*)[kSkinnyWarps]>(shared + Shape::kOperandBytes);
  float *const activationScale = reinterpret_cast<float *>(
      shared + Shape::kOperandBytes + Shape::kNormBytes);

  allowDependentLaunch();
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;
  const int q = lane % 4;
  const int warpN = warp / WarpsK;
  const int warpK = warp % WarpsK;
  const int nBlock = blockIdx.x * Shape::kFeatures;
  const int nWarp = nBlock + warpN * Tiles * 16;
  const int count = min(rows, MaxRows);
  // The lane's vector of each row in step s is vLane + 4 * s.
  const int vLane = warpK * kSlice + q;

  int wRowIndex[Tiles][2];
  const unsigned char *wRow[Tiles][2];
#pragma unroll
  for (int t = 0; t < Tiles; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Rows past N read row N-1 (valid memory); their sums are never
      // stored.
      wRowIndex[t][h] = min(nWarp + 16 * t + 8 * h + g, N - 1);
      wRow[t][h] = args.w +
                   static_cast<long long>(wRowIndex[t][h]) * kRowBytes +
                   vLane * 16;
    }
  // x of token 8j + g at the lane's vector: bf16 (E values a vector) in
  // global or shared memory, or fp8's E4M3 codes.
  const bf16 *xRow[kGroups];
  const unsigned char *qRow[kGroups];
  bool xValid[kGroups];
#pragma unroll
  for (int j = 0; j < kGroups; ++j) {
    const int token = 8 * j + g;
    xValid[j] = token < count;
    const int sharedToken = min(token, MaxRows - 1);
    xRow[j] =
        NormPrologue
            ? xs + sharedToken * Shape::kXStride + vLane * E
            : x + static_cast<long long>(xValid[j] ? token : 0) * K + vLane * E;
    qRow[j] = xq + sharedToken * Shape::kQStride + vLane * 16;
  }
  auto inK = [&](int step) { return kWholeSteps || vLane + 4 * step < kVecs; };
  const uint4 zero = make_uint4(0, 0, 0, 0);

  uint4 wv[kDepth][Tiles][2];
  float groupScale[kInt4 ? kDepth : 1][Tiles][2];
  unsigned groupZero[kInt4 ? kDepth : 1][Tiles][2];
  uint4 xv[kXDepth][kGroups][kChunks];
  float acc[Tiles][kGroups][4];
#pragma unroll
  for (int t = 0; t < Tiles; ++t)
#pragma unroll
    for (int j = 0; j < kGroups; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        acc[t][j][c] = 0.0f;

  // Ring slot `slot` <- the codes (and int4's group scales and zeros) of
  // step `step`.
  auto loadWeights = [&](int slot, int step, bool inOrder) {
    const bool ok = inK(step);
#pragma unroll
    for (int t = 0; t < Tiles; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned char *p = wRow[t][h] + step * 64;
        wv[slot][t][h] = !ok       ? zero
                         : inOrder ? loadStreamingInOrder16(p)
                                   : loadStreaming16(p);
        if constexpr (kInt4) {
          // The step's 128 k, from vector vLane - q + 4 step on, are one
          // group.
          const long long i =
              static_cast<long long>(wRowIndex[t][h]) * kGroupsPerRow +
              (ok ? (vLane - q + 4 * step) * 32 / GroupSize : 0);
          groupScale[slot][t][h] = ok ? args.scales[i] : 0.0f;
          groupZero[slot][t][h] = ok ? args.zeros[i] : 0u;
        }
      }
  };
  // x slot `slot` <- step `step` of x from global memory.
  auto loadX = [&](int slot, int step) {
    const bool ok = inK(step);
#pragma unroll
    for (int j = 0; j < kGroups; ++j)
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
        xv[slot][j][c] = ok && xValid[j]
                             ? loadActivation16(xRow[j] + step * 4 * E + 8 * c)
                             : zero;
  };

  // Before x exists (overlapping the previous kernel's tail): the per-row
  // scales of the lane's features, the norm weight, the ring's first Depth
  // steps of codes.
  // int8's are only asked of L2 here and loaded after the k loop: held
  // through it, they make the 16-row two-tile instances spill.
  float rowScale[Tiles][2];
#pragma unroll
  for (int t = 0; t < Tiles; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      rowScale[t][h] = kFp8 ? args.scales[wRowIndex[t][h]] : 1.0f;
      if constexpr (F == WeightFormat::Int8)
        prefetchL2(args.scales + wRowIndex[t][h]);
    }
  NormWeights<NormPrologue ? K : 8> normW;
  if constexpr (NormPrologue)
    normW.load(args.normWeight);
#pragma unroll
  for (int d = 0; d < kDepth; ++d)
    loadWeights(d, d, kXShared);
  waitForPredecessor();
  if constexpr (NormPrologue)
    skinnyNormPrologue<K, MaxRows, Shape::kXStride>(xs, normPartial, x, normW,
                                                    args.eps, count);
  if constexpr (kFp8) {
    quant_gemv::quantizeRowsFp8<K, MaxRows>(
        [&](int t, int v) {
          if constexpr (NormPrologue)
            return load16(xs + t * Shape::kXStride + v * 8);
          else
            return loadActivation16(x + static_cast<long long>(t) * K + v * 8);
        },
        [&](int t, int v, const float(&q)[8]) {
          unsigned *out =
              reinterpret_cast<unsigned *>(xq + t * Shape::kQStride + v * 8);
          out[0] = quant_gemv::e4m3Pair(q, 0) | quant_gemv::e4m3Pair(q, 2)
                                                    << 16;
          out[1] = quant_gemv::e4m3Pair(q, 4) | quant_gemv::e4m3Pair(q, 6)
                                                    << 16;
        },
        count, activationScale);
  }
  if constexpr (!kXShared) {
#pragma unroll
    for (int d = 0; d < kXDepth; ++d)
      loadX(d, d);
  }

#pragma unroll 1
  for (int s = 0; s < kSteps; s += kDepth) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int step = s + d;
      if (kSteps % kDepth == 0 || step < kSteps) {
        // x of token group j, chunk c: from the ring, or from shared memory
        // (close: read at the step, a chunk at a time).
        auto xChunk = [&](int j, int c) {
          const bool ok = inK(step) && xValid[j];
          if constexpr (kFp8)
            return ok ? load16(qRow[j] + step * 64) : zero;
          else if constexpr (NormPrologue)
            return ok ? load16(xRow[j] + step * 4 * E + 8 * c) : zero;
          else
            return xv[d % kXDepth][j][c];
        };
#pragma unroll
        for (int t = 0; t < Tiles; ++t) {
          // int4: the step's group, scaled once.
          float part[kGroups][4];
#pragma unroll
          for (int j = 0; j < kGroups; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c)
              part[j][c] = kInt4 ? 0.0f : acc[t][j][c];
          const unsigned negativeZero[2] = {
              kInt4 ? quant_gemv::int4NegativeZero(groupZero[d][t][0]) : 0u,
              kInt4 ? quant_gemv::int4NegativeZero(groupZero[d][t][1]) : 0u};
#pragma unroll
          for (int c = 0; c < kChunks; ++c) {
            const uint4 lo =
                quant_skinny::weightChunk<F>(wv[d][t][0], c, negativeZero[0]);
            const uint4 hi =
                quant_skinny::weightChunk<F>(wv[d][t][1], c, negativeZero[1]);
#pragma unroll
            for (int j = 0; j < kGroups; ++j)
              skinnyMma<kFp8>(part[j], lo, hi, xChunk(j, c));
          }
#pragma unroll
          for (int j = 0; j < kGroups; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c)
              acc[t][j][c] = kInt4 ? fmaf(groupScale[d][t][c / 2], part[j][c],
                                          acc[t][j][c])
                                   : part[j][c];
        }
        // Refill the slots with the steps Depth (codes) and XDepth (x)
        // ahead.
        if (step + kDepth < kSteps)
          loadWeights(d, step + kDepth, false);
        if constexpr (!kXShared)
          if (step + kXDepth < kSteps)
            loadX(d % kXDepth, step + kXDepth);
      }
    }
  }

  // The per-row scales (and fp8's per-token ones) of int8 and fp8: c0 and
  // c1 are feature g of tokens 2q and 2q + 1, c2 and c3 feature g + 8.
  if constexpr (!kInt4) {
    if constexpr (F == WeightFormat::Int8) {
#pragma unroll
      for (int t = 0; t < Tiles; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          rowScale[t][h] = args.scales[wRowIndex[t][h]];
    }
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      float tokenScale[2] = {1.0f, 1.0f};
      // Braced: NVCC's front end also drops the statement after a discarded
      // `if constexpr` whose body begins with #pragma unroll (for int8, the
      // row-scale multiply below).
      if constexpr (kFp8) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int token = 8 * j + 2 * q + e;
          tokenScale[e] = token < count ? activationScale[token] : 0.0f;
        }
      }
#pragma unroll
      for (int t = 0; t < Tiles; ++t)
#pragma unroll
        for (int c = 0; c < 4; ++c)
          acc[t][j][c] = acc[t][j][c] * rowScale[t][c / 2] * tokenScale[c % 2];
    }
  }
  // The partial sums overwrite x's rows in shared memory.
  if constexpr (kXShared)
    __syncthreads();
  skinnyReduceEpilogue<MaxRows, Tiles, WarpsK, Shape::kFeatures, OutT, HasBias,
                       Epilogue>(reduce, acc, y, args.bias, count, N, nBlock,
                                 warpN, warpK, lane);
}

} // namespace kernels
} // namespace sol

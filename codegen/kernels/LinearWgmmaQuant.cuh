//===- LinearWgmmaQuant.cuh - Mixed-input GEMM on Hopper's wgmma ----------===//
//
// y = epilogue(x . W'^T + b) for batched decode (up to 128 rows of bf16 x:
// int8 from 9, int4 past linear_skinny_quant's 16) over int8 or int4 codes
// in linear_gemm_quant's formats (LinearGemmQuant.cuh), on Hopper's
// warpgroup MMA (Wgmma.cuh, sm_90a).
// linear_gemm_quant runs out of instruction issue, not bandwidth, at 64
// rows: every warp loads its own x fragments and issues an mma.sync per
// 16 x 8 x 16. Here the weight is wgmma's A: each warpgroup dequantizes 64
// rows of W into registers (every code once a block, as there) and one
// wgmma m64nTk16 multiplies them by the T rows of x, which the tensor cores
// read from shared memory once for the four warps.
//
// Block: WarpGroups warpgroups, each 64 rows of W (the block's 64 *
// WarpGroups output columns) against the block's Tokens rows of x; a ring
// of Stages stages of KSub sub-tiles of 64 k. Codes arrive by cp.async into
// linear_gemm_quant's swizzled code tiles and come out by ldmatrix, which
// hands lane (g, q) bytes 4q..4q+3 of each 16-byte chunk of a row: so the k
// a lane holds are not in A's slots (2q, 2q + 1 and 8 + 2q, 9 + 2q of a k
// step). x is therefore stored in the order of the codes' k instead: the
// B tile of a k step is two "chunks" of Tokens rows of 16 bytes (wgmma's
// 8 x 8 core matrices, K-major, no swizzle), and word p of row t in chunk
// c holds the bf16 pair of x[t] that meets A's slot pair p:
//  * int8, 16-k block s (chunks 2s, 2s + 1): the lane's word is k 4q..4q+3
//    of the block; its pairs (4q, 4q+1) and (4q+2, 4q+3) are a0 and a2, so
//    chunk 2s holds x's pairs 0, 2, 4, 6 of the block and chunk 2s + 1
//    pairs 1, 3, 5, 7;
//  * int4, 32-k block c (chunks 4c..4c+3, k steps 2c and 2c + 1): the
//    lane's word is k 8q..8q+7 of the block; its nibble pairs 0, 1 are a0,
//    a2 of step 2c and 2, 3 of step 2c + 1, so chunk 4c + j holds x's pairs
//    j, j + 4, j + 8, j + 12 of the block.
// x is read with 16-byte loads into registers two iterations ahead and
// stored in that order (cp.async moves 16 contiguous bytes, and this takes
// pairs 4 bytes apart; 4-byte cp.async copies cost the load units four
// times the requests); each thread takes 32 k of one token a unit.
//
// Pipeline: stage kt's codes were issued Stages - 2 iterations earlier; a
// k step waits for all but the latest wgmma group before dequantizing into
// A (so the dequantization of step s overlaps the wgmma of step s - 1), and
// a ring slot is refilled two iterations after it was read, when its last
// wgmma has finished. Dequantization as in linear_gemm_quant: int8 through
// the float 2^23 + 128 + q (q exactly), int4 nibbles under the bf16 exponent
// of 128 minus 128 + zero in one bf16x2 fma (exact). The int8 row scale
// multiplies the fp32 sums at the end (exact); int4 codes minus their zero
// are multiplied by the group's scale in one more bf16x2 fma, so W' is
// rounded to bf16 once (a relative 2^-9 a weight, as Marlin's fp16 W' is;
// below the bf16 output's own rounding). Folding each group into fp32 with
// its scale instead took a second set of accumulators (164 registers: one
// block a multiprocessor) and a wait for every wgmma in flight at each
// group's end.
//
// Output: a lane holds rows g and g + 8 of its warp's 16 columns for tokens
// 8j + 2q, +1; with xor-4 shuffles each lane forms a pair of neighbouring
// columns (col, col + 1) for one token, which is what the epilogues
// (GemmEpilogue.cuh: SwiGLU's gate/up pairs, the residual's bf16 pairs)
// take. With SplitK, y is linear_splitk_finalize's fp32 [M, N] workspace.
//
// Launch: QuantGemmArgs (LaunchArgs.h), WarpGroups * 128 threads, a
// one-dimensional grid of ceil(M / Tokens) * ceil(N / (64 * WarpGroups)) *
// SplitKs blocks, M fastest, QuantWgmmaShape::kSharedBytes of dynamic shared
// memory. Requires K % 64 == 0, N % 8 == 0 and, for int4, G % 64 == 0.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearGemmQuant.cuh"
#include "Wgmma.cuh"

namespace sol {
namespace kernels {

template <WeightFormat F, int Tokens, int WarpGroups, int Stages, int KSub>
struct QuantWgmmaShape {
  static constexpr int kSubK = 64;
  static constexpr int kStageK = kSubK * KSub;
  static constexpr int kThreads = WarpGroups * 128;
  static constexpr int kTileN = WarpGroups * 64;
  static constexpr int kCodeChunks = (F == WeightFormat::Int4 ? 2 : 4) * KSub;
  // x: a sub-tile is 8 chunks of Tokens rows of 16 bytes.
  static constexpr int kXChunkBytes = Tokens * 16;
  static constexpr int kXSubBytes = 8 * kXChunkBytes;
  static constexpr int kXTileBytes = KSub * kXSubBytes;
  static constexpr int kStageBytes = kXTileBytes + kTileN * kCodeChunks * 16;
  static constexpr int kSharedBytes = Stages * kStageBytes;
  // 32-k units of x a stage (64 bytes of one token), and a thread's.
  static constexpr int kXUnits = Tokens * 2 * KSub;
  static constexpr int kXUnitsPerThread = ceilDiv(kXUnits, kThreads);
  static_assert(F == WeightFormat::Int8 || F == WeightFormat::Int4,
                "linear_wgmma_quant: int8 or int4 weights");
  static_assert(Tokens == 16 || Tokens == 32 || Tokens == 64 || Tokens == 128,
                "linear_wgmma_quant: 16, 32, 64 or 128 tokens a block");
  static_assert(WarpGroups == 1 || WarpGroups == 2 || WarpGroups == 4,
                "linear_wgmma_quant: one, two or four warpgroups");
  static_assert(KSub == 1 || KSub == 2 || KSub == 4,
                "linear_wgmma_quant: 1, 2 or 4 sub-tiles a stage");
  static_assert(Stages >= 3, "linear_wgmma_quant: at least three stages");
};

namespace quant_wgmma {

// Word i of a 32-k unit of x (the bf16 pair k 2i, 2i + 1 of the unit).
__device__ __forceinline__ unsigned unitWord(const uint4 (&v)[4], int i) {
  const uint4 &u = v[i / 4];
  return i % 4 == 0 ? u.x : i % 4 == 1 ? u.y : i % 4 == 2 ? u.z : u.w;
}

// The 16 bytes of chunk j (0..3) of a unit in wgmma's k order: int8 chunk
// 2s + h holds pairs h, h + 2, h + 4, h + 6 of the unit's 16-k block s;
// int4 chunk j pairs j, j + 4, j + 8, j + 12 of the 32-k block.
template <WeightFormat F>
__device__ __forceinline__ uint4 unitChunk(const uint4 (&v)[4], int j) {
  const int first = F == WeightFormat::Int4 ? j : 8 * (j / 2) + j % 2;
  const int step = F == WeightFormat::Int4 ? 4 : 2;
  return make_uint4(unitWord(v, first), unitWord(v, first + step),
                    unitWord(v, first + 2 * step),
                    unitWord(v, first + 3 * step));
}

} // namespace quant_wgmma

template <WeightFormat F, int Tokens, int WarpGroups, int Stages, int KSub,
          typename OutT, bool HasBias, int Epilogue, bool SplitK, int GroupSize>
__global__ void __launch_bounds__(
    QuantWgmmaShape<F, Tokens, WarpGroups, Stages, KSub>::kThreads)
    linear_wgmma_quant(const __grid_constant__ QuantGemmArgs args) {
  using Shape = QuantWgmmaShape<F, Tokens, WarpGroups, Stages, KSub>;
  using namespace quant_gemm;
  using namespace quant_wgmma;
  constexpr bool kInt4 = F == WeightFormat::Int4;
  constexpr int kThreads = Shape::kThreads;
  constexpr int kSubK = Shape::kSubK;
  constexpr int kChunks = Shape::kCodeChunks;
  constexpr int kAcc = Tokens / 2;
  // Stages in flight ahead of the one computed; the other slot drains.
  constexpr int kAhead = Stages - 2;
  static_assert(!SplitK || (!HasBias && Epilogue == kEpilogueNone),
                "linear_wgmma_quant: split-K adds bias and epilogue when "
                "finalizing");
  static_assert(kInt4 ? GroupSize > 0 && GroupSize % kSubK == 0
                      : GroupSize == 0,
                "linear_wgmma_quant: int4 groups are a multiple of 64; int8 "
                "takes GroupSize 0");
  allowDependentLaunch();
  unsigned char *const shared = dynamicSharedMemory();

  const int M = args.rows;
  const int N = args.n;
  const int K = args.k;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32; // its W rows: 16 warp .. 16 warp + 15
  const int g = lane / 4;
  const int q = lane % 4;
  const int mBlocks = ceilDiv(M, Tokens);
  const int nBlocks = ceilDiv(N, Shape::kTileN);
  const int block = static_cast<int>(blockIdx.x);
  const int m0 = (block % mBlocks) * Tokens;
  const int n0 = (block / mBlocks % nBlocks) * Shape::kTileN;
  const int split = block / (mBlocks * nBlocks);
  const int splits = static_cast<int>(gridDim.x) / (mBlocks * nBlocks);
  const int subTiles = K / kSubK;
  const int allStages = ceilDiv(subTiles, KSub);
  const int perSplit = ceilDiv(allStages, splits);
  const int kFirst = split * perSplit;
  const int kTiles = max(0, min(allStages - kFirst, perSplit));
  const int subBegin = kFirst * KSub;
  const int subEnd = min(subTiles, (kFirst + kTiles) * KSub);
  const int rowBytes = kInt4 ? K / 2 : K;
  if (SplitK && kTiles == 0)
    return; // an idle slice adds nothing

  auto xTile = [&](int stage) { return shared + stage * Shape::kStageBytes; };
  auto codeTile = [&](int stage) { return xTile(stage) + Shape::kXTileBytes; };

  const CodeTileCopies<Shape::kTileN, kChunks, kThreads, Shape::kStageBytes>
      codeCopies(args.w, rowBytes, n0, N, kFirst, sharedAddress(codeTile(0)));
  auto loadCodes = [&](int stage, int kTile) {
    codeCopies.load(stage, kTile, rowBytes - (kFirst + kTile) * kChunks * 16,
                    args.w);
  };

  // x: a thread's units are idx = threadIdx.x + i * kThreads, token
  // idx / (2 KSub), 32-k block idx % (2 KSub) of the stage; tokens past M
  // and k past K (a short last stage) are zeros. Loaded into registers two
  // iterations before they are stored (XUnits: one of two alternating
  // sets), so that a stage's L2 latency overlaps two stages of wgmmas.
  using XUnits = uint4[Shape::kXUnitsPerThread][4];
  auto loadX = [&](XUnits &units, int kTile) {
    const int k0 = (kFirst + kTile) * Shape::kStageK;
#pragma unroll
    for (int i = 0; i < Shape::kXUnitsPerThread; ++i) {
      const int idx = threadIdx.x + i * kThreads;
      const int r = idx / (2 * KSub);
      const int k = k0 + idx % (2 * KSub) * 32;
      const bool ok = idx < Shape::kXUnits && m0 + r < M && k < K;
      const bf16 *from =
          args.x + (ok ? static_cast<long long>(m0 + r) * K + k : 0);
#pragma unroll
      for (int c = 0; c < 4; ++c)
        units[i][c] = ok ? loadActivation16(from + 8 * c) : uint4{0, 0, 0, 0};
    }
  };
  auto storeX = [&](int stage, const XUnits &units) {
#pragma unroll
    for (int i = 0; i < Shape::kXUnitsPerThread; ++i) {
      const int idx = threadIdx.x + i * kThreads;
      if (idx >= Shape::kXUnits)
        continue;
      const int r = idx / (2 * KSub);
      const int block = idx % (2 * KSub); // sub-tile block / 2, half block % 2
      unsigned char *to = xTile(stage) + block / 2 * Shape::kXSubBytes +
                          block % 2 * 4 * Shape::kXChunkBytes + r * 16;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        store16(to + j * Shape::kXChunkBytes, unitChunk<F>(units[i], j));
    }
  };

  // The codes of the first stages stream while the previous kernel ends;
  // their x is stored at once, the next two stages' x loaded.
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < kTiles)
      loadCodes(s, s);
    copyAsyncCommit();
  }
  waitForPredecessor();
  XUnits xUnits[2];
#pragma unroll
  for (int s = 0; s < kAhead; ++s)
    if (s < kTiles) {
      loadX(xUnits[0], s);
      storeX(s, xUnits[0]);
    }
#pragma unroll
  for (int p = 0; p < 2; ++p)
    if (kAhead + p < kTiles)
      loadX(xUnits[p], kAhead + p);

  float acc[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e)
    acc[e] = 0.0f;

  // int4: the zeros and scales of the lane's rows g and g + 8 for the group
  // of sub-tile `sub`, a sub-tile ahead.
  const int rowG = n0 + warp * 16 + g;
  const int groups = kInt4 ? K / GroupSize : 1;
  unsigned zeroNow[2] = {}, zeroNext[2] = {};
  unsigned scaleNow[2] = {}, scaleNext[2] = {};
  auto loadGroup = [&](int sub, unsigned(&zero)[2], unsigned(&scale)[2]) {
    if constexpr (kInt4) {
      const int group = sub * kSubK / GroupSize;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long at =
            static_cast<long long>(min(rowG + 8 * h, N - 1)) * groups + group;
        zero[h] = quant_gemv::int4NegativeZero(args.zeros[at]);
        scale[h] = packBf16Pair(args.scales[at], args.scales[at]);
      }
    }
  };
  if (kTiles > 0)
    loadGroup(subBegin, zeroNow, scaleNow);

  // B descriptors: chunks Tokens * 16 bytes apart along K, 8 tokens 128
  // bytes apart; k step s of sub-tile u starts at chunk 2s.
  const unsigned long long descriptor0 =
      wgmmaDescriptor(sharedAddress(shared), Shape::kXChunkBytes, 128);

  // Iteration kt stores stage kt + kAhead's x from set kt % 2 and loads
  // stage kt + kAhead + 2's into it; two iterations a trip keep the sets in
  // registers.
  auto iteration = [&](int kt, XUnits &units) {
    // At most the last sub-tile's wgmmas are in flight: those of the slot
    // refilled below (two iterations ago) are done.
    wgmmaWait<1>();
    copyAsyncWait<kAhead - 1>();
    // This thread's landed copies, then everyone's, are seen by the tensor
    // cores.
    asyncSharedFence();
    __syncthreads();
    const int stage = kt % Stages;
    const int next = kt + kAhead;
    // Slot next % Stages was read two iterations ago; its wgmmas are done.
    if (next < kTiles)
      loadCodes(next % Stages, next);
    copyAsyncCommit();

    const unsigned char *cs = codeTile(stage);
#pragma unroll
    for (int u = 0; u < KSub; ++u) {
      const int sub = (kFirst + kt) * KSub + u;
      if (sub >= subEnd)
        break;
      // ldmatrix: lanes 8m..8m+7 address rows (m % 2) * 8.. of the warp's
      // 16 and chunk m / 2 of the pair: codes[f] = {row g chunk c, row g +
      // 8 chunk c, row g chunk c + 1, row g + 8 chunk c + 1}, c = the
      // sub-tile's first chunk + 2f.
      constexpr int kFragments = kInt4 ? 1 : 2;
      unsigned codes[kFragments][4];
#pragma unroll
      for (int f = 0; f < kFragments; ++f) {
        const int chunk = (kInt4 ? 2 : 4) * u + 2 * f + lane / 16;
        const int r = warp * 16 + lane / 8 % 2 * 8 + lane % 8;
        loadMatrixX4(codes[f],
                     sharedAddress(cs + codeChunkOffset<kChunks>(r, chunk)));
      }
      if constexpr (kInt4)
        if (sub + 1 < subEnd)
          loadGroup(sub + 1, zeroNext, scaleNext);
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        // The wgmma that read these A registers two steps ago is done.
        wgmmaWait<1>();
        unsigned a[4];
        if constexpr (kInt4) {
          const unsigned wg = codes[0][2 * (s / 2)];
          const unsigned wg8 = codes[0][2 * (s / 2) + 1];
          const int t = s % 2;
          a[0] = quant_gemv::fmaBf16x2(
              dequantInt4Pair(wg, wg >> 4, 2 * t, zeroNow[0]), scaleNow[0],
              0x80008000u);
          a[1] = quant_gemv::fmaBf16x2(
              dequantInt4Pair(wg8, wg8 >> 4, 2 * t, zeroNow[1]), scaleNow[1],
              0x80008000u);
          a[2] = quant_gemv::fmaBf16x2(
              dequantInt4Pair(wg, wg >> 4, 2 * t + 1, zeroNow[0]), scaleNow[0],
              0x80008000u);
          a[3] = quant_gemv::fmaBf16x2(
              dequantInt4Pair(wg8, wg8 >> 4, 2 * t + 1, zeroNow[1]),
              scaleNow[1], 0x80008000u);
        } else {
          dequantInt8Pairs(codes[s / 2][2 * (s % 2)], a[0], a[2]);
          dequantInt8Pairs(codes[s / 2][2 * (s % 2) + 1], a[1], a[3]);
        }
        const unsigned offset = stage * Shape::kStageBytes +
                                u * Shape::kXSubBytes +
                                2 * s * Shape::kXChunkBytes;
        wgmmaFence();
        wgmmaBf16<Tokens>(acc, a, descriptor0 + (offset >> 4), 1);
        wgmmaCommit();
      }
      if constexpr (kInt4) {
        zeroNow[0] = zeroNext[0];
        zeroNow[1] = zeroNext[1];
        scaleNow[0] = scaleNext[0];
        scaleNow[1] = scaleNext[1];
      }
    }
    if (next < kTiles) {
      storeX(next % Stages, units);
      if (next + 2 < kTiles)
        loadX(units, next + 2);
    }
  };
  for (int kt = 0; kt < kTiles; kt += 2) {
    iteration(kt, xUnits[0]);
    if (kt + 1 < kTiles)
      iteration(kt + 1, xUnits[1]);
  }
  wgmmaWait<0>();
#pragma unroll
  for (int e = 0; e < kAcc; ++e)
    wgmmaHold(acc[e]);
  copyAsyncWait<0>();

  // acc[4j + 2h + e]: column rowG + 8h, token m0 + 8j + 2q + e.
  float scale[2], bias[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int col = min(rowG + 8 * h, N - 1);
    scale[h] = kInt4 ? 1.0f : args.scales[col];
    bias[h] = HasBias ? __bfloat162float(args.bias[col]) : 0.0f;
  }
  const bool odd = g % 2 != 0;
#pragma unroll
  for (int j = 0; j < Tokens / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = rowG + 8 * h;
      const int token = m0 + 8 * j + 2 * q;
      const float v0 = acc[4 * j + 2 * h] * scale[h] + bias[h];
      const float v1 = acc[4 * j + 2 * h + 1] * scale[h] + bias[h];
      if constexpr (SplitK) {
        if (col < N) {
          float *p = static_cast<float *>(args.y) +
                     static_cast<long long>(token) * N + col;
          if (token < M)
            atomicAdd(p, v0);
          if (token + 1 < M)
            atomicAdd(p + N, v1);
        }
      } else {
        // Rows g and g ^ 1 (lanes 4 apart) are neighbouring columns: the
        // even row's lane takes token 2q of the pair, the odd row's 2q + 1.
        const float other = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
        const int t = odd ? token + 1 : token;
        const int c = odd ? col - 1 : col;
        if (t < M && c < N)
          gemm_detail::storeLinearPair<Epilogue>(static_cast<OutT *>(args.y), N,
                                                 t, c, odd ? other : v0,
                                                 odd ? v1 : other);
      }
    }
  }
}

} // namespace kernels
} // namespace sol

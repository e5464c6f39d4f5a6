//===- LinearGemmQuant.cuh - Mixed-input tensor-core GEMM (int8, int4) ----===//
//
// y = epilogue(x . W'^T + b) for many rows of bf16 x (batched decode: 2 to
// 128 rows, KernelSelection.cpp), W' the dequantized [N, K] weight in the
// formats of linear_gemv_quant (LinearGemvQuant.cuh):
//  * Int8 (W8A16): codes [N, K], float scale [N];
//  * Int4 (W4A16): nibbles [N, K / 2] (k even in the low nibble), float
//    scales and uint8 zeros [N, K / G].
// The codes are read once per block tile and dequantized in registers right
// before the mma, as Marlin does, so a step moves a quarter or half of the
// bf16 GEMM's weight bytes and nothing is dequantized into memory.
//
// linear_gemm's block (LinearGemm.cuh): BM x BN tiles, WarpsM x WarpsN
// warps of m16n8k16 bf16 mma.sync with fp32 accumulators, a Stages-deep
// cp.async ring. A stage holds KSub sub-tiles of 64 k: KSub tiles of x
// (bf16, 64 k a row) and the codes of W's rows over the same 64 * KSub k,
// KSub * 64 bytes (int8) or KSub * 32 bytes (int4) a row. A warp issues
// every ldmatrix of its stage's codes before it dequantizes the first.
// The codes keep their k order: B fragments come from ldmatrix over the
// code tile, which hands lane (g = lane / 4, q = lane % 4) bytes 4q..4q+3
// of each 16-byte chunk of row g, so the k a lane holds are not the mma's.
// The product does not depend on which k meet in which mma slot as long as
// A and B agree, so A's fragments are read to match (plain 8- or 16-byte
// shared loads instead of ldmatrix), per 64-k sub-tile:
//  * int8, chunk c = k step s: the lane's word holds k = 16s + 4q + {0..3};
//    dequantized to the bf16 pairs (k, k + 1), (k + 2, k + 3) they are b0
//    and b1, and A's a0/a2 (a1/a3 for row g + 8) are x[row][16s + 4q, +4).
//  * int4, chunk c = k steps 2c, 2c + 1: the lane's word holds k = 32c +
//    8q + {0..7}; its nibble pairs (0, 1), (2, 3) are b0, b1 of step 2c and
//    (4, 5), (6, 7) of step 2c + 1, against x[row][32c + 8q, +8).
// Dequantization as in linear_gemv_quant: int8 through the float 2^23 +
// 128 + q (q exactly, whose high half is its bf16); int4 nibbles under the
// bf16 exponent of 128, minus 128 + zero in one bf16x2 fma (q - zero
// exactly). The per-row int8 scale multiplies the fp32 sums at the end; an
// int4 group's products collect in their own accumulators, folded in with
// the group scale of each output column when the group ends (exact: W' is
// never rounded to bf16). The group scales and zeros of the next sub-tile
// are loaded a sub-tile ahead.
//
// Shared memory: x tiles have their 16-byte chunks XOR-swizzled so the A
// reads of a warp phase hit distinct banks (int8: 8-byte reads, the four
// rows of a half warp apart by (row % 4) * 2; int4: 16-byte reads, two
// rows of a quarter warp apart by 4); code tiles so that ldmatrix's 8 rows
// of a chunk fall on 8 different 16-byte bank groups.
//
// Weights are loaded before waitForPredecessor() (nothing writes them in a
// step): the first Stages - 1 code tiles are in flight while the previous
// kernel finishes.
//
// Launch: QuantGemmArgs (LaunchArgs.h), WarpsM * WarpsN * 32 threads, a
// one-dimensional grid of ceil(M / BM) * ceil(N / BN) * SplitKs blocks, M
// fastest (blocks sharing a code tile run together and share it in L2),
// QuantGemmShape::kSharedBytes of dynamic shared memory. With SplitK, y is
// the fp32 [M, N] workspace of linear_splitk_finalize (LinearGemm.cuh),
// which adds bias and epilogue. Requires K % 64 == 0 (a last stage may
// hold fewer sub-tiles) and, for int4, G % 64 == 0.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "GemmEpilogue.cuh"
#include "LinearGemvQuant.cuh"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

template <WeightFormat F, int BM, int BN, int WarpsM, int WarpsN, int Stages,
          int KSub>
struct QuantGemmShape {
  static constexpr int kSubK = 64;
  static constexpr int kStageK = kSubK * KSub;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kWarpTileM = BM / WarpsM;
  static constexpr int kWarpTileN = BN / WarpsN;
  static constexpr int kMTiles = kWarpTileM / 16;
  static constexpr int kNTiles = kWarpTileN / 8;
  // Code bytes of a W row in one sub-tile and in a stage, and the stage's
  // 16-byte chunks a row.
  static constexpr int kSubCodeBytes = F == WeightFormat::Int4 ? 32 : 64;
  static constexpr int kSubChunks = kSubCodeBytes / 16;
  static constexpr int kCodeChunks = kSubChunks * KSub;
  static constexpr int kXSubBytes = BM * kSubK * 2;
  static constexpr int kXTileBytes = KSub * kXSubBytes;
  static constexpr int kStageBytes = kXTileBytes + BN * kCodeChunks * 16;
  static constexpr int kSharedBytes = Stages * kStageBytes;
  static_assert(F == WeightFormat::Int8 || F == WeightFormat::Int4,
                "linear_gemm_quant: int8 or int4 weights");
  static_assert(kWarpTileM % 16 == 0 && kWarpTileN % 16 == 0,
                "linear_gemm_quant: warp tiles are 16k x 16k");
  static_assert(KSub == 1 || KSub == 2 || KSub == 4,
                "linear_gemm_quant: 1, 2 or 4 sub-tiles a stage");
  static_assert(Stages >= 2, "linear_gemm_quant: at least two stages");
};

namespace quant_gemm {

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in an x
// sub-tile.
template <WeightFormat F>
__device__ __forceinline__ int xChunkOffset(int row, int chunk) {
  const int flip = F == WeightFormat::Int4 ? (row & 1) << 2 : (row & 3) << 1;
  return row * 128 + ((chunk ^ flip) << 4);
}

// Byte offset of chunk `chunk` of row `row` in a code tile of Chunks
// chunks a row: rows r..r+7 of one chunk land on 8 different 16-byte bank
// groups (of the 8 in 128 bytes).
template <int Chunks>
__device__ __forceinline__ int codeChunkOffset(int row, int chunk) {
  constexpr int kRowsPerLine = Chunks >= 8 ? 1 : 8 / Chunks;
  constexpr int kMask = (Chunks >= 8 ? 8 : Chunks) - 1;
  return (row * Chunks + (chunk ^ ((row / kRowsPerLine) & kMask))) << 4;
}

// The bf16 pairs (q0, q1) and (q2, q3) of four int8 codes in k order.
__device__ __forceinline__ void dequantInt8Pairs(unsigned word, unsigned &lo,
                                                 unsigned &hi) {
  const unsigned biased = word ^ 0x80808080u;
  unsigned f[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    f[j] = __float_as_uint(
        __uint_as_float(__byte_perm(biased, 0x4b000000u, 0x7440u | j)) -
        8388736.0f); // 2^23 + 128: leaves q, whose low 16 bits are zero
  lo = __byte_perm(f[0], f[1], 0x7632u);
  hi = __byte_perm(f[2], f[3], 0x7632u);
}

// The bf16 pair (code - zero) of nibbles 2j and 2j + 1 of `word`
// (`shifted` = word >> 4).
__device__ __forceinline__ unsigned
dequantInt4Pair(unsigned word, unsigned shifted, int j, unsigned negativeZero) {
  const unsigned sel = j | j << 4 | (4 + j) << 8 | (4 + j) << 12;
  const unsigned biased =
      (__byte_perm(word, shifted, sel) & 0x000f000fu) | 0x43004300u;
  return quant_gemv::fmaBf16x2(biased, 0x3f803f80u, negativeZero);
}

// A thread's 16-byte cp.async copies of a block's code tiles (Rows rows of
// W, Chunks 16-byte chunks a row per stage of StageBytes bytes), set up once:
// source, stage-0 destination, whether its row exists, and where it starts
// along the stage's run (-1: the thread has no such copy). A copy of a
// missing row or past the row's end (the last stage may be short)
// zero-fills its chunk.
template <int Rows, int Chunks, int Threads, int StageBytes>
struct CodeTileCopies {
  static constexpr int kCopies = ceilDiv(Rows * Chunks, Threads);
  const unsigned char *from[kCopies];
  unsigned to[kCopies];
  int at[kCopies];
  bool row[kCopies];

  // Rows n0.. of the [N, rowBytes] codes w from stage firstStage on, into
  // the code tile at shared address `tile`.
  __device__ __forceinline__ CodeTileCopies(const unsigned char *w,
                                            int rowBytes, int n0, int N,
                                            int firstStage, unsigned tile) {
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      const int idx = threadIdx.x + i * Threads;
      const int r = min(idx / Chunks, Rows - 1);
      const int c = idx % Chunks;
      row[i] = n0 + r < N;
      from[i] = w + (row[i] ? static_cast<long long>(n0 + r) * rowBytes +
                                  firstStage * Chunks * 16 + c * 16
                            : 0);
      to[i] = tile + codeChunkOffset<Chunks>(r, c);
      at[i] = idx < Rows * Chunks ? c * 16 : -1;
    }
  }

  // Stage kTile (counted from firstStage) into ring slot `stage`; `left`:
  // the row's bytes from the stage's start on.
  __device__ __forceinline__ void load(int stage, int kTile, int left,
                                       const unsigned char *w) const {
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      if (at[i] < 0)
        continue;
      const bool ok = row[i] && at[i] < left;
      copyAsync16(to[i] + stage * StageBytes,
                  ok ? from[i] + kTile * Chunks * 16 : w, ok);
    }
  }
};

} // namespace quant_gemm

template <WeightFormat F, int BM, int BN, int WarpsM, int WarpsN, int Stages,
          int KSub, typename OutT, bool HasBias, int Epilogue, bool SplitK,
          int GroupSize>
__global__ void __launch_bounds__(
    QuantGemmShape<F, BM, BN, WarpsM, WarpsN, Stages, KSub>::kThreads)
    linear_gemm_quant(const __grid_constant__ QuantGemmArgs args) {
  using Shape = QuantGemmShape<F, BM, BN, WarpsM, WarpsN, Stages, KSub>;
  using namespace quant_gemm;
  constexpr bool kInt4 = F == WeightFormat::Int4;
  constexpr int kThreads = Shape::kThreads;
  constexpr int kMT = Shape::kMTiles;
  constexpr int kNT = Shape::kNTiles;
  constexpr int kSubK = Shape::kSubK;
  constexpr int kChunks = Shape::kCodeChunks;
  static_assert(!SplitK || (!HasBias && Epilogue == kEpilogueNone),
                "linear_gemm_quant: split-K adds bias and epilogue when "
                "finalizing");
  static_assert(kInt4 ? GroupSize > 0 && GroupSize % kSubK == 0
                      : GroupSize == 0,
                "linear_gemm_quant: int4 groups are a multiple of 64; int8 "
                "takes GroupSize 0");
  static_assert(!kInt4 || kNT % 2 == 0,
                "linear_gemm_quant: int4 loads code fragments for two n8 "
                "tiles at once");
  allowDependentLaunch();
  unsigned char *const shared = dynamicSharedMemory();

  const int M = args.rows;
  const int N = args.n;
  const int K = args.k;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warpM = warp / WarpsN;
  const int warpN = warp % WarpsN;
  const int g = lane / 4;
  const int q = lane % 4;
  const int mBlocks = ceilDiv(M, BM);
  const int nBlocks = ceilDiv(N, BN);
  const int block = static_cast<int>(blockIdx.x);
  const int m0 = (block % mBlocks) * BM;
  const int n0 = (block / mBlocks % nBlocks) * BN;
  const int split = block / (mBlocks * nBlocks);
  const int splits = static_cast<int>(gridDim.x) / (mBlocks * nBlocks);
  // This block's stages (of KSub sub-tiles; the last of K may be short) and
  // the sub-tiles they cover.
  const int subTiles = K / kSubK;
  const int allStages = ceilDiv(subTiles, KSub);
  const int perSplit = ceilDiv(allStages, splits);
  const int kFirst = split * perSplit;
  const int kTiles = max(0, min(allStages - kFirst, perSplit));
  const int subEnd = min(subTiles, (kFirst + kTiles) * KSub);
  const int rowBytes = kInt4 ? K / 2 : K;

  auto xTile = [&](int stage) { return shared + stage * Shape::kStageBytes; };
  auto codeTile = [&](int stage) { return xTile(stage) + Shape::kXTileBytes; };

  // The thread's 16-byte copies of a stage, set up once (x's as the codes'
  // in CodeTileCopies).
  constexpr int kXCopies = ceilDiv(KSub * BM * 8, kThreads);
  const CodeTileCopies<BN, kChunks, kThreads, Shape::kStageBytes> codeCopies(
      args.w, rowBytes, n0, N, kFirst, sharedAddress(codeTile(0)));
  const bf16 *xFrom[kXCopies];
  unsigned xTo[kXCopies];
  int xAt[kXCopies];
  bool xRow[kXCopies];
#pragma unroll
  for (int i = 0; i < kXCopies; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    const int u = min(idx / (BM * 8), KSub - 1);
    const int r = idx / 8 % BM;
    const int c = idx % 8;
    xRow[i] = m0 + r < M;
    xFrom[i] =
        args.x + (xRow[i] ? static_cast<long long>(m0 + r) * K +
                                kFirst * Shape::kStageK + u * kSubK + c * 8
                          : 0);
    xTo[i] =
        sharedAddress(xTile(0) + u * Shape::kXSubBytes + xChunkOffset<F>(r, c));
    xAt[i] = idx < KSub * BM * 8 ? u * kSubK + c * 8 : -1;
  }
  auto loadCodes = [&](int stage, int kTile) {
    codeCopies.load(stage, kTile, rowBytes - (kFirst + kTile) * kChunks * 16,
                    args.w);
  };
  auto loadX = [&](int stage, int kTile) {
    const int left = K - (kFirst + kTile) * Shape::kStageK;
#pragma unroll
    for (int i = 0; i < kXCopies; ++i) {
      if (xAt[i] < 0)
        continue;
      const bool ok = xRow[i] && xAt[i] < left;
      copyAsync16(xTo[i] + stage * Shape::kStageBytes,
                  ok ? xFrom[i] + kTile * Shape::kStageK : args.x, ok);
    }
  };

  // The codes of the first stages stream while the previous kernel ends;
  // they join stage 0's commit group, so its wait covers them.
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s)
    if (s < kTiles)
      loadCodes(s, s);
  waitForPredecessor();
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < kTiles)
      loadX(s, s);
    copyAsyncCommit();
  }

  float acc[kMT][kNT][4] = {};
  float part[kInt4 ? kMT : 1][kInt4 ? kNT : 1][4];

  // int4: the zero of the lane's B column g and the scales of its C columns
  // 2q, 2q + 1 in each n8 tile, for the group of sub-tile `sub`.
  const int warpCol0 = n0 + warpN * Shape::kWarpTileN;
  const int groups = kInt4 ? K / GroupSize : 1;
  unsigned zeroNow[kInt4 ? kNT : 1] = {}, zeroNext[kInt4 ? kNT : 1] = {};
  float scaleNow[kInt4 ? kNT : 1][2] = {}, scaleNext[kInt4 ? kNT : 1][2] = {};
  auto loadGroup = [&](int sub, unsigned(&zero)[kInt4 ? kNT : 1],
                       float(&scale)[kInt4 ? kNT : 1][2]) {
    if constexpr (kInt4) {
      const int group = sub * kSubK / GroupSize;
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        const int nb = min(warpCol0 + j * 8 + g, N - 1);
        zero[j] = args.zeros[static_cast<long long>(nb) * groups + group];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int nc = min(warpCol0 + j * 8 + 2 * q + e, N - 1);
          scale[j][e] =
              args.scales[static_cast<long long>(nc) * groups + group];
        }
      }
    }
  };
  const int subBegin = kFirst * KSub;
  if (kTiles > 0)
    loadGroup(subBegin, zeroNow, scaleNow);

  for (int kt = 0; kt < kTiles; ++kt) {
    copyAsyncWait<Stages - 2>();
    __syncthreads();
    // The stage refilled here was last read in iteration kt - 1, which every
    // thread finished before the barrier above.
    const int next = kt + Stages - 1;
    if (next < kTiles) {
      loadCodes(next % Stages, next);
      loadX(next % Stages, next);
    }
    copyAsyncCommit();

    // The stage's code fragments, all in flight before the first is used.
    // int8: lanes 8c..8c+7 address the rows of matrix c, chunk c (k step
    // c) of the sub-tile in n8 tile j. int4: lanes 8m..8m+7 address the
    // rows of matrix m, n8 tile 2p + m / 2 and chunk m % 2 of the sub-tile,
    // so codes[u][p] = {tile 2p chunk 0, chunk 1, tile 2p + 1 chunk 0,
    // chunk 1}.
    constexpr int kFragments = kInt4 ? kNT / 2 : kNT;
    unsigned codes[KSub][kFragments][4];
    {
      const unsigned char *cs = codeTile(kt % Stages);
#pragma unroll
      for (int u = 0; u < KSub; ++u)
#pragma unroll
        for (int f = 0; f < kFragments; ++f) {
          const int tile = kInt4 ? 2 * f + lane / 16 : f;
          const int chunk = kInt4 ? 2 * u + lane / 8 % 2 : 4 * u + lane / 8;
          const int r = warpN * Shape::kWarpTileN + tile * 8 + lane % 8;
          loadMatrixX4(codes[u][f],
                       sharedAddress(cs + codeChunkOffset<kChunks>(r, chunk)));
        }
    }
#pragma unroll
    for (int u = 0; u < KSub; ++u) {
      const int sub = (kFirst + kt) * KSub + u;
      if (sub >= subEnd)
        break;
      const unsigned char *xs = xTile(kt % Stages) + u * Shape::kXSubBytes;
      if constexpr (kInt4) {
        if (sub + 1 < subEnd)
          loadGroup(sub + 1, zeroNext, scaleNext);
        if (sub == subBegin || sub * kSubK % GroupSize == 0)
#pragma unroll
          for (int i = 0; i < kMT; ++i)
#pragma unroll
            for (int j = 0; j < kNT; ++j)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                part[i][j][e] = 0.0f;
        const auto &words = codes[u];
        unsigned negativeZero[kNT];
#pragma unroll
        for (int j = 0; j < kNT; ++j)
          negativeZero[j] = quant_gemv::int4NegativeZero(zeroNow[j]);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          // Every n8 tile's B fragments of k steps 2c and 2c + 1 first,
          // then the m16 tiles stream past them.
          unsigned b[kNT][4];
#pragma unroll
          for (int j = 0; j < kNT; ++j) {
            const unsigned w = words[j / 2][2 * (j % 2) + c];
            const unsigned shifted = w >> 4;
#pragma unroll
            for (int p = 0; p < 4; ++p)
              b[j][p] = dequantInt4Pair(w, shifted, p, negativeZero[j]);
          }
#pragma unroll
          for (int i = 0; i < kMT; ++i) {
            // x[row][32c + 8q, +8) for rows g and g + 8 of the m16 tile.
            uint4 xa[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = warpM * Shape::kWarpTileM + i * 16 + g + 8 * h;
              xa[h] = *reinterpret_cast<const uint4 *>(
                  xs + xChunkOffset<F>(r, 4 * c + q));
            }
            const unsigned a0[4] = {xa[0].x, xa[1].x, xa[0].y, xa[1].y};
            const unsigned a1[4] = {xa[0].z, xa[1].z, xa[0].w, xa[1].w};
#pragma unroll
            for (int j = 0; j < kNT; ++j) {
              mmaBf16(part[i][j], a0, b[j][0], b[j][1]);
              mmaBf16(part[i][j], a1, b[j][2], b[j][3]);
            }
          }
        }
        // Fold the group in when it ends here (or the split does).
        if (sub + 1 == subEnd || (sub + 1) * kSubK % GroupSize == 0)
#pragma unroll
          for (int i = 0; i < kMT; ++i)
#pragma unroll
            for (int j = 0; j < kNT; ++j)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                acc[i][j][e] =
                    fmaf(scaleNow[j][e % 2], part[i][j][e], acc[i][j][e]);
#pragma unroll
        for (int j = 0; j < kNT; ++j) {
          zeroNow[j] = zeroNext[j];
          scaleNow[j][0] = scaleNext[j][0];
          scaleNow[j][1] = scaleNext[j][1];
        }
      } else {
        const auto &words = codes[u];
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          // Every n8 tile's B fragment of k step s first, then the m16
          // tiles stream past them.
          unsigned b[kNT][2];
#pragma unroll
          for (int j = 0; j < kNT; ++j)
            dequantInt8Pairs(words[j][s], b[j][0], b[j][1]);
#pragma unroll
          for (int i = 0; i < kMT; ++i) {
            // x[row][16s + 4q, +4): half q % 2 of chunk 2s + q / 2, rows g
            // and g + 8 of the m16 tile.
            unsigned a[4];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = warpM * Shape::kWarpTileM + i * 16 + g + 8 * h;
              const uint2 v = *reinterpret_cast<const uint2 *>(
                  xs + xChunkOffset<F>(r, 2 * s + q / 2) + (q % 2) * 8);
              a[h] = v.x;
              a[2 + h] = v.y;
            }
#pragma unroll
            for (int j = 0; j < kNT; ++j)
              mmaBf16(acc[i][j], a, b[j][0], b[j][1]);
          }
        }
      }
    }
  }
  copyAsyncWait<0>();

#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int col = warpCol0 + j * 8 + 2 * q;
    if (col >= N)
      continue;
    // int8's row scale; int4's group scales are in the sums.
    const float s0 = kInt4 ? 1.0f : args.scales[col];
    const float s1 = kInt4 ? 1.0f : args.scales[col + 1];
    const float b0 = HasBias ? __bfloat162float(args.bias[col]) : 0.0f;
    const float b1 = HasBias ? __bfloat162float(args.bias[col + 1]) : 0.0f;
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + warpM * Shape::kWarpTileM + i * 16 + g + 8 * h;
        if (row >= M)
          continue;
        const float v0 = acc[i][j][2 * h] * s0;
        const float v1 = acc[i][j][2 * h + 1] * s1;
        if constexpr (SplitK) {
          float *p = static_cast<float *>(args.y) +
                     static_cast<long long>(row) * N + col;
          atomicAdd(p, v0);
          atomicAdd(p + 1, v1);
        } else {
          gemm_detail::storeLinearPair<Epilogue>(static_cast<OutT *>(args.y), N,
                                                 row, col, v0 + b0, v1 + b1);
        }
      }
    }
  }
}

} // namespace kernels
} // namespace sol

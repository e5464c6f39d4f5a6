//===- GemmTiles.cuh - The mma.sync main loop of the bf16 tensor-core GEMMs =//
//
// What linear_gemm (LinearGemm.cuh) and the grouped expert GEMMs
// (MoeGroupedGemm.cuh) share: a block tile BM x BN x 64 over WarpsM x
// WarpsN warps, each warp a (BM / WarpsM) x (BN / WarpsN) tile of
// m16n8k16 bf16 mma.sync with fp32 accumulators. Both operands are
// K-contiguous ([rows, K] activations, [N, K] weights), so both feed
// ldmatrix without transposes. Tiles stream into a Stages-deep
// shared-memory ring with cp.async; each 128-byte tile row has its 16-byte
// chunks XOR-swizzled by (row % 8) so cp.async stores and ldmatrix reads are
// free of bank conflicts. The caller's loader decides which rows a stage
// copies (contiguous rows, or rows gathered by expert).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

template <int BM, int BN, int WarpsM, int WarpsN, int Stages> struct GemmShape {
  static constexpr int kBM = BM;
  static constexpr int kBN = BN;
  static constexpr int kBK = 64;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kWarpsM = WarpsM;
  static constexpr int kWarpsN = WarpsN;
  static constexpr int kWarpTileM = BM / WarpsM;
  static constexpr int kWarpTileN = BN / WarpsN;
  static constexpr int kMTiles = kWarpTileM / 16;
  static constexpr int kNTiles = kWarpTileN / 8;
  static constexpr int kStageElems = (BM + BN) * kBK;
  static constexpr int kSharedBytes = Stages * kStageElems * 2;
  static_assert(kWarpTileM % 16 == 0, "gemm: warp tile M must be 16k");
  static_assert(kWarpTileN % 16 == 0, "gemm: warp tile N must be 16k");
  static_assert((BM * 8) % kThreads == 0 && (BN * 8) % kThreads == 0,
                "gemm: tile chunks must split evenly over the threads");
  static_assert(Stages >= 2, "gemm: at least two pipeline stages");
};

namespace gemm_detail {

// Offset (in elements) of 16-byte chunk `chunk` of row `row` in a tile of
// 64-element rows.
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * 64 + ((chunk ^ (row & 7)) * 8);
}

// Copies rows [row0, row0 + Rows) x columns [k0, k0 + 64) of a [rows, K]
// matrix into a swizzled tile; out-of-range chunks become zeros.
template <int Rows, int Threads>
__device__ __forceinline__ void loadTile(bf16 *tile, const bf16 *src, int row0,
                                         int rows, int k0, int K) {
#pragma unroll
  for (int i = 0; i < Rows * 8 / Threads; ++i) {
    const int idx = threadIdx.x + i * Threads;
    const int r = idx / 8;
    const int c = idx % 8;
    const int gRow = row0 + r;
    const int gK = k0 + c * 8;
    const bool ok = gRow < rows && gK < K;
    const bf16 *from = ok ? src + static_cast<long long>(gRow) * K + gK : src;
    copyAsync16(sharedAddress(tile + swizzled(r, c)), from, ok);
  }
}

// acc = the block's tile of A . B^T over kTiles K tiles of 64. loadStage(
// stage, kTile) issues the cp.async copies of K tile kTile of A (BM rows,
// first in the stage) and B (BN rows after them) into ring stage `stage`.
// Every thread of the block calls it; all copies have landed on return.
template <typename Shape, int Stages, typename LoadStage>
__device__ __forceinline__ void
gemmMainLoop(const bf16 *shared, int kTiles, LoadStage &&loadStage, int warpM,
             int warpN, int lane,
             float (&acc)[Shape::kMTiles][Shape::kNTiles][4]) {
  constexpr int kMT = Shape::kMTiles;
  constexpr int kNT = Shape::kNTiles;
  constexpr int BM = Shape::kBM;
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < kTiles)
      loadStage(s, s);
    copyAsyncCommit();
  }

  for (int kt = 0; kt < kTiles; ++kt) {
    // Tile kt has landed once at most Stages - 2 newer groups are pending.
    copyAsyncWait<Stages - 2>();
    __syncthreads();
    // The stage refilled here was last read in iteration kt - 1, which every
    // thread finished before the barrier above.
    const int next = kt + Stages - 1;
    if (next < kTiles)
      loadStage(next % Stages, next);
    copyAsyncCommit();

    const bf16 *tileA = shared + (kt % Stages) * Shape::kStageElems;
    const bf16 *tileB = tileA + BM * Shape::kBK;
#pragma unroll
    for (int kk = 0; kk < Shape::kBK / 16; ++kk) {
      unsigned a[kMT][4];
      unsigned b[kNT][2];
#pragma unroll
      for (int i = 0; i < kMT; ++i) {
        const int r = warpM * Shape::kWarpTileM + i * 16 + lane % 16;
        const int c = kk * 2 + lane / 16;
        loadMatrixX4(a[i], sharedAddress(tileA + swizzled(r, c)));
      }
#pragma unroll
      for (int j = 0; j < kNT / 2; ++j) {
        const int r =
            warpN * Shape::kWarpTileN + j * 16 + lane % 8 + (lane / 16) * 8;
        const int c = kk * 2 + (lane / 8) % 2;
        unsigned q[4];
        loadMatrixX4(q, sharedAddress(tileB + swizzled(r, c)));
        b[2 * j][0] = q[0];
        b[2 * j][1] = q[1];
        b[2 * j + 1][0] = q[2];
        b[2 * j + 1][1] = q[3];
      }
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < kNT; ++j)
          mmaBf16(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }
  copyAsyncWait<0>();
}

} // namespace gemm_detail

} // namespace kernels
} // namespace sol

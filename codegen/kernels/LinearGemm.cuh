//===- LinearGemm.cuh - y = x * W^T (+ b) on tensor cores (prefill) -------===//
//
// x is [M, K] (M = tokens, any M >= 1), W is [N, K], y is [M, N] in bf16 or
// fp32; N and K must be multiples of 8 (partial K tiles are zero-filled).
// Epilogue (kEpilogue*, Common.cuh) adds y into a residual stream in place or
// applies SwiGLU to interleaved gate/up column pairs (y is then [M, N / 2]).
// Both operands are K-contiguous, so both feed ldmatrix without transposes.
//
// Block tile BM x BN x 64, WarpsM x WarpsN warps, each warp a
// (BM / WarpsM) x (BN / WarpsN) tile of m16n8k16 bf16 mma.sync with fp32
// accumulators. Tiles stream into a Stages-deep shared-memory ring with
// cp.async; each 128-byte tile row has its 16-byte chunks XOR-swizzled by
// (row % 8) so cp.async stores and ldmatrix reads are free of bank conflicts.
//
// Launch: LinearArgs (LaunchArgs.h; M is its rows, K its k), WarpsM *
// WarpsN * 32 threads, grid (ceil(M / BM), ceil(N / BN)) so
// that neighbouring blocks share a weight tile in L2, and
// GemmShape<...>::kSharedBytes of dynamic shared memory (raise the function's
// dynamic shared memory limit first: it is above 48 KB).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Common.cuh"
#include "GemmEpilogue.cuh"
#include "LaunchArgs.h"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

template <int BM, int BN, int WarpsM, int WarpsN, int Stages> struct GemmShape {
  static constexpr int kBK = 64;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
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

} // namespace gemm_detail

// With SplitK, blockIdx.z takes the z-th of gridDim.z slices of K and adds
// its partial sums into y, an fp32 [M, N] workspace that starts at zero
// (HasBias false, no epilogue); linear_splitk_finalize then applies bias and
// epilogue. Few-row steps (batched decode) have too few output tiles to keep
// the GPU streaming weights otherwise.
template <int BM, int BN, int WarpsM, int WarpsN, int Stages, typename OutT,
          bool HasBias, int Epilogue, bool SplitK>
__global__ void
__launch_bounds__(GemmShape<BM, BN, WarpsM, WarpsN, Stages>::kThreads)
    linear_gemm(const __grid_constant__ LinearArgs args) {
  static_assert(!SplitK || (!HasBias && Epilogue == kEpilogueNone),
                "linear_gemm: split-K adds bias and epilogue when finalizing");
  allowDependentLaunch();
  waitForPredecessor();
  OutT *const y = static_cast<OutT *>(args.y);
  const bf16 *const bias = args.bias;
  const int M = args.rows;
  const int N = args.n;
  const int K = args.k;
  using namespace gemm_detail;
  using Shape = GemmShape<BM, BN, WarpsM, WarpsN, Stages>;
  constexpr int kThreads = Shape::kThreads;
  constexpr int kMT = Shape::kMTiles;
  constexpr int kNT = Shape::kNTiles;
  extern __shared__ __align__(128) unsigned char gemmShared[];
  bf16 *shared = reinterpret_cast<bf16 *>(gemmShared);

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warpM = warp / WarpsN;
  const int warpN = warp % WarpsN;
  const int m0 = blockIdx.x * BM;
  const int n0 = blockIdx.y * BN;
  // This block's K tiles: all of them, or its split's.
  const int allTiles = ceilDiv(K, Shape::kBK);
  const int perSplit = ceilDiv(allTiles, static_cast<int>(gridDim.z));
  const int kFirst = static_cast<int>(blockIdx.z) * perSplit;
  const int kTiles = max(0, min(allTiles - kFirst, perSplit));

  // The tile loads read the launch arguments from the parameter itself: with
  // the locals above captured instead, NVVM hoists the swizzled shared-memory
  // offsets out of the K loop and the 128 x 128 tiles need 166 registers
  // (one block per SM) instead of 128 (two).
  auto loadStage = [&](int stage, int kTile) {
    bf16 *tileA = shared + stage * Shape::kStageElems;
    bf16 *tileB = tileA + BM * Shape::kBK;
    const int k0 = (kFirst + kTile) * Shape::kBK;
    loadTile<BM, kThreads>(tileA, args.x, m0, args.rows, k0, args.k);
    loadTile<BN, kThreads>(tileB, args.w, n0, args.n, k0, args.k);
  };

  float acc[kMT][kNT][4];
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

#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int col = n0 + warpN * Shape::kWarpTileN + j * 8 + (lane % 4) * 2;
    if (col >= N)
      continue;
    const float b0 = HasBias ? __bfloat162float(bias[col]) : 0.0f;
    const float b1 = HasBias ? __bfloat162float(bias[col + 1]) : 0.0f;
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      const int row = m0 + warpM * Shape::kWarpTileM + i * 16 + lane / 4;
      if constexpr (SplitK) {
        float *p = reinterpret_cast<float *>(y);
        if (row < M) {
          atomicAdd(p + static_cast<long long>(row) * N + col, acc[i][j][0]);
          atomicAdd(p + static_cast<long long>(row) * N + col + 1,
                    acc[i][j][1]);
        }
        if (row + 8 < M) {
          atomicAdd(p + static_cast<long long>(row + 8) * N + col,
                    acc[i][j][2]);
          atomicAdd(p + static_cast<long long>(row + 8) * N + col + 1,
                    acc[i][j][3]);
        }
        continue;
      }
      if (row < M)
        storeLinearPair<Epilogue>(y, N, row, col, acc[i][j][0] + b0,
                                  acc[i][j][1] + b1);
      if (row + 8 < M)
        storeLinearPair<Epilogue>(y, N, row + 8, col, acc[i][j][2] + b0,
                                  acc[i][j][3] + b1);
    }
  }
}

// y = epilogue(partial + bias) for the [M, N] fp32 sums of a split-K
// linear_gemm, which it sets back to zero for the next one. One thread per
// column pair; grid-stride.
template <typename OutT, bool HasBias, int Epilogue>
__global__ void __launch_bounds__(256)
    linear_splitk_finalize(const __grid_constant__ SplitKFinalizeArgs args) {
  allowDependentLaunch();
  waitForPredecessor();
  OutT *const y = static_cast<OutT *>(args.y);
  float *const partial = args.partial;
  const bf16 *const bias = args.bias;
  const int M = args.rows;
  const int N = args.n;
  const long long pairs = static_cast<long long>(M) * (N / 2);
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < pairs;
       i += static_cast<long long>(gridDim.x) * 256) {
    const int row = static_cast<int>(i / (N / 2));
    const int col = static_cast<int>(i % (N / 2)) * 2;
    float2 *p = reinterpret_cast<float2 *>(
        partial + static_cast<long long>(row) * N + col);
    const float2 v = *p;
    *p = make_float2(0.0f, 0.0f);
    const float b0 = HasBias ? __bfloat162float(bias[col]) : 0.0f;
    const float b1 = HasBias ? __bfloat162float(bias[col + 1]) : 0.0f;
    gemm_detail::storeLinearPair<Epilogue>(y, N, row, col, v.x + b0, v.y + b1);
  }
}

} // namespace kernels
} // namespace sol

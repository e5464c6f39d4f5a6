//===- LinearGemm.cuh - y = x * W^T (+ b) on tensor cores (prefill) -------===//
//
// x is [M, K] (M = tokens, any M >= 1), W is [N, K], y is [M, N] in bf16 or
// fp32; N and K must be multiples of 8 (partial K tiles are zero-filled).
// Epilogue (kEpilogue*, Common.cuh) adds y into a residual stream in place or
// applies SwiGLU to interleaved gate/up column pairs (y is then [M, N / 2]).
// Both operands are K-contiguous, so both feed ldmatrix without transposes.
//
// Block tile BM x BN x 64 over WarpsM x WarpsN warps, the main loop of
// GemmTiles.cuh (mma.sync, a cp.async ring of swizzled tiles).
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
#include "GemmTiles.cuh"
#include "LaunchArgs.h"

namespace sol {
namespace kernels {

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
  gemmMainLoop<Shape, Stages>(shared, kTiles, loadStage, warpM, warpN, lane,
                              acc);

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

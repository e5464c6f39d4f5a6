//===- LinearWgmmaFp8.cuh - W8A8 GEMM on Hopper's fp8 tensor cores --------===//
//
// y = epilogue(xs[t] * ws[n] * (xq[t] . wq[n]) + b[n]) for the fp8 plans'
// prompt steps: x's rows quantized by quantize_rows_fp8
// (QuantizeActivations.cuh; E4M3 codes xq and a scale xs a row), W's E4M3
// codes wq with a scale ws a row. cuBLASLt takes those scales only as
// 128-k block scales on Hopper (no per-row mode), at about 860 TFLOP/s on
// an H100; scaling the fp32 sums once in the epilogue is what lets the
// tensor cores run at the rate of plain fp8 products.
//
// Block: three warpgroups. The first is the producer: one thread walks K
// in steps of 128 and asks the TMA (Tma.cuh) for the step's x box (128
// rows x 128 bytes) and W box (TileN rows x 128 bytes) into a ring of
// Stages stages, each arriving on the stage's "full" mbarrier with its
// bytes; before reusing a stage it waits on the stage's "empty" barrier.
// The other two are consumers, each 64 rows of x against the TileN
// columns: per stage four wgmma m64nTileNk32 (Wgmma.cuh) straight from the
// swizzled boxes, committed as one group; once the next stage's group is
// issued the previous one is waited for and its stage released (one
// arrival per warp), so the tensor cores always have a group queued. The
// producer gives registers back (setmaxnreg) so the consumers' TileN / 2
// fp32 accumulators fit (a warpgroup's 128 x (168 - 40) registers given
// back are exactly the two consumers' 256 x (232 - 168) taken: an increase
// the block cannot cover waits forever).
//
// Persistent: block b takes output tiles b, b + grid, ... (rows fastest:
// the tiles in flight share W's tiles and all of x in L2), and the ring
// runs on across them, so the producer fills the next tile's stages while
// the consumers store the last one's outputs.
//
// Epilogue: a lane holds, per 8 columns j, columns 8j + 2q, +1 of rows g
// and g + 8 of its warp's 16: a pair of neighbouring columns, what
// GemmEpilogue.cuh's stores take (SwiGLU's gate/up pairs, the residual's
// bf16 pairs). Sums are scaled by xs[t] * ws[n] in fp32, then the bias.
// The tile's column scales are loaded before its main loop and read from
// shared memory after it. Loaded in the epilogue, each column pair's
// global load waited behind the previous pair's store (which may alias it):
// a fixed ~12 us a tile beside 0.74 us a k step on an H100, 908 TFLOP/s
// for the 8B gate/up at 2,048 rows against 1,143 now.
//
// Launch: Fp8GemmArgs (LaunchArgs.h), 384 threads, a one-dimensional grid
// of at most one block a multiprocessor (Fp8WgmmaSpec::dims),
// Fp8WgmmaShape::kSharedBytes of dynamic shared memory. Requires k % 16 == 0
// (the tensor maps' row pitch) and n % 8 == 0. Rows and columns past the
// tensor's end arrive as zeros and are not stored.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "GemmEpilogue.cuh"
#include "Tma.cuh"
#include "Wgmma.cuh"

namespace sol {
namespace kernels {

template <int TileN, int Stages> struct Fp8WgmmaShape {
  static constexpr int kTileM = 128;
  static constexpr int kTileK = 128; // bytes of E4M3: one swizzle row
  static constexpr int kThreads = 384;
  static constexpr int kXBytes = kTileM * kTileK;
  static constexpr int kWBytes = TileN * kTileK;
  static constexpr int kStageBytes = kXBytes + kWBytes;
  // The boxes need 1,024-byte alignment (the swizzle's atom); the dynamic
  // shared memory's base is aligned up to it.
  static constexpr int kSharedBytes = Stages * kStageBytes + 1024;
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  // The registers the two consumer warpgroups take must be ones the
  // producer gave back (168 a thread at launch): an increase the block
  // cannot cover waits forever.
  static_assert(128 * (168 - kProducerRegisters) >=
                    256 * (kConsumerRegisters - 168),
                "linear_wgmma_fp8: unbalanced setmaxnreg");
  static_assert(TileN == 128 || TileN == 256,
                "linear_wgmma_fp8: 128 or 256 columns a block");
  static_assert(Stages >= 2, "linear_wgmma_fp8: at least two stages");
};

template <int TileN, int Stages, bool HasBias, int Epilogue>
__global__ void __launch_bounds__(384, 1)
    linear_wgmma_fp8(const __grid_constant__ Fp8GemmArgs args) {
  using Shape = Fp8WgmmaShape<TileN, Stages>;
  constexpr int kAcc = TileN / 2;
  extern __shared__ unsigned char dynamicShared[];
  __shared__ __align__(8) unsigned long long barriers[2 * Stages];
  const unsigned ring = (sharedAddress(dynamicShared) + 1023u) & ~1023u;
  auto stageX = [&](int s) { return ring + s * Shape::kStageBytes; };
  auto stageW = [&](int s) {
    return ring + s * Shape::kStageBytes + Shape::kXBytes;
  };
  auto full = [&](int s) { return sharedAddress(&barriers[s]); };
  auto empty = [&](int s) { return sharedAddress(&barriers[Stages + s]); };

  const int M = args.rows, N = args.n;
  const int mTiles = (M + Shape::kTileM - 1) / Shape::kTileM;
  const int tiles = mTiles * ((N + TileN - 1) / TileN);
  const int kTiles = (args.k + Shape::kTileK - 1) / Shape::kTileK;
  const int warpGroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Stages; ++s) {
      mbarrierInit(full(s), 1);
      mbarrierInit(empty(s), 8); // the consumers' eight warps
    }
    mbarrierInitFence();
  }
  __syncthreads();
  allowDependentLaunch();
  // x comes from quantize_rows_fp8, and the residual epilogue reads y.
  waitForPredecessor();

  // Ring position `it` (k steps over all of the block's tiles): stage
  // it % Stages in its round it / Stages.
  if (warpGroup == 0) {
    releaseRegisters<Shape::kProducerRegisters>();
    if (threadIdx.x == 0) {
      int it = 0;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int m0 = tile % mTiles * Shape::kTileM;
        const int n0 = tile / mTiles * TileN;
        for (int kt = 0; kt < kTiles; ++kt, ++it) {
          const int s = it % Stages;
          if (it >= Stages)
            mbarrierWait(empty(s), (it / Stages - 1) & 1);
          mbarrierArriveExpectBytes(full(s), Shape::kStageBytes);
          tmaLoad2d(stageX(s), args.x, full(s), kt * Shape::kTileK, m0);
          tmaLoad2d(stageW(s), args.w, full(s), kt * Shape::kTileK, n0);
        }
      }
    }
    return;
  }

  claimRegisters<Shape::kConsumerRegisters>();
  const int consumer = warpGroup - 1; // rows 64 * consumer.. of a tile
  const int lane = threadIdx.x % 32;
  const int thread = threadIdx.x % 128;
  const int warp = thread / 32;
  const int g = lane / 4, q = lane % 4;
  // The tile's column scales (and bias) in shared memory, one copy a
  // consumer: loaded into registers before the main loop and stored after
  // it, so the epilogue does not wait on global loads.
  __shared__ float2 columnScales[2][TileN / 2];
  __shared__ float2 columnBias[2][HasBias ? TileN / 2 : 1];
  bf16 *__restrict__ const y = args.y;
  float acc[kAcc];
  int it = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int m0 = tile % mTiles * Shape::kTileM;
    const int n0 = tile / mTiles * TileN;
    const int rowG = m0 + 64 * consumer + 16 * warp + g;
    float xs[2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      xs[h] = rowG + 8 * h < M ? args.xScales[rowG + 8 * h] : 0.0f;
    float2 scalePair = make_float2(0.0f, 0.0f), biasPair = scalePair;
    if (thread < TileN / 2 && n0 + 2 * thread < N) {
      scalePair =
          *reinterpret_cast<const float2 *>(args.wScales + n0 + 2 * thread);
      if constexpr (HasBias)
        biasPair =
            make_float2(__bfloat162float(args.bias[n0 + 2 * thread]),
                        __bfloat162float(args.bias[n0 + 2 * thread + 1]));
    }

    for (int kt = 0; kt < kTiles; ++kt, ++it) {
      const int s = it % Stages;
      mbarrierWait(full(s), (it / Stages) & 1);
      const unsigned x = stageX(s) + consumer * 64 * Shape::kTileK;
      const unsigned w = stageW(s);
      wgmmaFence();
#pragma unroll
      for (int kk = 0; kk < Shape::kTileK / 32; ++kk)
        wgmmaFp8<TileN>(acc, wgmmaSwizzle128Descriptor(x + 32 * kk),
                        wgmmaSwizzle128Descriptor(w + 32 * kk),
                        kt > 0 || kk > 0);
      wgmmaCommit();
      // The previous step's group has finished: its boxes may be refilled.
      wgmmaWait<1>();
      if (kt > 0 && lane == 0)
        mbarrierArrive(empty((it - 1) % Stages));
    }
    wgmmaWait<0>();
#pragma unroll
    for (int e = 0; e < kAcc; ++e)
      wgmmaHold(acc[e]);
    // The tile's last stage; the producer is already filling the others
    // with the next tile's steps while this epilogue runs.
    if (lane == 0)
      mbarrierArrive(empty((it - 1) % Stages));

    // The consumer's warps have left the previous epilogue (named barrier
    // 1 + consumer over its 128 threads) before the scales are replaced.
    warpGroupBarrier(1 + consumer);
    if (thread < TileN / 2) {
      columnScales[consumer][thread] = scalePair;
      if constexpr (HasBias)
        columnBias[consumer][thread] = biasPair;
    }
    warpGroupBarrier(1 + consumer);

    // acc[4j + 2h + e]: row rowG + 8h, column n0 + 8j + 2q + e.
#pragma unroll
    for (int j = 0; j < TileN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * q;
      if (col >= N)
        continue;
      const float2 ws = columnScales[consumer][4 * j + q];
      float2 b = make_float2(0.0f, 0.0f);
      if constexpr (HasBias)
        b = columnBias[consumer][4 * j + q];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = rowG + 8 * h;
        if (row < M)
          gemm_detail::storeLinearPair<Epilogue>(
              y, N, row, col, acc[4 * j + 2 * h] * xs[h] * ws.x + b.x,
              acc[4 * j + 2 * h + 1] * xs[h] * ws.y + b.y);
      }
    }
  }
}

} // namespace kernels
} // namespace sol

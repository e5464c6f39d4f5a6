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
// Block: three warpgroups, persistent (block b takes output tiles b,
// b + grid, ..., rows fastest: the tiles in flight share W's tiles and all
// of x in L2).
//  * Producer (warp 0 of the first warpgroup): one thread walks each
//    tile's K in steps of 128 and asks the TMA (Tma.cuh) for the step's x
//    box (128 rows x 128 bytes) and W box (TileN rows x 128 bytes) into a
//    ring of Stages stages, each arriving on the stage's "full" mbarrier
//    with its bytes; before reusing a stage it waits on its "empty"
//    barrier. The ring runs on across tiles, so the next tile's stages
//    fill while a tile ends.
//  * Consumers (the other two warpgroups), each 64 rows of x against the
//    TileN columns: per stage four wgmma m64nTileNk32 (Wgmma.cuh) straight
//    from the swizzled boxes, committed as one group; once the next
//    stage's group is issued the previous one is waited for and its stage
//    released (one arrival per warp), so the tensor cores always have a
//    group queued. At a tile's end each lane scales its sums (a pair of
//    neighbouring columns of rows g and g + 8 per 8 columns) by xs[t] *
//    ws[n], adds the bias, rounds to bf16 and writes them into the output
//    tile in shared memory (16-byte chunks swizzled by row: no bank
//    conflicts), then goes on to the next tile.
//  * Epilogue warps (warps 1-3 of the first warpgroup): wait for the
//    output tile, store it a row at a time (16-byte coalesced accesses)
//    through the epilogue (plain; the residual added to y; SwiGLU/GeGLU of
//    the interleaved gate/up pairs, GemmEpilogue.cuh's roundings), and
//    free it, while the consumers run the next tile's main loop.
// The first warpgroup gives registers back (setmaxnreg) so the consumers'
// TileN / 2 fp32 accumulators fit. The tile's column scales (and bias)
// arrive in shared memory by cp.async during the main loop.
//
// Where the time went (H100, 8B gate/up at 2,048 rows): with the scales
// loaded and the outputs stored by the consumers at each tile's end, a tile
// took a fixed ~12 us beside 0.74 us a k step (each column pair's global
// load waited behind the previous pair's store, which may alias it), 908
// TFLOP/s; with the scales in shared memory 1,143 TFLOP/s; with the stores
// left to the epilogue warps 1,254 (three stages beside the output tile
// instead of four).
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
  // The tile's bf16 outputs on their way to the epilogue warps: rows of
  // TileN * 2 bytes, 16-byte chunk c of row r at chunk c ^ (r % 8).
  static constexpr int kOutRowBytes = TileN * 2;
  static constexpr int kOutBytes = kTileM * kOutRowBytes;
  // The boxes need 1,024-byte alignment (the swizzle's atom); the dynamic
  // shared memory's base is aligned up to it.
  static constexpr int kSharedBytes = kOutBytes + Stages * kStageBytes + 1024;
  // The first warpgroup (producer and epilogue warps) gives registers back
  // and the two consumer warpgroups take them (168 a thread at launch). The
  // registers taken must be ones given back: an increase the block cannot
  // cover waits forever.
  static constexpr int kProducerRegisters = 56;
  static constexpr int kConsumerRegisters = 224;
  static_assert(128 * (168 - kProducerRegisters) >=
                    256 * (kConsumerRegisters - 168),
                "linear_wgmma_fp8: unbalanced setmaxnreg");
  static constexpr int kEpilogueWarps = 3;
  static_assert(TileN == 128 || TileN == 256,
                "linear_wgmma_fp8: 128 or 256 columns a block");
  static_assert(Stages >= 2, "linear_wgmma_fp8: at least two stages");
};

namespace fp8_wgmma {

// The epilogue of 8 neighbouring columns (col..col + 7, col a multiple of
// 8) of one row, v their bf16 values x . W^T * scales + bias: stored, added
// to y (residual), or the 4 gated outputs of its (gate, up) pairs.
template <int Epilogue>
__device__ __forceinline__ void storeChunk(bf16 *__restrict__ y, int N, int row,
                                           int col, uint4 v) {
  const unsigned in[4] = {v.x, v.y, v.z, v.w};
  if constexpr (isGatedEpilogue(Epilogue)) {
    unsigned out[2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
      out[i] = packBf16Pair(gateActivation<Epilogue>(lowBf16(in[2 * i])) *
                                highBf16(in[2 * i]),
                            gateActivation<Epilogue>(lowBf16(in[2 * i + 1])) *
                                highBf16(in[2 * i + 1]));
    *reinterpret_cast<uint2 *>(y + static_cast<long long>(row) * (N / 2) +
                               col / 2) = make_uint2(out[0], out[1]);
  } else {
    uint4 *p =
        reinterpret_cast<uint4 *>(y + static_cast<long long>(row) * N + col);
    if constexpr (Epilogue == kEpilogueResidual) {
      const uint4 old = *p;
      const unsigned o[4] = {old.x, old.y, old.z, old.w};
      unsigned sum[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        sum[i] = packBf16Pair(lowBf16(o[i]) + lowBf16(in[i]),
                              highBf16(o[i]) + highBf16(in[i]));
      v = make_uint4(sum[0], sum[1], sum[2], sum[3]);
    }
    *p = v;
  }
}

} // namespace fp8_wgmma

template <int TileN, int Stages, bool HasBias, int Epilogue>
__global__ void __launch_bounds__(384, 1)
    linear_wgmma_fp8(const __grid_constant__ Fp8GemmArgs args) {
  using Shape = Fp8WgmmaShape<TileN, Stages>;
  constexpr int kAcc = TileN / 2;
  extern __shared__ unsigned char dynamicShared[];
  __shared__ __align__(8) unsigned long long barriers[2 * Stages + 2];
  const unsigned out = (sharedAddress(dynamicShared) + 1023u) & ~1023u;
  unsigned char *const outTile =
      dynamicShared + (out - sharedAddress(dynamicShared));
  const unsigned ring = out + Shape::kOutBytes;
  auto stageX = [&](int s) { return ring + s * Shape::kStageBytes; };
  auto stageW = [&](int s) {
    return ring + s * Shape::kStageBytes + Shape::kXBytes;
  };
  auto full = [&](int s) { return sharedAddress(&barriers[s]); };
  auto empty = [&](int s) { return sharedAddress(&barriers[Stages + s]); };
  // outFull: the consumers' 8 warps have written a tile's outputs;
  // outFree: the epilogue warps have read them.
  const unsigned outFull = sharedAddress(&barriers[2 * Stages]);
  const unsigned outFree = sharedAddress(&barriers[2 * Stages + 1]);

  const int M = args.rows, N = args.n;
  const int mTiles = (M + Shape::kTileM - 1) / Shape::kTileM;
  const int tiles = mTiles * ((N + TileN - 1) / TileN);
  const int kTiles = (args.k + Shape::kTileK - 1) / Shape::kTileK;
  const int warpGroup = threadIdx.x / 128;
  const int lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Stages; ++s) {
      mbarrierInit(full(s), 1);
      mbarrierInit(empty(s), 8); // the consumers' eight warps
    }
    mbarrierInit(outFull, 8);
    mbarrierInit(outFree, Shape::kEpilogueWarps);
    mbarrierInitFence();
  }
  __syncthreads();
  allowDependentLaunch();
  // x comes from quantize_rows_fp8, and the residual epilogue reads y.
  waitForPredecessor();

  if (warpGroup == 0) {
    releaseRegisters<Shape::kProducerRegisters>();
    const int warp = threadIdx.x / 32;
    if (warp == 0) {
      // The producer. Ring position `it` (k steps over all of the block's
      // tiles): stage it % Stages in its round it / Stages.
      if (lane != 0)
        return;
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
      return;
    }
    // The epilogue warps: a warp takes one row's chunks at a time (coalesced
    // global accesses), while the consumers run the next tile's main loop.
    bf16 *__restrict__ const y = args.y;
    constexpr int kChunks = TileN / 8; // 16-byte chunks a row
    const int t = threadIdx.x - 32;
    int round = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++round) {
      const int m0 = tile % mTiles * Shape::kTileM;
      const int n0 = tile / mTiles * TileN;
      mbarrierWait(outFull, round & 1);
      for (int i = t; i < Shape::kTileM * kChunks;
           i += 32 * Shape::kEpilogueWarps) {
        const int r = i / kChunks, c = i % kChunks;
        const int row = m0 + r, col = n0 + 8 * c;
        if (row < M && col < N)
          fp8_wgmma::storeChunk<Epilogue>(
              y, N, row, col,
              *reinterpret_cast<const uint4 *>(
                  outTile + r * Shape::kOutRowBytes + 16 * (c ^ (r % 8))));
      }
      __syncwarp();
      if (lane == 0)
        mbarrierArrive(outFree);
    }
    return;
  }

  claimRegisters<Shape::kConsumerRegisters>();
  const int consumer = warpGroup - 1; // rows 64 * consumer.. of a tile
  const int thread = threadIdx.x % 128;
  const int warp = thread / 32;
  const int g = lane / 4, q = lane % 4;
  // The tile's column scales (and bias) in shared memory, one copy a
  // consumer and two tiles (a slow warp may still read the last tile's):
  // copied by cp.async while the main loop runs, so that no global load
  // waits at the tile's end and no register holds them across it.
  __shared__ float2 columnScales[2][2][TileN / 2];
  __shared__ unsigned columnBias[2][2][HasBias ? TileN / 2 : 1];
  float acc[kAcc];
  int it = 0, round = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++round) {
    const int m0 = tile % mTiles * Shape::kTileM;
    const int n0 = tile / mTiles * TileN;
    const int rowG = 64 * consumer + 16 * warp + g; // in the tile
    float xs[2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      xs[h] = m0 + rowG + 8 * h < M ? args.xScales[m0 + rowG + 8 * h] : 0.0f;
    const int buffer = round & 1;
    if (thread < TileN / 2) {
      const int col = min(n0 + 2 * thread, N - 2);
      const bool valid = n0 + 2 * thread < N;
      copyAsync8(sharedAddress(&columnScales[consumer][buffer][thread]),
                 args.wScales + col, valid);
      if constexpr (HasBias)
        copyAsync4(sharedAddress(&columnBias[consumer][buffer][thread]),
                   args.bias + col, valid);
    }
    copyAsyncCommit();

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
    // with the next tile's steps.
    if (lane == 0)
      mbarrierArrive(empty((it - 1) % Stages));

    // Every thread's scales have landed.
    copyAsyncWait<0>();
    warpGroupBarrier(1 + consumer);
    // The epilogue warps have read the previous tile's outputs.
    if (round > 0) {
      mbarrierWait(outFree, (round - 1) & 1);
    }
    // acc[4j + 2h + e]: row rowG + 8h, column 8j + 2q + e of the tile, into
    // chunk j of the row (swizzled: rows g of a store are 8 chunks apart,
    // all 32 banks).
#pragma unroll
    for (int j = 0; j < TileN / 8; ++j) {
      const float2 ws = columnScales[consumer][buffer][4 * j + q];
      float2 b = make_float2(0.0f, 0.0f);
      if constexpr (HasBias) {
        const unsigned pair = columnBias[consumer][buffer][4 * j + q];
        b = make_float2(lowBf16(pair), highBf16(pair));
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = rowG + 8 * h;
        *reinterpret_cast<unsigned *>(outTile + r * Shape::kOutRowBytes +
                                      16 * (j ^ (r % 8)) + 4 * q) =
            packBf16Pair(acc[4 * j + 2 * h] * xs[h] * ws.x + b.x,
                         acc[4 * j + 2 * h + 1] * xs[h] * ws.y + b.y);
      }
    }
    __syncwarp();
    if (lane == 0)
      mbarrierArrive(outFull);
  }
}

} // namespace kernels
} // namespace sol

//===- LinearGemv.cuh - y = x * W^T (+ b) for a few rows (decode) ---------===//
//
// The bandwidth-bound linear layer of decode steps: x is [rows, K] with
// rows <= MaxRows (1..8), W is [N, K] (Hugging Face `out x in`), y is
// [rows, N] in bf16 or fp32 (logits). Every weight element is read exactly
// once per launch and used for all rows.
//
// A block is 8 warps arranged as (8 / WarpsK) warps along N times WarpsK warps
// along K; each warp owns RowsPerWarp output rows of W and a 1/WarpsK slice of
// K. Lanes stream 16-byte chunks of the weight rows (coalesced, bypassing L1),
// keeping RowsPerWarp * kUnroll loads in flight, and take the matching chunk
// of x from L1. Partial sums are reduced across lanes with shuffles and across
// the K-slices of a block through shared memory, so no second pass is needed.
//
// Epilogue kEpilogueArgmax (one row, fp32 logits, no bias): `argmaxKey`
// points to a zeroed 64-bit word that ends up holding the row's argmaxKey
// (Common.cuh).
//
// Under programmatic dependent launch the first batch of weight loads is
// issued before waiting for the kernel that produces x; with L2Prefetch the
// block also asks L2 for all of its weight rows then (prefetchBulkL2). Decoder
// layers fuse their RMS norm into the prologue and their residual add or SwiGLU
// into the epilogue (kEpilogue* in Common.cuh), so a layer is four GEMV
// launches plus attention.
//
// AddNorm (one row, with the norm prologue) takes a residual add into the
// prologue too, for layers whose add cannot be a GEMV epilogue because it
// normalises the sub-layer's output first (Gemma): every block computes h =
// residual + x (x normalised by inputNormWeight under kAddNormInputNorm) and
// the norm of h, rms_norm's bits (gemvAddNormPrologue), and the block that
// reads the residual last writes h over it (gemvAddNormWriteBack, counted
// on `arrivals`). That removes a launch and a round trip through memory from
// the chain of one-row kernels a decode step is.
//
// Launch: LinearArgs (LaunchArgs.h), 256 threads,
// ceil(N / ((8 / WarpsK) * RowsPerWarp)) blocks, and
// MaxRows * K * 2 bytes of dynamic shared memory with the norm prologue
// (twice that with AddNorm). Requires K % 8 == 0 and 16-byte aligned x and
// W (and residual).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearPrologue.cuh"

namespace sol {
namespace kernels {

// y = epilogue(x . W^T + b) for `rows` rows; with NormPrologue, x is first
// replaced by rmsnorm(x) * normWeight (eps) in dynamic shared memory of
// MaxRows * K bf16. Epilogue is one of kEpilogue* (Common.cuh); residual and
// swiglu need bf16 y, and swiglu an even RowsPerWarp, and y is [rows, N/2].
template <int K, int MaxRows, int RowsPerWarp, int WarpsK, typename OutT,
          bool HasBias, int Epilogue, bool NormPrologue,
          bool L2Prefetch = false, int AddNorm = kAddNormNone>
__global__ void __launch_bounds__(kGemvThreads, 2)
    linear_gemv(const __grid_constant__ LinearArgs args) {
  static_assert(K % 8 == 0, "linear_gemv: K must be a multiple of 8");
  static_assert(MaxRows >= 1 && MaxRows <= 8 && isPowerOfTwo(MaxRows),
                "linear_gemv: MaxRows must be 1, 2, 4 or 8");
  static_assert(
      isPowerOfTwo(RowsPerWarp) && RowsPerWarp * MaxRows <= 32,
      "linear_gemv: RowsPerWarp * MaxRows must be a power of two <= 32");
  static_assert(kGemvWarps % WarpsK == 0, "linear_gemv: WarpsK must divide 8");
  static_assert(!isGatedEpilogue(Epilogue) || RowsPerWarp % 2 == 0,
                "linear_gemv: the swiglu epilogue needs gate/up pairs in a "
                "warp (even RowsPerWarp)");
  static_assert(
      AddNorm == kAddNormNone ||
          (NormPrologue && MaxRows == 1 && Epilogue != kEpilogueArgmax &&
           (AddNorm == kAddNormResidual || AddNorm == kAddNormInputNorm)),
      "linear_gemv: a residual add in the prologue needs the norm "
      "prologue, one row and no argmax");
  constexpr bool kAddNorm = AddNorm != kAddNormNone;
  constexpr int kWarpsN = kGemvWarps / WarpsK;
  constexpr int kVecs = K / 8;
  constexpr int kSlice = ceilDiv(kVecs, WarpsK);
  constexpr int kIters = ceilDiv(kSlice, 32);
  constexpr int kUnroll = constMin(kIters, constMax(1, 16 / RowsPerWarp));
  constexpr int R = RowsPerWarp;
  bf16 *const xs = reinterpret_cast<bf16 *>(dynamicSharedMemory());
  bf16 *const sum = xs + K; // AddNorm: the row written over the residual
  OutT *const y = static_cast<OutT *>(args.y);
  const bf16 *const x = args.x;
  const bf16 *const w = args.w;
  const bf16 *const bias = args.bias;
  const int rows = args.rows;
  const int N = args.n;
  const bf16 *const norm_w = args.normWeight;
  const float eps = args.eps;

  allowDependentLaunch();
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warpN = warp / WarpsK;
  const int warpK = warp % WarpsK;
  const int n0 = (blockIdx.x * kWarpsN + warpN) * R;
  const int sliceBegin = warpK * kSlice;
  const int sliceEnd = min(sliceBegin + kSlice, kVecs);

  const bf16 *wRow[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    // Rows past N read row N-1 (valid memory); their sums are never stored.
    wRow[r] = w + static_cast<long long>(min(n0 + r, N - 1)) * K;
  NormWeights<NormPrologue ? K : 8> normW;
  NormWeights<kAddNorm ? K : 8> inputW; // read under kAddNormInputNorm
  unsigned arrival = 0; // AddNorm: thread 0's place among the blocks
  // One row with the norm prologue and few weight rows per warp: x first,
  // then the weights (in order, see loadStreamingInOrder16), then the
  // prologue. Measured on an H200 against weights first with .nc loads, which
  // ptxas sank below the prologue's barriers: 1B gate/up 22.3 -> 18.7 us. With
  // 8 weight rows per warp x's registers crowd the first batch's (8B batch-1
  // decode 4% slower), and ptxas keeps those loads early anyway.
  constexpr bool kRowFirst =
      NormPrologue && !kAddNorm && MaxRows == 1 && RowsPerWarp <= 2;
  // The first weight loads stay ahead of the prologue's barriers.
  constexpr bool kInOrderFirst = kRowFirst || kAddNorm;
  ActivationRow<kRowFirst ? K : 8> xRow;
  if constexpr (kRowFirst) {
    waitForPredecessor();
    xRow.load(x);
  }

  float acc[R][MaxRows];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < MaxRows; ++t)
      acc[r][t] = 0.0f;

  for (int it = 0; it < kIters; it += kUnroll) {
    uint4 wv[kUnroll][R];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = sliceBegin + (it + u) * 32 + lane;
      const bool ok = it + u < kIters && v < sliceEnd;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if constexpr (kInOrderFirst)
          wv[u][r] = !ok       ? make_uint4(0, 0, 0, 0)
                     : it == 0 ? loadStreamingInOrder16(wRow[r] + v * 8)
                               : loadStreaming16(wRow[r] + v * 8);
        else
          wv[u][r] =
              ok ? loadStreaming16(wRow[r] + v * 8) : make_uint4(0, 0, 0, 0);
      }
    }
    // The first weight loads are in flight before the norm prologue and,
    // unless x came first, before x, which the previous kernel writes, is
    // needed: they overlap that kernel's tail.
    if (it == 0) {
      // The norm weight too, behind the weights (loaded first, it cost the
      // 1B gate/up projection 1 us).
      if constexpr (NormPrologue)
        normW.load(norm_w);
      if constexpr (AddNorm == kAddNormInputNorm)
        inputW.load(args.inputNormWeight);
      if constexpr (L2Prefetch) {
        const int first = blockIdx.x * kWarpsN * R;
        prefetchBulkL2(w + static_cast<long long>(first) * K,
                       static_cast<long long>(min(kWarpsN * R, N - first)) * K *
                           2);
      }
      if constexpr (kRowFirst) {
        gemvNormPrologue<K>(xs, xRow, normW, eps);
      } else if constexpr (kAddNorm) {
        waitForPredecessor();
        gemvAddNormPrologue<K, AddNorm>(xs, sum, x, args.residual, normW,
                                        inputW, eps, args.inputEps);
        // Every thread of the block has its residual values (the barrier
        // that ends the prologue follows their use): the block is done
        // reading it. Nothing waits for the count until the write-back.
        if (threadIdx.x == 0)
          arrival = atomicAdd(args.arrivals, 1u);
      } else {
        waitForPredecessor();
        if constexpr (NormPrologue)
          gemvNormPrologue<K, MaxRows>(xs, x, normW, eps, rows);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = sliceBegin + (it + u) * 32 + lane;
      if (it + u < kIters && v < sliceEnd) {
        float wf[R][8];
#pragma unroll
        for (int r = 0; r < R; ++r)
          unpack8(wv[u][r], wf[r]);
#pragma unroll
        for (int t = 0; t < MaxRows; ++t) {
          if (t < rows) {
            float xf[8];
            if constexpr (NormPrologue)
              unpack8(load16(xs + t * K + v * 8), xf);
            else
              unpack8(
                  loadActivation16(x + static_cast<long long>(t) * K + v * 8),
                  xf);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
              for (int j = 0; j < 8; ++j)
                acc[r][t] = fmaf(wf[r][j], xf[j], acc[r][t]);
          }
        }
      }
    }
  }

  // Lane `lane` ends up with the warp's total for output index
  // kIndex = r * MaxRows + t = lane >> kIndexShift.
  constexpr int kValues = R * MaxRows;
  constexpr int kIndexShift = 5 - log2OfPowerOfTwo(kValues);
  float flat[kValues];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < MaxRows; ++t)
      flat[r * MaxRows + t] = acc[r][t];
  float total = warpReduceScatter<kValues>(flat, lane);
  const int index = lane >> kIndexShift;
  const bool owner = (lane & ((1 << kIndexShift) - 1)) == 0;

  if constexpr (WarpsK > 1) {
    __shared__ float partial[kWarpsN][WarpsK][kValues];
    if (owner)
      partial[warpN][warpK][index] = total;
    __syncthreads();
    if (warpK != 0)
      return;
    if (owner) {
      total = 0.0f;
#pragma unroll
      for (int k = 0; k < WarpsK; ++k)
        total += partial[warpN][k][index];
    }
  }
  if constexpr (kAddNorm)
    if (warp == 0)
      gemvAddNormWriteBack<K>(args.residual, sum, args.arrivals, arrival);

  const int n = n0 + index / MaxRows;
  const int t = index % MaxRows;
  const float b = HasBias && n < N ? __bfloat162float(bias[n]) : 0.0f;
  if constexpr (isGatedEpilogue(Epilogue)) {
    // The up value of output row n + 1 sits MaxRows indices further on.
    const float up =
        __shfl_down_sync(0xffffffffu, total + b, MaxRows << kIndexShift);
    if (owner && (index / MaxRows) % 2 == 0 && n + 1 < N && t < rows) {
      const float g = roundToBf16(total + b);
      storeOutput(y + static_cast<long long>(t) * (N / 2) + n / 2,
                  gateActivation<Epilogue>(g) * roundToBf16(up));
    }
  } else if constexpr (Epilogue == kEpilogueArgmax) {
    static_assert(MaxRows == 1 && !HasBias,
                  "linear_gemv: the argmax epilogue is for one row, no bias");
    // The logits as usual, then the warp's best key; most warps only read
    // the row's running maximum, few raise it.
    const bool valid = owner && n < N && t < rows;
    if (valid)
      storeOutput(y + n, total);
    unsigned long long key = valid ? argmaxKey(total, n) : 0ull;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      key = max(key, __shfl_xor_sync(0xffffffffu, key, offset));
    if (lane == 0) {
      unsigned long long *const best = args.argmaxKey;
      if (key > *reinterpret_cast<volatile unsigned long long *>(best))
        atomicMax(best, key);
    }
  } else if (owner && n < N && t < rows) {
    OutT *out = y + static_cast<long long>(t) * N + n;
    if constexpr (Epilogue == kEpilogueResidual)
      storeOutput(out, asFloat(*out) + roundToBf16(total + b));
    else
      storeOutput(out, total + b);
  }
}

} // namespace kernels
} // namespace sol

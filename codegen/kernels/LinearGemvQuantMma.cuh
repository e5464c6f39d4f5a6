//===- LinearGemvQuantMma.cuh - One-row int4 GEMV on the tensor cores -----===//
//
// y = epilogue(x . W'^T + b) for one row of bf16 x over int4 codes in
// linear_gemv_quant's format (LinearGemvQuant.cuh: codes 0..15 two a byte,
// float scales and byte zeros per group of G consecutive k, G a multiple
// of 128), for batch-1 decode.
//
// linear_gemv_quant turns every code into a float (a byte permute, masks)
// and multiplies it on the CUDA cores, about three integer-pipe
// instructions a weight. Here the tensor cores multiply: a warp owns 16
// rows of W, and each 128-k block of them is eight mma.m16n8k16 whose A
// fragments come straight from the codes (a mask and an OR make a bf16
// pair 128 + q, one bf16x2 fma takes 128 + zero off: q - zero exactly),
// with x in every column of B. Lane (g, q) loads 16 bytes of rows g and
// g + 8 at byte 16q of the block's 64: 32 nibbles, which fill its A slots
// of all eight k steps. Which physical k a slot holds does not matter as
// long as B's slot holds x at that k, and it depends on q alone, so every
// row agrees: the prologue stores x once a block in that order (pair
// (x[32q + 8j + i], x[32q + 8j + 4 + i]) is the B pair of k step 2j +
// i / 2). Each block's sums (one group's, G a multiple of 128) are scaled
// in fp32 as they leave the accumulators. It runs no faster than
// linear_gemv_quant (docs/gpu.md), so plans do not select it; the kernel
// check measures the two side by side.
//
// Block: Tiles x SlicesK warps; warp (t, s) owns rows 16 t.. of the
// block's 16 Tiles and slice s of the k blocks, walked with the codes of
// the Depth blocks after the current one in flight (a ring of register
// stages, refilled right after it is read); the slices meet in shared
// memory and the first slice's warp stores its 16 rows through the
// epilogue (linear_gemv's roundings).
//
// Launch: QuantLinearArgs with rows == 1, 256 threads, ceil(N / (16
// Tiles)) blocks, QuantGemvMmaSpec::sharedBytes() of dynamic shared memory.
// Requires K a multiple of 128, G a multiple of 128 dividing K, 16-byte
// aligned codes and x.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearGemvQuant.cuh"
#include "TensorCore.cuh"

namespace sol {
namespace kernels {

namespace quant_gemv_mma {

// Bytes of dynamic shared memory: x in the B fragments' order, and under
// the norm prologue the normalised bf16 row it is made from.
template <int K, bool NormPrologue>
__host__ __device__ constexpr int sharedBytes() {
  return K * 2 + (NormPrologue ? K * 2 : 0);
}

// The bf16 pair (q - zero) of nibbles p and p + 4 of a code word.
__device__ __forceinline__ unsigned codePair(unsigned word, int p,
                                             unsigned negativeZero) {
  const unsigned biased = ((word >> (4 * p)) & 0x000f000fu) | 0x43004300u;
  return quant_gemv::fmaBf16x2(biased, 0x3f803f80u, negativeZero);
}

} // namespace quant_gemv_mma

template <int K, int Tiles, int SlicesK, int Depth, typename OutT, bool HasBias,
          int Epilogue, bool NormPrologue, int GroupSize>
__global__ void __launch_bounds__(kGemvThreads, 2)
    linear_gemv_quant_mma(const __grid_constant__ QuantLinearArgs args) {
  static_assert(K % 128 == 0, "linear_gemv_quant_mma: K must be a multiple "
                              "of 128");
  static_assert(GroupSize > 0 && GroupSize % 128 == 0 && K % GroupSize == 0,
                "linear_gemv_quant_mma: int4 groups are a multiple of 128 "
                "that divides K");
  static_assert(Tiles * SlicesK == kGemvWarps,
                "linear_gemv_quant_mma: Tiles x SlicesK warps make a block");
  static_assert(Depth >= 1 && Depth <= 6,
                "linear_gemv_quant_mma: 1 to 6 blocks in flight");
  static_assert(Epilogue == kEpilogueNone || Epilogue == kEpilogueResidual ||
                    isGatedEpilogue(Epilogue),
                "linear_gemv_quant_mma: no such epilogue");
  constexpr int kBlocks = K / 128;
  constexpr int kRowBytes = K / 2;
  constexpr int kGroups = K / GroupSize;
  constexpr int kBlocksPerGroup = GroupSize / 128;

  unsigned char *const xb = dynamicSharedMemory();
  bf16 *const xn = reinterpret_cast<bf16 *>(xb + K * 2);
  OutT *const y = static_cast<OutT *>(args.y);
  const int N = args.n;

  allowDependentLaunch();
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;
  const int q = lane % 4;
  const int tile = warp / SlicesK;
  const int slice = warp % SlicesK;
  const int n0 = static_cast<int>(blockIdx.x) * 16 * Tiles + 16 * tile;
  const int blockBegin = slice * kBlocks / SlicesK;
  const int steps = (slice + 1) * kBlocks / SlicesK - blockBegin;
  const int rowLo = min(n0 + g, N - 1);
  const int rowHi = min(n0 + g + 8, N - 1);
  const unsigned char *const codesLo =
      args.w + static_cast<long long>(rowLo) * kRowBytes + 16 * q;
  const unsigned char *const codesHi =
      args.w + static_cast<long long>(rowHi) * kRowBytes + 16 * q;

  // One k block's loads: 16 bytes of rows g and g + 8, their group's
  // scales and zeros.
  struct Stage {
    uint4 lo, hi;
    float scale[2];
    unsigned zero[2];
  };
  auto issue = [&](Stage &st, int s, bool inOrder) {
    if (s >= steps)
      return;
    const int b = blockBegin + s;
    st.lo = inOrder ? loadStreamingInOrder16(codesLo + b * 64)
                    : loadStreaming16(codesLo + b * 64);
    st.hi = inOrder ? loadStreamingInOrder16(codesHi + b * 64)
                    : loadStreaming16(codesHi + b * 64);
    const int group = b / kBlocksPerGroup;
    const long long lo = static_cast<long long>(rowLo) * kGroups + group;
    const long long hi = static_cast<long long>(rowHi) * kGroups + group;
    st.scale[0] = args.scales[lo];
    st.scale[1] = args.scales[hi];
    st.zero[0] = args.zeros[lo];
    st.zero[1] = args.zeros[hi];
  };

  // The first blocks' codes stream while the previous kernel ends.
  Stage ring[Depth + 1];
#pragma unroll
  for (int d = 0; d < Depth; ++d)
    issue(ring[d], d, true);

  // x into the B order: 16-byte chunk i of x (values 8i..8i+7) is k 32q +
  // 8j.. of block i / 16 (q, j = i % 16 / 4, i % 4), and becomes the four
  // pairs (x0, x4), (x1, x5), (x2, x6), (x3, x7) at byte 64j + 16q of the
  // block's 256 (a quarter-warp's loads of one j are 64 contiguous bytes).
  NormWeights<NormPrologue ? K : 8> normW;
  if constexpr (NormPrologue)
    normW.load(args.normWeight);
  waitForPredecessor();
  if constexpr (NormPrologue)
    gemvNormPrologue<K, 1>(xn, args.x, normW, args.eps, 1);
  for (int i = threadIdx.x; i < K / 8; i += kGemvThreads) {
    const uint4 v =
        NormPrologue ? load16(xn + i * 8) : loadActivation16(args.x + i * 8);
    const int at = i / 16 * 256 + i % 4 * 64 + i % 16 / 4 * 16;
    store16(xb + at, make_uint4(__byte_perm(v.x, v.z, 0x5410u),
                                __byte_perm(v.x, v.z, 0x7632u),
                                __byte_perm(v.y, v.w, 0x5410u),
                                __byte_perm(v.y, v.w, 0x7632u)));
  }
  __syncthreads();

  // Rows g and g + 8 of the warp's tile, summed over its k blocks.
  float acc[2] = {0.0f, 0.0f};
  auto compute = [&](const Stage &st, int s) {
    const int b = blockBegin + s;
    const unsigned negativeZero[2] = {quant_gemv::int4NegativeZero(st.zero[0]),
                                      quant_gemv::int4NegativeZero(st.zero[1])};
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint4 xv = load16(xb + b * 256 + j * 64 + q * 16);
      const unsigned lo = quant_gemv::vectorWord(st.lo, j);
      const unsigned hi = quant_gemv::vectorWord(st.hi, j);
      // k step 2j: pairs 0 and 1 of the word; 2j + 1: pairs 2 and 3.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned a[4] = {
            quant_gemv_mma::codePair(lo, 2 * h, negativeZero[0]),
            quant_gemv_mma::codePair(hi, 2 * h, negativeZero[1]),
            quant_gemv_mma::codePair(lo, 2 * h + 1, negativeZero[0]),
            quant_gemv_mma::codePair(hi, 2 * h + 1, negativeZero[1])};
        mmaBf16(c, a, h == 0 ? xv.x : xv.z, h == 0 ? xv.y : xv.w);
      }
    }
    // Every column of c is the same product: rows g (c[0]) and g + 8 (c[2]).
    acc[0] = fmaf(st.scale[0], c[0], acc[0]);
    acc[1] = fmaf(st.scale[1], c[2], acc[1]);
  };

  // Step s computes ring slot s % (Depth + 1) after refilling the slot read
  // one step before with step s + Depth.
  for (int s0 = 0; s0 < steps; s0 += Depth + 1) {
#pragma unroll
    for (int j = 0; j <= Depth; ++j) {
      const int s = s0 + j;
      if (s < steps) {
        issue(ring[(j + Depth) % (Depth + 1)], s + Depth, false);
        compute(ring[j], s);
      }
    }
  }

  // The slices' sums meet in shared memory; lane r < 16 of the first
  // slice's warp stores row r of the tile.
  __shared__ float partial[Tiles][SlicesK][16];
  if (q == 0) {
    partial[tile][slice][g] = acc[0];
    partial[tile][slice][g + 8] = acc[1];
  }
  __syncthreads();
  if (slice != 0 || lane >= 16)
    return;
  auto rowTotal = [&](int r) {
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < SlicesK; ++k)
      total += partial[tile][k][r];
    return total;
  };
  const int n = n0 + lane;
  const float b = HasBias && n < N ? __bfloat162float(args.bias[n]) : 0.0f;
  const float value = rowTotal(lane) + b;
  if constexpr (isGatedEpilogue(Epilogue)) {
    if (lane % 2 == 0 && n + 1 < N) {
      const float up = rowTotal(lane + 1) +
                       (HasBias ? __bfloat162float(args.bias[n + 1]) : 0.0f);
      storeOutput(y + n / 2, gateActivation<Epilogue>(roundToBf16(value)) *
                                 roundToBf16(up));
    }
  } else if (n < N) {
    OutT *out = y + n;
    if constexpr (Epilogue == kEpilogueResidual)
      storeOutput(out, asFloat(*out) + roundToBf16(value));
    else
      storeOutput(out, value);
  }
}

} // namespace kernels
} // namespace sol

//===- LinearGemvQuant.cuh - Decode GEMV over int8, int4 and fp8 weights --===//
//
// linear_gemv (LinearGemv.cuh) for quantized weights: y = epilogue(x . W'^T
// + b) for 1..8 rows of bf16 x, W' the dequantized [N, K] weight in one of
// the formats the compiler writes (runtime/support/Quantize.h; the layouts
// are a fixed contract):
//  * Int8 (W8A16): int8 codes [N, K], float scale [N]; W' = q * scale[n].
//  * Int4 (W4A16): codes 0..15 two a byte, element k even in the low
//    nibble, [N, K / 2]; float scales and uint8 zeros [N, K / G] for groups
//    of G consecutive k; W' = (q - zero) * scale.
//  * Fp8 (W8A8): E4M3 codes [N, K], float scale [N]. Every block quantizes
//    the rows of x itself (after the norm prologue, if any): sx[t] =
//    max|x[t]| / 448 (1 if 0), xq = e4m3(x / sx), rounded to nearest even
//    and saturated; y = (sum_k e4m3(q) * xq) * scale[n] * sx[t] in fp32.
//
// The block is linear_gemv's: 8 warps, (8 / WarpsK) along N times WarpsK
// along K; a warp owns RowsPerWarp rows of W and a 1/WarpsK slice of K.
// Lanes stream 16-byte vectors of codes (16 int8 or fp8 values, 32 int4
// values), several in flight, dequantize them in registers and accumulate
// in fp32; shuffles and shared memory reduce. x comes through L1
// (loadActivation16), or from shared memory where a prologue wrote it: the
// RMS norm (gemvNormPrologue) and the fp8 quantization. The epilogues
// (kEpilogue* in Common.cuh) round as linear_gemv's do.
//
// Dequantization avoids conversion instructions (16 a cycle per SM on
// sm_90, too few for 16 or 32 values per load):
//  * int8: the code ^ 0x80 in byte 1 of 2^15 is the float 32896 + q (one
//    byte permute a value); the products (32896 + q) x are summed as they
//    are and 32896 times the vector's sum of x comes off (fp32 keeps 15
//    bits or more through that cancellation). (dequant<Int8>, for the
//    other kernels, puts the code under the exponent of 2^23 and subtracts
//    2^23 + 128, leaving q exactly.)
//  * int4: a nibble moved into byte 2 of 128.0f is the float 128 + q (one
//    byte permute a value); the products (128 + q) x are summed as they
//    are, and (128 + zero) times the sum of x comes off the vector's sums
//    (fp32 keeps 16 bits or more through that cancellation). A 16-byte
//    vector lies in one group (G % 32 == 0), so its group's scale
//    multiplies its partial sums once. (dequant<Int4>, for the other
//    kernels, keeps bf16 pairs: a nibble under the bf16 exponent of 128,
//    128 + zero taken off two at once by one bf16x2 fma.)
//  * fp8: sign, exponent and mantissa of an E4M3 code moved into a bf16 are
//    its value times 2^-120 (subnormals included); x is kept in shared
//    memory times 2^112 (exact in bf16), so every product is exact and
//    normal, the sums are 2^-8 times the true ones, and the row scale takes
//    the 2^8 back. (The weights of E4M3 subnormals become fp32 subnormals,
//    which the default -ftz=false keeps.)
//
// Weights, scales and zeros are loaded before waitForPredecessor() (nothing
// writes them during a step); x only after it.
//
// Launch: QuantLinearArgs (LaunchArgs.h), 256 threads,
// ceil(N / ((8 / WarpsK) * RowsPerWarp)) blocks, and MaxRows * K * 2 bytes
// of dynamic shared memory with the norm prologue or fp8 (QuantGemvSpec in
// runtime/cuda/KernelSpecs.h). Requires K a multiple of a vector's values,
// 16-byte aligned x and codes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearPrologue.cuh"

#include <cuda_fp8.h>

namespace sol {
namespace kernels {

// The values are quant::Scheme's (runtime/support/Quantize.h).
enum class WeightFormat : int { Int8 = 1, Fp8 = 2, Int4 = 3 };

namespace quant_gemv {

// Weight values in one 16-byte vector of codes.
template <WeightFormat F>
constexpr int kVectorValues = F == WeightFormat::Int4 ? 32 : 16;

constexpr float kFp8Max = 448.0f;
// x of an fp8 launch is held times 2^kFp8XShift and the weights decode to
// 2^-120 times their value, so the sums come out kFp8SumScale too small.
constexpr int kFp8XShift = 112;
constexpr float kFp8SumScale = 256.0f;

// Word i of a vector; i is a constant once the callers' loops unroll.
__device__ __forceinline__ unsigned vectorWord(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// a * b + c on bf16 pairs (exact in every use here).
__device__ __forceinline__ unsigned fmaBf16x2(unsigned a, unsigned b,
                                              unsigned c) {
#if defined(SOL_KERNEL_EMULATION)
  const float lo = lowBf16(a) * lowBf16(b) + lowBf16(c);
  const float hi = highBf16(a) * highBf16(b) + highBf16(c);
  return packBf16Pair(lo, hi);
#else
  unsigned d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#endif
}

// Values 8c .. 8c + 7 of a vector of 16 int8 codes, each code ^ 0x80 put
// by one byte permute into the float Base (selector Select | j << Shift for
// byte j) where a unit of the byte is a unit of the float: Base + 128 +
// code.
template <unsigned Base, unsigned Select, int Shift>
__device__ __forceinline__ void int8Floats(const uint4 &v, int c,
                                           float (&f)[8]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned biased = vectorWord(v, 2 * c + h) ^ 0x80808080u;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      f[4 * h + j] =
          __uint_as_float(__byte_perm(biased, Base, Select | j << Shift));
  }
}

// Values 8c .. 8c + 7 of a vector of 16 int8 codes: the code ^ 0x80 in the
// low byte of 2^23, less 2^23 + 128.
__device__ __forceinline__ void dequantInt8(const uint4 &v, int c,
                                            float (&f)[8]) {
  int8Floats<0x4b000000u, 0x7440u, 0>(v, c, f);
#pragma unroll
  for (int i = 0; i < 8; ++i)
    f[i] -= 8388736.0f; // 2^23 + 128
}

// Values 8c .. 8c + 7 of a vector of 16 E4M3 codes, times 2^-120: per byte
// s eeee mmm, the bf16 s 0000eeee mmm0000.
__device__ __forceinline__ void dequantFp8(const uint4 &v, int c,
                                           float (&f)[8]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned w = vectorWord(v, 2 * c + h);
    const unsigned high = (w & 0x80808080u) | ((w >> 4) & 0x07070707u);
    const unsigned low = (w << 4) & 0xf0f0f0f0u;
    const unsigned a = __byte_perm(low, high, 0x5140u); // values 0, 1
    const unsigned b = __byte_perm(low, high, 0x7362u); // values 2, 3
    f[4 * h] = lowBf16(a);
    f[4 * h + 1] = highBf16(a);
    f[4 * h + 2] = lowBf16(b);
    f[4 * h + 3] = highBf16(b);
  }
}

// bf16x2 -(128 + zero) twice, for dequantInt4.
__device__ __forceinline__ unsigned int4NegativeZero(unsigned zero) {
  return (0xc300u | zero) * 0x10001u;
}

// Values 8c .. 8c + 7 of a vector of 32 int4 codes minus the zero point:
// nibble p of a word and nibble p + 4 share a bf16 pair.
__device__ __forceinline__ void
dequantInt4(const uint4 &v, int c, unsigned negativeZero, float (&f)[8]) {
  const unsigned w = vectorWord(v, c);
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const unsigned biased = ((w >> (4 * p)) & 0x000f000fu) | 0x43004300u;
    const unsigned d = fmaBf16x2(biased, 0x3f803f80u, negativeZero);
    f[p] = lowBf16(d);
    f[p + 4] = highBf16(d);
  }
}

// Values 8c .. 8c + 7 of a vector of 32 int4 codes as the floats 128 +
// code: a code moved into byte 2 of 128.0f (0x43000000) is 128 + code
// exactly, one byte permute a value (dequantInt4's bf16 pairs take a mask,
// an fma and two unpacks a pair). linear_gemv_quant takes (128 + zero) times
// the vector's sum of x off the sums.
__device__ __forceinline__ void dequantInt4Biased(const uint4 &v, int c,
                                                  float (&f)[8]) {
  const unsigned w = vectorWord(v, c);
  const unsigned even = w & 0x0f0f0f0fu;       // byte j: value 2j
  const unsigned odd = (w >> 4) & 0x0f0f0f0fu; // byte j: value 2j + 1
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    f[2 * j] =
        __uint_as_float(__byte_perm(even, 0x43000000u, 0x7054u | j << 8));
    f[2 * j + 1] =
        __uint_as_float(__byte_perm(odd, 0x43000000u, 0x7054u | j << 8));
  }
}

// Values 8c .. 8c + 7 of a vector of 16 int8 codes as the floats 32896 +
// code (2^15 + 128 + code: the code ^ 0x80 in byte 1 of 2^15 = 0x47000000),
// one byte permute a value; linear_gemv_quant takes 32896 times the
// vector's sum of x off the sums.
__device__ __forceinline__ void dequantInt8Biased(const uint4 &v, int c,
                                                  float (&f)[8]) {
  int8Floats<0x47000000u, 0x7504u, 4>(v, c, f);
}

template <WeightFormat F>
__device__ __forceinline__ void dequant(const uint4 &v, int c,
                                        unsigned negativeZero, float (&f)[8]) {
  if constexpr (F == WeightFormat::Int8)
    dequantInt8(v, c, f);
  else if constexpr (F == WeightFormat::Fp8)
    dequantFp8(v, c, f);
  else
    dequantInt4(v, c, negativeZero, f);
}

// x / scale, as IEEE division rounds it, for the scale of one row of fp8
// activations: the product with the row's reciprocal corrected by one FMA
// (Markstein's division; the remainder is exact), three full-rate
// instructions instead of a division each. For |x| <= 448 * scale and a
// scale with hasFastFp8Division it is x / scale bit for bit wherever E4M3
// rounding looks (quotients from 2^-11; far below, the remainder or the
// quotient may underflow, and both round to a zero code), checked against
// division on the host (sol_quant_gemv_emulation_tests). A zero keeps its
// sign. Rows of other scales (amax below 2^-91, or not finite) take
// Fp8Division: a branch per row, so that no lane computes both.
struct Fp8FastDivision {
  float scale;
  float reciprocal;

  __device__ __forceinline__ explicit Fp8FastDivision(float s)
      : scale(s), reciprocal(1.0f / s) {}
  __device__ __forceinline__ float operator()(float x) const {
    const float q = x * reciprocal;
    const float remainder = fmaf(-q, scale, x);
    return remainder == 0.0f ? q : fmaf(remainder, reciprocal, q);
  }
};
struct Fp8Division {
  float scale;
  __device__ __forceinline__ float operator()(float x) const {
    return x / scale;
  }
};
__host__ __device__ __forceinline__ bool hasFastFp8Division(float scale) {
  return scale >= 0x1p-100f && scale <= 0x1p100f;
}

// The E4M3 codes of q[j] (low byte) and q[j + 1], q = x / sx, rounded to
// nearest even and saturated: the fp8 activation rule.
__device__ __forceinline__ unsigned e4m3Pair(const float (&q)[8], int j) {
  return __nv_cvt_float2_to_fp8x2(make_float2(q[j], q[j + 1]), __NV_SATFINITE,
                                  __NV_E4M3);
}

// An E4M3 code as a float times 2^kFp8XShift, exactly (NaN stays NaN).
__device__ __forceinline__ float e4m3Shifted(unsigned bits) {
  const unsigned mag = bits & 0x7fu;
  float v;
  if (mag == 0x7fu)
    v = __uint_as_float(0x7fc00000u);
  else if (mag >= 8u)
    v = __uint_as_float(((mag >> 3) + 120u + kFp8XShift) << 23 | (mag & 7u)
                                                                     << 20);
  else // subnormal: mag * 2^-9
    v = static_cast<float>(mag) *
        __uint_as_float(static_cast<unsigned>(127 + kFp8XShift - 9) << 23);
  return bits & 0x80u ? -v : v;
}

// Two E4M3 codes (the low byte first) as a bf16 pair of their values times
// 2^kFp8XShift, exactly: the hardware's E4M3 -> f16 conversion (every
// E4M3 value is an f16), widened and scaled in fp32, the bf16 halves taken
// by a byte permute (4 significant bits need no rounding).
__device__ __forceinline__ unsigned e4m3PairShiftedBf16(unsigned pair) {
#if defined(SOL_KERNEL_EMULATION)
  const float lo = e4m3Shifted(pair & 0xffu);
  const float hi = e4m3Shifted((pair >> 8) & 0xffu);
#else
  unsigned halves;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;"
      : "=r"(halves)
      : "h"(static_cast<unsigned short>(pair)));
  float lo, hi;
  asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
      "cvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
      : "=f"(lo), "=f"(hi)
      : "r"(halves));
  constexpr float kShift = 0x1p112f;
  static_assert(kFp8XShift == 112, "e4m3PairShiftedBf16: kShift is 2^112");
  lo *= kShift;
  hi *= kShift;
#endif
  return __byte_perm(__float_as_uint(lo), __float_as_uint(hi), 0x7632u);
}

// quantizeRowsFp8's second pass over row t: the thread's vectors of x
// divided by the row's scale (Fp8FastDivision or Fp8Division), to store.
template <int K, typename Vector, typename Store, typename Divide>
__device__ __forceinline__ void divideRowFp8(const Vector &vector,
                                             const Store &store, int t,
                                             const Divide &divide) {
  constexpr int kVecs = K / 8;
  constexpr int kPer = ceilDiv(kVecs, kGemvThreads);
  // Two vectors at a time: the weights' first loads are still held in
  // registers here, and a whole long row of x beside them would spill.
#pragma unroll 2
  for (int i = 0; i < kPer; ++i) {
    const int v = threadIdx.x + i * kGemvThreads;
    if (v < kVecs) {
      float f[8];
      unpack8(vector(t, v), f);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        f[j] = divide(f[j]);
      store(t, v, f);
    }
  }
}

// The fp8 activation scales of a block's rows t < rows, sx[t] = max|x[t]| /
// 448 (1 if 0), and their quantization: vector(t, v) gives the 16-byte
// vector v (values 8v..8v + 7) of row t, and store(t, v, q) gets their
// quotients q = x / sx[t], to store as e4m3Pair(q, j) (j = 0, 2, 4, 6) in
// its own form. Thread i of the 256-thread block handles vectors i, i +
// 256, ...; ends with a barrier.
template <int K, int MaxRows, typename Vector, typename Store>
__device__ __forceinline__ void
quantizeRowsFp8(const Vector &vector, const Store &store, int rows, float *sx) {
  constexpr int kVecs = K / 8;
  constexpr int kPer = ceilDiv(kVecs, kGemvThreads);
  __shared__ float partial[MaxRows][kGemvWarps];
#pragma unroll
  for (int t = 0; t < MaxRows; ++t) {
    float amax = 0.0f;
    if (t < rows) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int v = threadIdx.x + i * kGemvThreads;
        if (v < kVecs) {
          float f[8];
          unpack8(vector(t, v), f);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            amax = fmaxf(amax, fabsf(f[j]));
        }
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    if (threadIdx.x % 32 == 0)
      partial[t][threadIdx.x / 32] = amax;
  }
  __syncthreads();
#pragma unroll
  for (int t = 0; t < MaxRows; ++t) {
    if (t < rows) {
      float amax = 0.0f;
#pragma unroll
      for (int w = 0; w < kGemvWarps; ++w)
        amax = fmaxf(amax, partial[t][w]);
      float scale = amax / kFp8Max;
      scale = scale == 0.0f ? 1.0f : scale;
      if (threadIdx.x == 0)
        sx[t] = scale;
      // A branch per row (the block agrees): no lane runs both divisions.
      if (hasFastFp8Division(scale))
        divideRowFp8<K>(vector, store, t, Fp8FastDivision(scale));
      else
        divideRowFp8<K>(vector, store, t, Fp8Division{scale});
    }
  }
  __syncthreads();
}

// The fp8 activation prologue: rows t < rows of x (xs when FromShared,
// where the norm prologue left them) become bf16(e4m3(x / sx) * 2^112) in
// xs, and sx[t] their scales.
template <int K, int MaxRows, bool FromShared>
__device__ __forceinline__ void quantizeRowsFp8Shifted(bf16 *xs, const bf16 *x,
                                                       int rows, float *sx) {
  quantizeRowsFp8<K, MaxRows>(
      [&](int t, int v) {
        if constexpr (FromShared)
          return load16(xs + t * K + v * 8);
        else
          return loadActivation16(x + static_cast<long long>(t) * K + v * 8);
      },
      [&](int t, int v, const float(&q)[8]) {
        uint4 out;
        out.x = e4m3PairShiftedBf16(e4m3Pair(q, 0));
        out.y = e4m3PairShiftedBf16(e4m3Pair(q, 2));
        out.z = e4m3PairShiftedBf16(e4m3Pair(q, 4));
        out.w = e4m3PairShiftedBf16(e4m3Pair(q, 6));
        store16(xs + t * K + v * 8, out);
      },
      rows, sx);
}

// a[r][t] += W'(row r, vector v) . x(row t, vector v) for t < rows, W' up
// to the int4 group scale; for int4, W' is 128 + code (dequantInt4Biased)
// and xsum[t] += the vector's sum of x(row t). Dequantizes the weights once
// per chunk of 8 and holds the smaller of the chunk's weights (R rows) or x
// (MaxRows rows) in registers while streaming the other.
template <WeightFormat F, int K, int MaxRows, int R, bool XShared>
__device__ __forceinline__ void
dotVector(const uint4 (&wv)[R], const bf16 *x, const bf16 *xs, int v, int rows,
          float (&a)[R][MaxRows], float (&xsum)[MaxRows]) {
  constexpr int kChunks = kVectorValues<F> / 8;
  constexpr bool kBiased = F != WeightFormat::Fp8;
  auto loadX = [&](int t, int xv, float(&xf)[8]) {
    if constexpr (XShared)
      unpack8(load16(xs + t * K + xv * 8), xf);
    else
      unpack8(loadActivation16(x + static_cast<long long>(t) * K + xv * 8), xf);
    if constexpr (kBiased) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        xsum[t] += xf[j];
    }
  };
  auto weights = [&](int r, int c, float(&wf)[8]) {
    if constexpr (F == WeightFormat::Int4)
      dequantInt4Biased(wv[r], c, wf);
    else if constexpr (F == WeightFormat::Int8)
      dequantInt8Biased(wv[r], c, wf);
    else
      dequantFp8(wv[r], c, wf);
  };
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int xv = v * kChunks + c;
    if constexpr (R <= MaxRows) {
      float wf[R][8];
#pragma unroll
      for (int r = 0; r < R; ++r)
        weights(r, c, wf[r]);
#pragma unroll
      for (int t = 0; t < MaxRows; ++t) {
        if (t < rows) {
          float xf[8];
          loadX(t, xv, xf);
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int j = 0; j < 8; ++j)
              a[r][t] = fmaf(wf[r][j], xf[j], a[r][t]);
        }
      }
    } else {
      float xf[MaxRows][8];
#pragma unroll
      for (int t = 0; t < MaxRows; ++t)
        if (t < rows)
          loadX(t, xv, xf[t]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float wf[8];
        weights(r, c, wf);
#pragma unroll
        for (int t = 0; t < MaxRows; ++t)
          if (t < rows)
#pragma unroll
            for (int j = 0; j < 8; ++j)
              a[r][t] = fmaf(wf[j], xf[t][j], a[r][t]);
      }
    }
  }
}

} // namespace quant_gemv

// y = epilogue(x . W'^T + b) for `rows` rows (see the top of the file).
// GroupSize: the int4 group G (a multiple of 32 dividing K); 0 for int8
// and fp8. Epilogue is kEpilogueNone, Residual or Swiglu (Common.cuh):
// residual and swiglu need bf16 y, swiglu an even RowsPerWarp, and then y
// is [rows, N / 2].
template <WeightFormat F, int K, int MaxRows, int RowsPerWarp, int WarpsK,
          typename OutT, bool HasBias, int Epilogue, bool NormPrologue,
          int GroupSize>
__global__ void __launch_bounds__(kGemvThreads, 2)
    linear_gemv_quant(const __grid_constant__ QuantLinearArgs args) {
  constexpr bool kInt4 = F == WeightFormat::Int4;
  constexpr bool kFp8 = F == WeightFormat::Fp8;
  constexpr int E = quant_gemv::kVectorValues<F>;
  constexpr int R = RowsPerWarp;
  static_assert(K % E == 0, "linear_gemv_quant: K must be a multiple of the "
                            "16 (int8, fp8) or 32 (int4) values of a vector");
  static_assert(kInt4
                    ? GroupSize > 0 && GroupSize % 32 == 0 && K % GroupSize == 0
                    : GroupSize == 0,
                "linear_gemv_quant: int4 groups are a multiple of 32 that "
                "divides K; int8 and fp8 take GroupSize 0");
  static_assert(MaxRows >= 1 && MaxRows <= 8 && isPowerOfTwo(MaxRows),
                "linear_gemv_quant: MaxRows must be 1, 2, 4 or 8");
  static_assert(isPowerOfTwo(R) && R * MaxRows <= 32,
                "linear_gemv_quant: RowsPerWarp * MaxRows must be a power of "
                "two <= 32");
  static_assert(kGemvWarps % WarpsK == 0,
                "linear_gemv_quant: WarpsK must divide 8");
  static_assert(Epilogue == kEpilogueNone || Epilogue == kEpilogueResidual ||
                    isGatedEpilogue(Epilogue),
                "linear_gemv_quant: no such epilogue");
  static_assert(!isGatedEpilogue(Epilogue) || R % 2 == 0,
                "linear_gemv_quant: the swiglu epilogue needs gate/up pairs "
                "in a warp (even RowsPerWarp)");
  constexpr int kRowBytes = kInt4 ? K / 2 : K;
  constexpr int kGroups = kInt4 ? K / GroupSize : 1;
  constexpr int kVectorsPerGroup = kInt4 ? GroupSize / E : 1;
  constexpr int kWarpsN = kGemvWarps / WarpsK;
  constexpr int kVecs = K / E;
  constexpr int kSlice = ceilDiv(kVecs, WarpsK);
  constexpr int kIters = ceilDiv(kSlice, 32);
  // 16-byte loads in flight per lane: linear_gemv's 16 for one row, half
  // as many for more rows or int4 (twice the values a load, and its group
  // scale and zero), so that dequantization has the registers (110 to 128
  // registers for two rows otherwise, two blocks per SM).
  constexpr int kInFlight = 16 / (kInt4 ? 2 : 1) / (MaxRows >= 2 ? 2 : 1);
  constexpr int kUnroll = constMin(kIters, constMax(1, kInFlight / R));
  constexpr bool kXShared = NormPrologue || kFp8;
  bf16 *const xs = reinterpret_cast<bf16 *>(dynamicSharedMemory());
  OutT *const y = static_cast<OutT *>(args.y);
  const bf16 *const x = args.x;
  const float *const scales = args.scales;
  const int rows = args.rows;
  const int N = args.n;

  allowDependentLaunch();
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warpN = warp / WarpsK;
  const int warpK = warp % WarpsK;
  const int n0 = (blockIdx.x * kWarpsN + warpN) * R;
  const int sliceBegin = warpK * kSlice;
  const int sliceEnd = min(sliceBegin + kSlice, kVecs);

  // Rows past N read row N-1 (valid memory); their sums are never stored.
  int wRowIndex[R];
  const unsigned char *wRow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    wRowIndex[r] = min(n0 + r, N - 1);
    wRow[r] = args.w + static_cast<long long>(wRowIndex[r]) * kRowBytes;
  }

  // Lane `lane` ends up with the warp's total for output index
  // r * MaxRows + t = lane >> kIndexShift; its row scale (int8, fp8) is
  // loaded now, with the weights.
  constexpr int kValues = R * MaxRows;
  constexpr int kIndexShift = 5 - log2OfPowerOfTwo(kValues);
  const int index = lane >> kIndexShift;
  const int n = n0 + index / MaxRows;
  const int t = index % MaxRows;
  float rowScale = 1.0f;
  if constexpr (!kInt4)
    rowScale = scales[min(n, N - 1)] * (kFp8 ? quant_gemv::kFp8SumScale : 1.0f);

  NormWeights<NormPrologue ? K : 8> normW;
  __shared__ float activationScale[kFp8 ? MaxRows : 1];

  float acc[R][MaxRows];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < MaxRows; ++i)
      acc[r][i] = 0.0f;

  for (int it = 0; it < kIters; it += kUnroll) {
    uint4 wv[kUnroll][R];
    float groupScale[kInt4 ? kUnroll : 1][R];
    unsigned groupZero[kInt4 ? kUnroll : 1][R];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = sliceBegin + (it + u) * 32 + lane;
      const bool ok = it + u < kIters && v < sliceEnd;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        // Under a prologue the first loads stay ahead of its barriers
        // (loadStreamingInOrder16 in Common.cuh).
        if (!ok)
          wv[u][r] = make_uint4(0, 0, 0, 0);
        else if (kXShared && it == 0)
          wv[u][r] = loadStreamingInOrder16(wRow[r] + v * 16);
        else
          wv[u][r] = loadStreaming16(wRow[r] + v * 16);
        if constexpr (kInt4) {
          const long long g = static_cast<long long>(wRowIndex[r]) * kGroups +
                              (ok ? v / kVectorsPerGroup : 0);
          groupScale[u][r] = scales[g];
          groupZero[u][r] = args.zeros[g];
        }
      }
    }
    // The first weights are in flight before x, which the previous kernel
    // writes, is needed: they overlap that kernel's tail and the prologues.
    if (it == 0) {
      if constexpr (NormPrologue)
        normW.load(args.normWeight);
      waitForPredecessor();
      if constexpr (NormPrologue)
        gemvNormPrologue<K, MaxRows>(xs, x, normW, args.eps, rows);
      if constexpr (kFp8)
        quant_gemv::quantizeRowsFp8Shifted<K, MaxRows, NormPrologue>(
            xs, x, rows, activationScale);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = sliceBegin + (it + u) * 32 + lane;
      if (it + u < kIters && v < sliceEnd) {
        float xsum[MaxRows] = {};
        if constexpr (!kFp8) {
          // Sums of (128 + code) x, less (128 + zero) sum(x), times the
          // group scale (int4); sums of (32896 + code) x less 32896 sum(x)
          // (int8, whose row scale comes at the end).
          float part[R][MaxRows];
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int i = 0; i < MaxRows; ++i)
              part[r][i] = 0.0f;
          quant_gemv::dotVector<F, K, MaxRows, R, kXShared>(wv[u], x, xs, v,
                                                            rows, part, xsum);
#pragma unroll
          for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int i = 0; i < MaxRows; ++i) {
              if constexpr (kInt4) {
                const float bias = 128.0f + static_cast<float>(groupZero[u][r]);
                acc[r][i] = fmaf(groupScale[u][r],
                                 fmaf(-bias, xsum[i], part[r][i]), acc[r][i]);
              } else {
                acc[r][i] += fmaf(-32896.0f, xsum[i], part[r][i]);
              }
            }
          }
        } else {
          quant_gemv::dotVector<F, K, MaxRows, R, kXShared>(wv[u], x, xs, v,
                                                            rows, acc, xsum);
        }
      }
    }
  }

  float flat[kValues];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < MaxRows; ++i)
      flat[r * MaxRows + i] = acc[r][i];
  float total = warpReduceScatter<kValues>(flat, lane);
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

  // The dequantized product: int4 sums are scaled already.
  float value = total * rowScale;
  if constexpr (kFp8)
    value *= activationScale[t];
  const float b = HasBias && n < N ? __bfloat162float(args.bias[n]) : 0.0f;
  if constexpr (isGatedEpilogue(Epilogue)) {
    // The up value of output row n + 1 sits MaxRows indices further on.
    const float up =
        __shfl_down_sync(0xffffffffu, value + b, MaxRows << kIndexShift);
    if (owner && (index / MaxRows) % 2 == 0 && n + 1 < N && t < rows) {
      const float g = roundToBf16(value + b);
      storeOutput(y + static_cast<long long>(t) * (N / 2) + n / 2,
                  gateActivation<Epilogue>(g) * roundToBf16(up));
    }
  } else if (owner && n < N && t < rows) {
    OutT *out = y + static_cast<long long>(t) * N + n;
    if constexpr (Epilogue == kEpilogueResidual)
      storeOutput(out, asFloat(*out) + roundToBf16(value + b));
    else
      storeOutput(out, value + b);
  }
}

} // namespace kernels
} // namespace sol

//===- MoeDecodeRow.cuh - A mixture of experts for a step of one row ------===//
//
// sol.moe for a decode step of one row (batch-1 decode), whose K choices are
// K different experts: two kernels after the router's linear instead of
// MoeDecode.cuh's four (route, gate/up, down, combine), with the values
// those compute, rounded where they round:
//
//  moe_gate_up_row<E, K, H, I, Format>  block b: choice k = b / kTiles (in
//      increasing expert order) and rows [tile * kRows, +kRows) of its
//      expert's gate and up. Each warp routes the row itself from the
//      router's logits (moeTopK, as moe_route does), then takes
//      kPairs (gate row j, up row j) pairs with all of their weight loads in
//      flight before the first product (no slot scan, no barrier):
//      act[k][j] as moe_gate_up computes it.
//  moe_down_row<E, K, H, I, Format>  warp w of block b: output j = 4 b + w.
//      Each warp routes the row again (with the weights) before waiting for
//      moe_gate_up_row, whose blocks let it start only once the router's
//      linear has finished, and issues its first experts' loads; then the K
//      experts' down rows j with act[k], kBatch experts' loads in
//      flight at a time, each value rounded as moe_down stores it, then
//      weighted and added in increasing expert order as moe_combine does:
//      y[j] with no [K, H] round trip through memory.
//
// The weights are read once, as by the many-row kernels; what goes is two
// launches, the slot scans and the barriers, and the loads one warp keeps in
// flight grow from one row's to several rows' (batch-1 decode is bound by
// the bytes in flight, not by arithmetic).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "MoeDecode.cuh"

namespace sol {
namespace kernels {

// The blocks an SM must hold, as __launch_bounds__' second argument: with
// the thread count alone ptxas fits the kernel in ~36 registers by issuing
// each weight load just before its use, one or two in flight; a floor of
// blocks gives it a register budget (128) that holds every load of a round.
constexpr int kMoeRowBlocksPerSm = 4;

// The dot products of R expert rows of N inputs with x[r], summed over the
// warp into acc[r]: kUnroll vectors of every row loaded before any product,
// as many as keep a lane's 16-byte loads (weights, and x's without SharedX)
// within LoadBudget. With SharedX all rows take x[0] (the same loads: L1).
// `afterFirstLoads` runs once, after the first weight loads are issued and
// before the first product (moe_down_row waits for its predecessor there).
struct MoeNoHook {
  __device__ __forceinline__ void operator()() const {}
};
template <int N, int Format, int R, bool SharedX, int LoadBudget = 16,
          typename Hook = MoeNoHook>
__device__ __forceinline__ void
moeRowsDot(const MoeRow<N, Format> (&rows)[R], const bf16 *const (&x)[R],
           float (&acc)[R], const Hook &afterFirstLoads = {}) {
  constexpr int kValues = kMoeVectorValues<Format>;
  static_assert(N % kValues == 0, "moeRowsDot: rows are whole vectors");
  constexpr int kVecs = N / kValues, kPerLane = (kVecs + 31) / 32;
  constexpr int kLoadsPerVector = SharedX ? 1 : 1 + kValues / 8;
  constexpr int kUnroll =
      constMin(kPerLane, constMax(1, LoadBudget / (R * kLoadsPerVector)));
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < R; ++r)
    acc[r] = 0.0f;
  for (int it = 0; it < kPerLane; it += kUnroll) {
    MoeVector v[kUnroll][R];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c = lane + 32 * (it + u);
      if (it + u < kPerLane && (kVecs % 32 == 0 || c < kVecs))
#pragma unroll
        for (int r = 0; r < R; ++r)
          v[u][r] = moeLoadVector(rows[r], c);
    }
    if (it == 0)
      afterFirstLoads();
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c = lane + 32 * (it + u);
      if (it + u < kPerLane && (kVecs % 32 == 0 || c < kVecs))
#pragma unroll
        for (int r = 0; r < R; ++r)
          acc[r] = moeVectorDot<Format>(
              v[u][r], x[SharedX ? 0 : r] + c * kValues, acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
    acc[r] = warpSum(acc[r]) * moeRowScale(rows[r]);
}

// The largest divisor of K that is at most `most` (at least 1).
__host__ __device__ constexpr int moeDivisorAtMost(int K, int most) {
  for (int d = most < K ? most : K; d > 1; --d)
    if (K % d == 0)
      return d;
  return 1;
}

template <int E, int K, int H, int I, int Format = kMoeBf16>
__global__ void __launch_bounds__(kMoeThreads, kMoeRowBlocksPerSm)
    moe_gate_up_row(const __grid_constant__ MoeGateUpRowArgs args) {
  // moe_down_row may start once every block is past this wait: the router's
  // linear has finished by then, and moe_down_row routes from its logits
  // before it waits for this kernel.
  waitForPredecessor();
  allowDependentLaunch();
  static_assert(I % 8 == 0, "moe_gate_up_row: I a multiple of 8");
  constexpr int kPairs = moeRowPairsPerWarp(Format, H);
  constexpr int kRows = kPairs * (kMoeThreads / 32);
  constexpr int kTiles = (I + kRows - 1) / kRows;
  const int choice = blockIdx.x / kTiles, tile = blockIdx.x % kTiles;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int ids[K];
  float weights[K];
  moeTopK<E, K, true>(args.logits, false, args.normalize != 0, ids, weights);
  int expert = 0;
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (k == choice)
      expert = ids[k];
  const int j0 = tile * kRows + warp * kPairs;
  if (j0 >= I)
    return;
  MoeRow<H, Format> rows[2 * kPairs];
  const bf16 *x[2 * kPairs];
#pragma unroll
  for (int p = 0; p < kPairs; ++p) {
    // Rows past I read row I - 1 (valid memory); their values are not stored.
    const long long row =
        static_cast<long long>(expert) * I + min(j0 + p, I - 1);
    rows[2 * p] = moeRow<H, Format>(args.gate, args.gateScales, args.gateZeros,
                                    args.groupSize, row);
    rows[2 * p + 1] = moeRow<H, Format>(args.up, args.upScales, args.upZeros,
                                        args.groupSize, row);
    x[2 * p] = x[2 * p + 1] = args.x;
  }
  float acc[2 * kPairs];
  moeRowsDot<H, Format, 2 * kPairs, true>(rows, x, acc);
  if (lane == 0)
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
      const int j = j0 + p;
      if (j < I)
        args.act[static_cast<long long>(choice) * I + j] = __float2bfloat16_rn(
            moeGatedValue(acc[2 * p], acc[2 * p + 1], args.gateBias,
                          args.upBias, static_cast<long long>(expert) * I + j,
                          args.activation, args.limit));
    }
}

template <int E, int K, int H, int I, int Format = kMoeBf16>
__global__ void __launch_bounds__(kMoeThreads, kMoeRowBlocksPerSm)
    moe_down_row(const __grid_constant__ MoeDownRowArgs args) {
  allowDependentLaunch();
  static_assert(H % 8 == 0, "moe_down_row: H a multiple of 8");
  // A batch's weight and activation loads within kLoadBudget a lane.
  constexpr int kValues = kMoeVectorValues<Format>;
  constexpr int kPerLane = (I / kValues + 31) / 32;
  constexpr int kLoadBudget = 20;
  constexpr int kBatch = moeDivisorAtMost(
      K, constMax(1, kLoadBudget / (kPerLane * (1 + kValues / 8))));
  const int j = blockIdx.x * (kMoeThreads / 32) + threadIdx.x / 32;
  if (j >= H) {
    waitForPredecessor();
    return;
  }
  // The row's choices in increasing expert order, as moe_gate_up_row wrote
  // act (the order moe_combine adds them in), from the router's logits:
  // moe_gate_up_row lets this kernel start only after the router has
  // finished. So the first experts' weight loads are in flight before the
  // wait for moe_gate_up_row's act.
  int ids[K];
  float weights[K];
  moeTopK<E, K, true>(args.logits, true, args.normalize != 0, ids, weights);
  // A running sum, each product and sum rounded to bf16. Unrolled: the
  // choices stay in registers.
  float y = 0.0f;
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += kBatch) {
    MoeRow<I, Format> rows[kBatch];
    const bf16 *act[kBatch];
    long long row[kBatch];
    float w[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      w[b] = weights[k0 + b];
      row[b] = static_cast<long long>(ids[k0 + b]) * H + j;
      rows[b] = moeRow<I, Format>(args.down, args.scales, args.zeros,
                                  args.groupSize, row[b]);
      act[b] = args.act + static_cast<long long>(k0 + b) * I;
    }
    float acc[kBatch];
    moeRowsDot<I, Format, kBatch, false, kLoadBudget>(
        rows, act, acc, [] { waitForPredecessor(); });
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      // What moe_down stores, times the weight as moe_combine rounds it.
      const float out = roundToBf16(moeDownValue(acc[b], args.bias, row[b]));
      y = roundToBf16(y + roundToBf16(out * roundToBf16(w[b])));
    }
  }
  if (threadIdx.x % 32 == 0)
    args.y[j] = __float2bfloat16_rn(y);
}

} // namespace kernels
} // namespace sol

//===- ReferenceKernels.h - Float32 math of the row-wise plan ops -*- C++
//-*-===//
//
// The reference executor's math for the ops that do not touch the KV cache,
// on row-major float32 matrices. These define what each op of Plan.fbs
// computes; the CUDA kernels are checked against them. Callers pass spans
// that hold at least rows * width values (ReferencePlan checked the widths).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>

namespace sol::reference {

/// out[t] = table[ids[t]] * scale for each of ids.size() rows of `width`
/// values.
void embeddingRows(std::span<float> out, std::span<const int32_t> ids,
                   std::span<const float> table, int64_t width, float scale);

/// Per row: r = in (+ residual when non-empty; then residual <- r),
/// out = r / sqrt(mean(r^2) + eps) * weight, the mean in double. `out` may
/// be `in` (in place).
void rmsNormRows(std::span<float> out, std::span<const float> in,
                 std::span<float> residual, std::span<const float> weight,
                 int64_t rows, float eps);

/// In place on columns [col, col + heads * headDim) of each row of `buf`
/// (row width `width`): each head's headDim values are RMS-normalised and
/// multiplied by weight[0..headDim).
void headRmsNormRows(std::span<float> buf, int64_t rows, int64_t width,
                     int64_t col, int64_t heads, int64_t headDim,
                     std::span<const float> weight, float eps);

/// out[t][n] = sum_k in[t][k] * w[n][k] (+ bias[n] when non-empty), for
/// `rows` rows; w is [n, k] row-major. Splits columns over up to
/// `numThreads` threads when the product is large.
void linearRows(std::span<float> out, std::span<const float> in,
                std::span<const float> w, std::span<const float> bias,
                int64_t rows, int64_t n, int64_t k, int numThreads);

/// out[t][j] = act(in[t][j]) * in[t][width + j], act silu (x / (1 + e^-x))
/// or, with geluTanhGate, PyTorch's tanh GELU; in rows are [gate | up],
/// 2 * width wide.
void swigluRows(std::span<float> out, std::span<const float> in, int64_t rows,
                int64_t width, bool geluTanhGate);

/// The gate activation of a gated MLP: silu, PyTorch's tanh GELU, or
/// gpt-oss's clamped SwiGLU (g = min(gate, limit), u = clamp(up, -limit,
/// limit), (u + 1) * g * sigmoid(1.702 * g)).
enum class GateFunction { Silu, GeluTanh, ClampedSilu };

/// act(gate) * up for one pair, by `fn` (ClampedSilu with `limit`).
float gatedValue(GateFunction fn, float gate, float up, float limit);

/// The weights of a mixture of experts (PlanOp Moe): router [experts,
/// hidden], gate and up [experts * width, hidden], down [experts * hidden,
/// width], expert e's rows in order; the biases (all four, or all empty)
/// stacked alike: router [experts], gate and up [experts * width], down
/// [experts * hidden].
struct MoeWeights {
  std::span<const float> router, gate, up, down;
  std::span<const float> routerBias, gateBias, upBias, downBias;
};

/// A mixture of experts over `rows` rows of `hidden` values: p =
/// softmax(x . router^T + router bias) over the experts, the topK of highest
/// p (lower index first on ties), divided by their sum when normalizeTopK;
/// out[t] = sum of p_e * down_e(act(gate_e . x, up_e . x)) (biases added to
/// each projection when present).
void moeRows(std::span<float> out, std::span<const float> in,
             const MoeWeights &w, int64_t rows, int64_t hidden, int64_t experts,
             int64_t topK, bool normalizeTopK, GateFunction fn, float limit);

/// out[t] = sigmoid(in[t] . weight) * value[t] over `rows` rows; value and
/// out are `width` wide, in and weight `hidden`.
void sigmoidGateRows(std::span<float> out, std::span<const float> value,
                     std::span<const float> in, std::span<const float> weight,
                     int64_t rows, int64_t width, int64_t hidden);

/// values = cap * tanh(values / cap), in place.
void softcapValues(std::span<float> values, float cap);

/// out = a + b over `count` values (any of them may be the same buffer).
void addValues(std::span<float> out, std::span<const float> a,
               std::span<const float> b, int64_t count);

/// out[r] = in[rows[r]] for each of rows.size() rows of `width` values.
void gatherRows(std::span<float> out, std::span<const float> in,
                std::span<const int32_t> rows, int64_t width);

/// Rotates one head in place with Hugging Face's rotate-half RoPE: for pair
/// i < headDim/2, angle = float(position) * invFreq[i] (rounded to float as
/// transformers computes it), c = cos(angle) * scaling,
/// s = sin(angle) * scaling (scaling 1 for a pair of frequency 0, which a
/// partial rotary embedding passes through), (x[i], x[i + headDim/2]) <-
/// (x[i] c - x[i + headDim/2] s, x[i + headDim/2] c + x[i] s).
void rotateHalf(std::span<float> head, std::span<const float> invFreq,
                float scaling, int32_t position);

/// The index of the largest value, the lowest one on ties; NaNs never win
/// (an all-NaN row gives 0).
int32_t argmaxIndex(std::span<const float> row);

} // namespace sol::reference

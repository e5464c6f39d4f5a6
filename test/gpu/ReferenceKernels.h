//===- ReferenceKernels.h - CPU references for the GPU kernels --*- C++ -*-===//
//
// Double-precision references that round to bf16 exactly where Hugging Face
// (PyTorch on bf16 tensors) rounds, so the GPU results can be held to a tight
// relative error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "HostBf16.h"

#include <span>
#include <string>
#include <vector>

namespace sol::check {

/// y[t, n] = sum_k x[t, k] W[n, k] (+ b[n]), unrounded. Multi-threaded.
std::vector<double> referenceLinear(std::span<const Bf16> x,
                                    std::span<const Bf16> w,
                                    std::span<const Bf16> bias, int rows, int n,
                                    int k);

/// Only rows `rowIds` of the product (for shapes too large to check fully).
std::vector<double> referenceLinearRows(std::span<const Bf16> x,
                                        std::span<const Bf16> w,
                                        std::span<const Bf16> bias,
                                        std::span<const int> rowIds, int n,
                                        int k);

/// RMSNorm of one row h (already summed with the residual and rounded).
std::vector<double> referenceRmsNormRow(std::span<const float> h,
                                        std::span<const Bf16> w, float eps);

/// The bf16 rows the fused norm of a NormLinear produces:
/// bf16(w * bf16(x[t] * rsqrt(mean(x[t]^2) + eps))) for each of `rows` rows
/// of `k` elements (the RmsNorm kernel's rounding points, without residual).
std::vector<Bf16> referenceNormRows(std::span<const Bf16> x,
                                    std::span<const Bf16> w, int rows, int k,
                                    float eps);

/// The residual epilogue: residual + bf16(y), elementwise.
std::vector<double> referenceResidualEpilogue(std::span<const Bf16> residual,
                                              std::span<const double> y);

/// The swiglu epilogue over interleaved (gate, up) columns of y [rows, n]:
/// bf16(silu(bf16(g))) * bf16(u), [rows, n / 2].
std::vector<double> referenceSwigluEpilogue(std::span<const double> y, int rows,
                                            int n);

std::vector<double> referenceSwiglu(std::span<const Bf16> gateUp, int tokens,
                                    int intermediate);

/// torch.argmax: first index of the maximum, NaN counts as the maximum.
int referenceArgmax(std::span<const float> row);

/// Llama's inverse rotary frequencies theta^(-2i / headDim), i < headDim / 2
/// (Llama 3's theta is 500,000).
std::vector<float> llamaInvFreq(int headDim, double theta = 500000.0);

/// Hugging Face rotate-half RoPE of one head vector in bf16. A pair whose
/// inverse frequency is 0 passes through (partial rotary: cos 1 and sin 0,
/// not scaled by attentionScaling).
std::vector<float> referenceRope(std::span<const float> head, int position,
                                 std::span<const float> invFreq,
                                 float attentionScaling);

/// A rope table as the rope kernels read it: headDim / 2 inverse
/// frequencies (0: a pass-through pair), for LongRoPE followed by the long
/// set, which positions >= longFrom use.
struct RopeTable {
  std::string label;
  std::vector<float> invFreq;
  float attentionScaling = 1.0f;
  int longFrom = 0x7fffffff;

  /// The headDim / 2 frequencies of `position`.
  std::span<const float> at(int position, int headDim) const;
};

/// Llama 3's table (theta 500,000), attention scaling 1.
RopeTable llamaRopeTable(int headDim);
/// Partial rotary (Phi-4-mini's 0.75, Gemma 3's scaling 8 style): the last
/// quarter of each half's pairs pass through (inverse frequency 0), theta
/// 10,000, attention scaling `scaling`.
RopeTable partialRopeTable(int headDim, float scaling);
/// LongRoPE (Phi-3): partialRopeTable's short set, then a long set of the
/// same frequencies divided by factors from 1 to 4, from position longFrom.
RopeTable longRopeTable(int headDim, int longFrom, float scaling);

/// referenceRope with the frequencies and scaling of `table` at `position`.
std::vector<float> referenceRope(std::span<const float> head, int position,
                                 const RopeTable &table);

struct AttentionProblem {
  int qHeads, kvHeads, headDim, blockSize;
  int tokens;
  int maxBlocks;
  std::span<const Bf16> qkv;    // [T, (Hq + 2 Hkv) HD]
  std::span<const Bf16> kCache; // [blocks, BS, Hkv, HD]
  std::span<const Bf16> vCache;
  std::span<const int> positions;
  std::span<const int> tokenSeq;
  std::span<const int> blockTables; // [S, maxBlocks]
  float scale;
  int slidingWindow;
  /// When set, K and V come from these float caches instead (an fp8 cache,
  /// dequantized: e4m3 x scale), same layout.
  std::span<const float> kCacheF32 = {};
  std::span<const float> vCacheF32 = {};
  /// > 0: scores s become softcap * tanh(s / softcap) (Gemma 2).
  double softcap = 0.0;
  /// When set, one logit per query head (gpt-oss's sinks): one more term
  /// exp(sink) in each head's softmax denominator, of no key.
  std::span<const float> sinks = {};
};

/// out [T, Hq * HD], unrounded; padding tokens (seq < 0) give zeros.
std::vector<double> referenceAttention(const AttentionProblem &p);

} // namespace sol::check

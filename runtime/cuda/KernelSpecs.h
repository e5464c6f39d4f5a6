//===- KernelSpecs.h - How each kernel template is named and launched -----===//
//
// The host-side half of codegen/kernels/*.cuh: for every kernel, the header
// that defines it, the NVRTC name expression of an instantiation, and the
// grid / block / shared memory its launch needs. solc uses the names to
// compile a model's kernels; the executor uses the launch geometry. The
// constants here mirror the kernels' own (thread counts, tile shapes);
// test/unit/cuda checks them against the headers with static_asserts
// compiled by NVRTC.
//
// No CUDA header is needed to use this file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/LaunchDims.h"

#include <cstddef>
#include <string>

namespace sol::cuda {

/// One instantiation of a kernel template.
struct KernelInstance {
  /// The codegen/kernels header that defines it, e.g. "RmsNorm.cuh".
  std::string header;
  /// e.g. "sol::kernels::rms_norm<2048>".
  std::string nameExpression;

  friend bool operator==(const KernelInstance &,
                         const KernelInstance &) = default;
};

enum class LinearOutput { Bf16, Fp32 };

/// embedding<D>(out, table, ids, T).
struct EmbeddingSpec {
  int hidden = 0;
  KernelInstance instance() const;
  LaunchDims dims(int tokens) const;
};

/// gather_rows<D>(out, in, rows, n).
struct GatherRowsSpec {
  int hidden = 0;
  KernelInstance instance() const;
  LaunchDims dims(int rows) const;
};

/// swiglu<I>(out, gate_up, T).
struct SwigluSpec {
  int intermediate = 0;
  KernelInstance instance() const;
  LaunchDims dims(int tokens) const;
};

/// argmax(out, logits, rows, V).
struct ArgmaxSpec {
  KernelInstance instance() const;
  LaunchDims dims(int rows) const;
};

/// rms_norm<D>(out, x, residual, w, eps, rows, x_stride, out_stride,
/// row_group).
struct RmsNormSpec {
  int dim = 0;
  KernelInstance instance() const;
  LaunchDims dims(int rows) const;
  int threadsPerRow() const;
  int blockThreads() const;
  int rowsPerBlock() const;
};

/// linear_gemv<K, MaxRows, RowsPerWarp, WarpsK, Out, HasBias>
/// (y, x, w, bias, rows, N): decode-size linear layers (rows <= 8).
struct GemvSpec {
  static constexpr int kMaxRows = 8;
  int inFeatures = 0; // K
  int maxRows = 1;
  int rowsPerWarp = 4;
  int warpsK = 1;
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;

  KernelInstance instance() const;
  LaunchDims dims(int outFeatures) const;
  /// A configuration for `rows` (1..8) rows of x.
  /// `multiprocessors` is the planned GPU's size; the rule measured on the
  /// H200 does not depend on it yet.
  static GemvSpec choose(int outFeatures, int inFeatures, int rows,
                         LinearOutput output, bool bias,
                         int multiprocessors = 132);
};

/// linear_gemm<BM, BN, WarpsM, WarpsN, Stages, Out, HasBias>
/// (y, x, w, bias, M, N, K): tensor-core linear layers (prefill).
struct GemmSpec {
  int tileM = 128;
  int tileN = 128;
  int warpsM = 2;
  int warpsN = 4;
  int stages = 3;
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;

  KernelInstance instance() const;
  LaunchDims dims(int rows, int outFeatures) const;
  int threads() const { return warpsM * warpsN * 32; }
  /// Dynamic shared memory; above 48 KB, so the kernel's limit must be
  /// raised (Kernel::setMaxDynamicSharedMemory) before the first launch.
  int sharedBytes() const;
  static GemmSpec choose(int rows, int outFeatures, LinearOutput output,
                         bool bias, int multiprocessors = 132);
};

/// rope_kv_write<Hq, Hkv, HD, BS>(qkv, k_cache, v_cache, inv_freq, scaling,
/// positions, token_seq, block_tables, max_blocks, T).
struct RopeKvWriteSpec {
  int qHeads = 0;
  int kvHeads = 0;
  int headDim = 0;
  int blockSize = 16;
  KernelInstance instance() const;
  LaunchDims dims(int tokens) const;
};

/// paged_attention<Hq, Hkv, HD, BS>(out, qkv, k_cache, v_cache, positions,
/// token_seq, block_tables, max_blocks, scale, sliding_window, T, partials)
/// and, when splits > 1, paged_attention_combine<Hq, HD>(out, partials,
/// splits, T) right after it.
struct PagedAttentionSpec {
  int qHeads = 0;
  int kvHeads = 0;
  int headDim = 0;
  int blockSize = 16;
  /// The most splits chooseSplits picks.
  static constexpr int kMaxSplits = 64;
  KernelInstance instance() const;
  KernelInstance combineInstance() const;
  LaunchDims dims(int tokens, int splits) const;
  LaunchDims combineDims(int tokens) const;
  /// Floats of `partials` a launch with `splits` > 1 needs.
  std::size_t workspaceFloats(int tokens, int splits) const;
  /// Context splits (flash-decoding) for a step whose longest context is
  /// `maxContext`; 1 means no split and no combine launch.
  int chooseSplits(int tokens, int maxContext, int multiprocessors = 132) const;
};

} // namespace sol::cuda

//===- LaunchArgs.h - The launch arguments of every kernel family ---------===//
//
// Each kernel takes one parameter, `const XArgs args`, a plain struct
// defined here, and reads its fields by name; the host fills the same
// struct by field name (designated initialisers) and launches it with
// cuda::Kernel::launch(dims, stream, args). This header is compiled on both
// sides:
//  * as kernel code (NVRTC, nvcc, and the CPU emulation of
//    test/unit/cuda/emulation, which defines SOL_KERNEL_EMULATION), where a
//    device pointer field is a typed pointer, T *;
//  * as host C++ (runtime/cuda, test/gpu), where it is a DeviceAddress: the
//    64-bit address (CUdeviceptr), built from a CUdeviceptr or from any
//    pointer holding a device address.
// Both have the size and alignment of a 64-bit pointer, and the static
// asserts below check every struct's size and every field's offset on
// either side, so a layout that differs between the kernel and the host
// fails the build of the side that drifted instead of launching garbage.
//
// Every field has a default (null, zero), so a launch names only what it
// uses; fields a variant does not read (the fp8 scales for a bf16 cache,
// say) stay null.
//
// Kernel::launch also checks, from the kernel's mangled name, that it takes
// this very struct: the mangled name ends with its parameter's type,
// "<length><struct name>E" (LaunchArgsName below).
//
// The parameter is `const __grid_constant__`, read in place. Register
// allocation is sensitive to how NVVM sees the arguments: as a plain by-value
// struct the same kernel bodies came out differently from positional
// parameters (64-bit offsets hoisted out of loops), and the Llama-3.2-1B
// batch-1 GEMVs went from 48 to 53 registers (five blocks per SM to four),
// the 128 x 128 GEMM tiles from 124 to 166 (two to one). With
// __grid_constant__ every instance of the supported shapes has the blocks
// per SM it had with positional parameters (linear_gemm's tile loads also
// read `args` directly, LinearGemm.cuh). KernelCompileTest compares every
// model instance's registers, blocks per SM and stack frame with
// test/unit/cuda/kernel-resources.txt, so a change that costs occupancy fails
// a test rather than a benchmark.
//
// Sizes are plain int / unsigned / float / unsigned long long: NVRTC has no
// standard headers.
//
//===----------------------------------------------------------------------===//
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) ||                          \
    defined(SOL_KERNEL_EMULATION)
#define SOL_KERNEL_CODE 1
#else
#define SOL_KERNEL_CODE 0
#endif

// Functions both the executor and the kernels call (sizes of a grid).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SOL_HOST_DEVICE __host__ __device__
#else
#define SOL_HOST_DEVICE
#endif

#if SOL_KERNEL_CODE
#include "Common.cuh"
#define SOL_DEVICE_PTR(T) T *
#else
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#define SOL_DEVICE_PTR(T) ::sol::kernels::DeviceAddress
#endif

namespace sol {
namespace kernels {

#if SOL_KERNEL_CODE
struct SamplingParams; // Sampling.cuh
#else
/// A device address on the host: a device pointer field of a launch-args
/// struct. Converts from a CUdeviceptr (unsigned long long, exactly: an int
/// does not become an address by accident), from nullptr, and from any
/// pointer that holds a device address (DeviceBuffer::as<T>()).
struct DeviceAddress {
  unsigned long long value = 0;

  constexpr DeviceAddress() = default;
  constexpr DeviceAddress(std::nullptr_t) {}
  template <typename U>
  requires std::is_same_v<U, unsigned long long>
  constexpr DeviceAddress(U address) : value(address) {}
  template <typename U>
  DeviceAddress(U *pointer)
      : value(reinterpret_cast<std::uintptr_t>(pointer)) {}
};
#endif

static_assert(sizeof(SOL_DEVICE_PTR(void)) == 8 &&
                  alignof(SOL_DEVICE_PTR(void)) == 8,
              "a device pointer of a launch-args struct must be 64 bits");

// A field's offset as a constant expression. NVRTC has neither <cstddef>
// nor __builtin_offsetof; its front end folds __INTADDR__ of the classic
// null-pointer form instead.
#if defined(__CUDACC_RTC__)
#define SOL_OFFSETOF(T, field) __INTADDR__(&((T *)0)->field)
#else
#define SOL_OFFSETOF(T, field) __builtin_offsetof(T, field)
#endif

// Checks a struct's size and the offset of one of its fields, on whichever
// side compiles this header.
#define SOL_ARGS_SIZE(T, bytes)                                                \
  static_assert(sizeof(T) == (bytes) && alignof(T) == 8,                       \
                #T ": the size of a launch-args struct is part of its "        \
                   "contract");
#define SOL_ARGS_FIELD(T, field, offset)                                       \
  static_assert(SOL_OFFSETOF(T, field) == (offset),                            \
                #T "::" #field ": a field's offset is part of its contract");

/// embedding<D>: out[t] = table[ids[t]] for t < tokens (Embedding.cuh). An
/// id -1 - r names row r of the previous step's result: previousIds[r], or
/// the index in *previousKey (a fused LM-head argmax key); with clearKey
/// (a one-block launch) the kernel then zeroes *previousKey.
struct EmbeddingArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;         // [tokens, D]
  SOL_DEVICE_PTR(const bf16) table = nullptr; // [vocab, D]
  SOL_DEVICE_PTR(const int) ids = nullptr;    // [tokens]
  SOL_DEVICE_PTR(const int) previousIds = nullptr;
  SOL_DEVICE_PTR(unsigned long long) previousKey = nullptr;
  int tokens = 0;
  int clearKey = 0;
  float scale = 1.0f; // rows times bf16(scale) when != 1 (Gemma)
};
SOL_ARGS_SIZE(EmbeddingArgs, 56)
SOL_ARGS_FIELD(EmbeddingArgs, out, 0)
SOL_ARGS_FIELD(EmbeddingArgs, table, 8)
SOL_ARGS_FIELD(EmbeddingArgs, ids, 16)
SOL_ARGS_FIELD(EmbeddingArgs, previousIds, 24)
SOL_ARGS_FIELD(EmbeddingArgs, previousKey, 32)
SOL_ARGS_FIELD(EmbeddingArgs, tokens, 40)
SOL_ARGS_FIELD(EmbeddingArgs, clearKey, 44)
SOL_ARGS_FIELD(EmbeddingArgs, scale, 48)

/// rms_norm<D> (RmsNorm.cuh): rows of D elements in groups of rowGroup
/// rows, consecutive groups xStride / outStride elements apart; with a
/// residual, x + residual is normalised and written back to residual.
struct RmsNormArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) x = nullptr;
  SOL_DEVICE_PTR(bf16) residual = nullptr;     // [rows, D], or null
  SOL_DEVICE_PTR(const bf16) weight = nullptr; // [D]
  float eps = 0.0f;
  int rows = 0;
  int xStride = 0;
  int outStride = 0;
  int rowGroup = 1;
  // With a residual: x is normalised by inputWeight (with inputEps) before
  // the add, or null.
  SOL_DEVICE_PTR(const bf16) inputWeight = nullptr; // [D]
  // Rows at index >= secondFrom within their group are scaled by
  // secondWeight instead of weight (q's heads, then k's), or null.
  SOL_DEVICE_PTR(const bf16) secondWeight = nullptr; // [D]
  float inputEps = 0.0f;
  int secondFrom = 0;
};
SOL_ARGS_SIZE(RmsNormArgs, 80)
SOL_ARGS_FIELD(RmsNormArgs, out, 0)
SOL_ARGS_FIELD(RmsNormArgs, x, 8)
SOL_ARGS_FIELD(RmsNormArgs, residual, 16)
SOL_ARGS_FIELD(RmsNormArgs, weight, 24)
SOL_ARGS_FIELD(RmsNormArgs, eps, 32)
SOL_ARGS_FIELD(RmsNormArgs, rows, 36)
SOL_ARGS_FIELD(RmsNormArgs, xStride, 40)
SOL_ARGS_FIELD(RmsNormArgs, outStride, 44)
SOL_ARGS_FIELD(RmsNormArgs, rowGroup, 48)
SOL_ARGS_FIELD(RmsNormArgs, inputWeight, 56)
SOL_ARGS_FIELD(RmsNormArgs, secondWeight, 64)
SOL_ARGS_FIELD(RmsNormArgs, inputEps, 72)
SOL_ARGS_FIELD(RmsNormArgs, secondFrom, 76)

/// y = epilogue(x . W^T + bias) for `rows` rows of x [rows, k] and W [n, k]:
/// linear_gemv, linear_skinny (LinearGemv.cuh, LinearSkinny.cuh; k is their
/// template parameter K) and linear_gemm (LinearGemm.cuh; rows is M). y is
/// bf16 or fp32 as the instance's OutT says. normWeight and eps: the RMS
/// norm of the NormPrologue variants. argmaxKey: a zeroed 64-bit word in
/// which linear_gemv's kEpilogueArgmax variant leaves the row's argmaxKey
/// (Common.cuh). residual, inputNormWeight, inputEps and arrivals: the
/// AddNorm variants of linear_gemv, which normalise residual + x (x itself
/// normalised first by inputNormWeight, when given) and write that sum back
/// over the residual; arrivals is a zeroed counter the launch leaves zero.
struct LinearArgs {
  SOL_DEVICE_PTR(void) y = nullptr;
  SOL_DEVICE_PTR(const bf16) x = nullptr;
  SOL_DEVICE_PTR(const bf16) w = nullptr;
  SOL_DEVICE_PTR(const bf16) bias = nullptr;       // [n], or null
  SOL_DEVICE_PTR(const bf16) normWeight = nullptr; // [k]
  SOL_DEVICE_PTR(unsigned long long) argmaxKey = nullptr;
  int rows = 0;
  int n = 0;
  int k = 0;
  float eps = 0.0f;
  SOL_DEVICE_PTR(bf16) residual = nullptr;              // [1, k], or null
  SOL_DEVICE_PTR(const bf16) inputNormWeight = nullptr; // [k], or null
  SOL_DEVICE_PTR(unsigned) arrivals = nullptr;
  float inputEps = 0.0f;
};
SOL_ARGS_SIZE(LinearArgs, 96)
SOL_ARGS_FIELD(LinearArgs, y, 0)
SOL_ARGS_FIELD(LinearArgs, x, 8)
SOL_ARGS_FIELD(LinearArgs, w, 16)
SOL_ARGS_FIELD(LinearArgs, bias, 24)
SOL_ARGS_FIELD(LinearArgs, normWeight, 32)
SOL_ARGS_FIELD(LinearArgs, argmaxKey, 40)
SOL_ARGS_FIELD(LinearArgs, rows, 48)
SOL_ARGS_FIELD(LinearArgs, n, 52)
SOL_ARGS_FIELD(LinearArgs, k, 56)
SOL_ARGS_FIELD(LinearArgs, eps, 60)
SOL_ARGS_FIELD(LinearArgs, residual, 64)
SOL_ARGS_FIELD(LinearArgs, inputNormWeight, 72)
SOL_ARGS_FIELD(LinearArgs, arrivals, 80)
SOL_ARGS_FIELD(LinearArgs, inputEps, 88)

/// linear_splitk_finalize (LinearGemm.cuh): y = epilogue(partial + bias)
/// for [rows, n] fp32 partial sums, which it zeroes again.
struct SplitKFinalizeArgs {
  SOL_DEVICE_PTR(void) y = nullptr;
  SOL_DEVICE_PTR(float) partial = nullptr;
  SOL_DEVICE_PTR(const bf16) bias = nullptr;
  int rows = 0;
  int n = 0;
};
SOL_ARGS_SIZE(SplitKFinalizeArgs, 32)
SOL_ARGS_FIELD(SplitKFinalizeArgs, y, 0)
SOL_ARGS_FIELD(SplitKFinalizeArgs, partial, 8)
SOL_ARGS_FIELD(SplitKFinalizeArgs, bias, 16)
SOL_ARGS_FIELD(SplitKFinalizeArgs, rows, 24)
SOL_ARGS_FIELD(SplitKFinalizeArgs, n, 28)

// The paged KV cache of one layer and the step inputs that address it, as
// the rope and attention kernels take them: kCache and vCache are
// [blocks, BS, Hkv, HD] of bf16 or fp8 (E4M3); kScales and vScales, for an
// fp8 cache only, [blocks, BS, Hkv] floats; sequence s's blocks are
// blockTables[s * maxBlocks, +maxBlocks); token t is at positions[t] of
// sequence tokenSeq[t] (< 0: padding).

/// rope_kv_write and rope_kv_write_fp8 (RopeKvWrite.cuh): rotate q and k of
/// qkv [tokens, (Hq + 2 Hkv) HD] in place and append k and v to the cache.
/// invFreq holds HD / 2 inverse frequencies, then (LongRoPE) the HD / 2 of
/// the long set, which positions >= ropeLongFrom use; 0x7fffffff: none.
struct RopeKvWriteArgs {
  SOL_DEVICE_PTR(bf16) qkv = nullptr;
  SOL_DEVICE_PTR(void) kCache = nullptr;
  SOL_DEVICE_PTR(void) vCache = nullptr;
  SOL_DEVICE_PTR(float) kScales = nullptr;
  SOL_DEVICE_PTR(float) vScales = nullptr;
  SOL_DEVICE_PTR(const float) invFreq = nullptr; // [HD / 2] (or [HD])
  SOL_DEVICE_PTR(const int) positions = nullptr;
  SOL_DEVICE_PTR(const int) tokenSeq = nullptr;
  SOL_DEVICE_PTR(const int) blockTables = nullptr;
  float attentionScaling = 1.0f;
  int maxBlocks = 0;
  int tokens = 0;
  int ropeLongFrom = 0x7fffffff;
};
SOL_ARGS_SIZE(RopeKvWriteArgs, 88)
SOL_ARGS_FIELD(RopeKvWriteArgs, qkv, 0)
SOL_ARGS_FIELD(RopeKvWriteArgs, kCache, 8)
SOL_ARGS_FIELD(RopeKvWriteArgs, vCache, 16)
SOL_ARGS_FIELD(RopeKvWriteArgs, kScales, 24)
SOL_ARGS_FIELD(RopeKvWriteArgs, vScales, 32)
SOL_ARGS_FIELD(RopeKvWriteArgs, invFreq, 40)
SOL_ARGS_FIELD(RopeKvWriteArgs, positions, 48)
SOL_ARGS_FIELD(RopeKvWriteArgs, tokenSeq, 56)
SOL_ARGS_FIELD(RopeKvWriteArgs, blockTables, 64)
SOL_ARGS_FIELD(RopeKvWriteArgs, attentionScaling, 72)
SOL_ARGS_FIELD(RopeKvWriteArgs, maxBlocks, 76)
SOL_ARGS_FIELD(RopeKvWriteArgs, tokens, 80)
SOL_ARGS_FIELD(RopeKvWriteArgs, ropeLongFrom, 84)

/// paged_attention and paged_attention_fp8 (PagedAttention.cuh): out
/// [tokens, Hq HD] from q of qkv and the cache. With splits > 1 (grid y)
/// outside a cluster the blocks merge through `partials` and `arrivals`
/// (else both may be null). The FusedRope variants also rotate q and k
/// with invFreq, attentionScaling and ropeLongFrom (as RopeKvWriteArgs) and
/// append k and v to the cache; the QkNorm variants first normalise each q
/// and k head as HeadRmsNorm does (rms_norm's RmsNormArgs with weight
/// qNormWeight for q heads, secondWeight kNormWeight for k heads, eps
/// normEps). softcap > 0 caps every score s (q.k * scale) to softcap *
/// tanh(s / softcap) before the mask (Gemma 2).
struct PagedAttentionArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) qkv = nullptr;
  SOL_DEVICE_PTR(void) kCache = nullptr;
  SOL_DEVICE_PTR(void) vCache = nullptr;
  SOL_DEVICE_PTR(float) kScales = nullptr;
  SOL_DEVICE_PTR(float) vScales = nullptr;
  SOL_DEVICE_PTR(const int) positions = nullptr;
  SOL_DEVICE_PTR(const int) tokenSeq = nullptr;
  SOL_DEVICE_PTR(const int) blockTables = nullptr;
  SOL_DEVICE_PTR(float) partials = nullptr;
  SOL_DEVICE_PTR(unsigned) arrivals = nullptr;
  SOL_DEVICE_PTR(const float) invFreq = nullptr;
  int maxBlocks = 0;
  float scale = 0.0f;
  int slidingWindow = 0; // 0: none
  int tokens = 0;
  float attentionScaling = 1.0f;
  float softcap = 0.0f; // 0: none
  int ropeLongFrom = 0x7fffffff;
  SOL_DEVICE_PTR(const bf16) sinks = nullptr;       // [Hq] (gpt-oss), or none
  SOL_DEVICE_PTR(const bf16) qNormWeight = nullptr; // [HD], QkNorm only
  SOL_DEVICE_PTR(const bf16) kNormWeight = nullptr; // [HD], QkNorm only
  float normEps = 0.0f;
};
SOL_ARGS_SIZE(PagedAttentionArgs, 160)
SOL_ARGS_FIELD(PagedAttentionArgs, out, 0)
SOL_ARGS_FIELD(PagedAttentionArgs, qkv, 8)
SOL_ARGS_FIELD(PagedAttentionArgs, kCache, 16)
SOL_ARGS_FIELD(PagedAttentionArgs, vCache, 24)
SOL_ARGS_FIELD(PagedAttentionArgs, kScales, 32)
SOL_ARGS_FIELD(PagedAttentionArgs, vScales, 40)
SOL_ARGS_FIELD(PagedAttentionArgs, positions, 48)
SOL_ARGS_FIELD(PagedAttentionArgs, tokenSeq, 56)
SOL_ARGS_FIELD(PagedAttentionArgs, blockTables, 64)
SOL_ARGS_FIELD(PagedAttentionArgs, partials, 72)
SOL_ARGS_FIELD(PagedAttentionArgs, arrivals, 80)
SOL_ARGS_FIELD(PagedAttentionArgs, invFreq, 88)
SOL_ARGS_FIELD(PagedAttentionArgs, maxBlocks, 96)
SOL_ARGS_FIELD(PagedAttentionArgs, scale, 100)
SOL_ARGS_FIELD(PagedAttentionArgs, slidingWindow, 104)
SOL_ARGS_FIELD(PagedAttentionArgs, tokens, 108)
SOL_ARGS_FIELD(PagedAttentionArgs, attentionScaling, 112)
SOL_ARGS_FIELD(PagedAttentionArgs, softcap, 116)
SOL_ARGS_FIELD(PagedAttentionArgs, ropeLongFrom, 120)
SOL_ARGS_FIELD(PagedAttentionArgs, sinks, 128)
SOL_ARGS_FIELD(PagedAttentionArgs, qNormWeight, 136)
SOL_ARGS_FIELD(PagedAttentionArgs, kNormWeight, 144)
SOL_ARGS_FIELD(PagedAttentionArgs, normEps, 152)

/// The tensor-core attention kernels over host-planned tiles:
/// prefill_attention(_fp8) (PrefillAttention.cuh) and chunk_attention(_fp8)
/// (ChunkAttention.cuh). tiles[i] = (first token, tokens) of one sequence.
/// softcap as in PagedAttentionArgs.
struct TiledAttentionArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) qkv = nullptr;
  SOL_DEVICE_PTR(const void) kCache = nullptr;
  SOL_DEVICE_PTR(const void) vCache = nullptr;
  SOL_DEVICE_PTR(const float) kScales = nullptr;
  SOL_DEVICE_PTR(const float) vScales = nullptr;
  SOL_DEVICE_PTR(const int) positions = nullptr;
  SOL_DEVICE_PTR(const int) tokenSeq = nullptr;
  SOL_DEVICE_PTR(const int) blockTables = nullptr;
  SOL_DEVICE_PTR(const int2) tiles = nullptr;
  int maxBlocks = 0;
  float scale = 0.0f;
  int slidingWindow = 0;                      // 0: none
  float softcap = 0.0f;                       // 0: none
  SOL_DEVICE_PTR(const bf16) sinks = nullptr; // [Hq] (gpt-oss), or none
};
SOL_ARGS_SIZE(TiledAttentionArgs, 104)
SOL_ARGS_FIELD(TiledAttentionArgs, out, 0)
SOL_ARGS_FIELD(TiledAttentionArgs, qkv, 8)
SOL_ARGS_FIELD(TiledAttentionArgs, kCache, 16)
SOL_ARGS_FIELD(TiledAttentionArgs, vCache, 24)
SOL_ARGS_FIELD(TiledAttentionArgs, kScales, 32)
SOL_ARGS_FIELD(TiledAttentionArgs, vScales, 40)
SOL_ARGS_FIELD(TiledAttentionArgs, positions, 48)
SOL_ARGS_FIELD(TiledAttentionArgs, tokenSeq, 56)
SOL_ARGS_FIELD(TiledAttentionArgs, blockTables, 64)
SOL_ARGS_FIELD(TiledAttentionArgs, tiles, 72)
SOL_ARGS_FIELD(TiledAttentionArgs, maxBlocks, 80)
SOL_ARGS_FIELD(TiledAttentionArgs, scale, 84)
SOL_ARGS_FIELD(TiledAttentionArgs, slidingWindow, 88)
SOL_ARGS_FIELD(TiledAttentionArgs, softcap, 92)
SOL_ARGS_FIELD(TiledAttentionArgs, sinks, 96)

/// swiglu<I> and swiglu_pairs<I> (Swiglu.cuh): out [tokens, I] from gateUp
/// [tokens, 2 I].
struct SwigluArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) gateUp = nullptr;
  int tokens = 0;
  int geluTanh = 0; // the gate's activation: silu, or (1) tanh GELU (GeGLU)
};
SOL_ARGS_SIZE(SwigluArgs, 24)
SOL_ARGS_FIELD(SwigluArgs, out, 0)
SOL_ARGS_FIELD(SwigluArgs, gateUp, 8)
SOL_ARGS_FIELD(SwigluArgs, tokens, 16)
SOL_ARGS_FIELD(SwigluArgs, geluTanh, 20)

/// softcap (Softcap.cuh): x = cap * tanh(x / cap) over `count` floats, in
/// place (Gemma 2's final-logit soft-capping).
struct SoftcapArgs {
  SOL_DEVICE_PTR(float) values = nullptr;
  long long count = 0;
  float cap = 0.0f;
};
SOL_ARGS_SIZE(SoftcapArgs, 24)
SOL_ARGS_FIELD(SoftcapArgs, values, 0)
SOL_ARGS_FIELD(SoftcapArgs, count, 8)
SOL_ARGS_FIELD(SoftcapArgs, cap, 16)

/// add<D> (Add.cuh): out = a + b over [tokens, D]; out may alias a.
struct AddArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) a = nullptr;
  SOL_DEVICE_PTR(const bf16) b = nullptr;
  int tokens = 0;
};
SOL_ARGS_SIZE(AddArgs, 32)
SOL_ARGS_FIELD(AddArgs, out, 0)
SOL_ARGS_FIELD(AddArgs, a, 8)
SOL_ARGS_FIELD(AddArgs, b, 16)
SOL_ARGS_FIELD(AddArgs, tokens, 24)

/// sigmoid_gate<D, H> (SigmoidGate.cuh): out = sigmoid(in . weight) * value
/// per row, rows rows.
struct SigmoidGateArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) value = nullptr;
  SOL_DEVICE_PTR(const bf16) in = nullptr;
  SOL_DEVICE_PTR(const bf16) weight = nullptr;
  int rows = 0;
};
SOL_ARGS_SIZE(SigmoidGateArgs, 40)
SOL_ARGS_FIELD(SigmoidGateArgs, out, 0)
SOL_ARGS_FIELD(SigmoidGateArgs, value, 8)
SOL_ARGS_FIELD(SigmoidGateArgs, in, 16)
SOL_ARGS_FIELD(SigmoidGateArgs, weight, 24)
SOL_ARGS_FIELD(SigmoidGateArgs, rows, 32)

/// gather_columns<W> (GatherColumns.cuh): out[t][j] = in[t][columns[j]] for
/// t < rows.
struct GatherColumnsArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) in = nullptr;
  SOL_DEVICE_PTR(const int) columns = nullptr; // [W]
  int rows = 0;
};
SOL_ARGS_SIZE(GatherColumnsArgs, 32)
SOL_ARGS_FIELD(GatherColumnsArgs, out, 0)
SOL_ARGS_FIELD(GatherColumnsArgs, in, 8)
SOL_ARGS_FIELD(GatherColumnsArgs, columns, 16)
SOL_ARGS_FIELD(GatherColumnsArgs, rows, 24)

/// gather_rows<D> (GatherRows.cuh): out[i] = in[indices[i]] for i < rows.
struct GatherRowsArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const bf16) in = nullptr;
  SOL_DEVICE_PTR(const int) indices = nullptr;
  int rows = 0;
};
SOL_ARGS_SIZE(GatherRowsArgs, 32)
SOL_ARGS_FIELD(GatherRowsArgs, out, 0)
SOL_ARGS_FIELD(GatherRowsArgs, in, 8)
SOL_ARGS_FIELD(GatherRowsArgs, indices, 16)
SOL_ARGS_FIELD(GatherRowsArgs, rows, 24)

/// argmax (Argmax.cuh): out[r] = argmax of logits [rows, vocab]; the splits
/// of a row (grid x) meet in partialValue / partialIndex [rows, splits]
/// and arrivals [rows] (zero between launches; unused with one split).
struct ArgmaxArgs {
  SOL_DEVICE_PTR(int) out = nullptr;
  SOL_DEVICE_PTR(const float) logits = nullptr;
  SOL_DEVICE_PTR(float) partialValue = nullptr;
  SOL_DEVICE_PTR(int) partialIndex = nullptr;
  SOL_DEVICE_PTR(unsigned) arrivals = nullptr;
  int rows = 0;
  int vocab = 0;
};
SOL_ARGS_SIZE(ArgmaxArgs, 48)
SOL_ARGS_FIELD(ArgmaxArgs, out, 0)
SOL_ARGS_FIELD(ArgmaxArgs, logits, 8)
SOL_ARGS_FIELD(ArgmaxArgs, partialValue, 16)
SOL_ARGS_FIELD(ArgmaxArgs, partialIndex, 24)
SOL_ARGS_FIELD(ArgmaxArgs, arrivals, 32)
SOL_ARGS_FIELD(ArgmaxArgs, rows, 40)
SOL_ARGS_FIELD(ArgmaxArgs, vocab, 44)

/// sample_rows (Sampling.cuh): per-row sampling and logprobs over logits
/// [rows, vocab], which it restores before returning. outIds is always
/// written; outLogprobs may be null; outTopIds / outTopLogprobs [rows,
/// numTop] are used when numTop > 0. params: rows SamplingParams (the
/// host's sol::SamplingRow), or null for greedy rows. penaltyOffsets: rows
/// + 1 CSR offsets into penaltyEntries, or null; penaltySaved: scratch of
/// one float per entry.
struct SamplingArgs {
  SOL_DEVICE_PTR(int) outIds = nullptr;
  SOL_DEVICE_PTR(float) outLogprobs = nullptr;
  SOL_DEVICE_PTR(int) outTopIds = nullptr;
  SOL_DEVICE_PTR(float) outTopLogprobs = nullptr;
  SOL_DEVICE_PTR(float) logits = nullptr;
  SOL_DEVICE_PTR(const SamplingParams) params = nullptr;
  SOL_DEVICE_PTR(const int) penaltyOffsets = nullptr;
  SOL_DEVICE_PTR(const int2) penaltyEntries = nullptr;
  SOL_DEVICE_PTR(float) penaltySaved = nullptr;
  int rows = 0;
  int vocab = 0;
  int numTop = 0;
};
SOL_ARGS_SIZE(SamplingArgs, 88)
SOL_ARGS_FIELD(SamplingArgs, outIds, 0)
SOL_ARGS_FIELD(SamplingArgs, outLogprobs, 8)
SOL_ARGS_FIELD(SamplingArgs, outTopIds, 16)
SOL_ARGS_FIELD(SamplingArgs, outTopLogprobs, 24)
SOL_ARGS_FIELD(SamplingArgs, logits, 32)
SOL_ARGS_FIELD(SamplingArgs, params, 40)
SOL_ARGS_FIELD(SamplingArgs, penaltyOffsets, 48)
SOL_ARGS_FIELD(SamplingArgs, penaltyEntries, 56)
SOL_ARGS_FIELD(SamplingArgs, penaltySaved, 64)
SOL_ARGS_FIELD(SamplingArgs, rows, 72)
SOL_ARGS_FIELD(SamplingArgs, vocab, 76)
SOL_ARGS_FIELD(SamplingArgs, numTop, 80)

/// linear_gemv_quant (LinearGemvQuant.cuh): y = epilogue(x . W'^T + bias)
/// for `rows` rows of x [rows, k], W' the dequantized [n, k] weight whose
/// codes, scales and zeros are in the instance's WeightFormat (int8: codes
/// [n, k], scales [n]; fp8: E4M3 codes [n, k], scales [n]; int4: packed
/// codes [n, k / 2], scales [n, k / g], zeros [n, k / g], zeros null
/// otherwise). normWeight and eps: the NormPrologue variants' RMS norm.
struct QuantLinearArgs {
  SOL_DEVICE_PTR(void) y = nullptr;
  SOL_DEVICE_PTR(const bf16) x = nullptr;
  SOL_DEVICE_PTR(const unsigned char) w = nullptr;
  SOL_DEVICE_PTR(const float) scales = nullptr;
  SOL_DEVICE_PTR(const unsigned char) zeros = nullptr;
  SOL_DEVICE_PTR(const bf16) bias = nullptr;       // [n], or null
  SOL_DEVICE_PTR(const bf16) normWeight = nullptr; // [k]
  int rows = 0;
  int n = 0;
  int k = 0;
  float eps = 0.0f;
};
SOL_ARGS_SIZE(QuantLinearArgs, 72)
SOL_ARGS_FIELD(QuantLinearArgs, y, 0)
SOL_ARGS_FIELD(QuantLinearArgs, x, 8)
SOL_ARGS_FIELD(QuantLinearArgs, w, 16)
SOL_ARGS_FIELD(QuantLinearArgs, scales, 24)
SOL_ARGS_FIELD(QuantLinearArgs, zeros, 32)
SOL_ARGS_FIELD(QuantLinearArgs, bias, 40)
SOL_ARGS_FIELD(QuantLinearArgs, normWeight, 48)
SOL_ARGS_FIELD(QuantLinearArgs, rows, 56)
SOL_ARGS_FIELD(QuantLinearArgs, n, 60)
SOL_ARGS_FIELD(QuantLinearArgs, k, 64)
SOL_ARGS_FIELD(QuantLinearArgs, eps, 68)

/// quantize_rows_fp8 (QuantizeActivations.cuh): the fp8 activation rule
/// over `rows` rows of x [rows, k]: s[t] = max|x[t]| / 448 (1 if 0), codes
/// [rows, k] = e4m3(x / s[t]), scales [k / 128, rows] = s[t] (a row's
/// scale once for every 128 k, rows fastest), for an fp8 GEMM that scales
/// back.
struct QuantizeRowsArgs {
  SOL_DEVICE_PTR(unsigned char) codes = nullptr;
  SOL_DEVICE_PTR(float) scales = nullptr;
  SOL_DEVICE_PTR(const bf16) x = nullptr;
  int rows = 0;
};
SOL_ARGS_SIZE(QuantizeRowsArgs, 32)
SOL_ARGS_FIELD(QuantizeRowsArgs, codes, 0)
SOL_ARGS_FIELD(QuantizeRowsArgs, scales, 8)
SOL_ARGS_FIELD(QuantizeRowsArgs, x, 16)
SOL_ARGS_FIELD(QuantizeRowsArgs, rows, 24)

/// rms_norm_quantize_fp8 (QuantizeActivations.cuh): quantize_rows_fp8 of
/// bf16(weight * bf16(x * rsqrt(mean(x^2) + eps))).
struct NormQuantizeRowsArgs {
  SOL_DEVICE_PTR(unsigned char) codes = nullptr;
  SOL_DEVICE_PTR(float) scales = nullptr;
  SOL_DEVICE_PTR(const bf16) x = nullptr;
  SOL_DEVICE_PTR(const bf16) weight = nullptr;
  float eps = 0.0f;
  int rows = 0;
};
SOL_ARGS_SIZE(NormQuantizeRowsArgs, 40)
SOL_ARGS_FIELD(NormQuantizeRowsArgs, codes, 0)
SOL_ARGS_FIELD(NormQuantizeRowsArgs, scales, 8)
SOL_ARGS_FIELD(NormQuantizeRowsArgs, x, 16)
SOL_ARGS_FIELD(NormQuantizeRowsArgs, weight, 24)
SOL_ARGS_FIELD(NormQuantizeRowsArgs, eps, 32)
SOL_ARGS_FIELD(NormQuantizeRowsArgs, rows, 36)

/// repeat_scales (QuantizeActivations.cuh): out [repeats, count] = in[i].
struct RepeatScalesArgs {
  SOL_DEVICE_PTR(float) out = nullptr;
  SOL_DEVICE_PTR(const float) in = nullptr;
  int count = 0;
  int repeats = 0;
};
SOL_ARGS_SIZE(RepeatScalesArgs, 24)
SOL_ARGS_FIELD(RepeatScalesArgs, out, 0)
SOL_ARGS_FIELD(RepeatScalesArgs, in, 8)
SOL_ARGS_FIELD(RepeatScalesArgs, count, 16)
SOL_ARGS_FIELD(RepeatScalesArgs, repeats, 20)

/// linear_gemm_quant (LinearGemmQuant.cuh): y = epilogue(x . W'^T + bias)
/// for `rows` rows of x [rows, k]; codes, scales and zeros as
/// QuantLinearArgs has them. With split-K, y is the fp32 workspace of
/// linear_splitk_finalize and bias is null.
struct QuantGemmArgs {
  SOL_DEVICE_PTR(void) y = nullptr;
  SOL_DEVICE_PTR(const bf16) x = nullptr;
  SOL_DEVICE_PTR(const unsigned char) w = nullptr;
  SOL_DEVICE_PTR(const float) scales = nullptr;
  SOL_DEVICE_PTR(const unsigned char) zeros = nullptr;
  SOL_DEVICE_PTR(const bf16) bias = nullptr; // [n], or null
  int rows = 0;
  int n = 0;
  int k = 0;
};
SOL_ARGS_SIZE(QuantGemmArgs, 64)
SOL_ARGS_FIELD(QuantGemmArgs, y, 0)
SOL_ARGS_FIELD(QuantGemmArgs, x, 8)
SOL_ARGS_FIELD(QuantGemmArgs, w, 16)
SOL_ARGS_FIELD(QuantGemmArgs, scales, 24)
SOL_ARGS_FIELD(QuantGemmArgs, zeros, 32)
SOL_ARGS_FIELD(QuantGemmArgs, bias, 40)
SOL_ARGS_FIELD(QuantGemmArgs, rows, 48)
SOL_ARGS_FIELD(QuantGemmArgs, n, 52)
SOL_ARGS_FIELD(QuantGemmArgs, k, 56)

/// A CUtensorMap (cuda.h; encoded by runtime/cuda/TensorMap.h): 128 opaque
/// bytes, 64-byte aligned, read by the TMA copies of Tma.cuh in place in a
/// __grid_constant__ parameter.
struct alignas(64) TensorMap {
  unsigned long long words[16] = {};
};

/// linear_wgmma_fp8 (LinearWgmmaFp8.cuh): y = epilogue(xs[t] * ws[n] *
/// (xq[t] . wq[n]) + bias[n]) over E4M3 codes, x and W read through tensor
/// maps (x: [rows, k] bytes with a box of 128 x 128, w: [n, k] with a box of
/// 128 x tileN, both 128-byte swizzled).
struct Fp8GemmArgs {
  TensorMap x;
  TensorMap w;
  SOL_DEVICE_PTR(bf16) y = nullptr;
  SOL_DEVICE_PTR(const float) xScales = nullptr; // [rows]
  SOL_DEVICE_PTR(const float) wScales = nullptr; // [n]
  SOL_DEVICE_PTR(const bf16) bias = nullptr;     // [n], or null
  int rows = 0;
  int n = 0;
  int k = 0;
};
static_assert(sizeof(Fp8GemmArgs) == 320 && alignof(Fp8GemmArgs) == 64,
              "Fp8GemmArgs: the size of a launch-args struct is part of its "
              "contract");
SOL_ARGS_FIELD(Fp8GemmArgs, x, 0)
SOL_ARGS_FIELD(Fp8GemmArgs, w, 128)
SOL_ARGS_FIELD(Fp8GemmArgs, y, 256)
SOL_ARGS_FIELD(Fp8GemmArgs, xScales, 264)
SOL_ARGS_FIELD(Fp8GemmArgs, wScales, 272)
SOL_ARGS_FIELD(Fp8GemmArgs, bias, 280)
SOL_ARGS_FIELD(Fp8GemmArgs, rows, 288)
SOL_ARGS_FIELD(Fp8GemmArgs, n, 292)
SOL_ARGS_FIELD(Fp8GemmArgs, k, 296)

/// dequantize_weight (Dequantize.cuh): out = bf16(W') for a quantized [n, k]
/// weight in the instance's WeightFormat (codes, scales and zeros as
/// QuantLinearArgs has them).
struct DequantizeArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr; // [n, k]
  SOL_DEVICE_PTR(const unsigned char) w = nullptr;
  SOL_DEVICE_PTR(const float) scales = nullptr;
  SOL_DEVICE_PTR(const unsigned char) zeros = nullptr;
  int n = 0;
  int k = 0;
};
SOL_ARGS_SIZE(DequantizeArgs, 40)
SOL_ARGS_FIELD(DequantizeArgs, out, 0)
SOL_ARGS_FIELD(DequantizeArgs, w, 8)
SOL_ARGS_FIELD(DequantizeArgs, scales, 16)
SOL_ARGS_FIELD(DequantizeArgs, zeros, 24)
SOL_ARGS_FIELD(DequantizeArgs, n, 32)
SOL_ARGS_FIELD(DequantizeArgs, k, 36)

/// moe_route<E, K> (MoeDecode.cuh): per row of the router's logits, the K
/// chosen experts and their weights (slot r * K + k).
struct MoeRouteArgs {
  SOL_DEVICE_PTR(int) ids = nullptr;           // [rows * K]
  SOL_DEVICE_PTR(float) weights = nullptr;     // [rows * K]
  SOL_DEVICE_PTR(const bf16) logits = nullptr; // [rows, E]
  int rows = 0;
  int normalize = 0; // the K weights divided by their sum
};
SOL_ARGS_SIZE(MoeRouteArgs, 32)
SOL_ARGS_FIELD(MoeRouteArgs, ids, 0)
SOL_ARGS_FIELD(MoeRouteArgs, weights, 8)
SOL_ARGS_FIELD(MoeRouteArgs, logits, 16)
SOL_ARGS_FIELD(MoeRouteArgs, rows, 24)
SOL_ARGS_FIELD(MoeRouteArgs, normalize, 28)

/// moe_gate_up<H, I>: act[slot] = act(gate_e . x[row]) * (up_e . x[row]) for
/// the slots that chose expert e; gate and up are [E * I, H].
struct MoeGateUpArgs {
  SOL_DEVICE_PTR(bf16) act = nullptr;     // [rows * topK, I]
  SOL_DEVICE_PTR(const bf16) x = nullptr; // [rows, H]
  SOL_DEVICE_PTR(const bf16) gate = nullptr;
  SOL_DEVICE_PTR(const bf16) up = nullptr;
  SOL_DEVICE_PTR(const int) ids = nullptr; // [rows * topK]
  int rows = 0;
  int topK = 0;
  // The gate's activation, as Plan.fbs's GateActivation: silu (0), tanh
  // GELU (1), gpt-oss's clamped SwiGLU (2) with `limit`.
  int activation = 0;
  float limit = 0.0f;
  SOL_DEVICE_PTR(const bf16) gateBias = nullptr; // [E * I], or none
  SOL_DEVICE_PTR(const bf16) upBias = nullptr;   // [E * I], or none
  // Quantized experts (moe_gate_up<E, H, I, Format>): gate and up are
  // codes, these their scales: MXFP4's E8M0 exponents ([E * I, H / 32]
  // bytes), int8's and fp8's f32 row scales ([E * I]), int4's f32 group
  // scales ([E * I, H / groupSize]) with u8 zero points beside them.
  SOL_DEVICE_PTR(const void) gateScales = nullptr;
  SOL_DEVICE_PTR(const void) upScales = nullptr;
  SOL_DEVICE_PTR(const unsigned char) gateZeros = nullptr; // int4
  SOL_DEVICE_PTR(const unsigned char) upZeros = nullptr;   // int4
  int groupSize = 0; // int4: inputs per scale, a multiple of 32
};
SOL_ARGS_SIZE(MoeGateUpArgs, 112)
SOL_ARGS_FIELD(MoeGateUpArgs, act, 0)
SOL_ARGS_FIELD(MoeGateUpArgs, x, 8)
SOL_ARGS_FIELD(MoeGateUpArgs, gate, 16)
SOL_ARGS_FIELD(MoeGateUpArgs, up, 24)
SOL_ARGS_FIELD(MoeGateUpArgs, ids, 32)
SOL_ARGS_FIELD(MoeGateUpArgs, rows, 40)
SOL_ARGS_FIELD(MoeGateUpArgs, topK, 44)
SOL_ARGS_FIELD(MoeGateUpArgs, activation, 48)
SOL_ARGS_FIELD(MoeGateUpArgs, limit, 52)
SOL_ARGS_FIELD(MoeGateUpArgs, gateBias, 56)
SOL_ARGS_FIELD(MoeGateUpArgs, upBias, 64)
SOL_ARGS_FIELD(MoeGateUpArgs, gateScales, 72)
SOL_ARGS_FIELD(MoeGateUpArgs, upScales, 80)
SOL_ARGS_FIELD(MoeGateUpArgs, gateZeros, 88)
SOL_ARGS_FIELD(MoeGateUpArgs, upZeros, 96)
SOL_ARGS_FIELD(MoeGateUpArgs, groupSize, 104)

/// moe_down<H, I>: out[slot] = down_e . act[slot] (+ bias_e); down is
/// [E * H, I], bias [E * H] or none.
struct MoeDownArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;       // [rows * topK, H]
  SOL_DEVICE_PTR(const bf16) act = nullptr; // [rows * topK, I]
  SOL_DEVICE_PTR(const bf16) down = nullptr;
  SOL_DEVICE_PTR(const int) ids = nullptr;
  int rows = 0;
  int topK = 0;
  SOL_DEVICE_PTR(const bf16) bias = nullptr;
  // Quantized experts (moe_down<E, H, I, Format>): down's scales, as
  // MoeGateUpArgs's ([E * H, I / 32] exponents, [E * H] or [E * H, I /
  // groupSize] f32), and int4's zero points.
  SOL_DEVICE_PTR(const void) scales = nullptr;
  SOL_DEVICE_PTR(const unsigned char) zeros = nullptr;
  int groupSize = 0;
};
SOL_ARGS_SIZE(MoeDownArgs, 72)
SOL_ARGS_FIELD(MoeDownArgs, out, 0)
SOL_ARGS_FIELD(MoeDownArgs, act, 8)
SOL_ARGS_FIELD(MoeDownArgs, down, 16)
SOL_ARGS_FIELD(MoeDownArgs, ids, 24)
SOL_ARGS_FIELD(MoeDownArgs, rows, 32)
SOL_ARGS_FIELD(MoeDownArgs, topK, 36)
SOL_ARGS_FIELD(MoeDownArgs, bias, 40)
SOL_ARGS_FIELD(MoeDownArgs, scales, 48)
SOL_ARGS_FIELD(MoeDownArgs, zeros, 56)
SOL_ARGS_FIELD(MoeDownArgs, groupSize, 64)

/// moe_combine<H, K>: y[row] = the row's K outputs, weighted, in increasing
/// expert order.
struct MoeCombineArgs {
  SOL_DEVICE_PTR(bf16) y = nullptr;              // [rows, H]
  SOL_DEVICE_PTR(const bf16) out = nullptr;      // [rows * K, H]
  SOL_DEVICE_PTR(const float) weights = nullptr; // [rows * K]
  SOL_DEVICE_PTR(const int) ids = nullptr;       // [rows * K]
  int rows = 0;
};
SOL_ARGS_SIZE(MoeCombineArgs, 40)
SOL_ARGS_FIELD(MoeCombineArgs, y, 0)
SOL_ARGS_FIELD(MoeCombineArgs, out, 8)
SOL_ARGS_FIELD(MoeCombineArgs, weights, 16)
SOL_ARGS_FIELD(MoeCombineArgs, ids, 24)
SOL_ARGS_FIELD(MoeCombineArgs, rows, 32)

/// The values one 16-byte vector of an expert row holds, by format
/// (MoeDecode.cuh's kMoe*): 8 bf16, 16 int8 or fp8 codes, 32 MXFP4 or int4
/// codes.
SOL_HOST_DEVICE constexpr int moeVectorValues(int format) {
  return format == 0 ? 8 : format == 2 || format == 3 ? 16 : 32;
}

/// The (gate row, up row) pairs a warp of moe_gate_up_row<E, K, H, I,
/// Format> takes (MoeDecodeRow.cuh; the executor sizes the grid with it):
/// enough that about 16 of a lane's 16-byte loads are in flight, 1 to 4.
/// Format as MoeDecode.cuh's kMoe* (0 bf16, 1 MXFP4, 2 int8, 3 fp8, 4 int4).
SOL_HOST_DEVICE constexpr int moeRowPairsPerWarp(int format, int hidden) {
  const int perLane = (hidden / moeVectorValues(format) + 31) / 32;
  const int pairs = 16 / (2 * perLane);
  return pairs < 1 ? 1 : pairs > 4 ? 4 : pairs;
}

/// moe_gate_up_row<E, K, H, I[, Format]> (MoeDecodeRow.cuh): a step of one
/// row routed from its router logits; act[k] = act(gate_e . x) * (up_e . x)
/// for its k-th expert e in increasing expert order.
struct MoeGateUpRowArgs {
  SOL_DEVICE_PTR(bf16) act = nullptr;          // [K, I]
  SOL_DEVICE_PTR(const bf16) x = nullptr;      // [1, H]
  SOL_DEVICE_PTR(const bf16) logits = nullptr; // [1, E]
  SOL_DEVICE_PTR(const bf16) gate = nullptr;
  SOL_DEVICE_PTR(const bf16) up = nullptr;
  int normalize = 0;  // as MoeRouteArgs's
  int activation = 0; // as MoeGateUpArgs's
  float limit = 0.0f;
  int groupSize = 0;
  SOL_DEVICE_PTR(const bf16) gateBias = nullptr;
  SOL_DEVICE_PTR(const bf16) upBias = nullptr;
  SOL_DEVICE_PTR(const void) gateScales = nullptr;
  SOL_DEVICE_PTR(const void) upScales = nullptr;
  SOL_DEVICE_PTR(const unsigned char) gateZeros = nullptr;
  SOL_DEVICE_PTR(const unsigned char) upZeros = nullptr;
};
SOL_ARGS_SIZE(MoeGateUpRowArgs, 104)
SOL_ARGS_FIELD(MoeGateUpRowArgs, act, 0)
SOL_ARGS_FIELD(MoeGateUpRowArgs, x, 8)
SOL_ARGS_FIELD(MoeGateUpRowArgs, logits, 16)
SOL_ARGS_FIELD(MoeGateUpRowArgs, gate, 24)
SOL_ARGS_FIELD(MoeGateUpRowArgs, up, 32)
SOL_ARGS_FIELD(MoeGateUpRowArgs, normalize, 40)
SOL_ARGS_FIELD(MoeGateUpRowArgs, activation, 44)
SOL_ARGS_FIELD(MoeGateUpRowArgs, limit, 48)
SOL_ARGS_FIELD(MoeGateUpRowArgs, groupSize, 52)
SOL_ARGS_FIELD(MoeGateUpRowArgs, gateBias, 56)
SOL_ARGS_FIELD(MoeGateUpRowArgs, upBias, 64)
SOL_ARGS_FIELD(MoeGateUpRowArgs, gateScales, 72)
SOL_ARGS_FIELD(MoeGateUpRowArgs, upScales, 80)
SOL_ARGS_FIELD(MoeGateUpRowArgs, gateZeros, 88)
SOL_ARGS_FIELD(MoeGateUpRowArgs, upZeros, 96)

/// moe_down_row<E, K, H, I[, Format]> (MoeDecodeRow.cuh): y = the K
/// experts' down_e . act[k] (+ bias_e), weighted and added as moe_combine
/// adds them; the row routed again from the router's logits (as
/// moe_gate_up_row routes it), before waiting for moe_gate_up_row.
struct MoeDownRowArgs {
  SOL_DEVICE_PTR(bf16) y = nullptr;         // [1, H]
  SOL_DEVICE_PTR(const bf16) act = nullptr; // [K, I]
  SOL_DEVICE_PTR(const bf16) down = nullptr;
  SOL_DEVICE_PTR(const bf16) logits = nullptr; // [1, E]
  SOL_DEVICE_PTR(const bf16) bias = nullptr;
  SOL_DEVICE_PTR(const void) scales = nullptr; // as MoeDownArgs's
  SOL_DEVICE_PTR(const unsigned char) zeros = nullptr;
  int groupSize = 0;
  int normalize = 0; // as MoeRouteArgs's
};
SOL_ARGS_SIZE(MoeDownRowArgs, 64)
SOL_ARGS_FIELD(MoeDownRowArgs, y, 0)
SOL_ARGS_FIELD(MoeDownRowArgs, act, 8)
SOL_ARGS_FIELD(MoeDownRowArgs, down, 16)
SOL_ARGS_FIELD(MoeDownRowArgs, logits, 24)
SOL_ARGS_FIELD(MoeDownRowArgs, bias, 32)
SOL_ARGS_FIELD(MoeDownRowArgs, scales, 40)
SOL_ARGS_FIELD(MoeDownRowArgs, zeros, 48)
SOL_ARGS_FIELD(MoeDownRowArgs, groupSize, 56)
SOL_ARGS_FIELD(MoeDownRowArgs, normalize, 60)

/// random_weights (RandomWeights.cuh): `count` elements of a weight of a
/// plan without weight bytes, element i from seed ^ i; `kind` is one of
/// RandomWeights.cuh's kRandom*.
inline constexpr int kRandomBf16Matrix = 0; // 0.02 u
inline constexpr int kRandomBf16Vector = 1; // 1 + 0.02 u (norms, biases)
inline constexpr int kRandomF32 = 2;        // 0.01 (1 + 0.5 u): scales
inline constexpr int kRandomF32AsBf16 = 3;  // the same, stored as bf16
inline constexpr int kRandomE4m3 = 4;       // exponent 1..7, any sign, mantissa
inline constexpr int kRandomI8 = 5;         // -127..127
inline constexpr int kRandomU8 = 6;         // 8 (an E8M0 scale of 2^-119)
inline constexpr int kRandomI4 = 7;         // a byte of two codes
struct RandomWeightsArgs {
  SOL_DEVICE_PTR(void) out = nullptr;
  unsigned long long seed = 0;
  long long count = 0;
  int kind = 0;
};
SOL_ARGS_SIZE(RandomWeightsArgs, 32)
SOL_ARGS_FIELD(RandomWeightsArgs, out, 0)
SOL_ARGS_FIELD(RandomWeightsArgs, seed, 8)
SOL_ARGS_FIELD(RandomWeightsArgs, count, 16)
SOL_ARGS_FIELD(RandomWeightsArgs, kind, 24)

/// moe_sort<E, BM> (MoeGroupedGemm.cuh): the rows * topK slots of `ids`
/// grouped by expert into sorted = [order | expert starts (E + 1) | tile
/// starts (E + 1)].
struct MoeSortArgs {
  SOL_DEVICE_PTR(int) sorted = nullptr;    // [rows * topK + 2 (E + 1)]
  SOL_DEVICE_PTR(const int) ids = nullptr; // [rows * topK]
  int rows = 0;
  int topK = 0;
};
SOL_ARGS_SIZE(MoeSortArgs, 24)
SOL_ARGS_FIELD(MoeSortArgs, sorted, 0)
SOL_ARGS_FIELD(MoeSortArgs, ids, 8)
SOL_ARGS_FIELD(MoeSortArgs, rows, 16)
SOL_ARGS_FIELD(MoeSortArgs, topK, 20)

/// moe_grouped_gemm<E, KD, N, GateUp[, Format]>: each expert's sorted slots
/// against its weights. GateUp: y = act [slots, I], x [rows, H], w0 / w1 gate /
/// up
/// ([E * I, H]), bias0 / bias1 their biases; otherwise y = out [slots, H],
/// x = act, w0 down ([E * H, I]), bias0 its bias (w1, bias1 unused).
struct MoeGroupedGemmArgs {
  SOL_DEVICE_PTR(bf16) y = nullptr;
  SOL_DEVICE_PTR(const bf16) x = nullptr;
  SOL_DEVICE_PTR(const bf16) w0 = nullptr;
  SOL_DEVICE_PTR(const bf16) w1 = nullptr;
  SOL_DEVICE_PTR(const int) sorted = nullptr; // moe_sort's
  SOL_DEVICE_PTR(const bf16) bias0 = nullptr; // or none
  SOL_DEVICE_PTR(const bf16) bias1 = nullptr; // or none
  int rows = 0;
  int topK = 0;
  int activation = 0; // as MoeGateUpArgs's
  float limit = 0.0f;
  // Quantized experts (Format): w0 / w1 are codes, these their scales and
  // int4's zero points, as MoeGateUpArgs's.
  SOL_DEVICE_PTR(const void) w0Scales = nullptr;
  SOL_DEVICE_PTR(const void) w1Scales = nullptr;
  SOL_DEVICE_PTR(const unsigned char) w0Zeros = nullptr;
  SOL_DEVICE_PTR(const unsigned char) w1Zeros = nullptr;
  int groupSize = 0;
};
SOL_ARGS_SIZE(MoeGroupedGemmArgs, 112)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, y, 0)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, x, 8)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, w0, 16)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, w1, 24)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, sorted, 32)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, bias0, 40)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, bias1, 48)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, rows, 56)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, topK, 60)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, activation, 64)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, limit, 68)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, w0Scales, 72)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, w1Scales, 80)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, w0Zeros, 88)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, w1Zeros, 96)
SOL_ARGS_FIELD(MoeGroupedGemmArgs, groupSize, 104)

// The float32 kernels of GPU calibration (Calibration.cuh), with runtime
// sizes. The geometry below is shared by the kernels and the host
// (passes/CudaCalibrationEvaluator.cpp); every kernel loops grid-stride
// over its work, so a smaller grid is correct too.
inline constexpr int kCalibThreads = 256; // every calib_* block
// Grids stop growing here (the loops cover the rest).
inline constexpr long long kCalibMaxBlocks = 1 << 20;
SOL_HOST_DEVICE constexpr unsigned calibBlocks(long long items,
                                               long long perBlock) {
  const long long blocks = (items + perBlock - 1) / perBlock;
  return static_cast<unsigned>(blocks < 1                 ? 1
                               : blocks > kCalibMaxBlocks ? kCalibMaxBlocks
                                                          : blocks);
}

/// calib_embedding: out[t] = table[ids[t]] * scale; a block per token.
struct CalibEmbeddingArgs {
  SOL_DEVICE_PTR(float) out = nullptr;         // [tokens, width]
  SOL_DEVICE_PTR(const float) table = nullptr; // [vocab, width]
  SOL_DEVICE_PTR(const int) ids = nullptr;     // [tokens], checked by the host
  int tokens = 0;
  int width = 0;
  float scale = 1.0f;
};
SOL_ARGS_SIZE(CalibEmbeddingArgs, 40)
SOL_ARGS_FIELD(CalibEmbeddingArgs, out, 0)
SOL_ARGS_FIELD(CalibEmbeddingArgs, table, 8)
SOL_ARGS_FIELD(CalibEmbeddingArgs, ids, 16)
SOL_ARGS_FIELD(CalibEmbeddingArgs, tokens, 24)
SOL_ARGS_FIELD(CalibEmbeddingArgs, width, 28)
SOL_ARGS_FIELD(CalibEmbeddingArgs, scale, 32)
SOL_HOST_DEVICE constexpr unsigned calibEmbeddingBlocks(int tokens) {
  return calibBlocks(tokens, 1);
}

/// calib_rms_norm: each run of `group` columns of x ([rows, cols], group
/// divides cols) times 1 / sqrt(mean(x^2) + eps), times weight[j % group];
/// a warp per run.
struct CalibRmsNormArgs {
  SOL_DEVICE_PTR(float) out = nullptr;
  SOL_DEVICE_PTR(const float) x = nullptr;
  SOL_DEVICE_PTR(const float) weight = nullptr; // [group]
  int rows = 0;
  int cols = 0;
  int group = 0;
  float eps = 0.0f;
};
SOL_ARGS_SIZE(CalibRmsNormArgs, 40)
SOL_ARGS_FIELD(CalibRmsNormArgs, out, 0)
SOL_ARGS_FIELD(CalibRmsNormArgs, x, 8)
SOL_ARGS_FIELD(CalibRmsNormArgs, weight, 16)
SOL_ARGS_FIELD(CalibRmsNormArgs, rows, 24)
SOL_ARGS_FIELD(CalibRmsNormArgs, cols, 28)
SOL_ARGS_FIELD(CalibRmsNormArgs, group, 32)
SOL_ARGS_FIELD(CalibRmsNormArgs, eps, 36)
SOL_HOST_DEVICE constexpr unsigned calibRmsNormBlocks(int rows, int cols,
                                                      int group) {
  return calibBlocks(static_cast<long long>(rows) * (cols / group),
                     kCalibThreads / 32);
}

/// calib_rope: rotary embedding of x ([tokens, heads * dim], rotate-half
/// pairs i, i + dim / 2) with the host's cos / sin tables
/// ([positions, dim / 2]) at positions[t]; out never aliases x. A block per
/// token.
struct CalibRopeArgs {
  SOL_DEVICE_PTR(float) out = nullptr;
  SOL_DEVICE_PTR(const float) x = nullptr;
  SOL_DEVICE_PTR(const float) cosTable = nullptr;
  SOL_DEVICE_PTR(const float) sinTable = nullptr;
  SOL_DEVICE_PTR(const int) positions = nullptr; // [tokens]
  int tokens = 0;
  int heads = 0;
  int dim = 0;
};
SOL_ARGS_SIZE(CalibRopeArgs, 56)
SOL_ARGS_FIELD(CalibRopeArgs, out, 0)
SOL_ARGS_FIELD(CalibRopeArgs, x, 8)
SOL_ARGS_FIELD(CalibRopeArgs, cosTable, 16)
SOL_ARGS_FIELD(CalibRopeArgs, sinTable, 24)
SOL_ARGS_FIELD(CalibRopeArgs, positions, 32)
SOL_ARGS_FIELD(CalibRopeArgs, tokens, 40)
SOL_ARGS_FIELD(CalibRopeArgs, heads, 44)
SOL_ARGS_FIELD(CalibRopeArgs, dim, 48)
SOL_HOST_DEVICE constexpr unsigned calibRopeBlocks(int tokens) {
  return calibBlocks(tokens, 1);
}

/// calib_attention: causal attention of q ([tokens, heads * dim]) over k, v
/// ([tokens, kvHeads * dim]) within each token's sequence (seqStart[t]: its
/// first row), the last `window` rows when window > 0, scores times scale,
/// then softcap * tanh(score / softcap) when softcap > 0. dim is a multiple
/// of 4 up to kCalibAttentionMaxDim. A warp per kCalibAttentionQueries
/// consecutive tokens of one head; a block per 8 such tiles of one head.
inline constexpr int kCalibAttentionQueries = 8;
inline constexpr int kCalibAttentionBlockTokens =
    kCalibThreads / 32 * kCalibAttentionQueries;
inline constexpr int kCalibAttentionMaxDim = 256;
struct CalibAttentionArgs {
  SOL_DEVICE_PTR(float) out = nullptr; // [tokens, heads * dim]
  SOL_DEVICE_PTR(const float) q = nullptr;
  SOL_DEVICE_PTR(const float) k = nullptr;
  SOL_DEVICE_PTR(const float) v = nullptr;
  SOL_DEVICE_PTR(const int) seqStart = nullptr; // [tokens]
  int tokens = 0;
  int heads = 0;
  int kvHeads = 0;
  int dim = 0;
  int window = 0; // 0: the whole sequence
  float scale = 0.0f;
  float softcap = 0.0f; // 0: none
};
SOL_ARGS_SIZE(CalibAttentionArgs, 72)
SOL_ARGS_FIELD(CalibAttentionArgs, out, 0)
SOL_ARGS_FIELD(CalibAttentionArgs, q, 8)
SOL_ARGS_FIELD(CalibAttentionArgs, k, 16)
SOL_ARGS_FIELD(CalibAttentionArgs, v, 24)
SOL_ARGS_FIELD(CalibAttentionArgs, seqStart, 32)
SOL_ARGS_FIELD(CalibAttentionArgs, tokens, 40)
SOL_ARGS_FIELD(CalibAttentionArgs, heads, 44)
SOL_ARGS_FIELD(CalibAttentionArgs, kvHeads, 48)
SOL_ARGS_FIELD(CalibAttentionArgs, dim, 52)
SOL_ARGS_FIELD(CalibAttentionArgs, window, 56)
SOL_ARGS_FIELD(CalibAttentionArgs, scale, 60)
SOL_ARGS_FIELD(CalibAttentionArgs, softcap, 64)
SOL_HOST_DEVICE constexpr unsigned calibAttentionBlocks(int tokens, int heads) {
  return calibBlocks(static_cast<long long>(heads) *
                         ((tokens + kCalibAttentionBlockTokens - 1) /
                          kCalibAttentionBlockTokens),
                     1);
}

/// calib_attention_tc<HD> (CalibrationAttention.cuh): calib_attention on the
/// tensor cores (q, k, v rounded to bf16 in shared memory, fp32 sums), same
/// CalibAttentionArgs (args.dim must be HD). Head dims: multiples of 16 up to
/// 256. A block of kCalibAttentionTcThreads threads (4 warps of 16 query
/// rows) per kCalibAttentionTcRows consecutive tokens of one head, walking
/// their keys in tiles of calibAttentionTcKeys(dim); the grid strides over
/// ceil(tokens / kCalibAttentionTcRows) * heads block tiles, the heads of a
/// tile adjacent. Dynamic shared memory: calibAttentionTcSharedBytes(dim)
/// (bf16 Q, K and V tiles, and above dim 128 a float32 staging tile): 32 KB
/// at 128, within the default 48 KB up to dim 192, 53.5-64 KB from 208 to
/// 256, which need the kernel's maximum raised before the first launch
/// (Kernel::setMaxDynamicSharedMemory).
inline constexpr int kCalibAttentionTcThreads = 128;
inline constexpr int kCalibAttentionTcRows = kCalibAttentionTcThreads / 32 * 16;
SOL_HOST_DEVICE constexpr bool calibAttentionTcSupports(int dim) {
  return dim >= 16 && dim <= 256 && dim % 16 == 0;
}
// Keys per K/V tile (a tile is staged through registers up to dim 128: at
// most 8 float4s of K or V a thread).
SOL_HOST_DEVICE constexpr int calibAttentionTcKeys(int dim) {
  return dim <= 48 ? 64 : dim <= 128 ? 32 : 16;
}
// Elements from one shared tile row to the next: dims of whole 128-byte
// lines are XOR-swizzled, others padded to an odd number of 16-byte chunks.
SOL_HOST_DEVICE constexpr int calibAttentionTcRowStride(int dim) {
  return dim % 64 == 0 ? dim : dim + 8;
}
// Whether K/V tiles reach shared memory as floats by cp.async (then a
// staging tile of calibAttentionTcKeys(dim) x dim floats) rather than
// through registers.
SOL_HOST_DEVICE constexpr bool calibAttentionTcSharedStaging(int dim) {
  return dim > 128;
}
SOL_HOST_DEVICE constexpr unsigned calibAttentionTcSharedBytes(int dim) {
  return static_cast<unsigned>(
      (kCalibAttentionTcRows + 2 * calibAttentionTcKeys(dim)) *
          calibAttentionTcRowStride(dim) * 2 +
      (calibAttentionTcSharedStaging(dim) ? calibAttentionTcKeys(dim) * dim * 4
                                          : 0));
}
SOL_HOST_DEVICE constexpr unsigned calibAttentionTcBlocks(int tokens,
                                                          int heads) {
  return calibBlocks(
      static_cast<long long>(heads) *
          ((tokens + kCalibAttentionTcRows - 1) / kCalibAttentionTcRows),
      1);
}

/// calib_elementwise's operations, out[i] = f(a[i], b[...]):
inline constexpr int kCalibAdd = 0;     // a + b
inline constexpr int kCalibSwiglu = 1;  // silu(a) * b
inline constexpr int kCalibGegelu = 2;  // geluTanh(a) * b
inline constexpr int kCalibAddBias = 3; // a + b[i % cols]; out may alias a
struct CalibElementwiseArgs {
  SOL_DEVICE_PTR(float) out = nullptr;
  SOL_DEVICE_PTR(const float) a = nullptr;
  SOL_DEVICE_PTR(const float) b = nullptr;
  unsigned long long count = 0;
  int cols = 0; // kCalibAddBias: b's length
  int op = 0;
};
SOL_ARGS_SIZE(CalibElementwiseArgs, 40)
SOL_ARGS_FIELD(CalibElementwiseArgs, out, 0)
SOL_ARGS_FIELD(CalibElementwiseArgs, a, 8)
SOL_ARGS_FIELD(CalibElementwiseArgs, b, 16)
SOL_ARGS_FIELD(CalibElementwiseArgs, count, 24)
SOL_ARGS_FIELD(CalibElementwiseArgs, cols, 32)
SOL_ARGS_FIELD(CalibElementwiseArgs, op, 36)
SOL_HOST_DEVICE constexpr unsigned
calibElementwiseBlocks(unsigned long long count) {
  const unsigned long long blocks = (count + kCalibThreads - 1) / kCalibThreads;
  return static_cast<unsigned>(
      blocks < 1 ? 1 : (blocks > kCalibMaxBlocks ? kCalibMaxBlocks : blocks));
}

/// calib_sigmoid_gate: out[r] = value[r] * sigmoid(in[r] . weight); a block
/// per row.
struct CalibSigmoidGateArgs {
  SOL_DEVICE_PTR(float) out = nullptr;          // [rows, valueCols]
  SOL_DEVICE_PTR(const float) value = nullptr;  // [rows, valueCols]
  SOL_DEVICE_PTR(const float) in = nullptr;     // [rows, inCols]
  SOL_DEVICE_PTR(const float) weight = nullptr; // [inCols]
  int rows = 0;
  int valueCols = 0;
  int inCols = 0;
};
SOL_ARGS_SIZE(CalibSigmoidGateArgs, 48)
SOL_ARGS_FIELD(CalibSigmoidGateArgs, out, 0)
SOL_ARGS_FIELD(CalibSigmoidGateArgs, value, 8)
SOL_ARGS_FIELD(CalibSigmoidGateArgs, in, 16)
SOL_ARGS_FIELD(CalibSigmoidGateArgs, weight, 24)
SOL_ARGS_FIELD(CalibSigmoidGateArgs, rows, 32)
SOL_ARGS_FIELD(CalibSigmoidGateArgs, valueCols, 36)
SOL_ARGS_FIELD(CalibSigmoidGateArgs, inCols, 40)
SOL_HOST_DEVICE constexpr unsigned calibSigmoidGateBlocks(int rows) {
  return calibBlocks(rows, 1);
}

/// calib_column_abs_sum: sums[c] += sum over rows of |x[r, c]| (the host
/// zeroes sums); a block per kCalibThreads columns and
/// kCalibColumnAbsSumRows rows.
inline constexpr int kCalibColumnAbsSumRows = 256;
struct CalibColumnAbsSumArgs {
  SOL_DEVICE_PTR(double) sums = nullptr; // [cols]
  SOL_DEVICE_PTR(const float) x = nullptr;
  int rows = 0;
  int cols = 0;
};
SOL_ARGS_SIZE(CalibColumnAbsSumArgs, 24)
SOL_ARGS_FIELD(CalibColumnAbsSumArgs, sums, 0)
SOL_ARGS_FIELD(CalibColumnAbsSumArgs, x, 8)
SOL_ARGS_FIELD(CalibColumnAbsSumArgs, rows, 16)
SOL_ARGS_FIELD(CalibColumnAbsSumArgs, cols, 20)
SOL_HOST_DEVICE constexpr unsigned calibColumnAbsSumBlocks(int rows, int cols) {
  return calibBlocks(
      static_cast<long long>((cols + kCalibThreads - 1) / kCalibThreads) *
          ((rows + kCalibColumnAbsSumRows - 1) / kCalibColumnAbsSumRows),
      1);
}

/// calib_to_bf16: out[i] = bf16(in[i]), rounded to nearest even: the bf16
/// operands of calibration's GEMMs. A thread per element.
struct CalibToBf16Args {
  SOL_DEVICE_PTR(bf16) out = nullptr;
  SOL_DEVICE_PTR(const float) in = nullptr;
  unsigned long long count = 0;
};
SOL_ARGS_SIZE(CalibToBf16Args, 24)
SOL_ARGS_FIELD(CalibToBf16Args, out, 0)
SOL_ARGS_FIELD(CalibToBf16Args, in, 8)
SOL_ARGS_FIELD(CalibToBf16Args, count, 16)

/// calib_gather_rows: out[i] = bf16(x[rows[i]]) for i < count, rows of
/// `cols` values: the tokens a mixture routes to one expert, as the
/// operand of that expert's GEMMs. A block per row.
struct CalibGatherRowsArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;       // [count, cols]
  SOL_DEVICE_PTR(const float) x = nullptr;  // [*, cols]
  SOL_DEVICE_PTR(const int) rows = nullptr; // [count]
  int count = 0;
  int cols = 0;
};
SOL_ARGS_SIZE(CalibGatherRowsArgs, 32)
SOL_ARGS_FIELD(CalibGatherRowsArgs, out, 0)
SOL_ARGS_FIELD(CalibGatherRowsArgs, x, 8)
SOL_ARGS_FIELD(CalibGatherRowsArgs, rows, 16)
SOL_ARGS_FIELD(CalibGatherRowsArgs, count, 24)
SOL_ARGS_FIELD(CalibGatherRowsArgs, cols, 28)

/// calib_scatter_add_rows: out[rows[i]] += weights[i] * y[i] for i < count
/// (an expert's outputs into the mixture's, times their routing weights);
/// the rows of one call are distinct. A block per row.
struct CalibScatterAddRowsArgs {
  SOL_DEVICE_PTR(float) out = nullptr;           // [*, cols]
  SOL_DEVICE_PTR(const float) y = nullptr;       // [count, cols]
  SOL_DEVICE_PTR(const int) rows = nullptr;      // [count]
  SOL_DEVICE_PTR(const float) weights = nullptr; // [count]
  int count = 0;
  int cols = 0;
};
SOL_ARGS_SIZE(CalibScatterAddRowsArgs, 40)
SOL_ARGS_FIELD(CalibScatterAddRowsArgs, out, 0)
SOL_ARGS_FIELD(CalibScatterAddRowsArgs, y, 8)
SOL_ARGS_FIELD(CalibScatterAddRowsArgs, rows, 16)
SOL_ARGS_FIELD(CalibScatterAddRowsArgs, weights, 24)
SOL_ARGS_FIELD(CalibScatterAddRowsArgs, count, 32)
SOL_ARGS_FIELD(CalibScatterAddRowsArgs, cols, 36)
/// Both: a block per row.
SOL_HOST_DEVICE constexpr unsigned calibRowBlocks(int count) {
  return calibBlocks(count, 1);
}

/// calib_squared_error: *sum += sum of (a[i] - b[i])^2 in double (the host
/// zeroes it); one atomic add per block.
inline constexpr long long kCalibSquaredErrorMaxBlocks = 1024;
struct CalibSquaredErrorArgs {
  SOL_DEVICE_PTR(double) sum = nullptr;
  SOL_DEVICE_PTR(const float) a = nullptr;
  SOL_DEVICE_PTR(const float) b = nullptr;
  unsigned long long count = 0;
};
SOL_ARGS_SIZE(CalibSquaredErrorArgs, 32)
SOL_ARGS_FIELD(CalibSquaredErrorArgs, sum, 0)
SOL_ARGS_FIELD(CalibSquaredErrorArgs, a, 8)
SOL_ARGS_FIELD(CalibSquaredErrorArgs, b, 16)
SOL_ARGS_FIELD(CalibSquaredErrorArgs, count, 24)
SOL_HOST_DEVICE constexpr unsigned
calibSquaredErrorBlocks(unsigned long long count) {
  const unsigned blocks = calibElementwiseBlocks(count);
  return blocks < kCalibSquaredErrorMaxBlocks
             ? blocks
             : static_cast<unsigned>(kCalibSquaredErrorMaxBlocks);
}

/// calib_awq_candidate: out = bf16(Q(weight * s) / s) for per-column scales
/// s, Q the int4 round trip (quant::int4GroupParams over each run of `group`
/// columns, group dividing cols) when quantize, else the identity: the bf16
/// operand of the candidate's GEMM. A warp per run when quantizing, else a
/// thread per element.
struct CalibAwqCandidateArgs {
  SOL_DEVICE_PTR(bf16) out = nullptr;           // [rows, cols]
  SOL_DEVICE_PTR(const float) weight = nullptr; // [rows, cols]
  SOL_DEVICE_PTR(const float) scales = nullptr; // [cols]
  int rows = 0;
  int cols = 0;
  int group = 0;
  int quantize = 0;
};
SOL_ARGS_SIZE(CalibAwqCandidateArgs, 40)
SOL_ARGS_FIELD(CalibAwqCandidateArgs, out, 0)
SOL_ARGS_FIELD(CalibAwqCandidateArgs, weight, 8)
SOL_ARGS_FIELD(CalibAwqCandidateArgs, scales, 16)
SOL_ARGS_FIELD(CalibAwqCandidateArgs, rows, 24)
SOL_ARGS_FIELD(CalibAwqCandidateArgs, cols, 28)
SOL_ARGS_FIELD(CalibAwqCandidateArgs, group, 32)
SOL_ARGS_FIELD(CalibAwqCandidateArgs, quantize, 36)
// The host quantizes exactly when group divides cols.
SOL_HOST_DEVICE constexpr unsigned calibAwqCandidateBlocks(int rows, int cols,
                                                           int group) {
  return group > 0 && cols % group == 0
             ? calibRmsNormBlocks(rows, cols, group)
             : calibElementwiseBlocks(static_cast<unsigned long long>(rows) *
                                      static_cast<unsigned>(cols));
}

/// calib_gram: gram[g] = X_g^T X_g for each run g of `group` columns of x
/// ([rows, cols], group dividing cols): [cols / group, group, group], float
/// sums in row order, so exactly symmetric. A block per
/// kCalibGramTile x kCalibGramTile tile of a group's matrix.
inline constexpr int kCalibGramTile = 64;
struct CalibGramArgs {
  SOL_DEVICE_PTR(float) gram = nullptr;
  SOL_DEVICE_PTR(const float) x = nullptr;
  int rows = 0;
  int cols = 0;
  int group = 0;
};
SOL_ARGS_SIZE(CalibGramArgs, 32)
SOL_ARGS_FIELD(CalibGramArgs, gram, 0)
SOL_ARGS_FIELD(CalibGramArgs, x, 8)
SOL_ARGS_FIELD(CalibGramArgs, rows, 16)
SOL_ARGS_FIELD(CalibGramArgs, cols, 20)
SOL_ARGS_FIELD(CalibGramArgs, group, 24)
SOL_HOST_DEVICE constexpr unsigned calibGramBlocks(int cols, int group) {
  const long long tiles = (group + kCalibGramTile - 1) / kCalibGramTile;
  return calibBlocks(static_cast<long long>(cols / group) * tiles * tiles, 1);
}

/// calib_clip_search: quant::searchInt4Clip's ratio for each (row, group) of
/// weight ([rows, cols], group dividing cols, group <=
/// kCalibClipSearchMaxGroup) in its Gram form, with calib_gram's matrices:
/// ratios[n * (cols / group) + g]. candidates = max(1, int(gridPoints *
/// maxShrink)). A block per kCalibClipSearchRows rows of one group.
inline constexpr int kCalibClipSearchRows = 16;
inline constexpr int kCalibClipSearchMaxGroup = 256;
struct CalibClipSearchArgs {
  SOL_DEVICE_PTR(float) ratios = nullptr;       // [rows, cols / group]
  SOL_DEVICE_PTR(const float) weight = nullptr; // [rows, cols]
  SOL_DEVICE_PTR(const float) gram = nullptr;   // [cols / group, group, group]
  int rows = 0;
  int cols = 0;
  int group = 0;
  int gridPoints = 0;
  int candidates = 0;
};
SOL_ARGS_SIZE(CalibClipSearchArgs, 48)
SOL_ARGS_FIELD(CalibClipSearchArgs, ratios, 0)
SOL_ARGS_FIELD(CalibClipSearchArgs, weight, 8)
SOL_ARGS_FIELD(CalibClipSearchArgs, gram, 16)
SOL_ARGS_FIELD(CalibClipSearchArgs, rows, 24)
SOL_ARGS_FIELD(CalibClipSearchArgs, cols, 28)
SOL_ARGS_FIELD(CalibClipSearchArgs, group, 32)
SOL_ARGS_FIELD(CalibClipSearchArgs, gridPoints, 36)
SOL_ARGS_FIELD(CalibClipSearchArgs, candidates, 40)
SOL_HOST_DEVICE constexpr unsigned calibClipSearchBlocks(int rows, int cols,
                                                         int group) {
  return calibBlocks(
      static_cast<long long>(cols / group) *
          ((rows + kCalibClipSearchRows - 1) / kCalibClipSearchRows),
      1);
}

#undef SOL_ARGS_SIZE
#undef SOL_ARGS_FIELD
#undef SOL_OFFSETOF

#if !SOL_KERNEL_CODE
/// The end of the mangled name of a kernel whose parameter is a struct
/// sol::kernels::<name>: "<length><name>E" (Itanium).
struct MangledArgsName {
  char text[40] = {};
  std::size_t size = 0;
  constexpr explicit MangledArgsName(std::string_view name) {
    const std::size_t n = name.size();
    if (n >= 10)
      text[size++] = static_cast<char>('0' + n / 10);
    text[size++] = static_cast<char>('0' + n % 10);
    for (char c : name)
      text[size++] = c;
    text[size++] = 'E';
  }
  constexpr std::string_view view() const { return {text, size}; }
};

/// LaunchArgsName<Args>::kMangled, for the structs above only: Kernel::launch
/// takes nothing else.
template <typename Args> struct LaunchArgsName;
#define SOL_LAUNCH_ARGS_NAME(T)                                                \
  template <> struct LaunchArgsName<T> {                                       \
    static_assert(sizeof(#T) < 36, #T ": name too long");                      \
    static constexpr MangledArgsName kMangled{#T};                             \
  };
SOL_LAUNCH_ARGS_NAME(EmbeddingArgs)
SOL_LAUNCH_ARGS_NAME(RmsNormArgs)
SOL_LAUNCH_ARGS_NAME(LinearArgs)
SOL_LAUNCH_ARGS_NAME(SplitKFinalizeArgs)
SOL_LAUNCH_ARGS_NAME(RopeKvWriteArgs)
SOL_LAUNCH_ARGS_NAME(PagedAttentionArgs)
SOL_LAUNCH_ARGS_NAME(TiledAttentionArgs)
SOL_LAUNCH_ARGS_NAME(SwigluArgs)
SOL_LAUNCH_ARGS_NAME(SoftcapArgs)
SOL_LAUNCH_ARGS_NAME(AddArgs)
SOL_LAUNCH_ARGS_NAME(SigmoidGateArgs)
SOL_LAUNCH_ARGS_NAME(GatherColumnsArgs)
SOL_LAUNCH_ARGS_NAME(GatherRowsArgs)
SOL_LAUNCH_ARGS_NAME(ArgmaxArgs)
SOL_LAUNCH_ARGS_NAME(SamplingArgs)
SOL_LAUNCH_ARGS_NAME(QuantLinearArgs)
SOL_LAUNCH_ARGS_NAME(QuantizeRowsArgs)
SOL_LAUNCH_ARGS_NAME(NormQuantizeRowsArgs)
SOL_LAUNCH_ARGS_NAME(RepeatScalesArgs)
SOL_LAUNCH_ARGS_NAME(QuantGemmArgs)
SOL_LAUNCH_ARGS_NAME(Fp8GemmArgs)
SOL_LAUNCH_ARGS_NAME(DequantizeArgs)
SOL_LAUNCH_ARGS_NAME(MoeRouteArgs)
SOL_LAUNCH_ARGS_NAME(MoeGateUpArgs)
SOL_LAUNCH_ARGS_NAME(MoeDownArgs)
SOL_LAUNCH_ARGS_NAME(MoeGateUpRowArgs)
SOL_LAUNCH_ARGS_NAME(MoeDownRowArgs)
SOL_LAUNCH_ARGS_NAME(MoeCombineArgs)
SOL_LAUNCH_ARGS_NAME(MoeSortArgs)
SOL_LAUNCH_ARGS_NAME(RandomWeightsArgs)
SOL_LAUNCH_ARGS_NAME(MoeGroupedGemmArgs)
SOL_LAUNCH_ARGS_NAME(CalibEmbeddingArgs)
SOL_LAUNCH_ARGS_NAME(CalibRmsNormArgs)
SOL_LAUNCH_ARGS_NAME(CalibRopeArgs)
SOL_LAUNCH_ARGS_NAME(CalibAttentionArgs)
SOL_LAUNCH_ARGS_NAME(CalibElementwiseArgs)
SOL_LAUNCH_ARGS_NAME(CalibSigmoidGateArgs)
SOL_LAUNCH_ARGS_NAME(CalibColumnAbsSumArgs)
SOL_LAUNCH_ARGS_NAME(CalibSquaredErrorArgs)
SOL_LAUNCH_ARGS_NAME(CalibToBf16Args)
SOL_LAUNCH_ARGS_NAME(CalibGatherRowsArgs)
SOL_LAUNCH_ARGS_NAME(CalibScatterAddRowsArgs)
SOL_LAUNCH_ARGS_NAME(CalibAwqCandidateArgs)
SOL_LAUNCH_ARGS_NAME(CalibGramArgs)
SOL_LAUNCH_ARGS_NAME(CalibClipSearchArgs)
#undef SOL_LAUNCH_ARGS_NAME

#endif

} // namespace kernels
} // namespace sol

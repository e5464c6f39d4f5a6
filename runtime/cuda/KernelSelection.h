//===- KernelSelection.h - Which kernel instance runs each op ---*- C++ -*-===//
//
// The rules that map a kernel-level op of a plan (runtime/plan/Plan.fbs) and
// a step's size to kernel instantiations and launch geometry. solc uses them
// to enumerate and compile every instance a plan may need; the CUDA executor
// uses the same rules at run time and finds the instances in the plan by
// name. Both sides must agree, so both call this code, and the choices never
// depend on the GPU the executor finds (kPlannedMultiprocessors is fixed).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/ChunkAttention.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/cuda/PrefillAttention.h"
#include "runtime/plan/PlanOp.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sol::cuda {

/// The SM count kernel choices are made for (H100 / H200).
inline constexpr int kPlannedMultiprocessors = 132;

/// What selection needs to know about one op, from a plan or a step being
/// compiled: the op itself and what its buffers, weights and the KV cache
/// are.
struct OpDesc : PlanOp {
  std::vector<int64_t> bufferWidths; // of the op's buffers, in order
  fb::DType outDtype = fb::DType::BF16;
  fb::Rows outRows = fb::Rows::Tokens;
  std::vector<std::vector<int64_t>> weightShapes; // of the op's weights
  int blockSize = 16;                             // KV-cache block size
  fb::DType kvDtype = fb::DType::BF16;            // BF16 or F8E4M3
  /// A Linear op whose input is an Attention op's output (the o projection):
  /// its kernel starts while attention leaves DRAM idle.
  bool readsAttention = false;
  /// The plan's target has Hopper's wgmma (targetHasWgmma): batched decode
  /// of quantized linears runs linear_wgmma_quant.
  bool wgmma = false;
};

/// Sets OpDesc::readsAttention over a step's ops in order.
void markAttentionReaders(std::vector<OpDesc> &ops);

/// Which of a plan's `weightCount` weights the kernels read as bf16 whatever
/// the plan stores: norm weights and attention sinks (the plan may hold
/// them in f32, exact for the reference executor: Gemma's 1 + w, an ONNX
/// graph's float initializers). The executor rounds such f32 weights to
/// bf16 at upload.
std::vector<bool> weightsReadAsBf16(const std::vector<OpDesc> &ops,
                                    std::size_t weightCount);

/// Why the CUDA kernels cannot read the weights of `ops` as the plan stores
/// them (`dtypes[i]` and `names[i]` of weight i), or empty. They read bf16
/// values, the codes of quantized linears and experts (i8, e4m3, i4, u8),
/// and f32 only as quantization scales or where weightsReadAsBf16 rounds it:
/// anything else would be reinterpreted, not converted.
std::string weightDtypeProblem(const std::vector<OpDesc> &ops,
                               const std::vector<fb::DType> &dtypes,
                               const std::vector<std::string> &names);

/// One launch of an op in a step.
struct KernelLaunch {
  KernelInstance instance;
  LaunchDims dims;
};

/// The rows (T or R) an op processes in a step with `tokens` tokens and
/// `outputs` logits rows.
int opRows(const OpDesc &op, int tokens, int outputs);

/// The GEMM row count a step of `rows` rows (> 8) is compiled for: the next
/// power of two, at least 16.
int gemmRowBucket(int rows);

/// Floats of zeroed fp32 workspace the split-K GEMMs of a Linear or
/// NormLinear op need for steps of up to `maxTokens` rows (0 if it never
/// splits).
std::size_t splitKWorkspaceFloats(const OpDesc &op, int maxTokens);

/// The launches of `op` for `rows` rows (see opRows) in a step whose longest
/// context is `maxContext` positions (attention only). Empty for rows == 0.
/// A Linear or NormLinear op is one launch of linear_gemv for one row and
/// of linear_skinny for 2..8 (isSinglePassLinear), else the tensor-core
/// GEMM (which the executor may run on cuBLASLt); a NormLinear op runs its
/// norm in linear_gemv's prologue for one row, else rms_norm into its
/// scratch buffer first. Measured on the H200 (Llama-3.2-1B shape, with the
/// L2 prefetch below, against linear_skinny normalising in its prologue):
/// the 8-token step after a cached prefix 1.01-1.03 ms against 1.07-1.08,
/// decode TPOT of 8 sequences 1.011 ms against 1.136 (docs/gpu.md).
/// `fusedRope` (steps with one token per sequence, when the plan has the
/// fused attention): RopeKvWrite has no launch and Attention runs the
/// paged_attention variant that does its work. `clusterMerge` (sm_90):
/// Attention's splits merge through a thread-block cluster where
/// PagedAttentionSpec allows it. `headNorm` (with `fusedRope`, for an
/// Attention op and the HeadRmsNorm op it absorbs, StaticLowering.h): the
/// HeadRmsNorm has no launch and the Attention runs the variant that also
/// normalises q and k. `addNorm` (for a Linear op and the RmsNorm op with a
/// residual it absorbs, StaticLowering.h): one-row steps give the RmsNorm no
/// launch and run the Linear as linear_gemv with that add and norm in its
/// prologue.
std::vector<KernelLaunch>
selectKernels(const OpDesc &op, int rows, int maxContext,
              bool fusedRope = false, bool clusterMerge = false,
              bool headNorm = false, GemvAddNorm addNorm = GemvAddNorm::None);

/// A Moe op's router as a Linear op of its own (weights[0], [E, H]; bf16
/// logits into a workspace), whose launches selectKernels chooses.
OpDesc moeRouterLinear(const OpDesc &moe);
/// A Moe op's kernels after its router, for `rows` rows, in order, by
/// moePath: one row, moe_gate_up_row and moe_down_row (MoeDecodeRow.cuh);
/// a few, moe_route, moe_gate_up, moe_down, moe_combine (MoeDecode.cuh);
/// many slots (MoeSpec::grouped), moe_route, moe_sort, the two
/// moe_grouped_gemm (MoeGroupedGemm.cuh), moe_combine.
std::vector<KernelLaunch> moeLaunches(const OpDesc &moe, int rows);
MoeSpec::Path moePath(const OpDesc &moe, int rows);
/// The ints of moe_sort's output for steps of up to `maxRows` rows.
long long moeSortedInts(const OpDesc &moe, int maxRows);

/// selectKernels for a Linear or NormLinear op with a quantized W: the
/// quantized kernels read its codes for up to 16 rows: linear_gemv_quant
/// (one row, the norm in its prologue) or linear_skinny_quant (tensor
/// cores; a NormLinear of several rows behind rms_norm), by the format's
/// measured rule (KernelSelection.cpp); then, up to kQuantGemmMaxRows rows,
/// the mixed-input GEMM (int8, int4; linear_wgmma_quant in plans for Hopper
/// from kQuantWgmmaMinRows rows, else linear_gemm_quant; behind rms_norm for
/// a NormLinear, then linear_splitk_finalize when it splits K). Other steps
/// dequantize W into a
/// bf16 scratch copy first (the dequantize_weight launch, isDequantize) and
/// then take the launches of the same op over bf16 weights, which read the
/// copy.
std::vector<KernelLaunch> quantizedLinearLaunches(const OpDesc &op, int rows,
                                                  int maxContext);

/// Whether `instance` is dequantize_weight (its W is the op's quantized
/// weight; the launches after it read the bf16 copy).
bool isDequantize(const KernelInstance &instance);

/// Whether `instance` is linear_gemm_quant or linear_wgmma_quant
/// (QuantGemmArgs; with a linear_splitk_finalize launch after it when it
/// splits K).
bool isQuantGemm(const KernelInstance &instance);

/// Whether `instance` is linear_splitk_finalize, which follows a split-K
/// GEMM and needs the split-K workspace.
bool isSplitKFinalize(const KernelInstance &instance);

/// The most rows linear_gemm_quant runs; larger steps (prefill) dequantize
/// W once into the bf16 copy and run the bf16 GEMM, whose cost the many
/// rows amortise.
inline constexpr int kQuantGemmMaxRows = 128;

/// The fewest rows linear_wgmma_quant runs in plans for Hopper; fewer go to
/// linear_skinny_quant (int4 keeps it up to 16 rows) or linear_gemm_quant.
/// At 16 rows it beats linear_gemm_quant on every int8 shape measured
/// (H100, sol-kernel-check --only quant_gemm: the 8B's four linears 109.7
/// against 124.8 us, gate/up 51.1 against 65.5; the 1B's 48.8 against 51.2).
inline constexpr int kQuantWgmmaMinRows = 9;

/// Whether `instance` is a quantized single-pass linear (QuantLinearArgs).
bool isQuantSinglePass(const KernelInstance &instance);

/// Whether a step of up to `maxTokens` rows runs `op` over the bf16 copy of
/// its quantized W (dequantize_weight), so the executor must hold one.
bool needsDequantizedCopy(const OpDesc &op, int maxTokens);

/// Every instance `op` may need in steps of up to `maxTokens` tokens and
/// contexts of up to `maxContext` positions, without duplicates: what solc
/// compiles into a plan. `headNorm`: an Attention op that absorbs its
/// layer's HeadRmsNorm in decode steps; `addNorm`: a Linear op that absorbs
/// the RmsNorm before it in one-row steps (StaticLowering.h).
std::vector<KernelInstance>
enumerateKernels(const OpDesc &op, int maxTokens, int maxContext,
                 bool headNorm = false,
                 GemvAddNorm addNorm = GemvAddNorm::None);

/// Weight matrices of at most this many bytes are asked into L2 before
/// their kernel waits for its predecessor (the L2Prefetch variants of
/// linear_gemv and linear_skinny) when that predecessor leaves DRAM idle:
/// attention before the o projection, rms_norm before linear_skinny. A
/// quarter of the planned GPU's 50 MB L2 (H100 / H200); it takes in the
/// Llama-3.2-1B shape's QKV and o projections, not its 34 MB down
/// projection.
inline constexpr std::int64_t kL2PrefetchMaxBytes = 24LL << 20;

/// Whether the linear of a Linear or NormLinear op runs the L2Prefetch
/// variant of linear_skinny (`skinny`) or linear_gemv.
bool prefetchesWeights(const OpDesc &op, bool skinny);

/// Whether `instance` is a one-pass kernel of few rows (linear_gemv,
/// linear_skinny), launched as (y, x, w, bias, rows, N, norm_w, eps), rather
/// than a GEMM (y, x, w, bias, M, N, K) or another kernel.
bool isSinglePassLinear(const KernelInstance &instance);

/// Steps of more tokens run eagerly (not as CUDA graphs), and only they may
/// use prefill_attention (its grid depends on the step's prompt runs).
inline constexpr int kMaxGraphedTokens = 64;

/// The epilogue of a Linear or NormLinear op; throws on a value this
/// runtime does not know.
LinearEpilogue linearEpilogue(const OpDesc &op);

/// The tensor-core prefill attention of an Attention op (PrefillAttention.h).
PrefillAttentionSpec prefillAttentionSpec(const OpDesc &op);

/// The tensor-core attention of short prompt chunks of an Attention op
/// (ChunkAttention.h).
ChunkAttentionSpec chunkAttentionSpec(const OpDesc &op);

/// The split count of paged_attention for an Attention op over `tokens`
/// tokens and contexts of up to `maxContext` positions (the grid's y of its
/// selectKernels launch), without building the launch.
int attentionSplits(const OpDesc &op, int tokens, int maxContext,
                    bool clusterMerge);

/// Whether paged_attention has a fused-rope variant for this Attention op's
/// shape (PagedAttentionSpec::fusedRopeSupported); selectKernels(...,
/// fusedRope = true) may only be asked for ops where it does.
bool attentionFusesRope(const OpDesc &op);

/// Whether the fused-rope variant of Attention op `attention` can do the
/// work of HeadRmsNorm op `norm` too: it normalises every q head and k
/// head of the attention's q and k (from column 0 of its qkv buffer, the
/// q heads by its first weight, the k heads by its second or the same).
bool attentionFusesHeadNorm(const OpDesc &attention, const OpDesc &norm);

/// The residual add linear_gemv does in its prologue when one-row steps run
/// Linear op `linear` with the work of RmsNorm op `norm` (a residual add,
/// perhaps with an input norm, then the norm) fused in: a bf16 linear with
/// bf16 output whose input is the norm's output. None when it cannot; the
/// buffers' lifetimes are StaticLowering's to check.
GemvAddNorm linearAddNorm(const OpDesc &linear, const OpDesc &norm);

/// The argmax launch over `rows` rows of `vocab` float32 logits.
KernelLaunch selectArgmax(int rows, int vocab);

/// For a Linear or NormLinear op with fp32 output (the LM head), no bias and
/// no epilogue: its one-row linear_gemv that also leaves the row's argmax key
/// in a zeroed 64-bit word passed as the bias (GemvSpec::argmax), so that a
/// greedy one-row step needs no argmax launch. nullopt for other ops.
std::optional<KernelLaunch> selectArgmaxLmHead(const OpDesc &op);

/// The sampling launch over `rows` logits rows (Sampling.cuh). Every plan
/// holds its instance, like the argmax's (codegen/plan/CompileKernels.cpp).
KernelLaunch selectSampling(int rows);

} // namespace sol::cuda

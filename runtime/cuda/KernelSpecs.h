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
#include "runtime/plan/PlanOp.h"
#include "runtime/plan/Plan_generated.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

/// What a linear layer does with its result: the plan's enum (Plan.fbs),
/// whose values are the kEpilogue* constants of codegen/kernels/Common.cuh.
using LinearEpilogue = fb::LinearEpilogue;

/// embedding<D>(out, table, ids, T, previousIds, previousKey, clearKey):
/// negative ids name rows of the previous step's result (Embedding.cuh).
struct EmbeddingSpec {
  int hidden = 0;
  KernelInstance instance() const;
  LaunchDims dims(int tokens) const;
  /// The launch of a one-token step that reads the previous step's fused
  /// argmax key and clears it: one block, so that the clear follows the
  /// reads.
  LaunchDims keyChainedDims() const;
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

/// sol.moe's kernels after the router's linear (MoeDecode.cuh): routing on
/// the device, then GEMVs over the routed experts only, each expert's
/// weights read once per step.
struct MoeSpec {
  int experts = 0, topK = 0, hidden = 0, width = 0; // E, K, H, I
  // How the experts are stored (Plan.fbs's ExpertFormat, the kernels'
  // Format: bf16, MXFP4, int8, fp8, int4) and int4's inputs per scale.
  fb::ExpertFormat format = fb::ExpertFormat::Float;
  int groupSize = 0;
  /// Which kernels a step of `rows` rows runs: one row's
  /// (MoeDecodeRow.cuh), the slots' GEMVs (MoeDecode.cuh) or the grouped
  /// GEMMs (MoeGroupedGemm.cuh).
  enum class Path { Row, Slots, Grouped };
  Path path(int rows) const;
  KernelInstance route() const;   // moe_route<E, K>
  KernelInstance gateUp() const;  // moe_gate_up<E, H, I[, Format]>
  KernelInstance down() const;    // moe_down<E, H, I[, Format]>
  KernelInstance combine() const; // moe_combine<H, K>
  LaunchDims routeDims(int rows) const;
  LaunchDims gateUpDims(int rows) const;
  LaunchDims downDims(int rows) const;
  LaunchDims combineDims(int rows) const;
  // Steps of one row: routing in moe_gate_up_row, the combination in
  // moe_down_row.
  KernelInstance gateUpRow() const; // moe_gate_up_row<E, K, H, I[, Format]>
  KernelInstance downRow() const;   // moe_down_row<E, K, H, I[, Format]>
  LaunchDims gateUpRowDims() const;
  LaunchDims downRowDims() const;

  // Steps of many slots (MoeGroupedGemm.cuh): the slots sorted by expert,
  // then each expert's gate/up and down as GEMMs on tensor cores, a tile of
  // `tileRows` slots, in place of moe_gate_up / moe_down.
  static constexpr int kGroupedTileCols = 128;
  /// Whether a step of `rows` rows (more than one) runs the grouped GEMMs:
  /// at least one slot an expert on average. There the tiles' tensor cores
  /// read each touched expert once at near the copy rate while the decode
  /// kernels re-read it per 8 slots: on an H100, Qwen3-30B-A3B's experts
  /// at 16 rows (one slot an expert) took 327 us grouped against 361 us,
  /// at 64 rows 468 against 743 (sol-kernel-check --only moe).
  bool grouped(int rows) const;
  /// The grouped GEMMs' tile rows (16, 32 or 64) for a step of `rows` rows:
  /// the fewest that hold twice an expert's even share of the slots (32 at
  /// least for fp8 experts; MXFP4 experts always 64). Smaller tiles spend
  /// fewer tensor-core cycles on empty rows and fit three blocks an SM: on
  /// an H100, Qwen3-30B-A3B's experts at 64 rows took 420 us in tiles of
  /// 16 against 449 in tiles of 64, and 64-sequence decode ran 2,486
  /// against 2,350 tok/s (sol-kernel-check --only moe, solrun --bench).
  int groupedTileRows(int rows) const;
  /// The tile rows of every grouped step of up to `maxRows` rows, smallest
  /// first: the grouped GEMMs a plan compiles.
  std::vector<int> groupedTileSizes(int maxRows) const;
  /// Dynamic shared memory of a grouped GEMM of `tileRows`-slot tiles.
  static int groupedSharedBytes(int tileRows);
  KernelInstance sort(int tileRows) const; // moe_sort<E, tileRows>
  // moe_grouped_gemm<E, H, 2I, true[, Format[, tileRows]]>,
  // <E, I, H, false[, Format[, tileRows]]>
  KernelInstance groupedGateUp(int tileRows) const;
  KernelInstance groupedDown(int tileRows) const;
  LaunchDims sortDims() const;
  LaunchDims groupedGateUpDims(int rows, int tileRows) const;
  LaunchDims groupedDownDims(int rows, int tileRows) const;
  /// The ints moe_sort writes for `rows` rows: order, expert and tile
  /// starts.
  long long sortedInts(int rows) const;
};

/// random_weights (RandomWeights.cuh): a weight's seeded random values in
/// device memory, for plans without weight bytes; every plan holds it.
struct RandomWeightsSpec {
  KernelInstance instance() const;
  LaunchDims dims(long long count) const;
};

/// softcap over the f32 logits of `rows` rows of `width` (Softcap.cuh).
struct SoftcapSpec {
  int width = 0;
  KernelInstance instance() const;
  LaunchDims dims(int rows) const;
};

/// swiglu_pairs<I>(out, gate_up, T): gate_up rows of interleaved (gate, up)
/// pairs, the output of a fused gate/up GEMM run without its epilogue.
struct SwigluPairsSpec {
  int intermediate = 0;
  KernelInstance instance() const;
  LaunchDims dims(int tokens) const;
};

/// argmax(out, logits, rows, V, partial_value, partial_index, arrivals):
/// each row is split over splits() blocks whose winners meet in a workspace
/// of workspaceBytes(capacity) bytes for launches of up to `capacity` rows
/// (partial values, partial indices, then one arrival counter per row, which
/// must be zero before the first launch; the kernel leaves it zero). The
/// offsets depend on the capacity, never on a launch's rows: launches of
/// different row counts share the workspace, and counters placed by a
/// smaller launch inside a larger one's partials would be overwritten with
/// indices, so that no block of a row ever counted itself last and the row's
/// id was never written (the host then read the previous step's ids).
struct ArgmaxSpec {
  int vocab = 0;
  KernelInstance instance() const;
  LaunchDims dims(int rows) const;
  int splits() const;
  std::size_t workspaceBytes(int capacity) const;
  /// Byte offsets of the partial indices and the arrival counters in a
  /// workspace for `capacity` rows.
  std::size_t indexOffset(int capacity) const;
  std::size_t arrivalOffset(int capacity) const;
};

/// sample_rows(ids, logprobs, top_ids, top_logprobs, logits, params,
/// penalty_offsets, penalty_entries, penalty_saved, rows, V, num_top) of
/// Sampling.cuh: per-request sampling (penalties, temperature, top-k/p,
/// min-p, seeded draws) and logprobs, one block per logits row.
struct SamplingSpec {
  static constexpr int kThreads = 1024;
  /// Bytes of one sol::SamplingRow, which the kernel reads as is.
  static constexpr int kParamsBytes = 48;
  /// A penalty entry on the device: {token id, output count | in-prompt
  /// bit 31} (two int32); a logit-bias entry: {token id | kBiasBit, the
  /// bias's float bits}. A row lists its penalty entries, then its bias
  /// entries.
  static constexpr int kPenaltyEntryBytes = 8;
  static constexpr unsigned kInPromptBit = 0x80000000u;
  static constexpr unsigned kBiasBit = 0x80000000u;
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

/// linear_gemv<K, MaxRows, RowsPerWarp, WarpsK, Out, HasBias, Epilogue,
/// NormPrologue[, L2Prefetch]>(y, x, w, bias, rows, N, norm_w, eps):
/// decode-size linear layers (rows <= 8), optionally with the RMS norm of x
/// fused in front.
/// The residual add of linear_gemv's AddNorm prologue (kAddNorm* in
/// LinearPrologue.cuh): none, residual + x, or residual + rms_norm(x) by an
/// input norm weight (Gemma's norms after attention and the MLP).
enum class GemvAddNorm { None = 0, Residual = 1, InputNorm = 2 };

struct GemvSpec {
  static constexpr int kMaxRows = 8;
  int inFeatures = 0; // K
  int maxRows = 1;
  int rowsPerWarp = 4;
  int warpsK = 1;
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;
  LinearEpilogue epilogue = LinearEpilogue::None;
  bool normPrologue = false;
  /// The LM head of greedy one-row steps: fp32 logits plus the row's argmax
  /// key in the 64-bit word `bias` points to (LinearGemv.cuh); one row, no
  /// bias, no epilogue.
  bool argmax = false;
  /// Each block asks L2 for all of its weight rows before waiting for its
  /// predecessor (prefetchBulkL2 in Common.cuh); see l2PrefetchWeights().
  bool l2Prefetch = false;
  /// One row with the norm prologue: the residual add before the norm, as
  /// the RmsNorm op with a residual (and an input norm) that the Linear op
  /// absorbs in one-row steps (StaticLowering::linearAddNorm): kAddNorm* in
  /// LinearPrologue.cuh.
  GemvAddNorm addNorm = GemvAddNorm::None;

  KernelInstance instance() const;
  LaunchDims dims(int outFeatures) const;
  /// A configuration for `rows` (1..8) rows of x.
  /// `multiprocessors` is the planned GPU's size; the rule measured on the
  /// H200 does not depend on it yet.
  static GemvSpec choose(int outFeatures, int inFeatures, int rows,
                         LinearOutput output, bool bias,
                         LinearEpilogue epilogue = LinearEpilogue::None,
                         bool normPrologue = false, int multiprocessors = 132);
};

/// The quantized weight formats linear_gemv_quant and linear_skinny_quant
/// read (LinearGemvQuant.cuh; the layouts of runtime/support/Quantize.h).
enum class WeightFormat { Int8, Int4, Fp8 };

/// What a quantized single-pass linear kernel (linear_gemv_quant,
/// linear_skinny_quant) computes, whatever its geometry: the weight format
/// and K, the output type, bias, epilogue and fused norm prologue.
struct QuantLinearShape {
  WeightFormat format = WeightFormat::Int8;
  int inFeatures = 0; // K
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;
  LinearEpilogue epilogue = LinearEpilogue::None;
  bool normPrologue = false;
  /// int4: the group size g along K (a multiple of the kernel's k step
  /// dividing K); 0 for int8 and fp8.
  int groupSize = 0;

  /// Weight values in one 16-byte load: 16 (int8, fp8) or 32 (int4).
  int vectorValues() const { return format == WeightFormat::Int4 ? 32 : 16; }
  /// Bytes of codes, scales and zeros of an [outFeatures, inFeatures]
  /// weight.
  long long weightBytes(int outFeatures) const;
};

/// linear_gemv_quant<Format, K, MaxRows, RowsPerWarp, WarpsK, Out, HasBias,
/// Epilogue, NormPrologue, GroupSize>(QuantLinearArgs): linear_gemv for
/// int8 (W8A16), int4 (W4A16, groups of groupSize, a multiple of 32, along
/// K) and fp8 (W8A8 E4M3, x quantized per row in the kernel) weights, 1..8
/// rows, with the same fused norm prologue and epilogues.
struct QuantGemvSpec : QuantLinearShape {
  static constexpr int kMaxRows = 8;
  static constexpr int kThreads = 256;
  /// The most shared memory a block may have (sm_90).
  static constexpr int kMaxSharedBytes = 227 * 1024;
  int maxRows = 1;
  int rowsPerWarp = 2;
  int warpsK = 1;

  KernelInstance instance() const;
  LaunchDims dims(int outFeatures) const;
  /// Dynamic shared memory: maxRows rows of x in bf16 under the norm
  /// prologue or with fp8 (the quantized rows), else none.
  int sharedBytes() const;
  /// Whether one row of this weight runs 8 weight rows a warp: enough
  /// codes that sharing each x value over more rows (and, for fp8, fewer
  /// blocks quantizing x) beats more blocks.
  static bool isLargeWeight(WeightFormat format, int outFeatures,
                            int inFeatures);
  /// A configuration for `rows` (1..8) rows of x; groupSize as the field.
  static QuantGemvSpec choose(int outFeatures, int inFeatures, int rows,
                              WeightFormat format, LinearOutput output,
                              bool bias,
                              LinearEpilogue epilogue = LinearEpilogue::None,
                              bool normPrologue = false, int groupSize = 0);
};

/// linear_gemv_quant_mma<K, Tiles, SlicesK, Depth, Out, HasBias, Epilogue,
/// NormPrologue, GroupSize>(QuantLinearArgs) (LinearGemvQuantMma.cuh): one
/// row of int4 weights (groups a multiple of 128) on the tensor cores, a
/// block of `tiles` 16-row tiles with K split over `slicesK` warps, the
/// codes of `depth` 128-k blocks in flight a warp. Measured beside
/// linear_gemv_quant (sol-kernel-check quant_gemv_mma); no plan selects it.
struct QuantGemvMmaSpec : QuantLinearShape {
  static constexpr int kThreads = 256;
  int tiles = 1;
  int slicesK = 8;
  int depth = 4;

  KernelInstance instance() const;
  LaunchDims dims(int outFeatures) const;
  /// x in the B fragments' order, and the normalised bf16 row under the
  /// norm prologue.
  int sharedBytes() const;
  /// Whether the kernel takes this weight: int4 with whole 128-k blocks in
  /// a group.
  static bool runs(WeightFormat format, int inFeatures, int groupSize);
  /// K over as many warps (up to 8) as leave each at least 4 blocks of
  /// 128 k; depth 4.
  static QuantGemvMmaSpec choose(int inFeatures, LinearOutput output, bool bias,
                                 LinearEpilogue epilogue, bool normPrologue,
                                 int groupSize);
};

/// quantize_rows_fp8<K>(QuantizeRowsArgs) (QuantizeActivations.cuh): the
/// fp8 activation rule over the rows of an fp8 GEMM (cuBLASLt's W8A8),
/// one 256-thread block a row; K a multiple of 128.
struct QuantizeRowsFp8Spec {
  int features = 0; // K
  /// rms_norm_quantize_fp8 (NormQuantizeRowsArgs): the rows of a
  /// NormLinear, normalised first.
  bool norm = false;
  KernelInstance instance() const;
  LaunchDims dims(int rows) const;
  /// Floats of scales a row: one per 128 k.
  int scaleBlocks() const { return features / 128; }
};

/// repeat_scales(RepeatScalesArgs) (QuantizeActivations.cuh).
struct RepeatScalesSpec {
  KernelInstance instance() const;
  LaunchDims dims(long long values) const;
};

/// dequantize_weight<Format, GroupSize>(DequantizeArgs): a quantized [N, K]
/// weight back to bf16 (Dequantize.cuh), for steps of more rows than the
/// quantized single-pass kernels take: those run the bf16 kernels over the
/// copy.
struct DequantizeSpec {
  WeightFormat format = WeightFormat::Int8;
  /// int4: the group size along K; 0 for int8 and fp8.
  int groupSize = 0;
  KernelInstance instance() const;
  LaunchDims dims(int outFeatures, int inFeatures) const;
};

/// linear_skinny<K, MaxRows, Tiles, WarpsK, Out, HasBias, Epilogue,
/// NormPrologue[, L2Prefetch]>(y, x, w, bias, rows, N, norm_w, eps): linear
/// layers of 2..16
/// rows on tensor cores (LinearSkinny.cuh: mma.sync with W as the 16-row A
/// operand and x^T as B), every weight read once; linear_gemv's arguments,
/// fused norm prologue and epilogues.
struct SkinnySpec {
  /// Rows the kernel handles.
  static constexpr int kMaxRows = 16;
  /// Rows plans run it for: 2..8. Measured on the H200 (Llama-3.2-1B
  /// shape, solrun --bench, same run): decode TPOT of 8 sequences 1.183 ms
  /// against 1.515 with cuBLASLt, but 16 sequences 1.657 ms against 1.352,
  /// so steps of 9 or more rows stay on cuBLASLt.
  static constexpr int kSelectedMaxRows = 8;
  static constexpr int kThreads = 256;
  /// The most shared memory a block may have (sm_90), which bounds K under
  /// the norm prologue (about 6,500 at 16 rows).
  static constexpr int kMaxSharedBytes = 227 * 1024;
  int inFeatures = 0; // K
  /// 8 (one n8 mma per tile and k step) or 16 (two).
  int maxRows = 8;
  /// 16-row tiles of W per warp: 1 or 2.
  int tiles = 1;
  /// Warps of a block along K (the rest, 8 / warpsK, along N).
  int warpsK = 8;
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;
  LinearEpilogue epilogue = LinearEpilogue::None;
  bool normPrologue = false;
  /// As GemvSpec::l2Prefetch.
  bool l2Prefetch = false;

  KernelInstance instance() const;
  LaunchDims dims(int outFeatures) const;
  /// Output features (rows of W) a block covers.
  int featuresPerBlock() const { return 16 * tiles * (8 / warpsK); }
  /// Dynamic shared memory (all the kernel uses): the normalised x rows
  /// under the norm prologue, the warps' partial sums.
  int sharedBytes() const;
  /// Whether the block's shared memory fits (it may not for a large K
  /// under the norm prologue).
  bool fits() const { return sharedBytes() <= kMaxSharedBytes; }
  /// A configuration for `rows` (1..16) rows of x on a GPU of
  /// `multiprocessors` SMs.
  static SkinnySpec choose(int outFeatures, int inFeatures, int rows,
                           LinearOutput output, bool bias,
                           LinearEpilogue epilogue = LinearEpilogue::None,
                           bool normPrologue = false,
                           int multiprocessors = 132);
};

/// linear_skinny_quant<Format, K, MaxRows, Tiles, WarpsK, Out, HasBias,
/// Epilogue, NormPrologue, GroupSize>(QuantLinearArgs): linear_skinny for
/// int8 (W8A16), int4 (W4A16, groups of groupSize, a multiple of 128, a k
/// step of the kernel, along K) and fp8 (W8A8 E4M3 on the E4M3 tensor
/// cores, sm_89+; x quantized per row in the kernel) weights
/// (LinearSkinnyQuant.cuh), 1..16 rows, with the same fused norm prologue
/// and epilogues.
struct QuantSkinnySpec : QuantLinearShape {
  /// Rows the kernel handles: 1..8 run with maxRows 8, 9..16 with 16.
  static constexpr int kMaxRows = 16;
  static constexpr int kThreads = 256;
  /// The most shared memory a block may have (sm_90), which bounds K for
  /// fp8 (maxRows E4M3 rows of x) and under the norm prologue (maxRows bf16
  /// rows).
  static constexpr int kMaxSharedBytes = 227 * 1024;
  /// 8 (one n8 mma per tile and chunk) or 16 (two).
  int maxRows = 8;
  /// 16-row tiles of W per warp: 1 or 2.
  int tiles = 1;
  /// Warps of a block along K (the rest, 8 / warpsK, along N).
  int warpsK = 8;

  KernelInstance instance() const;
  LaunchDims dims(int outFeatures) const;
  /// Output features (rows of W) a block covers.
  int featuresPerBlock() const { return 16 * tiles * (8 / warpsK); }
  /// Dynamic shared memory (QuantSkinnyShape::kSharedBytes): x's rows
  /// under the norm prologue (bf16) and for fp8 (E4M3), or the warps'
  /// partial sums if larger, the norm's sums of squares, fp8's row scales.
  int sharedBytes() const;
  /// Static shared memory beside it: fp8's per-warp row maxima.
  int staticSharedBytes() const;
  /// Whether the block's shared memory fits.
  bool fits() const {
    return sharedBytes() + staticSharedBytes() <= kMaxSharedBytes;
  }
  /// A configuration for `rows` (1..16) rows of x on a GPU of
  /// `multiprocessors` SMs: linear_skinny's geometry rule
  /// (SkinnySpec::choose) over 64-byte steps of a weight row. Fails for a
  /// format, K or group size the kernel cannot run; may not fit() (fp8 or
  /// the norm prologue at a large K).
  static QuantSkinnySpec choose(int outFeatures, int inFeatures, int rows,
                                WeightFormat format, LinearOutput output,
                                bool bias, LinearEpilogue epilogue,
                                bool normPrologue, int groupSize,
                                int multiprocessors = 132);
};

/// linear_gemm<BM, BN, WarpsM, WarpsN, Stages, Out, HasBias, Epilogue,
/// SplitK>(y, x, w, bias, M, N, K): tensor-core linear layers (prefill,
/// batched decode). With splitK > 1 the GEMM adds fp32 partial sums into a
/// zeroed [M, N] workspace (y; bias null) and linear_splitk_finalize<Out,
/// HasBias, Epilogue>(y, workspace, bias, M, N) produces the output.
struct GemmSpec {
  int tileM = 128;
  int tileN = 128;
  int warpsM = 2;
  int warpsN = 4;
  int stages = 3;
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;
  LinearEpilogue epilogue = LinearEpilogue::None;
  int splitK = 1;

  KernelInstance instance() const;
  LaunchDims dims(int rows, int outFeatures) const;
  KernelInstance finalizeInstance() const;
  LaunchDims finalizeDims(int rows, int outFeatures) const;
  int threads() const { return warpsM * warpsN * 32; }
  /// Dynamic shared memory; above 48 KB, so the kernel's limit must be
  /// raised (Kernel::setMaxDynamicSharedMemory) before the first launch.
  int sharedBytes() const;
  /// `inFeatures` (K) > 0 allows split-K when the output tiles alone would
  /// leave multiprocessors idle.
  static GemmSpec choose(int rows, int outFeatures, LinearOutput output,
                         bool bias,
                         LinearEpilogue epilogue = LinearEpilogue::None,
                         int multiprocessors = 132, int inFeatures = 0);
};

/// linear_gemm_quant<Format, BM, BN, WarpsM, WarpsN, Stages, Out, HasBias,
/// Epilogue, SplitK, GroupSize>(QuantGemmArgs): linear_gemm for int8 and
/// int4 weights (LinearGemmQuant.cuh), the codes dequantized in registers
/// before the mma; batched decode past linear_skinny_quant's rows. With
/// splitK > 1 it adds fp32 partial sums into a zeroed [M, N] workspace and
/// linear_splitk_finalize (GemmSpec::finalizeInstance) produces the output.
struct QuantGemmSpec {
  WeightFormat format = WeightFormat::Int8;
  int tileM = 64;
  int tileN = 128;
  int warpsM = 1;
  int warpsN = 8;
  int stages = 4;
  /// 64-k sub-tiles a stage: 1, 2 or 4 (a stage reads kSub * 64 bytes of
  /// an int8 row of W, kSub * 32 of an int4 row).
  int kSub = 1;
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;
  LinearEpilogue epilogue = LinearEpilogue::None;
  /// int4: the group size along K, a multiple of 64 (a k tile); 0 for int8.
  int groupSize = 0;
  int splitK = 1;

  /// Whether the kernel takes a weight of this format and shape: int8 or
  /// int4 (groups a multiple of 64), K a multiple of 64, N of 8.
  static bool supports(WeightFormat format, int outFeatures, int inFeatures,
                       int groupSize);
  KernelInstance instance() const;
  LaunchDims dims(int rows, int outFeatures) const;
  /// linear_splitk_finalize for splitK > 1.
  KernelInstance finalizeInstance() const;
  LaunchDims finalizeDims(int rows, int outFeatures) const;
  int threads() const { return warpsM * warpsN * 32; }
  /// Dynamic shared memory (QuantGemmShape::kSharedBytes); above 48 KB.
  int sharedBytes() const;
  /// Bytes of codes, scales and zeros of an [outFeatures, inFeatures]
  /// weight.
  long long weightBytes(int outFeatures, int inFeatures) const;
  /// Sets splitK for the tiles: split K until about two blocks per
  /// multiprocessor stream codes, keeping at least 512 k a split.
  void splitFor(int rows, int outFeatures, int inFeatures,
                int multiprocessors = 132);
  static QuantGemmSpec choose(int rows, int outFeatures, int inFeatures,
                              WeightFormat format, LinearOutput output,
                              bool bias, LinearEpilogue epilogue, int groupSize,
                              int multiprocessors = 132);
};

/// linear_wgmma_quant<Format, Tokens, WarpGroups, Stages, KSub, Out,
/// HasBias, Epilogue, SplitK, GroupSize>(QuantGemmArgs): linear_gemm_quant's
/// job on Hopper's warpgroup MMA (LinearWgmmaQuant.cuh): each warpgroup
/// dequantizes 64 rows of W into wgmma's A registers against `tokens` rows
/// of x in shared memory. Only for plans whose target has wgmma
/// (targetHasWgmma); its source compiles for the architecture-specific
/// target (needsArchSpecificTarget). Split-K as QuantGemmSpec's.
struct QuantWgmmaSpec {
  WeightFormat format = WeightFormat::Int8;
  /// Rows of x a block (wgmma's N): 16, 32, 64 or 128.
  int tokens = 64;
  /// Warpgroups a block, each 64 output columns: 1, 2 or 4 (each x tile
  /// serves more W rows).
  int warpGroups = 2;
  int stages = 4;
  /// 64-k sub-tiles a stage: 1, 2 or 4.
  int kSub = 1;
  LinearOutput output = LinearOutput::Bf16;
  bool bias = false;
  LinearEpilogue epilogue = LinearEpilogue::None;
  /// int4: the group size along K, a multiple of 64; 0 for int8.
  int groupSize = 0;
  int splitK = 1;

  static constexpr int kMaxSharedBytes = 227 * 1024;

  /// Takes the weights QuantGemmSpec::supports.
  KernelInstance instance() const;
  LaunchDims dims(int rows, int outFeatures) const;
  KernelInstance finalizeInstance() const;
  LaunchDims finalizeDims(int rows, int outFeatures) const;
  int threads() const { return warpGroups * 128; }
  int tileN() const { return warpGroups * 64; }
  /// Dynamic shared memory (QuantWgmmaShape::kSharedBytes).
  int sharedBytes() const;
  bool fits() const { return sharedBytes() <= kMaxSharedBytes; }
  long long weightBytes(int outFeatures, int inFeatures) const;
  /// Splits K only while the tiles leave multiprocessors idle, into at most
  /// 8 slices of at least 512 k.
  void splitFor(int rows, int outFeatures, int inFeatures,
                int multiprocessors = 132);
  /// The configuration for a row bucket (32, 64 or 128).
  static QuantWgmmaSpec choose(int rows, int outFeatures, int inFeatures,
                               WeightFormat format, LinearOutput output,
                               bool bias, LinearEpilogue epilogue,
                               int groupSize, int multiprocessors = 132);
};

/// linear_wgmma_fp8<TileN, Stages, HasBias, Epilogue>(Fp8GemmArgs)
/// (LinearWgmmaFp8.cuh): the W8A8 GEMM of fp8 plans' steps of many rows
/// on Hopper's fp8 tensor cores, x and W loaded by TMA through tensor maps
/// (runtime/cuda/TensorMap.h), the per-row scales of x and W applied to the
/// fp32 sums. sm_90a only (needsArchSpecificTarget).
struct Fp8WgmmaSpec {
  /// Columns of W a block: 128 or 256.
  int tileN = 256;
  /// Beside the bf16 output tile (64 KB at 256 columns), three stages fit.
  int stages = 3;
  bool bias = false;
  LinearEpilogue epilogue = LinearEpilogue::None;

  static constexpr int kTileM = 128;
  static constexpr int kTileK = 128;
  static constexpr int kThreads = 384;
  /// Dynamic shared memory a block may take beside the kernel's static
  /// 4.2 KB (two tiles' column scales and bias a consumer, the barriers).
  static constexpr int kMaxSharedBytes = 227 * 1024 - 4352;

  KernelInstance instance() const;
  /// One block a multiprocessor at most (the kernel is persistent).
  LaunchDims dims(int rows, int outFeatures, int multiprocessors) const;
  int tiles(int rows, int outFeatures) const;
  /// Dynamic shared memory (Fp8WgmmaShape::kSharedBytes).
  int sharedBytes() const;
  bool fits() const { return sharedBytes() <= kMaxSharedBytes; }
  /// Whether a step of `rows` rows should run it rather than cuBLASLt: when
  /// each block has at least kMinStepsPerBlock k steps of work (its tiles
  /// over the multiprocessors, times K / 128), enough to amortise a tile's
  /// fixed cost. Measured on an H100 (sol-kernel-check --only fp8_gemm):
  /// the 8B's q/k/v, gate/up and down at 2,048 rows and gate/up and down at
  /// 1,024 pass and win by 1.15-1.3x; the 8B's o and the 1B's q/k/v and o
  /// fail and lose (one tile a multiprocessor, 16-32 k steps).
  bool outrunsCublas(int rows, int outFeatures, int inFeatures,
                     int multiprocessors) const;
  static constexpr int kMinStepsPerBlock = 64;
  /// Whether an [n, k] weight can run it: k % 16 (the tensor maps' row
  /// pitch) and n % 8.
  static bool supports(int outFeatures, int inFeatures);
  /// The configuration a plan compiles.
  static Fp8WgmmaSpec choose(bool bias, LinearEpilogue epilogue);
};

/// Whether plans for `gpuArch` (solc --gpu: "sm_90", "sm_90a") may use
/// Hopper's wgmma kernels: their sources compile for sm_90a, whose cubin
/// runs on compute capability 9.0 only.
inline bool targetHasWgmma(std::string_view gpuArch) {
  return gpuArch == "sm_90" || gpuArch == "sm_90a";
}

/// Whether kernels of `header` need the architecture-specific target
/// (sm_90a for sm_90): wgmma and its fences exist only there.
inline bool needsArchSpecificTarget(std::string_view header) {
  return header == "LinearWgmmaQuant.cuh" || header == "LinearWgmmaFp8.cuh";
}

/// rope_kv_write<Hq, Hkv, HD, BS>(qkv, k_cache, v_cache, inv_freq, scaling,
/// positions, token_seq, block_tables, max_blocks, T); with fp8,
/// rope_kv_write_fp8<Hq, Hkv, HD, BS>(qkv, k_cache, v_cache, k_scales,
/// v_scales, inv_freq, ...): the cache is E4M3 with a float32 scale per
/// (block, slot, kv head) for K and for V.
struct RopeKvWriteSpec {
  int qHeads = 0;
  int kvHeads = 0;
  int headDim = 0;
  int blockSize = 16;
  bool fp8 = false;
  KernelInstance instance() const;
  LaunchDims dims(int tokens) const;
};

/// paged_attention<Hq, Hkv, HD, BS, FusedRope[, PreloadWalk]>(out, qkv,
/// k_cache, v_cache, positions, token_seq, block_tables, max_blocks, scale,
/// sliding_window, T, partials, arrivals, inv_freq, attention_scaling); with
/// fp8, paged_attention_fp8<...>(out, qkv, k_cache, v_cache, k_scales,
/// v_scales, positions, ...). Splits > 1 merge in the kernel: through a
/// thread-block cluster of the splits when mergesInCluster, else in the last
/// block of each token and kv head to arrive, counting arrivals in `arrivals`.
/// `fusedRope`: the variant that does rope_kv_write's work in its prologue, for
/// steps whose sequences each have one token (`qkNorm`: and HeadRmsNorm's).
/// Head dims: multiples of 8 up to 256 (16 with fp8); 80 and 96 pad a
/// position's lanes to 16 (8 for fp8 at 96 with groups of at most 4).
struct PagedAttentionSpec {
  int qHeads = 0;
  int kvHeads = 0;
  int headDim = 0;
  int blockSize = 16;
  bool fp8 = false;
  bool fusedRope = false;
  /// Merge the splits of a (token, kv head) through a thread-block cluster
  /// (sm_90; dims() sets the cluster) when mergesInCluster, else through
  /// global partials.
  bool clusterMerge = false;
  /// The fused-rope variant that loads its walk's first step before
  /// waiting for the QKV projection (PagedAttention.cuh's PreloadWalk);
  /// selection sets it where preloadsWalk.
  bool preloadWalk = false;
  /// The variant that soft-caps the scores (PagedAttentionArgs::softcap;
  /// Gemma 2); the plain one ignores the field.
  bool softcap = false;
  /// The fused-rope variant that also normalises each q and k head first
  /// (PagedAttention.cuh's QkNorm: the HeadRmsNorm of Qwen3 and Gemma 3,
  /// which decode steps then skip).
  bool qkNorm = false;
  /// Blocks a kv head's query heads are spread over (PagedAttention.cuh's
  /// HeadSplit; with preloadWalk only); selection sets it (chooseHeadSplit).
  int headSplit = 1;
  /// The most splits chooseSplits picks.
  static constexpr int kMaxSplits = 64;
  /// The most splits a cluster merges (the portable cluster size).
  static constexpr int kMaxClusterSplits = 8;
  /// The most blocks a kv head's query heads are spread over, and the most
  /// query heads a block of a split group keeps.
  static constexpr int kMaxHeadSplit = 4;
  static constexpr int kHeadSplitGroup = 2;
  KernelInstance instance() const;
  LaunchDims dims(int tokens, int splits, int multiprocessors = 132) const;
  /// Whether a launch merges in clusters: clusterMerge, 2..kMaxClusterSplits
  /// splits, and no more blocks than multiprocessors. Clusters of 8 in a
  /// full grid are slower than the global merge (8 tokens of 8 kv heads at
  /// 8 splits: 17.2 us against 13.2 on the H200); in batch-1 decode they
  /// are faster (1 token, 256 positions: 6.4 us against 7.9).
  bool mergesInCluster(int tokens, int splits, int multiprocessors) const;
  /// Whether a fused-rope launch preloads its walk: grids of at most one
  /// block per multiprocessor, where the 22 more registers per thread cost
  /// no occupancy. Measured on the H200 (Llama-3.2-1B shape, with and
  /// without the preload in the same run): batch-1 decode 1,308.1 against
  /// 1,302.5 tok/s (fp8 cache: 1,243.0 against 1,227.9); 64 sequences (512
  /// blocks) are 3.7% slower with it.
  bool preloadsWalk(int tokens, int splits, int multiprocessors) const;
  /// The head split of a preloading launch: groups of more than
  /// kHeadSplitGroup query heads are halved while the grid stays within
  /// one block per multiprocessor. Batch-1 decode of Qwen3-30B-A3B's 32 / 4
  /// heads otherwise runs 32 blocks of 8 heads each. Measured on an H100
  /// (sol-kernel-check --only fused_rope, 256 positions, 8 splits merged in
  /// a cluster): Qwen3-30B-A3B 11.9 us whole, 7.8 over 2 blocks, 7.0 over
  /// 4; Llama-3.2-1B 6.7 whole, 6.2 over 2.
  int chooseHeadSplit(int tokens, int splits, int multiprocessors) const;
  /// Floats of `partials` a launch with `splits` > 1 needs.
  std::size_t workspaceFloats(int tokens, int splits) const;
  /// Arrival counters (unsigned, zeroed once) a launch of `tokens` needs.
  std::size_t arrivalCount(int tokens) const;
  /// Whether the fused-rope variant exists for this shape: each half of a
  /// head must span whole lanes of the kernel's layout.
  bool fusedRopeSupported() const;
  /// Context splits (flash-decoding) for a step whose longest context is
  /// `maxContext`; 1 means no split.
  int chooseSplits(int tokens, int maxContext, int multiprocessors = 132) const;
};

} // namespace sol::cuda

//===- KernelSpecs.cpp - How each kernel template is named and launched ---===//

#include "runtime/cuda/KernelSpecs.h"

#include "codegen/kernels/LaunchArgs.h"

#include "runtime/support/Error.h"

#include <algorithm>

namespace sol::cuda {
namespace {

constexpr const char *kNamespace = "sol::kernels::";

unsigned ceilDiv(long long a, long long b) {
  return static_cast<unsigned>((a + b - 1) / b);
}

// Elementwise kernels: 16 bytes (8 bf16) per thread, 256 threads, grid-stride
// loops, so the grid is capped and large inputs loop.
LaunchDims vectorDims(long long vectors) {
  LaunchDims dims;
  dims.block.x = 256;
  dims.grid.x = std::clamp<unsigned>(ceilDiv(vectors, 256), 1u, 65535u);
  return dims;
}

const char *outputType(LinearOutput output) {
  return output == LinearOutput::Fp32 ? "float" : "__nv_bfloat16";
}

void checkEpilogue(LinearOutput output, LinearEpilogue epilogue,
                   const char *kernel) {
  if (output == LinearOutput::Fp32 && epilogue != LinearEpilogue::None)
    fail(kernel, ": the residual and gated epilogues need a bf16 output");
}

void requirePositive(int value, const char *what, const char *kernel) {
  if (value <= 0)
    fail(kernel, ": ", what, " must be positive, got ", value);
}

void requireMultiple(int value, int of, const char *what, const char *kernel) {
  if (value % of != 0)
    fail(kernel, ": ", what, " (", value, ") must be a multiple of ", of);
}

// The paged KV cache's block sizes (sol-plan-kv-cache's rule): positions
// map to (block, slot) by a shift and a mask.
void requireKvBlockSize(int blockSize, const char *kernel) {
  if (blockSize < 8 || blockSize > 256 || (blockSize & (blockSize - 1)) != 0)
    fail(kernel,
         ": the KV-cache block size must be a power of two in "
         "[8, 256], got ",
         blockSize);
}

// fp8 kernels load 8 or 16 E4M3 values per lane and quantise each half of
// a head's k row in whole lanes: head dims that are multiples of 16.
void requireFp8HeadDim(int headDim, const char *kernel) {
  if (headDim < 16 || headDim > 256 || headDim % 16 != 0)
    fail(kernel,
         ": the fp8 KV cache supports head dims that are multiples of 16 "
         "up to 256 (64, 80, 96, 128, 256, ...), got ",
         headDim);
}

int nextPowerOfTwo(int v) {
  int p = 1;
  while (p < v)
    p *= 2;
  return p;
}

} // namespace

KernelInstance EmbeddingSpec::instance() const {
  requireMultiple(hidden, 8, "hidden size", "embedding");
  return {"Embedding.cuh", cat(kNamespace, "embedding<", hidden, ">")};
}
LaunchDims EmbeddingSpec::dims(int tokens) const {
  return vectorDims(static_cast<long long>(tokens) * (hidden / 8));
}
LaunchDims EmbeddingSpec::keyChainedDims() const {
  LaunchDims d = dims(1);
  d.grid.x = 1;
  return d;
}

KernelInstance GatherRowsSpec::instance() const {
  requireMultiple(hidden, 8, "hidden size", "gather_rows");
  return {"GatherRows.cuh", cat(kNamespace, "gather_rows<", hidden, ">")};
}
LaunchDims GatherRowsSpec::dims(int rows) const {
  return vectorDims(static_cast<long long>(rows) * (hidden / 8));
}

KernelInstance SwigluSpec::instance() const {
  requireMultiple(intermediate, 8, "intermediate size", "swiglu");
  return {"Swiglu.cuh", cat(kNamespace, "swiglu<", intermediate, ">")};
}
LaunchDims SwigluSpec::dims(int tokens) const {
  return vectorDims(static_cast<long long>(tokens) * (intermediate / 8));
}

KernelInstance MoeSpec::route() const {
  requirePositive(experts, "experts", "moe_route");
  if (topK < 1 || topK > experts || topK > 32)
    fail("moe_route: top_k ", topK, " must be in [1, min(experts ", experts,
         ", 32)]");
  return {"MoeDecode.cuh",
          cat(kNamespace, "moe_route<", experts, ", ", topK, ">")};
}
namespace {
// The template argument after the shape: none for bf16 experts, else the
// format's number (MoeDecode.cuh's kMoe*).
std::string moeFormatArgument(fb::ExpertFormat format) {
  return format == fb::ExpertFormat::Float
             ? ">"
             : cat(", ", static_cast<int>(format), ">");
}
// The multiple an expert matrix's inputs must be for `format`: whole vectors
// of the kernels' loads (8 bf16 values, 16 int8 or fp8 codes, 32 int4 or
// MXFP4 ones); int4's groups hold whole vectors.
void requireExpertInputs(fb::ExpertFormat format, int inputs, int groupSize,
                         const char *what, const char *kernel) {
  switch (format) {
  case fb::ExpertFormat::Float:
    requireMultiple(inputs, 8, what, kernel);
    break;
  case fb::ExpertFormat::Int8:
  case fb::ExpertFormat::Fp8:
    requireMultiple(inputs, 16, what, kernel);
    break;
  case fb::ExpertFormat::Mxfp4:
    requireMultiple(inputs, 32, what, kernel);
    break;
  case fb::ExpertFormat::Int4:
    requireMultiple(inputs, 32, what, kernel);
    requireMultiple(groupSize, 32, "int4 group size", kernel);
    if (inputs % groupSize != 0)
      fail(kernel, ": the int4 group size ", groupSize, " must divide the ",
           inputs, " inputs");
    break;
  }
}
} // namespace

KernelInstance MoeSpec::gateUp() const {
  requireExpertInputs(format, hidden, groupSize, "hidden size", "moe_gate_up");
  requireMultiple(width, 8, "expert intermediate size", "moe_gate_up");
  return {"MoeDecode.cuh", cat(kNamespace, "moe_gate_up<", experts, ", ",
                               hidden, ", ", width, moeFormatArgument(format))};
}
KernelInstance MoeSpec::down() const {
  requireMultiple(hidden, 8, "hidden size", "moe_down");
  requireExpertInputs(format, width, groupSize, "expert intermediate size",
                      "moe_down");
  return {"MoeDecode.cuh", cat(kNamespace, "moe_down<", experts, ", ", hidden,
                               ", ", width, moeFormatArgument(format))};
}
KernelInstance MoeSpec::combine() const {
  requireMultiple(hidden, 8, "hidden size", "moe_combine");
  return {"MoeDecode.cuh",
          cat(kNamespace, "moe_combine<", hidden, ", ", topK, ">")};
}
// MoeDecode.cuh's geometry: kMoeRouteThreads (4 rows a block), kMoeThreads,
// kMoeRowsPerBlock weight rows a block.
LaunchDims MoeSpec::routeDims(int rows) const {
  LaunchDims dims;
  dims.block.x = 128;
  dims.grid.x = static_cast<unsigned>(ceilDiv(std::max(rows, 1), 4));
  return dims;
}
namespace {
// A block per 16 weight rows of each expert, or of each slot's expert when
// a step has fewer slots than experts (moeBlockExpert).
LaunchDims moeDecodeDims(int rows, int topK, int experts, int weightRows) {
  LaunchDims dims;
  dims.block.x = 128;
  const long long units = std::min<long long>(
      static_cast<long long>(std::max(rows, 1)) * topK, experts);
  dims.grid.x = static_cast<unsigned>(units * ceilDiv(weightRows, 16));
  return dims;
}
} // namespace
LaunchDims MoeSpec::gateUpDims(int rows) const {
  return moeDecodeDims(rows, topK, experts, width);
}
LaunchDims MoeSpec::downDims(int rows) const {
  return moeDecodeDims(rows, topK, experts, hidden);
}
LaunchDims MoeSpec::combineDims(int rows) const {
  LaunchDims dims;
  dims.block.x = 128;
  dims.grid.x = std::clamp<unsigned>(
      ceilDiv(static_cast<long long>(std::max(rows, 1)) * (hidden / 8), 128),
      1u, 65535u);
  return dims;
}

KernelInstance MoeSpec::gateUpRow() const {
  route(); // the same checks of E and K
  requireExpertInputs(format, hidden, groupSize, "hidden size",
                      "moe_gate_up_row");
  requireMultiple(width, 8, "expert intermediate size", "moe_gate_up_row");
  return {"MoeDecodeRow.cuh",
          cat(kNamespace, "moe_gate_up_row<", experts, ", ", topK, ", ", hidden,
              ", ", width, moeFormatArgument(format))};
}
KernelInstance MoeSpec::downRow() const {
  route();
  requireMultiple(hidden, 8, "hidden size", "moe_down_row");
  requireExpertInputs(format, width, groupSize, "expert intermediate size",
                      "moe_down_row");
  return {"MoeDecodeRow.cuh",
          cat(kNamespace, "moe_down_row<", experts, ", ", topK, ", ", hidden,
              ", ", width, moeFormatArgument(format))};
}
// MoeDecodeRow.cuh's geometry: 4 warps a block; a warp takes
// moeRowPairsPerWarp (gate, up) pairs of one choice, or one output of down.
LaunchDims MoeSpec::gateUpRowDims() const {
  LaunchDims dims;
  dims.block.x = 128;
  const int rowsPerBlock =
      4 * kernels::moeRowPairsPerWarp(static_cast<int>(format), hidden);
  dims.grid.x = static_cast<unsigned>(topK * ceilDiv(width, rowsPerBlock));
  return dims;
}
LaunchDims MoeSpec::downRowDims() const {
  LaunchDims dims;
  dims.block.x = 128;
  dims.grid.x = static_cast<unsigned>(ceilDiv(hidden, 4));
  return dims;
}

MoeSpec::Path MoeSpec::path(int rows) const {
  if (grouped(rows))
    return Path::Grouped;
  return rows <= 1 ? Path::Row : Path::Slots;
}
bool MoeSpec::grouped(int rows) const {
  return rows > 1 && static_cast<long long>(rows) * topK >= experts;
}
int MoeSpec::groupedTileRows(int rows) const {
  // MXFP4 tiles are decoded by their blocks with plain loads: an expert
  // split over more tiles decodes its codes more often, and gpt-oss-20b's
  // 64 sequences ran 20% slower with tiles of 16 (H100).
  if (format == fb::ExpertFormat::Mxfp4)
    return 64;
  // Twice the even share: random routing gives some experts twice the mean.
  const long long even = ceilDiv(static_cast<long long>(rows) * topK, experts);
  // fp8 decodes its B rows with more instructions than int8 and int4: at 128
  // rows of Qwen3-30B-A3B tiles of 32 beat 16 (511 against 597 us).
  const int smallest = format == fb::ExpertFormat::Fp8 ? 32 : 16;
  for (int tileRows : {16, 32})
    if (tileRows >= smallest && 2 * even <= tileRows)
      return tileRows;
  return 64;
}
std::vector<int> MoeSpec::groupedTileSizes(int maxRows) const {
  std::vector<int> sizes;
  for (int rows = 2; rows <= maxRows; ++rows)
    if (grouped(rows) &&
        (sizes.empty() || sizes.back() != groupedTileRows(rows)))
      sizes.push_back(groupedTileRows(rows));
  return sizes;
}
namespace {
void requireTileRows(int tileRows) {
  if (tileRows != 16 && tileRows != 32 && tileRows != 64)
    fail("moe_grouped_gemm: tiles of 16, 32 or 64 slots, not ", tileRows);
}
// moe_grouped_gemm's template arguments after GateUp: the format, then the
// tile rows where they are not the default 64.
std::string groupedTail(fb::ExpertFormat format, int tileRows) {
  requireTileRows(tileRows);
  if (tileRows == 64)
    return moeFormatArgument(format);
  return cat(", ", static_cast<int>(format), ", ", tileRows, ">");
}
} // namespace
int MoeSpec::groupedSharedBytes(int tileRows) {
  requireTileRows(tileRows);
  return 4 * (tileRows + kGroupedTileCols) * 64 * 2; // 4 stages of bf16
}
KernelInstance MoeSpec::sort(int tileRows) const {
  requirePositive(experts, "experts", "moe_sort");
  requireTileRows(tileRows);
  return {"MoeGroupedGemm.cuh",
          cat(kNamespace, "moe_sort<", experts, ", ", tileRows, ">")};
}
KernelInstance MoeSpec::groupedGateUp(int tileRows) const {
  requireExpertInputs(format, hidden, groupSize, "hidden size",
                      "moe_grouped_gemm");
  requireMultiple(width, 8, "expert intermediate size", "moe_grouped_gemm");
  return {"MoeGroupedGemm.cuh",
          cat(kNamespace, "moe_grouped_gemm<", experts, ", ", hidden, ", ",
              2 * width, ", true", groupedTail(format, tileRows))};
}
KernelInstance MoeSpec::groupedDown(int tileRows) const {
  requireMultiple(hidden, 8, "hidden size", "moe_grouped_gemm");
  requireExpertInputs(format, width, groupSize, "expert intermediate size",
                      "moe_grouped_gemm");
  return {"MoeGroupedGemm.cuh",
          cat(kNamespace, "moe_grouped_gemm<", experts, ", ", width, ", ",
              hidden, ", false", groupedTail(format, tileRows))};
}
LaunchDims MoeSpec::sortDims() const {
  LaunchDims dims;
  dims.block.x = 1024;
  return dims;
}
namespace {
// moeGemmTileBound (MoeGroupedGemm.cuh): every expert's last tile may be
// partial.
LaunchDims groupedDims(int rows, int topK, int experts, int outputs,
                       int tileRows) {
  LaunchDims dims;
  dims.block.x = 128;
  const long long slots = static_cast<long long>(std::max(rows, 1)) * topK;
  dims.grid.x = static_cast<unsigned>(
      (ceilDiv(slots, static_cast<long long>(tileRows)) + experts) *
      ceilDiv(outputs, MoeSpec::kGroupedTileCols));
  dims.sharedBytes =
      static_cast<unsigned>(MoeSpec::groupedSharedBytes(tileRows));
  return dims;
}
} // namespace
LaunchDims MoeSpec::groupedGateUpDims(int rows, int tileRows) const {
  return groupedDims(rows, topK, experts, 2 * width, tileRows);
}
LaunchDims MoeSpec::groupedDownDims(int rows, int tileRows) const {
  return groupedDims(rows, topK, experts, hidden, tileRows);
}
long long MoeSpec::sortedInts(int rows) const {
  return static_cast<long long>(rows) * topK + 2LL * (experts + 1);
}

KernelInstance RandomWeightsSpec::instance() const {
  return {"RandomWeights.cuh", cat(kNamespace, "random_weights")};
}
LaunchDims RandomWeightsSpec::dims(long long count) const {
  LaunchDims dims;
  dims.block.x = 256;
  dims.grid.x =
      std::clamp<unsigned>(ceilDiv(std::max(count, 1LL), 256), 1u, 132u * 16);
  return dims;
}

KernelInstance SoftcapSpec::instance() const {
  requirePositive(width, "width", "softcap");
  return {"Softcap.cuh", cat(kNamespace, "softcap")};
}
LaunchDims SoftcapSpec::dims(int rows) const {
  // One value a thread (grid-stride beyond the grid's limit).
  return vectorDims(static_cast<long long>(std::max(rows, 1)) * width);
}

KernelInstance SwigluPairsSpec::instance() const {
  requireMultiple(intermediate, 8, "intermediate size", "swiglu_pairs");
  return {"Swiglu.cuh", cat(kNamespace, "swiglu_pairs<", intermediate, ">")};
}
LaunchDims SwigluPairsSpec::dims(int tokens) const {
  return vectorDims(static_cast<long long>(tokens) * (intermediate / 8));
}

KernelInstance ArgmaxSpec::instance() const {
  return {"Argmax.cuh", cat(kNamespace, "argmax")};
}
int ArgmaxSpec::splits() const {
  // About 4k logits per block: 4 float4 loads per thread, and a 128k vocab
  // spread over 32 SMs.
  return std::clamp(static_cast<int>(ceilDiv(vocab, 4096)), 1, 64);
}
LaunchDims ArgmaxSpec::dims(int rows) const {
  requirePositive(vocab, "vocabulary", "argmax");
  LaunchDims dims;
  dims.grid.x = static_cast<unsigned>(splits());
  dims.grid.y = static_cast<unsigned>(rows);
  dims.block.x = 256;
  return dims;
}
std::size_t ArgmaxSpec::indexOffset(int capacity) const {
  return static_cast<std::size_t>(capacity) * splits() * sizeof(float);
}
std::size_t ArgmaxSpec::arrivalOffset(int capacity) const {
  return 2 * indexOffset(capacity);
}
std::size_t ArgmaxSpec::workspaceBytes(int capacity) const {
  return arrivalOffset(capacity) + static_cast<std::size_t>(capacity) * 4;
}

KernelInstance SamplingSpec::instance() const {
  return {"Sampling.cuh", cat(kNamespace, "sample_rows")};
}
LaunchDims SamplingSpec::dims(int rows) const {
  requirePositive(rows, "rows", "sample_rows");
  LaunchDims dims;
  dims.grid.x = static_cast<unsigned>(rows);
  dims.block.x = kThreads;
  return dims;
}

KernelInstance RmsNormSpec::instance() const {
  requireMultiple(dim, 8, "dimension", "rms_norm");
  if (dim > 32768)
    fail("rms_norm: dimension ", dim, " is larger than the supported 32768");
  return {"RmsNorm.cuh", cat(kNamespace, "rms_norm<", dim, ">")};
}
int RmsNormSpec::threadsPerRow() const {
  const int vecs = dim / 8;
  return vecs <= 32 ? nextPowerOfTwo(vecs)
                    : std::min(256, (vecs + 31) / 32 * 32);
}
int RmsNormSpec::blockThreads() const { return std::max(threadsPerRow(), 128); }
int RmsNormSpec::rowsPerBlock() const {
  return blockThreads() / threadsPerRow();
}
LaunchDims RmsNormSpec::dims(int rows) const {
  LaunchDims dims;
  dims.block.x = static_cast<unsigned>(blockThreads());
  dims.grid.x = std::max(1u, ceilDiv(rows, rowsPerBlock()));
  return dims;
}

KernelInstance GemvSpec::instance() const {
  requireMultiple(inFeatures, 8, "in features (K)", "linear_gemv");
  if (maxRows != 1 && maxRows != 2 && maxRows != 4 && maxRows != 8)
    fail("linear_gemv: maxRows must be 1, 2, 4 or 8, got ", maxRows);
  if (warpsK != 1 && warpsK != 2 && warpsK != 4 && warpsK != 8)
    fail("linear_gemv: warpsK must be 1, 2, 4 or 8, got ", warpsK);
  if (rowsPerWarp != 1 && rowsPerWarp != 2 && rowsPerWarp != 4 &&
      rowsPerWarp != 8 && rowsPerWarp != 16)
    fail("linear_gemv: rowsPerWarp must be 1, 2, 4, 8 or 16, got ",
         rowsPerWarp);
  if (rowsPerWarp * maxRows > 32)
    fail("linear_gemv: rowsPerWarp * maxRows must be at most 32, got ",
         rowsPerWarp, " * ", maxRows);
  checkEpilogue(output, epilogue, "linear_gemv");
  // The norm prologue keeps maxRows rows of x in shared memory.
  if (normPrologue && maxRows * inFeatures * 2 > 227 * 1024)
    fail("linear_gemv: the norm prologue needs ", maxRows * inFeatures * 2,
         " bytes of shared memory for ", maxRows, " rows of ", inFeatures,
         " features, more than the 227 KB a block may have");
  if (isGated(epilogue) && rowsPerWarp % 2 != 0)
    fail("linear_gemv: a gated epilogue needs an even rowsPerWarp");
  if (argmax && (maxRows != 1 || output != LinearOutput::Fp32 || bias ||
                 epilogue != LinearEpilogue::None))
    fail("linear_gemv: the argmax epilogue needs one row of fp32 logits, no "
         "bias and no other epilogue");
  if (addNorm != GemvAddNorm::None && (!normPrologue || maxRows != 1 || argmax))
    fail("linear_gemv: a residual add in the prologue needs the norm "
         "prologue, one row and no argmax");
  constexpr int kArgmaxEpilogue = 4; // kEpilogueArgmax (Common.cuh)
  // The trailing template arguments are named only when they differ from
  // their defaults, so that instances keep their names.
  const std::string tail = addNorm != GemvAddNorm::None
                               ? cat(l2Prefetch ? ", true, " : ", false, ",
                                     static_cast<int>(addNorm))
                           : l2Prefetch ? std::string(", true")
                                        : std::string();
  return {"LinearGemv.cuh",
          cat(kNamespace, "linear_gemv<", inFeatures, ", ", maxRows, ", ",
              rowsPerWarp, ", ", warpsK, ", ", outputType(output), ", ",
              bias ? "true" : "false", ", ",
              argmax ? kArgmaxEpilogue : static_cast<int>(epilogue), ", ",
              normPrologue ? "true" : "false", tail, ">")};
}

LaunchDims GemvSpec::dims(int outFeatures) const {
  requirePositive(outFeatures, "out features (N)", "linear_gemv");
  LaunchDims dims;
  dims.block.x = 256;
  dims.grid.x = ceilDiv(outFeatures, (8 / warpsK) * rowsPerWarp);
  // The norm prologue's rows of x, and under AddNorm the row of sums it
  // writes back over the residual.
  if (normPrologue)
    dims.sharedBytes = static_cast<unsigned>(
        maxRows * inFeatures * 2 * (addNorm != GemvAddNorm::None ? 2 : 1));
  return dims;
}

GemvSpec GemvSpec::choose(int outFeatures, int inFeatures, int rows,
                          LinearOutput output, bool bias,
                          LinearEpilogue epilogue, bool normPrologue,
                          int /*multiprocessors*/) {
  if (rows < 1 || rows > kMaxRows)
    fail("linear_gemv handles 1..", kMaxRows, " rows, got ", rows,
         "; use the tensor-core GEMM (GemmSpec) for more");
  requirePositive(outFeatures, "out features (N)", "linear_gemv");
  GemvSpec spec;
  spec.inFeatures = inFeatures;
  spec.output = output;
  spec.bias = bias;
  spec.epilogue = epilogue;
  spec.normPrologue = normPrologue;
  spec.maxRows = nextPowerOfTwo(rows);
  // Measured on an H200 (test/gpu/NOTES.md): for 2 rows, 4 weight rows per
  // warp and K split over all 8 warps of a block stream best (short per-warp
  // chains, many blocks); one row has its own rule below, from a sweep
  // under the plan's fusions. With 8 rows the FMA work per weight byte grows: 2
  // rows per warp, K split 4 ways unless that leaves more than 4 chunks per
  // lane (K = 8192), then 8 ways.
  const int vectors = inFeatures / 8;
  if (spec.maxRows == 1) {
    // One row (batch-1 decode), measured on an H200 with the plan's fused
    // norm and epilogues (sol-kernel-check --only gemv_sweep, rotated
    // weights): K <= 3,072 runs 2 weight rows per warp with K over 4 warps
    // (1B gate/up 17.1 us against 20.4 with 4 rows over 8 warps, QKV 4.9
    // against 5.1, LM head 118 against 121); longer K 8 rows per warp,
    // K over 8 warps at 8,192 (1B down 10.0 against 11.6) and 4 warps
    // otherwise (8B down, K = 14,336: 29.0 against 31.0; 8B QKV and o,
    // K = 4,096: 13.8 and 10.0 against 14.2 and 10.1).
    //
    // Many rows of short K (N >= 8,192, K <= 3,584: gate/up projections,
    // Gemma-2-9B's QKV, LM heads) stream best as 4 weight rows a warp with
    // all of K in the warp: fewer, longer blocks, each warp with 16 loads in
    // flight (Gemma-3-4B gate/up 26.4 us against 30.1, Gemma-2-9B QKV 15.2
    // against 16.8, Phi-4-mini gate/up 24.8 against 25.7, 1B gate/up 16.7
    // against 17.4). At K = 4,096 (8B) it gains nothing.
    if (outFeatures >= 8192 && inFeatures <= 3584) {
      spec.rowsPerWarp = 4;
      spec.warpsK = 1;
      return spec;
    }
    spec.rowsPerWarp = inFeatures <= 3072 ? 2 : 8;
    spec.warpsK = inFeatures == 8192 ? 8 : 4;
    while (spec.warpsK > 1 && vectors / spec.warpsK < 32)
      spec.warpsK /= 2;
    return spec;
  }
  spec.rowsPerWarp = spec.maxRows <= 2 ? 4 : 2;
  const int preferredSplit =
      spec.maxRows <= 4 || vectors / (4 * 32) > 4 ? 8 : 4;
  // Keep at least 32 16-byte chunks (one per lane) in every K-slice.
  spec.warpsK = 1;
  while (spec.warpsK < preferredSplit && vectors / (spec.warpsK * 2) >= 32)
    spec.warpsK *= 2;
  return spec;
}

namespace {

const char *weightFormatName(WeightFormat format) {
  switch (format) {
  case WeightFormat::Int8:
    return "Int8";
  case WeightFormat::Int4:
    return "Int4";
  case WeightFormat::Fp8:
    return "Fp8";
  }
  return "?";
}

// K and the group size of a quantized weight for a kernel whose lanes load
// `vectorValues` values at a time and whose int4 groups must be a multiple
// of `groupMultiple`.
void checkQuantShape(WeightFormat format, int inFeatures, int groupSize,
                     int vectorValues, int groupMultiple, const char *kernel) {
  requirePositive(inFeatures, "in features (K)", kernel);
  // A lane loads 16 bytes of codes: 16 int8 or fp8 values, 32 int4 values.
  requireMultiple(inFeatures, vectorValues, "in features (K)", kernel);
  if (format == WeightFormat::Int4) {
    if (groupSize <= 0)
      fail(kernel, ": int4 weights need their group size, got ", groupSize);
    requireMultiple(groupSize, groupMultiple, "the int4 group size", kernel);
    requireMultiple(inFeatures, groupSize, "in features (K)", kernel);
  } else if (groupSize != 0) {
    fail(kernel, ": ", weightFormatName(format),
         " weights have one scale per row, not groups (group size ", groupSize,
         ")");
  }
}

// Codes, then a float scale per row (int8, fp8) or a float scale and a
// byte zero per group (int4).
long long quantWeightBytes(WeightFormat format, int outFeatures, int inFeatures,
                           int groupSize) {
  const long long n = outFeatures, k = inFeatures;
  if (format != WeightFormat::Int4)
    return n * k + 4 * n;
  return n * k / 2 + (groupSize > 0 ? n * (k / groupSize) * 5 : 0);
}

} // namespace

namespace {

/// The launch of a quantized single-pass linear: 256 threads, a block per
/// `featuresPerBlock` output features, `sharedBytes` of dynamic shared
/// memory.
LaunchDims quantLinearDims(int outFeatures, LinearEpilogue epilogue,
                           int featuresPerBlock, int sharedBytes,
                           const char *kernel) {
  requirePositive(outFeatures, "out features (N)", kernel);
  if (isGated(epilogue))
    requireMultiple(outFeatures, 2, "out features (N) of a gated epilogue",
                    kernel);
  LaunchDims dims;
  dims.block.x = 256;
  dims.grid.x = ceilDiv(outFeatures, featuresPerBlock);
  dims.sharedBytes = static_cast<unsigned>(sharedBytes);
  return dims;
}

} // namespace

long long QuantLinearShape::weightBytes(int outFeatures) const {
  return quantWeightBytes(format, outFeatures, inFeatures, groupSize);
}

KernelInstance QuantGemvSpec::instance() const {
  constexpr const char *kKernel = "linear_gemv_quant";
  // A 16-byte load must lie in one int4 group.
  checkQuantShape(format, inFeatures, groupSize, vectorValues(), 32, kKernel);
  if (maxRows != 1 && maxRows != 2 && maxRows != 4 && maxRows != 8)
    fail(kKernel, ": maxRows must be 1, 2, 4 or 8, got ", maxRows);
  if (warpsK != 1 && warpsK != 2 && warpsK != 4 && warpsK != 8)
    fail(kKernel, ": warpsK must be 1, 2, 4 or 8, got ", warpsK);
  if (rowsPerWarp != 1 && rowsPerWarp != 2 && rowsPerWarp != 4 &&
      rowsPerWarp != 8 && rowsPerWarp != 16)
    fail(kKernel, ": rowsPerWarp must be 1, 2, 4, 8 or 16, got ", rowsPerWarp);
  if (rowsPerWarp * maxRows > 32)
    fail(kKernel, ": rowsPerWarp * maxRows must be at most 32, got ",
         rowsPerWarp, " * ", maxRows);
  checkEpilogue(output, epilogue, kKernel);
  if (isGated(epilogue) && rowsPerWarp % 2 != 0)
    fail(kKernel, ": a gated epilogue needs an even rowsPerWarp");
  // Beside the dynamic x rows the kernel has at most about 1.5 KB of static
  // shared memory (its reductions' partial sums).
  if (sharedBytes() + 2048 > kMaxSharedBytes)
    fail(kKernel, ": ", sharedBytes(), " bytes of shared memory for ", maxRows,
         " rows of ", inFeatures, " features",
         normPrologue ? " with the norm prologue" : " of fp8 activations",
         ", more than the ", kMaxSharedBytes - 2048,
         " bytes a block may have beside its static shared memory");
  return {"LinearGemvQuant.cuh",
          cat(kNamespace, "linear_gemv_quant<sol::kernels::WeightFormat::",
              weightFormatName(format), ", ", inFeatures, ", ", maxRows, ", ",
              rowsPerWarp, ", ", warpsK, ", ", outputType(output), ", ",
              bias ? "true" : "false", ", ", static_cast<int>(epilogue), ", ",
              normPrologue ? "true" : "false", ", ", groupSize, ">")};
}

int QuantGemvSpec::sharedBytes() const {
  return normPrologue || format == WeightFormat::Fp8 ? maxRows * inFeatures * 2
                                                     : 0;
}

LaunchDims QuantGemvSpec::dims(int outFeatures) const {
  return quantLinearDims(outFeatures, epilogue, (8 / warpsK) * rowsPerWarp,
                         sharedBytes(), "linear_gemv_quant");
}

bool QuantGemvSpec::isLargeWeight(WeightFormat format, int outFeatures,
                                  int inFeatures) {
  const long long weights = static_cast<long long>(outFeatures) * inFeatures;
  return weights >= (format == WeightFormat::Int4 ? 24000000 : 32000000);
}

QuantGemvSpec QuantGemvSpec::choose(int outFeatures, int inFeatures, int rows,
                                    WeightFormat format, LinearOutput output,
                                    bool bias, LinearEpilogue epilogue,
                                    bool normPrologue, int groupSize) {
  if (rows < 1 || rows > kMaxRows)
    fail("linear_gemv_quant handles 1..", kMaxRows, " rows, got ", rows);
  requirePositive(outFeatures, "out features (N)", "linear_gemv_quant");
  requirePositive(inFeatures, "in features (K)", "linear_gemv_quant");
  QuantGemvSpec spec;
  static_cast<QuantLinearShape &>(spec) = {
      format, inFeatures, output, bias, epilogue, normPrologue, groupSize};
  spec.maxRows = nextPowerOfTwo(rows);
  // Counted in 16-byte loads (quant_gemv_sweep of sol-kernel-check, one
  // row on the H200): small weights run few weight rows per warp with K
  // over 4 warps (8 when every warp still gets 2 loads per lane); large ones
  // (int4 from 24 M weights, int8 from 32 M: the 8B QKV, gate/up and down,
  // the 1B gate/up) 8 rows a warp, which shares each x value over more
  // dequantized weights: 8B gate/up 34.5 -> 30.3 us (int4), 38.0 -> 34.7
  // (int8, K over 1 warp when N >= 16384), 8B down 19.5 -> 17.4 and
  // 23.7 -> 18.7. More rows keep fewer weight rows per warp as the FMA
  // work per byte grows. No warp gets less than one load per lane.
  const int vectors = inFeatures / spec.vectorValues();
  if (spec.maxRows == 1) {
    const bool large = isLargeWeight(format, outFeatures, inFeatures);
    // fp8 (every block quantizes x): one weight row a warp (two for the
    // SwiGLU pairs) with all of K unless large (H100: 1B QKV 6.0 against
    // 7.1 us with 2 rows over 4 warps, 8B o 10.4 against 10.9).
    const bool fp8Narrow = format == WeightFormat::Fp8 && !large;
    // fp8's 8 rows a warp would spill (16 bytes) at K = 14,336 with the
    // prologue's registers: two rows, all of K in the warp (8B down 28.2
    // against 27.9 us).
    const bool fp8LongK = format == WeightFormat::Fp8 && inFeatures > 8192;
    spec.rowsPerWarp = large && fp8LongK    ? 2
                       : large              ? 8
                       : fp8Narrow          ? (isGated(epilogue) ? 2 : 1)
                       : inFeatures <= 3072 ? 2
                                            : 4;
    spec.warpsK =
        fp8Narrow || fp8LongK                                           ? 1
        : large && format != WeightFormat::Int4 && outFeatures >= 16384 ? 1
        : large                                                         ? 4
        : vectors >= 8 * 64                                             ? 8
                                                                        : 4;
    while (spec.warpsK > 1 && vectors / spec.warpsK < 32)
      spec.warpsK /= 2;
  } else {
    spec.rowsPerWarp = spec.maxRows <= 2 ? 4 : 2;
    const int preferredSplit =
        spec.maxRows <= 4 || vectors / (4 * 32) > 4 ? 8 : 4;
    spec.warpsK = 1;
    while (spec.warpsK < preferredSplit && vectors / (spec.warpsK * 2) >= 32)
      spec.warpsK *= 2;
  }
  spec.instance(); // fails here for what the kernel cannot run
  return spec;
}

KernelInstance QuantGemvMmaSpec::instance() const {
  constexpr const char *kKernel = "linear_gemv_quant_mma";
  if (format != WeightFormat::Int4)
    fail(kKernel, ": int4 weights only, got ", weightFormatName(format));
  checkQuantShape(format, inFeatures, groupSize, vectorValues(), 32, kKernel);
  requireMultiple(inFeatures, 128, "in features (K)", kKernel);
  requireMultiple(groupSize, 128, "the int4 group size", kKernel);
  if (slicesK != 1 && slicesK != 2 && slicesK != 4 && slicesK != 8)
    fail(kKernel, ": slicesK must be 1, 2, 4 or 8, got ", slicesK);
  if (tiles * slicesK != 8)
    fail(kKernel, ": tiles x slicesK must be the block's 8 warps, got ", tiles,
         " x ", slicesK);
  if (depth < 1 || depth > 6)
    fail(kKernel, ": depth must be 1..6 blocks, got ", depth);
  checkEpilogue(output, epilogue, kKernel);
  if (sharedBytes() + 2048 > QuantGemvSpec::kMaxSharedBytes)
    fail(kKernel, ": ", sharedBytes(), " bytes of shared memory for ",
         inFeatures, " features, more than a block may have");
  return {"LinearGemvQuantMma.cuh",
          cat(kNamespace, "linear_gemv_quant_mma<", inFeatures, ", ", tiles,
              ", ", slicesK, ", ", depth, ", ", outputType(output), ", ",
              bias ? "true" : "false", ", ", static_cast<int>(epilogue), ", ",
              normPrologue ? "true" : "false", ", ", groupSize, ">")};
}

int QuantGemvMmaSpec::sharedBytes() const {
  // LinearGemvQuantMma.cuh's quant_gemv_mma::sharedBytes.
  return inFeatures * 2 + (normPrologue ? inFeatures * 2 : 0);
}

LaunchDims QuantGemvMmaSpec::dims(int outFeatures) const {
  return quantLinearDims(outFeatures, epilogue, 16 * tiles, sharedBytes(),
                         "linear_gemv_quant_mma");
}

bool QuantGemvMmaSpec::runs(WeightFormat format, int inFeatures,
                            int groupSize) {
  return format == WeightFormat::Int4 && inFeatures % 128 == 0 &&
         groupSize > 0 && groupSize % 128 == 0 && inFeatures % groupSize == 0;
}

QuantGemvMmaSpec QuantGemvMmaSpec::choose(int inFeatures, LinearOutput output,
                                          bool bias, LinearEpilogue epilogue,
                                          bool normPrologue, int groupSize) {
  requirePositive(inFeatures, "in features (K)", "linear_gemv_quant_mma");
  QuantGemvMmaSpec spec;
  static_cast<QuantLinearShape &>(spec) = {
      WeightFormat::Int4, inFeatures,   output,   bias,
      epilogue,           normPrologue, groupSize};
  const int blocks = inFeatures / 128;
  spec.slicesK = 8;
  while (spec.slicesK > 1 && blocks / spec.slicesK < 4)
    spec.slicesK /= 2;
  spec.tiles = 8 / spec.slicesK;
  spec.depth = 4;
  spec.instance(); // fails here for what the kernel cannot run
  return spec;
}

KernelInstance QuantizeRowsFp8Spec::instance() const {
  const char *kernel = norm ? "rms_norm_quantize_fp8" : "quantize_rows_fp8";
  requirePositive(features, "features (K)", kernel);
  requireMultiple(features, 128, "features (K)", kernel);
  if (features > 128 * 256)
    fail(kernel, ": at most 32768 features, got ", features);
  return {"QuantizeActivations.cuh",
          cat(kNamespace, kernel, "<", features, ">")};
}

LaunchDims QuantizeRowsFp8Spec::dims(int rows) const {
  requirePositive(rows, "rows", "quantize_rows_fp8");
  LaunchDims dims;
  dims.block.x = 256;
  dims.grid.x = static_cast<unsigned>(rows);
  return dims;
}

KernelInstance RepeatScalesSpec::instance() const {
  return {"QuantizeActivations.cuh", cat(kNamespace, "repeat_scales")};
}

LaunchDims RepeatScalesSpec::dims(long long values) const {
  LaunchDims dims;
  dims.block.x = 256;
  dims.grid.x = std::max(1u, ceilDiv(values, 256));
  return dims;
}

KernelInstance DequantizeSpec::instance() const {
  constexpr const char *kKernel = "dequantize_weight";
  if (format == WeightFormat::Int4 ? groupSize <= 0 || groupSize % 32 != 0
                                   : groupSize != 0)
    fail(kKernel, ": ", weightFormatName(format),
         " weights cannot have groups of ", groupSize,
         " (int4: a multiple of 32; int8 and fp8: none)");
  return {"Dequantize.cuh",
          cat(kNamespace, "dequantize_weight<sol::kernels::WeightFormat::",
              weightFormatName(format), ", ", groupSize, ">")};
}

LaunchDims DequantizeSpec::dims(int outFeatures, int inFeatures) const {
  const int values = format == WeightFormat::Int4 ? 32 : 16;
  requirePositive(outFeatures, "out features (N)", "dequantize_weight");
  requireMultiple(inFeatures, values, "in features (K)", "dequantize_weight");
  // A few waves of 16-byte vectors; the kernel loops over the rest.
  LaunchDims dims =
      vectorDims(static_cast<long long>(outFeatures) * (inFeatures / values));
  dims.grid.x = std::min(dims.grid.x, 132u * 8);
  return dims;
}

KernelInstance SkinnySpec::instance() const {
  requirePositive(inFeatures, "in features (K)", "linear_skinny");
  requireMultiple(inFeatures, 8, "in features (K)", "linear_skinny");
  if (maxRows != 8 && maxRows != 16)
    fail("linear_skinny: maxRows must be 8 or 16, got ", maxRows);
  if (tiles != 1 && tiles != 2)
    fail("linear_skinny: tiles must be 1 or 2, got ", tiles);
  if (warpsK != 1 && warpsK != 2 && warpsK != 4 && warpsK != 8)
    fail("linear_skinny: warpsK must be 1, 2, 4 or 8, got ", warpsK);
  checkEpilogue(output, epilogue, "linear_skinny");
  if (!fits())
    fail("linear_skinny: ", sharedBytes(), " bytes of shared memory for ",
         maxRows, " rows of ", inFeatures, " features",
         normPrologue ? " with the norm prologue" : "", ", more than the ",
         kMaxSharedBytes / 1024, " KB a block may have");
  return {"LinearSkinny.cuh",
          cat(kNamespace, "linear_skinny<", inFeatures, ", ", maxRows, ", ",
              tiles, ", ", warpsK, ", ", outputType(output), ", ",
              bias ? "true" : "false", ", ", static_cast<int>(epilogue), ", ",
              normPrologue ? "true" : "false", l2Prefetch ? ", true" : "",
              ">")};
}

// SkinnyShape::kSharedBytes of LinearSkinny.cuh.
int SkinnySpec::sharedBytes() const {
  const int xBytes = normPrologue ? maxRows * (inFeatures + 32) * 2 : 0;
  const int reduceBytes = warpsK * maxRows * (featuresPerBlock() + 4) * 4;
  const int normBytes = normPrologue ? maxRows * 8 * 4 : 0;
  return xBytes + reduceBytes + normBytes;
}

LaunchDims SkinnySpec::dims(int outFeatures) const {
  requirePositive(outFeatures, "out features (N)", "linear_skinny");
  if (isGated(epilogue))
    requireMultiple(outFeatures, 2, "out features (N) of a gated epilogue",
                    "linear_skinny");
  LaunchDims dims;
  dims.block.x = kThreads;
  dims.grid.x = ceilDiv(outFeatures, featuresPerBlock());
  dims.sharedBytes = static_cast<unsigned>(sharedBytes());
  return dims;
}

namespace {

// Up to 8 rows: the (tiles, warpsK) with the most blocks that still run in
// one wave of two blocks per SM (ties: more warps along K), then two tiles
// a warp when its K slice is at most 8 k steps (unless that leaves fewer
// blocks than half the SMs); false (spec untouched) when
// no configuration fits one wave. From the 8-row sweep of linear_skinny
// under the plans' norm and epilogues (sol-kernel-check --only gemv_sweep
// on the H200): a second
// partial wave costs more than narrower blocks (Llama-3.1-8B QKV 25.5 us
// at 384 blocks against 20.4 at 192, gate/up 74.5 at 448 against 69.9 at
// 224), and a warp of 8 k steps keeps too few loads in flight with one
// tile (Llama-3.2-1B o 5.4 us against 4.7 with two).
template <typename Spec>
bool chooseOneWave(Spec &spec, int outFeatures, int steps, long long wave) {
  int bestTiles = 0, bestWarpsK = 0;
  long long bestBlocks = 0;
  for (int warpsK = spec.warpsK; warpsK >= 1; warpsK /= 2)
    for (int tiles : {1, 2}) {
      const long long features = 16LL * tiles * (8 / warpsK);
      const long long blocks = (outFeatures + features - 1) / features;
      if (blocks <= wave && blocks > bestBlocks) {
        bestBlocks = blocks;
        bestTiles = tiles;
        bestWarpsK = warpsK;
      }
    }
  if (bestBlocks == 0)
    return false;
  spec.tiles = bestTiles;
  spec.warpsK = bestWarpsK;
  if (spec.tiles == 1 && steps / spec.warpsK <= 8 && 4 * bestBlocks >= wave)
    spec.tiles = 2;
  return true;
}

// linear_skinny's tiles and warps along K for `steps` k steps of 64 bytes
// of a weight row (32 bf16 values; 64 int8 or fp8, 128 int4 values) and
// spec.maxRows rows. K is split over all 8 warps of a block, as
// linear_gemv does best, unless a warp would get fewer than two steps. Up
// to 8 rows, chooseOneWave. Otherwise every block reads (and under the
// norm prologue normalises) all of x, so wider blocks cost less L2 traffic
// per weight byte: two tiles per warp, then two warps along N, as long as
// there are still two blocks per SM (the narrow projections, N =
// 2,048..6,144, stay at one tile per block: 128..384 blocks).
template <typename Spec>
void chooseSkinnyGeometry(Spec &spec, int outFeatures, int steps,
                          int multiprocessors) {
  spec.warpsK = 8;
  while (spec.warpsK > 1 && steps < 2 * spec.warpsK)
    spec.warpsK /= 2;
  const long long wanted = 2LL * multiprocessors;
  auto blocks = [&](int features) {
    return (static_cast<long long>(outFeatures) + features - 1) / features;
  };
  if (spec.maxRows == 8 && chooseOneWave(spec, outFeatures, steps, wanted))
    return;
  if (blocks(32 * (8 / spec.warpsK)) >= wanted)
    spec.tiles = 2;
  if (spec.tiles == 2 && spec.warpsK == 8 && steps >= 32 &&
      blocks(64) >= wanted)
    spec.warpsK = 4;
}

} // namespace

SkinnySpec SkinnySpec::choose(int outFeatures, int inFeatures, int rows,
                              LinearOutput output, bool bias,
                              LinearEpilogue epilogue, bool normPrologue,
                              int multiprocessors) {
  if (rows < 1 || rows > kMaxRows)
    fail("linear_skinny handles 1..", kMaxRows, " rows, got ", rows,
         "; use the tensor-core GEMM (GemmSpec) for more");
  requirePositive(outFeatures, "out features (N)", "linear_skinny");
  requirePositive(inFeatures, "in features (K)", "linear_skinny");
  SkinnySpec spec;
  spec.inFeatures = inFeatures;
  spec.output = output;
  spec.bias = bias;
  spec.epilogue = epilogue;
  spec.normPrologue = normPrologue;
  spec.maxRows = rows <= 8 ? 8 : 16;
  chooseSkinnyGeometry(spec, outFeatures, (inFeatures + 31) / 32,
                       multiprocessors);
  return spec;
}

KernelInstance QuantSkinnySpec::instance() const {
  constexpr const char *kKernel = "linear_skinny_quant";
  // A k step of int4 (4 lanes x 32 values) must lie in one group.
  checkQuantShape(format, inFeatures, groupSize, vectorValues(), 128, kKernel);
  if (maxRows != 8 && maxRows != 16)
    fail(kKernel, ": maxRows must be 8 or 16, got ", maxRows);
  if (tiles != 1 && tiles != 2)
    fail(kKernel, ": tiles must be 1 or 2, got ", tiles);
  if (warpsK != 1 && warpsK != 2 && warpsK != 4 && warpsK != 8)
    fail(kKernel, ": warpsK must be 1, 2, 4 or 8, got ", warpsK);
  checkEpilogue(output, epilogue, kKernel);
  if (!fits())
    fail(kKernel, ": ", sharedBytes() + staticSharedBytes(),
         " bytes of shared memory for ", maxRows, " rows of ", inFeatures,
         " features", format == WeightFormat::Fp8 ? " of fp8 activations" : "",
         normPrologue ? " with the norm prologue" : "", ", more than the ",
         kMaxSharedBytes / 1024, " KB a block may have");
  return {"LinearSkinnyQuant.cuh",
          cat(kNamespace, "linear_skinny_quant<sol::kernels::WeightFormat::",
              weightFormatName(format), ", ", inFeatures, ", ", maxRows, ", ",
              tiles, ", ", warpsK, ", ", outputType(output), ", ",
              bias ? "true" : "false", ", ", static_cast<int>(epilogue), ", ",
              normPrologue ? "true" : "false", ", ", groupSize, ">")};
}

// QuantSkinnyShape::kSharedBytes of LinearSkinnyQuant.cuh.
int QuantSkinnySpec::sharedBytes() const {
  const bool fp8 = format == WeightFormat::Fp8;
  const int k = inFeatures;
  const int xBytes = normPrologue ? maxRows * ((k + 63) / 64 * 64 + 8) * 2 : 0;
  const int qBytes = fp8 ? maxRows * ((k + 127) / 128 * 128 + 64) : 0;
  const int reduceBytes = warpsK * maxRows * (featuresPerBlock() + 4) * 4;
  const int normBytes = normPrologue ? maxRows * 8 * 4 : 0;
  const int scaleBytes = fp8 ? maxRows * 4 : 0;
  return std::max(xBytes + qBytes, reduceBytes) + normBytes + scaleBytes;
}

// quant_gemv::quantizeRowsFp8's partial maxima, [maxRows][8 warps].
int QuantSkinnySpec::staticSharedBytes() const {
  return format == WeightFormat::Fp8 ? maxRows * 8 * 4 : 0;
}

LaunchDims QuantSkinnySpec::dims(int outFeatures) const {
  return quantLinearDims(outFeatures, epilogue, featuresPerBlock(),
                         sharedBytes(), "linear_skinny_quant");
}

QuantSkinnySpec QuantSkinnySpec::choose(int outFeatures, int inFeatures,
                                        int rows, WeightFormat format,
                                        LinearOutput output, bool bias,
                                        LinearEpilogue epilogue,
                                        bool normPrologue, int groupSize,
                                        int multiprocessors) {
  constexpr const char *kKernel = "linear_skinny_quant";
  if (rows < 1 || rows > kMaxRows)
    fail(kKernel, " handles 1..", kMaxRows, " rows, got ", rows);
  requirePositive(outFeatures, "out features (N)", kKernel);
  QuantSkinnySpec spec;
  static_cast<QuantLinearShape &>(spec) = {
      format, inFeatures, output, bias, epilogue, normPrologue, groupSize};
  spec.maxRows = rows <= 8 ? 8 : 16;
  checkQuantShape(format, inFeatures, groupSize, spec.vectorValues(), 128,
                  kKernel);
  checkEpilogue(output, epilogue, kKernel);
  // linear_skinny's rule, not yet measured for the quantized formats: a
  // step of 64 bytes of a row is what a warp's lanes load per k step in
  // both kernels.
  const int rowBytes =
      format == WeightFormat::Int4 ? inFeatures / 2 : inFeatures;
  chooseSkinnyGeometry(spec, outFeatures, (rowBytes + 63) / 64,
                       multiprocessors);
  return spec;
}

KernelInstance GemmSpec::instance() const {
  if (tileM % (warpsM * 16) != 0 || tileN % (warpsN * 16) != 0)
    fail("linear_gemm: tile ", tileM, "x", tileN, " does not split into ",
         warpsM, "x", warpsN, " warps of 16-multiples");
  checkEpilogue(output, epilogue, "linear_gemm");
  if (splitK < 1)
    fail("linear_gemm: splitK must be >= 1, got ", splitK);
  // A split GEMM writes fp32 partial sums; bias and epilogue come later.
  const bool split = splitK > 1;
  return {"LinearGemm.cuh", cat(kNamespace, "linear_gemm<", tileM, ", ", tileN,
                                ", ", warpsM, ", ", warpsN, ", ", stages, ", ",
                                outputType(split ? LinearOutput::Fp32 : output),
                                ", ", bias && !split ? "true" : "false", ", ",
                                split ? 0 : static_cast<int>(epilogue), ", ",
                                split ? "true" : "false", ">")};
}

KernelInstance GemmSpec::finalizeInstance() const {
  checkEpilogue(output, epilogue, "linear_splitk_finalize");
  return {"LinearGemm.cuh",
          cat(kNamespace, "linear_splitk_finalize<", outputType(output), ", ",
              bias ? "true" : "false", ", ", static_cast<int>(epilogue), ">")};
}

LaunchDims GemmSpec::finalizeDims(int rows, int outFeatures) const {
  LaunchDims dims;
  dims.block.x = 256;
  const long long pairs = static_cast<long long>(rows) * (outFeatures / 2);
  dims.grid.x = static_cast<unsigned>(
      std::clamp<long long>((pairs + 255) / 256, 1, 4096));
  return dims;
}

int GemmSpec::sharedBytes() const { return stages * (tileM + tileN) * 64 * 2; }

LaunchDims GemmSpec::dims(int rows, int outFeatures) const {
  requirePositive(rows, "rows (M)", "linear_gemm");
  // Loads are bounded by N row by row; the epilogue stores column pairs
  // (a router of 60 experts is a legal N).
  requireMultiple(outFeatures, 2, "out features (N)", "linear_gemm");
  LaunchDims dims;
  dims.block.x = static_cast<unsigned>(threads());
  dims.grid.x = ceilDiv(rows, tileM);
  dims.grid.y = ceilDiv(outFeatures, tileN);
  dims.grid.z = static_cast<unsigned>(splitK);
  dims.sharedBytes = static_cast<unsigned>(sharedBytes());
  return dims;
}

GemmSpec GemmSpec::choose(int rows, int outFeatures, LinearOutput output,
                          bool bias, LinearEpilogue epilogue,
                          int multiprocessors, int inFeatures) {
  GemmSpec large; // 128x128, 8 warps, 3 stages
  large.output = output;
  large.bias = bias;
  large.epilogue = epilogue;
  const long long largeBlocks =
      static_cast<long long>(large.dims(rows, outFeatures).grid.x) *
      large.dims(rows, outFeatures).grid.y;
  if (largeBlocks >= 2LL * multiprocessors)
    return large;
  // Too few large tiles to fill the GPU: 64x128 tiles, 4 warps, 4 stages.
  GemmSpec medium{64, 128, 2, 2, 4, output, bias, epilogue};
  // Few rows (batched decode): split K until about two blocks per
  // multiprocessor stream weights, keeping at least 4 K tiles per split.
  const long long blocks =
      static_cast<long long>(medium.dims(rows, outFeatures).grid.x) *
      medium.dims(rows, outFeatures).grid.y;
  const int kTiles = ceilDiv(inFeatures, 64);
  if (rows <= 128 && inFeatures > 0 && blocks < multiprocessors)
    medium.splitK = static_cast<int>(std::clamp<long long>(
        std::min<long long>((2LL * multiprocessors + blocks - 1) / blocks,
                            kTiles / 4),
        1, 8));
  return medium;
}

namespace {

/// The weights the mixed-input GEMMs take: int8 (no groups) or int4 in
/// groups of a multiple of 64.
void checkQuantGemmWeights(WeightFormat format, int groupSize,
                           const char *kernel) {
  if (format == WeightFormat::Fp8)
    fail(kernel, ": fp8 weights are not supported (int8 and int4 are)");
  if (format == WeightFormat::Int4) {
    if (groupSize <= 0)
      fail(kernel, ": int4 weights need their group size, got ", groupSize);
    requireMultiple(groupSize, 64, "the int4 group size", kernel);
  } else if (groupSize != 0) {
    fail(kernel,
         ": int8 weights have one scale per row, not groups (group "
         "size ",
         groupSize, ")");
  }
}

/// linear_splitk_finalize for a split GEMM's output, bias and epilogue.
KernelInstance splitKFinalize(LinearOutput output, bool bias,
                              LinearEpilogue epilogue) {
  GemmSpec gemm;
  gemm.output = output;
  gemm.bias = bias;
  gemm.epilogue = epilogue;
  return gemm.finalizeInstance();
}

} // namespace

bool QuantGemmSpec::supports(WeightFormat format, int outFeatures,
                             int inFeatures, int groupSize) {
  if (format == WeightFormat::Fp8 || inFeatures <= 0 || inFeatures % 64 != 0 ||
      outFeatures <= 0 || outFeatures % 8 != 0)
    return false;
  return format != WeightFormat::Int4 ||
         (groupSize > 0 && groupSize % 64 == 0 && inFeatures % groupSize == 0);
}

/// The template arguments both mixed-input GEMMs end with: output type,
/// bias, epilogue, split K, group size (a split writes fp32 sums with
/// neither bias nor epilogue; linear_splitk_finalize applies them).
static std::string quantGemmEpilogueArgs(LinearOutput output, bool bias,
                                         LinearEpilogue epilogue, bool split,
                                         int groupSize) {
  return cat(outputType(split ? LinearOutput::Fp32 : output), ", ",
             bias && !split ? "true" : "false", ", ",
             split ? 0 : static_cast<int>(epilogue), ", ",
             split ? "true" : "false", ", ", groupSize, ">");
}

KernelInstance QuantGemmSpec::instance() const {
  constexpr const char *kKernel = "linear_gemm_quant";
  checkQuantGemmWeights(format, groupSize, kKernel);
  if (tileM % (warpsM * 16) != 0 || tileN % (warpsN * 16) != 0)
    fail(kKernel, ": tile ", tileM, "x", tileN, " does not split into ", warpsM,
         "x", warpsN, " warps of 16-multiples");
  if (stages < 2)
    fail(kKernel, ": at least two stages, got ", stages);
  if (kSub != 1 && kSub != 2 && kSub != 4)
    fail(kKernel, ": 1, 2 or 4 sub-tiles a stage, got ", kSub);
  checkEpilogue(output, epilogue, kKernel);
  if (splitK < 1)
    fail(kKernel, ": splitK must be >= 1, got ", splitK);
  const bool split = splitK > 1;
  return {"LinearGemmQuant.cuh",
          cat(kNamespace, "linear_gemm_quant<sol::kernels::WeightFormat::",
              weightFormatName(format), ", ", tileM, ", ", tileN, ", ", warpsM,
              ", ", warpsN, ", ", stages, ", ", kSub, ", ",
              quantGemmEpilogueArgs(output, bias, epilogue, split, groupSize))};
}

KernelInstance QuantGemmSpec::finalizeInstance() const {
  return splitKFinalize(output, bias, epilogue);
}

LaunchDims QuantGemmSpec::finalizeDims(int rows, int outFeatures) const {
  return GemmSpec{}.finalizeDims(rows, outFeatures);
}

int QuantGemmSpec::sharedBytes() const {
  const int codeBytes = format == WeightFormat::Int4 ? 32 : 64;
  return stages * kSub * (tileM * 64 * 2 + tileN * codeBytes);
}

long long QuantGemmSpec::weightBytes(int outFeatures, int inFeatures) const {
  return quantWeightBytes(format, outFeatures, inFeatures, groupSize);
}

LaunchDims QuantGemmSpec::dims(int rows, int outFeatures) const {
  requirePositive(rows, "rows (M)", "linear_gemm_quant");
  requireMultiple(outFeatures, 8, "out features (N)", "linear_gemm_quant");
  LaunchDims dims;
  dims.block.x = static_cast<unsigned>(threads());
  dims.grid.x = static_cast<unsigned>(ceilDiv(rows, tileM) *
                                      ceilDiv(outFeatures, tileN) * splitK);
  dims.sharedBytes = static_cast<unsigned>(sharedBytes());
  return dims;
}

void QuantGemmSpec::splitFor(int rows, int outFeatures, int inFeatures,
                             int multiprocessors) {
  const long long blocks = static_cast<long long>(ceilDiv(rows, tileM)) *
                           ceilDiv(outFeatures, tileN);
  const int stageTiles = ceilDiv(inFeatures / 64, kSub);
  splitK = 1;
  if (blocks < 2LL * multiprocessors)
    splitK = static_cast<int>(std::clamp<long long>(
        std::min<long long>({(2LL * multiprocessors + blocks - 1) / blocks,
                             inFeatures / 512, stageTiles}),
        1, 8));
}

QuantGemmSpec QuantGemmSpec::choose(int rows, int outFeatures, int inFeatures,
                                    WeightFormat format, LinearOutput output,
                                    bool bias, LinearEpilogue epilogue,
                                    int groupSize, int multiprocessors) {
  QuantGemmSpec spec;
  spec.format = format;
  spec.output = output;
  spec.bias = bias;
  spec.epilogue = epilogue;
  spec.groupSize = format == WeightFormat::Int4 ? groupSize : 0;
  // One warp along M, so that each code is dequantized once a block; the
  // row bucket's tile up to 64 rows (more rows: neighbouring blocks share
  // each code tile through L2). Stages and sub-tiles as measured on the
  // H200 (sol-kernel-check --only quant_gemm, Llama-3.2-1B and 3.1-8B
  // decode shapes; docs/gpu.md): at 16 rows a stage reads 128 bytes of
  // each W row (int8 2 sub-tiles in 3 stages, int4 4 in 4); with more rows
  // the x tiles grow with the stage's k and fewer registers win (int8 1
  // sub-tile in 4 stages, int4 2 in 3).
  const bool int4 = format == WeightFormat::Int4;
  spec.tileM = std::min(rows, 64);
  spec.warpsM = 1;
  spec.warpsN = 8;
  if (rows <= 16) {
    spec.kSub = int4 ? 4 : 2;
    spec.stages = int4 ? 4 : 3;
  } else {
    spec.kSub = int4 ? 2 : 1;
    spec.stages = int4 ? 3 : 4;
  }
  spec.splitFor(rows, outFeatures, inFeatures, multiprocessors);
  return spec;
}

KernelInstance QuantWgmmaSpec::instance() const {
  constexpr const char *kKernel = "linear_wgmma_quant";
  checkQuantGemmWeights(format, groupSize, kKernel);
  if (tokens != 16 && tokens != 32 && tokens != 64 && tokens != 128)
    fail(kKernel, ": 16, 32, 64 or 128 tokens a block, got ", tokens);
  if (warpGroups != 1 && warpGroups != 2 && warpGroups != 4)
    fail(kKernel, ": one, two or four warpgroups, got ", warpGroups);
  if (stages < 3)
    fail(kKernel, ": at least three stages, got ", stages);
  if (kSub != 1 && kSub != 2 && kSub != 4)
    fail(kKernel, ": 1, 2 or 4 sub-tiles a stage, got ", kSub);
  checkEpilogue(output, epilogue, kKernel);
  if (splitK < 1)
    fail(kKernel, ": splitK must be >= 1, got ", splitK);
  const bool split = splitK > 1;
  return {"LinearWgmmaQuant.cuh",
          cat(kNamespace, "linear_wgmma_quant<sol::kernels::WeightFormat::",
              weightFormatName(format), ", ", tokens, ", ", warpGroups, ", ",
              stages, ", ", kSub, ", ",
              quantGemmEpilogueArgs(output, bias, epilogue, split, groupSize))};
}

KernelInstance Fp8WgmmaSpec::instance() const {
  constexpr const char *kKernel = "linear_wgmma_fp8";
  if (tileN != 128 && tileN != 256)
    fail(kKernel, ": 128 or 256 columns a block, got ", tileN);
  if (stages < 2)
    fail(kKernel, ": at least two stages, got ", stages);
  if (!fits())
    fail(kKernel, ": ", stages, " stages of ", tileN, " columns need ",
         sharedBytes(), " bytes of shared memory, more than ", kMaxSharedBytes);
  return {"LinearWgmmaFp8.cuh",
          cat(kNamespace, "linear_wgmma_fp8<", tileN, ", ", stages, ", ",
              bias ? "true" : "false", ", ", static_cast<int>(epilogue), ">")};
}

int Fp8WgmmaSpec::sharedBytes() const {
  return kTileM * tileN * 2 + stages * (kTileM + tileN) * kTileK + 1024;
}

int Fp8WgmmaSpec::tiles(int rows, int outFeatures) const {
  return static_cast<int>(ceilDiv(rows, kTileM) * ceilDiv(outFeatures, tileN));
}

LaunchDims Fp8WgmmaSpec::dims(int rows, int outFeatures,
                              int multiprocessors) const {
  requirePositive(rows, "rows (M)", "linear_wgmma_fp8");
  requireMultiple(outFeatures, 8, "out features (N)", "linear_wgmma_fp8");
  requirePositive(multiprocessors, "multiprocessors", "linear_wgmma_fp8");
  LaunchDims dims;
  dims.block.x = kThreads;
  dims.grid.x = static_cast<unsigned>(
      std::min(tiles(rows, outFeatures), multiprocessors));
  dims.sharedBytes = static_cast<unsigned>(sharedBytes());
  return dims;
}

bool Fp8WgmmaSpec::outrunsCublas(int rows, int outFeatures, int inFeatures,
                                 int multiprocessors) const {
  const long long steps = static_cast<long long>(tiles(rows, outFeatures)) *
                          ceilDiv(inFeatures, kTileK);
  return steps >= static_cast<long long>(kMinStepsPerBlock) * multiprocessors;
}

bool Fp8WgmmaSpec::supports(int outFeatures, int inFeatures) {
  return outFeatures > 0 && inFeatures > 0 && outFeatures % 8 == 0 &&
         inFeatures % 16 == 0;
}

Fp8WgmmaSpec Fp8WgmmaSpec::choose(bool bias, LinearEpilogue epilogue) {
  Fp8WgmmaSpec spec;
  spec.bias = bias;
  spec.epilogue = epilogue;
  // 256 columns leave no registers for the bias pairs (ptxas spills).
  if (bias) {
    spec.tileN = 128;
    spec.stages = 5;
  }
  return spec;
}

KernelInstance QuantWgmmaSpec::finalizeInstance() const {
  return splitKFinalize(output, bias, epilogue);
}

LaunchDims QuantWgmmaSpec::finalizeDims(int rows, int outFeatures) const {
  return GemmSpec{}.finalizeDims(rows, outFeatures);
}

int QuantWgmmaSpec::sharedBytes() const {
  const int codeBytes = format == WeightFormat::Int4 ? 32 : 64;
  return stages * kSub * (tokens * 128 + tileN() * codeBytes);
}

long long QuantWgmmaSpec::weightBytes(int outFeatures, int inFeatures) const {
  return quantWeightBytes(format, outFeatures, inFeatures, groupSize);
}

LaunchDims QuantWgmmaSpec::dims(int rows, int outFeatures) const {
  requirePositive(rows, "rows (M)", "linear_wgmma_quant");
  requireMultiple(outFeatures, 8, "out features (N)", "linear_wgmma_quant");
  LaunchDims dims;
  dims.block.x = static_cast<unsigned>(threads());
  dims.grid.x = static_cast<unsigned>(ceilDiv(rows, tokens) *
                                      ceilDiv(outFeatures, tileN()) * splitK);
  dims.sharedBytes = static_cast<unsigned>(sharedBytes());
  return dims;
}

void QuantWgmmaSpec::splitFor(int rows, int outFeatures, int inFeatures,
                              int multiprocessors) {
  // Only while the tiles leave multiprocessors idle: a split's fp32 atomics
  // cost more than a second wave of blocks (8B gate/up at 64 rows on an
  // H100: 77 us whole, 109 us in two slices).
  const long long blocks = static_cast<long long>(ceilDiv(rows, tokens)) *
                           ceilDiv(outFeatures, tileN());
  splitK = 1;
  if (blocks < multiprocessors)
    splitK = static_cast<int>(std::clamp<long long>(
        std::min<long long>({ceilDiv(multiprocessors, blocks), inFeatures / 512,
                             ceilDiv(inFeatures / 64, kSub)}),
        1, 8));
}

QuantWgmmaSpec QuantWgmmaSpec::choose(int rows, int outFeatures, int inFeatures,
                                      WeightFormat format, LinearOutput output,
                                      bool bias, LinearEpilogue epilogue,
                                      int groupSize, int multiprocessors) {
  QuantWgmmaSpec spec;
  spec.format = format;
  spec.output = output;
  spec.bias = bias;
  spec.epilogue = epilogue;
  spec.groupSize = format == WeightFormat::Int4 ? groupSize : 0;
  // The row bucket's rows a block (wgmma's N); two warpgroups share each x
  // tile. Stages and sub-tiles as measured on an H100 (sol-kernel-check
  // --only quant_gemm, Llama-3.1-8B decode shapes; docs/gpu.md): up to 64
  // rows 2 sub-tiles in 3 stages (two blocks a multiprocessor; 4 stages
  // leave one), at 128 rows 1 sub-tile in 4.
  spec.tokens = std::clamp(rows, 16, 128);
  spec.warpGroups = 2;
  spec.stages = spec.tokens <= 64 ? 3 : 4;
  spec.kSub = spec.tokens <= 64 ? 2 : 1;
  spec.splitFor(rows, outFeatures, inFeatures, multiprocessors);
  // A matrix whose tiles fill at most half of the multiprocessors takes
  // four warpgroups (each x tile serves 256 columns) when K splits far
  // enough that the slices still make about a wave: Llama-3.1-8B's QKV, o
  // and down at 32-128 rows, 4-44% faster on an H100 (sol-kernel-check
  // --only quant_gemm; 64 rows, int8: QKV 32.3 -> 24.4 us, down 56.4 ->
  // 40.9; int4 QKV at 32 rows 29.5 -> 17.7; 128 rows, int4: down 106.6 ->
  // 72.0, o 37.3 -> 29.4). Llama-3.2-1B's shorter K cannot split that far,
  // and four warpgroups lost there (QKV 12.8 -> 16.2 us at 64 rows, 17.6 ->
  // 24.0 at 128), as they did for its gate/up (128 tiles: 32.1 -> 39.7).
  const long long tiles = static_cast<long long>(ceilDiv(rows, spec.tokens)) *
                          ceilDiv(outFeatures, spec.tileN());
  if (2 * tiles <= multiprocessors) {
    QuantWgmmaSpec wide = spec;
    wide.warpGroups = 4;
    wide.splitFor(rows, outFeatures, inFeatures, multiprocessors);
    const long long slices =
        static_cast<long long>(ceilDiv(rows, wide.tokens)) *
        ceilDiv(outFeatures, wide.tileN()) * wide.splitK;
    if (10 * slices >= 9LL * multiprocessors && wide.fits())
      spec = wide;
  }
  return spec;
}

KernelInstance RopeKvWriteSpec::instance() const {
  requireMultiple(headDim, 16, "head_dim", "rope_kv_write");
  if (kvHeads <= 0 || qHeads % kvHeads != 0)
    fail("rope_kv_write: ", qHeads, " query heads do not split into ", kvHeads,
         " kv heads");
  requireKvBlockSize(blockSize, "rope_kv_write");
  if (fp8)
    requireFp8HeadDim(headDim, "rope_kv_write_fp8");
  return {"RopeKvWrite.cuh",
          cat(kNamespace, fp8 ? "rope_kv_write_fp8<" : "rope_kv_write<", qHeads,
              ", ", kvHeads, ", ", headDim, ", ", blockSize, ">")};
}
LaunchDims RopeKvWriteSpec::dims(int tokens) const {
  LaunchDims dims;
  dims.grid.x = static_cast<unsigned>(std::max(tokens, 1));
  dims.block.x = 128;
  return dims;
}

KernelInstance PagedAttentionSpec::instance() const {
  // 16 bytes of a position per lane, at most a warp a position (head dims
  // that are not a power of two use the next power of two lanes).
  if (headDim <= 0 || headDim % 8 != 0 || headDim > 256)
    fail("paged_attention: head_dim ", headDim,
         " is not supported (a multiple of 8 up to 256)");
  if (kvHeads <= 0 || qHeads % kvHeads != 0)
    fail("paged_attention: ", qHeads, " query heads do not split into ",
         kvHeads, " kv heads");
  requireKvBlockSize(blockSize, "paged_attention");
  if (fp8)
    requireFp8HeadDim(headDim, "paged_attention_fp8");
  if (fusedRope && !fusedRopeSupported())
    fail("paged_attention: no fused-rope variant for head_dim ", headDim,
         fp8 ? " with an fp8 cache" : "");
  if (preloadWalk && !fusedRope)
    fail("paged_attention: the walk preload needs the fused rope");
  if (qkNorm && !fusedRope)
    fail("paged_attention: the q/k head norm needs the fused rope");
  if (headSplit != 1 && (!preloadWalk || headSplit > kMaxHeadSplit ||
                         (headSplit & (headSplit - 1)) != 0 ||
                         (qHeads / kvHeads) % headSplit != 0))
    fail("paged_attention: no split of ", qHeads / kvHeads,
         " query heads a kv head into ", headSplit,
         " blocks (a power of two up to ", kMaxHeadSplit,
         " dividing the group, with the walk preload)");
  // PreloadWalk, Softcap, QkNorm and HeadSplit default to false, false,
  // false, 1; the name spells them up to the last one set.
  const bool trailing[] = {preloadWalk, softcap, qkNorm};
  std::string flags;
  int named = headSplit != 1 ? 3 : 0;
  for (int i = 0; i < 3; ++i)
    if (trailing[i])
      named = std::max(named, i + 1);
  for (int i = 0; i < named; ++i)
    flags += trailing[i] ? ", true" : ", false";
  if (headSplit != 1)
    flags += cat(", ", headSplit);
  return {"PagedAttention.cuh",
          cat(kNamespace, fp8 ? "paged_attention_fp8<" : "paged_attention<",
              qHeads, ", ", kvHeads, ", ", headDim, ", ", blockSize, ", ",
              fusedRope ? "true" : "false", flags, ">")};
}
bool PagedAttentionSpec::fusedRopeSupported() const {
  // Lanes hold 8 values (bf16), or 16 (fp8 with groups of at most 4 and a
  // head dim that is a power of two or a multiple of 32, as
  // PagedAttentionFp8Shape picks); both halves of a head need whole lanes.
  const bool wide = fp8 && kvHeads > 0 && qHeads / kvHeads <= 4 &&
                    ((headDim & (headDim - 1)) == 0 || headDim % 32 == 0);
  const int perLane = wide ? 16 : 8;
  return headDim >= 2 * perLane && headDim % (2 * perLane) == 0;
}
bool PagedAttentionSpec::mergesInCluster(int tokens, int splits,
                                         int multiprocessors) const {
  return clusterMerge && splits > 1 && splits <= kMaxClusterSplits &&
         static_cast<long long>(std::max(tokens, 1)) * kvHeads * headSplit *
                 splits <=
             multiprocessors;
}

bool PagedAttentionSpec::preloadsWalk(int tokens, int splits,
                                      int multiprocessors) const {
  return fusedRope && static_cast<long long>(std::max(tokens, 1)) * kvHeads *
                              headSplit * splits <=
                          multiprocessors;
}

int PagedAttentionSpec::chooseHeadSplit(int tokens, int splits,
                                        int multiprocessors) const {
  PagedAttentionSpec split = *this;
  split.preloadWalk = true;
  int chosen = 1;
  for (int s = 2; s <= kMaxHeadSplit && kvHeads > 0 &&
                  qHeads / kvHeads / chosen > kHeadSplitGroup;
       s *= 2) {
    split.headSplit = s;
    if ((qHeads / kvHeads) % s != 0 || !split.fusedRopeSupported() ||
        !split.preloadsWalk(tokens, splits, multiprocessors))
      break;
    chosen = s;
  }
  return chosen;
}

LaunchDims PagedAttentionSpec::dims(int tokens, int splits,
                                    int multiprocessors) const {
  requirePositive(splits, "splits", "paged_attention");
  if (splits > kMaxSplits)
    fail("paged_attention: ", splits, " splits, more than the ", kMaxSplits,
         " its in-kernel merge handles");
  LaunchDims dims;
  dims.grid.x =
      static_cast<unsigned>(std::max(tokens, 1) * kvHeads * headSplit);
  dims.grid.y = static_cast<unsigned>(splits);
  dims.block.x = 128;
  if (mergesInCluster(tokens, splits, multiprocessors))
    dims.clusterY = static_cast<unsigned>(splits);
  return dims;
}
std::size_t PagedAttentionSpec::workspaceFloats(int tokens, int splits) const {
  return static_cast<std::size_t>(tokens) * splits * qHeads * (headDim + 2);
}
std::size_t PagedAttentionSpec::arrivalCount(int tokens) const {
  return static_cast<std::size_t>(std::max(tokens, 1)) * kvHeads * headSplit;
}
int PagedAttentionSpec::chooseSplits(int tokens, int maxContext,
                                     int multiprocessors) const {
  const long long blocks = static_cast<long long>(tokens) * kvHeads;
  if (maxContext < 64 || blocks >= 2LL * multiprocessors)
    return 1;
  // At most about four blocks per multiprocessor (one wave: an 8-token
  // step of 8 kv heads took 17.8 us at 9 splits, 576 blocks for 528
  // places), and no more splits than about sqrt(context / 4): each split
  // adds to the merge what it saves of the walk. Batch-1 decode has only
  // Hkv blocks otherwise: 8 blocks walking 200 positions took 7 us of a
  // 940 us token on the Llama-3.2-1B shape. Measured there (sol-kernel-check
  // --only fused_rope, H200, global merge): 256 positions 7.8 us at 8 splits
  // (7.9 at 4, 8.0 at 16, 9.1 at 1); 1,024 positions 8.4 us at 16 splits
  // (9.1 at 8, 9.4 at 32).
  const long long wanted = std::max(1LL, 4LL * multiprocessors / blocks);
  long long byLength = 1;
  while (byLength * byLength * 4 < maxContext)
    ++byLength;
  long long splits = std::min(wanted, byLength);
  // A cluster merge is cheap enough that up to 1,024 positions stay at its
  // 8 splits rather than a global merge of more (1 token, 1,024 positions:
  // 7.8 us against 8.5 at 16 splits).
  if (splits > kMaxClusterSplits && byLength <= 16 &&
      mergesInCluster(tokens, kMaxClusterSplits, multiprocessors))
    splits = kMaxClusterSplits;
  return static_cast<int>(std::clamp<long long>(splits, 1, kMaxSplits));
}

} // namespace sol::cuda

//===- KernelSelection.cpp - Which kernel instance runs each op -----------===//
#include "runtime/cuda/KernelSelection.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <optional>

namespace sol::cuda {

namespace {

int toInt(int64_t v) { return static_cast<int>(v); }

/// add<D>(out, a, b, T) of codegen/kernels/Add.cuh.
struct AddSpec {
  int width = 0;
  KernelInstance instance() const {
    return {"Add.cuh", "sol::kernels::add<" + std::to_string(width) + ">"};
  }
  LaunchDims dims(int rows) const {
    long long vectors = static_cast<long long>(rows) * (width / 8);
    LaunchDims d;
    d.block.x = 256;
    d.grid.x = static_cast<unsigned>(
        std::clamp<long long>((vectors + 255) / 256, 1, 65535));
    return d;
  }
};

/// gather_columns<W> of codegen/kernels/GatherColumns.cuh: a block of 256
/// threads per row.
struct GatherColumnsSpec {
  int width = 0;
  KernelInstance instance() const {
    return {"GatherColumns.cuh",
            "sol::kernels::gather_columns<" + std::to_string(width) + ">"};
  }
  LaunchDims dims(int rows) const {
    LaunchDims d;
    d.block.x = 256;
    d.grid.x = static_cast<unsigned>(std::max(rows, 1));
    return d;
  }
};

/// sigmoid_gate<D, H> of codegen/kernels/SigmoidGate.cuh: a block per row.
struct SigmoidGateSpec {
  int width = 0, hidden = 0;
  KernelInstance instance() const {
    return {"SigmoidGate.cuh", "sol::kernels::sigmoid_gate<" +
                                   std::to_string(width) + ", " +
                                   std::to_string(hidden) + ">"};
  }
  LaunchDims dims(int rows) const {
    LaunchDims d;
    d.block.x = 128;
    d.grid.x = static_cast<unsigned>(rows);
    return d;
  }
};

LinearOutput linearOutput(const OpDesc &op) {
  return op.outDtype == fb::DType::F32 ? LinearOutput::Fp32
                                       : LinearOutput::Bf16;
}

} // namespace

LinearEpilogue linearEpilogue(const OpDesc &op) {
  const auto e = static_cast<int>(op.epilogue);
  if (e < 0 || e > static_cast<int>(LinearEpilogue::Geglu))
    fail("linear epilogue ", e,
         " is not one this runtime knows (0..3); "
         "compile the plan again with this version's solc");
  return op.epilogue;
}

void markAttentionReaders(std::vector<OpDesc> &ops) {
  int attentionOut = -1;
  for (OpDesc &op : ops) {
    if (op.kind == OpKind::Attention)
      attentionOut = op.buffers.at(0);
    op.readsAttention = op.kind == OpKind::Linear && attentionOut >= 0 &&
                        op.buffers.at(1) == attentionOut;
  }
}

std::vector<bool> weightsReadAsBf16(const std::vector<OpDesc> &ops,
                                    std::size_t weightCount) {
  std::vector<bool> read(weightCount, false);
  auto mark = [&](int32_t index) {
    read.at(static_cast<size_t>(index)) = true;
  };
  for (const OpDesc &d : ops) {
    if (d.kind == OpKind::RmsNorm || d.kind == OpKind::HeadRmsNorm ||
        d.kind == OpKind::NormLinear) {
      mark(d.weights.at(0));
      if (d.kind != OpKind::NormLinear && d.hasSecondNormWeight())
        mark(d.weights.at(1));
    }
    if (d.kind == OpKind::Attention && d.hasSinks())
      mark(d.weights.at(0));
  }
  return read;
}

std::string weightDtypeProblem(const std::vector<OpDesc> &ops,
                               const std::vector<fb::DType> &dtypes,
                               const std::vector<std::string> &names) {
  std::vector<bool> f32 = weightsReadAsBf16(ops, dtypes.size());
  for (const OpDesc &d : ops) {
    const bool quantLinear =
        (d.kind == OpKind::Linear || d.kind == OpKind::NormLinear) &&
        d.quant != fb::WeightQuant::None;
    if (quantLinear)
      f32.at(static_cast<size_t>(d.weights.at(d.scalesWeight()))) = true;
    if (d.kind == OpKind::Moe && d.moeQuantWeights() > 0 &&
        !d.hasMxfp4Experts())
      for (size_t j = 0; j < 3; ++j)
        f32.at(static_cast<size_t>(d.weights.at(d.moeScalesWeight() + j))) =
            true;
  }
  for (const OpDesc &d : ops)
    for (int32_t w : d.weights) {
      const auto i = static_cast<size_t>(w);
      const fb::DType t = dtypes.at(i);
      const bool readable = t == fb::DType::BF16 || t == fb::DType::I8 ||
                            t == fb::DType::F8E4M3 || t == fb::DType::I4 ||
                            t == fb::DType::U8 ||
                            (t == fb::DType::F32 && f32[i]);
      if (!readable)
        return cat("weight '", names.at(i), "' of op ", d.name, " is ",
                   fb::EnumNameDType(t),
                   ", which its CUDA kernels do not read (they read bf16, "
                   "quantized codes, and f32 only as scales, norm weights "
                   "or sinks)");
    }
  return {};
}

namespace {

struct LinearShape {
  int n = 0, k = 0;
  bool bias = false;
};

/// W's (logical) shape and whether there is a bias (a NormLinear op's
/// weights start with the norm's; a quantized W's scales follow).
LinearShape linearShape(const OpDesc &op) {
  const size_t first = op.linearWeight();
  return {toInt(op.weightShapes.at(first).at(0)),
          toInt(op.weightShapes.at(first).at(1)), op.hasBias()};
}

/// The format the quantized kernels read for a quantized W.
WeightFormat weightFormat(const OpDesc &op) {
  switch (op.quant) {
  case fb::WeightQuant::Int8:
    return WeightFormat::Int8;
  case fb::WeightQuant::Fp8:
    return WeightFormat::Fp8;
  case fb::WeightQuant::Int4:
    return WeightFormat::Int4;
  case fb::WeightQuant::None:
    break;
  }
  fail("op ", op.name, ": weight quantization ", static_cast<int>(op.quant),
       " is not one this runtime knows; compile the plan again with this "
       "version's solc");
}

int quantGroupSize(const OpDesc &op) {
  return op.quant == fb::WeightQuant::Int4 ? toInt(op.groupSize) : 0;
}

/// linear_skinny for `rows` rows, if it runs them (2..8) and its shared
/// memory fits.
std::optional<SkinnySpec> skinnyFor(const OpDesc &op, int rows,
                                    bool normPrologue) {
  if (rows < 2 || rows > SkinnySpec::kSelectedMaxRows)
    return std::nullopt;
  const LinearShape s = linearShape(op);
  SkinnySpec spec = SkinnySpec::choose(s.n, s.k, rows, linearOutput(op), s.bias,
                                       linearEpilogue(op), normPrologue,
                                       kPlannedMultiprocessors);
  if (!spec.fits())
    return std::nullopt;
  spec.l2Prefetch = prefetchesWeights(op, true);
  return spec;
}

/// The linear part of a Linear or NormLinear op: linear_skinny (2..8
/// rows) or linear_gemv (up to 8 rows) with the norm in its prologue when
/// `normPrologue`, else the tensor-core GEMM, followed by its split-K
/// finalize when it splits K.
std::vector<KernelLaunch> linearLaunches(const OpDesc &op, int rows,
                                         bool normPrologue) {
  const LinearShape s = linearShape(op);
  const LinearEpilogue epilogue = linearEpilogue(op);
  if (std::optional<SkinnySpec> skinny = skinnyFor(op, rows, normPrologue))
    return {{skinny->instance(), skinny->dims(s.n)}};
  if (rows <= GemvSpec::kMaxRows) {
    GemvSpec spec =
        GemvSpec::choose(s.n, s.k, rows, linearOutput(op), s.bias, epilogue,
                         normPrologue, kPlannedMultiprocessors);
    spec.l2Prefetch = prefetchesWeights(op, false);
    return {{spec.instance(), spec.dims(s.n)}};
  }
  GemmSpec spec =
      GemmSpec::choose(gemmRowBucket(rows), s.n, linearOutput(op), s.bias,
                       epilogue, kPlannedMultiprocessors, s.k);
  std::vector<KernelLaunch> launches = {
      {spec.instance(), spec.dims(rows, s.n)}};
  if (spec.splitK > 1)
    launches.push_back({spec.finalizeInstance(), spec.finalizeDims(rows, s.n)});
  return launches;
}

/// The rows up to which a Linear op is one launch of linear_gemv or
/// linear_skinny.
constexpr int kSinglePassRows = SkinnySpec::kSelectedMaxRows;

/// The op with its quantized W taken as the bf16 copy dequantize_weight
/// makes of it: no quantization, no scale operands.
OpDesc dequantizedView(const OpDesc &op) {
  OpDesc plain = op;
  const size_t drop = op.quantOperands();
  plain.weights.resize(plain.weights.size() - drop);
  plain.weightShapes.resize(plain.weightShapes.size() - drop);
  plain.quant = fb::WeightQuant::None;
  plain.groupSize = 0;
  return plain;
}

/// linear_gemv_quant for one row of a quantized Linear or NormLinear op
/// (the norm in its prologue).
KernelLaunch quantGemv(const OpDesc &op) {
  const LinearShape s = linearShape(op);
  const QuantGemvSpec spec = QuantGemvSpec::choose(
      s.n, s.k, 1, weightFormat(op), linearOutput(op), s.bias,
      linearEpilogue(op), op.kind == OpKind::NormLinear, quantGroupSize(op));
  return {spec.instance(), spec.dims(s.n)};
}

/// The most rows linear_skinny_quant runs for a format, and whether it
/// also runs one row (else linear_gemv_quant does). Measured on the H200
/// (sol-kernel-check quant_skinny, Llama-3.2-1B and 3.1-8B shapes; batch-1
/// and 8-sequence decode of the 1B shape, docs/gpu.md):
///  * int4: one row is faster on linear_gemv_quant (1B decode 1,537 against
///    1,178 tok/s); 8 and 16 rows on linear_skinny_quant are faster than
///    bf16 linear_skinny (8B gate/up at 8 rows 38.6 against 71.5 us).
///  * fp8: 2..8 rows on linear_skinny_quant; one row on linear_gemv_quant
///    (the 8B shape's batch-1 decode 301 against 210 tok/s on an H100,
///    with its fewer, wider blocks for large weights and the cheaper
///    quantization of x), except small weights of K > 4096, where
///    linear_skinny_quant stays faster (1B down 10.2 against 11.7 us); at
///    16 rows every block quantizing 16 rows of x costs more than a GEMM
///    (8B down 183 us when measured), so from 9 rows the executor runs
///    cuBLASLt's fp8 GEMM where it can, else the bf16 copy.
///  * int8: linear_skinny_quant for 2..8 rows, beside linear_gemm_quant in
///    one run (sol-kernel-check quant_skinny,quant_gemm): a layer's four
///    linears take 34.1 against 42.3 us (1B, 2 rows), 39.1 against 44.5
///    (1B, 8 rows), 85.8 against 97.4 (8B, 2 rows), 97.1 against 100.8 (8B,
///    8 rows; the skinny figures include the norm prologue of qkv and
///    gate/up, which plans of several rows run as rms_norm first). At 16
///    rows the mixed-input GEMM wins (linear_gemm_quant's 8B gate/up 51.3
///    against 94.0 us; linear_wgmma_quant runs it in Hopper plans); one row
///    stays on linear_gemv_quant (8B gate/up 34.4 against 43.5).
struct QuantSkinnyRule {
  int maxRows = 0;
  bool oneRow = false;
};
QuantSkinnyRule quantSkinnyRule(WeightFormat format, int n, int k) {
  switch (format) {
  case WeightFormat::Int4:
    return {QuantSkinnySpec::kMaxRows, false};
  case WeightFormat::Fp8:
    return {8, k > 4096 && !QuantGemvSpec::isLargeWeight(format, n, k)};
  case WeightFormat::Int8:
    return {8, false};
  }
  return {};
}

/// linear_skinny_quant for `rows` rows, if it runs them: its int4 steps
/// are whole groups (a group size that is a multiple of 128), and its
/// shared memory must fit.
std::optional<KernelLaunch> quantSkinny(const OpDesc &op, int rows,
                                        bool normPrologue) {
  const LinearShape s = linearShape(op);
  const WeightFormat format = weightFormat(op);
  const int values = format == WeightFormat::Int4 ? 32 : 16;
  const QuantSkinnyRule rule = quantSkinnyRule(format, s.n, s.k);
  if (rows < 1 || rows > rule.maxRows || (rows == 1 && !rule.oneRow) ||
      s.k % values != 0 ||
      (format == WeightFormat::Int4 && quantGroupSize(op) % 128 != 0))
    return std::nullopt;
  const QuantSkinnySpec spec = QuantSkinnySpec::choose(
      s.n, s.k, rows, format, linearOutput(op), s.bias, linearEpilogue(op),
      normPrologue, quantGroupSize(op), kPlannedMultiprocessors);
  if (!spec.fits())
    return std::nullopt;
  return KernelLaunch{spec.instance(), spec.dims(s.n)};
}

/// The GEMM launches of a quantized linear: rms_norm first for a NormLinear,
/// the GEMM, linear_splitk_finalize when it splits K.
template <typename Spec>
std::vector<KernelLaunch> quantGemmLaunches(const OpDesc &op, const Spec &spec,
                                            int rows, int k, int n) {
  std::vector<KernelLaunch> launches;
  if (op.kind == OpKind::NormLinear) {
    const RmsNormSpec norm{k};
    launches.push_back({norm.instance(), norm.dims(rows)});
  }
  launches.push_back({spec.instance(), spec.dims(rows, n)});
  if (spec.splitK > 1)
    launches.push_back({spec.finalizeInstance(), spec.finalizeDims(rows, n)});
  return launches;
}

/// The mixed-input GEMM for `rows` rows (behind rms_norm for a NormLinear),
/// if it takes the op's weight and the step: from 2 rows (int8, which has no
/// skinny kernel) or past linear_skinny_quant's rows, up to
/// kQuantGemmMaxRows; the instance depends on the row bucket only. From
/// kQuantWgmmaMinRows rows, plans for Hopper run linear_wgmma_quant, else
/// linear_gemm_quant.
std::optional<std::vector<KernelLaunch>> quantGemm(const OpDesc &op, int rows) {
  const LinearShape s = linearShape(op);
  const WeightFormat format = weightFormat(op);
  if (rows < 2 || rows > kQuantGemmMaxRows ||
      !QuantGemmSpec::supports(format, s.n, s.k, quantGroupSize(op)))
    return std::nullopt;
  const int bucket = gemmRowBucket(rows);
  if (op.wgmma && rows >= kQuantWgmmaMinRows)
    return quantGemmLaunches(
        op,
        QuantWgmmaSpec::choose(bucket, s.n, s.k, format, linearOutput(op),
                               s.bias, linearEpilogue(op), quantGroupSize(op),
                               kPlannedMultiprocessors),
        rows, s.k, s.n);
  return quantGemmLaunches(
      op,
      QuantGemmSpec::choose(bucket, s.n, s.k, format, linearOutput(op), s.bias,
                            linearEpilogue(op), quantGroupSize(op),
                            kPlannedMultiprocessors),
      rows, s.k, s.n);
}

} // namespace

std::vector<KernelLaunch> quantizedLinearLaunches(const OpDesc &op, int rows,
                                                  int maxContext) {
  const LinearShape s = linearShape(op);
  const bool norm = op.kind == OpKind::NormLinear;
  // Up to 16 rows on the tensor cores, the codes read once. As for bf16
  // (linear_skinny), a NormLinear of several rows normalises into its
  // scratch buffer first; one row keeps the norm in the prologue.
  if (!norm || rows == 1)
    if (std::optional<KernelLaunch> skinny = quantSkinny(op, rows, norm))
      return {*skinny};
  if (norm)
    if (std::optional<KernelLaunch> skinny = quantSkinny(op, rows, false)) {
      const RmsNormSpec spec{s.k};
      return {{spec.instance(), spec.dims(rows)}, *skinny};
    }
  if (rows == 1)
    return {quantGemv(op)};
  // Batched decode: the mixed-input GEMM reads the codes.
  if (std::optional<std::vector<KernelLaunch>> gemm = quantGemm(op, rows))
    return *gemm;
  // More rows: W back to bf16 in a scratch copy, then the bf16 kernels
  // (and the executor's cuBLASLt) over it.
  const DequantizeSpec dequant{weightFormat(op), quantGroupSize(op)};
  std::vector<KernelLaunch> launches = {
      {dequant.instance(), dequant.dims(s.n, s.k)}};
  for (KernelLaunch &l : selectKernels(dequantizedView(op), rows, maxContext))
    launches.push_back(std::move(l));
  return launches;
}

bool isDequantize(const KernelInstance &instance) {
  return instance.header == "Dequantize.cuh";
}

bool isQuantGemm(const KernelInstance &instance) {
  return instance.header == "LinearGemmQuant.cuh" ||
         instance.header == "LinearWgmmaQuant.cuh";
}

bool isSplitKFinalize(const KernelInstance &instance) {
  return instance.nameExpression.find("linear_splitk_finalize<") !=
         std::string::npos;
}

bool isQuantSinglePass(const KernelInstance &instance) {
  return instance.header == "LinearGemvQuant.cuh" ||
         instance.header == "LinearSkinnyQuant.cuh";
}

namespace {

bool kvFp8(const OpDesc &op) {
  if (op.kvDtype != fb::DType::BF16 && op.kvDtype != fb::DType::F8E4M3)
    fail("the KV cache's dtype must be BF16 or F8E4M3, got ",
         static_cast<int>(op.kvDtype));
  return op.kvDtype == fb::DType::F8E4M3;
}

PagedAttentionSpec attentionSpec(const OpDesc &op) {
  PagedAttentionSpec spec{toInt(op.heads), toInt(op.kvHeads), toInt(op.headDim),
                          op.blockSize, kvFp8(op)};
  spec.softcap = op.softcap > 0.0f;
  return spec;
}

} // namespace

bool attentionFusesRope(const OpDesc &op) {
  PagedAttentionSpec spec = attentionSpec(op);
  spec.fusedRope = true;
  return spec.fusedRopeSupported();
}

bool attentionFusesHeadNorm(const OpDesc &attention, const OpDesc &norm) {
  if (attention.kind != OpKind::Attention || norm.kind != OpKind::HeadRmsNorm ||
      !attentionFusesRope(attention) || norm.buffers.empty() ||
      attention.buffers.size() < 2 || norm.buffers[0] != attention.buffers[1] ||
      norm.column != 0 || norm.headDim != attention.headDim)
    return false;
  // q heads by the first weight and k heads by the second, or all by one.
  return norm.hasSecondNormWeight()
             ? norm.heads == attention.heads &&
                   norm.secondHeads == attention.kvHeads
             : norm.secondHeads == 0 &&
                   norm.heads == attention.heads + attention.kvHeads;
}

GemvAddNorm linearAddNorm(const OpDesc &linear, const OpDesc &norm) {
  if (linear.kind != OpKind::Linear || linear.quant != fb::WeightQuant::None ||
      linear.outDtype != fb::DType::BF16 || linear.buffers.size() < 2 ||
      norm.kind != OpKind::RmsNorm || !norm.hasResidual() ||
      norm.buffers[0] != linear.buffers[1])
    return GemvAddNorm::None;
  const LinearShape s = linearShape(linear);
  GemvSpec spec =
      GemvSpec::choose(s.n, s.k, 1, LinearOutput::Bf16, s.bias,
                       linearEpilogue(linear), true, kPlannedMultiprocessors);
  spec.addNorm = norm.hasSecondNormWeight() ? GemvAddNorm::InputNorm
                                            : GemvAddNorm::Residual;
  if (s.k % 8 != 0 || spec.dims(s.n).sharedBytes > SkinnySpec::kMaxSharedBytes)
    return GemvAddNorm::None;
  return spec.addNorm;
}

PrefillAttentionSpec prefillAttentionSpec(const OpDesc &op) {
  return {toInt(op.heads), toInt(op.kvHeads), toInt(op.headDim),
          op.blockSize,    kvFp8(op),         op.softcap > 0.0f};
}

ChunkAttentionSpec chunkAttentionSpec(const OpDesc &op) {
  return {toInt(op.heads), toInt(op.kvHeads), toInt(op.headDim),
          op.blockSize,    kvFp8(op),         op.softcap > 0.0f};
}

int attentionSplits(const OpDesc &op, int tokens, int maxContext,
                    bool clusterMerge) {
  PagedAttentionSpec spec = attentionSpec(op);
  spec.clusterMerge = clusterMerge;
  return spec.chooseSplits(tokens, maxContext, kPlannedMultiprocessors);
}

int opRows(const OpDesc &op, int tokens, int outputs) {
  return op.outRows == fb::Rows::Outputs ? outputs : tokens;
}

int gemmRowBucket(int rows) {
  int bucket = 16;
  while (bucket < rows)
    bucket *= 2;
  return bucket;
}

std::vector<KernelLaunch> selectKernels(const OpDesc &op, int rows,
                                        int maxContext, bool fusedRope,
                                        bool clusterMerge, bool headNorm,
                                        GemvAddNorm addNorm) {
  if (rows <= 0)
    return {};
  switch (op.kind) {
  case OpKind::Embedding: {
    EmbeddingSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::RmsNorm: {
    if (addNorm != GemvAddNorm::None && rows == 1)
      return {}; // done in the next linear's prologue
    RmsNormSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::HeadRmsNorm: {
    if (fusedRope && headNorm)
      return {}; // done in the attention's prologue
    // One norm row per head of each token.
    RmsNormSpec spec{toInt(op.headDim)};
    return {
        {spec.instance(), spec.dims(rows * toInt(op.heads + op.secondHeads))}};
  }
  case OpKind::Linear:
    if (op.quant != fb::WeightQuant::None)
      return quantizedLinearLaunches(op, rows, maxContext);
    if (addNorm != GemvAddNorm::None && rows == 1) {
      const LinearShape s = linearShape(op);
      GemvSpec spec =
          GemvSpec::choose(s.n, s.k, 1, linearOutput(op), s.bias,
                           linearEpilogue(op), true, kPlannedMultiprocessors);
      spec.l2Prefetch = prefetchesWeights(op, false);
      spec.addNorm = addNorm;
      return {{spec.instance(), spec.dims(s.n)}};
    }
    return linearLaunches(op, rows, false);
  case OpKind::NormLinear: {
    if (op.quant != fb::WeightQuant::None)
      return quantizedLinearLaunches(op, rows, maxContext);
    // The norm in the prologue of linear_gemv (one row; more where
    // linear_skinny's shared memory does not fit) when it fits its shared
    // memory (a few rows of K features).
    if (rows <= GemvSpec::kMaxRows && !skinnyFor(op, rows, false)) {
      const LinearShape s = linearShape(op);
      const GemvSpec gemv =
          GemvSpec::choose(s.n, s.k, rows, linearOutput(op), s.bias,
                           linearEpilogue(op), true, kPlannedMultiprocessors);
      if (gemv.dims(s.n).sharedBytes <= SkinnySpec::kMaxSharedBytes)
        return linearLaunches(op, rows, true);
    }
    // Many rows (or too large a K for a prologue): normalise once into the
    // scratch buffer, then the GEMM (or linear_skinny, linear_gemv).
    RmsNormSpec norm{toInt(op.bufferWidths.at(1))};
    std::vector<KernelLaunch> launches = {{norm.instance(), norm.dims(rows)}};
    for (KernelLaunch &l : linearLaunches(op, rows, false))
      launches.push_back(std::move(l));
    return launches;
  }
  case OpKind::RopeKvWrite: {
    if (fusedRope)
      return {}; // done in the attention's prologue
    RopeKvWriteSpec spec{toInt(op.heads), toInt(op.kvHeads), toInt(op.headDim),
                         op.blockSize, kvFp8(op)};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::Attention: {
    PagedAttentionSpec spec = attentionSpec(op);
    spec.fusedRope = fusedRope;
    spec.qkNorm = fusedRope && headNorm;
    spec.clusterMerge = clusterMerge;
    const int splits = attentionSplits(op, rows, maxContext, clusterMerge);
    spec.preloadWalk = spec.preloadsWalk(rows, splits, kPlannedMultiprocessors);
    if (spec.preloadWalk)
      spec.headSplit =
          spec.chooseHeadSplit(rows, splits, kPlannedMultiprocessors);
    return {
        {spec.instance(), spec.dims(rows, splits, kPlannedMultiprocessors)}};
  }
  case OpKind::Swiglu: {
    SwigluSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::GatherRows: {
    GatherRowsSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::Add: {
    AddSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::ConcatColumns:
    return {}; // strided copies (cuMemcpy2DAsync), no kernel
  case OpKind::Moe: {
    // The router's linear, then the experts' kernels.
    std::vector<KernelLaunch> launches =
        selectKernels(moeRouterLinear(op), rows, maxContext);
    for (KernelLaunch &l : moeLaunches(op, rows))
      launches.push_back(std::move(l));
    return launches;
  }
  case OpKind::AllReduce:
  case OpKind::AllGather:
    return {}; // collectives between GPUs (NCCL), not kernels of the plan
  case OpKind::Softcap: {
    SoftcapSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::SigmoidGate: {
    SigmoidGateSpec spec{toInt(op.bufferWidths.at(0)),
                         toInt(op.bufferWidths.at(2))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case OpKind::GatherColumns: {
    if (op.outDtype != fb::DType::BF16)
      fail("GatherColumns '", op.name,
           "': the CUDA kernel gathers bf16 activations, not ",
           fb::EnumNameDType(op.outDtype), "; run this plan with --device cpu");
    GatherColumnsSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  }
  fail("no CUDA kernel for op kind ", static_cast<int>(op.kind));
}

namespace {

/// After `rows`, the next step size whose launches may differ: every size
/// up to the single-pass kernels' rows, then one per GEMM row bucket.
int nextStepRows(int rows) {
  return rows <= kSinglePassRows ? rows + 1 : gemmRowBucket(rows) + 1;
}

} // namespace

std::size_t splitKWorkspaceFloats(const OpDesc &op, int maxTokens) {
  if (op.kind == OpKind::Moe)
    return splitKWorkspaceFloats(moeRouterLinear(op), maxTokens);
  if (op.kind != OpKind::Linear && op.kind != OpKind::NormLinear)
    return 0;
  const std::size_t n = static_cast<std::size_t>(linearShape(op).n);
  std::size_t floats = 0;
  for (int rows = 2; rows <= maxTokens; rows = nextStepRows(rows))
    for (const KernelLaunch &l : selectKernels(op, rows, 0))
      if (isSplitKFinalize(l.instance)) // a split GEMM: an M x N workspace
        floats =
            std::max(floats, static_cast<std::size_t>(gemmRowBucket(rows)) * n);
  return floats;
}

bool needsDequantizedCopy(const OpDesc &op, int maxTokens) {
  if (op.quant == fb::WeightQuant::None ||
      (op.kind != OpKind::Linear && op.kind != OpKind::NormLinear))
    return false;
  for (int rows = 2; rows <= maxTokens; rows = nextStepRows(rows)) {
    const std::vector<KernelLaunch> launches = selectKernels(op, rows, 0);
    if (!launches.empty() && isDequantize(launches.front().instance))
      return true;
  }
  return false;
}

OpDesc moeRouterLinear(const OpDesc &moe) {
  OpDesc router;
  router.kind = OpKind::Linear;
  router.name = moe.name + ".router";
  router.weights = {moe.weights.at(0)};
  router.weightShapes = {moe.weightShapes.at(0)};
  if (moe.hasMoeBiases()) { // gpt-oss: the router's bias
    router.weights.push_back(moe.weights.at(4));
    router.weightShapes.push_back(moe.weightShapes.at(4));
  }
  const int64_t experts = moe.weightShapes.at(0).at(0);
  router.bufferWidths = {experts, moe.bufferWidths.at(1)};
  router.outDtype = fb::DType::BF16;
  router.outRows = moe.outRows;
  return router;
}

namespace {

MoeSpec moeSpec(const OpDesc &moe) {
  const int experts = toInt(moe.weightShapes.at(0).at(0));
  return {experts,
          toInt(moe.topK),
          toInt(moe.bufferWidths.at(1)),
          toInt(moe.weightShapes.at(1).at(0)) / experts,
          moe.expertFormat,
          toInt(moe.groupSize)};
}

} // namespace

std::vector<KernelLaunch> moeLaunches(const OpDesc &moe, int rows) {
  const MoeSpec spec = moeSpec(moe);
  switch (spec.path(rows)) {
  case MoeSpec::Path::Row:
    return {{spec.gateUpRow(), spec.gateUpRowDims()},
            {spec.downRow(), spec.downRowDims()}};
  case MoeSpec::Path::Slots:
    return {{spec.route(), spec.routeDims(rows)},
            {spec.gateUp(), spec.gateUpDims(rows)},
            {spec.down(), spec.downDims(rows)},
            {spec.combine(), spec.combineDims(rows)}};
  case MoeSpec::Path::Grouped:
    break;
  }
  const int tileRows = spec.groupedTileRows(rows);
  return {
      {spec.route(), spec.routeDims(rows)},
      {spec.sort(tileRows), spec.sortDims()},
      {spec.groupedGateUp(tileRows), spec.groupedGateUpDims(rows, tileRows)},
      {spec.groupedDown(tileRows), spec.groupedDownDims(rows, tileRows)},
      {spec.combine(), spec.combineDims(rows)}};
}

MoeSpec::Path moePath(const OpDesc &moe, int rows) {
  return moeSpec(moe).path(rows);
}

long long moeSortedInts(const OpDesc &moe, int maxRows) {
  return moeSpec(moe).sortedInts(maxRows);
}

std::vector<KernelInstance> enumerateKernels(const OpDesc &op, int maxTokens,
                                             int maxContext, bool headNorm,
                                             GemvAddNorm addNorm) {
  std::vector<KernelInstance> out;
  auto add = [&](const std::vector<KernelLaunch> &launches) {
    for (const KernelLaunch &l : launches)
      if (std::find(out.begin(), out.end(), l.instance) == out.end())
        out.push_back(l.instance);
  };
  if (op.kind == OpKind::Moe) {
    for (const KernelInstance &k :
         enumerateKernels(moeRouterLinear(op), maxTokens, maxContext))
      out.push_back(k);
    // One row, a few, and steps large enough for the grouped GEMMs: every
    // tile size a step of up to maxTokens rows takes.
    for (int rows : {1, 2})
      if (rows <= std::max(maxTokens, 1))
        add(moeLaunches(op, rows));
    const MoeSpec spec = moeSpec(op);
    for (int tileRows : spec.groupedTileSizes(maxTokens))
      add({{spec.route(), {}},
           {spec.sort(tileRows), {}},
           {spec.groupedGateUp(tileRows), {}},
           {spec.groupedDown(tileRows), {}},
           {spec.combine(), {}}});
    return out;
  }
  if (op.kind == OpKind::Linear || op.kind == OpKind::NormLinear) {
    for (int rows = 1; rows <= std::min(maxTokens, kSinglePassRows); ++rows)
      add(selectKernels(op, rows, 0));
    for (int rows = 16; rows / 2 < maxTokens; rows *= 2)
      if (rows > kSinglePassRows)
        add(selectKernels(op, rows, 0));
    // Steps of more than 8 rows may run the GEMM on cuBLASLt, then SwiGLU
    // on its own.
    if (maxTokens > GemvSpec::kMaxRows && isGated(linearEpilogue(op)))
      add({{SwigluPairsSpec{linearShape(op).n / 2}.instance(), {}}});
    // fp8 weights: those steps may run cuBLASLt's W8A8 GEMM over x
    // quantized by quantize_rows_fp8 instead of the bf16 copy (a
    // NormLinear's x normalised and quantized by rms_norm_quantize_fp8).
    if (maxTokens > GemvSpec::kMaxRows && op.quant == fb::WeightQuant::Fp8 &&
        linearShape(op).k % 128 == 0 && linearShape(op).k <= 128 * 256) {
      add({{QuantizeRowsFp8Spec{linearShape(op).k}.instance(), {}},
           {RepeatScalesSpec{}.instance(), {}}});
      if (op.kind == OpKind::NormLinear)
        add({{QuantizeRowsFp8Spec{linearShape(op).k, true}.instance(), {}}});
    }
    // On Hopper, steps of many rows run Sol's own W8A8 GEMM there.
    if (op.wgmma && maxTokens >= Fp8WgmmaSpec::kTileM &&
        op.quant == fb::WeightQuant::Fp8 &&
        Fp8WgmmaSpec::supports(linearShape(op).n, linearShape(op).k))
      add({{Fp8WgmmaSpec::choose(op.hasBias(), linearEpilogue(op)).instance(),
            {}}});
    // Greedy one-row steps: the LM head with the argmax in its epilogue.
    if (std::optional<KernelLaunch> head = selectArgmaxLmHead(op))
      add({*head});
    // One-row steps: the residual add and norm before it in the prologue.
    if (op.kind == OpKind::Linear && addNorm != GemvAddNorm::None)
      add(selectKernels(op, 1, maxContext, false, false, false, addNorm));
    return out;
  }
  if (op.kind == OpKind::Attention) {
    PagedAttentionSpec spec = attentionSpec(op);
    out.push_back(spec.instance());
    // Decode steps: the variant with rope_kv_write's work (and the head
    // norm's) in its prologue. Small grids of them preload their walk.
    if (attentionFusesRope(op)) {
      spec.fusedRope = true;
      spec.qkNorm = headNorm;
      out.push_back(spec.instance());
      spec.preloadWalk = true;
      out.push_back(spec.instance());
      // Small grids spread large groups over blocks: every split the
      // smallest grid (one token, one split) takes.
      const int most = spec.chooseHeadSplit(1, 1, kPlannedMultiprocessors);
      for (spec.headSplit = 2; spec.headSplit <= most; spec.headSplit *= 2)
        out.push_back(spec.instance());
    }
    // Steps with a prompt chunk of a full tile run the tensor-core kernel
    // (prefill_attention_fp8 over an fp8 cache).
    const PrefillAttentionSpec prefill = prefillAttentionSpec(op);
    if (maxTokens >= PrefillAttentionSpec::kRows && prefill.supported())
      out.push_back(prefill.instance());
    // Graph-sized steps with a short prompt chunk: the tensor-core kernel
    // with split K/V ranges (chunk_attention_fp8 over an fp8 cache).
    const ChunkAttentionSpec chunk = chunkAttentionSpec(op);
    if (maxTokens >= 2 && chunk.planned())
      out.push_back(chunk.instance());
    return out;
  }
  add(selectKernels(op, 1, 0));
  return out;
}

bool prefetchesWeights(const OpDesc &op, bool skinny) {
  if (op.kind != OpKind::Linear && op.kind != OpKind::NormLinear)
    return false;
  const LinearShape s = linearShape(op);
  if (2LL * s.n * s.k > kL2PrefetchMaxBytes)
    return false;
  // Measured on the H200 (Llama-3.2-1B shape, docs/gpu.md): the o
  // projection after attention gains (batch-1 decode 1,301 -> 1,311 tok/s),
  // linear_skinny after rms_norm gains; a projection after another
  // bandwidth-bound kernel loses (the QKV projection's linear_gemv after
  // the down projection: 1,292 -> 1,272 tok/s with both).
  if (op.readsAttention)
    return true;
  return skinny && op.kind == OpKind::NormLinear;
}

bool isSinglePassLinear(const KernelInstance &instance) {
  return instance.header == "LinearGemv.cuh" ||
         instance.header == "LinearSkinny.cuh";
}

std::optional<KernelLaunch> selectArgmaxLmHead(const OpDesc &op) {
  if ((op.kind != OpKind::Linear && op.kind != OpKind::NormLinear) ||
      op.quant != fb::WeightQuant::None)
    return std::nullopt;
  const LinearShape s = linearShape(op);
  if (linearOutput(op) != LinearOutput::Fp32 || s.bias ||
      linearEpilogue(op) != LinearEpilogue::None)
    return std::nullopt;
  GemvSpec spec = GemvSpec::choose(
      s.n, s.k, 1, LinearOutput::Fp32, false, LinearEpilogue::None,
      op.kind == OpKind::NormLinear, kPlannedMultiprocessors);
  spec.argmax = true;
  return KernelLaunch{spec.instance(), spec.dims(s.n)};
}

KernelLaunch selectArgmax(int rows, int vocab) {
  ArgmaxSpec spec{vocab};
  return {spec.instance(), spec.dims(rows)};
}

KernelLaunch selectSampling(int rows) {
  SamplingSpec spec;
  return {spec.instance(), spec.dims(rows)};
}

} // namespace sol::cuda

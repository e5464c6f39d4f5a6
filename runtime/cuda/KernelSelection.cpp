//===- KernelSelection.cpp - Which kernel instance runs each op -----------===//
#include "runtime/cuda/KernelSelection.h"

#include "runtime/support/Error.h"

#include <algorithm>

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

LinearOutput linearOutput(const OpDesc &op) {
  return op.outDtype == fb::DType::F32 ? LinearOutput::Fp32
                                       : LinearOutput::Bf16;
}

} // namespace

LinearEpilogue linearEpilogue(const OpDesc &op) {
  const int64_t e = op.ints.empty() ? 0 : op.ints[0];
  if (e < 0 || e > static_cast<int64_t>(LinearEpilogue::Swiglu))
    fail("linear epilogue ", e,
         " is not one this runtime knows (0..2); "
         "compile the plan again with this version's solc");
  return static_cast<LinearEpilogue>(e);
}

namespace {

/// The linear part of a Linear or NormLinear op (whose weights start with
/// the norm's): a GEMV for few rows, with the norm in its prologue when
/// `normPrologue`, else the tensor-core GEMM, followed by its split-K
/// finalize when it splits K.
std::vector<KernelLaunch> linearLaunches(const OpDesc &op, int rows,
                                         bool normPrologue) {
  const size_t first = op.kind == fb::OpKind::NormLinear ? 1 : 0;
  const int n = toInt(op.weightShapes.at(first).at(0));
  const int k = toInt(op.weightShapes.at(first).at(1));
  const bool bias = op.weightShapes.size() > first + 1;
  const LinearEpilogue epilogue = linearEpilogue(op);
  if (rows <= GemvSpec::kMaxRows) {
    GemvSpec spec =
        GemvSpec::choose(n, k, rows, linearOutput(op), bias, epilogue,
                         normPrologue, kPlannedMultiprocessors);
    return {{spec.instance(), spec.dims(n)}};
  }
  GemmSpec spec = GemmSpec::choose(gemmRowBucket(rows), n, linearOutput(op),
                                   bias, epilogue, kPlannedMultiprocessors, k);
  std::vector<KernelLaunch> launches = {{spec.instance(), spec.dims(rows, n)}};
  if (spec.splitK > 1)
    launches.push_back({spec.finalizeInstance(), spec.finalizeDims(rows, n)});
  return launches;
}

bool kvFp8(const OpDesc &op) {
  if (op.kvDtype != fb::DType::BF16 && op.kvDtype != fb::DType::F8E4M3)
    fail("the KV cache's dtype must be BF16 or F8E4M3, got ",
         static_cast<int>(op.kvDtype));
  return op.kvDtype == fb::DType::F8E4M3;
}

PagedAttentionSpec attentionSpec(const OpDesc &op) {
  // ints: layer, heads, kv_heads, head_dim[, ...]
  return {toInt(op.ints.at(1)), toInt(op.ints.at(2)), toInt(op.ints.at(3)),
          op.blockSize, kvFp8(op)};
}

} // namespace

PrefillAttentionSpec prefillAttentionSpec(const OpDesc &op) {
  // ints: layer, heads, kv_heads, head_dim[, ...]
  return {toInt(op.ints.at(1)), toInt(op.ints.at(2)), toInt(op.ints.at(3)),
          op.blockSize, kvFp8(op)};
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
                                        int maxContext, bool fusedRope) {
  if (rows <= 0)
    return {};
  switch (op.kind) {
  case fb::OpKind::Embedding: {
    EmbeddingSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case fb::OpKind::RmsNorm: {
    RmsNormSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case fb::OpKind::HeadRmsNorm: {
    // ints: col, heads, head_dim; one norm row per head of each token.
    RmsNormSpec spec{toInt(op.ints.at(2))};
    return {{spec.instance(), spec.dims(rows * toInt(op.ints.at(1)))}};
  }
  case fb::OpKind::Linear:
    return linearLaunches(op, rows, false);
  case fb::OpKind::NormLinear: {
    if (rows <= GemvSpec::kMaxRows)
      return linearLaunches(op, rows, true);
    // Many rows: normalise once into the scratch buffer, then the GEMM.
    RmsNormSpec norm{toInt(op.bufferWidths.at(1))};
    std::vector<KernelLaunch> launches = {{norm.instance(), norm.dims(rows)}};
    for (KernelLaunch &l : linearLaunches(op, rows, false))
      launches.push_back(std::move(l));
    return launches;
  }
  case fb::OpKind::RopeKvWrite: {
    if (fusedRope)
      return {}; // done in the attention's prologue
    RopeKvWriteSpec spec{toInt(op.ints.at(1)), toInt(op.ints.at(2)),
                         toInt(op.ints.at(3)), op.blockSize, kvFp8(op)};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case fb::OpKind::Attention: {
    PagedAttentionSpec spec = attentionSpec(op);
    spec.fusedRope = fusedRope;
    int splits = spec.chooseSplits(rows, maxContext, kPlannedMultiprocessors);
    return {{spec.instance(), spec.dims(rows, splits)}};
  }
  case fb::OpKind::Swiglu: {
    SwigluSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case fb::OpKind::GatherRows: {
    GatherRowsSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  case fb::OpKind::Add: {
    AddSpec spec{toInt(op.bufferWidths.at(0))};
    return {{spec.instance(), spec.dims(rows)}};
  }
  }
  fail("no CUDA kernel for op kind ", static_cast<int>(op.kind));
}

std::size_t splitKWorkspaceFloats(const OpDesc &op, int maxTokens) {
  if (op.kind != fb::OpKind::Linear && op.kind != fb::OpKind::NormLinear)
    return 0;
  const size_t first = op.kind == fb::OpKind::NormLinear ? 1 : 0;
  const std::size_t n =
      static_cast<std::size_t>(op.weightShapes.at(first).at(0));
  std::size_t floats = 0;
  for (int rows = GemvSpec::kMaxRows + 1; rows <= maxTokens;
       rows = gemmRowBucket(rows) + 1)
    for (const KernelLaunch &l : selectKernels(op, rows, 0))
      if (l.dims.grid.z > 1) // the split GEMM: an M x N workspace
        floats =
            std::max(floats, static_cast<std::size_t>(gemmRowBucket(rows)) * n);
  return floats;
}

std::vector<KernelInstance> enumerateKernels(const OpDesc &op, int maxTokens,
                                             int maxContext) {
  std::vector<KernelInstance> out;
  auto add = [&](const std::vector<KernelLaunch> &launches) {
    for (const KernelLaunch &l : launches)
      if (std::find(out.begin(), out.end(), l.instance) == out.end())
        out.push_back(l.instance);
  };
  if (op.kind == fb::OpKind::Linear || op.kind == fb::OpKind::NormLinear) {
    for (int rows = 1; rows <= std::min(maxTokens, GemvSpec::kMaxRows); ++rows)
      add(selectKernels(op, rows, 0));
    for (int rows = 16; rows / 2 < maxTokens; rows *= 2)
      if (rows > GemvSpec::kMaxRows)
        add(selectKernels(op, rows, 0));
    // Steps of more than 8 rows may run the GEMM on cuBLASLt, then SwiGLU
    // on its own.
    if (maxTokens > GemvSpec::kMaxRows &&
        linearEpilogue(op) == LinearEpilogue::Swiglu)
      add({{SwigluPairsSpec{
                static_cast<int>(
                    op.weightShapes
                        .at(op.kind == fb::OpKind::NormLinear ? 1 : 0)
                        .at(0) /
                    2)}
                .instance(),
            {}}});
    return out;
  }
  if (op.kind == fb::OpKind::Attention) {
    PagedAttentionSpec spec = attentionSpec(op);
    out.push_back(spec.instance());
    // Decode steps: the variant with rope_kv_write's work in its prologue.
    spec.fusedRope = true;
    if (spec.fusedRopeSupported())
      out.push_back(spec.instance());
    // Steps with a prompt chunk of a full tile run the tensor-core kernel
    // (prefill_attention_fp8 over an fp8 cache).
    const PrefillAttentionSpec prefill = prefillAttentionSpec(op);
    if (maxTokens >= PrefillAttentionSpec::kRows && prefill.supported())
      out.push_back(prefill.instance());
    return out;
  }
  add(selectKernels(op, 1, 0));
  return out;
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

//===- FusedLinearChecks.cpp - Linear kernels with fused norm / epilogues -===//
//
// The decoder-layer fusions of LinearGemv.cuh and LinearGemm.cuh, against
// references that round where the kernels do (ReferenceKernels.h):
//  * gemv_fused: the GEMV with the RMS norm prologue (NormLinear, up to 8
//    rows), the residual epilogue (o, down; in place on a random residual)
//    and the swiglu epilogue over interleaved gate/up rows. Timed like the
//    plain gemv checks (weights rotated through copies larger than L2), so
//    the two tables compare fused and plain bandwidth.
//  * gemm_fused: the GEMM's residual and swiglu epilogues, both tile configs
//    and the executor's choice for the step's row bucket, which for few rows
//    splits K (fp32 partial sums, then linear_splitk_finalize applies bias
//    and epilogue).
//  * norm_linear: a NormLinear op's launches exactly as the CUDA executor
//    makes them (selectKernels, CudaExecutor's NormLinear case): rms_norm
//    into scratch, then linear_skinny for 2 to 8 rows or the GEMM (split-K
//    or not) for more. (One row, the fused GEMV, is gemv_fused's.)
//  * gemv_add_norm: one-row linear_gemv with the residual add and norms of
//    the RmsNorm op before it in its prologue (StaticLowering's
//    linearAddNorm; Gemma), against rms_norm then the plain linear_gemv:
//    the same output and residual bits, the arrival counter back at zero;
//    both timed, so the table shows what the fusion saves.
//
// Outputs are poisoned, plus one poisoned guard row past the last output
// row that no launch may touch. Residual outputs cannot be poisoned (they
// hold the residual); an element still equal to its residual where the
// reference moved it counts as unwritten there.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "LinearProblems.h"
#include "ReferenceKernels.h"

#include "runtime/cuda/KernelSelection.h"

#include <algorithm>
#include <cmath>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::GemmSpec;
using cuda::GemvSpec;
using cuda::KernelInstance;
using cuda::LaunchDims;
using cuda::LinearEpilogue;
using cuda::LinearOutput;
using cuda::SkinnySpec;

// ---------------------------------------------------------------------------
// gemv_fused

template <typename... Rows> std::vector<int> rowsOf(Rows... rows) {
  return {rows...};
}

struct FusedGemvCase {
  const char *name;
  int n, k;
  LinearOutput output;
  bool bias;
  LinearEpilogue epilogue;
  bool norm;
  std::vector<int> rows;
};

// Llama-3.2-1B's layers as the fused plan runs them (qkv and gate_up behind
// their norms, o and down adding into the residual stream), Llama-3.1-8B's
// QKV (K = 4096: 64 KB of normed rows at T = 8), the LM head with the final
// norm, and a small Qwen2.5-0.5B-like swiglu with bias (K = 896: fewer
// 16-byte chunks than threads in the prologue, a partial last block).
const FusedGemvCase kGemvCases[] = {
    {"qkv", 3072, 2048, LinearOutput::Bf16, false, LinearEpilogue::None, true,
     rowsOf(1, 3, 8)},
    {"qkv+bias", 3072, 2048, LinearOutput::Bf16, true, LinearEpilogue::None,
     true, rowsOf(3)},
    {"qkv 8B", 6144, 4096, LinearOutput::Bf16, false, LinearEpilogue::None,
     true, rowsOf(1, 8)},
    {"lm_head", 128256, 2048, LinearOutput::Fp32, false, LinearEpilogue::None,
     true, rowsOf(1)},
    {"o", 2048, 2048, LinearOutput::Bf16, false, LinearEpilogue::Residual,
     false, rowsOf(1, 8)},
    {"down", 2048, 8192, LinearOutput::Bf16, false, LinearEpilogue::Residual,
     false, rowsOf(1, 8)},
    {"o", 2048, 2048, LinearOutput::Bf16, false, LinearEpilogue::Residual, true,
     rowsOf(3)},
    {"gate_up", 16384, 2048, LinearOutput::Bf16, false, LinearEpilogue::Swiglu,
     true, rowsOf(1, 3, 8)},
    {"swiglu+bias", 1000, 896, LinearOutput::Bf16, true, LinearEpilogue::Swiglu,
     true, rowsOf(1, 5)},
    {"swiglu", 1000, 896, LinearOutput::Bf16, false, LinearEpilogue::Swiglu,
     false, rowsOf(2)},
};

GemvSpec gemvSpecFor(const FusedGemvCase &g, int rows) {
  return GemvSpec::choose(g.n, g.k, rows, g.output, g.bias, g.epilogue, g.norm);
}

void checkFusedGemvCase(Checker &c, const FusedGemvCase &g) {
  // One problem for the most rows; fewer rows use its first rows.
  const int maxRows = *std::max_element(g.rows.begin(), g.rows.end());
  const HostLinear p =
      makeProblem(c.rng, maxRows, g.n, g.k, g.bias, g.epilogue, g.norm);
  const RotatedWeights weights(c, p.w, true);
  const DeviceBuffer dX = c.upload(p.x);
  const DeviceBuffer dBias = c.upload(g.bias ? p.bias : std::vector<Bf16>{0});
  const DeviceBuffer dNorm = c.upload(g.norm ? p.normW : std::vector<Bf16>{0});
  const Bf16 *biasArg = g.bias ? dBias.as<const Bf16>() : nullptr;
  const Bf16 *normArg = g.norm ? dNorm.as<const Bf16>() : nullptr;
  const float eps = g.norm ? kEps : 0.0f;
  const int cols = outputColumns(g.epilogue, g.n);

  for (int rows : g.rows) {
    const std::vector<int> rowIds = firstRows(rows);
    const std::vector<double> ref = p.expected(rowIds);

    const GemvSpec spec = gemvSpecFor(g, rows);
    const KernelInstance instance = spec.instance();
    const LaunchDims dims = spec.dims(g.n);
    const cuda::Kernel &kernel = c.kernels.kernel(instance);
    allowSharedMemory(kernel, dims);
    DeviceBuffer dOut = outputBuffer(c, p, rows, g.output, cols);
    std::function<void(int)> launch = [&](int rotation) {
      launchSinglePass(c, kernel, dims, dOut, dX.as<const Bf16>(),
                       weights[rotation], biasArg, rows, g.n, normArg, eps);
    };
    launch(0);
    CheckRecord r =
        makeRecord(c, "gemv_fused",
                   sol::cat(g.name, " ", g.n, "x", g.k, " T=", rows,
                            g.norm ? " +norm" : "", epilogueTag(g.epilogue),
                            g.output == LinearOutput::Fp32 ? " fp32" : "", " R",
                            spec.rowsPerWarp, " WK", spec.warpsK),
                   instance);
    judgeOutput(c, r, dOut, p, rows, g.output, cols, rowIds, ref);
    r.bytes = gemvBytes(p, rows, g.output);
    r.flops = 2.0 * rows * g.n * static_cast<double>(g.k);
    // Timing adds into the residual again at every launch: it stays finite.
    c.finish(std::move(r), &launch);
  }
}

void checkFusedGemv(Checker &c) {
  for (const FusedGemvCase &g : kGemvCases) {
    // --quick (also the sanitizer runs) leaves out the largest weights.
    if (c.options.quick && static_cast<long long>(g.n) * g.k > 30'000'000)
      continue;
    checkFusedGemvCase(c, g);
  }
}

// ---------------------------------------------------------------------------
// gemm_fused

struct FusedGemmCase {
  int m, n, k;
  bool bias;
  LinearEpilogue epilogue;
  bool timed;
};

// Rows 12 and 16 (batched decode) split K; so does 100 x 2048 x 2048.
const FusedGemmCase kGemmCases[] = {
    {17, 264, 72, true, LinearEpilogue::Residual, false},
    {12, 264, 1024, true, LinearEpilogue::Residual, false},
    {16, 2048, 8192, false, LinearEpilogue::Residual, true},
    {100, 2048, 2048, false, LinearEpilogue::Residual, false},
    {512, 2048, 8192, false, LinearEpilogue::Residual, true},
    {4096, 2048, 8192, false, LinearEpilogue::Residual, true},
    {17, 264, 72, true, LinearEpilogue::Swiglu, false},
    {12, 264, 1024, true, LinearEpilogue::Swiglu, false},
    {16, 16384, 2048, false, LinearEpilogue::Swiglu, true},
    {100, 16384, 2048, false, LinearEpilogue::Swiglu, false},
    {512, 16384, 2048, false, LinearEpilogue::Swiglu, true},
    {4096, 16384, 2048, false, LinearEpilogue::Swiglu, true},
};

/// What the executor runs for g.m rows (selectKernels: the row bucket, K
/// known, so few rows split K).
GemmSpec selectedGemm(const FusedGemmCase &g) {
  return GemmSpec::choose(cuda::gemmRowBucket(g.m), g.n, LinearOutput::Bf16,
                          g.bias, g.epilogue, cuda::kPlannedMultiprocessors,
                          g.k);
}

/// Both tile configs unsplit (as the plain gemm checks do), then the
/// executor's choice when it differs from them.
std::vector<GemmSpec> gemmSpecsFor(const FusedGemmCase &g) {
  std::vector<GemmSpec> specs = {
      GemmSpec::choose(1 << 20, g.n, LinearOutput::Bf16, g.bias, g.epilogue),
      GemmSpec::choose(1, g.n, LinearOutput::Bf16, g.bias, g.epilogue)};
  const GemmSpec selected = selectedGemm(g);
  if (std::none_of(specs.begin(), specs.end(), [&](const GemmSpec &s) {
        return s.instance() == selected.instance() &&
               s.splitK == selected.splitK;
      }))
    specs.push_back(selected);
  return specs;
}

void checkFusedGemm(Checker &c) {
  for (const FusedGemmCase &g : kGemmCases) {
    // --quick (also the sanitizer runs) keeps the shapes up to 100 rows.
    if (c.options.quick && g.m > 100)
      continue;
    const HostLinear p =
        makeProblem(c.rng, g.m, g.n, g.k, g.bias, g.epilogue, false);
    // Few rows (batched decode) stream W: rotate it as the GEMV checks do
    // and report bandwidth too.
    const bool streaming = g.m <= 128;
    const RotatedWeights weights(c, p.w, streaming);
    const DeviceBuffer dX = c.upload(p.x);
    const DeviceBuffer dBias = c.upload(g.bias ? p.bias : std::vector<Bf16>{0});
    const Bf16 *biasArg = g.bias ? dBias.as<const Bf16>() : nullptr;
    const int cols = outputColumns(g.epilogue, g.n);

    // Every row of small problems, 64 sampled rows of large ones.
    std::vector<int> rowIds;
    if (g.m <= 512) {
      rowIds = firstRows(g.m);
    } else {
      for (int i = 0; i < 64; ++i)
        rowIds.push_back(c.rng.uniformInt(0, g.m - 1));
      rowIds.push_back(g.m - 1);
    }
    const std::vector<double> ref = p.expected(rowIds);

    const GemmSpec chosen = selectedGemm(g);
    for (const GemmSpec &spec : gemmSpecsFor(g)) {
      const KernelInstance instance = spec.instance();
      const cuda::Kernel &kernel = c.kernels.kernel(instance);
      kernel.setMaxDynamicSharedMemory(spec.sharedBytes());
      const LaunchDims dims = spec.dims(g.m, g.n);
      const bool split = spec.splitK > 1;
      const cuda::Kernel *finalize =
          split ? &c.kernels.kernel(spec.finalizeInstance()) : nullptr;
      const LaunchDims finalizeDims = spec.finalizeDims(g.m, g.n);
      DeviceBuffer dPartial = splitKWorkspace(c, split ? g.m : 1, g.n);
      DeviceBuffer dOut = outputBuffer(c, p, g.m, LinearOutput::Bf16, cols);
      std::function<void(int)> launch = [&](int rotation) {
        launchGemm(c, kernel, dims, finalize, finalizeDims,
                   dPartial.as<float>(), dOut.as<void>(), dX.as<const Bf16>(),
                   weights[rotation], biasArg, g.m, g.n, g.k);
      };
      launch(0);
      const bool isChosen =
          instance == chosen.instance() && spec.splitK == chosen.splitK;
      CheckRecord r = makeRecord(
          c, "gemm_fused",
          sol::cat(g.m, "x", g.n, "x", g.k, g.bias ? " +bias" : "",
                   epilogueTag(g.epilogue), " ", spec.tileM, "x", spec.tileN,
                   split ? sol::cat(" splitK ", spec.splitK) : "",
                   isChosen ? " *" : ""),
          instance);
      judgeOutput(c, r, dOut, p, g.m, LinearOutput::Bf16, cols, rowIds, ref);
      if (split)
        judgeWorkspace(c, r, dPartial);
      r.flops = 2.0 * g.m * g.n * static_cast<double>(g.k);
      if (streaming)
        r.bytes = gemvBytes(p, g.m, LinearOutput::Bf16);
      c.finish(std::move(r), g.timed ? &launch : nullptr);
    }
  }
}

// ---------------------------------------------------------------------------
// norm_linear

struct NormLinearCase {
  const char *name;
  int n, k;
  LinearOutput output;
  bool bias;
  LinearEpilogue epilogue;
  std::vector<int> rows;
};

// 2..8 rows run rms_norm into scratch, then linear_skinny (rows 5 and 8);
// more rows rms_norm, then the GEMM (for the row bucket gemmRowBucket
// picks, launched on the actual rows; at 9 to 100 rows of these shapes it
// splits K, fp32 logits included).
const NormLinearCase kNormLinearCases[] = {
    {"qkv", 3072, 2048, LinearOutput::Bf16, false, LinearEpilogue::None,
     rowsOf(5, 9, 16, 33, 100)},
    {"qkv+bias", 3072, 2048, LinearOutput::Bf16, true, LinearEpilogue::None,
     rowsOf(9, 16, 33, 100)},
    {"gate_up", 16384, 2048, LinearOutput::Bf16, false, LinearEpilogue::Swiglu,
     rowsOf(5, 9, 512)},
    {"lm_head", 32000, 2048, LinearOutput::Fp32, false, LinearEpilogue::None,
     rowsOf(40)},
    {"logits", 4096, 2048, LinearOutput::Fp32, false, LinearEpilogue::None,
     rowsOf(12)},
    {"wide", 1024, 8192, LinearOutput::Bf16, false, LinearEpilogue::None,
     rowsOf(8, 12)},
};

/// The plan op the lowering emits for a norm feeding this linear
/// (runtime/plan/Plan.fbs: buffers out, in, normed; weights norm, W[, b]).
cuda::OpDesc normLinearOp(const NormLinearCase &nl) {
  cuda::OpDesc op;
  op.kind = OpKind::NormLinear;
  op.epilogue = nl.epilogue;
  op.bufferWidths = {outputColumns(nl.epilogue, nl.n), nl.k, nl.k};
  op.outDtype =
      nl.output == LinearOutput::Fp32 ? fb::DType::F32 : fb::DType::BF16;
  op.outRows = fb::Rows::Tokens;
  op.weightShapes = {{nl.k}, {nl.n, nl.k}};
  op.weights = {0, 1};
  if (nl.bias) { // PlanOp::hasBias() counts the weights
    op.weightShapes.push_back({nl.n});
    op.weights.push_back(2);
  }
  return op;
}

/// How a NormLinear's launches run, for the check's name.
std::string describeNormLinear(const NormLinearCase &nl, int rows,
                               const std::vector<cuda::KernelLaunch> &l) {
  const bool fused = cuda::isSinglePassLinear(l[0].instance);
  const cuda::KernelInstance &linear = l[fused ? 0 : 1].instance;
  std::string how = fused ? " " : " norm+";
  if (linear.header == "LinearSkinny.cuh") {
    const SkinnySpec spec =
        SkinnySpec::choose(nl.n, nl.k, rows, nl.output, nl.bias, nl.epilogue,
                           fused, cuda::kPlannedMultiprocessors);
    how +=
        sol::cat("skinny T", spec.tiles, " WK", spec.warpsK,
                 cuda::prefetchesWeights(normLinearOp(nl), true) ? " +L2" : "");
  } else if (linear.header == "LinearGemv.cuh") {
    const GemvSpec spec =
        GemvSpec::choose(nl.n, nl.k, rows, nl.output, nl.bias, nl.epilogue,
                         true, cuda::kPlannedMultiprocessors);
    how += sol::cat("gemv R", spec.rowsPerWarp, " WK", spec.warpsK);
  } else {
    const GemmSpec spec =
        GemmSpec::choose(cuda::gemmRowBucket(rows), nl.n, nl.output, nl.bias,
                         nl.epilogue, cuda::kPlannedMultiprocessors, nl.k);
    how += sol::cat("gemm ", spec.tileM, "x", spec.tileN,
                    l.size() == 3 ? sol::cat(" splitK ", spec.splitK) : "");
  }
  return how;
}

void checkNormLinearCase(Checker &c, const NormLinearCase &nl) {
  const int cols = outputColumns(nl.epilogue, nl.n);
  for (int rows : nl.rows) {
    if (c.options.quick && rows > 100)
      continue;
    const HostLinear p =
        makeProblem(c.rng, rows, nl.n, nl.k, nl.bias, nl.epilogue, true);
    const std::vector<int> rowIds = firstRows(rows);
    const std::vector<double> ref = p.expected(rowIds);
    // Decode-sized steps stream W: rotated, and reported in GB/s.
    const bool streaming = rows <= 128;
    const RotatedWeights weights(c, p.w, streaming);
    const DeviceBuffer dX = c.upload(p.x), dNorm = c.upload(p.normW);
    const DeviceBuffer dBias =
        c.upload(nl.bias ? p.bias : std::vector<Bf16>{0});
    const Bf16 *biasArg = nl.bias ? dBias.as<const Bf16>() : nullptr;

    {
      const std::vector<cuda::KernelLaunch> launches =
          cuda::selectKernels(normLinearOp(nl), rows, 0);
      DeviceBuffer dNormed =
          c.poisoned(static_cast<std::size_t>(rows) * nl.k * 2);
      DeviceBuffer dOut = outputBuffer(c, p, rows, nl.output, cols);
      // [GEMV or linear_skinny, the norm fused], [rms_norm, GEMM or
      // linear_skinny] or [rms_norm, split GEMM, finalize].
      const bool fused = cuda::isSinglePassLinear(launches[0].instance);
      const bool split = launches.size() == 3;
      if (fused ? launches.size() != 1
                : launches.size() != 2 && launches.size() != 3)
        fail("norm_linear: selectKernels gave ", launches.size(),
             " launches for ", rows, " rows");
      const cuda::KernelLaunch &first = launches[0];
      const cuda::KernelLaunch &linear = launches[fused ? 0 : 1];
      const bool singlePass = cuda::isSinglePassLinear(linear.instance);
      const cuda::Kernel &firstKernel = c.kernels.kernel(first.instance);
      const cuda::Kernel &linearKernel = c.kernels.kernel(linear.instance);
      const cuda::Kernel *finalize =
          split ? &c.kernels.kernel(launches[2].instance) : nullptr;
      const LaunchDims finalizeDims = split ? launches[2].dims : LaunchDims{};
      allowSharedMemory(firstKernel, first.dims);
      allowSharedMemory(linearKernel, linear.dims);
      DeviceBuffer dPartial = splitKWorkspace(c, split ? rows : 1, nl.n);

      // CudaExecutor::launchOps, case NormLinear.
      std::function<void(int)> launch = [&](int rotation) {
        if (fused) {
          launchSinglePass(c, linearKernel, linear.dims, dOut,
                           dX.as<const Bf16>(), weights[rotation], biasArg,
                           rows, nl.n, dNorm.as<const Bf16>(), kEps);
          return;
        }
        firstKernel.launch(first.dims, c.stream,
                           kernels::RmsNormArgs{.out = dNormed.address(),
                                                .x = dX.address(),
                                                .weight = dNorm.address(),
                                                .eps = kEps,
                                                .rows = rows,
                                                .xStride = nl.k,
                                                .outStride = nl.k,
                                                .rowGroup = 1});
        if (singlePass)
          launchSinglePass(c, linearKernel, linear.dims, dOut,
                           dNormed.as<const Bf16>(), weights[rotation], biasArg,
                           rows, nl.n, nullptr, 0.0f);
        else
          launchGemm(c, linearKernel, linear.dims, finalize, finalizeDims,
                     dPartial.as<float>(), dOut.as<void>(),
                     dNormed.as<const Bf16>(), weights[rotation], biasArg, rows,
                     nl.n, nl.k);
      };
      launch(0);

      CheckRecord r =
          makeRecord(c, "norm_linear",
                     sol::cat(nl.name, " ", nl.n, "x", nl.k, " T=", rows,
                              epilogueTag(nl.epilogue),
                              nl.output == LinearOutput::Fp32 ? " fp32" : "",
                              describeNormLinear(nl, rows, launches)),
                     linear.instance);
      judgeOutput(c, r, dOut, p, rows, nl.output, cols, rowIds, ref);
      if (split)
        judgeWorkspace(c, r, dPartial);
      if (streaming)
        r.bytes = gemvBytes(p, rows, nl.output);
      r.flops = 2.0 * rows * nl.n * static_cast<double>(nl.k);
      c.finish(std::move(r), &launch);
    }
  }
}

void checkNormLinear(Checker &c) {
  for (const NormLinearCase &nl : kNormLinearCases)
    checkNormLinearCase(c, nl);
}

// ---------------------------------------------------------------------------
// gemv_argmax

struct ArgmaxHeadCase {
  const char *name;
  int n, k;
  bool norm;
  /// Rows of W made equal so that they tie for the maximum (empty: random
  /// logits); the lowest, 77, must win.
  std::vector<int> tieRows;
};

// Llama's and Qwen2.5-1.5B's LM heads behind the final norm, one without
// the norm, and exact ties at the maximum (the lowest index must win).
const ArgmaxHeadCase kArgmaxHeadCases[] = {
    {"lm_head", 128256, 2048, true, {}},
    {"lm_head qwen", 151936, 1536, true, {}},
    {"lm_head", 32000, 2048, false, {}},
    {"lm_head ties", 32000, 2048, true, {31000, 77, 20000, 78}},
};

GemvSpec argmaxHeadSpec(const ArgmaxHeadCase &a, bool argmax) {
  GemvSpec spec = GemvSpec::choose(a.n, a.k, 1, LinearOutput::Fp32, false,
                                   LinearEpilogue::None, a.norm);
  spec.argmax = argmax;
  return spec;
}

// The LM head of greedy one-row steps (GemvSpec::argmax): its logits must
// be the plain kernel's, bit for bit, and its key must name their first
// maximum (Argmax.cuh's rule), in every launch (the key starts at zero).
void checkArgmaxHead(Checker &c) {
  for (const ArgmaxHeadCase &a : kArgmaxHeadCases) {
    HostLinear p =
        makeProblem(c.rng, 1, a.n, a.k, false, LinearEpilogue::None, a.norm);
    if (!a.tieRows.empty()) {
      // The row of the largest |logit|, times +-2 (its logit's sign), in
      // every tied row: they top the logits together.
      const std::vector<double> ref = p.expected(firstRows(1));
      int top = 0;
      for (int i = 1; i < a.n; ++i)
        if (std::fabs(ref[i]) > std::fabs(ref[top]))
          top = i;
      const float scale = ref[top] < 0 ? -2.0f : 2.0f;
      std::vector<Bf16> scaled(p.w.begin() + std::ptrdiff_t(top) * a.k,
                               p.w.begin() + std::ptrdiff_t(top + 1) * a.k);
      for (Bf16 &v : scaled)
        v = floatToBf16(bf16ToFloat(v) * scale);
      for (int row : a.tieRows)
        std::copy(scaled.begin(), scaled.end(),
                  p.w.begin() + std::ptrdiff_t(row) * a.k);
    }
    const RotatedWeights weights(c, p.w, true);
    const DeviceBuffer dX = c.upload(p.x);
    const DeviceBuffer dNorm =
        c.upload(a.norm ? p.normW : std::vector<Bf16>{0});
    const Bf16 *normArg = a.norm ? dNorm.as<const Bf16>() : nullptr;
    const float eps = a.norm ? kEps : 0.0f;
    DeviceBuffer plainOut(static_cast<std::size_t>(a.n) * 4),
        headOut(static_cast<std::size_t>(a.n) * 4);
    DeviceBuffer dKey(8);
    const GemvSpec plain = argmaxHeadSpec(a, false),
                   head = argmaxHeadSpec(a, true);
    const cuda::Kernel &plainKernel = c.kernels.kernel(plain.instance());
    const cuda::Kernel &headKernel = c.kernels.kernel(head.instance());
    const LaunchDims dims = head.dims(a.n);
    allowSharedMemory(plainKernel, dims);
    allowSharedMemory(headKernel, dims);
    launchSinglePass(c, plainKernel, dims, plainOut, dX.as<const Bf16>(),
                     weights[0], nullptr, 1, a.n, normArg, eps);
    std::function<void(int)> launch = [&](int rotation) {
      dKey.fillBytes(0, c.stream);
      headKernel.launch(dims, c.stream,
                        kernels::LinearArgs{.y = headOut.address(),
                                            .x = dX.address(),
                                            .w = weights[rotation],
                                            .normWeight = normArg,
                                            .argmaxKey = dKey.address(),
                                            .rows = 1,
                                            .n = a.n,
                                            .eps = eps});
    };
    launch(0);
    const std::vector<float> logits = c.download<float>(plainOut);
    const bool sameLogits = c.download<float>(headOut) == logits;
    const std::vector<unsigned long long> key =
        c.download<unsigned long long>(dKey);
    const int index = static_cast<int>(0xffffffffu - (key[0] & 0xffffffffu));
    int expected = 0;
    for (int i = 1; i < a.n; ++i)
      if (logits[i] > logits[expected])
        expected = i;
    CheckRecord r =
        makeRecord(c, "gemv_argmax",
                   sol::cat(a.name, " ", a.n, "x", a.k, a.norm ? " +norm" : "",
                            " R", head.rowsPerWarp, " WK", head.warpsK),
                   head.instance());
    r.checked = true;
    r.passed = sameLogits && index == expected &&
               (a.tieRows.empty() || expected == 77);
    if (!sameLogits)
      r.note += "logits differ from the plain LM head; ";
    if (index != expected)
      r.note += sol::cat("argmax ", index, ", expected ", expected, "; ");
    if (!a.tieRows.empty() && expected != 77)
      r.note +=
          sol::cat("the tied rows are not the maximum (", expected, "); ");
    r.bytes = gemvBytes(p, 1, LinearOutput::Fp32);
    c.finish(std::move(r), &launch);
  }
}

// ---------------------------------------------------------------------------
// gemv_add_norm

struct AddNormCase {
  const char *name;
  int n, k;
  LinearEpilogue epilogue;
  bool inputNorm;
};

// Gemma-3-4B's QKV and gate/up, Gemma-2-9B's gate/up (the norms after
// attention and after the MLP), and a plain residual add.
const AddNormCase kAddNormCases[] = {
    {"gemma-3-4b qkv", 4096, 2560, LinearEpilogue::None, true},
    {"gemma-3-4b gate_up", 20480, 2560, LinearEpilogue::Geglu, true},
    {"gemma-2-9b gate_up", 28672, 3584, LinearEpilogue::Geglu, true},
    {"residual add", 3072, 2048, LinearEpilogue::None, false},
};

/// The plain GEMV the unfused path runs after rms_norm, or the fused one.
GemvSpec addNormSpec(const AddNormCase &a, bool fused) {
  GemvSpec spec = GemvSpec::choose(a.n, a.k, 1, LinearOutput::Bf16, false,
                                   a.epilogue, fused);
  if (fused)
    spec.addNorm = a.inputNorm ? cuda::GemvAddNorm::InputNorm
                               : cuda::GemvAddNorm::Residual;
  return spec;
}

void checkAddNorm(Checker &c) {
  for (const AddNormCase &a : kAddNormCases) {
    if (c.options.quick && static_cast<long long>(a.n) * a.k > 30'000'000)
      continue;
    const HostLinear p =
        makeProblem(c.rng, 1, a.n, a.k, false, a.epilogue, true);
    const std::vector<Bf16> residual = randomBf16(c.rng, a.k, -4.0f, 4.0f),
                            inputW = randomBf16(c.rng, a.k, 0.5f, 1.5f);
    const RotatedWeights weights(c, p.w, true);
    const DeviceBuffer dX = c.upload(p.x), dNorm = c.upload(p.normW),
                       dInput = c.upload(inputW);
    DeviceBuffer dResidualA = c.upload(residual),
                 dResidualB = c.upload(residual);
    DeviceBuffer dNormed = c.poisoned(static_cast<std::size_t>(a.k) * 2);
    const int cols = outputColumns(a.epilogue, a.n);
    // One poisoned guard row past the outputs.
    DeviceBuffer dOutA = c.poisoned(static_cast<std::size_t>(cols) * 4),
                 dOutB = c.poisoned(static_cast<std::size_t>(cols) * 4);
    DeviceBuffer dArrivals = c.upload(std::vector<unsigned>{0});
    constexpr float kInputEps = 1e-6f;

    const cuda::RmsNormSpec normSpec{a.k};
    const GemvSpec plain = addNormSpec(a, false), fused = addNormSpec(a, true);
    const cuda::Kernel &normKernel = c.kernels.kernel(normSpec.instance());
    const cuda::Kernel &plainKernel = c.kernels.kernel(plain.instance());
    const cuda::Kernel &fusedKernel = c.kernels.kernel(fused.instance());
    const LaunchDims plainDims = plain.dims(a.n), fusedDims = fused.dims(a.n);
    allowSharedMemory(plainKernel, plainDims);
    allowSharedMemory(fusedKernel, fusedDims);
    const Bf16 *inputArg = a.inputNorm ? dInput.as<const Bf16>() : nullptr;

    // The executor's two launches without the fusion (RmsNorm op, Linear).
    std::function<void(int)> unfused = [&](int rotation) {
      normKernel.launch(normSpec.dims(1), c.stream,
                        kernels::RmsNormArgs{.out = dNormed.address(),
                                             .x = dX.address(),
                                             .residual = dResidualA.address(),
                                             .weight = dNorm.address(),
                                             .eps = kEps,
                                             .rows = 1,
                                             .xStride = a.k,
                                             .outStride = a.k,
                                             .rowGroup = 1,
                                             .inputWeight = inputArg,
                                             .inputEps = kInputEps});
      launchSinglePass(c, plainKernel, plainDims, dOutA,
                       dNormed.as<const Bf16>(), weights[rotation], nullptr, 1,
                       a.n, nullptr, 0.0f);
    };
    std::function<void(int)> launch = [&](int rotation) {
      fusedKernel.launch(fusedDims, c.stream,
                         kernels::LinearArgs{.y = dOutB.address(),
                                             .x = dX.address(),
                                             .w = weights[rotation],
                                             .normWeight = dNorm.address(),
                                             .rows = 1,
                                             .n = a.n,
                                             .k = a.k,
                                             .eps = kEps,
                                             .residual = dResidualB.address(),
                                             .inputNormWeight = inputArg,
                                             .arrivals = dArrivals.address(),
                                             .inputEps = kInputEps});
    };
    unfused(0);
    launch(0);
    const bool sameOut = c.download<Bf16>(dOutA) == c.download<Bf16>(dOutB);
    const std::vector<Bf16> resA = c.download<Bf16>(dResidualA),
                            resB = c.download<Bf16>(dResidualB);
    const bool sameResidual = resA == resB && resA != residual;
    const unsigned arrivals = c.download<unsigned>(dArrivals)[0];

    const std::string what =
        sol::cat(a.name, " ", a.n, "x", a.k, epilogueTag(a.epilogue),
                 a.inputNorm ? " +input norm" : "", " R", fused.rowsPerWarp,
                 " WK", fused.warpsK);
    CheckRecord r =
        makeRecord(c, "gemv_add_norm", what + " fused", fused.instance());
    r.checked = true;
    r.passed = sameOut && sameResidual && arrivals == 0;
    if (!sameOut)
      r.note += "outputs differ from rms_norm + linear_gemv; ";
    if (!sameResidual)
      r.note += "the residual is not rms_norm's sum; ";
    if (arrivals != 0)
      r.note += sol::cat("arrival counter left at ", arrivals, "; ");
    r.bytes = gemvBytes(p, 1, LinearOutput::Bf16);
    c.finish(std::move(r), &launch);
    CheckRecord pair = makeRecord(c, "gemv_add_norm", what + " rms_norm+gemv",
                                  plain.instance());
    pair.bytes = gemvBytes(p, 1, LinearOutput::Bf16);
    c.finish(std::move(pair), &unfused);
  }
}

} // namespace

std::vector<CheckFamily> fusedLinearChecks() {
  return {
      {"gemv_fused",
       [](KernelLibrary &k) {
         for (const FusedGemvCase &g : kGemvCases)
           for (int rows : g.rows)
             k.require(gemvSpecFor(g, rows).instance());
       },
       checkFusedGemv},
      {"gemm_fused",
       [](KernelLibrary &k) {
         for (const FusedGemmCase &g : kGemmCases)
           for (const GemmSpec &spec : gemmSpecsFor(g)) {
             k.require(spec.instance());
             if (spec.splitK > 1)
               k.require(spec.finalizeInstance());
           }
       },
       checkFusedGemm},
      {"norm_linear",
       [](KernelLibrary &k) {
         for (const NormLinearCase &nl : kNormLinearCases)
           for (int rows : nl.rows)
             for (const cuda::KernelLaunch &l :
                  cuda::selectKernels(normLinearOp(nl), rows, 0))
               k.require(l.instance);
       },
       checkNormLinear},
      {"gemv_add_norm",
       [](KernelLibrary &k) {
         for (const AddNormCase &a : kAddNormCases) {
           k.require(cuda::RmsNormSpec{a.k}.instance());
           k.require(addNormSpec(a, false).instance());
           k.require(addNormSpec(a, true).instance());
         }
       },
       checkAddNorm},
      {"gemv_argmax",
       [](KernelLibrary &k) {
         for (const ArgmaxHeadCase &a : kArgmaxHeadCases)
           for (bool argmax : {false, true})
             k.require(argmaxHeadSpec(a, argmax).instance());
       },
       checkArgmaxHead},
  };
}

} // namespace sol::check

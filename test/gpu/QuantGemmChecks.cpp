//===- QuantGemmChecks.cpp - linear_gemm_quant: int8, int4 ----------------===//
//
// quant_gemm: linear_gemm_quant (LinearGemmQuant.cuh) as QuantGemmSpec
// chooses it for the row bucket, and from 16 rows linear_wgmma_quant
// (LinearWgmmaQuant.cuh, Hopper only) as QuantWgmmaSpec chooses it with the
// variants its sweep compares, on the decode linears of Llama-3.2-1B and
// Llama-3.1-8B (QuantProblems.h, their inputs already normalised: a
// NormLinear of many rows runs rms_norm first) at 2 to 128 rows, with
// weights quantized on the host (int8 per row, int4 in groups of 128),
// against the float64 reference from the dequantized weights. A split-K
// launch is followed by linear_splitk_finalize, which must leave the
// workspace zero. Timed with the codes rotated through copies larger than
// L2. Beside them, on the same problems: the bf16 linear_gemm the step runs
// for unquantized weights.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "QuantProblems.h"

#include "runtime/cuda/KernelSelection.h"

#include <algorithm>

namespace sol::check {
namespace {

using cuda::GemmSpec;
using cuda::LinearOutput;
using cuda::QuantGemmSpec;
using cuda::QuantWgmmaSpec;
using cuda::WeightFormat;

/// 2 and 8 rows (the chosen configuration only) are set beside
/// linear_skinny_quant's records of the same shapes (quant_skinny).
constexpr int kRows[] = {2, 8, 16, 32, 64, 128};
constexpr WeightFormat kGemmFormats[] = {WeightFormat::Int8,
                                         WeightFormat::Int4};

/// The shape with its norm taken out (the GEMM reads normalised rows).
QuantShape withoutNorm(const QuantShape &s) {
  QuantShape plain = s;
  plain.norm = false;
  return plain;
}

QuantGemmSpec quantGemmSpecFor(const QuantShape &s, int rows, WeightFormat f) {
  return QuantGemmSpec::choose(cuda::gemmRowBucket(rows), s.n, s.k, f,
                               LinearOutput::Bf16, false, s.epilogue,
                               groupSizeOf(f), cuda::kPlannedMultiprocessors);
}

/// The chosen configuration first, then the variants the sweep compares:
/// 1, 2 or 4 sub-tiles a stage, 3 to 6 stages, 4 warps, 256 columns a
/// block, two warps along M, 128-row tiles at 128 rows and 32-row tiles
/// from 64. Below 16 rows the chosen configuration only.
std::vector<QuantGemmSpec> quantGemmSweep(const QuantShape &s, int rows,
                                          WeightFormat f) {
  const QuantGemmSpec chosen = quantGemmSpecFor(s, rows, f);
  std::vector<QuantGemmSpec> out = {chosen};
  if (rows < 16)
    return out;
  const int bucket = cuda::gemmRowBucket(rows);
  auto add = [&](int tileM, int tileN, int warpsM, int warpsN, int stages,
                 int kSub) {
    QuantGemmSpec v = chosen;
    v.tileM = tileM;
    v.tileN = tileN;
    v.warpsM = warpsM;
    v.warpsN = warpsN;
    v.stages = stages;
    v.kSub = kSub;
    if (v.sharedBytes() > 227 * 1024)
      return;
    v.splitFor(bucket, s.n, s.k, cuda::kPlannedMultiprocessors);
    for (const QuantGemmSpec &o : out)
      if (o.instance() == v.instance() && o.splitK == v.splitK)
        return;
    out.push_back(v);
  };
  const int tileM = std::min(bucket, 64);
  for (int kSub : {1, 2, 4})
    add(tileM, 128, 1, 8, 4, kSub);
  add(tileM, 128, 1, 8, 3, 2);
  add(tileM, 128, 1, 8, 6, 2);
  add(tileM, 128, 1, 4, 4, 2);
  add(tileM, 256, 1, 8, 4, 2);
  if (tileM >= 32)
    add(tileM, 128, 2, 4, 4, 2);
  if (bucket == 128)
    add(128, 128, 1, 8, 4, 2);
  // 32-row tiles past 32 rows: every code dequantized by two blocks or
  // more, but half the accumulators (int4's 64-row tiles take 170
  // registers, one block an SM).
  if (bucket >= 64) {
    add(32, 128, 1, 8, 4, 2);
    add(32, 128, 1, 8, 3, 2);
    add(32, 128, 1, 8, 4, 1);
  }
  return out;
}

QuantWgmmaSpec quantWgmmaSpecFor(const QuantShape &s, int rows,
                                 WeightFormat f) {
  return QuantWgmmaSpec::choose(cuda::gemmRowBucket(rows), s.n, s.k, f,
                                LinearOutput::Bf16, false, s.epilogue,
                                groupSizeOf(f), cuda::kPlannedMultiprocessors);
}

/// linear_wgmma_quant from 16 rows: the chosen configuration first, then
/// 1, 2 or 4 sub-tiles a stage in 3 to 8 stages, one and four warpgroups.
std::vector<QuantWgmmaSpec> quantWgmmaSweep(const QuantShape &s, int rows,
                                            WeightFormat f) {
  if (rows < 16)
    return {};
  const QuantWgmmaSpec chosen = quantWgmmaSpecFor(s, rows, f);
  std::vector<QuantWgmmaSpec> out = {chosen};
  const int bucket = cuda::gemmRowBucket(rows);
  auto add = [&](int warpGroups, int stages, int kSub) {
    QuantWgmmaSpec v = chosen;
    v.warpGroups = warpGroups;
    v.stages = stages;
    v.kSub = kSub;
    if (!v.fits())
      return;
    v.splitFor(bucket, s.n, s.k, cuda::kPlannedMultiprocessors);
    for (const QuantWgmmaSpec &o : out)
      if (o.instance() == v.instance() && o.splitK == v.splitK)
        return;
    out.push_back(v);
  };
  for (auto [stages, kSub] :
       {std::pair{4, 1}, {6, 1}, {8, 1}, {3, 2}, {5, 2}, {3, 4}})
    add(2, stages, kSub);
  add(1, 6, 1);
  add(4, 4, 1);
  add(4, 3, 2);
  add(4, 4, 2);
  return out;
}

GemmSpec bf16GemmSpecFor(const QuantShape &s, int rows) {
  return GemmSpec::choose(cuda::gemmRowBucket(rows), s.n, LinearOutput::Bf16,
                          false, s.epilogue, cuda::kPlannedMultiprocessors,
                          s.k);
}

/// A GEMM launch's split-K finalize and zeroed workspace, when it splits.
struct SplitK {
  const cuda::Kernel *finalize = nullptr;
  cuda::LaunchDims dims;
  cuda::DeviceBuffer partial;
  const cuda::DeviceBuffer *workspace() const {
    return finalize ? &partial : nullptr;
  }
};
template <typename Spec>
SplitK splitKOf(Checker &c, const Spec &spec, int rows, int n) {
  const bool split = spec.splitK > 1;
  return {split ? &c.kernels.kernel(spec.finalizeInstance()) : nullptr,
          spec.finalizeDims(rows, n), splitKWorkspace(c, split ? rows : 1, n)};
}

std::string shapeName(const QuantShape &s, int rows) {
  return sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k, " T=", rows);
}

/// A record's configuration: linear_gemm_quant's tiles and warps, or
/// linear_wgmma_quant's tokens and warpgroups; stages, sub-tiles, split.
std::string configName(const QuantGemmSpec &spec) {
  return sol::cat("gemm ", spec.tileM, "x", spec.tileN, " w", spec.warpsM, "x",
                  spec.warpsN, " s", spec.stages, " k", spec.kSub);
}
std::string configName(const QuantWgmmaSpec &spec) {
  return sol::cat("wgmma T", spec.tokens, " wg", spec.warpGroups, " s",
                  spec.stages, " k", spec.kSub);
}

/// Whether the executor runs `spec` for `rows` rows of this linear.
bool selected(const QuantShape &s, int rows, WeightFormat f,
              const QuantGemmSpec &spec) {
  const QuantGemmSpec chosen = quantGemmSpecFor(s, rows, f);
  return rows < cuda::kQuantWgmmaMinRows &&
         spec.instance() == chosen.instance() && spec.splitK == chosen.splitK;
}
bool selected(const QuantShape &s, int rows, WeightFormat f,
              const QuantWgmmaSpec &spec) {
  const QuantWgmmaSpec chosen = quantWgmmaSpecFor(s, rows, f);
  return rows >= cuda::kQuantWgmmaMinRows &&
         spec.instance() == chosen.instance() && spec.splitK == chosen.splitK;
}

struct QuantGemmRun {
  Checker &c;
  const QuantShape &s;
  const QuantProblem &p;
  WeightFormat f;
  const RotatedQuant &weights;
  std::span<const double> ref; // of the most rows

  template <typename Spec> void operator()(const Spec &spec, int rows) const {
    const cuda::LaunchDims dims = spec.dims(rows, s.n);
    const SplitK split = splitKOf(c, spec, rows, s.n);
    checkLaunch(
        c, "quant_gemm",
        sol::cat(shapeName(s, rows), " ", formatName(f), " ", configName(spec),
                 split.finalize ? sol::cat(" splitK ", spec.splitK) : "",
                 selected(s, rows, f, spec) ? " *" : ""),
        p, rows, spec.instance(), dims,
        static_cast<double>(spec.weightBytes(s.n, s.k)),
        ref.first(static_cast<std::size_t>(rows) * p.cols),
        [&](const cuda::Kernel &kernel, cuda::DeviceBuffer &y, int rotation) {
          const RotatedQuant::Copy &w = weights[rotation];
          kernels::QuantGemmArgs args{
              .y = split.finalize ? split.partial.address() : y.address(),
              .x = p.x.as<const Bf16>(),
              .w = w.codes.address(),
              .scales = w.scales.address(),
              .zeros = f == WeightFormat::Int4 ? w.zeros.address() : 0ull,
              .rows = rows,
              .n = s.n,
              .k = s.k};
          kernel.launch(dims, c.stream, args);
          if (split.finalize)
            split.finalize->launch(split.dims, c.stream,
                                   kernels::SplitKFinalizeArgs{
                                       .y = y.address(),
                                       .partial = split.partial.as<float>(),
                                       .rows = rows,
                                       .n = s.n});
        },
        split.workspace());
  }
};

void checkQuantGemmShape(Checker &c, const QuantShape &shape) {
  const QuantShape s = withoutNorm(shape);
  constexpr int kMaxRows = kRows[std::size(kRows) - 1];
  const QuantProblem p(c, s, kMaxRows);
  // Outputs of row t do not depend on the other rows: the references of
  // the most rows serve every row count.
  auto firstOf = [&](const std::vector<double> &ref, int rows) {
    return std::span<const double>(ref).first(static_cast<std::size_t>(rows) *
                                              p.cols);
  };
  for (WeightFormat f : kGemmFormats) {
    const HostQuant q = quantize(p.host.w, s.n, s.k, f);
    const RotatedQuant weights(c, q, true);
    const std::vector<double> ref = quantReference(p.host, q, kMaxRows, f);
    const QuantGemmRun run{c, s, p, f, weights, ref};
    for (int rows : kRows) {
      for (const QuantGemmSpec &spec : quantGemmSweep(s, rows, f))
        run(spec, rows);
      if (c.context.computeCapabilityMajor() == 9)
        for (const QuantWgmmaSpec &spec : quantWgmmaSweep(s, rows, f))
          run(spec, rows);
    }
  }

  // The bf16 GEMM on the same problem, for comparison.
  const RotatedWeights weights(c, p.host.w, true);
  const std::vector<double> bf16Ref = p.host.expected(firstRows(kMaxRows));
  for (int rows : kRows) {
    const GemmSpec spec = bf16GemmSpecFor(s, rows);
    const cuda::LaunchDims dims = spec.dims(rows, s.n);
    const SplitK split = splitKOf(c, spec, rows, s.n);
    checkLaunch(
        c, "quant_gemm",
        sol::cat(shapeName(s, rows), " bf16 gemm ", spec.tileM, "x", spec.tileN,
                 split.finalize ? sol::cat(" splitK ", spec.splitK) : ""),
        p, rows, spec.instance(), dims, 2.0 * s.n * s.k, firstOf(bf16Ref, rows),
        [&](const cuda::Kernel &kernel, cuda::DeviceBuffer &y, int rotation) {
          launchGemm(c, kernel, dims, split.finalize, split.dims,
                     split.partial.as<float>(), y.as<void>(),
                     p.x.as<const Bf16>(), weights[rotation], nullptr, rows,
                     s.n, s.k);
        },
        split.workspace());
  }
}

void checkQuantGemm(Checker &c) {
  for (const QuantShape &s : kQuantShapes) {
    // --quick (also the sanitizer runs) keeps to the 1B shapes.
    if (c.options.quick && std::string_view(s.model) != "1B")
      continue;
    checkQuantGemmShape(c, s);
  }
}

} // namespace

std::vector<CheckFamily> quantGemmChecks() {
  return {
      {"quant_gemm",
       [](KernelLibrary &k) {
         for (const QuantShape &shape : kQuantShapes) {
           const QuantShape s = withoutNorm(shape);
           for (int rows : kRows) {
             for (WeightFormat f : kGemmFormats) {
               for (const QuantGemmSpec &spec : quantGemmSweep(s, rows, f)) {
                 k.require(spec.instance());
                 if (spec.splitK > 1)
                   k.require(spec.finalizeInstance());
               }
               for (const QuantWgmmaSpec &spec : quantWgmmaSweep(s, rows, f)) {
                 k.require(spec.instance());
                 if (spec.splitK > 1)
                   k.require(spec.finalizeInstance());
               }
             }
             const GemmSpec bf16 = bf16GemmSpecFor(s, rows);
             k.require(bf16.instance());
             if (bf16.splitK > 1)
               k.require(bf16.finalizeInstance());
           }
         }
       },
       checkQuantGemm},
  };
}

} // namespace sol::check

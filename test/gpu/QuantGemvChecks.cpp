//===- QuantGemvChecks.cpp - linear_gemv_quant: int8, int4, fp8 weights ---===//
//
// quant_gemv: linear_gemv_quant on the decode linears of Llama-3.2-1B and
// Llama-3.1-8B at 1 and 8 rows, with weights quantized on the host into
// each format of runtime/support/Quantize.h, against the float64
// reference of QuantProblems.h. Outputs are poisoned, with a guard row past
// the last (LinearProblems.h). Timed with the codes, scales and zeros
// rotated through copies larger than L2; GB/s counts the bytes a launch
// must move (quantized weights, x, norm weight, output, residual). Beside
// each shape, the bf16 linear_gemv the plan would run otherwise.
// quant_gemv_sweep times the other block geometries at one row;
// quant_gemv_mma linear_gemv_quant_mma's beside linear_gemv_quant.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "QuantProblems.h"

#include <algorithm>
#include <string_view>

namespace sol::check {
namespace {

using cuda::GemvSpec;
using cuda::LinearOutput;
using cuda::QuantGemvMmaSpec;
using cuda::QuantGemvSpec;
using cuda::WeightFormat;

constexpr int kRows[] = {1, 8};

QuantGemvSpec quantSpecFor(const QuantShape &s, int rows, WeightFormat f) {
  return QuantGemvSpec::choose(s.n, s.k, rows, f, LinearOutput::Bf16, false,
                               s.epilogue, s.norm, groupSizeOf(f));
}

GemvSpec bf16SpecFor(const QuantShape &s, int rows) {
  return GemvSpec::choose(s.n, s.k, rows, LinearOutput::Bf16, false, s.epilogue,
                          s.norm);
}

void checkQuantShape(Checker &c, const QuantShape &s) {
  const int maxRows = *std::max_element(std::begin(kRows), std::end(kRows));
  const QuantProblem p(c, s, maxRows);
  for (WeightFormat f : kQuantFormats) {
    const HostQuant q = quantize(p.host.w, s.n, s.k, f);
    const RotatedQuant weights(c, q, true);
    for (int rows : kRows) {
      const QuantGemvSpec spec = quantSpecFor(s, rows, f);
      checkQuantLaunch(
          c, "quant_gemv",
          sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k, " T=", rows, " ",
                   formatName(f), " R", spec.rowsPerWarp, " WK", spec.warpsK),
          p, weights, f, rows, spec.instance(), spec.dims(s.n),
          spec.weightBytes(s.n), quantReference(p.host, q, rows, f));
    }
  }

  // The bf16 GEMV on the same problem, for comparison.
  const RotatedWeights weights(c, p.host.w, true);
  for (int rows : kRows) {
    const GemvSpec spec = bf16SpecFor(s, rows);
    checkBf16Launch(c, "quant_gemv",
                    sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k,
                             " T=", rows, " bf16 R", spec.rowsPerWarp, " WK",
                             spec.warpsK),
                    p, weights, rows, spec.instance(), spec.dims(s.n));
  }
}

void checkQuantGemv(Checker &c) {
  for (const QuantShape &s : kQuantShapes) {
    // --quick (also the sanitizer runs) keeps to the 1B shapes.
    if (c.options.quick && std::string_view(s.model) != "1B")
      continue;
    checkQuantShape(c, s);
  }
}

// quant_gemv_sweep: one row of every shape, int8, int4 and fp8, at weight rows
// per warp 1..16 and K over 1..8 warps beside the chosen configuration
// (not under --quick).

constexpr WeightFormat kSweepFormats[] = {
    WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Fp8};

/// The chosen configuration first, then every (rows per warp, warps along
/// K) that gives each warp at least one load a lane.
std::vector<QuantGemvSpec> quantGemvSweep(const QuantShape &s, WeightFormat f) {
  const QuantGemvSpec chosen = quantSpecFor(s, 1, f);
  std::vector<QuantGemvSpec> out = {chosen};
  const int vectors = s.k / chosen.vectorValues();
  for (int rowsPerWarp : {1, 2, 4, 8, 16})
    for (int warpsK : {1, 2, 4, 8}) {
      QuantGemvSpec v = chosen;
      v.rowsPerWarp = rowsPerWarp;
      v.warpsK = warpsK;
      if (vectors / warpsK < 32 ||
          (s.epilogue == cuda::LinearEpilogue::Swiglu && rowsPerWarp < 2) ||
          (v.rowsPerWarp == chosen.rowsPerWarp && v.warpsK == chosen.warpsK))
        continue;
      out.push_back(v);
    }
  return out;
}

void checkQuantGemvSweep(Checker &c) {
  if (c.options.quick)
    return;
  for (const QuantShape &s : kQuantShapes) {
    const QuantProblem p(c, s, 1);
    for (WeightFormat f : kSweepFormats) {
      const HostQuant q = quantize(p.host.w, s.n, s.k, f);
      const RotatedQuant weights(c, q, true);
      const std::vector<double> ref = quantReference(p.host, q, 1, f);
      for (const QuantGemvSpec &spec : quantGemvSweep(s, f))
        checkQuantLaunch(c, "quant_gemv_sweep",
                         sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k,
                                  " T=1 ", formatName(f), " R",
                                  spec.rowsPerWarp, " WK", spec.warpsK),
                         p, weights, f, 1, spec.instance(), spec.dims(s.n),
                         spec.weightBytes(s.n), ref);
    }
  }
}

// quant_gemv_mma: linear_gemv_quant_mma at one row (int4) on every shape:
// the configuration QuantGemvMmaSpec::choose picks, then the other (tiles,
// slices of K, depth) triples, beside linear_gemv_quant's chosen
// configuration in the same run.

std::vector<QuantGemvMmaSpec> quantGemvMmaSweep(const QuantShape &s,
                                                bool quick) {
  const QuantGemvMmaSpec chosen =
      QuantGemvMmaSpec::choose(s.k, LinearOutput::Bf16, false, s.epilogue,
                               s.norm, groupSizeOf(WeightFormat::Int4));
  std::vector<QuantGemvMmaSpec> out = {chosen};
  if (quick)
    return out;
  for (int slices : {8, 4, 2})
    for (int depth : {2, 4, 6}) {
      QuantGemvMmaSpec v = chosen;
      v.slicesK = slices;
      v.tiles = 8 / slices;
      v.depth = depth;
      if (v.slicesK == chosen.slicesK && v.depth == chosen.depth)
        continue;
      out.push_back(v);
    }
  return out;
}

void checkQuantGemvMma(Checker &c) {
  constexpr WeightFormat f = WeightFormat::Int4;
  for (const QuantShape &s : kQuantShapes) {
    if (c.options.quick && std::string_view(s.model) != "1B")
      continue;
    const QuantProblem p(c, s, 1);
    const HostQuant q = quantize(p.host.w, s.n, s.k, f);
    const RotatedQuant weights(c, q, true);
    const std::vector<double> ref = quantReference(p.host, q, 1, f);
    const QuantGemvSpec gemv = quantSpecFor(s, 1, f);
    const std::string shape =
        sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k, " T=1 int4");
    checkQuantLaunch(
        c, "quant_gemv_mma",
        sol::cat(shape, " gemv R", gemv.rowsPerWarp, " WK", gemv.warpsK), p,
        weights, f, 1, gemv.instance(), gemv.dims(s.n), gemv.weightBytes(s.n),
        ref);
    for (const QuantGemvMmaSpec &spec : quantGemvMmaSweep(s, c.options.quick))
      checkQuantLaunch(c, "quant_gemv_mma",
                       sol::cat(shape, " mma T", spec.tiles, " S", spec.slicesK,
                                " D", spec.depth),
                       p, weights, f, 1, spec.instance(), spec.dims(s.n),
                       spec.weightBytes(s.n), ref);
  }
}

} // namespace

std::vector<CheckFamily> quantGemvChecks() {
  return {
      {"quant_gemv",
       [](KernelLibrary &k) {
         for (const QuantShape &s : kQuantShapes)
           for (int rows : kRows) {
             for (WeightFormat f : kQuantFormats)
               k.require(quantSpecFor(s, rows, f).instance());
             k.require(bf16SpecFor(s, rows).instance());
           }
       },
       checkQuantGemv},
      {"quant_gemv_sweep",
       [](KernelLibrary &k) {
         for (const QuantShape &s : kQuantShapes)
           for (WeightFormat f : kSweepFormats)
             for (const QuantGemvSpec &spec : quantGemvSweep(s, f))
               k.require(spec.instance());
       },
       checkQuantGemvSweep},
      {"quant_gemv_mma",
       [](KernelLibrary &k) {
         for (const QuantShape &s : kQuantShapes) {
           k.require(quantSpecFor(s, 1, WeightFormat::Int4).instance());
           for (const QuantGemvMmaSpec &spec : quantGemvMmaSweep(s, false))
             k.require(spec.instance());
         }
       },
       checkQuantGemvMma},
  };
}

} // namespace sol::check

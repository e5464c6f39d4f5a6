//===- QuantSkinnyChecks.cpp - linear_skinny_quant: int8, int4, fp8 -------===//
//
// quant_skinny: linear_skinny_quant (LinearSkinnyQuant.cuh) as
// QuantSkinnySpec::choose configures it, on the decode linears of
// Llama-3.2-1B and Llama-3.1-8B at 1, 2, 8 and 16 rows, with weights
// quantized on the host into each format (QuantProblems.h: int8 per row,
// int4 in groups of 128, fp8 E4M3 per row), against the float64 reference
// from the dequantized weights. Outputs are poisoned, with a guard row past
// the last (LinearProblems.h). Timed with the codes, scales and zeros
// rotated through copies larger than L2; GB/s counts the bytes a launch
// must move (quantized weights, x, norm weight, output, residual). Beside
// them, on the same problem: linear_gemv_quant at 1 row, and the bf16
// linear_skinny at every row count (without its L2 prefetch, which
// linear_skinny_quant does not have). A configuration whose shared memory
// does not fit a block is recorded as such, not launched.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "QuantProblems.h"

#include "runtime/cuda/KernelSelection.h"

#include <iterator>

namespace sol::check {
namespace {

using cuda::LinearOutput;
using cuda::QuantGemvSpec;
using cuda::QuantSkinnySpec;
using cuda::SkinnySpec;
using cuda::WeightFormat;

constexpr int kRows[] = {1, 2, 8, 16};

QuantSkinnySpec quantSkinnySpecFor(const QuantShape &s, int rows,
                                   WeightFormat f) {
  return QuantSkinnySpec::choose(s.n, s.k, rows, f, LinearOutput::Bf16, false,
                                 s.epilogue, s.norm, groupSizeOf(f),
                                 cuda::kPlannedMultiprocessors);
}

QuantGemvSpec quantGemvSpecFor(const QuantShape &s, WeightFormat f) {
  return QuantGemvSpec::choose(s.n, s.k, 1, f, LinearOutput::Bf16, false,
                               s.epilogue, s.norm, groupSizeOf(f));
}

SkinnySpec bf16SkinnySpecFor(const QuantShape &s, int rows) {
  return SkinnySpec::choose(s.n, s.k, rows, LinearOutput::Bf16, false,
                            s.epilogue, s.norm, cuda::kPlannedMultiprocessors);
}

std::string shapeName(const QuantShape &s, int rows) {
  return sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k, " T=", rows);
}

void checkQuantSkinnyShape(Checker &c, const QuantShape &s) {
  const QuantProblem p(c, s, kRows[std::size(kRows) - 1]);
  for (WeightFormat f : kQuantFormats) {
    const HostQuant q = quantize(p.host.w, s.n, s.k, f);
    const RotatedQuant weights(c, q, true);
    for (int rows : kRows) {
      const std::vector<double> ref = quantReference(p.host, q, rows, f);
      const QuantSkinnySpec spec = quantSkinnySpecFor(s, rows, f);
      const std::string name =
          sol::cat(shapeName(s, rows), " ", formatName(f), " skinny T",
                   spec.tiles, " WK", spec.warpsK);
      if (!spec.fits()) {
        CheckRecord r;
        r.family = "quant_skinny";
        r.name = name;
        r.kernel = "linear_skinny_quant";
        r.note = sol::cat(spec.sharedBytes() + spec.staticSharedBytes(),
                          " bytes of shared memory do not fit a block; ");
        c.finish(std::move(r));
        continue;
      }
      checkQuantLaunch(c, "quant_skinny", name, p, weights, f, rows,
                       spec.instance(), spec.dims(s.n), spec.weightBytes(s.n),
                       ref);
      if (rows == 1) {
        const QuantGemvSpec gemv = quantGemvSpecFor(s, f);
        checkQuantLaunch(c, "quant_skinny",
                         sol::cat(shapeName(s, rows), " ", formatName(f),
                                  " gemv R", gemv.rowsPerWarp, " WK",
                                  gemv.warpsK),
                         p, weights, f, rows, gemv.instance(), gemv.dims(s.n),
                         gemv.weightBytes(s.n), ref);
      }
    }
  }

  // The bf16 linear_skinny on the same problem, for comparison.
  const RotatedWeights weights(c, p.host.w, true);
  for (int rows : kRows) {
    const SkinnySpec spec = bf16SkinnySpecFor(s, rows);
    checkBf16Launch(c, "quant_skinny",
                    sol::cat(shapeName(s, rows), " bf16 skinny T", spec.tiles,
                             " WK", spec.warpsK),
                    p, weights, rows, spec.instance(), spec.dims(s.n));
  }
}

void checkQuantSkinny(Checker &c) {
  for (const QuantShape &s : kQuantShapes) {
    // --quick (also the sanitizer runs) keeps to the 1B shapes.
    if (c.options.quick && std::string_view(s.model) != "1B")
      continue;
    checkQuantSkinnyShape(c, s);
  }
}

} // namespace

std::vector<CheckFamily> quantSkinnyChecks() {
  return {
      {"quant_skinny",
       [](KernelLibrary &k) {
         for (const QuantShape &s : kQuantShapes) {
           for (WeightFormat f : kQuantFormats) {
             for (int rows : kRows)
               if (const QuantSkinnySpec spec = quantSkinnySpecFor(s, rows, f);
                   spec.fits())
                 k.require(spec.instance());
             k.require(quantGemvSpecFor(s, f).instance());
           }
           for (int rows : kRows)
             k.require(bf16SkinnySpecFor(s, rows).instance());
         }
       },
       checkQuantSkinny},
  };
}

} // namespace sol::check

//===- NormChecks.cpp - rms_norm, plain, residual-fused and per-head ------===//

#include "Checks.h"
#include "ReferenceKernels.h"

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::KernelInstance;

constexpr float kEps = 1e-5f;

void checkRows(Checker &c, int dim, int rows, bool withResidual) {
  const cuda::RmsNormSpec spec{dim};
  const KernelInstance instance = spec.instance();
  const std::size_t n = static_cast<std::size_t>(rows) * dim;
  const std::vector<Bf16> x = randomBf16(c.rng, n, -2, 2);
  const std::vector<Bf16> residual = randomBf16(c.rng, n, -2, 2);
  const std::vector<Bf16> w = randomBf16(c.rng, dim, 0.5f, 1.5f);
  const DeviceBuffer dX = c.upload(x);
  const DeviceBuffer dW = c.upload(w);
  DeviceBuffer dResidual = c.upload(residual);
  DeviceBuffer dOut = c.poisoned(n * 2);
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  Bf16 *residualArg = withResidual ? dResidual.as<Bf16>() : nullptr;
  std::function<void(int)> launch = [&](int) {
    kernel.launch(spec.dims(rows), c.stream,
                  kernels::RmsNormArgs{.out = dOut.address(),
                                       .x = dX.address(),
                                       .residual = residualArg,
                                       .weight = dW.address(),
                                       .eps = kEps,
                                       .rows = rows,
                                       .xStride = dim,
                                       .outStride = dim,
                                       .rowGroup = 1});
  };
  launch(0);
  const std::vector<Bf16> out = c.download<Bf16>(dOut);
  const std::vector<Bf16> newResidual = c.download<Bf16>(dResidual);

  std::vector<double> ref(n);
  std::size_t residualMismatches = 0;
  std::vector<float> h(dim);
  for (int r = 0; r < rows; ++r) {
    for (int d = 0; d < dim; ++d) {
      const std::size_t i = static_cast<std::size_t>(r) * dim + d;
      h[d] = withResidual
                 ? roundBf16(bf16ToFloat(x[i]) + bf16ToFloat(residual[i]))
                 : bf16ToFloat(x[i]);
      const Bf16 expected = withResidual ? floatToBf16(h[d]) : residual[i];
      residualMismatches += newResidual[i] != expected;
    }
    const std::vector<double> row = referenceRmsNormRow(h, w, kEps);
    std::copy(row.begin(), row.end(),
              ref.begin() + static_cast<std::ptrdiff_t>(r) * dim);
  }
  CheckRecord rec = makeRecord(
      c, "rms_norm",
      sol::cat("D=", dim, " rows=", rows, withResidual ? " +residual" : ""),
      instance);
  judge(rec, relativeL2(toFloat(out), ref), 1e-2, countPoison(out));
  if (residualMismatches) {
    rec.passed = false;
    rec.note += sol::cat(residualMismatches, " residual elements wrong");
  }
  rec.bytes = (withResidual ? 4.0 : 2.0) * n * 2;
  // Timing re-adds the residual each launch; values stay finite enough.
  c.finish(std::move(rec), &launch);
}

// Qwen3's q_norm / k_norm: per-head norms in place inside the fused QKV rows.
void checkPerHead(Checker &c) {
  const int hq = 16, hkv = 8, hd = 128, tokens = 5;
  const cuda::RmsNormSpec spec{hd};
  const KernelInstance instance = spec.instance();
  const int rowElems = (hq + 2 * hkv) * hd;
  const std::vector<Bf16> qkv =
      randomBf16(c.rng, static_cast<std::size_t>(tokens) * rowElems, -3, 3);
  const std::vector<Bf16> qW = randomBf16(c.rng, hd, 0.5f, 1.5f);
  const std::vector<Bf16> kW = randomBf16(c.rng, hd, 0.5f, 1.5f);
  DeviceBuffer dQkv = c.upload(qkv);
  const DeviceBuffer dQW = c.upload(qW), dKW = c.upload(kW);
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  Bf16 *q = dQkv.as<Bf16>();
  Bf16 *k = q + hq * hd;
  kernel.launch(spec.dims(tokens * hq), c.stream,
                kernels::RmsNormArgs{.out = q,
                                     .x = q,
                                     .weight = dQW.address(),
                                     .eps = kEps,
                                     .rows = tokens * hq,
                                     .xStride = rowElems,
                                     .outStride = rowElems,
                                     .rowGroup = hq});
  kernel.launch(spec.dims(tokens * hkv), c.stream,
                kernels::RmsNormArgs{.out = k,
                                     .x = k,
                                     .weight = dKW.address(),
                                     .eps = kEps,
                                     .rows = tokens * hkv,
                                     .xStride = rowElems,
                                     .outStride = rowElems,
                                     .rowGroup = hkv});
  const std::vector<Bf16> out = c.download<Bf16>(dQkv);

  std::vector<float> got;
  std::vector<double> ref;
  std::size_t vChanged = 0;
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < hq + hkv; ++h) {
      const std::size_t base = static_cast<std::size_t>(t) * rowElems + h * hd;
      const std::vector<float> head =
          toFloat(std::span<const Bf16>(qkv.data() + base, hd));
      const std::vector<double> expected =
          referenceRmsNormRow(head, h < hq ? qW : kW, kEps);
      ref.insert(ref.end(), expected.begin(), expected.end());
      for (int d = 0; d < hd; ++d)
        got.push_back(bf16ToFloat(out[base + d]));
    }
    for (int d = (hq + hkv) * hd; d < rowElems; ++d)
      vChanged += out[static_cast<std::size_t>(t) * rowElems + d] !=
                  qkv[static_cast<std::size_t>(t) * rowElems + d];
  }
  CheckRecord rec =
      makeRecord(c, "rms_norm", "D=128 per-head q/k in fused QKV", instance);
  judge(rec, relativeL2(got, ref), 1e-2, 0);
  if (vChanged) {
    rec.passed = false;
    rec.note += sol::cat(vChanged, " V elements modified");
  }
  c.finish(std::move(rec));
}

void checkNorms(Checker &c) {
  checkRows(c, 2048, 1, false);
  checkRows(c, 2048, 1, true);
  checkRows(c, 2048, 7, true);
  checkRows(c, 2048, 4096, true);
  checkRows(c, 3584, 3, true);
  checkRows(c, 896, 5, false);
  checkRows(c, 128, 37, false);
  checkPerHead(c);
}

} // namespace

std::vector<CheckFamily> normChecks() {
  return {{"rms_norm",
           [](KernelLibrary &k) {
             for (int dim : {128, 896, 2048, 3584})
               k.require(cuda::RmsNormSpec{dim}.instance());
           },
           checkNorms}};
}

} // namespace sol::check

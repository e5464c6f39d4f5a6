//===- LinearChecks.cpp - linear_gemv (decode) and linear_gemm (prefill) --===//

#include "Checks.h"
#include "LinearProblems.h"
#include "ReferenceKernels.h"

#include <memory>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::GemmSpec;
using cuda::GemvSpec;
using cuda::KernelInstance;
using cuda::LinearOutput;

struct LinearShape {
  const char *name;
  int n, k;
  LinearOutput output;
  bool bias;
};

// Llama-3.2-1B's projections (plus a Qwen-style biased QKV).
const LinearShape kShapes[] = {
    {"qkv", 3072, 2048, LinearOutput::Bf16, false},
    {"qkv+bias", 3072, 2048, LinearOutput::Bf16, true},
    {"o", 2048, 2048, LinearOutput::Bf16, false},
    {"gate_up", 16384, 2048, LinearOutput::Bf16, false},
    {"down", 2048, 8192, LinearOutput::Bf16, false},
    {"lm_head", 128256, 2048, LinearOutput::Fp32, false},
};

int outputBytes(LinearOutput output) {
  return output == LinearOutput::Fp32 ? 4 : 2;
}

// Rows 1 and 8 are swept over every config to pick the heuristics' rules.
std::vector<GemvSpec> sweepConfigs(const LinearShape &s, int maxRows) {
  std::vector<GemvSpec> out;
  for (int rowsPerWarp : {1, 2, 4})
    for (int warpsK : {1, 2, 4, 8}) {
      if (rowsPerWarp * maxRows > 32 || (maxRows == 1 && rowsPerWarp == 1))
        continue;
      if (maxRows == 8 && rowsPerWarp == 4)
        continue;
      out.push_back(
          GemvSpec{s.k, maxRows, rowsPerWarp, warpsK, s.output, s.bias});
    }
  return out;
}

std::vector<GemvSpec> gemvSpecsFor(const LinearShape &s) {
  std::vector<GemvSpec> specs;
  for (int rows : {1, 3, 8})
    specs.push_back(GemvSpec::choose(s.n, s.k, rows, s.output, s.bias));
  if (!s.bias)
    for (int maxRows : {1, 8})
      for (const GemvSpec &spec : sweepConfigs(s, maxRows))
        specs.push_back(spec);
  return specs;
}

std::vector<float> outputToFloat(const DeviceBuffer &dOut, LinearOutput output,
                                 Checker &c, std::size_t &unwritten) {
  if (output == LinearOutput::Fp32) {
    std::vector<float> out = c.download<float>(dOut);
    unwritten = countPoison(out);
    return out;
  }
  const std::vector<Bf16> out = c.download<Bf16>(dOut);
  unwritten = countPoison(out);
  return toFloat(out);
}

void checkGemvShape(Checker &c, const LinearShape &s) {
  const std::size_t weightElems = static_cast<std::size_t>(s.n) * s.k;
  const std::vector<Bf16> w = randomBf16(c.rng, weightElems, -1, 1);
  const std::vector<Bf16> bias =
      s.bias ? randomBf16(c.rng, s.n, -1, 1) : std::vector<Bf16>{};
  // Copies of W so timed launches stream from HBM, not from L2.
  const int copies = c.options.timing ? rotationCopies(weightElems * 2,
                                                       c.context.l2CacheBytes())
                                      : 1;
  std::vector<DeviceBuffer> weights;
  weights.push_back(c.upload(w));
  for (int i = 1; i < copies; ++i) {
    weights.emplace_back(weightElems * 2);
    weights.back().copyFromDevice(weights.front(), weightElems * 2, c.stream);
  }
  const DeviceBuffer dBias = c.upload(s.bias ? bias : std::vector<Bf16>{0});
  const Bf16 *biasArg = s.bias ? dBias.as<const Bf16>() : nullptr;

  for (int rows : {1, 3, 8}) {
    const std::vector<Bf16> x =
        randomBf16(c.rng, static_cast<std::size_t>(rows) * s.k, -1, 1);
    const DeviceBuffer dX = c.upload(x);
    const std::vector<double> ref = referenceLinear(x, w, bias, rows, s.n, s.k);
    const GemvSpec chosen = GemvSpec::choose(s.n, s.k, rows, s.output, s.bias);
    std::vector<GemvSpec> specs = {chosen};
    if (rows != 3 && !s.bias)
      for (const GemvSpec &spec : sweepConfigs(s, chosen.maxRows))
        if (spec.instance() != chosen.instance())
          specs.push_back(spec);
    for (const GemvSpec &spec : specs) {
      const KernelInstance instance = spec.instance();
      const cuda::Kernel &kernel = c.kernels.kernel(instance);
      DeviceBuffer dOut = c.poisoned(static_cast<std::size_t>(rows) * s.n *
                                     outputBytes(s.output));
      std::function<void(int)> launch = [&](int rotation) {
        launchSinglePass(c, kernel, spec.dims(s.n), dOut, dX.as<const Bf16>(),
                         weights[rotation % copies].as<const Bf16>(), biasArg,
                         rows, s.n, nullptr, 0.0f);
      };
      launch(0);
      std::size_t unwritten = 0;
      const std::vector<float> out =
          outputToFloat(dOut, s.output, c, unwritten);
      const bool isChosen = spec.instance() == chosen.instance();
      CheckRecord r = makeRecord(
          c, isChosen ? "gemv" : "gemv_sweep",
          sol::cat(s.name, " ", s.n, "x", s.k, " T=", rows, " R",
                   spec.rowsPerWarp, " WK", spec.warpsK, isChosen ? " *" : ""),
          instance);
      judge(r, relativeL2(out, ref),
            s.output == LinearOutput::Fp32 ? 1e-4 : 1e-2, unwritten);
      r.bytes = 2.0 * weightElems + 2.0 * rows * s.k +
                static_cast<double>(rows) * s.n * outputBytes(s.output);
      r.flops = 2.0 * rows * weightElems;
      c.finish(std::move(r), &launch);
    }
  }
}

void checkGemv(Checker &c) {
  for (const LinearShape &s : kShapes)
    checkGemvShape(c, s);
}

struct GemmCase {
  int m, n, k;
  LinearOutput output;
  bool bias;
  bool timed;
};

const GemmCase kGemmCases[] = {
    {1, 2048, 2048, LinearOutput::Bf16, false, false},
    {17, 264, 72, LinearOutput::Bf16, true, false},
    {100, 3072, 2048, LinearOutput::Bf16, true, false},
    {128, 1000, 2048, LinearOutput::Fp32, false, false},
    {37, 60, 2048, LinearOutput::Fp32, false, false}, // Qwen1.5-MoE's router
    {333, 2048, 8192, LinearOutput::Bf16, false, false},
    {512, 16384, 2048, LinearOutput::Bf16, false, true},
    {4096, 3072, 2048, LinearOutput::Bf16, false, true},
    {4096, 2048, 2048, LinearOutput::Bf16, false, true},
    {4096, 16384, 2048, LinearOutput::Bf16, false, true},
    {4096, 2048, 8192, LinearOutput::Bf16, false, true},
};

std::vector<GemmSpec> gemmSpecsFor(const GemmCase &g) {
  GemmSpec large = GemmSpec::choose(1 << 20, g.n, g.output, g.bias);
  GemmSpec medium = GemmSpec::choose(1, g.n, g.output, g.bias);
  return {large, medium};
}

void checkGemm(Checker &c) {
  for (const GemmCase &g : kGemmCases) {
    if (c.options.quick && g.m > 512)
      continue;
    const std::vector<Bf16> x =
        randomBf16(c.rng, static_cast<std::size_t>(g.m) * g.k, -1, 1);
    const std::vector<Bf16> w =
        randomBf16(c.rng, static_cast<std::size_t>(g.n) * g.k, -1, 1);
    const std::vector<Bf16> bias =
        g.bias ? randomBf16(c.rng, g.n, -1, 1) : std::vector<Bf16>{};
    const DeviceBuffer dX = c.upload(x), dW = c.upload(w);
    const DeviceBuffer dBias = c.upload(g.bias ? bias : std::vector<Bf16>{0});
    const Bf16 *biasArg = g.bias ? dBias.as<const Bf16>() : nullptr;

    // Check every row of small problems, 64 sampled rows of large ones.
    std::vector<int> rowIds;
    if (g.m <= 512) {
      for (int r = 0; r < g.m; ++r)
        rowIds.push_back(r);
    } else {
      for (int i = 0; i < 64; ++i)
        rowIds.push_back(c.rng.uniformInt(0, g.m - 1));
      rowIds.push_back(g.m - 1);
    }
    const std::vector<double> ref =
        referenceLinearRows(x, w, bias, rowIds, g.n, g.k);

    const GemmSpec chosen = GemmSpec::choose(g.m, g.n, g.output, g.bias);
    for (const GemmSpec &spec : gemmSpecsFor(g)) {
      const KernelInstance instance = spec.instance();
      const cuda::Kernel &kernel = c.kernels.kernel(instance);
      kernel.setMaxDynamicSharedMemory(spec.sharedBytes());
      DeviceBuffer dOut = c.poisoned(static_cast<std::size_t>(g.m) * g.n *
                                     outputBytes(g.output));
      std::function<void(int)> launch = [&](int) {
        kernel.launch(spec.dims(g.m, g.n), c.stream,
                      kernels::LinearArgs{.y = dOut.address(),
                                          .x = dX.address(),
                                          .w = dW.address(),
                                          .bias = biasArg,
                                          .rows = g.m,
                                          .n = g.n,
                                          .k = g.k});
      };
      launch(0);
      std::size_t unwritten = 0;
      const std::vector<float> all =
          outputToFloat(dOut, g.output, c, unwritten);
      std::vector<float> sampled;
      for (int row : rowIds)
        sampled.insert(
            sampled.end(), all.begin() + static_cast<std::ptrdiff_t>(row) * g.n,
            all.begin() + static_cast<std::ptrdiff_t>(row + 1) * g.n);
      const bool isChosen = spec.instance() == chosen.instance();
      CheckRecord r = makeRecord(
          c, "gemm",
          sol::cat(g.m, "x", g.n, "x", g.k, g.bias ? " +bias" : "",
                   g.output == LinearOutput::Fp32 ? " fp32" : "", " ",
                   spec.tileM, "x", spec.tileN, isChosen ? " *" : ""),
          instance);
      judge(r, relativeL2(sampled, ref),
            g.output == LinearOutput::Fp32 ? 1e-4 : 1e-2, unwritten);
      r.flops = 2.0 * g.m * g.n * g.k;
      r.bytes = 0;
      c.finish(std::move(r), g.timed ? &launch : nullptr);
    }
  }
}

} // namespace

std::vector<CheckFamily> linearChecks() {
  return {
      {"gemv",
       [](KernelLibrary &k) {
         for (const LinearShape &s : kShapes)
           for (const GemvSpec &spec : gemvSpecsFor(s))
             k.require(spec.instance());
       },
       checkGemv},
      {"gemm",
       [](KernelLibrary &k) {
         for (const GemmCase &g : kGemmCases)
           for (const GemmSpec &spec : gemmSpecsFor(g))
             k.require(spec.instance());
       },
       checkGemm},
  };
}

} // namespace sol::check

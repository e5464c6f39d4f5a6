//===- Fp8GemmChecks.cpp - The fp8 GEMM and its activations, checked ------===//
//
// fp8_gemm: linear_wgmma_fp8 (LinearWgmmaFp8.cuh, Hopper only), the W8A8
// GEMM of fp8 plans' prompt steps, on the linears of Llama-3.2-1B and
// Llama-3.1-8B with their epilogues (q/k/v plain, o and down adding into
// the residual, gate/up SwiGLU over interleaved pairs) at 128, 136 and
// 2,048 rows, and on a shape with partial tiles in every direction (n not
// a multiple of the block's columns, k not of 128, a bias). E4M3 codes of
// x and W with a scale a row each are made on the host; the reference is
// the float64 sum of the decoded products, scaled, then the epilogue, on
// every row of small steps and on 24 rows spread over the 2,048-row ones;
// plain and SwiGLU outputs start poisoned, so a store that never happens
// is counted on every row. Timed beside cuBLASLt's fp8 GEMM with the same
// scales as 128-k block scales (CublasLt::fp8Linear, what the executor ran
// before), plain output, same operands.
//
// fp8_quantize: the kernels that make those codes (quantize_rows_fp8,
// rms_norm_quantize_fp8) against the host rule, at the models' K.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/TensorMap.h"
#include "runtime/support/Fp8.h"

#include <cmath>
#include <map>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::Fp8WgmmaSpec;
using cuda::LinearEpilogue;

struct Fp8Shape {
  const char *model;
  const char *name;
  int n, k;
  LinearEpilogue epilogue;
  bool bias;
};

constexpr Fp8Shape kShapes[] = {
    {"1B", "qkv", 3072, 2048, LinearEpilogue::None, false},
    {"1B", "o", 2048, 2048, LinearEpilogue::Residual, false},
    {"1B", "gate_up", 16384, 2048, LinearEpilogue::Swiglu, false},
    {"1B", "down", 2048, 8192, LinearEpilogue::Residual, false},
    {"8B", "qkv", 6144, 4096, LinearEpilogue::None, false},
    {"8B", "o", 4096, 4096, LinearEpilogue::Residual, false},
    {"8B", "gate_up", 28672, 4096, LinearEpilogue::Swiglu, false},
    {"8B", "down", 4096, 14336, LinearEpilogue::Residual, false},
    {"odd", "bias", 520, 272, LinearEpilogue::None, true},
};
constexpr int kRows[] = {128, 136, 512, 1024, 2048};

/// Random E4M3 codes of magnitudes 2^-4..2^4 (exponent fields 3..11),
/// either sign: what quantize_rows_fp8 makes of activations scaled to
/// their row's maximum, without NaN codes.
std::vector<std::uint8_t> randomCodes(Rng &rng, std::size_t count) {
  std::vector<std::uint8_t> out(count);
  for (std::uint8_t &c : out)
    c = static_cast<std::uint8_t>(rng.uniformInt(0, 1) << 7 |
                                  rng.uniformInt(3, 11) << 3 |
                                  rng.uniformInt(0, 7));
  return out;
}

std::vector<float> randomScales(Rng &rng, std::size_t count) {
  std::vector<float> out(count);
  for (float &s : out)
    s = rng.uniform(0.5f, 2.0f) / 64.0f;
  return out;
}

struct Fp8Problem {
  Fp8Shape shape;
  int maxRows;
  std::vector<std::uint8_t> xq, wq;
  std::vector<float> xs, ws;
  std::vector<Bf16> bias, residual; // residual: y's content before the GEMM
  DeviceBuffer dXq, dWq, dXs, dWs, dBias;
  // cuBLASLt's block scales: [k / 128, rows] and [k / 128, n].
  DeviceBuffer dXsBlocks, dWsBlocks;

  Fp8Problem(Checker &c, const Fp8Shape &s, int rows)
      : shape(s), maxRows(rows) {
    xq = randomCodes(c.rng, static_cast<std::size_t>(rows) * s.k);
    wq = randomCodes(c.rng, static_cast<std::size_t>(s.n) * s.k);
    xs = randomScales(c.rng, rows);
    ws = randomScales(c.rng, s.n);
    bias = s.bias ? randomBf16(c.rng, s.n, -1.0f, 1.0f) : std::vector<Bf16>{};
    residual =
        randomBf16(c.rng, static_cast<std::size_t>(rows) * s.n, -1.0f, 1.0f);
    dXq = c.upload(xq);
    dWq = c.upload(wq);
    dXs = c.upload(xs);
    dWs = c.upload(ws);
    if (s.bias)
      dBias = c.upload(bias);
    if (s.k % 128 == 0) {
      const int blocks = s.k / 128;
      std::vector<float> xb, wb;
      for (int b = 0; b < blocks; ++b) {
        xb.insert(xb.end(), xs.begin(), xs.end());
        wb.insert(wb.end(), ws.begin(), ws.end());
      }
      dXsBlocks = c.upload(xb);
      dWsBlocks = c.upload(wb);
    }
  }

  int outCols() const {
    return isGated(shape.epilogue) ? shape.n / 2 : shape.n;
  }

  /// The reference of row `t`: every output column (cached: the row
  /// counts and configurations share them).
  const std::vector<double> &referenceRow(int t) const {
    auto [it, fresh] = references.try_emplace(t);
    if (!fresh)
      return it->second;
    double decoded[256];
    for (int b = 0; b < 256; ++b)
      decoded[b] = b == 0x7f || b == 0xff
                       ? 0.0
                       : e4m3ToFloat(static_cast<std::uint8_t>(b));
    const int n = shape.n, k = shape.k;
    const std::uint8_t *x = xq.data() + static_cast<std::size_t>(t) * k;
    std::vector<double> y(n);
    for (int col = 0; col < n; ++col) {
      const std::uint8_t *w = wq.data() + static_cast<std::size_t>(col) * k;
      double sum = 0.0;
      for (int i = 0; i < k; ++i)
        sum += decoded[x[i]] * decoded[w[i]];
      y[col] =
          sum * xs[t] * ws[col] + (shape.bias ? bf16ToFloat(bias[col]) : 0);
    }
    if (shape.epilogue == LinearEpilogue::Residual)
      for (int col = 0; col < n; ++col)
        y[col] += bf16ToFloat(residual[static_cast<std::size_t>(t) * n + col]);
    if (isGated(shape.epilogue)) {
      std::vector<double> gated(n / 2);
      for (int j = 0; j < n / 2; ++j) {
        const double g = y[2 * j], u = y[2 * j + 1];
        gated[j] = g / (1.0 + std::exp(-g)) * u;
      }
      y = std::move(gated);
    }
    it->second = std::move(y);
    return it->second;
  }
  mutable std::map<int, std::vector<double>> references;
};

/// The rows a step's output is judged on: the edges of its first two
/// tiles and of the last, and rows spread between (every row is checked
/// for stores that never happen).
std::vector<int> judgedRows(int rows) {
  std::vector<int> out;
  for (int t :
       {0,    1,    2,    7,    8,    15,   16,   31,   63,   64,   65,  100,
        126,  127,  128,  129,  131,  133,  135,  255,  256,  511,  777, 1000,
        1023, 1024, 1279, 1500, 1791, 1792, 1919, 1920, 2000, 2045, 2046})
    if (t < rows)
      out.push_back(t);
  if (out.back() != rows - 1)
    out.push_back(rows - 1);
  return out;
}

std::string shapeName(const Fp8Shape &s, int rows) {
  return sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k, " T=", rows);
}

/// The configuration plans take, then 128 columns in five stages.
std::vector<Fp8WgmmaSpec> sweep(const Fp8Shape &s) {
  const Fp8WgmmaSpec chosen = Fp8WgmmaSpec::choose(s.bias, s.epilogue);
  Fp8WgmmaSpec narrow = chosen;
  narrow.tileN = 128;
  narrow.stages = 5;
  if (narrow.instance() == chosen.instance())
    return {chosen};
  return {chosen, narrow};
}

void checkWgmma(Checker &c, const Fp8Problem &p, int rows,
                const Fp8WgmmaSpec &spec) {
  const Fp8Shape &s = p.shape;
  const cuda::KernelInstance instance = spec.instance();
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  const cuda::LaunchDims dims =
      spec.dims(rows, s.n, c.context.multiprocessorCount());
  kernel.setMaxDynamicSharedMemory(static_cast<int>(dims.sharedBytes));
  const int cols = p.outCols();
  const bool residual = s.epilogue == LinearEpilogue::Residual;
  DeviceBuffer y =
      residual
          ? c.upload(p.residual)
          : c.poisoned(static_cast<std::size_t>(rows) * cols * sizeof(Bf16));
  const kernels::Fp8GemmArgs args{
      .x =
          cuda::encodeByteMatrixMap(p.dXq.address(), p.maxRows, s.k, s.k,
                                    Fp8WgmmaSpec::kTileM, Fp8WgmmaSpec::kTileK),
      .w = cuda::encodeByteMatrixMap(p.dWq.address(), s.n, s.k, s.k, spec.tileN,
                                     Fp8WgmmaSpec::kTileK),
      .y = y.address(),
      .xScales = p.dXs.address(),
      .wScales = p.dWs.address(),
      .bias = s.bias ? p.dBias.address() : 0ull,
      .rows = rows,
      .n = s.n,
      .k = s.k};
  kernel.launch(dims, c.stream, args);
  c.stream.synchronize();

  CheckRecord r = makeRecord(
      c, "fp8_gemm",
      sol::cat(shapeName(s, rows), " wgmma n", spec.tileN, " s", spec.stages),
      instance);
  const std::vector<Bf16> out = c.download<Bf16>(y);
  std::vector<float> got;
  std::vector<double> ref;
  for (int t : judgedRows(rows)) {
    const std::vector<double> row = p.referenceRow(t);
    ref.insert(ref.end(), row.begin(), row.end());
    for (int j = 0; j < cols; ++j)
      got.push_back(bf16ToFloat(out[static_cast<std::size_t>(t) * cols + j]));
  }
  const std::size_t unwritten =
      residual ? 0
               : countPoison(std::span<const Bf16>(out).first(
                     static_cast<std::size_t>(rows) * cols));
  judge(r, relativeL2(got, ref), 1e-2, unwritten);
  r.flops = 2.0 * rows * s.n * static_cast<double>(s.k);
  r.bytes = static_cast<double>(s.n) * s.k +
            static_cast<double>(rows) * (s.k + 2.0 * cols);
  // A residual launch adds into y again each time: timing only.
  std::function<void(int)> launch = [&](int) {
    kernel.launch(dims, c.stream, args);
  };
  c.finish(std::move(r), &launch);
}

void timeCublas(Checker &c, cuda::CublasLt &cublas, const Fp8Problem &p,
                int rows) {
  const Fp8Shape &s = p.shape;
  if (s.k % 128 != 0 || rows % 16 != 0 || s.bias)
    return;
  DeviceBuffer workspace(cuda::CublasLt::kWorkspaceBytes);
  DeviceBuffer y(static_cast<std::size_t>(rows) * s.n * sizeof(Bf16));
  CheckRecord r;
  r.family = "fp8_gemm";
  r.name = sol::cat(shapeName(s, rows), " cuBLASLt VEC128 (plain output)");
  r.kernel = "cublasLtMatmul";
  r.flops = 2.0 * rows * s.n * static_cast<double>(s.k);
  r.bytes = static_cast<double>(s.n) * s.k +
            static_cast<double>(rows) * (s.k + 2.0 * s.n);
  std::function<void(int)> launch = [&](int) {
    cublas.fp8Linear(c.stream.handle(), y.address(), p.dXq.address(),
                     p.dXsBlocks.address(), p.dWq.address(),
                     p.dWsBlocks.address(), 0, rows, s.n, s.k, false,
                     workspace.address(), workspace.size());
  };
  c.finish(std::move(r), &launch);
}

void checkFp8Gemm(Checker &c) {
  if (c.context.computeCapabilityMajor() != 9)
    return;
  std::string why;
  const std::unique_ptr<cuda::CublasLt> cublas = cuda::CublasLt::load(why);
  for (const Fp8Shape &s : kShapes) {
    if (c.options.quick && std::string_view(s.model) == "8B")
      continue;
    constexpr int kMaxRows = kRows[std::size(kRows) - 1];
    const Fp8Problem p(c, s, kMaxRows);
    for (int rows : kRows) {
      for (const Fp8WgmmaSpec &spec : sweep(s))
        checkWgmma(c, p, rows, spec);
      if (cublas && c.options.timing)
        timeCublas(c, *cublas, p, rows);
    }
  }
}

/// fp8_quantize: quantize_rows_fp8 and rms_norm_quantize_fp8, the
/// activations of the fp8 GEMMs, against the host rule (sol::floatToE4M3 of
/// x / (max|x| / 448), x normalised on the host for the norm kernel, in
/// float64), compared as decoded values times their scale; the codes start
/// as NaN codes (0x7F, which the saturating rule never writes), the scales
/// as NaN.
constexpr int kQuantizeFeatures[] = {2048, 4096, 8192, 14336};

void checkQuantize(Checker &c, int k, int rows, bool norm) {
  const cuda::QuantizeRowsFp8Spec spec{k, norm};
  const cuda::KernelInstance instance = spec.instance();
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  const std::vector<Bf16> x =
      randomBf16(c.rng, static_cast<std::size_t>(rows) * k, -3.0f, 3.0f);
  const std::vector<Bf16> w = randomBf16(c.rng, k, 0.5f, 1.5f);
  const float eps = 1e-5f;
  DeviceBuffer dX = c.upload(x), dW = c.upload(w);
  DeviceBuffer codes(static_cast<std::size_t>(rows) * k);
  codes.fillBytes(0x7F, c.stream);
  DeviceBuffer scales =
      c.poisoned(static_cast<std::size_t>(rows) * spec.scaleBlocks() * 4);
  const cuda::LaunchDims dims = spec.dims(rows);
  std::function<void(int)> launch = [&](int) {
    if (norm)
      kernel.launch(dims, c.stream,
                    kernels::NormQuantizeRowsArgs{.codes = codes.address(),
                                                  .scales = scales.address(),
                                                  .x = dX.address(),
                                                  .weight = dW.address(),
                                                  .eps = eps,
                                                  .rows = rows});
    else
      kernel.launch(dims, c.stream,
                    kernels::QuantizeRowsArgs{.codes = codes.address(),
                                              .scales = scales.address(),
                                              .x = dX.address(),
                                              .rows = rows});
  };
  launch(0);
  c.stream.synchronize();
  CheckRecord r = makeRecord(
      c, "fp8_quantize",
      sol::cat(norm ? "rms_norm_quantize_fp8 K=" : "quantize_rows_fp8 K=", k,
               " T=", rows),
      instance);
  const std::vector<std::uint8_t> got = c.download<std::uint8_t>(codes);
  const std::vector<float> gotScales = c.download<float>(scales);
  std::vector<float> decoded;
  std::vector<double> ref;
  std::size_t unwritten = 0;
  for (int t = 0; t < rows; ++t) {
    std::vector<float> v(k);
    double ss = 0.0;
    for (int i = 0; i < k; ++i) {
      v[i] = bf16ToFloat(x[static_cast<std::size_t>(t) * k + i]);
      ss += static_cast<double>(v[i]) * v[i];
    }
    if (norm) {
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / k + eps));
      for (int i = 0; i < k; ++i)
        v[i] = bf16ToFloat(floatToBf16(bf16ToFloat(w[i]) *
                                       bf16ToFloat(floatToBf16(v[i] * inv))));
    }
    float amax = 0.0f;
    for (float f : v)
      amax = std::max(amax, std::fabs(f));
    const float s = amax == 0.0f ? 1.0f : amax / 448.0f;
    for (int b = 0; b < spec.scaleBlocks(); ++b)
      unwritten +=
          std::isnan(gotScales[static_cast<std::size_t>(b) * rows + t]);
    const float gotScale = gotScales[t];
    for (int i = 0; i < k; ++i) {
      const std::uint8_t code = got[static_cast<std::size_t>(t) * k + i];
      unwritten += code == 0x7F;
      decoded.push_back(sol::e4m3ToFloat(code) * gotScale);
      ref.push_back(
          static_cast<double>(sol::e4m3ToFloat(sol::floatToE4M3(v[i] / s))) *
          s);
    }
  }
  // The norm kernel sums its squares in float32: a normalised value may
  // round to the neighbouring bf16 now and then (one E4M3 step, 6% of one
  // value); the plain kernel's codes are the rule's exactly.
  judge(r, relativeL2(decoded, ref), norm ? 2e-3 : 1e-6, unwritten);
  r.bytes = static_cast<double>(rows) * k * 3.0;
  c.finish(std::move(r), &launch);
}

void checkFp8Quantize(Checker &c) {
  for (int k : kQuantizeFeatures)
    for (int rows : {16, 2048})
      for (bool norm : {false, true})
        checkQuantize(c, k, rows, norm);
}

} // namespace

std::vector<CheckFamily> fp8GemmChecks() {
  return {
      {"fp8_gemm",
       [](KernelLibrary &k) {
         for (const Fp8Shape &s : kShapes)
           for (const Fp8WgmmaSpec &spec : sweep(s))
             k.require(spec.instance());
       },
       checkFp8Gemm},
      {"fp8_quantize",
       [](KernelLibrary &k) {
         for (int features : kQuantizeFeatures)
           for (bool norm : {false, true})
             k.require(cuda::QuantizeRowsFp8Spec{features, norm}.instance());
       },
       checkFp8Quantize},
  };
}

} // namespace sol::check

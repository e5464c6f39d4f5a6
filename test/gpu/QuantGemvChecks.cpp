//===- QuantGemvChecks.cpp - linear_gemv_quant: int8, int4, fp8 weights ---===//
//
// quant_gemv: the decode linears of Llama-3.2-1B and Llama-3.1-8B (QKV
// behind its norm, o and down adding into the residual, gate/up behind its
// norm with the swiglu epilogue) at 1 and 8 rows, with weights quantized on
// the host into each format of runtime/support/Quantize.h (int8 per row,
// int4 in groups of 128, fp8 E4M3 per row), against a float64 reference
// from the dequantized weights that rounds where the kernel rounds (the
// fp8 activations quantized by the same rule). Outputs are poisoned, with a
// guard row past the last (LinearProblems.h). Timed with the codes, scales
// and zeros rotated through copies larger than L2; GB/s counts the bytes a
// launch must move (quantized weights, x, norm weight, output, residual).
// Beside each shape, the bf16 linear_gemv the plan would run otherwise.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "LinearProblems.h"
#include "ReferenceKernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <thread>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::GemvSpec;
using cuda::KernelInstance;
using cuda::LaunchDims;
using cuda::LinearEpilogue;
using cuda::LinearOutput;
using cuda::QuantGemvSpec;
using cuda::WeightFormat;

constexpr int kInt4Group = 128;

struct QuantShape {
  const char *model;
  const char *name;
  int n, k;
  LinearEpilogue epilogue;
  bool norm;
};

const QuantShape kShapes[] = {
    {"1B", "qkv", 3072, 2048, LinearEpilogue::None, true},
    {"1B", "o", 2048, 2048, LinearEpilogue::Residual, false},
    {"1B", "gate_up", 16384, 2048, LinearEpilogue::Swiglu, true},
    {"1B", "down", 2048, 8192, LinearEpilogue::Residual, false},
    {"8B", "qkv", 6144, 4096, LinearEpilogue::None, true},
    {"8B", "o", 4096, 4096, LinearEpilogue::Residual, false},
    {"8B", "gate_up", 28672, 4096, LinearEpilogue::Swiglu, true},
    {"8B", "down", 4096, 14336, LinearEpilogue::Residual, false},
};
constexpr int kRows[] = {1, 8};
constexpr WeightFormat kFormats[] = {WeightFormat::Int8, WeightFormat::Int4,
                                     WeightFormat::Fp8};

const char *formatName(WeightFormat f) {
  return f == WeightFormat::Int8   ? "int8"
         : f == WeightFormat::Int4 ? "int4"
                                   : "fp8";
}

QuantGemvSpec quantSpecFor(const QuantShape &s, int rows, WeightFormat f) {
  return QuantGemvSpec::choose(s.n, s.k, rows, f, LinearOutput::Bf16, false,
                               s.epilogue, s.norm,
                               f == WeightFormat::Int4 ? kInt4Group : 0);
}

GemvSpec bf16SpecFor(const QuantShape &s, int rows) {
  return GemvSpec::choose(s.n, s.k, rows, LinearOutput::Bf16, false, s.epilogue,
                          s.norm);
}

/// Runs body(begin, end) over [0, count) split across the host's cores.
template <typename F> void parallelRanges(int count, F body) {
  const int threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 64);
  const int chunk = (count + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int begin = 0; begin < count; begin += chunk)
    pool.emplace_back(body, begin, std::min(count, begin + chunk));
  for (std::thread &t : pool)
    t.join();
}

// E4M3 ("fn") on the host, as cvt.rn.satfinite.e4m3x2.f32: round to
// nearest even, saturating at 448, NaN to 0x7F.
float e4m3Decode(std::uint8_t code) {
  const int e = (code >> 3) & 15, m = code & 7;
  if ((code & 0x7f) == 0x7f)
    return NAN;
  const float v = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                         : std::ldexp(static_cast<float>(8 + m), e - 10);
  return code & 0x80 ? -v : v;
}

std::uint8_t e4m3Encode(float f) {
  if (std::isnan(f))
    return 0x7f;
  const unsigned sign = std::signbit(f) ? 0x80u : 0u;
  const float a = std::fabs(f);
  if (a >= 448.0f)
    return static_cast<std::uint8_t>(sign | 0x7eu);
  int e = 0;
  std::frexp(a, &e);
  const int exponent = std::max(e - 1, -6); // subnormals share 2^-6's quantum
  const int units = static_cast<int>(
      std::nearbyint(std::ldexp(a, 3 - exponent))); // exact scaling
  const unsigned code =
      units < 8 ? static_cast<unsigned>(units)
                : static_cast<unsigned>((exponent + 7) * 8 + units - 8);
  return static_cast<std::uint8_t>(sign | std::min(code, 0x7eu));
}

/// A weight in one format: what the kernel reads, and W' as floats.
struct HostQuant {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
  std::vector<std::uint8_t> zeros;
  std::vector<float> dequantized; // [n, k]
};

/// W quantized as the compiler does (runtime/support/Quantize.h).
HostQuant quantize(std::span<const Bf16> w, int n, int k, WeightFormat f) {
  HostQuant q;
  const std::size_t elems = static_cast<std::size_t>(n) * k;
  q.dequantized.resize(elems);
  const int groups = f == WeightFormat::Int4 ? k / kInt4Group : 1;
  q.codes.resize(f == WeightFormat::Int4 ? elems / 2 : elems);
  q.scales.resize(static_cast<std::size_t>(n) * groups);
  if (f == WeightFormat::Int4)
    q.zeros.resize(static_cast<std::size_t>(n) * groups);
  parallelRanges(n, [&](int begin, int end) {
    for (int row = begin; row < end; ++row) {
      const std::size_t base = static_cast<std::size_t>(row) * k;
      if (f == WeightFormat::Int4) {
        for (int g = 0; g < groups; ++g) {
          float lo = INFINITY, hi = -INFINITY;
          for (int i = g * kInt4Group; i < (g + 1) * kInt4Group; ++i) {
            lo = std::min(lo, bf16ToFloat(w[base + i]));
            hi = std::max(hi, bf16ToFloat(w[base + i]));
          }
          const float scale = std::max(hi - lo, 1e-5f) / 15.0f;
          const float zero =
              std::clamp(std::nearbyint(-lo / scale), 0.0f, 15.0f);
          q.scales[static_cast<std::size_t>(row) * groups + g] = scale;
          q.zeros[static_cast<std::size_t>(row) * groups + g] =
              static_cast<std::uint8_t>(zero);
          for (int i = g * kInt4Group; i < (g + 1) * kInt4Group; ++i) {
            const float code = std::clamp(
                std::nearbyint(bf16ToFloat(w[base + i]) / scale) + zero, 0.0f,
                15.0f);
            std::uint8_t &byte = q.codes[(base + i) / 2];
            byte |= static_cast<std::uint8_t>(static_cast<int>(code)
                                              << (i % 2 ? 4 : 0));
            q.dequantized[base + i] = (code - zero) * scale;
          }
        }
        continue;
      }
      float amax = 0.0f;
      for (int i = 0; i < k; ++i)
        amax = std::max(amax, std::fabs(bf16ToFloat(w[base + i])));
      const float limit = f == WeightFormat::Int8 ? 127.0f : 448.0f;
      const float scale = amax == 0.0f ? 1.0f : amax / limit;
      q.scales[row] = scale;
      for (int i = 0; i < k; ++i) {
        const float v = bf16ToFloat(w[base + i]) / scale;
        if (f == WeightFormat::Int8) {
          const float code = std::clamp(std::nearbyint(v), -127.0f, 127.0f);
          q.codes[base + i] =
              static_cast<std::uint8_t>(static_cast<std::int8_t>(code));
          q.dequantized[base + i] = code * scale;
        } else {
          q.codes[base + i] = e4m3Encode(v);
          q.dequantized[base + i] = e4m3Decode(q.codes[base + i]) * scale;
        }
      }
    }
  });
  return q;
}

/// epilogue(x' . W'^T) for the first `rows` rows: x' the normed rows, and
/// for fp8 those rows quantized, e4m3(x / sx) * sx.
std::vector<double> quantReference(const HostLinear &p, const HostQuant &q,
                                   int rows, WeightFormat f) {
  const std::vector<int> rowIds = firstRows(rows);
  std::vector<Bf16> xs = gatherRows(p.x, p.k, rowIds);
  if (p.norm)
    xs = referenceNormRows(xs, p.normW, rows, p.k, kEps);
  std::vector<double> xin(xs.size());
  for (int t = 0; t < rows; ++t) {
    float amax = 0.0f;
    for (int i = 0; i < p.k; ++i)
      amax = std::max(amax, std::fabs(bf16ToFloat(xs[t * p.k + i])));
    const float sx = amax == 0.0f ? 1.0f : amax / 448.0f;
    for (int i = 0; i < p.k; ++i) {
      const float v = bf16ToFloat(xs[t * p.k + i]);
      xin[t * p.k + i] =
          f == WeightFormat::Fp8
              ? static_cast<double>(e4m3Decode(e4m3Encode(v / sx))) * sx
              : v;
    }
  }
  std::vector<double> y(static_cast<std::size_t>(rows) * p.n);
  parallelRanges(p.n, [&](int begin, int end) {
    for (int j = begin; j < end; ++j)
      for (int t = 0; t < rows; ++t) {
        const float *wRow =
            q.dequantized.data() + static_cast<std::size_t>(j) * p.k;
        const double *xRow = xin.data() + static_cast<std::size_t>(t) * p.k;
        double s = 0.0;
        for (int i = 0; i < p.k; ++i)
          s += xRow[i] * wRow[i];
        y[static_cast<std::size_t>(t) * p.n + j] = s;
      }
  });
  switch (p.epilogue) {
  case LinearEpilogue::None:
    return y;
  case LinearEpilogue::Residual:
    return referenceResidualEpilogue(gatherRows(p.residual, p.n, rowIds), y);
  case LinearEpilogue::Swiglu:
    return referenceSwigluEpilogue(y, rows, p.n);
  }
  return {};
}

/// A quantized weight on the device, and copies of it for timing.
class RotatedQuant {
public:
  RotatedQuant(Checker &c, const HostQuant &q, bool rotate) {
    const std::size_t bytes =
        q.codes.size() + q.scales.size() * 4 + q.zeros.size();
    const int count = rotate && c.options.timing
                          ? rotationCopies(bytes, c.context.l2CacheBytes())
                          : 1;
    for (int i = 0; i < count; ++i)
      copies_.push_back(
          {c.upload(q.codes), c.upload(q.scales),
           q.zeros.empty() ? DeviceBuffer(16) : c.upload(q.zeros)});
  }
  struct Copy {
    DeviceBuffer codes, scales, zeros;
  };
  const Copy &operator[](int rotation) const {
    return copies_[static_cast<std::size_t>(rotation) % copies_.size()];
  }

private:
  std::vector<Copy> copies_;
};

void checkQuantShape(Checker &c, const QuantShape &s) {
  const int maxRows = *std::max_element(std::begin(kRows), std::end(kRows));
  const HostLinear p =
      makeProblem(c.rng, maxRows, s.n, s.k, false, s.epilogue, s.norm);
  const DeviceBuffer dX = c.upload(p.x);
  const DeviceBuffer dNorm = c.upload(s.norm ? p.normW : std::vector<Bf16>{0});
  const Bf16 *normArg = s.norm ? dNorm.as<const Bf16>() : nullptr;
  const float eps = s.norm ? kEps : 0.0f;
  const int cols = outputColumns(s.epilogue, s.n);
  // x, norm weight, output and (residual) its old value: the same for
  // every format.
  auto activationBytes = [&](int rows) {
    double bytes = 2.0 * rows * s.k + 2.0 * rows * cols;
    if (s.norm)
      bytes += 2.0 * s.k;
    if (s.epilogue == LinearEpilogue::Residual)
      bytes += 2.0 * rows * s.n;
    return bytes;
  };

  for (WeightFormat f : kFormats) {
    const HostQuant q = quantize(p.w, s.n, s.k, f);
    const RotatedQuant weights(c, q, true);
    for (int rows : kRows) {
      const std::vector<int> rowIds = firstRows(rows);
      const std::vector<double> ref = quantReference(p, q, rows, f);
      const QuantGemvSpec spec = quantSpecFor(s, rows, f);
      const KernelInstance instance = spec.instance();
      const LaunchDims dims = spec.dims(s.n);
      const cuda::Kernel &kernel = c.kernels.kernel(instance);
      allowSharedMemory(kernel, dims);
      DeviceBuffer dOut = outputBuffer(c, p, rows, LinearOutput::Bf16, cols);
      std::function<void(int)> launch = [&](int rotation) {
        const RotatedQuant::Copy &w = weights[rotation];
        kernel.launch(dims, c.stream,
                      kernels::QuantLinearArgs{.y = dOut.address(),
                                               .x = dX.as<const Bf16>(),
                                               .w = w.codes.address(),
                                               .scales = w.scales.address(),
                                               .zeros = f == WeightFormat::Int4
                                                            ? w.zeros.address()
                                                            : 0ull,
                                               .normWeight = normArg,
                                               .rows = rows,
                                               .n = s.n,
                                               .k = s.k,
                                               .eps = eps});
      };
      launch(0);
      CheckRecord r = makeRecord(
          c, "quant_gemv",
          sol::cat(s.model, " ", s.name, " ", s.n, "x", s.k, " T=", rows, " ",
                   formatName(f), " R", spec.rowsPerWarp, " WK", spec.warpsK),
          instance);
      judgeOutput(c, r, dOut, p, rows, LinearOutput::Bf16, cols, rowIds, ref);
      r.bytes =
          static_cast<double>(spec.weightBytes(s.n)) + activationBytes(rows);
      r.flops = 2.0 * rows * s.n * static_cast<double>(s.k);
      c.finish(std::move(r), &launch);
    }
  }

  // The bf16 GEMV on the same problem, for comparison.
  const RotatedWeights weights(c, p.w, true);
  for (int rows : kRows) {
    const std::vector<int> rowIds = firstRows(rows);
    const GemvSpec spec = bf16SpecFor(s, rows);
    const KernelInstance instance = spec.instance();
    const LaunchDims dims = spec.dims(s.n);
    const cuda::Kernel &kernel = c.kernels.kernel(instance);
    allowSharedMemory(kernel, dims);
    DeviceBuffer dOut = outputBuffer(c, p, rows, LinearOutput::Bf16, cols);
    std::function<void(int)> launch = [&](int rotation) {
      launchSinglePass(c, kernel, dims, dOut, dX.as<const Bf16>(),
                       weights[rotation], nullptr, rows, s.n, normArg, eps);
    };
    launch(0);
    CheckRecord r = makeRecord(c, "quant_gemv",
                               sol::cat(s.model, " ", s.name, " ", s.n, "x",
                                        s.k, " T=", rows, " bf16 R",
                                        spec.rowsPerWarp, " WK", spec.warpsK),
                               instance);
    judgeOutput(c, r, dOut, p, rows, LinearOutput::Bf16, cols, rowIds,
                p.expected(rowIds));
    r.bytes = 2.0 * s.n * s.k + activationBytes(rows);
    r.flops = 2.0 * rows * s.n * static_cast<double>(s.k);
    c.finish(std::move(r), &launch);
  }
}

void checkQuantGemv(Checker &c) {
  for (const QuantShape &s : kShapes) {
    // --quick (also the sanitizer runs) keeps to the 1B shapes.
    if (c.options.quick && std::string_view(s.model) != "1B")
      continue;
    checkQuantShape(c, s);
  }
}

} // namespace

std::vector<CheckFamily> quantGemvChecks() {
  return {
      {"quant_gemv",
       [](KernelLibrary &k) {
         for (const QuantShape &s : kShapes)
           for (int rows : kRows) {
             for (WeightFormat f : kFormats)
               k.require(quantSpecFor(s, rows, f).instance());
             k.require(bf16SpecFor(s, rows).instance());
           }
       },
       checkQuantGemv},
  };
}

} // namespace sol::check

//===- QuantProblems.cpp - Quantized-weight linear problems ---------------===//

#include "QuantProblems.h"

#include "ReferenceKernels.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>

namespace sol::check {
namespace {

using cuda::LinearEpilogue;
using cuda::WeightFormat;

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

} // namespace

const char *formatName(WeightFormat f) {
  return f == WeightFormat::Int8   ? "int8"
         : f == WeightFormat::Int4 ? "int4"
                                   : "fp8";
}

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

QuantProblem::QuantProblem(Checker &c, const QuantShape &s, int rows)
    : shape(s),
      host(makeProblem(c.rng, rows, s.n, s.k, false, s.epilogue, s.norm)),
      x(c.upload(host.x)),
      normW(c.upload(s.norm ? host.normW : std::vector<Bf16>{0})),
      cols(outputColumns(s.epilogue, s.n)) {}

namespace {

// x, the norm weight, the output and (residual) its old value: what a
// launch over `rows` rows moves beside its weights.
double activationBytes(const QuantShape &s, int rows) {
  const int cols = outputColumns(s.epilogue, s.n);
  double bytes = 2.0 * rows * s.k + 2.0 * rows * cols;
  if (s.norm)
    bytes += 2.0 * s.k;
  if (s.epilogue == LinearEpilogue::Residual)
    bytes += 2.0 * rows * s.n;
  return bytes;
}

// Launches `launch(0)` on a fresh output, judges it against `ref` and times
// it.
void checkLaunch(Checker &c, const char *family, const std::string &name,
                 const QuantProblem &p, int rows,
                 const cuda::KernelInstance &instance,
                 const cuda::LaunchDims &dims, double weightBytes,
                 std::span<const double> ref,
                 const std::function<void(const cuda::Kernel &,
                                          cuda::DeviceBuffer &, int)> &run) {
  const QuantShape &s = p.shape;
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  allowSharedMemory(kernel, dims);
  cuda::DeviceBuffer dOut =
      outputBuffer(c, p.host, rows, cuda::LinearOutput::Bf16, p.cols);
  std::function<void(int)> launch = [&](int rotation) {
    run(kernel, dOut, rotation);
  };
  launch(0);
  CheckRecord r = makeRecord(c, family, name, instance);
  judgeOutput(c, r, dOut, p.host, rows, cuda::LinearOutput::Bf16, p.cols,
              firstRows(rows), ref);
  r.bytes = weightBytes + activationBytes(s, rows);
  r.flops = 2.0 * rows * s.n * static_cast<double>(s.k);
  c.finish(std::move(r), &launch);
}

} // namespace

void checkQuantLaunch(Checker &c, const char *family, const std::string &name,
                      const QuantProblem &p, const RotatedQuant &weights,
                      WeightFormat f, int rows,
                      const cuda::KernelInstance &instance,
                      const cuda::LaunchDims &dims, long long weightBytes,
                      std::span<const double> ref) {
  const QuantShape &s = p.shape;
  checkLaunch(
      c, family, name, p, rows, instance, dims,
      static_cast<double>(weightBytes), ref,
      [&](const cuda::Kernel &kernel, cuda::DeviceBuffer &y, int rotation) {
        const RotatedQuant::Copy &w = weights[rotation];
        kernel.launch(dims, c.stream,
                      kernels::QuantLinearArgs{.y = y.address(),
                                               .x = p.x.as<const Bf16>(),
                                               .w = w.codes.address(),
                                               .scales = w.scales.address(),
                                               .zeros = f == WeightFormat::Int4
                                                            ? w.zeros.address()
                                                            : 0ull,
                                               .normWeight = p.normArg(),
                                               .rows = rows,
                                               .n = s.n,
                                               .k = s.k,
                                               .eps = p.eps()});
      });
}

void checkBf16Launch(Checker &c, const char *family, const std::string &name,
                     const QuantProblem &p, const RotatedWeights &weights,
                     int rows, const cuda::KernelInstance &instance,
                     const cuda::LaunchDims &dims) {
  const std::vector<int> rowIds = firstRows(rows);
  checkLaunch(
      c, family, name, p, rows, instance, dims, 2.0 * p.shape.n * p.shape.k,
      p.host.expected(rowIds),
      [&](const cuda::Kernel &kernel, cuda::DeviceBuffer &y, int rotation) {
        launchSinglePass(c, kernel, dims, y, p.x.as<const Bf16>(),
                         weights[rotation], nullptr, rows, p.shape.n,
                         p.normArg(), p.eps());
      });
}

} // namespace sol::check

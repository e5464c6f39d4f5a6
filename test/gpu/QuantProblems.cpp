//===- QuantProblems.cpp - Quantized-weight linear problems ---------------===//

#include "QuantProblems.h"

#include "ReferenceKernels.h"
#include "runtime/support/Fp8.h"
#include "runtime/support/Quantize.h"

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

} // namespace

const char *formatName(WeightFormat f) {
  return f == WeightFormat::Int8   ? "int8"
         : f == WeightFormat::Int4 ? "int4"
                                   : "fp8";
}

HostQuant quantize(std::span<const Bf16> w, int n, int k, WeightFormat f) {
  std::vector<float> wf(w.size());
  std::transform(w.begin(), w.end(), wf.begin(), bf16ToFloat);
  quant::QuantizedWeight qw =
      f == WeightFormat::Int8  ? quant::quantizeInt8(wf, n, k)
      : f == WeightFormat::Fp8 ? quant::quantizeFp8(wf, n, k)
                               : quant::quantizeInt4(wf, n, k, kInt4Group);
  HostQuant q;
  q.dequantized.resize(wf.size());
  quant::dequantize(qw, q.dequantized);
  q.codes = std::move(qw.codes);
  q.scales = std::move(qw.scales);
  q.zeros = std::move(qw.zeros);
  return q;
}

std::vector<double> quantReference(const HostLinear &p, const HostQuant &q,
                                   int rows, WeightFormat f) {
  const std::vector<int> rowIds = firstRows(rows);
  std::vector<Bf16> xs = gatherRows(p.x, p.k, rowIds);
  if (p.norm)
    xs = referenceNormRows(xs, p.normW, rows, p.k, kEps);
  std::vector<double> xin(xs.size());
  std::vector<float> row(p.k);
  for (int t = 0; t < rows; ++t) {
    for (int i = 0; i < p.k; ++i)
      row[i] = bf16ToFloat(xs[t * p.k + i]);
    const float sx = quant::fp8RowScale(row);
    for (int i = 0; i < p.k; ++i)
      xin[t * p.k + i] =
          f == WeightFormat::Fp8
              ? static_cast<double>(e4m3ToFloat(floatToE4M3(row[i] / sx))) * sx
              : row[i];
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

} // namespace

void checkLaunch(Checker &c, const char *family, const std::string &name,
                 const QuantProblem &p, int rows,
                 const cuda::KernelInstance &instance,
                 const cuda::LaunchDims &dims, double weightBytes,
                 std::span<const double> ref, const LinearRun &run,
                 const cuda::DeviceBuffer *workspace) {
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
  if (workspace)
    judgeWorkspace(c, r, *workspace);
  r.bytes = weightBytes + activationBytes(s, rows);
  r.flops = 2.0 * rows * s.n * static_cast<double>(s.k);
  c.finish(std::move(r), &launch);
}

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

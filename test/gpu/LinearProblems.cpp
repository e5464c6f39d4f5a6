//===- LinearProblems.cpp - Host problems for linear checks ---------------===//

#include "LinearProblems.h"

#include "ReferenceKernels.h"

#include <algorithm>
#include <cmath>

namespace sol::check {

using cuda::DeviceBuffer;
using cuda::LaunchDims;
using cuda::LinearEpilogue;
using cuda::LinearOutput;

int outputBytes(LinearOutput output) {
  return output == LinearOutput::Fp32 ? 4 : 2;
}

int outputColumns(LinearEpilogue epilogue, int n) {
  const bool gated =
      epilogue == LinearEpilogue::Swiglu || epilogue == LinearEpilogue::Geglu;
  return gated ? n / 2 : n;
}

const char *epilogueTag(LinearEpilogue epilogue) {
  switch (epilogue) {
  case LinearEpilogue::None:
    return "";
  case LinearEpilogue::Residual:
    return " +res";
  case LinearEpilogue::Swiglu:
    return " +swiglu";
  case LinearEpilogue::Geglu:
    return " +geglu";
  }
  return " +?";
}

/// Weight ranges that keep each epilogue's inputs in an interesting range:
/// residual and product of comparable size, swiglu gates around silu's bend.
float weightScale(LinearEpilogue epilogue) {
  switch (epilogue) {
  case LinearEpilogue::None:
    return 1.0f;
  case LinearEpilogue::Residual:
    return 0.1f;
  case LinearEpilogue::Swiglu:
  case LinearEpilogue::Geglu:
    return 0.05f;
  }
  return 1.0f;
}

std::vector<int> firstRows(int rows) {
  std::vector<int> ids(rows);
  for (int r = 0; r < rows; ++r)
    ids[r] = r;
  return ids;
}

/// Rows `rowIds` of a row-major [*, cols] matrix.
std::vector<Bf16> gatherRows(std::span<const Bf16> m, int cols,
                             std::span<const int> rowIds) {
  std::vector<Bf16> out;
  out.reserve(rowIds.size() * cols);
  for (int row : rowIds) {
    const auto begin = m.begin() + static_cast<std::ptrdiff_t>(row) * cols;
    out.insert(out.end(), begin, begin + cols);
  }
  return out;
}

std::vector<double> HostLinear::expected(std::span<const int> rowIds) const {
  const int count = static_cast<int>(rowIds.size());
  std::vector<Bf16> xs = gatherRows(x, k, rowIds);
  if (norm)
    xs = referenceNormRows(xs, normW, count, k, kEps);
  const std::vector<double> y = referenceLinear(xs, w, bias, count, n, k);
  switch (epilogue) {
  case LinearEpilogue::None:
    return y;
  case LinearEpilogue::Residual:
    return referenceResidualEpilogue(gatherRows(residual, n, rowIds), y);
  case LinearEpilogue::Swiglu:
    return referenceSwigluEpilogue(y, count, n);
  case LinearEpilogue::Geglu: // checked against the unfused kernels instead
    fail("HostLinear::expected: no host reference for the GeGLU epilogue");
  }
  return {};
}

/// A random row of x whose normalised values x * rsqrt(mean(x^2) + eps) all
/// lie clearly off bf16 rounding midpoints: the kernels compute the rsqrt in
/// fp32 (relative error below 1e-6), and one element rounded the other way
/// moves an fp32 output by about 1e-4 relative, the fp32 tolerance. Rows
/// with an element within 4e-6 (relative) of a midpoint are drawn again.
std::vector<Bf16> unambiguousNormRow(Rng &rng, int k, float lo, float hi) {
  for (;;) {
    std::vector<Bf16> row = randomBf16(rng, k, lo, hi);
    double sumSquares = 0.0;
    for (Bf16 v : row)
      sumSquares += static_cast<double>(bf16ToFloat(v)) * bf16ToFloat(v);
    const double inv = 1.0 / std::sqrt(sumSquares / k + kEps);
    bool clear = true;
    for (Bf16 v : row) {
      int exponent = 0;
      const double mantissa =
          std::frexp(std::fabs(bf16ToFloat(v) * inv), &exponent);
      // bf16 keeps 8 significant bits: the value in units of its last place
      // lies in [128, 256), and rounding is ambiguous near a half unit.
      const double units = mantissa * 256.0;
      const double fraction = units - std::floor(units);
      if (std::fabs(fraction - 0.5) < 4e-6 * units) {
        clear = false;
        break;
      }
    }
    if (clear)
      return row;
  }
}

HostLinear makeProblem(Rng &rng, int rows, int n, int k, bool bias,
                       LinearEpilogue epilogue, bool norm) {
  HostLinear p;
  p.n = n;
  p.k = k;
  p.epilogue = epilogue;
  p.norm = norm;
  const float scale = weightScale(epilogue);
  p.w = randomBf16(rng, static_cast<std::size_t>(n) * k, -scale, scale);
  if (norm) {
    for (int t = 0; t < rows; ++t) {
      const std::vector<Bf16> row = unambiguousNormRow(rng, k, -3.0f, 3.0f);
      p.x.insert(p.x.end(), row.begin(), row.end());
    }
  } else {
    p.x = randomBf16(rng, static_cast<std::size_t>(rows) * k, -1, 1);
  }
  if (bias)
    p.bias = randomBf16(rng, n, -1, 1);
  if (norm)
    p.normW = randomBf16(rng, k, 0.5f, 1.5f);
  if (epilogue == LinearEpilogue::Residual)
    p.residual = randomBf16(rng, static_cast<std::size_t>(rows) * n, -2, 2);
  return p;
}

/// The output buffer [rows + 1, cols]: the residual (or poison) in the first
/// `rows` rows, a poisoned guard row after them.
DeviceBuffer outputBuffer(Checker &c, const HostLinear &p, int rows,
                          LinearOutput output, int cols) {
  const std::size_t elems = static_cast<std::size_t>(rows + 1) * cols;
  if (p.epilogue != LinearEpilogue::Residual)
    return c.poisoned(elems * outputBytes(output));
  std::vector<Bf16> init(p.residual.begin(),
                         p.residual.begin() +
                             static_cast<std::ptrdiff_t>(rows) * cols);
  init.resize(elems, kPoisonBf16);
  return c.upload(init);
}

/// Checks the output rows `rowIds` of a launch over `rows` rows against
/// `ref`, and that the guard row after them is untouched.
void judgeOutput(Checker &c, CheckRecord &r, const DeviceBuffer &dOut,
                 const HostLinear &p, int rows, LinearOutput output, int cols,
                 std::span<const int> rowIds, std::span<const double> ref) {
  std::vector<float> got;
  got.reserve(rowIds.size() * cols);
  std::size_t unwritten = 0, guardWritten = 0;
  const std::size_t guard = static_cast<std::size_t>(rows) * cols;
  if (output == LinearOutput::Fp32) {
    const std::vector<float> out = c.download<float>(dOut);
    for (int row : rowIds) {
      const std::span<const float> values(
          out.data() + static_cast<std::size_t>(row) * cols, cols);
      got.insert(got.end(), values.begin(), values.end());
      unwritten += countPoison(values);
    }
    guardWritten =
        cols - countPoison(std::span<const float>(
                   out.data() + guard, static_cast<std::size_t>(cols)));
  } else {
    const std::vector<Bf16> out = c.download<Bf16>(dOut);
    // A residual output still equal to the old value is unwritten when the
    // product should have moved it: by more than 5% of it, and by more than
    // 1% of the products' RMS (a product near zero, its sum's cancellation
    // amplifying bf16 weight roundings, may round back to the old value).
    double productSquares = 0.0;
    if (p.epilogue == LinearEpilogue::Residual)
      for (std::size_t j = 0; j < rowIds.size(); ++j)
        for (int col = 0; col < cols; ++col) {
          const double d =
              ref[j * cols + col] -
              bf16ToFloat(
                  p.residual[static_cast<std::size_t>(rowIds[j]) * cols + col]);
          productSquares += d * d;
        }
    const double productRms =
        std::sqrt(productSquares / std::max<double>(1.0, rowIds.size() * cols));
    for (std::size_t j = 0; j < rowIds.size(); ++j) {
      const std::size_t base = static_cast<std::size_t>(rowIds[j]) * cols;
      for (int col = 0; col < cols; ++col) {
        const Bf16 v = out[base + col];
        got.push_back(bf16ToFloat(v));
        if (v == kPoisonBf16) {
          ++unwritten;
        } else if (p.epilogue == LinearEpilogue::Residual &&
                   v == p.residual[base + col]) {
          const double old = bf16ToFloat(p.residual[base + col]);
          const double moved = std::fabs(ref[j * cols + col] - old);
          if (moved > 0.05 * std::fabs(old) && moved > 0.01 * productRms)
            ++unwritten;
        }
      }
    }
    guardWritten =
        cols - countPoison(std::span<const Bf16>(
                   out.data() + guard, static_cast<std::size_t>(cols)));
  }
  judge(r, relativeL2(got, ref), output == LinearOutput::Fp32 ? 1e-4 : 1e-2,
        unwritten);
  if (guardWritten) {
    r.passed = false;
    r.note += sol::cat(guardWritten, " elements written past the last row; ");
  }
}

/// Raises the kernel's dynamic shared memory limit when the launch needs
/// more than the default 48 KB (as CudaExecutor::raiseSharedLimit does).
void allowSharedMemory(const cuda::Kernel &kernel, const LaunchDims &dims) {
  if (dims.sharedBytes > 48 * 1024)
    kernel.setMaxDynamicSharedMemory(static_cast<int>(dims.sharedBytes));
}

/// The minimum bytes a GEMV (or a few-row GEMM) moves: W once, x, bias and
/// norm weight once, the output (read too for the residual epilogue).
double gemvBytes(const HostLinear &p, int rows, LinearOutput output) {
  const int cols = outputColumns(p.epilogue, p.n);
  double bytes = 2.0 * p.n * p.k + 2.0 * rows * p.k +
                 static_cast<double>(rows) * cols * outputBytes(output);
  if (!p.bias.empty())
    bytes += 2.0 * p.n;
  if (p.norm)
    bytes += 2.0 * p.k;
  if (p.epilogue == LinearEpilogue::Residual)
    bytes += 2.0 * rows * p.n;
  return bytes;
}

void launchSinglePass(Checker &c, const cuda::Kernel &kernel,
                      const cuda::LaunchDims &dims, cuda::DeviceBuffer &y,
                      const Bf16 *x, const Bf16 *w, const Bf16 *bias, int rows,
                      int n, const Bf16 *normW, float eps) {
  kernel.launch(dims, c.stream,
                kernels::LinearArgs{.y = y.address(),
                                    .x = x,
                                    .w = w,
                                    .bias = bias,
                                    .normWeight = normW,
                                    .rows = rows,
                                    .n = n,
                                    .eps = eps});
}

cuda::DeviceBuffer splitKWorkspace(Checker &c, int rows, int n) {
  cuda::DeviceBuffer buffer(static_cast<std::size_t>(rows) * n * 4);
  buffer.fillBytes(0, c.stream);
  c.stream.synchronize();
  return buffer;
}

void judgeWorkspace(Checker &c, CheckRecord &r,
                    const cuda::DeviceBuffer &dPartial) {
  const std::vector<float> partial = c.download<float>(dPartial);
  const auto left = std::count_if(partial.begin(), partial.end(),
                                  [](float v) { return v != 0.0f; });
  if (left) {
    r.passed = false;
    r.note += sol::cat(left, " split-K partial sums not reset to zero; ");
  }
}

void launchGemm(Checker &c, const cuda::Kernel &gemm,
                const cuda::LaunchDims &dims, const cuda::Kernel *finalize,
                const cuda::LaunchDims &finalizeDims, float *partial, void *y,
                const Bf16 *x, const Bf16 *w, const Bf16 *bias, int rows, int n,
                int k) {
  kernels::LinearArgs args{
      .y = y, .x = x, .w = w, .bias = bias, .rows = rows, .n = n, .k = k};
  if (finalize == nullptr) {
    gemm.launch(dims, c.stream, args);
    return;
  }
  args.y = partial;
  args.bias = nullptr;
  gemm.launch(dims, c.stream, args);
  finalize->launch(
      finalizeDims, c.stream,
      kernels::SplitKFinalizeArgs{
          .y = y, .partial = partial, .bias = bias, .rows = rows, .n = n});
}

} // namespace sol::check

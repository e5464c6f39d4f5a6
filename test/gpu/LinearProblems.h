//===- LinearProblems.h - Host problems for linear checks -------*- C++ -*-===//
//
// What the linear kernel checks share (FusedLinearChecks.cpp,
// SkinnyChecks.cpp, LinearChecks.cpp): a random linear problem with its norm
// weight, bias and residual and its float64 reference with the kernels' bf16
// roundings (ReferenceKernels.h), poisoned output buffers with a guard row, the
// judge that reads them back, and weights rotated through copies larger than L2
// for timing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Checks.h"

#include "runtime/cuda/KernelSpecs.h"

#include <span>
#include <vector>

namespace sol::check {

/// The RMS norm's epsilon in every linear check.
constexpr float kEps = 1e-5f;

int outputBytes(cuda::LinearOutput output);

/// Output columns of a linear of N rows of W: N / 2 for swiglu.
int outputColumns(cuda::LinearEpilogue epilogue, int n);

/// " +res", " +swiglu" or "" for a check's name.
const char *epilogueTag(cuda::LinearEpilogue epilogue);

/// Weight ranges that keep each epilogue's inputs in an interesting range:
/// residual and product of comparable size, swiglu gates around silu's bend.
float weightScale(cuda::LinearEpilogue epilogue);

/// 0, 1, ..., rows - 1.
std::vector<int> firstRows(int rows);

/// Rows `rowIds` of a row-major [*, cols] matrix.
std::vector<Bf16> gatherRows(std::span<const Bf16> m, int cols,
                             std::span<const int> rowIds);

/// One linear problem on the host: x [rows, k], W [n, k], optional bias,
/// norm weight (the NormLinear prologue) and residual [rows, n]. Launches
/// may use only the first rows of it.
struct HostLinear {
  int n = 0, k = 0;
  cuda::LinearEpilogue epilogue = cuda::LinearEpilogue::None;
  bool norm = false;
  std::vector<Bf16> x, w, bias, normW, residual;

  /// epilogue(norm?(x) . W^T + b) for rows `rowIds`: [rowIds, out columns].
  std::vector<double> expected(std::span<const int> rowIds) const;
};

/// A random row of x whose normalised values all lie clearly off bf16
/// rounding midpoints (see LinearProblems.cpp).
std::vector<Bf16> unambiguousNormRow(Rng &rng, int k, float lo, float hi);

/// A random problem of `rows` rows (norm rows drawn by unambiguousNormRow,
/// weights scaled by weightScale).
HostLinear makeProblem(Rng &rng, int rows, int n, int k, bool bias,
                       cuda::LinearEpilogue epilogue, bool norm);

/// The output buffer [rows + 1, cols]: the residual (or poison) in the first
/// `rows` rows, a poisoned guard row after them.
cuda::DeviceBuffer outputBuffer(Checker &c, const HostLinear &p, int rows,
                                cuda::LinearOutput output, int cols);

/// Checks the output rows `rowIds` of a launch over `rows` rows against
/// `ref`, and that the guard row after them is untouched.
void judgeOutput(Checker &c, CheckRecord &r, const cuda::DeviceBuffer &dOut,
                 const HostLinear &p, int rows, cuda::LinearOutput output,
                 int cols, std::span<const int> rowIds,
                 std::span<const double> ref);

/// W and copies of it, so that timed launches stream W from HBM, not L2.
class RotatedWeights {
public:
  RotatedWeights(Checker &c, const std::vector<Bf16> &w, bool rotate) {
    const std::size_t bytes = w.size() * 2;
    const int count = rotate && c.options.timing
                          ? rotationCopies(bytes, c.context.l2CacheBytes())
                          : 1;
    copies_.push_back(c.upload(w));
    for (int i = 1; i < count; ++i) {
      copies_.emplace_back(bytes);
      copies_.back().copyFromDevice(copies_.front(), bytes, c.stream);
    }
    c.stream.synchronize();
  }
  const Bf16 *operator[](int rotation) const {
    return copies_[static_cast<std::size_t>(rotation) % copies_.size()]
        .as<const Bf16>();
  }

private:
  std::vector<cuda::DeviceBuffer> copies_;
};

/// Raises the kernel's dynamic shared memory limit when the launch needs
/// more than the default 48 KB (as CudaExecutor::raiseSharedLimit does).
void allowSharedMemory(const cuda::Kernel &kernel,
                       const cuda::LaunchDims &dims);

/// Launches a one-pass linear kernel (linear_skinny or linear_gemv: the
/// same LinearArgs) on y, of the type the instance writes.
void launchSinglePass(Checker &c, const cuda::Kernel &kernel,
                      const cuda::LaunchDims &dims, cuda::DeviceBuffer &y,
                      const Bf16 *x, const Bf16 *w, const Bf16 *bias, int rows,
                      int n, const Bf16 *normW, float eps);

/// The fp32 partial sums of a split-K GEMM: zero before the first launch,
/// and the finalize kernel leaves them zero again.
cuda::DeviceBuffer splitKWorkspace(Checker &c, int rows, int n);

/// Fails the record when the finalize left partial sums behind.
void judgeWorkspace(Checker &c, CheckRecord &r,
                    const cuda::DeviceBuffer &dPartial);

/// A GEMM as CudaExecutor::launchLinear runs it: straight into y, or
/// (split K, `finalize` given) into the fp32 workspace and then the
/// finalize.
void launchGemm(Checker &c, const cuda::Kernel &gemm,
                const cuda::LaunchDims &dims, const cuda::Kernel *finalize,
                const cuda::LaunchDims &finalizeDims, float *partial, void *y,
                const Bf16 *x, const Bf16 *w, const Bf16 *bias, int rows,
                int n, int k);

/// The minimum bytes a GEMV (or a few-row GEMM) moves: W once, x, bias and
/// norm weight once, the output (read too for the residual epilogue).
double gemvBytes(const HostLinear &p, int rows, cuda::LinearOutput output);

} // namespace sol::check

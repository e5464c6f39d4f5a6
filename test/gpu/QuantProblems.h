//===- QuantProblems.h - Quantized-weight linear problems -------*- C++ -*-===//
//
// What the checks of the quantized linears share (QuantGemvChecks.cpp,
// QuantSkinnyChecks.cpp): the decode linears of Llama-3.2-1B and
// Llama-3.1-8B (QKV behind its norm, o and down adding into the residual,
// gate/up behind its norm with the swiglu epilogue), weights quantized on
// the host into each format of runtime/support/Quantize.h (int8 per row,
// int4 in groups of 128, fp8 E4M3 per row), the float64 reference from the
// dequantized weights that rounds where the kernels round (the fp8
// activations quantized by the same rule), the weights rotated through
// copies larger than L2, and a launch of a kernel that takes
// QuantLinearArgs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LinearProblems.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace sol::check {

inline constexpr int kInt4Group = 128;

struct QuantShape {
  const char *model;
  const char *name;
  int n, k;
  cuda::LinearEpilogue epilogue;
  bool norm;
};

inline constexpr QuantShape kQuantShapes[] = {
    {"1B", "qkv", 3072, 2048, cuda::LinearEpilogue::None, true},
    {"1B", "o", 2048, 2048, cuda::LinearEpilogue::Residual, false},
    {"1B", "gate_up", 16384, 2048, cuda::LinearEpilogue::Swiglu, true},
    {"1B", "down", 2048, 8192, cuda::LinearEpilogue::Residual, false},
    {"8B", "qkv", 6144, 4096, cuda::LinearEpilogue::None, true},
    {"8B", "o", 4096, 4096, cuda::LinearEpilogue::Residual, false},
    {"8B", "gate_up", 28672, 4096, cuda::LinearEpilogue::Swiglu, true},
    {"8B", "down", 4096, 14336, cuda::LinearEpilogue::Residual, false},
};
inline constexpr cuda::WeightFormat kQuantFormats[] = {cuda::WeightFormat::Int8,
                                                       cuda::WeightFormat::Int4,
                                                       cuda::WeightFormat::Fp8};

/// "int8", "int4", "fp8".
const char *formatName(cuda::WeightFormat f);

/// The group size a format's spec takes: kInt4Group for int4, else 0.
inline int groupSizeOf(cuda::WeightFormat f) {
  return f == cuda::WeightFormat::Int4 ? kInt4Group : 0;
}

/// A weight in one format: what the kernel reads, and W' as floats.
struct HostQuant {
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
  std::vector<std::uint8_t> zeros;
  std::vector<float> dequantized; // [n, k]
};

/// W quantized as the compiler does (runtime/support/Quantize.h), int4 in
/// groups of kInt4Group.
HostQuant quantize(std::span<const Bf16> w, int n, int k, cuda::WeightFormat f);

/// epilogue(x' . W'^T) for the first `rows` rows: x' the normed rows, and
/// for fp8 those rows quantized, e4m3(x / sx) * sx.
std::vector<double> quantReference(const HostLinear &p, const HostQuant &q,
                                   int rows, cuda::WeightFormat f);

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
           q.zeros.empty() ? cuda::DeviceBuffer(16) : c.upload(q.zeros)});
  }
  struct Copy {
    cuda::DeviceBuffer codes, scales, zeros;
  };
  const Copy &operator[](int rotation) const {
    return copies_[static_cast<std::size_t>(rotation) % copies_.size()];
  }

private:
  std::vector<Copy> copies_;
};

/// One problem of a QuantShape for every kernel checked on it: `rows` rows
/// of x (the most any launch takes), W, norm weight and residual on the
/// host (makeProblem), x and the norm weight on the device.
struct QuantProblem {
  const QuantShape &shape;
  HostLinear host;
  cuda::DeviceBuffer x, normW;
  int cols; // of the output

  QuantProblem(Checker &c, const QuantShape &s, int rows);
  const Bf16 *normArg() const {
    return shape.norm ? normW.as<const Bf16>() : nullptr;
  }
  float eps() const { return shape.norm ? kEps : 0.0f; }
};

/// Runs a linear kernel on output y with the weights of rotation
/// `rotation`.
using LinearRun =
    std::function<void(const cuda::Kernel &, cuda::DeviceBuffer &y, int)>;

/// Launches `run` on a fresh output over the first `rows` rows of `p`,
/// judges it against `ref` (and that `workspace`, when given, the split-K
/// partial sums, is zero again), times it with the weights rotated and
/// records it as `name` in `family`. GB/s counts weightBytes and the
/// activations.
void checkLaunch(Checker &c, const char *family, const std::string &name,
                 const QuantProblem &p, int rows,
                 const cuda::KernelInstance &instance,
                 const cuda::LaunchDims &dims, double weightBytes,
                 std::span<const double> ref, const LinearRun &run,
                 const cuda::DeviceBuffer *workspace = nullptr);

/// One launch of `instance`, a kernel taking QuantLinearArgs
/// (linear_gemv_quant, linear_skinny_quant), over the first `rows` rows of
/// `p` with `weights` in format `f`: judged against `ref` (the first `rows`
/// rows of quantReference), timed with the weights rotated, recorded as
/// `name` in `family`. GB/s counts weightBytes and the activations.
void checkQuantLaunch(Checker &c, const char *family, const std::string &name,
                      const QuantProblem &p, const RotatedQuant &weights,
                      cuda::WeightFormat f, int rows,
                      const cuda::KernelInstance &instance,
                      const cuda::LaunchDims &dims, long long weightBytes,
                      std::span<const double> ref);

/// The same for a bf16 kernel taking LinearArgs (linear_gemv,
/// linear_skinny) over W's copies `weights`, against the bf16 reference.
void checkBf16Launch(Checker &c, const char *family, const std::string &name,
                     const QuantProblem &p, const RotatedWeights &weights,
                     int rows, const cuda::KernelInstance &instance,
                     const cuda::LaunchDims &dims);

} // namespace sol::check

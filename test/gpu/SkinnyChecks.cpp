//===- SkinnyChecks.cpp - linear_skinny: 2..16 rows on tensor cores -------===//
//
//  * skinny: linear_skinny (LinearSkinny.cuh) as SkinnySpec::choose
//    configures it, against float64 references that round where the kernel
//    does (LinearProblems.h): every row count from 2 to 16 on Llama-3.2-1B's
//    layers as the fused plan runs them (norm prologue on qkv, gate_up and
//    the LM head, residual epilogue on o and down, swiglu on gate_up, fp32
//    logits), Llama-3.1-8B's layers at a few row counts, and edge shapes: N
//    not a multiple of 16, K not a multiple of 32 (a partial k step), K = 8,
//    bias, the residual epilogue behind the norm prologue. Outputs start as
//    NaN poison with a poisoned guard row after the last row: every element
//    must be written, none past `rows`. Rows 2, 4, 8 and 16 are also timed
//    (weights rotated through copies larger than L2).
//  * skinny_speed: the plain projection (no norm, no epilogue) of each real
//    shape at 1, 2, 4, 8 and 16 rows through linear_skinny, linear_gemv (up
//    to 8 rows) and cuBLASLt (bf16 outputs, where the library loads), timed
//    side by side in GB/s; each output is compared with linear_skinny's.
//    One run says which kernel each row count should use. Timing only
//    (nothing runs under --quick or --no-timing).
//  * skinny_sweep: tiles per warp and warps along K around the chosen
//    configuration at 8 and 16 rows, for tuning SkinnySpec::choose (timing
//    only, like skinny_speed).
//  * gemv_sweep: linear_gemv's weight rows per warp (1..16) and warps along
//    K (1..8) around GemvSpec::choose's configuration for the one-row
//    linears of a decode step as the fused plan runs them (norm prologue,
//    residual and SwiGLU epilogues), and linear_skinny's tiles and warps
//    along K for 8 rows of the same, Llama-3.2-1B, Llama-3.1-8B,
//    Gemma-3-4B, Gemma-2-9B and Phi-4-mini shapes, each checked
//    against the float64 reference and timed (timing only); the chosen
//    configurations also with their L2Prefetch flag flipped (rows "+L2"
//    prefetch).
//  * cublas_sweep: every algorithm cuBLASLt's heuristic offers for the bf16
//    linears of 16-128-row steps (Llama-3.2-1B and 3.1-8B shapes), each
//    against the heuristic's first (the executor's) and timed (timing
//    only).
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "LinearProblems.h"

#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/KernelSelection.h"

#include <algorithm>
#include <memory>
#include <string>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;
using cuda::GemvSpec;
using cuda::KernelInstance;
using cuda::LaunchDims;
using cuda::LinearEpilogue;
using cuda::LinearOutput;
using cuda::SkinnySpec;

std::vector<int> rowRange(int first, int last) {
  std::vector<int> rows;
  for (int r = first; r <= last; ++r)
    rows.push_back(r);
  return rows;
}

bool timedRows(int rows) {
  return rows == 2 || rows == 4 || rows == 8 || rows == 16;
}

std::string skinnyTag(const SkinnySpec &spec) {
  return sol::cat("T", spec.tiles, " WK", spec.warpsK,
                  spec.l2Prefetch ? " +L2" : "");
}

/// Whether a linear of this shape may run with L2Prefetch in a plan (its
/// size; KernelSelection also asks what runs before it): the checks take
/// that variant, gemv_sweep times it against the other.
bool plannedPrefetch(int n, int k) {
  return 2LL * n * k <= cuda::kL2PrefetchMaxBytes;
}

// ---------------------------------------------------------------------------
// skinny

struct SkinnyCase {
  const char *name;
  int n, k;
  LinearOutput output;
  bool bias;
  LinearEpilogue epilogue;
  bool norm;
  std::vector<int> rows;
};

const SkinnyCase kSkinnyCases[] = {
    // Llama-3.2-1B as the fused plan runs it, every row count.
    {"qkv", 3072, 2048, LinearOutput::Bf16, false, LinearEpilogue::None, true,
     rowRange(2, 16)},
    {"o", 2048, 2048, LinearOutput::Bf16, false, LinearEpilogue::Residual,
     false, rowRange(2, 16)},
    {"gate_up", 16384, 2048, LinearOutput::Bf16, false, LinearEpilogue::Swiglu,
     true, rowRange(2, 16)},
    {"down", 2048, 8192, LinearOutput::Bf16, false, LinearEpilogue::Residual,
     false, rowRange(2, 16)},
    {"lm_head",
     128256,
     2048,
     LinearOutput::Fp32,
     false,
     LinearEpilogue::None,
     true,
     {2, 7, 8, 9, 16}},
    // Unfused (a plain Linear op) and a Qwen-style biased QKV.
    {"qkv plain",
     3072,
     2048,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     false,
     {4, 12}},
    {"qkv+bias",
     3072,
     2048,
     LinearOutput::Bf16,
     true,
     LinearEpilogue::None,
     true,
     {3, 9}},
    // Llama-3.1-8B: 16 normalised rows of K = 4096 take 132 KB of shared
    // memory.
    {"qkv 8B",
     6144,
     4096,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     true,
     {2, 8, 9, 16}},
    {"o 8B",
     4096,
     4096,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Residual,
     false,
     {5, 16}},
    {"gate_up 8B",
     28672,
     4096,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Swiglu,
     true,
     {4, 13}},
    {"down 8B",
     4096,
     14336,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Residual,
     false,
     {8, 16}},
    {"lm_head 8B",
     128256,
     4096,
     LinearOutput::Fp32,
     false,
     LinearEpilogue::None,
     true,
     {3, 11}},
    // The other families' decode linears as their plans run them (Gemma's
    // GeGLU timed as SwiGLU: the same loads, another activation).
    {"qkv G3",
     4096,
     2560,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     false,
     {8}},
    {"o G3",
     2560,
     2048,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     false,
     {8}},
    {"gate_up G3",
     20480,
     2560,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Swiglu,
     false,
     {8}},
    {"down G3",
     2560,
     10240,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     false,
     {8}},
    {"qkv G2",
     8192,
     3584,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     false,
     {8}},
    {"o G2",
     3584,
     4096,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     false,
     {8}},
    {"gate_up G2",
     28672,
     3584,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Swiglu,
     false,
     {8}},
    {"down G2",
     3584,
     14336,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     false,
     {8}},
    {"qkv P4",
     5120,
     3072,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::None,
     true,
     {8}},
    {"o P4",
     3072,
     3072,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Residual,
     false,
     {8}},
    {"gate_up P4",
     16384,
     3072,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Swiglu,
     true,
     {8}},
    {"down P4",
     3072,
     8192,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Residual,
     false,
     {8}},
    // Edges: a partial tile and a partial k step (K = 72: nine 16-byte
    // vectors, one warp along K), a single vector of K, the Qwen2.5-0.5B
    // swiglu (K = 896, N = 1000), bias with the residual add, and the
    // residual epilogue behind the norm prologue.
    {"edge",
     40,
     72,
     LinearOutput::Fp32,
     true,
     LinearEpilogue::None,
     false,
     {2, 3, 8, 9, 16}},
    {"edge k8",
     24,
     8,
     LinearOutput::Fp32,
     false,
     LinearEpilogue::None,
     false,
     {2, 16}},
    {"swiglu+bias",
     1000,
     896,
     LinearOutput::Bf16,
     true,
     LinearEpilogue::Swiglu,
     true,
     {2, 5, 9, 16}},
    {"res+bias",
     264,
     1024,
     LinearOutput::Bf16,
     true,
     LinearEpilogue::Residual,
     false,
     {3, 12}},
    {"res+norm",
     2048,
     2048,
     LinearOutput::Bf16,
     false,
     LinearEpilogue::Residual,
     true,
     {3, 16}},
};

SkinnySpec skinnySpecFor(const SkinnyCase &s, int rows) {
  SkinnySpec spec =
      SkinnySpec::choose(s.n, s.k, rows, s.output, s.bias, s.epilogue, s.norm,
                         cuda::kPlannedMultiprocessors);
  spec.l2Prefetch = plannedPrefetch(s.n, s.k);
  return spec;
}

void checkSkinnyCase(Checker &c, const SkinnyCase &s) {
  // One problem for the most rows; fewer rows use its first rows, and the
  // reference of those is the first rows of its reference.
  const int maxRows = *std::max_element(s.rows.begin(), s.rows.end());
  const HostLinear p =
      makeProblem(c.rng, maxRows, s.n, s.k, s.bias, s.epilogue, s.norm);
  const std::vector<double> ref = p.expected(firstRows(maxRows));
  const RotatedWeights weights(c, p.w, true);
  const DeviceBuffer dX = c.upload(p.x);
  const DeviceBuffer dBias = c.upload(s.bias ? p.bias : std::vector<Bf16>{0});
  const DeviceBuffer dNorm = c.upload(s.norm ? p.normW : std::vector<Bf16>{0});
  const Bf16 *biasArg = s.bias ? dBias.as<const Bf16>() : nullptr;
  const Bf16 *normArg = s.norm ? dNorm.as<const Bf16>() : nullptr;
  const float eps = s.norm ? kEps : 0.0f;
  const int cols = outputColumns(s.epilogue, s.n);

  for (int rows : s.rows) {
    // --quick (also the sanitizer runs): the first, 9 and the last rows.
    if (c.options.quick && rows != s.rows.front() && rows != 9 &&
        rows != s.rows.back())
      continue;
    const SkinnySpec spec = skinnySpecFor(s, rows);
    const KernelInstance instance = spec.instance();
    const LaunchDims dims = spec.dims(s.n);
    const cuda::Kernel &kernel = c.kernels.kernel(instance);
    allowSharedMemory(kernel, dims);
    DeviceBuffer dOut = outputBuffer(c, p, rows, s.output, cols);
    std::function<void(int)> launch = [&](int rotation) {
      launchSinglePass(c, kernel, dims, dOut, dX.as<const Bf16>(),
                       weights[rotation], biasArg, rows, s.n, normArg, eps);
    };
    launch(0);
    CheckRecord r =
        makeRecord(c, "skinny",
                   sol::cat(s.name, " ", s.n, "x", s.k, " T=", rows,
                            s.norm ? " +norm" : "", epilogueTag(s.epilogue),
                            s.bias ? " +bias" : "",
                            s.output == LinearOutput::Fp32 ? " fp32" : "", " ",
                            skinnyTag(spec)),
                   instance);
    const std::vector<int> rowIds = firstRows(rows);
    judgeOutput(c, r, dOut, p, rows, s.output, cols, rowIds,
                std::span<const double>(ref).first(
                    static_cast<std::size_t>(rows) * cols));
    r.bytes = gemvBytes(p, rows, s.output);
    r.flops = 2.0 * rows * s.n * static_cast<double>(s.k);
    // Timing adds into the residual again at every launch: it stays finite.
    c.finish(std::move(r), timedRows(rows) ? &launch : nullptr);
  }
}

bool largeWeights(int n, int k) {
  return static_cast<long long>(n) * k > 30'000'000;
}

void checkSkinny(Checker &c) {
  for (const SkinnyCase &s : kSkinnyCases) {
    // --quick (also the sanitizer runs) leaves out the largest weights.
    if (c.options.quick && largeWeights(s.n, s.k))
      continue;
    checkSkinnyCase(c, s);
  }
}

// ---------------------------------------------------------------------------
// skinny_speed and skinny_sweep

struct SpeedShape {
  const char *name;
  int n, k;
  LinearOutput output;
};

const SpeedShape kSpeedShapes[] = {
    {"qkv", 3072, 2048, LinearOutput::Bf16},
    {"o", 2048, 2048, LinearOutput::Bf16},
    {"gate_up", 16384, 2048, LinearOutput::Bf16},
    {"down", 2048, 8192, LinearOutput::Bf16},
    {"lm_head", 128256, 2048, LinearOutput::Fp32},
    {"qkv 8B", 6144, 4096, LinearOutput::Bf16},
    {"o 8B", 4096, 4096, LinearOutput::Bf16},
    {"gate_up 8B", 28672, 4096, LinearOutput::Bf16},
    {"down 8B", 4096, 14336, LinearOutput::Bf16},
    {"lm_head 8B", 128256, 4096, LinearOutput::Fp32},
};

constexpr int kSpeedRows[] = {1, 2, 4, 8, 16};

SkinnySpec chosenSkinny(const SpeedShape &s, int rows) {
  return SkinnySpec::choose(s.n, s.k, rows, s.output, false,
                            LinearEpilogue::None, false,
                            cuda::kPlannedMultiprocessors);
}

/// The configurations the sweep times at `rows`: one or two tiles a warp,
/// K over 8, 4 or 2 warps, and the chosen one.
std::vector<SkinnySpec> sweepSpecs(const SpeedShape &s, int rows) {
  const SkinnySpec chosen = chosenSkinny(s, rows);
  std::vector<SkinnySpec> specs = {chosen};
  for (int tiles : {1, 2})
    for (int warpsK : {8, 4, 2}) {
      SkinnySpec spec = chosen;
      spec.tiles = tiles;
      spec.warpsK = warpsK;
      if ((spec.tiles != chosen.tiles || spec.warpsK != chosen.warpsK) &&
          (s.k + 31) / 32 >= 2 * warpsK)
        specs.push_back(spec);
    }
  return specs;
}

/// One plain linear problem of a speed shape: W (rotated), 16 rows of x, an
/// output for each kernel, and linear_skinny's output to compare with.
class SpeedProblem {
public:
  SpeedProblem(Checker &c, const SpeedShape &s)
      : shape_(s),
        weights_(c,
                 randomBf16(c.rng, static_cast<std::size_t>(s.n) * s.k, -1, 1),
                 true),
        x_(c.upload(
            randomBf16(c.rng, static_cast<std::size_t>(16) * s.k, -1, 1))) {
    host_.n = s.n;
    host_.k = s.k;
  }

  const Bf16 *w(int rotation) const { return weights_[rotation]; }
  const Bf16 *x() const { return x_.as<const Bf16>(); }
  /// The same, as the device addresses cuBLASLt takes.
  CUdeviceptr wAddress(int rotation) const {
    return reinterpret_cast<CUdeviceptr>(w(rotation));
  }
  CUdeviceptr xAddress() const { return x_.address(); }
  DeviceBuffer output(Checker &c, int rows) const {
    return c.poisoned(static_cast<std::size_t>(rows) * shape_.n *
                      outputBytes(shape_.output));
  }
  std::vector<float> read(Checker &c, const DeviceBuffer &y,
                          std::size_t &unwritten) const {
    if (shape_.output == LinearOutput::Fp32) {
      std::vector<float> out = c.download<float>(y);
      unwritten = countPoison(out);
      return out;
    }
    const std::vector<Bf16> out = c.download<Bf16>(y);
    unwritten = countPoison(out);
    return toFloat(out);
  }
  double bytes(int rows) const { return gemvBytes(host_, rows, shape_.output); }

private:
  SpeedShape shape_;
  RotatedWeights weights_;
  DeviceBuffer x_;
  HostLinear host_; // shapes only, for gemvBytes
};

/// Judges `out` against linear_skinny's output `base` (both of `rows`
/// rows), at the tolerance of the output type.
void judgeAgainst(CheckRecord &r, std::span<const float> out,
                  std::span<const float> base, LinearOutput output,
                  std::size_t unwritten) {
  const std::vector<double> ref(base.begin(), base.end());
  judge(r, relativeL2(out, ref), output == LinearOutput::Fp32 ? 1e-4 : 1e-2,
        unwritten);
  r.note += "vs linear_skinny; ";
}

/// `cublas` is null where the library does not load; it runs bf16 outputs
/// only.
void checkSpeedShape(Checker &c, const SpeedShape &s, cuda::CublasLt *cublas) {
  const SpeedProblem p(c, s);
  cuda::CublasLt *lib = s.output == LinearOutput::Bf16 ? cublas : nullptr;
  DeviceBuffer workspace(lib ? cuda::CublasLt::kWorkspaceBytes : 256);
  const Bf16 *noBias = nullptr;
  const Bf16 *noNorm = nullptr;
  for (int rows : kSpeedRows) {
    const std::string shape = sol::cat(s.name, " ", s.n, "x", s.k, " T=", rows);
    // linear_skinny, the reference for the others.
    const SkinnySpec skinny = chosenSkinny(s, rows);
    const cuda::Kernel &sk = c.kernels.kernel(skinny.instance());
    const LaunchDims skDims = skinny.dims(s.n);
    allowSharedMemory(sk, skDims);
    DeviceBuffer ySkinny = p.output(c, rows);
    std::function<void(int)> launchSkinny = [&](int rotation) {
      launchSinglePass(c, sk, skDims, ySkinny, p.x(), p.w(rotation), noBias,
                       rows, s.n, noNorm, 0.0f);
    };
    launchSkinny(0);
    std::size_t unwritten = 0;
    const std::vector<float> base = p.read(c, ySkinny, unwritten);
    {
      CheckRecord r = makeRecord(c, "skinny_speed",
                                 sol::cat(shape, " skinny ", skinnyTag(skinny)),
                                 skinny.instance());
      r.passed = unwritten == 0;
      if (unwritten)
        r.note += sol::cat(unwritten, " output elements never written; ");
      r.bytes = p.bytes(rows);
      c.finish(std::move(r), &launchSkinny);
    }
    // linear_gemv.
    if (rows <= GemvSpec::kMaxRows) {
      const GemvSpec gemv = GemvSpec::choose(s.n, s.k, rows, s.output, false);
      const cuda::Kernel &gk = c.kernels.kernel(gemv.instance());
      const LaunchDims gDims = gemv.dims(s.n);
      DeviceBuffer y = p.output(c, rows);
      std::function<void(int)> launch = [&](int rotation) {
        launchSinglePass(c, gk, gDims, y, p.x(), p.w(rotation), noBias, rows,
                         s.n, noNorm, 0.0f);
      };
      launch(0);
      CheckRecord r = makeRecord(
          c, "skinny_speed",
          sol::cat(shape, " gemv R", gemv.rowsPerWarp, " WK", gemv.warpsK),
          gemv.instance());
      judgeAgainst(r, p.read(c, y, unwritten), base, s.output, unwritten);
      r.bytes = p.bytes(rows);
      c.finish(std::move(r), &launch);
    }
    // cuBLASLt (bf16 only), as the executor calls it.
    if (lib != nullptr) {
      DeviceBuffer y = p.output(c, rows);
      std::function<void(int)> launch = [&](int rotation) {
        lib->linear(c.stream.handle(), y.address(), p.xAddress(),
                    p.wAddress(rotation), 0, rows, s.n, s.k, false,
                    workspace.address(), workspace.size());
      };
      launch(0);
      CheckRecord r;
      r.family = "skinny_speed";
      r.name = sol::cat(shape, " cublasLt");
      r.kernel = "cublasLt";
      judgeAgainst(r, p.read(c, y, unwritten), base, s.output, unwritten);
      r.bytes = p.bytes(rows);
      c.finish(std::move(r), &launch);
    }
  }
}

/// The timing families have nothing to say without timing (--quick,
/// --no-timing).
bool timingOff(Checker &c, const char *family) {
  if (c.options.timing)
    return false;
  std::printf("  %s: timing is off, nothing to do\n", family);
  return true;
}

void checkSkinnySpeed(Checker &c) {
  if (timingOff(c, "skinny_speed"))
    return;
  std::string why;
  const std::unique_ptr<cuda::CublasLt> cublas = cuda::CublasLt::load(why);
  if (!cublas)
    std::printf("  (cuBLASLt not timed: %s)\n", why.c_str());
  for (const SpeedShape &s : kSpeedShapes)
    checkSpeedShape(c, s, cublas.get());
}

void checkSkinnySweep(Checker &c) {
  if (timingOff(c, "skinny_sweep"))
    return;
  for (const SpeedShape &s : kSpeedShapes) {
    const SpeedProblem p(c, s);
    for (int rows : {8, 16}) {
      std::vector<float> base;
      for (const SkinnySpec &spec : sweepSpecs(s, rows)) {
        const bool chosen = spec.instance() == chosenSkinny(s, rows).instance();
        const cuda::Kernel &kernel = c.kernels.kernel(spec.instance());
        const LaunchDims dims = spec.dims(s.n);
        allowSharedMemory(kernel, dims);
        DeviceBuffer y = p.output(c, rows);
        std::function<void(int)> launch = [&](int rotation) {
          launchSinglePass(c, kernel, dims, y, p.x(), p.w(rotation),
                           static_cast<const Bf16 *>(nullptr), rows, s.n,
                           static_cast<const Bf16 *>(nullptr), 0.0f);
        };
        launch(0);
        std::size_t unwritten = 0;
        const std::vector<float> out = p.read(c, y, unwritten);
        CheckRecord r =
            makeRecord(c, "skinny_sweep",
                       sol::cat(s.name, " ", s.n, "x", s.k, " T=", rows, " ",
                                skinnyTag(spec), " (", spec.dims(s.n).grid.x,
                                " blocks)", chosen ? " *" : ""),
                       spec.instance());
        if (chosen) { // first in the list
          base = out;
          r.passed = unwritten == 0;
        } else {
          judgeAgainst(r, out, base, s.output, unwritten);
        }
        r.bytes = p.bytes(rows);
        c.finish(std::move(r), &launch);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// gemv_sweep

/// The linears of a decode step as the fused plan runs them: kSkinnyCases'
/// Llama-3.2-1B and Llama-3.1-8B layers (the 8B LM head left out).
std::vector<const SkinnyCase *> gemvSweepCases() {
  static const char *const kNames[] = {
      "qkv",     "o",          "gate_up", "down",       "lm_head", "qkv 8B",
      "o 8B",    "gate_up 8B", "down 8B", "qkv G3",     "o G3",    "gate_up G3",
      "down G3", "qkv G2",     "o G2",    "gate_up G2", "down G2", "qkv P4",
      "o P4",    "gate_up P4", "down P4"};
  std::vector<const SkinnyCase *> out;
  for (const char *name : kNames)
    for (const SkinnyCase &s : kSkinnyCases)
      if (std::string(s.name) == name)
        out.push_back(&s);
  return out;
}

GemvSpec chosenGemv(const SkinnyCase &s) {
  GemvSpec spec = GemvSpec::choose(s.n, s.k, 1, s.output, s.bias, s.epilogue,
                                   s.norm, cuda::kPlannedMultiprocessors);
  spec.l2Prefetch = plannedPrefetch(s.n, s.k);
  return spec;
}

/// The chosen configurations with L2Prefetch the other way round, timed
/// beside them.
GemvSpec flippedGemv(const SkinnyCase &s) {
  GemvSpec spec = chosenGemv(s);
  spec.l2Prefetch = !spec.l2Prefetch;
  return spec;
}
SkinnySpec flippedSkinny(const SkinnyCase &s, int rows) {
  SkinnySpec spec = skinnySpecFor(s, rows);
  spec.l2Prefetch = !spec.l2Prefetch;
  return spec;
}

/// linear_gemv's configurations around the chosen one for one row: weight
/// rows per warp and warps along K, the chosen first.
std::vector<GemvSpec> gemvSweepSpecs(const SkinnyCase &s) {
  const GemvSpec chosen = chosenGemv(s);
  std::vector<GemvSpec> specs = {chosen};
  const bool gated = sol::isGated(s.epilogue);
  for (int rowsPerWarp : {1, 2, 4, 8, 16})
    for (int warpsK : {1, 2, 4, 8}) {
      GemvSpec spec = chosen;
      spec.rowsPerWarp = rowsPerWarp;
      spec.warpsK = warpsK;
      if ((rowsPerWarp != chosen.rowsPerWarp || warpsK != chosen.warpsK) &&
          s.k / 8 / warpsK >= 32 && !(gated && rowsPerWarp == 1))
        specs.push_back(spec);
    }
  return specs;
}

/// linear_skinny's configurations for `rows` rows of a sweep case under the
/// plan's norm and epilogue: one or two tiles a warp, K over 8, 4, 2 or 1
/// warps, the chosen one first.
std::vector<SkinnySpec> skinnyNormSweepSpecs(const SkinnyCase &s, int rows) {
  const SkinnySpec chosen = skinnySpecFor(s, rows);
  std::vector<SkinnySpec> specs = {chosen};
  for (int tiles : {1, 2})
    for (int warpsK : {8, 4, 2, 1}) {
      SkinnySpec spec = chosen;
      spec.tiles = tiles;
      spec.warpsK = warpsK;
      if ((spec.tiles != chosen.tiles || spec.warpsK != chosen.warpsK) &&
          (s.k + 31) / 32 >= 2 * warpsK && spec.fits())
        specs.push_back(spec);
    }
  return specs;
}

constexpr int kSweepSkinnyRows = 8;

void checkGemvSweep(Checker &c) {
  if (timingOff(c, "gemv_sweep"))
    return;
  for (const SkinnyCase *sweepCase : gemvSweepCases()) {
    const SkinnyCase &s = *sweepCase;
    const int rows = kSweepSkinnyRows;
    const HostLinear p =
        makeProblem(c.rng, rows, s.n, s.k, s.bias, s.epilogue, s.norm);
    const std::vector<double> ref = p.expected(firstRows(rows));
    const RotatedWeights weights(c, p.w, true);
    const DeviceBuffer dX = c.upload(p.x);
    const DeviceBuffer dNorm =
        c.upload(s.norm ? p.normW : std::vector<Bf16>{0});
    const Bf16 *normArg = s.norm ? dNorm.as<const Bf16>() : nullptr;
    const int cols = outputColumns(s.epilogue, s.n);
    // One launch of `kernel` over `launchRows` rows, judged and timed.
    auto run = [&](const KernelInstance &instance, const LaunchDims &dims,
                   int launchRows, const std::string &name) {
      const cuda::Kernel &kernel = c.kernels.kernel(instance);
      allowSharedMemory(kernel, dims);
      DeviceBuffer dOut = outputBuffer(c, p, launchRows, s.output, cols);
      std::function<void(int)> launch = [&](int rotation) {
        launchSinglePass(c, kernel, dims, dOut, dX.as<const Bf16>(),
                         weights[rotation], nullptr, launchRows, s.n, normArg,
                         s.norm ? kEps : 0.0f);
      };
      launch(0);
      CheckRecord r =
          makeRecord(c, "gemv_sweep",
                     sol::cat(s.name, " ", s.n, "x", s.k, " T=", launchRows,
                              s.norm ? " +norm" : "", epilogueTag(s.epilogue),
                              " ", name, " (", dims.grid.x, " blocks)"),
                     instance);
      judgeOutput(c, r, dOut, p, launchRows, s.output, cols,
                  firstRows(launchRows),
                  std::span<const double>(ref).first(
                      static_cast<std::size_t>(launchRows) * cols));
      r.bytes = gemvBytes(p, launchRows, s.output);
      // Timing adds into the residual again at every launch: it stays
      // finite.
      c.finish(std::move(r), &launch);
    };
    std::vector<GemvSpec> gemvs = gemvSweepSpecs(s);
    gemvs.push_back(flippedGemv(s));
    for (const GemvSpec &spec : gemvs)
      run(spec.instance(), spec.dims(s.n), 1,
          sol::cat("gemv R", spec.rowsPerWarp, " WK", spec.warpsK,
                   spec.l2Prefetch ? " +L2" : "",
                   spec.instance() == chosenGemv(s).instance() ? " *" : ""));
    std::vector<SkinnySpec> skinnies = skinnyNormSweepSpecs(s, rows);
    skinnies.push_back(flippedSkinny(s, rows));
    for (const SkinnySpec &spec : skinnies)
      run(spec.instance(), spec.dims(s.n), rows,
          sol::cat("skinny ", skinnyTag(spec),
                   spec.instance() == skinnySpecFor(s, rows).instance() ? " *"
                                                                        : ""));
  }
}

// ---------------------------------------------------------------------------
// cublas_sweep

/// The bf16 linears of batched decode steps (cuBLASLt runs 9 to 128 rows):
/// Llama-3.2-1B's and Llama-3.1-8B's, o and down accumulating into y as the
/// plans' residual adds do.
struct CublasSweepShape {
  const char *name;
  int n, k;
  bool accumulate;
};
const CublasSweepShape kCublasSweepShapes[] = {
    {"qkv", 3072, 2048, false},         {"o", 2048, 2048, true},
    {"gate_up", 16384, 2048, false},    {"down", 2048, 8192, true},
    {"qkv 8B", 6144, 4096, false},      {"o 8B", 4096, 4096, true},
    {"gate_up 8B", 28672, 4096, false}, {"down 8B", 4096, 14336, true},
};
constexpr int kCublasSweepRows[] = {16, 32, 64, 128};

/// Every algorithm cuBLASLt's heuristic offers for each shape and row
/// count, each checked against the first (the one the executor runs) and
/// timed: how much a choice by measurement would gain.
void checkCublasSweep(Checker &c) {
  if (timingOff(c, "cublas_sweep"))
    return;
  std::string why;
  const std::unique_ptr<cuda::CublasLt> cublas = cuda::CublasLt::load(why);
  if (!cublas) {
    std::printf("  cublas_sweep: no cuBLASLt (%s)\n", why.c_str());
    return;
  }
  DeviceBuffer workspace(cuda::CublasLt::kWorkspaceBytes);
  constexpr int kMaxRows = 128;
  for (const CublasSweepShape &s : kCublasSweepShapes) {
    const RotatedWeights w(
        c, randomBf16(c.rng, static_cast<std::size_t>(s.n) * s.k, -1, 1), true);
    const DeviceBuffer x = c.upload(
        randomBf16(c.rng, static_cast<std::size_t>(kMaxRows) * s.k, -1, 1));
    for (int rows : kCublasSweepRows) {
      const std::size_t outBytes = static_cast<std::size_t>(rows) * s.n * 2;
      std::vector<float> base;
      const int count = cublas->chooseLinearAlgorithm(
          rows, s.n, s.k, s.accumulate, 0, workspace.size());
      for (int i = 0; i < count; ++i) {
        cublas->chooseLinearAlgorithm(rows, s.n, s.k, s.accumulate, i,
                                      workspace.size());
        // Accumulating reads y: it starts at zero for the check.
        DeviceBuffer y =
            s.accumulate ? DeviceBuffer(outBytes) : c.poisoned(outBytes);
        if (s.accumulate)
          y.fillBytes(0, c.stream);
        std::function<void(int)> launch = [&](int rotation) {
          cublas->linear(c.stream.handle(), y.address(), x.address(),
                         reinterpret_cast<CUdeviceptr>(w[rotation]), 0, rows,
                         s.n, s.k, s.accumulate, workspace.address(),
                         workspace.size());
        };
        launch(0);
        const std::vector<Bf16> out = c.download<Bf16>(y);
        const std::size_t unwritten = countPoison(out);
        std::vector<float> values = toFloat(out);
        CheckRecord r;
        r.family = "cublas_sweep";
        r.name = sol::cat(s.name, " ", s.n, "x", s.k, " T=", rows, " algo ", i,
                          i == 0 ? " (heuristic's first)" : "");
        r.kernel = "cublasLt";
        if (i == 0) {
          r.passed = unwritten == 0;
          base = values;
        } else {
          const std::vector<double> ref(base.begin(), base.end());
          judge(r, relativeL2(values, ref), 1e-2, unwritten);
          r.note += "vs algo 0; ";
        }
        r.bytes = static_cast<double>(s.n) * s.k * 2 +
                  static_cast<double>(rows) * s.k * 2 +
                  static_cast<double>(outBytes) * (s.accumulate ? 2 : 1);
        c.finish(std::move(r), &launch);
      }
    }
  }
}

} // namespace

std::vector<CheckFamily> skinnyChecks() {
  return {
      {"skinny",
       [](KernelLibrary &k) {
         for (const SkinnyCase &s : kSkinnyCases)
           for (int rows : s.rows)
             k.require(skinnySpecFor(s, rows).instance());
       },
       checkSkinny},
      {"skinny_speed",
       [](KernelLibrary &k) {
         for (const SpeedShape &s : kSpeedShapes)
           for (int rows : kSpeedRows) {
             k.require(chosenSkinny(s, rows).instance());
             if (rows <= GemvSpec::kMaxRows)
               k.require(GemvSpec::choose(s.n, s.k, rows, s.output, false)
                             .instance());
           }
       },
       checkSkinnySpeed},
      {"skinny_sweep",
       [](KernelLibrary &k) {
         for (const SpeedShape &s : kSpeedShapes)
           for (int rows : {8, 16})
             for (const SkinnySpec &spec : sweepSpecs(s, rows))
               k.require(spec.instance());
       },
       checkSkinnySweep},
      {"gemv_sweep",
       [](KernelLibrary &k) {
         for (const SkinnyCase *s : gemvSweepCases()) {
           for (const GemvSpec &spec : gemvSweepSpecs(*s))
             k.require(spec.instance());
           for (const SkinnySpec &spec :
                skinnyNormSweepSpecs(*s, kSweepSkinnyRows))
             k.require(spec.instance());
           k.require(flippedGemv(*s).instance());
           k.require(flippedSkinny(*s, kSweepSkinnyRows).instance());
         }
       },
       checkGemvSweep},
      {"cublas_sweep", [](KernelLibrary &) {}, checkCublasSweep},
  };
}

} // namespace sol::check

//===- CudaCalibrationEvaluator.cpp - AWQ's evaluation on the GPU ---------===//
#include "passes/CudaCalibrationEvaluator.h"

#include "passes/TensorEvaluator.h"

#include "codegen/kernels/LaunchArgs.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "codegen/nvrtc/NvrtcCompiler.h"
#include "ir/RopeTable.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/DeviceBuffer.h"
#include "runtime/cuda/Module.h"
#include "runtime/cuda/Stream.h"
#include "runtime/support/Error.h"
#include "runtime/support/Quantize.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <optional>
#include <set>

using namespace mlir;

namespace sol {

namespace {

namespace k = kernels;
using cuda::DeviceBuffer;
using cuda::LaunchDims;

constexpr size_t kBf16Bytes = 2;

/// `bytes` of device memory for a rows x cols `what` value; out of memory
/// says what to do.
DeviceBuffer allocate(size_t bytes, int64_t rows, int64_t cols,
                      const char *what) {
  try {
    return DeviceBuffer(bytes);
  } catch (const Error &e) {
    fail(e.what(), ", for a ", rows, " x ", cols, " ", what,
         " value of AWQ calibration on the GPU: calibrate on fewer tokens "
         "(--calib-tokens) or on the CPU (--calib-device cpu)");
  }
}

/// A float32 activation or weight on the device, row-major.
struct DeviceTensor {
  int64_t rows = 0, cols = 0;
  DeviceBuffer buffer;

  static DeviceTensor make(int64_t rows, int64_t cols) {
    DeviceTensor t;
    t.rows = rows;
    t.cols = cols;
    t.buffer = allocate(static_cast<size_t>(std::max<int64_t>(rows * cols, 1)) *
                            sizeof(float),
                        rows, cols, "float32");
    return t;
  }
  float *data() const { return buffer.as<float>(); }
  unsigned long long count() const {
    return static_cast<unsigned long long>(rows * cols);
  }
};

/// Every calib_* kernel: kCalibThreads threads, its calib*Blocks() blocks.
LaunchDims dims(unsigned blocks) {
  LaunchDims d;
  d.grid.x = blocks;
  d.block.x = k::kCalibThreads;
  return d;
}

/// The kernels of Calibration.cuh, looked up once.
struct CalibrationKernels {
  std::optional<cuda::Module> module;
  std::optional<cuda::Kernel> embedding, rmsNorm, rope, attention, elementwise,
      sigmoidGate, columnAbsSum, squaredError, awqCandidate, gram, clipSearch,
      toBf16, gatherRows, scatterAddRows;
  /// calib_attention_tc<dim> for each head dim of the model it supports.
  std::map<int, cuda::Kernel> attentionTc;
};

std::string attentionTcName(int dim) {
  return cat("sol::kernels::calib_attention_tc<", dim, ">");
}

const char *const kKernelNames[] = {"sol::kernels::calib_embedding",
                                    "sol::kernels::calib_rms_norm",
                                    "sol::kernels::calib_rope",
                                    "sol::kernels::calib_attention",
                                    "sol::kernels::calib_elementwise",
                                    "sol::kernels::calib_sigmoid_gate",
                                    "sol::kernels::calib_column_abs_sum",
                                    "sol::kernels::calib_squared_error",
                                    "sol::kernels::calib_awq_candidate",
                                    "sol::kernels::calib_gram",
                                    "sol::kernels::calib_clip_search",
                                    "sol::kernels::calib_to_bf16",
                                    "sol::kernels::calib_gather_rows",
                                    "sol::kernels::calib_scatter_add_rows"};

CalibrationKernels compileKernels(const cuda::CudaContext &context,
                                  const std::set<int> &attentionTcDims) {
  nvrtc::NvrtcOptions options;
  options.gpuArch = context.smArch();
  const nvrtc::NvrtcCompiler compiler(options);
  nvrtc::KernelSource source;
  source.name = "calibration.cu";
  source.code = "#include \"Calibration.cuh\"\n";
  for (const nvrtc::HeaderFile &h : nvrtc::embeddedKernelHeaders())
    source.headers.push_back(h);
  source.nameExpressions.assign(std::begin(kKernelNames),
                                std::end(kKernelNames));
  for (int dim : attentionTcDims)
    source.nameExpressions.push_back(attentionTcName(dim));
  const nvrtc::CompiledKernels compiled = compiler.compile(source);
  CalibrationKernels out;
  out.module.emplace(compiled.cubin, compiled.ptx, "calibration kernels");
  auto get = [&](const char *name) {
    return out.module->kernel(compiled.loweredNames.at(name));
  };
  std::optional<cuda::Kernel> *slots[] = {
      &out.embedding,    &out.rmsNorm,       &out.rope,
      &out.attention,    &out.elementwise,   &out.sigmoidGate,
      &out.columnAbsSum, &out.squaredError,  &out.awqCandidate,
      &out.gram,         &out.clipSearch,    &out.toBf16,
      &out.gatherRows,   &out.scatterAddRows};
  for (size_t i = 0; i < std::size(kKernelNames); ++i)
    slots[i]->emplace(get(kKernelNames[i]));
  for (int dim : attentionTcDims) {
    cuda::Kernel kernel = get(attentionTcName(dim).c_str());
    kernel.setMaxDynamicSharedMemory(
        static_cast<int>(k::calibAttentionTcSharedBytes(dim)));
    out.attentionTc.emplace(dim, kernel);
  }
  return out;
}

/// SOL_CALIB_PROFILE=1: where calibration's time goes, each timed step
/// waited for on the GPU (so the whole runs a little slower), printed to
/// stderr when the evaluator ends. Steps nest: an op's time includes the
/// upload of the weights it reads first.
class CalibrationProfile {
public:
  CalibrationProfile() {
    const char *v = std::getenv("SOL_CALIB_PROFILE");
    on_ = v && *v && std::string(v) != "0";
  }
  ~CalibrationProfile() {
    if (!on_)
      return;
    std::fprintf(stderr, "solc: GPU calibration profile (SOL_CALIB_PROFILE; "
                         "steps nest):\n");
    for (const auto &[what, t] : steps_)
      std::fprintf(stderr, "  %-34s %9.2f s %8lld calls\n", what.c_str(),
                   t.seconds, t.calls);
    std::fprintf(stderr, "  %-34s %9.2f s\n", "evaluator in all",
                 secondsSince(start_));
  }

  /// Times a step to its end on `stream` (nothing unless profiling).
  class Step {
  public:
    Step(CalibrationProfile &p, const cuda::Stream &stream, std::string what)
        : profile_(p.on_ ? &p : nullptr), stream_(stream),
          what_(std::move(what)), start_(Clock::now()) {}
    ~Step() {
      if (!profile_)
        return;
      stream_.synchronize();
      Total &t = profile_->steps_[what_];
      t.seconds += secondsSince(start_);
      ++t.calls;
    }
    Step(const Step &) = delete;
    Step &operator=(const Step &) = delete;

  private:
    CalibrationProfile *profile_;
    const cuda::Stream &stream_;
    std::string what_;
    std::chrono::steady_clock::time_point start_;
  };

private:
  using Clock = std::chrono::steady_clock;
  static double secondsSince(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  struct Total {
    double seconds = 0;
    long long calls = 0;
  };
  bool on_ = false;
  Clock::time_point start_ = Clock::now();
  std::map<std::string, Total> steps_;
};

class CudaCalibrationEvaluator final : public CalibrationEvaluator {
public:
  CudaCalibrationEvaluator(func::FuncOp fn, const WeightStore &store,
                           std::span<const std::vector<int32_t>> sequences,
                           std::unique_ptr<cuda::CublasLt> blas,
                           std::unique_ptr<cuda::CudaContext> context)
      : host_(fn, store, sequences), context_(std::move(context)),
        blas_(std::move(blas)) {
    // Tensor-core attention for each head dim it takes.
    std::set<int> attentionTcDims;
    fn.walk([&](AttentionOp attention) {
      const int dim = static_cast<int>(attention.getHeadDim());
      if (k::calibAttentionTcSupports(dim))
        attentionTcDims.insert(dim);
    });
    kernels_ = compileKernels(*context_, attentionTcDims);
    workspace_ = DeviceBuffer(cuda::CublasLt::kWorkspaceBytes);
    // The function's index arguments and each token's sequence start.
    for (BlockArgument arg : fn.getArguments()) {
      auto name =
          fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "sol.name");
      if (!name ||
          (name.getValue() != "tokens" && name.getValue() != "positions" &&
           name.getValue() != "token_seq"))
        continue;
      indexArgs_[arg] = upload(host_.indices(arg));
    }
    seqStarts_ = upload(host_.sequenceStartOfTokens());
  }

  std::string device() const override { return context_->name(); }
  int64_t tokens() const override { return host_.tokens(); }

  LogicalResult runUntil(Operation *op) override {
    prefetchWeights();
    // Values and weights whose last user an op was go with it.
    return runOpsUntil(
        host_.ops(), next_, op, host_,
        [&](Operation *current) -> LogicalResult {
          FailureOr<DeviceTensor> result =
              compute(current, Locals(), Overrides());
          if (failed(result))
            return failure();
          values_[current->getResult(0)] = std::move(*result);
          return success();
        },
        [&](Value v) {
          values_.erase(v);
          weights_.erase(v);
          bf16Weights_.erase(v);
          prefetched_.erase(v);
        });
  }

  std::vector<double> columnAbsSums(Value v) override {
    return columnAbsSums(lookup(v, Locals()));
  }

  std::vector<double> columnAbsSums(const DeviceTensor &x) {
    CalibrationProfile::Step step(profile_, stream_, "column |x| sums");
    DeviceBuffer sums(static_cast<size_t>(x.cols) * sizeof(double));
    sums.fillBytes(0, stream_);
    k::CalibColumnAbsSumArgs args;
    args.sums = sums.as<double>();
    args.x = x.data();
    args.rows = static_cast<int>(x.rows);
    args.cols = static_cast<int>(x.cols);
    kernels_.columnAbsSum->launch(
        dims(k::calibColumnAbsSumBlocks(args.rows, args.cols)), stream_, args);
    std::vector<double> out(static_cast<size_t>(x.cols));
    sums.download(std::span(out), stream_);
    stream_.synchronize();
    return out;
  }

  std::vector<float> sampleRows(Value v, int64_t rows) override {
    CalibrationProfile::Step step(profile_, stream_, "clip rows back");
    const DeviceTensor &x = lookup(v, Locals());
    return downloadRows(x, rows, [&](int64_t r) { return r * x.rows / rows; });
  }

  /// Rows rowOf(0), ..., rowOf(rows - 1) of `x`, row-major on the host.
  template <typename RowOf>
  std::vector<float> downloadRows(const DeviceTensor &x, int64_t rows,
                                  RowOf rowOf) {
    // Gathered on the device (asynchronous copies), then one copy back:
    // 2,048 copies into pageable memory would each wait for the GPU.
    DeviceTensor rowsOut = DeviceTensor::make(rows, x.cols);
    const size_t rowBytes = static_cast<size_t>(x.cols) * sizeof(float);
    for (int64_t r = 0; r < rows; ++r)
      rowsOut.buffer.copyFromDevice(x.buffer, rowBytes, stream_,
                                    static_cast<size_t>(r) * rowBytes,
                                    static_cast<size_t>(rowOf(r)) * rowBytes);
    std::vector<float> out(static_cast<size_t>(rows * x.cols));
    rowsOut.buffer.download(std::span(out), stream_);
    stream_.synchronize();
    return out;
  }

  LogicalResult setReference(ArrayRef<Operation *> ops, ArrayRef<Value> outputs,
                             ArrayRef<Value> weights,
                             ArrayRef<std::vector<float>> values) override {
    CalibrationProfile::Step step(profile_, stream_, "reference regions");
    region_.assign(ops.begin(), ops.end());
    outputs_.assign(outputs.begin(), outputs.end());
    candidates_.clear();
    for (auto [w, v] : llvm::zip(weights, values))
      uploadWeight(w, v);
    FailureOr<std::vector<DeviceTensor>> reference = evaluate(Overrides());
    if (failed(reference))
      return failure();
    reference_ = std::move(*reference);
    return success();
  }

  FailureOr<double> candidateError(ArrayRef<Value> weights,
                                   ArrayRef<std::vector<float>>,
                                   std::span<const float> s,
                                   int64_t g) override {
    CalibrationProfile::Step step(profile_, stream_, "candidate regions");
    const DeviceBuffer scales = upload(s);
    Overrides overrides;
    for (Value w : weights) {
      DeviceBuffer &trial = candidates_[w];
      awqCandidate(trial, deviceWeight(w), scales, s.size(), g);
      overrides[w] = trial.address();
    }
    FailureOr<std::vector<DeviceTensor>> out = evaluate(overrides);
    if (failed(out))
      return failure();
    return squaredError(*out, reference_);
  }

  FailureOr<int64_t> selectExpert(MoeOp moe, int64_t e,
                                  std::span<const float> gate,
                                  std::span<const float> up,
                                  std::span<const float> down) override {
    CalibrationProfile::Step step(profile_, stream_, "expert searches");
    if (failed(checkCalibrationMixture(moe)))
      return failure();
    const DeviceTensor &x = lookup(moe.getInput(), Locals());
    if (routedMoe_ != moe.getOperation()) {
      routing_ = route(moe, x);
      routedMoe_ = moe.getOperation();
    }
    const auto &routed = routing_[static_cast<size_t>(e)];
    const int64_t n = static_cast<int64_t>(routed.size());
    const int64_t hidden = x.cols, width = moe.getExpertWidth();
    expertTokens_.clear();
    for (auto [t, w] : routed)
      expertTokens_.push_back(static_cast<int32_t>(t));
    if (n == 0)
      return n;
    const DeviceBuffer rows = upload(expertTokens_);
    DeviceBuffer xe = allocate(static_cast<size_t>(n * hidden) * kBf16Bytes, n,
                               hidden, "bf16");
    gatherRows(xe.address(), x, rows.as<int>(), n);
    DeviceTensor staging = DeviceTensor::make(width, hidden);
    auto toDevice = [&](std::span<const float> w, int64_t r, int64_t c) {
      DeviceBuffer b =
          allocate(static_cast<size_t>(r * c) * kBf16Bytes, r, c, "bf16");
      staging.rows = r;
      staging.cols = c;
      staging.buffer.upload(w, stream_);
      convertToBf16(b.address(), staging);
      return b;
    };
    const DeviceBuffer gateB = toDevice(gate, width, hidden);
    const DeviceBuffer upB = toDevice(up, width, hidden);
    expertDown_ = DeviceTensor::make(hidden, width);
    expertDown_.buffer.upload(down, stream_);
    DeviceBuffer downB =
        allocate(static_cast<size_t>(hidden * width) * kBf16Bytes, hidden,
                 width, "bf16");
    convertToBf16(downB.address(), expertDown_);
    expertHidden_ = DeviceTensor::make(n, width);
    DeviceTensor u = DeviceTensor::make(n, width);
    gemm(expertHidden_, xe.address(), gateB.address(), width, hidden);
    gemm(u, xe.address(), upB.address(), width, hidden);
    elementwise(expertHidden_, expertHidden_.data(), u.data(),
                moe.getActivation() == GateActivation::GeluTanh
                    ? k::kCalibGegelu
                    : k::kCalibSwiglu);
    expertHiddenBf16_ =
        allocate(static_cast<size_t>(n * width) * kBf16Bytes, n, width, "bf16");
    convertToBf16(expertHiddenBf16_.address(), expertHidden_);
    expertReference_ = DeviceTensor::make(n, hidden);
    gemm(expertReference_, expertHiddenBf16_.address(), downB.address(), hidden,
         width);
    // The scratch buffers go when this returns: the GPU must be done.
    stream_.synchronize();
    return n;
  }

  std::vector<double> expertHiddenAbsSums() override {
    return columnAbsSums(expertHidden_);
  }

  FailureOr<double> expertCandidateError(std::span<const float> s,
                                         int64_t g) override {
    CalibrationProfile::Step step(profile_, stream_, "expert searches");
    const DeviceBuffer scales = upload(s);
    awqCandidate(expertCandidate_, expertDown_, scales, s.size(), g);
    DeviceTensor y =
        DeviceTensor::make(expertHidden_.rows, expertReference_.cols);
    gemm(y, expertHiddenBf16_.address(), expertCandidate_.address(),
         expertDown_.rows, expertDown_.cols);
    return squaredError(std::span(&y, 1), std::span(&expertReference_, 1));
  }

  std::vector<float> sampleExpertRows(bool hidden, int64_t rows) override {
    CalibrationProfile::Step step(profile_, stream_, "clip rows back");
    const int64_t n = static_cast<int64_t>(expertTokens_.size());
    if (hidden)
      return downloadRows(expertHidden_, rows,
                          [&](int64_t r) { return r * n / rows; });
    const DeviceTensor &x =
        lookup(cast<MoeOp>(routedMoe_).getInput(), Locals());
    return downloadRows(x, rows, [&](int64_t r) {
      return static_cast<int64_t>(
          expertTokens_[static_cast<size_t>(r * n / rows)]);
    });
  }

  std::vector<float> weight(Value w) const override {
    CalibrationProfile::Step step(profile_, stream_, "weights read (host)");
    if (auto it = prefetched_.find(w); it != prefetched_.end()) {
      std::future<std::vector<float>> read = std::move(it->second);
      prefetched_.erase(it);
      return read.get(); // rethrows the read's error
    }
    return host_.weight(w);
  }
  std::vector<float> expertWeight(Value stacked, int64_t e,
                                  int64_t experts) const override {
    CalibrationProfile::Step step(profile_, stream_, "weights read (host)");
    return host_.expertWeight(stacked, e, experts);
  }

  std::vector<float> clipRatios(std::span<const float> w, int64_t n, int64_t k,
                                int64_t groupSize, std::span<const float> x,
                                int64_t xRows, int gridPoints) override {
    CalibrationProfile::Step step(profile_, stream_, "clip search");
    if (k % groupSize != 0 || xRows <= 0 || gridPoints < 1)
      fail("internal error: the int4 clip search of a ", n, " x ", k,
           " weight in groups of ", groupSize, " over ", xRows, " rows");
    // Groups past the kernel's Gram tiles search on the host.
    if (groupSize > k::kCalibClipSearchMaxGroup)
      return quant::searchInt4Clip(w, n, k, groupSize, x, xRows, gridPoints);
    const int64_t groups = k / groupSize;
    DeviceBuffer wd(w.size_bytes()), xd(x.size_bytes()),
        gram(static_cast<size_t>(groups * groupSize * groupSize) *
             sizeof(float)),
        ratios(static_cast<size_t>(n * groups) * sizeof(float));
    wd.upload(w, stream_);
    xd.upload(x, stream_);
    k::CalibGramArgs g;
    g.gram = gram.as<float>();
    g.x = xd.as<float>();
    g.rows = static_cast<int>(xRows);
    g.cols = static_cast<int>(k);
    g.group = static_cast<int>(groupSize);
    kernels_.gram->launch(dims(k::calibGramBlocks(g.cols, g.group)), stream_,
                          g);
    k::CalibClipSearchArgs c;
    c.ratios = ratios.as<float>();
    c.weight = wd.as<float>();
    c.gram = gram.as<float>();
    c.rows = static_cast<int>(n);
    c.cols = static_cast<int>(k);
    c.group = static_cast<int>(groupSize);
    c.gridPoints = gridPoints;
    // quant::searchInt4Clip's candidates: ratios down to 1 - maxShrink (0.5).
    c.candidates = std::max(1, static_cast<int>(gridPoints * 0.5f));
    kernels_.clipSearch->launch(
        dims(k::calibClipSearchBlocks(c.rows, c.cols, c.group)), stream_, c);
    std::vector<float> out(static_cast<size_t>(n * groups));
    ratios.download(std::span(out), stream_);
    stream_.synchronize();
    return out;
  }

private:
  using Locals = llvm::DenseMap<Value, DeviceTensor>;
  /// The bf16 weights that a candidate replaces, by the weight replaced.
  using Overrides = llvm::DenseMap<Value, CUdeviceptr>;

  /// `trial` (resized to fit) = bf16(Q(W · s) / s) of the float [rows, k]
  /// weight `w`, s the k `scales` on the device: AWQ's candidate.
  void awqCandidate(DeviceBuffer &trial, const DeviceTensor &w,
                    const DeviceBuffer &scales, size_t k, int64_t g) {
    if (trial.size() != w.count() * kBf16Bytes)
      trial = allocate(w.count() * kBf16Bytes, w.rows, w.cols, "bf16");
    k::CalibAwqCandidateArgs args;
    args.out = trial.address();
    args.weight = w.data();
    args.scales = scales.as<float>();
    args.rows = static_cast<int>(w.rows);
    args.cols = static_cast<int>(k);
    args.group = static_cast<int>(g);
    // A weight that stays bf16 (k not a multiple of g) loses nothing.
    args.quantize = static_cast<int64_t>(k) % g == 0;
    kernels_.awqCandidate->launch(
        dims(k::calibAwqCandidateBlocks(args.rows, args.cols, args.group)),
        stream_, args);
  }

  /// out (bf16, [count, x.cols]) = rows `rows[0..count)` of x.
  void gatherRows(CUdeviceptr out, const DeviceTensor &x, const int *rows,
                  int64_t count) {
    k::CalibGatherRowsArgs gather;
    gather.out = out;
    gather.x = x.data();
    gather.rows = rows;
    gather.count = static_cast<int>(count);
    gather.cols = static_cast<int>(x.cols);
    kernels_.gatherRows->launch(dims(k::calibRowBlocks(gather.count)), stream_,
                                gather);
  }

  template <typename T> DeviceBuffer upload(std::span<const T> values) {
    DeviceBuffer b(std::max<size_t>(values.size_bytes(), 4));
    b.upload(values, stream_);
    return b;
  }
  template <typename T> DeviceBuffer upload(const std::vector<T> &values) {
    return upload(std::span<const T>(values));
  }

  const DeviceTensor &lookup(Value v, const Locals &local) const {
    if (auto it = local.find(v); it != local.end())
      return it->second;
    auto it = values_.find(v);
    if (it == values_.end())
      fail("internal error: GPU calibration reads a value that was not "
           "evaluated or is no longer held");
    return it->second;
  }

  const int *indices(Value v) const {
    auto it = indexArgs_.find(v);
    if (it == indexArgs_.end())
      fail("internal error: GPU calibration evaluates an index operand that "
           "is not the function's tokens, positions or token_seq");
    return it->second.as<int>();
  }

  /// A float weight on the device, uploaded on first use and dropped with
  /// the last op that reads it.
  const DeviceTensor &deviceWeight(Value w) {
    auto it = weights_.find(w);
    if (it != weights_.end())
      return it->second;
    return uploadWeight(w, weight(w));
  }

  /// Starts reading, on another thread, the float weights of the next
  /// kPrefetchLinears linears in program order that are not read yet: the
  /// scale and clipping searches and the linears ask for them on the host,
  /// and those reads (gigabytes a layer of an 8B model) then overlap the
  /// GPU's work. The reads run one after another, in order.
  void prefetchWeights() {
    constexpr int kPrefetchLinears = 8; // a layer's and the next one's first
    std::vector<std::pair<Value, std::promise<std::vector<float>>>> batch;
    int seen = 0;
    for (size_t i = next_; i < host_.ops().size() && seen < kPrefetchLinears;
         ++i) {
      auto linear = dyn_cast<LinearOp>(host_.ops()[i]);
      if (!linear)
        continue;
      ++seen;
      Value w = linear.getWeight();
      if (weights_.count(w) || prefetched_.count(w) || prefetchedOnce_.count(w))
        continue;
      prefetchedOnce_.insert(w);
      std::promise<std::vector<float>> promise;
      prefetched_[w] = promise.get_future();
      batch.emplace_back(w, std::move(promise));
    }
    if (batch.empty())
      return;
    std::shared_future<void> previous = lastPrefetch_;
    lastPrefetch_ =
        std::async(std::launch::async, [this, previous,
                                        batch = std::move(batch)]() mutable {
          if (previous.valid())
            previous.wait();
          for (auto &[w, promise] : batch) {
            try {
              promise.set_value(host_.weight(w));
            } catch (...) {
              promise.set_exception(std::current_exception());
            }
          }
        }).share();
  }

  /// A weight rounded to bf16 on the device (a linear's GEMM operand), made
  /// on first use and dropped with the float copy.
  const DeviceBuffer &bf16Weight(Value w) {
    auto it = bf16Weights_.find(w);
    if (it != bf16Weights_.end())
      return it->second;
    const DeviceTensor &f = deviceWeight(w);
    DeviceBuffer b = allocate(f.count() * kBf16Bytes, f.rows, f.cols, "bf16");
    convertToBf16(b.address(), f);
    return bf16Weights_[w] = std::move(b);
  }

  /// `x` rounded to bf16 in a scratch buffer that the next call reuses (the
  /// stream orders the GEMM that reads it before the next conversion).
  CUdeviceptr toBf16(const DeviceTensor &x) {
    const size_t bytes = x.count() * kBf16Bytes;
    if (bf16Scratch_.size() < bytes) {
      stream_.synchronize(); // a GEMM may still read the old buffer
      bf16Scratch_ = DeviceBuffer();
      bf16Scratch_ = allocate(bytes, x.rows, x.cols, "bf16");
    }
    convertToBf16(bf16Scratch_.address(), x);
    return bf16Scratch_.address();
  }

  void convertToBf16(CUdeviceptr out, const DeviceTensor &x) {
    k::CalibToBf16Args args;
    args.out = out;
    args.in = x.data();
    args.count = x.count();
    kernels_.toBf16->launch(dims(k::calibElementwiseBlocks(args.count)),
                            stream_, args);
  }

  /// Uploads `values`, the float values of weight `w`, unless it is there.
  const DeviceTensor &uploadWeight(Value w, std::span<const float> values) {
    auto it = weights_.find(w);
    if (it != weights_.end())
      return it->second;
    CalibrationProfile::Step step(profile_, stream_, "weights uploaded");
    auto type = cast<ShapedType>(w.getType());
    const int64_t cols = type.getRank() ? type.getShape().back() : 1;
    DeviceTensor t =
        DeviceTensor::make(static_cast<int64_t>(values.size()) / cols, cols);
    t.buffer.upload(values, stream_);
    // The caller's `values` may go away once this returns.
    stream_.synchronize();
    return weights_[w] = std::move(t);
  }

  /// Evaluates the region with `overrides` and returns its outputs.
  FailureOr<std::vector<DeviceTensor>> evaluate(const Overrides &overrides) {
    inRegion_ = true;
    auto out = evaluateOps<DeviceTensor>(
        region_, outputs_, [&](Operation *op, const Locals &local) {
          return compute(op, local, overrides);
        });
    inRegion_ = false;
    return out;
  }

  double squaredError(std::span<const DeviceTensor> a,
                      std::span<const DeviceTensor> b) {
    DeviceBuffer sum(sizeof(double));
    sum.fillBytes(0, stream_);
    unsigned long long count = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      k::CalibSquaredErrorArgs args;
      args.sum = sum.as<double>();
      args.a = a[i].data();
      args.b = b[i].data();
      args.count = a[i].count();
      kernels_.squaredError->launch(
          dims(k::calibSquaredErrorBlocks(args.count)), stream_, args);
      count += args.count;
    }
    double total = 0.0;
    sum.download(std::span(&total, 1), stream_);
    stream_.synchronize();
    return count ? total / static_cast<double>(count) : 0.0;
  }

  void elementwise(const DeviceTensor &out, const float *a, const float *b,
                   int op) {
    k::CalibElementwiseArgs args;
    args.out = out.data();
    args.a = a;
    args.b = b;
    args.count = out.count();
    args.cols = static_cast<int>(out.cols);
    args.op = op;
    kernels_.elementwise->launch(dims(k::calibElementwiseBlocks(args.count)),
                                 stream_, args);
  }

  /// The cos and sin tables of a rope op for the calibration positions.
  const std::pair<DeviceBuffer, DeviceBuffer> &ropeTables(RopeOp rope) {
    auto it = ropeTables_.find(rope);
    if (it != ropeTables_.end())
      return it->second;
    const int64_t dim = rope.getHeadDim(), half = dim / 2;
    const RopeTable table =
        RopeTable::compute(ropeParameters(rope.getRope()), dim);
    std::span<const int32_t> pos = host_.indices(rope.getPositions());
    const int64_t positions =
        pos.empty() ? 1 : *std::max_element(pos.begin(), pos.end()) + 1;
    std::vector<float> c(static_cast<size_t>(positions * half)), s(c.size());
    // As the CPU evaluator (and transformers): the angle rounded to float,
    // cos/sin of it in double.
    for (int64_t p = 0; p < positions; ++p) {
      const std::vector<float> &freq = table.invFreqAt(p);
      for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(p) * freq[i];
        c[p * half + i] =
            static_cast<float>(std::cos(static_cast<double>(angle))) *
            table.scalingFor(freq[i]);
        s[p * half + i] =
            static_cast<float>(std::sin(static_cast<double>(angle))) *
            table.scalingFor(freq[i]);
      }
    }
    auto &slot = ropeTables_[rope];
    slot = {upload(c), upload(s)};
    stream_.synchronize();
    return slot;
  }

  /// Expert e's gate, up and down weights as float32, read on the host.
  using ExpertWeights = std::array<std::vector<float>, 3>;
  std::future<ExpertWeights> readExpert(MoeOp moe, int64_t e) const {
    return std::async(std::launch::async, [this, moe, e]() mutable {
      const int64_t experts = moe.getNumExperts();
      return ExpertWeights{host_.expertWeight(moe.getGate(), e, experts),
                           host_.expertWeight(moe.getUp(), e, experts),
                           host_.expertWeight(moe.getDown(), e, experts)};
    });
  }

  /// Where a mixture sends each row of `x`: the router's logits on the
  /// tensor cores, routed on the host as the CPU routes them (routeMixture).
  MixtureRouting route(MoeOp moe, const DeviceTensor &x) {
    const int64_t rows = x.rows, experts = moe.getNumExperts();
    DeviceTensor logits = DeviceTensor::make(rows, experts);
    gemm(logits, toBf16(x), bf16Weight(moe.getRouter()).address(), experts,
         x.cols);
    std::vector<float> hostLogits(static_cast<size_t>(rows * experts));
    logits.buffer.download(std::span(hostLogits), stream_);
    stream_.synchronize();
    return routeMixture(moe, hostLogits, rows);
  }

  /// A sol.moe: routed (route), then each expert in index order over its
  /// tokens: their rows gathered in bf16, the gate and up GEMMs, the gate's
  /// activation, down, and the rows added to the output times their routing
  /// weights. Outside a region the next expert's weights are read on another
  /// thread while the GPU runs one, and experts no token reaches are not
  /// read; in a region (AWQ's searches evaluate it once a candidate) the
  /// stacked weights stay on the device, gate and up from `overrides` where
  /// a candidate replaces them.
  FailureOr<DeviceTensor> mixture(MoeOp moe, const DeviceTensor &x,
                                  const Overrides &overrides) {
    if (failed(checkCalibrationMixture(moe)))
      return failure();
    const int64_t rows = x.rows, hidden = x.cols;
    const int64_t experts = moe.getNumExperts(), width = moe.getExpertWidth();
    const MixtureRouting routed = route(moe, x);

    // Every expert's tokens and weights, experts one after another.
    std::vector<int32_t> slotRows;
    std::vector<float> slotWeights;
    std::vector<size_t> first;
    int64_t most = 0;
    for (const auto &tokens : routed) {
      first.push_back(slotRows.size());
      for (auto [t, w] : tokens) {
        slotRows.push_back(static_cast<int32_t>(t));
        slotWeights.push_back(w);
      }
      most = std::max<int64_t>(most, static_cast<int64_t>(tokens.size()));
    }
    DeviceTensor out = DeviceTensor::make(rows, hidden);
    out.buffer.fillBytes(0, stream_);
    if (most == 0)
      return out;
    const DeviceBuffer rowsOnDevice = upload(slotRows);
    const DeviceBuffer weightsOnDevice = upload(slotWeights);
    DeviceBuffer xe = allocate(static_cast<size_t>(most * hidden) * kBf16Bytes,
                               most, hidden, "bf16");
    DeviceTensor g = DeviceTensor::make(most, width);
    DeviceTensor u = DeviceTensor::make(most, width);
    DeviceTensor y = DeviceTensor::make(most, hidden);
    const size_t expertBytes = static_cast<size_t>(width * hidden) * kBf16Bytes;
    // Gate, up and down of expert e: stacked on the device in a region,
    // read from the host (float staging, then bf16 GEMM operands) outside.
    std::array<CUdeviceptr, 3> stacked{};
    DeviceTensor staging;
    std::array<DeviceBuffer, 3> expertBf16;
    if (inRegion_) {
      auto onDevice = [&](Value w) {
        auto it = overrides.find(w);
        return it != overrides.end() ? it->second : bf16Weight(w).address();
      };
      stacked = {onDevice(moe.getGate()), onDevice(moe.getUp()),
                 onDevice(moe.getDown())};
    } else {
      staging = DeviceTensor::make(width, hidden);
      for (DeviceBuffer &b : expertBf16)
        b = allocate(expertBytes, width, hidden, "bf16");
    }

    auto nextUsed = [&](int64_t from) {
      while (from < experts && routed[static_cast<size_t>(from)].empty())
        ++from;
      return from;
    };
    int64_t e = nextUsed(0);
    std::future<ExpertWeights> reading;
    if (!inRegion_)
      reading = readExpert(moe, e);
    while (e < experts) {
      CalibrationProfile::Step step(profile_, stream_, "mixture experts");
      const int64_t following = nextUsed(e + 1);
      std::array<CUdeviceptr, 3> w{};
      if (inRegion_) {
        for (size_t i = 0; i < w.size(); ++i)
          w[i] = stacked[i] + static_cast<size_t>(e) * expertBytes;
      } else {
        const ExpertWeights weights = reading.get();
        if (following < experts)
          reading = readExpert(moe, following);
        for (const std::vector<float> &v : weights)
          if (static_cast<int64_t>(v.size()) != width * hidden)
            fail("internal error: an expert's weight of ", v.size(),
                 " values in a mixture of ", width, " x ", hidden, " experts");
        for (size_t i = 0; i < weights.size(); ++i) {
          // Uploads from pageable memory return once the values are staged,
          // and queue behind the conversion that read the staging buffer.
          staging.buffer.upload(std::span(weights[i]), stream_);
          convertToBf16(expertBf16[i].address(), staging);
          w[i] = expertBf16[i].address();
        }
      }
      const int n = static_cast<int>(routed[static_cast<size_t>(e)].size());
      const int *slots = rowsOnDevice.as<int>() + first[static_cast<size_t>(e)];
      gatherRows(xe.address(), x, slots, n);
      g.rows = u.rows = y.rows = n;
      gemm(g, xe.address(), w[0], width, hidden);
      gemm(u, xe.address(), w[1], width, hidden);
      elementwise(g, g.data(), u.data(),
                  moe.getActivation() == GateActivation::GeluTanh
                      ? k::kCalibGegelu
                      : k::kCalibSwiglu);
      gemm(y, toBf16(g), w[2], hidden, width);
      k::CalibScatterAddRowsArgs scatter;
      scatter.out = out.data();
      scatter.y = y.data();
      scatter.rows = slots;
      scatter.weights =
          weightsOnDevice.as<float>() + first[static_cast<size_t>(e)];
      scatter.count = n;
      scatter.cols = static_cast<int>(hidden);
      kernels_.scatterAddRows->launch(dims(k::calibRowBlocks(n)), stream_,
                                      scatter);
      e = following;
    }
    // The scratch buffers go when this returns: the GPU must be done.
    stream_.synchronize();
    return out;
  }

  /// out = x · wᵀ over bf16 operands with float sums: x [out.rows, k] and w
  /// [n, k] device addresses, out [out.rows, n].
  void gemm(const DeviceTensor &out, CUdeviceptr x, CUdeviceptr w, int64_t n,
            int64_t k) {
    blas_->bf16LinearF32Out(stream_.handle(), out.buffer.address(), x, w,
                            static_cast<int>(out.rows), static_cast<int>(n),
                            static_cast<int>(k), workspace_.address(),
                            workspace_.size());
  }

  FailureOr<DeviceTensor> compute(Operation *op, const Locals &local,
                                  const Overrides &overrides) {
    CalibrationProfile::Step step(profile_, stream_,
                                  op->getName().getStringRef().str());
    auto in = [&](Value v) -> const DeviceTensor & { return lookup(v, local); };
    const int64_t T = tokens();

    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      const DeviceTensor &table = deviceWeight(embedding.getTable());
      std::span<const int32_t> ids = host_.indices(embedding.getIds());
      for (int32_t id : ids)
        if (id < 0 || id >= table.rows)
          fail("calibration token ", id, " is outside the model's ", table.rows,
               "-entry embedding (does the tokenizer belong to this model?)");
      DeviceTensor out = DeviceTensor::make(T, table.cols);
      k::CalibEmbeddingArgs args;
      args.out = out.data();
      args.table = table.data();
      args.ids = indices(embedding.getIds());
      args.tokens = static_cast<int>(T);
      args.width = static_cast<int>(table.cols);
      args.scale = 1.0f;
      if (std::optional<APFloat> scale = embedding.getScale())
        args.scale = scale->convertToFloat();
      kernels_.embedding->launch(dims(k::calibEmbeddingBlocks(args.tokens)),
                                 stream_, args);
      return out;
    }
    if (auto norm = dyn_cast<RmsNormOp>(op)) {
      const DeviceTensor &x = in(norm.getInput());
      const DeviceTensor &w = deviceWeight(norm.getWeight());
      DeviceTensor out = DeviceTensor::make(x.rows, x.cols);
      k::CalibRmsNormArgs args;
      args.out = out.data();
      args.x = x.data();
      args.weight = w.data();
      args.rows = static_cast<int>(x.rows);
      args.cols = static_cast<int>(x.cols);
      args.group = static_cast<int>(w.count());
      args.eps = norm.getEpsilon().convertToFloat();
      kernels_.rmsNorm->launch(
          dims(k::calibRmsNormBlocks(args.rows, args.cols, args.group)),
          stream_, args);
      return out;
    }
    if (auto linear = dyn_cast<LinearOp>(op)) {
      if (failed(checkCalibrationLinear(linear)))
        return failure();
      const DeviceTensor &x = in(linear.getInput());
      auto type = linear.getWeight().getType();
      const int64_t n = type.getDimSize(0), kk = type.getDimSize(1);
      auto it = overrides.find(linear.getWeight());
      const CUdeviceptr w = it != overrides.end()
                                ? it->second
                                : bf16Weight(linear.getWeight()).address();
      DeviceTensor out = DeviceTensor::make(x.rows, n);
      gemm(out, toBf16(x), w, n, kk);
      if (linear.getBias())
        elementwise(out, out.data(), deviceWeight(linear.getBias()).data(),
                    k::kCalibAddBias);
      return out;
    }
    if (auto rope = dyn_cast<RopeOp>(op)) {
      const DeviceTensor &x = in(rope.getInput());
      const auto &[cosTable, sinTable] = ropeTables(rope);
      DeviceTensor out = DeviceTensor::make(x.rows, x.cols);
      k::CalibRopeArgs args;
      args.out = out.data();
      args.x = x.data();
      args.cosTable = cosTable.as<float>();
      args.sinTable = sinTable.as<float>();
      args.positions = indices(rope.getPositions());
      args.tokens = static_cast<int>(x.rows);
      args.heads = static_cast<int>(rope.getNumHeads());
      args.dim = static_cast<int>(rope.getHeadDim());
      kernels_.rope->launch(dims(k::calibRopeBlocks(args.tokens)), stream_,
                            args);
      return out;
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (!attention.getCausal())
        return op->emitOpError("calibration evaluates causal attention only");
      if (attention.getSinks())
        return op->emitOpError("calibration does not evaluate attention sinks");
      const DeviceTensor &q = in(attention.getQuery());
      const DeviceTensor &kv = in(attention.getKey());
      const DeviceTensor &v = in(attention.getValue());
      k::CalibAttentionArgs args;
      args.heads = static_cast<int>(attention.getNumHeads());
      args.kvHeads = static_cast<int>(attention.getNumKvHeads());
      args.dim = static_cast<int>(attention.getHeadDim());
      DeviceTensor out = DeviceTensor::make(T, int64_t(args.heads) * args.dim);
      args.out = out.data();
      args.q = q.data();
      args.k = kv.data();
      args.v = v.data();
      args.seqStart = seqStarts_.as<int>();
      args.tokens = static_cast<int>(T);
      args.window = static_cast<int>(attention.getSlidingWindow().value_or(0));
      args.scale = attention.getScale().convertToFloat();
      args.softcap =
          attention.getSoftcap() ? attention.getSoftcap()->convertToFloat() : 0;
      if (auto tc = kernels_.attentionTc.find(args.dim);
          tc != kernels_.attentionTc.end()) {
        LaunchDims d;
        d.grid.x = k::calibAttentionTcBlocks(args.tokens, args.heads);
        d.block.x = k::kCalibAttentionTcThreads;
        d.sharedBytes = k::calibAttentionTcSharedBytes(args.dim);
        tc->second.launch(d, stream_, args);
        return out;
      }
      kernels_.attention->launch(
          dims(k::calibAttentionBlocks(args.tokens, args.heads)), stream_,
          args);
      return out;
    }
    if (auto add = dyn_cast<AddOp>(op)) {
      const DeviceTensor &a = in(add.getLhs()), &b = in(add.getRhs());
      DeviceTensor out = DeviceTensor::make(a.rows, a.cols);
      elementwise(out, a.data(), b.data(), k::kCalibAdd);
      return out;
    }
    if (auto swiglu = dyn_cast<SwigluOp>(op)) {
      if (!swiglu.getUp())
        return op->emitOpError("calibration evaluates the two-operand "
                               "(importer's) form only");
      const DeviceTensor &g = in(swiglu.getGate()), &u = in(swiglu.getUp());
      DeviceTensor out = DeviceTensor::make(g.rows, g.cols);
      elementwise(out, g.data(), u.data(),
                  swiglu.getActivation() == GateActivation::GeluTanh
                      ? k::kCalibGegelu
                      : k::kCalibSwiglu);
      return out;
    }
    if (auto moe = dyn_cast<MoeOp>(op))
      return mixture(moe, in(moe.getInput()), overrides);
    if (auto gate = dyn_cast<SigmoidGateOp>(op)) {
      const DeviceTensor &v = in(gate.getValue()), &x = in(gate.getInput());
      const DeviceTensor &w = deviceWeight(gate.getWeight());
      DeviceTensor out = DeviceTensor::make(v.rows, v.cols);
      k::CalibSigmoidGateArgs args;
      args.out = out.data();
      args.value = v.data();
      args.in = x.data();
      args.weight = w.data();
      args.rows = static_cast<int>(v.rows);
      args.valueCols = static_cast<int>(v.cols);
      args.inCols = static_cast<int>(x.cols);
      kernels_.sigmoidGate->launch(dims(k::calibSigmoidGateBlocks(args.rows)),
                                   stream_, args);
      return out;
    }
    return op->emitOpError("GPU calibration cannot evaluate this op");
  }

  mutable CalibrationProfile profile_; // printed last, after the GPU's work
  TensorEvaluator host_;
  // Weights being read on another thread (prefetchWeights), the last of
  // those reads, and every weight ever prefetched (each is, at most once).
  // Declared after host_, which they read, so they go (and are waited for)
  // before it.
  mutable llvm::DenseMap<Value, std::future<std::vector<float>>> prefetched_;
  std::shared_future<void> lastPrefetch_;
  llvm::DenseSet<Value> prefetchedOnce_;
  std::unique_ptr<cuda::CudaContext> context_;
  std::unique_ptr<cuda::CublasLt> blas_;
  cuda::Stream stream_;
  CalibrationKernels kernels_;
  DeviceBuffer workspace_, seqStarts_;
  llvm::DenseMap<Value, DeviceBuffer> indexArgs_;
  llvm::DenseMap<Value, DeviceTensor> values_, weights_;
  llvm::DenseMap<Value, DeviceBuffer> bf16Weights_;
  DeviceBuffer bf16Scratch_;
  llvm::DenseMap<Operation *, std::pair<DeviceBuffer, DeviceBuffer>>
      ropeTables_;
  size_t next_ = 0;
  // The region being measured.
  std::vector<Operation *> region_;
  std::vector<Value> outputs_;
  std::vector<DeviceTensor> reference_;
  llvm::DenseMap<Value, DeviceBuffer> candidates_;
  bool inRegion_ = false;
  // The selected expert (selectExpert) and the routing of its mixture.
  Operation *routedMoe_ = nullptr;
  MixtureRouting routing_;
  std::vector<int32_t> expertTokens_;
  DeviceTensor expertDown_, expertHidden_, expertReference_;
  DeviceBuffer expertHiddenBf16_, expertCandidate_;
};

} // namespace

std::unique_ptr<CalibrationEvaluator>
createCudaCalibrationEvaluator(func::FuncOp fn, const WeightStore &store,
                               std::span<const std::vector<int32_t>> sequences,
                               std::string &why) {
  WalkResult unsupported = fn.walk([&](Operation *op) {
    if (auto attention = dyn_cast<AttentionOp>(op);
        attention && (attention.getHeadDim() > k::kCalibAttentionMaxDim ||
                      attention.getHeadDim() % 4 != 0)) {
      why = cat("the GPU evaluator's attention takes head dims of multiples "
                "of 4 up to ",
                k::kCalibAttentionMaxDim, ", not ", attention.getHeadDim());
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (unsupported.wasInterrupted())
    return nullptr;
  if (!cuda::cudaAvailable()) {
    why = cuda::cudaUnavailableReason();
    return nullptr;
  }
  auto context = std::make_unique<cuda::CudaContext>(0);
  std::unique_ptr<cuda::CublasLt> blas = cuda::CublasLt::load(why);
  if (!blas)
    return nullptr;
  return std::make_unique<CudaCalibrationEvaluator>(
      fn, store, sequences, std::move(blas), std::move(context));
}

} // namespace sol

//===- CheckSupport.h - Data, comparison and timing for kernel checks -----===//
#pragma once

#include "HostBf16.h"
#include "KernelLibrary.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/DeviceBuffer.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/cuda/Stream.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace sol::check {

/// Measured device-to-device copy bandwidth of an H200 (read + write), the
/// ceiling bandwidth-bound kernels are compared with.
constexpr double kPeakBandwidthGBs = 4300.0;

/// Small, fast, seedable generator (splitmix64); data only, not crypto.
class Rng {
public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi);
  int uniformInt(int lo, int hiInclusive);

private:
  std::uint64_t state_;
};

std::vector<Bf16> randomBf16(Rng &rng, std::size_t n, float lo, float hi);

/// Attention sinks (gpt-oss) of `heads` query heads, as large as the scores
/// so that they take a visible share: the bf16 values the kernels read and
/// the same values for the reference. Empty for `heads` = 0.
struct AttentionSinks {
  std::vector<Bf16> bf16;
  std::vector<float> values;
};
AttentionSinks randomSinks(Rng &rng, int heads);
std::vector<float> toFloat(std::span<const Bf16> v);

/// ||out - ref|| / ||ref||; infinity when out has a NaN or ref is all zero
/// while out is not.
double relativeL2(std::span<const float> out, std::span<const double> ref);

/// Elements of `out` still holding the poison pattern.
std::size_t countPoison(std::span<const Bf16> out);
std::size_t countPoison(std::span<const float> out);

/// One line of the report.
struct CheckRecord {
  std::string family;
  std::string name;
  std::string kernel;
  bool checked = false; // a correctness check ran
  bool passed = true;
  double relError = 0.0;
  double tolerance = 0.0;
  std::size_t unwritten = 0;
  std::string note;
  bool timed = false;
  double medianUs = 0.0;
  double minUs = 0.0;
  int launchesPerSample = 0;
  double bytes = 0.0; // for GB/s
  double flops = 0.0; // for TFLOP/s
  KernelResources resources;
};

class Report {
public:
  void add(CheckRecord record) { records_.push_back(std::move(record)); }
  std::vector<CheckRecord> &records() { return records_; }
  bool allPassed() const;
  void printTable() const;
  /// JSON document with every record and the derived rates.
  std::string json(const std::string &device) const;

private:
  std::vector<CheckRecord> records_;
};

struct CheckOptions {
  bool timing = true;
  bool quick = false;
  int samples = 50;
};

struct Timing {
  double medianUs = 0.0;
  double minUs = 0.0;
  int launchesPerSample = 0;
};

/// Everything a check needs.
struct Checker {
  cuda::CudaContext &context;
  cuda::Stream &stream;
  KernelLibrary &kernels;
  Report &report;
  CheckOptions options;
  Rng rng;

  /// Uploads host data into a new buffer (synchronously).
  template <typename T> cuda::DeviceBuffer upload(const std::vector<T> &data) {
    cuda::DeviceBuffer buffer(data.size() * sizeof(T));
    buffer.copyFromHost(data.data(), data.size() * sizeof(T), stream);
    stream.synchronize();
    return buffer;
  }
  template <typename T>
  std::vector<T> download(const cuda::DeviceBuffer &buffer) {
    std::vector<T> data(buffer.size() / sizeof(T));
    buffer.copyToHost(data.data(), data.size() * sizeof(T), stream);
    stream.synchronize();
    return data;
  }
  /// A buffer of `bytes` filled with the poison pattern.
  cuda::DeviceBuffer poisoned(std::size_t bytes);

  /// Times `launch(rotation)`: warm-up, then CUDA graphs of several launches
  /// (rotation counts up so inputs can rotate through copies larger than
  /// L2), replayed `options.samples` times; per-launch median and minimum.
  Timing time(const std::function<void(int rotation)> &launch);

  /// Fills the record's timing fields (when timing is on) and adds it.
  void finish(CheckRecord record,
              const std::function<void(int rotation)> *launch = nullptr);
};

/// Copies of a buffer so that `copies * bytes` exceeds the L2 several times.
int rotationCopies(std::size_t bytes, int l2Bytes, int maxCopies = 64);

/// Whether paged_attention may merge `splits` splits through a thread-block
/// cluster on this GPU (sm_90 and 2..PagedAttentionSpec::kMaxClusterSplits).
bool clusterMergeRuns(const Checker &c, int splits);

/// One launch of an attention check: its split count and merge.
struct SplitRun {
  int splits;
  bool cluster;
};

/// The runs of the requested split counts (0: spec.chooseSplits), each with
/// the global merge and then, where clusterMergeRuns, the cluster merge.
std::vector<SplitRun> splitRuns(const Checker &c,
                                const cuda::PagedAttentionSpec &spec,
                                int tokens, int maxContext,
                                std::span<const int> requested);

/// A launch's split-merge workspace: the partials (null for one split) and
/// zeroed arrival counters, which the kernel leaves zeroed.
struct SplitWorkspace {
  cuda::DeviceBuffer partialsBuffer, arrivalsBuffer;
  bool split = false;
  float *partials() const {
    return split ? partialsBuffer.as<float>() : nullptr;
  }
  unsigned *arrivals() const { return arrivalsBuffer.as<unsigned>(); }
};
SplitWorkspace splitWorkspace(Checker &c, const cuda::PagedAttentionSpec &spec,
                              int tokens, int splits);
/// The multiprocessor count checks pass to PagedAttentionSpec::dims: large,
/// so that a spec with clusterMerge merges in clusters at any grid size
/// (plans only do it for small grids) and every case covers that path.
inline constexpr int kClusterCheckSMs = 1 << 30;

} // namespace sol::check

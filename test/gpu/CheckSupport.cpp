//===- CheckSupport.cpp - Data, comparison and timing for kernel checks ---===//

#include "CheckSupport.h"

#include "runtime/cuda/Event.h"
#include "runtime/cuda/Graph.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace sol::check {

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float Rng::uniform(float lo, float hi) {
  const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
  return static_cast<float>(lo + (hi - lo) * unit);
}

int Rng::uniformInt(int lo, int hiInclusive) {
  const auto span = static_cast<std::uint64_t>(hiInclusive - lo) + 1;
  return lo + static_cast<int>(next() % span);
}

AttentionSinks randomSinks(Rng &rng, int heads) {
  AttentionSinks sinks;
  sinks.bf16 = randomBf16(rng, static_cast<std::size_t>(heads), -2, 4);
  for (Bf16 v : sinks.bf16)
    sinks.values.push_back(bf16ToFloat(v));
  return sinks;
}

std::vector<Bf16> randomBf16(Rng &rng, std::size_t n, float lo, float hi) {
  std::vector<Bf16> out(n);
  for (Bf16 &v : out) {
    v = floatToBf16(rng.uniform(lo, hi));
    // Never exactly zero: zeros hide unwritten or mis-indexed data.
    if ((v & 0x7fff) == 0)
      v = floatToBf16(hi * 0.5f);
  }
  return out;
}

std::vector<float> toFloat(std::span<const Bf16> v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = bf16ToFloat(v[i]);
  return out;
}

double relativeL2(std::span<const float> out, std::span<const double> ref) {
  if (out.size() != ref.size())
    fail("relativeL2: ", out.size(), " outputs against ", ref.size(),
         " reference values");
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i]) || std::isinf(out[i]))
      return INFINITY;
    const double d = static_cast<double>(out[i]) - ref[i];
    diff += d * d;
    norm += ref[i] * ref[i];
  }
  if (norm == 0.0)
    return diff == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

std::size_t countPoison(std::span<const Bf16> out) {
  return static_cast<std::size_t>(
      std::count(out.begin(), out.end(), kPoisonBf16));
}

std::size_t countPoison(std::span<const float> out) {
  return static_cast<std::size_t>(
      std::count_if(out.begin(), out.end(), [](float f) {
        std::uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        return u == kPoisonWord;
      }));
}

bool Report::allPassed() const {
  return std::all_of(records_.begin(), records_.end(),
                     [](const CheckRecord &r) { return r.passed; });
}

namespace {

double gbPerSecond(const CheckRecord &r) {
  return r.timed && r.bytes > 0 ? r.bytes / (r.medianUs * 1e3) : 0.0;
}
double tflops(const CheckRecord &r) {
  return r.timed && r.flops > 0 ? r.flops / (r.medianUs * 1e6) : 0.0;
}

} // namespace

void Report::printTable() const {
  std::printf("\n%-14s %-44s %-6s %9s %9s %9s %8s %6s %8s %5s %5s\n", "family",
              "check", "result", "rel.err", "median_us", "GB/s", "%4.3TB/s",
              "TF/s", "regs", "spill", "local");
  for (const CheckRecord &r : records_) {
    char err[32] = "-", us[32] = "-", gbs[32] = "-", pct[32] = "-",
         tf[32] = "-";
    if (r.checked)
      std::snprintf(err, sizeof err, "%.2e", r.relError);
    if (r.timed) {
      std::snprintf(us, sizeof us, "%.2f", r.medianUs);
      if (r.bytes > 0) {
        std::snprintf(gbs, sizeof gbs, "%.0f", gbPerSecond(r));
        std::snprintf(pct, sizeof pct, "%.1f%%",
                      100.0 * gbPerSecond(r) / kPeakBandwidthGBs);
      }
      if (r.flops > 0)
        std::snprintf(tf, sizeof tf, "%.1f", tflops(r));
    }
    std::printf("%-14s %-44s %-6s %9s %9s %9s %8s %6s %8d %5d %5d\n",
                r.family.c_str(), r.name.c_str(),
                r.passed ? (r.checked ? "ok" : "-") : "FAIL", err, us, gbs, pct,
                tf, r.resources.registers, r.resources.spillStoreBytes,
                r.resources.localBytes);
    if (!r.passed || !r.note.empty())
      std::printf("%-14s   %s\n", "", r.note.c_str());
  }
}

std::string Report::json(const std::string &device) const {
  nlohmann::json doc;
  doc["device"] = device;
  doc["peak_bandwidth_gbs"] = kPeakBandwidthGBs;
  doc["all_passed"] = allPassed();
  nlohmann::json list = nlohmann::json::array();
  for (const CheckRecord &r : records_) {
    nlohmann::json j;
    j["family"] = r.family;
    j["name"] = r.name;
    j["kernel"] = r.kernel;
    j["passed"] = r.passed;
    if (r.checked) {
      j["rel_l2_error"] = std::isfinite(r.relError) ? r.relError : -1.0;
      j["tolerance"] = r.tolerance;
      j["unwritten"] = r.unwritten;
    }
    if (!r.note.empty())
      j["note"] = r.note;
    if (r.timed) {
      j["median_us"] = r.medianUs;
      j["min_us"] = r.minUs;
      j["launches_per_sample"] = r.launchesPerSample;
      if (r.bytes > 0) {
        j["bytes"] = r.bytes;
        j["gb_per_s"] = gbPerSecond(r);
        j["fraction_of_peak_bandwidth"] = gbPerSecond(r) / kPeakBandwidthGBs;
      }
      if (r.flops > 0) {
        j["flops"] = r.flops;
        j["tflop_per_s"] = tflops(r);
      }
    }
    j["registers"] = r.resources.registers;
    j["local_bytes"] = r.resources.localBytes;
    j["stack_frame_bytes"] = r.resources.stackFrameBytes;
    j["spill_store_bytes"] = r.resources.spillStoreBytes;
    j["spill_load_bytes"] = r.resources.spillLoadBytes;
    list.push_back(std::move(j));
  }
  doc["records"] = std::move(list);
  return doc.dump(2);
}

cuda::DeviceBuffer Checker::poisoned(std::size_t bytes) {
  cuda::DeviceBuffer buffer(bytes);
  buffer.fillBytes(0xff, stream);
  stream.synchronize();
  return buffer;
}

Timing Checker::time(const std::function<void(int rotation)> &launch) {
  int rotation = 0;
  for (int i = 0; i < 3; ++i)
    launch(rotation++);
  stream.synchronize();

  cuda::Event start, stop;
  start.record(stream);
  launch(rotation++);
  stop.record(stream);
  stop.synchronize();
  const double estimateUs = 1000.0 * cuda::Event::elapsedMs(start, stop);
  // About 300 us of work per graph replay, at most 64 launches.
  const int perGraph =
      std::clamp(static_cast<int>(300.0 / std::max(estimateUs, 0.5)), 1, 64);

  stream.beginCapture();
  try {
    for (int i = 0; i < perGraph; ++i)
      launch(rotation++);
  } catch (...) {
    stream.endCapture();
    throw;
  }
  const cuda::GraphExec exec = stream.endCapture().instantiate();
  for (int i = 0; i < 2; ++i)
    exec.launch(stream);

  const int samples = std::max(options.samples, 1);
  std::vector<cuda::Event> marks;
  marks.reserve(samples + 1);
  for (int i = 0; i <= samples; ++i)
    marks.emplace_back();
  marks[0].record(stream);
  for (int i = 0; i < samples; ++i) {
    exec.launch(stream);
    marks[i + 1].record(stream);
  }
  marks[samples].synchronize();
  std::vector<double> perLaunch(samples);
  for (int i = 0; i < samples; ++i)
    perLaunch[i] =
        1000.0 * cuda::Event::elapsedMs(marks[i], marks[i + 1]) / perGraph;
  std::sort(perLaunch.begin(), perLaunch.end());
  Timing t;
  t.medianUs = perLaunch[samples / 2];
  t.minUs = perLaunch.front();
  t.launchesPerSample = perGraph;
  return t;
}

void Checker::finish(CheckRecord record,
                     const std::function<void(int rotation)> *launch) {
  if (launch != nullptr && options.timing && record.passed) {
    const Timing t = time(*launch);
    record.timed = true;
    record.medianUs = t.medianUs;
    record.minUs = t.minUs;
    record.launchesPerSample = t.launchesPerSample;
  }
  std::printf("  %-14s %-44s %s", record.family.c_str(), record.name.c_str(),
              record.passed ? (record.checked ? "ok" : "-") : "FAIL");
  if (record.checked)
    std::printf("  err %.2e (tol %.0e)", record.relError, record.tolerance);
  if (record.timed) {
    std::printf("  %.2f us", record.medianUs);
    if (record.bytes > 0)
      std::printf("  %.0f GB/s", record.bytes / (record.medianUs * 1e3));
    if (record.flops > 0)
      std::printf("  %.1f TFLOP/s", record.flops / (record.medianUs * 1e6));
  }
  if (!record.note.empty())
    std::printf("  [%s]", record.note.c_str());
  std::printf("\n");
  std::fflush(stdout);
  report.add(std::move(record));
}

int rotationCopies(std::size_t bytes, int l2Bytes, int maxCopies) {
  if (bytes == 0)
    return 1;
  const double wanted = 4.0 * std::max(l2Bytes, 1) / static_cast<double>(bytes);
  return std::clamp(static_cast<int>(std::ceil(wanted)), 1, maxCopies);
}

bool clusterMergeRuns(const Checker &c, int splits) {
  return c.context.computeCapabilityMajor() >= 9 && splits > 1 &&
         splits <= cuda::PagedAttentionSpec::kMaxClusterSplits;
}

std::vector<SplitRun> splitRuns(const Checker &c,
                                const cuda::PagedAttentionSpec &spec,
                                int tokens, int maxContext,
                                std::span<const int> requested) {
  std::vector<SplitRun> runs;
  for (int r : requested) {
    const int splits = r > 0 ? r : spec.chooseSplits(tokens, maxContext);
    runs.push_back({splits, false});
    if (clusterMergeRuns(c, splits))
      runs.push_back({splits, true});
  }
  return runs;
}

SplitWorkspace splitWorkspace(Checker &c, const cuda::PagedAttentionSpec &spec,
                              int tokens, int splits) {
  SplitWorkspace w{
      cuda::DeviceBuffer(splits > 1 ? spec.workspaceFloats(tokens, splits) * 4
                                    : 4),
      cuda::DeviceBuffer(spec.arrivalCount(tokens) * 4), splits > 1};
  w.arrivalsBuffer.fillBytes(0, c.stream);
  return w;
}

} // namespace sol::check

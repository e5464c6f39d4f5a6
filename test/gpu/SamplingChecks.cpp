//===- SamplingChecks.cpp - sample_rows against CpuSampler ----------------===//
//
// The sampling kernel (codegen/kernels/Sampling.cuh) on random logits rows
// of real vocabulary sizes, against the CPU sampler (runtime/sampling) on
// identical inputs: chosen ids (the two are meant to agree exactly; the
// check requires >= 99.5% and lists every mismatch), logprobs of the chosen
// ids within 1e-4, top-n ids identical and their logprobs within 1e-4, and
// the logits left as they were. Rows mix greedy, temperature, top-k, top-p,
// min-p and penalties over peaked, flat, bf16-quantised (many ties) and
// nearly constant logits, so both the gathered fast path and the refining
// slow path run, some rows with a logit bias (argmax banned). Each batch is
// drawn with several counters. Then the kernel is timed (CUDA events, graph
// replays, median) for a batch of 64 and for single rows of each kind.
// The sampling_perf family (sol-kernel-check --only sampling_perf [--json
// FILE]) times every row kind of docs/sampling.md alone and in a 64-row
// batch at vocabularies 128,256 and 151,936, with the same checks.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

#include "runtime/sampling/CpuSampler.h"

#include <cmath>
#include <cstring>
#include <random>

namespace sol::check {
namespace {

using cuda::DeviceBuffer;

enum class Logits {
  Peaked,
  Flat,
  Quantized,
  Constant,
  VeryPeaked,  // one token 40 above the rest
  OneFinite,   // every logit -inf but one
  ManyNaN,     // a tenth of the row NaN
  AllConstant, // every logit equal
};

const char *logitsName(Logits k) {
  switch (k) {
  case Logits::Peaked:
    return "peaked";
  case Logits::Flat:
    return "flat";
  case Logits::Quantized:
    return "bf16";
  case Logits::Constant:
    return "constant";
  case Logits::VeryPeaked:
    return "very peaked";
  case Logits::OneFinite:
    return "all -inf but one";
  case Logits::ManyNaN:
    return "10% NaN";
  case Logits::AllConstant:
    return "all equal";
  }
  return "?";
}

void fillRow(Rng &rng, Logits kind, std::span<float> row, bool specials) {
  std::mt19937 gen(static_cast<uint32_t>(rng.next()));
  std::normal_distribution<float> normal(0.0f, 2.5f);
  const int V = static_cast<int>(row.size());
  switch (kind) {
  case Logits::Peaked:
  case Logits::Quantized:
    for (float &v : row)
      v = normal(gen);
    // An LLM-like head: a few tokens far above the rest.
    for (int i = 0; i < 8; ++i)
      row[static_cast<size_t>(rng.uniformInt(0, V - 1))] =
          rng.uniform(6.0f, 16.0f);
    if (kind == Logits::Quantized)
      for (float &v : row)
        v = roundBf16(v);
    break;
  case Logits::Flat:
    for (float &v : row)
      v = rng.uniform(-1.0f, 1.0f);
    break;
  case Logits::Constant:
    for (float &v : row)
      v = 0.5f;
    for (int i = 0; i < 3; ++i)
      row[static_cast<size_t>(rng.uniformInt(0, V - 1))] = 0.75f;
    break;
  case Logits::VeryPeaked:
    for (float &v : row)
      v = normal(gen);
    row[static_cast<size_t>(rng.uniformInt(0, V - 1))] = 45.0f;
    break;
  case Logits::OneFinite:
    for (float &v : row)
      v = -INFINITY;
    row[static_cast<size_t>(rng.uniformInt(0, V - 1))] = 1.5f;
    break;
  case Logits::ManyNaN:
    for (float &v : row)
      v = rng.uniformInt(0, 9) == 0 ? NAN : normal(gen);
    break;
  case Logits::AllConstant:
    for (float &v : row)
      v = -2.0f;
    break;
  }
  if (specials) { // never chosen, and harmless to the logprobs
    row[static_cast<size_t>(rng.uniformInt(0, V - 1))] = NAN;
    row[static_cast<size_t>(rng.uniformInt(0, V - 1))] = -INFINITY;
  }
}

SamplingRow row(float temperature, int32_t topK = 0, float topP = 1.0f,
                float minP = 0.0f) {
  SamplingRow s;
  s.temperature = temperature;
  s.topK = topK;
  s.topP = topP;
  s.minP = minP;
  return s;
}

/// One of 16 settings, by row; `penalised` says whether it gets a penalty
/// list.
SamplingRow mixedSetting(int r, bool &penalised, std::string &label) {
  static const struct {
    const char *label;
    SamplingRow row;
    bool penalties;
  } kSettings[] = {
      {"greedy", row(0.0f), false},
      {"greedy+pen", row(0.0f), true},
      {"T1", row(1.0f), false},
      {"T0.7 k50", row(0.7f, 50), false},
      {"T1 p0.9", row(1.0f, 0, 0.9f), false},
      {"T1.2 minp0.05", row(1.2f, 0, 1.0f, 0.05f), false},
      {"T0.8 k40 p0.95 minp0.02 +pen", row(0.8f, 40, 0.95f, 0.02f), true},
      {"T1 k1", row(1.0f, 1), false},
      {"T1.5 p0.5 +pen", row(1.5f, 0, 0.5f), true},
      {"T1 k5000", row(1.0f, 5000), false},
      {"T2 p0.99", row(2.0f, 0, 0.99f), false},
      {"T1 k100000", row(1.0f, 100000), false},
      {"T0.5 p0.8 minp0.1", row(0.5f, 0, 0.8f, 0.1f), false},
      {"T3 minp0.001", row(3.0f, 0, 1.0f, 0.001f), false},
      {"T1 k20 p0.7 +boost", row(1.0f, 20, 0.7f), true},
      {"T0.001", row(0.001f), false},
  };
  const auto &s = kSettings[r % 16];
  penalised = s.penalties;
  label = s.label;
  SamplingRow out = s.row;
  out.repetitionPenalty = penalised ? 1.3f : 1.0f;
  out.presencePenalty = penalised ? (r % 16 == 14 ? -2.0f : 0.6f) : 0.0f;
  out.frequencyPenalty = penalised ? 0.4f : 0.0f;
  return out;
}

/// |have - want|; infinite when only one is finite or either is NaN.
double logprobError(float have, float want) {
  if (std::isfinite(have) && std::isfinite(want))
    return std::abs(static_cast<double>(have) - want);
  return have == want ? 0.0 : INFINITY;
}

struct Case {
  std::string name;
  int vocab = 0;
  int rows = 0;
  int numTop = 0;
  bool logprobs = false;
  int draws = 1;
  /// Settings and logits of row r.
  std::function<SamplingRow(int r, bool &penalised, std::string &label)>
      setting;
  std::function<Logits(int r)> logits;
  /// Penalty entries of a penalised row.
  std::function<int(int r)> penaltyCount = [](int) { return 200; };
  /// Whether row r gets a logit bias (its argmax banned, some tokens
  /// pushed up or down, one forced).
  std::function<bool(int r)> biased = [](int r) { return r % 8 == 3; };
};

void runCase(Checker &c, const Case &cs) {
  const cuda::SamplingSpec spec;
  const cuda::KernelInstance instance = spec.instance();
  const int R = cs.rows, V = cs.vocab, n = cs.numTop;
  const std::size_t RV = static_cast<std::size_t>(R) * V;

  std::vector<float> logits(RV);
  std::vector<SamplingRow> params(static_cast<std::size_t>(R));
  std::vector<std::string> labels(static_cast<std::size_t>(R));
  std::vector<int32_t> offsets = {0}, penaltyOffsets = {0}, ids, counts;
  std::vector<int32_t> biasOffsets = {0}, biasIds;
  std::vector<float> biasValues;
  std::vector<uint8_t> inPrompt;
  // Pairs: id, count | in-prompt bit 31; or id | bias bit 31, bias bits.
  std::vector<int32_t> entries;
  for (int r = 0; r < R; ++r) {
    bool penalised = false;
    params[r] = cs.setting(r, penalised, labels[r]);
    params[r].seed = 1000003ull * static_cast<uint64_t>(r + 1);
    const Logits kind = cs.logits(r);
    labels[r] += sol::cat(" ", logitsName(kind));
    std::span<float> l(logits.data() + static_cast<std::size_t>(r) * V,
                       static_cast<std::size_t>(V));
    fillRow(c.rng, kind, l, r % 5 == 4);
    if (penalised) {
      // 200 distinct ids, the head tokens among them.
      std::vector<int32_t> picked;
      std::vector<uint8_t> used(static_cast<std::size_t>(V), 0);
      for (int i = 0; i < V && picked.size() < 8; ++i)
        if (l[static_cast<std::size_t>(i)] > 6.0f) {
          picked.push_back(i);
          used[static_cast<std::size_t>(i)] = 1;
        }
      const std::size_t want =
          static_cast<std::size_t>(std::min(cs.penaltyCount(r), V / 2));
      while (picked.size() < want) {
        const int id = c.rng.uniformInt(0, V - 1);
        if (!used[static_cast<std::size_t>(id)]) {
          used[static_cast<std::size_t>(id)] = 1;
          picked.push_back(id);
        }
      }
      for (int32_t id : picked) {
        const int32_t count = c.rng.uniformInt(0, 4);
        const uint8_t prompt = count == 0 ? 1 : c.rng.uniformInt(0, 1);
        ids.push_back(id);
        counts.push_back(count);
        inPrompt.push_back(prompt);
        entries.push_back(id);
        entries.push_back(static_cast<int32_t>(
            static_cast<uint32_t>(count) |
            (prompt ? cuda::SamplingSpec::kInPromptBit : 0u)));
      }
    }
    penaltyOffsets.push_back(static_cast<int32_t>(ids.size()));
    if (cs.biased(r)) {
      std::vector<uint8_t> used(static_cast<std::size_t>(V), 0);
      auto add = [&](int32_t id, float value) {
        if (used[static_cast<std::size_t>(id)])
          return;
        used[static_cast<std::size_t>(id)] = 1;
        biasIds.push_back(id);
        biasValues.push_back(value);
        entries.push_back(static_cast<int32_t>(static_cast<uint32_t>(id) |
                                               cuda::SamplingSpec::kBiasBit));
        int32_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        entries.push_back(bits);
      };
      add(static_cast<int32_t>(std::max_element(l.begin(), l.end()) -
                               l.begin()),
          -INFINITY);
      for (int i = 0; i < std::min(50, V / 4); ++i)
        add(c.rng.uniformInt(0, V - 1), c.rng.uniform(-5.0f, 5.0f));
      if (r % 2 == 1)
        add(c.rng.uniformInt(0, V - 1), 100.0f);
    }
    biasOffsets.push_back(static_cast<int32_t>(biasIds.size()));
    offsets.push_back(static_cast<int32_t>(entries.size() / 2));
  }
  const PenaltyTokens penalties{penaltyOffsets, ids, counts, inPrompt};
  const LogitBias bias{biasOffsets, biasIds, biasValues};

  const DeviceBuffer dLogits = c.upload(logits);
  DeviceBuffer dParams = c.upload(params);
  const DeviceBuffer dOffsets = c.upload(offsets);
  if (entries.empty())
    entries = {0, 0};
  const DeviceBuffer dEntries = c.upload(entries);
  DeviceBuffer dSaved(std::max<std::size_t>(entries.size() / 2, 1) *
                      sizeof(float));
  DeviceBuffer dIds = c.poisoned(static_cast<std::size_t>(R) * 4);
  DeviceBuffer dLogprobs = c.poisoned(static_cast<std::size_t>(R) * 4);
  DeviceBuffer dTopIds =
      c.poisoned(std::max<std::size_t>(static_cast<std::size_t>(R) * n, 1) * 4);
  DeviceBuffer dTopLogprobs =
      c.poisoned(std::max<std::size_t>(static_cast<std::size_t>(R) * n, 1) * 4);
  const cuda::Kernel &kernel = c.kernels.kernel(instance);
  float *logprobsArg = cs.logprobs ? dLogprobs.as<float>() : nullptr;
  int *topIdsArg = n > 0 ? dTopIds.as<int>() : nullptr;
  float *topLogprobsArg = n > 0 ? dTopLogprobs.as<float>() : nullptr;
  std::function<void(int)> launch = [&](int) {
    kernel.launch(spec.dims(R), c.stream,
                  kernels::SamplingArgs{.outIds = dIds.address(),
                                        .outLogprobs = logprobsArg,
                                        .outTopIds = topIdsArg,
                                        .outTopLogprobs = topLogprobsArg,
                                        .logits = dLogits.address(),
                                        .params = dParams.address(),
                                        .penaltyOffsets = dOffsets.address(),
                                        .penaltyEntries = dEntries.address(),
                                        .penaltySaved = dSaved.address(),
                                        .rows = R,
                                        .vocab = V,
                                        .numTop = n});
  };

  sampling::CpuSampler cpu;
  std::size_t compared = 0, mismatched = 0, unwritten = 0, topWrong = 0;
  double worstLogprob = 0.0;
  std::string mismatchNote;
  for (int draw = 0; draw < cs.draws; ++draw) {
    for (SamplingRow &p : params)
      p.counter = draw;
    dParams.copyFromHost(params.data(), params.size() * sizeof(SamplingRow),
                         c.stream);
    launch(0);
    const std::vector<int> gpuIds = c.download<int>(dIds);
    const std::vector<float> gpuLogprobs = c.download<float>(dLogprobs);
    const std::vector<int> gpuTopIds = c.download<int>(dTopIds);
    const std::vector<float> gpuTopLogprobs = c.download<float>(dTopLogprobs);
    for (int r = 0; r < R; ++r) {
      const std::span<const float> l(logits.data() +
                                         static_cast<std::size_t>(r) * V,
                                     static_cast<std::size_t>(V));
      const int32_t expected = cpu.sample(
          l, params[static_cast<std::size_t>(r)],
          sampling::rowPenalties(penalties, static_cast<std::size_t>(r)),
          sampling::rowBias(bias, static_cast<std::size_t>(r)));
      const int got = gpuIds[static_cast<std::size_t>(r)];
      ++compared;
      unwritten += got == -1;
      if (got != expected) {
        ++mismatched;
        if (mismatched <= 8)
          mismatchNote += sol::cat("row ", r, " (", labels[r], ") draw ", draw,
                                   ": gpu ", got, " cpu ", expected, "; ");
      }
      if (cs.logprobs && got == expected)
        worstLogprob =
            std::max(worstLogprob,
                     logprobError(gpuLogprobs[static_cast<std::size_t>(r)],
                                  sampling::CpuSampler::logprob(l, expected)));
      if (n > 0) {
        std::vector<int32_t> topIds(static_cast<std::size_t>(n));
        std::vector<float> topLogprobs(static_cast<std::size_t>(n));
        sampling::CpuSampler::topLogprobs(l, topIds, topLogprobs);
        for (int j = 0; j < n; ++j) {
          const std::size_t at = static_cast<std::size_t>(r) * n + j;
          if (gpuTopIds[at] != topIds[static_cast<std::size_t>(j)]) {
            ++topWrong;
            if (topWrong <= 4)
              mismatchNote +=
                  sol::cat("row ", r, " top ", j, ": gpu ", gpuTopIds[at],
                           " cpu ", topIds[static_cast<std::size_t>(j)], "; ");
          } else {
            worstLogprob = std::max(
                worstLogprob,
                logprobError(gpuTopLogprobs[at],
                             topLogprobs[static_cast<std::size_t>(j)]));
          }
        }
      }
    }
  }
  // The kernel penalises the rows in place and must restore them.
  const std::vector<float> after = c.download<float>(dLogits);
  const bool restored =
      std::memcmp(after.data(), logits.data(), RV * sizeof(float)) == 0;

  CheckRecord rec = makeRecord(c, "sampling", cs.name, instance);
  const double mismatchFraction =
      static_cast<double>(mismatched) / static_cast<double>(compared);
  judge(rec, mismatchFraction, 0.005, unwritten);
  rec.note += sol::cat(compared - mismatched, "/", compared, " ids as CPU");
  if (cs.logprobs || n > 0)
    rec.note += sol::cat(", logprob err ", worstLogprob);
  if (!(worstLogprob <= 1e-4)) {
    rec.passed = false;
    rec.note += " (> 1e-4)";
  }
  if (topWrong) {
    rec.passed = false;
    rec.note += sol::cat(", ", topWrong, " top ids differ");
  }
  if (!restored) {
    rec.passed = false;
    rec.note += ", logits not restored";
  }
  if (!mismatchNote.empty())
    rec.note += "; " + mismatchNote;
  rec.bytes = 4.0 * static_cast<double>(RV); // the logits, read once
  c.finish(std::move(rec), &launch);
}

void checkSampling(Checker &c) {
  auto mixed = [](int r, bool &penalised, std::string &label) {
    return mixedSetting(r, penalised, label);
  };
  auto mixedLogits = [](int r) { return static_cast<Logits>((r / 16) % 4); };
  const int draws = c.options.quick ? 1 : 4;
  for (int vocab : {128256, 151936}) {
    runCase(c, {sol::cat("V=", vocab, " rows=64 mixed +logprobs top5"), vocab,
                64, 5, true, draws, mixed, mixedLogits});
    runCase(c, {sol::cat("V=", vocab, " rows=64 mixed"), vocab, 64, 0, false,
                draws, mixed, mixedLogits});
  }
  if (c.options.quick)
    return;
  // Small vocabularies and ones that are not a multiple of 4 (scalar loads).
  runCase(c, {"V=32000 rows=16 mixed +logprobs top20", 32000, 16, 20, true, 4,
              mixed, mixedLogits});
  runCase(c, {"V=1001 rows=32 mixed +logprobs top3", 1001, 32, 3, true, 4,
              mixed, mixedLogits});
  // One row of each kind: the latency a batch-1 decode step pays.
  struct Single {
    const char *name;
    SamplingRow setting;
    bool penalties;
    Logits logits;
    int numTop;
  };
  const Single singles[] = {
      {"greedy", row(0.0f), false, Logits::Peaked, 0},
      {"T1 (full vocabulary draw)", row(1.0f), false, Logits::Peaked, 0},
      {"T0.7 k50", row(0.7f, 50), false, Logits::Peaked, 0},
      {"T1 p0.9", row(1.0f, 0, 0.9f), false, Logits::Peaked, 0},
      {"T0.8 k40 p0.95 minp0.02 +pen +top5", row(0.8f, 40, 0.95f, 0.02f), true,
       Logits::Peaked, 5},
      {"T2 p0.99 flat (slow path)", row(2.0f, 0, 0.99f), false, Logits::Flat,
       0},
  };
  for (const Single &s : singles)
    runCase(c, {sol::cat("V=128256 rows=1 ", s.name), 128256, 1, s.numTop,
                s.numTop > 0, 8,
                [&](int, bool &penalised, std::string &label) {
                  penalised = s.penalties;
                  label = s.name;
                  SamplingRow out = s.setting;
                  if (s.penalties) {
                    out.repetitionPenalty = 1.3f;
                    out.presencePenalty = 0.6f;
                    out.frequencyPenalty = 0.4f;
                  }
                  return out;
                },
                [&](int) { return s.logits; }});
}

/// One row kind of the timing family: parameters, logits and lists.
struct RowKind {
  const char *name;
  SamplingRow setting;
  Logits logits;
  int penalties = 0; // entries; 0: none
  bool bias = false;
};

SamplingRow penalised(SamplingRow s) {
  s.repetitionPenalty = 1.3f;
  s.presencePenalty = 0.6f;
  s.frequencyPenalty = 0.4f;
  return s;
}

const std::vector<RowKind> &rowKinds() {
  static const std::vector<RowKind> kinds = {
      {"greedy", row(0.0f), Logits::Peaked},
      {"T1", row(1.0f), Logits::Peaked},
      {"T0.7 k50", row(0.7f, 50), Logits::Peaked},
      {"T1 p0.9", row(1.0f, 0, 0.9f), Logits::Peaked},
      {"T1 minp0.05", row(1.0f, 0, 1.0f, 0.05f), Logits::Peaked},
      {"T0.8 k40 p0.95 minp0.02", row(0.8f, 40, 0.95f, 0.02f), Logits::Peaked},
      {"T1 k100000", row(1.0f, 100000), Logits::Peaked},
      {"T1 p0.999", row(1.0f, 0, 0.999f), Logits::Peaked},
      {"T1 p0.9 penalties x2000", penalised(row(1.0f, 0, 0.9f)), Logits::Peaked,
       2000},
      {"T1 k50 bias+ban", row(1.0f, 50), Logits::Peaked, 0, true},
      {"greedy bias+ban", row(0.0f), Logits::Peaked, 0, true},
      {"T1 p0.9 constant", row(1.0f, 0, 0.9f), Logits::AllConstant},
      {"T1 k50 nearly constant", row(1.0f, 50), Logits::Constant},
      {"T1 p0.9 all -inf but one", row(1.0f, 0, 0.9f), Logits::OneFinite},
      {"T1 k50 p0.9 10% NaN", row(1.0f, 50, 0.9f), Logits::ManyNaN},
      {"T2 p0.99 flat", row(2.0f, 0, 0.99f), Logits::Flat},
      {"T1 p0.9 very peaked", row(1.0f, 0, 0.9f), Logits::VeryPeaked},
      {"T1 k50 p0.9 bf16 ties", row(1.0f, 50, 0.9f), Logits::Quantized},
  };
  return kinds;
}

/// sampling_perf: each row kind alone (the batch-1 decode latency) and a
/// 64-row batch of all kinds, at both vocabularies, with and without
/// logprobs (top 20); every case is checked against CpuSampler like the
/// sampling family and timed (median of --samples launches, default 50).
void checkSamplingPerf(Checker &c) {
  const std::vector<RowKind> &kinds = rowKinds();
  for (int vocab : {128256, 151936}) {
    auto setting = [&](int r, bool &pen, std::string &label) {
      const RowKind &k = kinds[static_cast<std::size_t>(r) % kinds.size()];
      pen = k.penalties > 0;
      label = k.name;
      return k.setting;
    };
    auto logits = [&](int r) {
      return kinds[static_cast<std::size_t>(r) % kinds.size()].logits;
    };
    auto penaltyCount = [&](int r) {
      return kinds[static_cast<std::size_t>(r) % kinds.size()].penalties;
    };
    auto biased = [&](int r) {
      return kinds[static_cast<std::size_t>(r) % kinds.size()].bias;
    };
    for (int numTop : {0, 20}) {
      Case batch{sol::cat("V=", vocab, " rows=64 all kinds",
                          numTop ? " +logprobs top20" : ""),
                 vocab,
                 64,
                 numTop,
                 numTop > 0,
                 2,
                 setting,
                 logits};
      batch.penaltyCount = penaltyCount;
      batch.biased = biased;
      runCase(c, batch);
    }
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      const int shift = static_cast<int>(k);
      Case one{sol::cat("V=", vocab, " rows=1 ", kinds[k].name),
               vocab,
               1,
               0,
               false,
               2,
               [=](int, bool &pen, std::string &label) {
                 return setting(shift, pen, label);
               },
               [=](int) { return logits(shift); }};
      one.penaltyCount = [=](int) { return penaltyCount(shift); };
      one.biased = [=](int) { return biased(shift); };
      runCase(c, one);
    }
    Case top{sol::cat("V=", vocab, " rows=1 T0.8 k40 p0.95 +logprobs top20"),
             vocab,
             1,
             20,
             true,
             2,
             [&](int, bool &pen, std::string &label) {
               return setting(5, pen, label);
             },
             [&](int) { return Logits::Peaked; }};
    runCase(c, top);
  }
}

} // namespace

std::vector<CheckFamily> samplingChecks() {
  auto declare = [](KernelLibrary &k) {
    k.require(cuda::SamplingSpec{}.instance());
  };
  return {{"sampling", declare, checkSampling},
          {"sampling_perf", declare, checkSamplingPerf}};
}

} // namespace sol::check

//===- ExecutorSamplingCheck.cpp - The CUDA executor samples in the step --===//
//
// sol-executor-sampling-check PLAN: runs decode-shaped steps of a compiled
// plan (any model; the tiny test models are enough) on the CUDA executor
// with per-request sampling, penalties, logit biases (bans of the previous
// run's ids included) and logprobs, asking for the logits
// too, and checks the ids, logprobs and top logprobs the executor returns
// against CpuSampler applied to those same logits. Each configuration runs
// three times (eager, graph capture, graph replay) with new counters and
// penalty and bias lists of different sizes, so the staging of the sampling
// inputs, the graph keys and the replay with a variable number of penalty
// entries are all covered; all-greedy steps must still give the argmax. Prints
// one line per configuration.
//
// Exit status: 0 passed, 1 a check failed, 2 bad usage or setup error, 77 no
// GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDriver.h"
#include "runtime/executor/ExecutorFactory.h"
#include "runtime/sampling/CpuSampler.h"
#include "runtime/support/Error.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>

namespace {

using namespace sol;

constexpr int kSeqs = 8;

struct Config {
  const char *name;
  bool sampling;
  bool penalties;
  bool logprobs;
  int numTop;
  bool bias = false;
};

/// |a - b|, infinite when either is NaN.
double error(float a, float b) {
  const double e = std::abs(static_cast<double>(a) - b);
  return std::isnan(e) ? INFINITY : e;
}

SamplingRow mixedRow(int r) {
  SamplingRow s;
  switch (r % 8) {
  case 0: // greedy
    break;
  case 1:
    s.temperature = 1.0f;
    break;
  case 2:
    s.temperature = 0.7f;
    s.topK = 5;
    break;
  case 3:
    s.temperature = 1.0f;
    s.topP = 0.8f;
    break;
  case 4:
    s.temperature = 1.3f;
    s.minP = 0.05f;
    break;
  case 5:
    s.temperature = 0.9f;
    s.topK = 20;
    s.topP = 0.95f;
    s.minP = 0.02f;
    break;
  case 6:
    s.temperature = 2.0f;
    s.topP = 0.99f;
    break;
  default:
    s.temperature = 1.0f;
    s.topK = 1;
    break;
  }
  s.seed = 7919ull * static_cast<uint64_t>(r + 1);
  return s;
}

int run(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sol-executor-sampling-check PLAN\n");
    return 2;
  }
  if (!cuda::cudaAvailable()) {
    std::printf("sol-executor-sampling-check: skipped, no usable GPU: %s\n",
                cuda::cudaUnavailableReason().c_str());
    return 77;
  }
  const PlanFile plan = PlanFile::open(argv[1]);
  ExecutorOptions options;
  options.maxModelLen = 64;
  const std::unique_ptr<Executor> ex = makeExecutor(plan, "cuda", options);
  const int64_t V = plan.plan().model()->vocab_size();
  std::mt19937 rng(5);

  // Decode-shaped: kSeqs sequences of one token at position 0.
  std::vector<int32_t> tokens(kSeqs), positions(kSeqs, 0), tokenSeq(kSeqs),
      rows(kSeqs), blockTables(kSeqs);
  for (int s = 0; s < kSeqs; ++s) {
    tokens[s] = static_cast<int32_t>(rng() % V);
    tokenSeq[s] = rows[s] = blockTables[s] = s;
  }

  const Config configs[] = {
      {"greedy (argmax kernel)", false, false, false, 0},
      {"mixed sampling", true, false, false, 0},
      {"mixed sampling + penalties", true, true, false, 0},
      {"greedy + logprobs top5", false, false, true, 5},
      {"mixed + penalties + logprobs top20", true, true, true, 20},
      {"greedy + logit bias", false, false, false, 0, true},
      {"mixed + penalties + logit bias + logprobs top5", true, true, true, 5,
       true},
  };
  bool allPassed = true;
  sampling::CpuSampler cpu;
  for (const Config &cfg : configs) {
    std::size_t wrongIds = 0, wrongTop = 0, compared = 0;
    double worstLogprob = 0.0;
    std::vector<int32_t> lastChosen;
    // Eager, capture, replay.
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::vector<SamplingRow> params;
      if (cfg.sampling)
        for (int r = 0; r < kSeqs; ++r) {
          params.push_back(mixedRow(r));
          params.back().counter = attempt;
          if (cfg.penalties) {
            params.back().repetitionPenalty = 1.3f;
            params.back().presencePenalty = 0.5f;
            params.back().frequencyPenalty = 0.3f;
          }
        }
      // A different number of penalty entries each time.
      std::vector<int32_t> offsets = {0}, ids, counts;
      std::vector<uint8_t> inPrompt;
      if (cfg.penalties) {
        for (int r = 0; r < kSeqs; ++r) {
          const int n =
              static_cast<int>(std::min<int64_t>(V / 2, 3 + 5 * attempt + r));
          std::vector<uint8_t> used(static_cast<std::size_t>(V), 0);
          for (int e = 0; e < n;) {
            const auto id = static_cast<int32_t>(rng() % V);
            if (used[static_cast<std::size_t>(id)])
              continue;
            used[static_cast<std::size_t>(id)] = 1;
            ids.push_back(id);
            counts.push_back(static_cast<int32_t>(rng() % 4));
            inPrompt.push_back(static_cast<uint8_t>(rng() % 2));
            ++e;
          }
          offsets.push_back(static_cast<int32_t>(ids.size()));
        }
      }
      // Logit bias: each row's argmax of the previous run banned (when known)
      // and a varying number of random biases, some rows without any.
      std::vector<int32_t> biasOffsets = {0}, biasIds;
      std::vector<float> biasValues;
      if (cfg.bias) {
        for (int r = 0; r < kSeqs; ++r) {
          std::vector<uint8_t> used(static_cast<std::size_t>(V), 0);
          auto add = [&](int32_t id, float v) {
            if (used[static_cast<std::size_t>(id)])
              return;
            used[static_cast<std::size_t>(id)] = 1;
            biasIds.push_back(id);
            biasValues.push_back(v);
          };
          if (r % 4 != 3) {
            if (!lastChosen.empty())
              add(lastChosen[static_cast<std::size_t>(r)], -INFINITY);
            const int n =
                static_cast<int>(std::min<int64_t>(V / 4, 1 + 7 * attempt + r));
            for (int e = 0; e < n; ++e)
              add(static_cast<int32_t>(rng() % V),
                  static_cast<float>(static_cast<int>(rng() % 2001) - 1000) /
                      100.0f);
          }
          biasOffsets.push_back(static_cast<int32_t>(biasIds.size()));
        }
      }
      StepBatch batch;
      batch.tokens = tokens;
      batch.positions = positions;
      batch.tokenSeq = tokenSeq;
      batch.logitRows = rows;
      batch.blockTables = blockTables;
      batch.numSeqs = kSeqs;
      batch.maxBlocksPerSeq = 1;
      batch.sampling = params;
      if (cfg.penalties)
        batch.penalties = {offsets, ids, counts, inPrompt};
      if (cfg.bias)
        batch.logitBias = {biasOffsets, biasIds, biasValues};
      batch.numTopLogprobs = cfg.numTop;
      std::vector<float> logits(static_cast<std::size_t>(kSeqs * V));
      std::vector<int32_t> chosen(kSeqs, -1);
      std::vector<float> logprobs(cfg.logprobs ? kSeqs : 0);
      std::vector<int32_t> topIds(static_cast<std::size_t>(kSeqs * cfg.numTop));
      std::vector<float> topLogprobs(topIds.size());
      StepOutput out;
      out.logits = logits;
      out.argmax = chosen;
      out.logprobs = logprobs;
      out.topIds = topIds;
      out.topLogprobs = topLogprobs;
      ex->step(batch, out);
      lastChosen = chosen;

      for (int r = 0; r < kSeqs; ++r) {
        const std::span<const float> row(logits.data() +
                                             static_cast<std::size_t>(r) * V,
                                         static_cast<std::size_t>(V));
        const SamplingRow p = params.empty() ? SamplingRow{} : params[r];
        const int32_t expected = cpu.sample(
            row, p,
            sampling::rowPenalties(batch.penalties,
                                   static_cast<std::size_t>(r)),
            sampling::rowBias(batch.logitBias, static_cast<std::size_t>(r)));
        ++compared;
        if (chosen[r] != expected) {
          ++wrongIds;
          std::printf("  %s, run %d, row %d: executor %d, CpuSampler %d\n",
                      cfg.name, attempt, r, chosen[r], expected);
        }
        if (cfg.logprobs)
          worstLogprob =
              std::max(worstLogprob,
                       error(logprobs[r],
                             sampling::CpuSampler::logprob(row, chosen[r])));
        if (cfg.numTop > 0) {
          std::vector<int32_t> ti(static_cast<std::size_t>(cfg.numTop));
          std::vector<float> tl(ti.size());
          sampling::CpuSampler::topLogprobs(row, ti, tl);
          for (int j = 0; j < cfg.numTop; ++j) {
            const std::size_t at = static_cast<std::size_t>(r * cfg.numTop + j);
            if (topIds[at] != ti[static_cast<std::size_t>(j)])
              ++wrongTop;
            else
              worstLogprob = std::max(
                  worstLogprob,
                  error(topLogprobs[at], tl[static_cast<std::size_t>(j)]));
          }
        }
      }
    }
    const bool passed = wrongIds == 0 && wrongTop == 0 && worstLogprob <= 1e-4;
    allPassed = allPassed && passed;
    std::printf("%-40s %s  ids %zu/%zu as CpuSampler, top ids wrong %zu, "
                "logprob err %.2e\n",
                cfg.name, passed ? "ok  " : "FAIL", compared - wrongIds,
                compared, wrongTop, worstLogprob);
  }

  // Bad sampling inputs are refused before the step runs.
  {
    std::vector<SamplingRow> params(kSeqs);
    params[3].temperature = 1.0f;
    params[3].topP = 0.0f;
    StepBatch batch;
    batch.tokens = tokens;
    batch.positions = positions;
    batch.tokenSeq = tokenSeq;
    batch.logitRows = rows;
    batch.blockTables = blockTables;
    batch.numSeqs = kSeqs;
    batch.maxBlocksPerSeq = 1;
    batch.sampling = params;
    std::vector<int32_t> chosen(kSeqs);
    StepOutput out;
    out.argmax = chosen;
    std::string message;
    try {
      ex->step(batch, out);
    } catch (const Error &e) {
      message = e.what();
    }
    const bool passed =
        message.find("sampling row 3: topP must be in (0, 1]") !=
        std::string::npos;
    allPassed = allPassed && passed;
    std::printf("%-40s %s  %s\n", "invalid topP refused",
                passed ? "ok  " : "FAIL", message.c_str());
  }
  std::printf("\n%s\n", allPassed ? "ALL CHECKS PASSED" : "SOME CHECKS FAILED");
  return allPassed ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "sol-executor-sampling-check: %s\n", e.what());
    return 2;
  }
}

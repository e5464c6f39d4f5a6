//===- SamplingEmulationTest.cpp - sample_rows on the CPU vs CpuSampler ---===//
//
// The sampling kernel's logic without a GPU: codegen/kernels/Sampling.cuh is
// compiled as host C++ against a thread-per-CUDA-thread emulation
// (emulation/CudaEmulation.h) and run on rows that take every path (greedy,
// temperature only, the gathered fast path, the refined slow path, ties,
// the top-n fallback, scalar loads), and its ids, logprobs, top logprobs
// and restored logits are compared with CpuSampler's. The emulation runs the
// kernel's float operations on the host, so this checks the algorithm; the
// GPU's arithmetic is checked by sol-kernel-check --only sampling.
//
//===----------------------------------------------------------------------===//

#include "Sampling.cuh"

#include "runtime/sampling/CpuSampler.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace sol;

enum class Logits { Peaked, Flat, Quantized, Constant, Narrow };

SamplingRow setting(float t, int32_t k = 0, float p = 1.0f, float m = 0.0f) {
  SamplingRow s;
  s.temperature = t;
  s.topK = k;
  s.topP = p;
  s.minP = m;
  return s;
}

struct Setting {
  const char *label;
  SamplingRow row;
  bool penalties;
};

const Setting kSettings[] = {
    {"greedy", setting(0), false},
    {"greedy+pen", setting(0), true},
    {"T1", setting(1), false},
    {"T0.7 k50", setting(0.7f, 50), false},
    {"T1 p0.9", setting(1, 0, 0.9f), false},
    {"T1.2 minp0.05", setting(1.2f, 0, 1, 0.05f), false},
    {"T0.8 k40 p0.95 minp0.02 +pen", setting(0.8f, 40, 0.95f, 0.02f), true},
    {"T1 k1", setting(1, 1), false},
    {"T1.5 p0.5 +pen", setting(1.5f, 0, 0.5f), true},
    {"T1 k5000", setting(1, 5000), false},
    {"T2 p0.99", setting(2, 0, 0.99f), false},
    {"T1 k100000", setting(1, 100000), false},
    {"T0.5 p0.8 minp0.1", setting(0.5f, 0, 0.8f, 0.1f), false},
    {"T3 minp0.001", setting(3, 0, 1, 0.001f), false},
    {"T1 k20 p0.7 +pen", setting(1, 20, 0.7f), true},
    {"T0.001", setting(0.001f), false},
    {"T1 k3000 p0.999", setting(1, 3000, 0.999f), false},
    {"T5 p0.95 minp0.0001", setting(5, 0, 0.95f, 0.0001f), false},
};

float roundBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xffff0000u);
}

void fillRow(std::mt19937 &rng, Logits kind, std::span<float> row,
             bool specials) {
  const int V = static_cast<int>(row.size());
  std::normal_distribution<float> normal(0.0f, 2.5f);
  std::uniform_int_distribution<int> any(0, V - 1);
  auto uniform = [&](float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(rng);
  };
  switch (kind) {
  case Logits::Peaked:
  case Logits::Quantized:
    for (float &v : row)
      v = normal(rng);
    for (int i = 0; i < 8; ++i)
      row[static_cast<size_t>(any(rng))] = uniform(6, 16);
    if (kind == Logits::Quantized) // bf16 values: many exact ties
      for (float &v : row)
        v = roundBf16(v);
    break;
  case Logits::Flat:
    for (float &v : row)
      v = uniform(-1, 1);
    break;
  case Logits::Narrow: // > 4096 tokens per 1/32-nat bin: refinement
    for (float &v : row)
      v = uniform(-0.05f, 0.05f);
    break;
  case Logits::Constant:
    for (float &v : row)
      v = 0.5f;
    for (int i = 0; i < 3; ++i)
      row[static_cast<size_t>(any(rng))] = 0.75f;
    break;
  }
  if (specials) {
    row[static_cast<size_t>(any(rng))] = NAN;
    row[static_cast<size_t>(any(rng))] = -INFINITY;
  }
}

/// Runs `rows` rows (settings first, first+1, ...) of `kind` logits through
/// the emulated kernel with `draws` counters and compares with CpuSampler.
void expectSameAsCpu(int V, int rows, int first, Logits kind, int numTop,
                     bool logprobs, int draws, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> logits(static_cast<size_t>(rows) * V);
  std::vector<SamplingRow> params(static_cast<size_t>(rows));
  std::vector<int32_t> offsets = {0}, ids, counts, entries;
  std::vector<uint8_t> inPrompt;
  for (int r = 0; r < rows; ++r) {
    const Setting &s = kSettings[(first + r) % std::size(kSettings)];
    params[r] = s.row;
    params[r].seed = 1000003ull * static_cast<uint64_t>(r + 1);
    if (s.penalties) {
      params[r].repetitionPenalty = 1.3f;
      params[r].presencePenalty = r % 2 ? -2.0f : 0.6f;
      params[r].frequencyPenalty = 0.4f;
    }
    std::span<float> l(logits.data() + static_cast<size_t>(r) * V,
                       static_cast<size_t>(V));
    fillRow(rng, kind, l, r % 5 == 4);
    if (s.penalties) {
      std::vector<uint8_t> used(static_cast<size_t>(V), 0);
      std::vector<int32_t> picked;
      for (int i = 0; i < V && picked.size() < 8; ++i)
        if (l[static_cast<size_t>(i)] > 6.0f) {
          picked.push_back(i);
          used[static_cast<size_t>(i)] = 1;
        }
      while (picked.size() < static_cast<size_t>(std::min(100, V / 2))) {
        const auto id = static_cast<int32_t>(rng() % V);
        if (!used[static_cast<size_t>(id)]) {
          used[static_cast<size_t>(id)] = 1;
          picked.push_back(id);
        }
      }
      for (int32_t id : picked) {
        const auto count = static_cast<int32_t>(rng() % 5);
        const uint8_t prompt = count == 0 ? 1 : static_cast<uint8_t>(rng() % 2);
        ids.push_back(id);
        counts.push_back(count);
        inPrompt.push_back(prompt);
        entries.push_back(id);
        entries.push_back(static_cast<int32_t>(
            static_cast<uint32_t>(count) |
            (prompt ? sol::kernels::kPenaltyInPromptBit : 0u)));
      }
    }
    offsets.push_back(static_cast<int32_t>(ids.size()));
  }
  const PenaltyTokens penalties{offsets, ids, counts, inPrompt};
  std::vector<float> device = logits;
  std::vector<float> saved(std::max<size_t>(ids.size(), 1));
  if (entries.empty())
    entries = {0, 0};
  std::vector<int> outIds(static_cast<size_t>(rows));
  std::vector<float> outLogprobs(static_cast<size_t>(rows));
  std::vector<int> topIds(static_cast<size_t>(std::max(rows * numTop, 1)));
  std::vector<float> topLogprobs(topIds.size());
  sampling::CpuSampler cpu;
  for (int draw = 0; draw < draws; ++draw) {
    for (SamplingRow &p : params)
      p.counter = draw;
    std::fill(outIds.begin(), outIds.end(), -1);
    const sol::kernels::SamplingArgs args{
        .outIds = outIds.data(),
        .outLogprobs = logprobs ? outLogprobs.data() : nullptr,
        .outTopIds = numTop ? topIds.data() : nullptr,
        .outTopLogprobs = numTop ? topLogprobs.data() : nullptr,
        .logits = device.data(),
        .params = reinterpret_cast<const sol::kernels::SamplingParams *>(
            params.data()),
        .penaltyOffsets = offsets.data(),
        .penaltyEntries = reinterpret_cast<const int2 *>(entries.data()),
        .penaltySaved = saved.data(),
        .rows = rows,
        .vocab = V,
        .numTop = numTop};
    cuda_emulation::launch(rows, sol::kernels::kSamplingThreads,
                           [&] { sol::kernels::sample_rows(args); });
    for (int r = 0; r < rows; ++r) {
      const std::span<const float> l(logits.data() + static_cast<size_t>(r) * V,
                                     static_cast<size_t>(V));
      const int32_t expected =
          cpu.sample(l, params[r],
                     sampling::rowPenalties(penalties, static_cast<size_t>(r)));
      const std::string what = cat(
          "V=", V, " row ", r, " (",
          kSettings[(first + r) % std::size(kSettings)].label, ") draw ", draw);
      ASSERT_EQ(outIds[r], expected) << what;
      if (logprobs) {
        EXPECT_NEAR(outLogprobs[r], sampling::CpuSampler::logprob(l, expected),
                    1e-5)
            << what;
      }
      if (numTop > 0) {
        std::vector<int32_t> ti(static_cast<size_t>(numTop));
        std::vector<float> tl(ti.size());
        sampling::CpuSampler::topLogprobs(l, ti, tl);
        for (int j = 0; j < numTop; ++j) {
          ASSERT_EQ(topIds[static_cast<size_t>(r * numTop + j)], ti[j])
              << what << " top " << j;
          EXPECT_NEAR(topLogprobs[static_cast<size_t>(r * numTop + j)], tl[j],
                      1e-5)
              << what << " top " << j;
        }
      }
    }
  }
  EXPECT_EQ(std::memcmp(device.data(), logits.data(), logits.size() * 4), 0)
      << "the kernel did not restore the penalised logits";
}

TEST(SamplingEmulation, PeakedRowsEverySetting) {
  expectSameAsCpu(3000, std::size(kSettings), 0, Logits::Peaked, 5, true, 1, 1);
}

TEST(SamplingEmulation, QuantizedRowsWithTies) {
  expectSameAsCpu(3000, std::size(kSettings), 0, Logits::Quantized, 5, false, 1,
                  2);
}

TEST(SamplingEmulation, FlatRows) {
  expectSameAsCpu(3000, std::size(kSettings), 0, Logits::Flat, 0, false, 1, 3);
}

TEST(SamplingEmulation, NearlyConstantRowsTakeTheTieAndFallbackPaths) {
  expectSameAsCpu(3000, std::size(kSettings), 0, Logits::Constant, 5, true, 1,
                  4);
}

TEST(SamplingEmulation, CrowdedBinsAreRefined) {
  // Settings 9..12 and 16..17: thresholds far down a flat distribution.
  expectSameAsCpu(20000, 4, 9, Logits::Narrow, 0, false, 1, 5);
  expectSameAsCpu(20000, 2, 16, Logits::Narrow, 0, false, 1, 6);
}

TEST(SamplingEmulation, OddAndTinyVocabularies) {
  // Not a multiple of 4: the scalar loads.
  expectSameAsCpu(1001, std::size(kSettings), 0, Logits::Peaked, 3, true, 1, 7);
  expectSameAsCpu(29, 8, 2, Logits::Peaked, 20, true, 1, 8);
}

} // namespace

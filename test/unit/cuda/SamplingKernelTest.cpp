//===- SamplingKernelTest.cpp - Sampling.cuh agrees with the host side ----===//
//
// The sampling kernel repeats host definitions it must agree with bit for
// bit: the layout of sol::SamplingRow, the penalty-entry encoding, the
// counter-based RNG and the fixed-point mass scale. NVRTC evaluates
// static_asserts comparing the kernel's constexpr versions with values the
// host computes here (no GPU needed). The float32 steps are not constexpr;
// sol-kernel-check compares the kernel's chosen tokens with CpuSampler's on
// a GPU.
//
//===----------------------------------------------------------------------===//

#include "NvrtcTestSupport.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "runtime/cuda/KernelSpecs.h"
#include "runtime/executor/Executor.h"
#include "runtime/sampling/Random.h"
#include "runtime/sampling/SamplingMath.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>

namespace sol::test {
namespace {

std::string hexDouble(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

nvrtc::KernelSource sourceOf(const std::string &code) {
  nvrtc::KernelSource source;
  source.name = "sampling_consistency.cu";
  source.code = code;
  auto headers = nvrtc::embeddedKernelHeaders();
  source.headers.assign(headers.begin(), headers.end());
  return source;
}

TEST(SamplingKernel, HostDefinitionsMatchTheKernel) {
  std::string reason;
  nvrtc::NvrtcOptions options;
  options.useCache = false;
  auto compiler = makeCompiler(options, reason);
  if (!compiler)
    GTEST_SKIP() << "NVRTC not available: " << reason;

  using cuda::SamplingSpec;
  std::string code = "#include \"Sampling.cuh\"\nusing namespace "
                     "sol::kernels;\n";
  code += cat(
      "static_assert(kSamplingThreads == ", SamplingSpec::kThreads, ");\n",
      "static_assert(kSamplingThreads == kSamplingBins);\n",
      "static_assert(kSamplingMaxTop == ", kMaxTopLogprobs, ");\n",
      "static_assert(sizeof(SamplingParams) == ", sizeof(SamplingRow), ");\n",
      "static_assert(sizeof(SamplingParams) == ", SamplingSpec::kParamsBytes,
      ");\n",
      "static_assert(kPenaltyInPromptBit == ", SamplingSpec::kInPromptBit,
      "u);\n", "static_assert(kSamplingBiasBit == ", SamplingSpec::kBiasBit,
      "u);\n",
      "static_assert(sizeof(int2) == ", SamplingSpec::kPenaltyEntryBytes,
      ");\n",
      "static_assert(kSamplingMassScale == ", hexDouble(sampling::kMassScale),
      "f);\n");
  // NVRTC has no offsetof: the fields' order and types (aggregate
  // initialisation, no narrowing allowed) and the size pin the layout; the
  // host side's offsets are static_asserted in CudaExecutor.cpp.
  code += "constexpr SamplingParams kP{1.5f, 2, 0.25f, 0.125f, 3.5f, 4.5f, "
          "5.5f, 0, 6ull, 7, 0};\n"
          "static_assert(kP.temperature == 1.5f && kP.top_k == 2 && "
          "kP.top_p == 0.25f && kP.min_p == 0.125f && "
          "kP.repetition_penalty == 3.5f && kP.presence_penalty == 4.5f && "
          "kP.frequency_penalty == 5.5f && kP.seed == 6ull && "
          "kP.counter == 7);\n";
  static_assert(offsetof(SamplingRow, temperature) == 0 &&
                offsetof(SamplingRow, topK) == 4 &&
                offsetof(SamplingRow, topP) == 8 &&
                offsetof(SamplingRow, minP) == 12 &&
                offsetof(SamplingRow, repetitionPenalty) == 16 &&
                offsetof(SamplingRow, presencePenalty) == 20 &&
                offsetof(SamplingRow, frequencyPenalty) == 24 &&
                offsetof(SamplingRow, seed) == 32 &&
                offsetof(SamplingRow, counter) == 40);
  const std::pair<uint64_t, uint32_t> draws[] = {
      {0, 0},
      {1, 1},
      {42, 7},
      {0xdeadbeefcafef00dull, 123456789u},
      {~0ull, ~0u}};
  for (const auto &[seed, counter] : draws)
    code += cat("static_assert(samplingRandomBits(", seed, "ull, ", counter,
                "u) == ", sampling::randomBits(seed, counter), "ull);\n",
                "static_assert(samplingUniform(", seed, "ull, ", counter,
                "u) == ", hexDouble(sampling::uniform(seed, counter)), ");\n");
  EXPECT_NO_THROW(compiler->compile(sourceOf(code))) << code;

  // The same machinery must catch a difference.
  EXPECT_THROW(compiler->compile(sourceOf(
                   "#include \"Sampling.cuh\"\nstatic_assert(sol::kernels::"
                   "samplingRandomBits(1, 1) == 0ull, \"mismatch\");\n")),
               sol::Error);
}

TEST(SamplingKernel, LaunchGeometry) {
  const cuda::SamplingSpec spec;
  EXPECT_EQ(spec.instance().nameExpression, "sol::kernels::sample_rows");
  EXPECT_EQ(spec.instance().header, "Sampling.cuh");
  const cuda::LaunchDims dims = spec.dims(64);
  EXPECT_EQ(dims.grid.x, 64u);
  EXPECT_EQ(dims.block.x, 1024u);
  EXPECT_EQ(dims.sharedBytes, 0u); // static shared memory, under 48 KB
  EXPECT_THROW(spec.dims(0), sol::Error);
}

} // namespace
} // namespace sol::test

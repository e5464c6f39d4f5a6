//===- KernelSourceBuilderTest.cpp - Instances grouped into sources -------===//

#include "codegen/nvrtc/KernelSourceBuilder.h"
#include "codegen/nvrtc/EmbeddedKernelHeaders.h"
#include "runtime/support/Error.h"

#include <gtest/gtest.h>

namespace sol::test {
namespace {

using cuda::KernelInstance;

TEST(KernelSourceBuilder, GroupsByHeaderChunksAndDeduplicates) {
  const std::vector<KernelInstance> instances = {
      {"RmsNorm.cuh", "sol::kernels::rms_norm<2048>"},
      {"Swiglu.cuh", "sol::kernels::swiglu<8192>"},
      {"RmsNorm.cuh", "sol::kernels::rms_norm<128>"},
      {"RmsNorm.cuh", "sol::kernels::rms_norm<2048>"}, // duplicate
      {"RmsNorm.cuh", "sol::kernels::rms_norm<4096>"},
  };
  const auto sources = nvrtc::buildKernelSources(instances, 2);
  ASSERT_EQ(sources.size(), 3u);
  EXPECT_EQ(sources[0].name, "RmsNorm_0.cu");
  EXPECT_EQ(sources[0].code, "#include \"RmsNorm.cuh\"\n");
  EXPECT_EQ(sources[0].nameExpressions,
            (std::vector<std::string>{"sol::kernels::rms_norm<128>",
                                      "sol::kernels::rms_norm<2048>"}));
  EXPECT_EQ(sources[1].name, "RmsNorm_1.cu");
  EXPECT_EQ(sources[1].nameExpressions,
            (std::vector<std::string>{"sol::kernels::rms_norm<4096>"}));
  EXPECT_EQ(sources[2].name, "Swiglu_0.cu");
  EXPECT_EQ(sources[2].headers.size(), nvrtc::embeddedKernelHeaders().size());
}

TEST(KernelSourceBuilder, WgmmaKernelsCompileForTheArchSpecificTarget) {
  const std::vector<KernelInstance> instances = {
      {"LinearWgmmaQuant.cuh", "sol::kernels::linear_wgmma_quant<x>"},
      {"LinearGemmQuant.cuh", "sol::kernels::linear_gemm_quant<x>"}};
  const auto sources = nvrtc::buildKernelSources(instances);
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0].name, "LinearGemmQuant_0.cu");
  EXPECT_FALSE(sources[0].archSpecific);
  EXPECT_EQ(sources[1].name, "LinearWgmmaQuant_0.cu");
  EXPECT_TRUE(sources[1].archSpecific);
}

TEST(KernelSourceBuilder, UnknownHeaderIsAnError) {
  const std::vector<KernelInstance> instances = {
      {"Missing.cuh", "sol::kernels::missing<1>"}};
  try {
    nvrtc::buildKernelSources(instances);
    FAIL() << "accepted an unknown header";
  } catch (const sol::Error &e) {
    EXPECT_NE(std::string(e.what()).find("Missing.cuh"), std::string::npos);
  }
}

} // namespace
} // namespace sol::test

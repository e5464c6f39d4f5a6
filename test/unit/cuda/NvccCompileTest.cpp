//===- NvccCompileTest.cpp - The kernel templates compile with nvcc too ---===//
//
// The .cuh files must compile under nvcc as well as NVRTC (different
// front-end defaults, host pass). One instantiation of every template is
// compiled to an sm_90 cubin; the few-row linears' PTX is checked for how
// they read x.
//
//===----------------------------------------------------------------------===//

#include "NvrtcTestSupport.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace sol::test {
namespace {

/// nvcc from configure time, or empty when there is none.
std::string nvccPath() {
  const std::string nvcc = SOL_NVCC_PATH;
  if (nvcc.empty() || nvcc.find("NOTFOUND") != std::string::npos ||
      !std::filesystem::exists(nvcc))
    return {};
  return nvcc;
}

std::filesystem::path kernelDir() {
  const char *root = std::getenv("SOL_SOURCE_DIR");
  return std::filesystem::path(root ? root : ".") / "codegen" / "kernels";
}

TEST(NvccCompile, EveryKernelTemplateCompiles) {
  const std::string nvcc = nvccPath();
  if (nvcc.empty())
    GTEST_SKIP() << "nvcc not found at configure time";
  const auto kernels = kernelDir();

  TempDir dir("sol-nvcc");
  const auto source = dir.path() / "instances.cu";
  std::ofstream(source) << R"(
#include "Argmax.cuh"
#include "Embedding.cuh"
#include "GatherRows.cuh"
#include "LinearGemm.cuh"
#include "LinearGemv.cuh"
#include "LinearSkinny.cuh"
#include "PagedAttention.cuh"
#include "PrefillAttention.cuh"
#include "RmsNorm.cuh"
#include "RopeKvWrite.cuh"
#include "Sampling.cuh"
#include "Swiglu.cuh"
using namespace sol::kernels;
void *const kInstances[] = {
    (void *)&argmax,
    (void *)&embedding<2048>,
    (void *)&gather_rows<2048>,
    (void *)&linear_gemm<128, 128, 2, 4, 3, __nv_bfloat16, true, 0, false>,
    (void *)&linear_gemm<64, 128, 2, 2, 4, __nv_bfloat16, false, 1, false>,
    (void *)&linear_gemm<128, 128, 2, 4, 3, __nv_bfloat16, true, 2, false>,
    (void *)&linear_gemm<64, 128, 2, 2, 4, float, false, 0, true>,
    (void *)&linear_splitk_finalize<__nv_bfloat16, true, 2>,
    (void *)&linear_splitk_finalize<float, false, 0>,
    (void *)&linear_gemv<2048, 1, 4, 2, float, false, 0, false>,
    (void *)&linear_gemv<2048, 1, 4, 8, float, false, 0, true>,
    (void *)&linear_gemv<8192, 8, 2, 8, __nv_bfloat16, false, 1, false>,
    (void *)&linear_gemv<2048, 4, 2, 8, __nv_bfloat16, true, 2, true>,
    (void *)&linear_gemv<2048, 1, 2, 4, __nv_bfloat16, false, 1, false, true>,
    (void *)&linear_skinny<2048, 8, 1, 8, __nv_bfloat16, false, 0, true>,
    (void *)&linear_skinny<2048, 16, 2, 8, __nv_bfloat16, true, 2, true>,
    (void *)&linear_skinny<8192, 16, 1, 8, __nv_bfloat16, false, 1, false>,
    (void *)&linear_skinny<2048, 16, 2, 4, float, false, 0, true>,
    (void *)&linear_skinny<72, 16, 1, 1, float, true, 0, false>,
    (void *)&linear_skinny<2048, 8, 2, 8, __nv_bfloat16, false, 0, true, true>,
    (void *)&paged_attention<32, 8, 64, 16, false>,
    (void *)&paged_attention<32, 8, 64, 32, true>,
    (void *)&paged_attention<28, 4, 128, 16, true>,
    (void *)&paged_attention<32, 8, 64, 16, true, true>,
    (void *)&paged_attention<14, 2, 64, 32, true, true>,
    (void *)&paged_attention_fp8<32, 8, 64, 32, false>,
    (void *)&paged_attention_fp8<32, 8, 64, 32, true>,
    (void *)&paged_attention_fp8<28, 4, 128, 16, true>,
    (void *)&paged_attention_fp8<64, 8, 128, 16, true>,
    (void *)&paged_attention_fp8<32, 8, 64, 32, true, true>,
    (void *)&paged_attention_fp8<28, 4, 128, 16, true, true>,
    (void *)&prefill_attention<32, 8, 64, 16>,
    (void *)&prefill_attention_fp8<32, 8, 64, 32>,
    (void *)&prefill_attention_fp8<28, 4, 128, 16>,
    (void *)&rms_norm<128>,
    (void *)&rms_norm<4096>,
    (void *)&rope_kv_write<16, 8, 128, 16>,
    (void *)&rope_kv_write_fp8<16, 8, 128, 32>,
    (void *)&sample_rows,
    (void *)&swiglu<8192>,
};
)";
  const auto log = dir.path() / "nvcc.log";
  const std::string command =
      "'" + nvcc + "' -std=c++17 -arch=sm_90 -cubin -I'" + kernels.string() +
      "' -o '" + (dir.path() / "instances.cubin").string() + "' '" +
      source.string() + "' > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
  EXPECT_EQ(status, 0) << command << "\n" << output;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "instances.cubin"));
}

// linear_gemv and linear_skinny without the norm prologue read x, which the
// previous kernel writes while they run (programmatic dependent launch).
// ld.global.nc promises read-only data, and ptxas moved such an x load above
// griddepcontrol.wait (wrong logits on the H200): their only ld.global.nc
// may be the weights' L1::no_allocate loads.
TEST(NvccCompile, FewRowLinearsReadXWithoutNonCoherentLoads) {
  const std::string nvcc = nvccPath();
  if (nvcc.empty())
    GTEST_SKIP() << "nvcc not found at configure time";
  TempDir dir("sol-nvcc-ptx");
  const auto source = dir.path() / "x.cu";
  std::ofstream(source) << R"(
#include "LinearGemv.cuh"
#include "LinearSkinny.cuh"
using namespace sol::kernels;
void *const kInstances[] = {
    (void *)&linear_gemv<2048, 1, 2, 4, __nv_bfloat16, false, 1, false, true>,
    (void *)&linear_gemv<8192, 8, 2, 8, __nv_bfloat16, false, 1, false>,
    (void *)&linear_skinny<2048, 8, 2, 8, __nv_bfloat16, false, 0, false, true>,
    (void *)&linear_skinny<8192, 8, 1, 8, __nv_bfloat16, false, 1, false>,
};
)";
  const auto ptx = dir.path() / "x.ptx";
  const std::string command = "'" + nvcc + "' -std=c++17 -arch=sm_90 -ptx -I'" +
                              kernelDir().string() + "' -o '" + ptx.string() +
                              "' '" + source.string() + "' > '" +
                              (dir.path() / "nvcc.log").string() + "' 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(ptx);
  int entries = 0, xLoads = 0, nonCoherent = 0;
  for (std::string line; std::getline(in, line);) {
    entries += line.find(".entry") != std::string::npos;
    if (line.find("ld.global.v4") != std::string::npos)
      ++xLoads;
    if (line.find("ld.global.nc") != std::string::npos &&
        line.find("L1::no_allocate") == std::string::npos) {
      ++nonCoherent;
      ADD_FAILURE() << "non-coherent load that is not a weight's: " << line;
    }
  }
  EXPECT_EQ(entries, 4);
  EXPECT_GT(xLoads, 0); // x comes through loadActivation16's ld.global
  EXPECT_EQ(nonCoherent, 0);
}

} // namespace
} // namespace sol::test

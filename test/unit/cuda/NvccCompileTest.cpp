//===- NvccCompileTest.cpp - The kernel templates compile with nvcc too ---===//
//
// The .cuh files must compile under nvcc as well as NVRTC (different
// front-end defaults, host pass). One instantiation of every template is
// compiled to an sm_90 cubin.
//
//===----------------------------------------------------------------------===//

#include "NvrtcTestSupport.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace sol::test {
namespace {

TEST(NvccCompile, EveryKernelTemplateCompiles) {
  const std::string nvcc = SOL_NVCC_PATH;
  if (nvcc.empty() || nvcc.find("NOTFOUND") != std::string::npos ||
      !std::filesystem::exists(nvcc))
    GTEST_SKIP() << "nvcc not found at configure time";
  const char *root = std::getenv("SOL_SOURCE_DIR");
  const auto kernels =
      std::filesystem::path(root ? root : ".") / "codegen" / "kernels";

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
    (void *)&paged_attention_fp8<32, 8, 64, 32, false>,
    (void *)&paged_attention_fp8<32, 8, 64, 32, true>,
    (void *)&paged_attention_fp8<28, 4, 128, 16, true>,
    (void *)&paged_attention_fp8<64, 8, 128, 16, true>,
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

} // namespace
} // namespace sol::test

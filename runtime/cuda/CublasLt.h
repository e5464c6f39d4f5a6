//===- CublasLt.h - GEMMs of more than 8 rows through cuBLASLt ------------===//
//
// Our mma.sync GEMM (LinearGemm.cuh) reaches ~330 TFLOP/s on an H200 and
// streams weights at about half the bandwidth at 16-64 rows; Hopper's wgmma
// and TMA do better on both, and NVIDIA's cuBLASLt has them. As with the
// driver, the library is opened with dlopen (libcublasLt.so.13, then .12) so
// solrun starts without it and the build needs only its header; without it,
// our own kernels run.
//
// Only y = x . W^T (+ bias) in bf16 with fp32 accumulation, optionally
// accumulating into y (beta = 1: the residual add of o_proj and down_proj).
// Row-major x [M, K], W [N, K], y [M, N] are the column-major problem
// y^T = W . x^T: A = W (transposed), B = x, m = N, n = M, k = K. The best
// algorithm of the library's heuristic is cached per problem shape.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace sol::cuda {

class CublasLt {
public:
  /// Loads the library and creates a handle; nullptr, with `why` set, when
  /// no usable cuBLASLt is installed (or SOL_DISABLE_CUBLASLT=1).
  static std::unique_ptr<CublasLt> load(std::string &why);
  ~CublasLt();
  CublasLt(const CublasLt &) = delete;
  CublasLt &operator=(const CublasLt &) = delete;

  /// y = x . W^T + bias (+ y when `accumulate`), all bf16 (bias may be 0).
  /// `workspace` of `workspaceBytes` device bytes. Throws sol::Error naming
  /// the failing call.
  void linear(CUstream stream, CUdeviceptr y, CUdeviceptr x, CUdeviceptr w,
              CUdeviceptr bias, int m, int n, int k, bool accumulate,
              CUdeviceptr workspace, std::size_t workspaceBytes);

  /// Workspace the executor allocates for it.
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;

  struct Api;

private:
  CublasLt() = default;
  struct Plan;
  const Plan &plan(int m, int n, int k, bool bias, bool accumulate,
                   std::size_t workspaceBytes);

  std::unique_ptr<Api> api_;
  void *handle_ = nullptr; // cublasLtHandle_t
  std::map<std::tuple<int, int, int, bool, bool>, std::unique_ptr<Plan>> plans_;
};

} // namespace sol::cuda

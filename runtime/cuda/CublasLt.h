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
// accumulating into y (beta = 1: the residual add of o_proj and down_proj),
// its W8A8 form over E4M3 codes with a scale per 128 k of each feature
// and each token (fp8 plans' GEMMs of many rows), and bf16 operands with a
// float32 result (solc's AWQ calibration on the GPU).
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

  /// W8A8: y = sum over 128-k blocks b of (xq . wq^T)_b[t][n] *
  /// wScales[b][n] * xScales[b][t] + bias (+ y when `accumulate`), xq
  /// [m, k] and wq [n, k] E4M3 codes, the scales fp32 [k / 128, n] and
  /// [k / 128, m] (cuBLASLt's VEC128_32F mode, features or tokens fastest;
  /// fp32 sums on Hopper's fp8 tensor cores), y and bias bf16; m a multiple
  /// of 16. Check fp8Refusal first.
  void fp8Linear(CUstream stream, CUdeviceptr y, CUdeviceptr xq,
                 CUdeviceptr xScales, CUdeviceptr wq, CUdeviceptr wScales,
                 CUdeviceptr bias, int m, int n, int k, bool accumulate,
                 CUdeviceptr workspace, std::size_t workspaceBytes);
  /// y = x . W^T with x and W bf16, fp32 sums and a float32 y (AWQ
  /// calibration's GEMMs: operands rounded as the bf16 model rounds them,
  /// errors summed without rounding the products' sums).
  void bf16LinearF32Out(CUstream stream, CUdeviceptr y, CUdeviceptr x,
                        CUdeviceptr w, int m, int n, int k,
                        CUdeviceptr workspace, std::size_t workspaceBytes);
  /// Why fp8Linear cannot run an [n, k] weight (with a bias,
  /// accumulating), or "" when it can: N and K multiples of 16 and an
  /// algorithm for kFp8ProbeRows rows (none on GPUs without fp8 tensor
  /// cores, or a cuBLASLt without outer-vector scales).
  /// `scales`: any device address (the query needs one).
  std::string fp8Refusal(int n, int k, bool bias, bool accumulate,
                         CUdeviceptr scales, std::size_t workspaceBytes);
  static constexpr int kFp8ProbeRows = 16;

  /// Makes the bf16 linear of this shape (no bias) run the library
  /// heuristic's `index`-th algorithm from now on (0, its first, is what
  /// linear() takes by default) and returns how many the heuristic offers,
  /// at most kSweepAlgorithms; an index past them changes nothing. For
  /// kernel sweeps (sol-kernel-check cublas_sweep), which time each.
  int chooseLinearAlgorithm(int m, int n, int k, bool accumulate, int index,
                            std::size_t workspaceBytes);
  static constexpr int kSweepAlgorithms = 16;

  /// Workspace the executor allocates for it.
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;

  struct Api;

private:
  CublasLt() = default;
  struct Plan;
  /// The element types of a problem: bf16 in and out, E4M3 in with block
  /// scales and bf16 out, or bf16 in and float32 out.
  enum class Precision { Bf16, Fp8, Bf16F32Out };
  /// The cached plan of a problem; nullptr where the library has no
  /// algorithm for it.
  const Plan *plan(int m, int n, int k, bool bias, bool accumulate,
                   Precision precision, std::size_t workspaceBytes,
                   CUdeviceptr scales = 0);
  void run(const Plan &p, CUstream stream, CUdeviceptr y, CUdeviceptr x,
           CUdeviceptr w, CUdeviceptr bias, bool accumulate,
           CUdeviceptr workspace, std::size_t workspaceBytes);

  std::unique_ptr<Api> api_;
  void *handle_ = nullptr; // cublasLtHandle_t
  std::string fp8Refusal_; // the last fp8 heuristic query's refusal
  std::map<std::tuple<int, int, int, bool, bool, Precision>,
           std::unique_ptr<Plan>>
      plans_;
};

} // namespace sol::cuda

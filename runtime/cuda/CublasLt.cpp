//===- CublasLt.cpp - GEMMs of more than 8 rows through cuBLASLt ----------===//
#include "runtime/cuda/CublasLt.h"

#include "runtime/support/Error.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <span>
#include <utility>

namespace sol::cuda {

struct CublasLt::Api {
  void *library = nullptr;
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtDestroy) destroy;
  decltype(&::cublasLtGetStatusString) statusString;
  decltype(&::cublasLtMatmulDescCreate) descCreate;
  decltype(&::cublasLtMatmulDescDestroy) descDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) descSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) layoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) layoutDestroy;
  decltype(&::cublasLtMatmulPreferenceCreate) preferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) preferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preferenceSetAttribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algoGetHeuristic;
  decltype(&::cublasLtMatmul) matmul;
};

/// The descriptors and chosen algorithm of one problem shape.
struct CublasLt::Plan {
  const Api *api = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (c)
      api->layoutDestroy(c);
    if (b)
      api->layoutDestroy(b);
    if (a)
      api->layoutDestroy(a);
    if (desc)
      api->descDestroy(desc);
  }
};

namespace {

void check(const CublasLt::Api &api, cublasStatus_t status, const char *call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(call, " failed: ", api.statusString(status), " (cuBLASLt status ",
         static_cast<int>(status),
         "); SOL_DISABLE_CUBLASLT=1 runs Sol's own "
         "GEMM kernels instead");
}

/// Asks the library's heuristic for its best algorithms (as many as
/// `results` holds) for a problem's descriptors within `workspaceBytes`;
/// `found` says how many it gave.
cublasStatus_t
queryAlgorithms(const CublasLt::Api &a, void *handle, cublasLtMatmulDesc_t desc,
                cublasLtMatrixLayout_t w, cublasLtMatrixLayout_t x,
                cublasLtMatrixLayout_t y, std::size_t workspaceBytes,
                std::span<cublasLtMatmulHeuristicResult_t> results,
                int &found) {
  found = 0;
  cublasLtMatmulPreference_t preference = nullptr;
  check(a, a.preferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t limit = workspaceBytes;
  cublasStatus_t status = a.preferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit,
      sizeof limit);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = a.algoGetHeuristic(
        static_cast<cublasLtHandle_t>(handle), desc, w, x, y, y, preference,
        static_cast<int>(results.size()), results.data(), &found);
  a.preferenceDestroy(preference);
  return status;
}

template <typename Fn> bool resolve(void *library, Fn &fn, const char *name) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  return fn != nullptr;
}

} // namespace

std::unique_ptr<CublasLt> CublasLt::load(std::string &why) {
  if (const char *v = std::getenv("SOL_DISABLE_CUBLASLT");
      v && std::string(v) != "0" && std::string(v) != "") {
    why = "disabled by SOL_DISABLE_CUBLASLT";
    return nullptr;
  }
  std::string cudaHome =
      std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda";
  void *library = nullptr;
  for (const std::string &name :
       {std::string("libcublasLt.so.13"), cudaHome + "/lib64/libcublasLt.so.13",
        std::string("libcublasLt.so.12"),
        cudaHome + "/lib64/libcublasLt.so.12"}) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library)
      break;
  }
  if (!library) {
    why = "libcublasLt.so.13 (or .12) not found";
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->library = library;
  Api &a = *api;
  const bool ok =
      resolve(library, a.create, "cublasLtCreate") &&
      resolve(library, a.destroy, "cublasLtDestroy") &&
      resolve(library, a.statusString, "cublasLtGetStatusString") &&
      resolve(library, a.descCreate, "cublasLtMatmulDescCreate") &&
      resolve(library, a.descDestroy, "cublasLtMatmulDescDestroy") &&
      resolve(library, a.descSetAttribute, "cublasLtMatmulDescSetAttribute") &&
      resolve(library, a.layoutCreate, "cublasLtMatrixLayoutCreate") &&
      resolve(library, a.layoutDestroy, "cublasLtMatrixLayoutDestroy") &&
      resolve(library, a.preferenceCreate, "cublasLtMatmulPreferenceCreate") &&
      resolve(library, a.preferenceDestroy,
              "cublasLtMatmulPreferenceDestroy") &&
      resolve(library, a.preferenceSetAttribute,
              "cublasLtMatmulPreferenceSetAttribute") &&
      resolve(library, a.algoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic") &&
      resolve(library, a.matmul, "cublasLtMatmul");
  if (!ok) {
    why = "the installed cuBLASLt lacks an entry point Sol uses";
    dlclose(library);
    return nullptr;
  }
  std::unique_ptr<CublasLt> lt(new CublasLt());
  lt->api_ = std::move(api);
  cublasLtHandle_t handle = nullptr;
  if (lt->api_->create(&handle) != CUBLAS_STATUS_SUCCESS) {
    why = "cublasLtCreate failed";
    return nullptr;
  }
  lt->handle_ = handle;
  return lt;
}

CublasLt::~CublasLt() {
  plans_.clear();
  if (handle_)
    api_->destroy(static_cast<cublasLtHandle_t>(handle_));
  // The library stays loaded: unloading it at exit races its own cleanup.
}

const CublasLt::Plan *CublasLt::plan(int m, int n, int k, bool bias,
                                     bool accumulate, Precision precision,
                                     std::size_t workspaceBytes,
                                     CUdeviceptr scales) {
  auto key = std::make_tuple(m, n, k, bias, accumulate, precision);
  const bool fp8 = precision == Precision::Fp8;
  if (auto it = plans_.find(key); it != plans_.end())
    return it->second.get();
  const Api &a = *api_;
  auto p = std::make_unique<Plan>();
  p->api = &a;
  check(a, a.descCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  const cublasOperation_t transA = CUBLAS_OP_T, transB = CUBLAS_OP_N;
  check(a,
        a.descSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transA,
                           sizeof transA),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(a,
        a.descSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &transB,
                           sizeof transB),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (fp8) {
    // A scale per 128 k of each feature (A) and of each token (B): Hopper
    // has no outer-vector mode, and the blocks of a row share its scale.
    // The heuristic refuses block scales without pointers: a device
    // address stands in until each call sets the real ones.
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    const void *pointer = reinterpret_cast<const void *>(scales);
    for (auto [modeAttribute, pointerAttribute] :
         {std::pair{CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                    CUBLASLT_MATMUL_DESC_A_SCALE_POINTER},
          std::pair{CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                    CUBLASLT_MATMUL_DESC_B_SCALE_POINTER}}) {
      check(a, a.descSetAttribute(p->desc, modeAttribute, &mode, sizeof mode),
            "cublasLtMatmulDescSetAttribute(SCALE_MODE)");
      check(a,
            a.descSetAttribute(p->desc, pointerAttribute, &pointer,
                               sizeof pointer),
            "cublasLtMatmulDescSetAttribute(SCALE_POINTER)");
    }
  }
  if (bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t biasType = CUDA_R_16BF;
    check(a,
          a.descSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                             sizeof epilogue),
          "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    check(a,
          a.descSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                             &biasType, sizeof biasType),
          "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  }
  // Column-major: A = W as K x N (transposed to N x K), B = x as K x M,
  // C = D = y as N x M.
  const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const cudaDataType_t out =
      precision == Precision::Bf16F32Out ? CUDA_R_32F : CUDA_R_16BF;
  check(a, a.layoutCreate(&p->a, in, k, n, k), "cublasLtMatrixLayoutCreate(W)");
  check(a, a.layoutCreate(&p->b, in, k, m, k), "cublasLtMatrixLayoutCreate(x)");
  check(a, a.layoutCreate(&p->c, out, n, m, n),
        "cublasLtMatrixLayoutCreate(y)");

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      queryAlgorithms(a, handle_, p->desc, p->a, p->b, p->c, workspaceBytes,
                      std::span(&result, 1), found);
  // A library without this fp8 form (block scales came with cuBLAS 12.9)
  // answers "not supported": fp8Refusal says why.
  if (fp8 && (status == CUBLAS_STATUS_NOT_SUPPORTED ||
              status == CUBLAS_STATUS_INVALID_VALUE)) {
    fp8Refusal_ = a.statusString(status);
    found = 0;
  } else {
    check(a, status, "cublasLtMatmulAlgoGetHeuristic");
    if (found < 1)
      fp8Refusal_ = "no algorithm";
  }
  if (found < 1) {
    plans_.emplace(key, nullptr);
    return nullptr;
  }
  p->algo = result.algo;
  return plans_.emplace(key, std::move(p)).first->second.get();
}

int CublasLt::chooseLinearAlgorithm(int m, int n, int k, bool accumulate,
                                    int index, std::size_t workspaceBytes) {
  if (!plan(m, n, k, false, accumulate, Precision::Bf16, workspaceBytes))
    return 0;
  Plan &p =
      *plans_.at(std::make_tuple(m, n, k, false, accumulate, Precision::Bf16));
  cublasLtMatmulHeuristicResult_t results[kSweepAlgorithms] = {};
  int found = 0;
  check(*api_,
        queryAlgorithms(*api_, handle_, p.desc, p.a, p.b, p.c, workspaceBytes,
                        results, found),
        "cublasLtMatmulAlgoGetHeuristic");
  if (index >= 0 && index < found)
    p.algo = results[index].algo;
  return found;
}

std::string CublasLt::fp8Refusal(int n, int k, bool bias, bool accumulate,
                                 CUdeviceptr scales,
                                 std::size_t workspaceBytes) {
  if (n % 16 != 0 || k % 128 != 0)
    return cat("its fp8 GEMMs need N a multiple of 16 and K of 128, not ", n,
               " x ", k);
  if (plan(kFp8ProbeRows, n, k, bias, accumulate, Precision::Fp8,
           workspaceBytes, scales))
    return "";
  return cat("cuBLASLt has no fp8 GEMM with block scales for ", n, " x ", k,
             bias ? " with a bias" : "", accumulate ? ", accumulating" : "",
             " (", fp8Refusal_, ")");
}

void CublasLt::run(const Plan &p, CUstream stream, CUdeviceptr y, CUdeviceptr x,
                   CUdeviceptr w, CUdeviceptr bias, bool accumulate,
                   CUdeviceptr workspace, std::size_t workspaceBytes) {
  const Api &a = *api_;
  if (bias != 0) {
    const void *biasPointer = reinterpret_cast<const void *>(bias);
    check(a,
          a.descSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                             &biasPointer, sizeof biasPointer),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  void *out = reinterpret_cast<void *>(y);
  check(a,
        a.matmul(static_cast<cublasLtHandle_t>(handle_), p.desc, &alpha,
                 reinterpret_cast<const void *>(w), p.a,
                 reinterpret_cast<const void *>(x), p.b, &beta, out, p.c, out,
                 p.c, &p.algo, reinterpret_cast<void *>(workspace),
                 workspaceBytes, reinterpret_cast<cudaStream_t>(stream)),
        "cublasLtMatmul");
}

void CublasLt::linear(CUstream stream, CUdeviceptr y, CUdeviceptr x,
                      CUdeviceptr w, CUdeviceptr bias, int m, int n, int k,
                      bool accumulate, CUdeviceptr workspace,
                      std::size_t workspaceBytes) {
  const Plan *p =
      plan(m, n, k, bias != 0, accumulate, Precision::Bf16, workspaceBytes);
  if (!p)
    fail("cuBLASLt has no algorithm for a ", m, " x ", n, " x ", k,
         " bf16 GEMM; SOL_DISABLE_CUBLASLT=1 runs Sol's own GEMM kernels "
         "instead");
  run(*p, stream, y, x, w, bias, accumulate, workspace, workspaceBytes);
}

void CublasLt::bf16LinearF32Out(CUstream stream, CUdeviceptr y, CUdeviceptr x,
                                CUdeviceptr w, int m, int n, int k,
                                CUdeviceptr workspace,
                                std::size_t workspaceBytes) {
  const Plan *p =
      plan(m, n, k, false, false, Precision::Bf16F32Out, workspaceBytes);
  if (!p)
    fail("cuBLASLt has no algorithm for a ", m, " x ", n, " x ", k,
         " GEMM of bf16 operands with a float32 result; calibrate on the "
         "CPU instead (solc --calib-device cpu)");
  run(*p, stream, y, x, w, 0, false, workspace, workspaceBytes);
}

void CublasLt::fp8Linear(CUstream stream, CUdeviceptr y, CUdeviceptr xq,
                         CUdeviceptr xScales, CUdeviceptr wq,
                         CUdeviceptr wScales, CUdeviceptr bias, int m, int n,
                         int k, bool accumulate, CUdeviceptr workspace,
                         std::size_t workspaceBytes) {
  const Plan *p = plan(m, n, k, bias != 0, accumulate, Precision::Fp8,
                       workspaceBytes, xScales);
  if (!p)
    fail("cuBLASLt has no algorithm for a ", m, " x ", n, " x ", k,
         " fp8 GEMM with block scales; SOL_DISABLE_CUBLASLT=1 runs Sol's "
         "own kernels instead");
  const Api &a = *api_;
  // A = W: [k / 128, n] scales; B = x: [k / 128, m].
  const void *aScales = reinterpret_cast<const void *>(wScales);
  const void *bScales = reinterpret_cast<const void *>(xScales);
  check(a,
        a.descSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                           &aScales, sizeof aScales),
        "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
  check(a,
        a.descSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                           &bScales, sizeof bScales),
        "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
  run(*p, stream, y, xq, wq, bias, accumulate, workspace, workspaceBytes);
}

} // namespace sol::cuda

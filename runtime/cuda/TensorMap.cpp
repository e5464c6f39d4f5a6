//===- TensorMap.cpp - Tensor maps for Hopper's TMA copies ----------------===//

#include "runtime/cuda/TensorMap.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/support/Error.h"

#include <cstring>

namespace sol::cuda {

// The TMA needs 64-byte alignment; CUDA 13 declares CUtensorMap with 128.
static_assert(sizeof(CUtensorMap) == sizeof(kernels::TensorMap::words) &&
                  alignof(kernels::TensorMap) >= 64,
              "kernels::TensorMap must hold a CUtensorMap");

kernels::TensorMap encodeByteMatrixMap(CUdeviceptr base, long long rows,
                                       long long cols, long long pitch,
                                       int boxRows, int boxCols) {
  if (rows <= 0 || cols <= 0 || pitch < cols || pitch % 16 != 0 ||
      base % 16 != 0 || boxRows <= 0 || boxRows > 256 || boxCols <= 0 ||
      boxCols > 128)
    fail("tensor map of a ", rows, " x ", cols, " byte matrix (pitch ", pitch,
         ", box ", boxRows, " x ", boxCols,
         "): the TMA needs a 16-byte aligned base and pitch, a pitch of at "
         "least a row, and boxes of at most 256 rows of 128 bytes");
  const DriverApi &api = driverApi();
  CUtensorMap map;
  const cuuint64_t sizes[2] = {static_cast<cuuint64_t>(cols),
                               static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(pitch)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(boxCols),
                             static_cast<cuuint32_t>(boxRows)};
  const cuuint32_t elementStrides[2] = {1, 1};
  checkCuda(api.tensorMapEncodeTiled(
                &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2,
                reinterpret_cast<void *>(base), sizes, strides, box,
                elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            "cuTensorMapEncodeTiled");
  kernels::TensorMap out;
  std::memcpy(out.words, &map, sizeof map);
  return out;
}

} // namespace sol::cuda

//===- CudaCalibrationEvaluator.h - AWQ's evaluation on the GPU -*- C++ -*-===//
//
// The CalibrationEvaluator of solc on a machine with a GPU: the tensor-level
// ops in float32 with the activations on the device, GEMMs on the bf16
// tensor cores through cuBLASLt (float32 results), everything else in the
// kernels of codegen/kernels/Calibration.cuh (compiled with NVRTC when it
// starts; attention on the tensor cores too), the candidate weights and the
// clipping search made on the device. Only what AWQ decides (scales,
// clipping ratios, errors) comes back; the host reads weights ahead on
// another thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/CalibrationEvaluator.h"

#include <string>

namespace sol {

/// The GPU's evaluator of `fn`; nullptr, with `why` set, when there is no
/// usable GPU, NVRTC or cuBLASLt, or `fn` holds an op it does not evaluate.
/// Throws sol::Error when the GPU fails while it starts.
std::unique_ptr<CalibrationEvaluator>
createCudaCalibrationEvaluator(mlir::func::FuncOp fn, const WeightStore &store,
                               std::span<const std::vector<int32_t>> sequences,
                               std::string &why);

} // namespace sol

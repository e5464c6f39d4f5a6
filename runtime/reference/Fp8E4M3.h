//===- Fp8E4M3.h - The fp8 KV cache's row scales on the host ----*- C++ -*-===//
//
// The fp8 KV cache stores each row (one token's head_dim values of one kv
// head, K or V) as e4m3(x / scale) with scale = amax(|row|) / 448, computed
// when the token is written (codegen/kernels/RopeKvWrite.cuh). The reference
// executor applies the same rule on the CPU, bit for bit given the same
// inputs, so it computes what the GPU computes from its cache.
//
// The E4M3 conversion itself lives in runtime/support/Fp8.h (the compiler's
// fp8 weights use it too); it is re-exported here so that reference code
// keeps calling it unqualified.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Fp8.h"

#include <span>

namespace sol::reference {

using sol::e4m3ToFloat;
using sol::floatToE4M3;
using sol::kE4M3Max;

/// A KV-cache row's scale: max |x| over the row (NaNs ignored, as fmaxf
/// does) divided by 448 in float32, or 1 when that is 0.
float kvRowScale(std::span<const float> row);

/// Replaces each x of `row` by what the fp8 cache holds for it,
/// e4m3(x / scale) * scale in float32, and returns the scale.
float quantizeKvRow(std::span<float> row);

} // namespace sol::reference

//===- KvCachePlan.h - The KV-cache layout as codegen passes it on -*- C++
//-*-===//
//
// What sol-plan-kv-cache recorded on the module (#sol.kv_cache_layout), as
// plain data: lowering reads it from the module (codegen/lower), kernel
// compilation instantiates the attention kernels for it and the plan writer
// stores it as the plan's KvCacheLayout. No MLIR here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan_generated.h"

#include <cstdint>

namespace sol {

struct KvCachePlan {
  int32_t numLayers = 0;
  int32_t numKvHeads = 0;
  int32_t headDim = 0;
  int32_t blockSize = 0;                        // tokens per block
  fb::DType dtype = fb::DType::BF16;            // BF16 or F8E4M3
  int32_t alignment = 16;                       // bytes
  fb::KvScales scales = fb::KvScales::Unscaled; // PerTokenHead for fp8
  fb::KvArrangement arrangement = fb::KvArrangement::BlockSlotHeadDim;

  bool fp8() const { return dtype == fb::DType::F8E4M3; }
};

} // namespace sol

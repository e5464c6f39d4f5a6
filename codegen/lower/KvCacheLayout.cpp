//===- KvCacheLayout.cpp - The module's KV-cache layout for codegen -------===//
#include "codegen/lower/KvCacheLayout.h"

#include "ir/SolDialect.h"

using namespace mlir;

namespace sol {

FailureOr<KvCachePlan> lowerKvCacheLayout(ModuleOp module) {
  auto layout =
      module->getAttrOfType<KvCacheLayoutAttr>(KvCacheLayoutAttr::kAttrName);
  if (!layout)
    return module.emitError()
               << "the module has no " << KvCacheLayoutAttr::kAttrName
               << " attribute; run the sol-plan-kv-cache pass (solc runs it "
                  "at every -O level)",
           failure();
  WalkResult walk = module.walk([&](KvCacheUser op) {
    if (op.getCacheLayer() >= layout.getNumLayers() ||
        op.getCacheKvHeads() != layout.getNumKvHeads() ||
        op.getCacheHeadDim() != layout.getHeadDim()) {
      op->emitError() << "layer " << op.getCacheLayer() << " ("
                     << op.getCacheKvHeads() << " kv heads of head dim "
                     << op.getCacheHeadDim()
                     << ") does not fit the module's " << layout
                     << "; run sol-plan-kv-cache again";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  KvCachePlan plan;
  plan.numLayers = static_cast<int32_t>(layout.getNumLayers());
  plan.numKvHeads = static_cast<int32_t>(layout.getNumKvHeads());
  plan.headDim = static_cast<int32_t>(layout.getHeadDim());
  plan.blockSize = static_cast<int32_t>(layout.getBlockSize());
  plan.dtype = layout.getDtype() == KvCacheDType::FP8 ? fb::DType::F8E4M3
                                                      : fb::DType::BF16;
  plan.alignment = static_cast<int32_t>(layout.getAlignment());
  plan.scales = layout.getScales() == KvScales::PerTokenHead
                    ? fb::KvScales::PerTokenHead
                    : fb::KvScales::Unscaled;
  plan.arrangement = fb::KvArrangement::BlockSlotHeadDim;
  return plan;
}

} // namespace sol

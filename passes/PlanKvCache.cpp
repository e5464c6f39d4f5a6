//===- PlanKvCache.cpp - sol-plan-kv-cache: the paged KV cache's layout ---===//
//
// The layout of the paged KV cache is a decision of the compiler: the plan
// records it and the kernels are instantiated for it. This pass reads the
// attention ops, chooses what was not given, and records everything as the
// module attribute `sol.kv_cache_layout` (#sol.kv_cache_layout<...>).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace sol {
#define GEN_PASS_DEF_SOLPLANKVCACHE
#include "passes/Passes.h.inc"
} // namespace sol

using namespace mlir;
using namespace sol;

namespace {

/// Bytes of K (or V) per block and kv head the default block size aims for.
constexpr int64_t kTargetBlockBytesPerHead = 4096;
/// The range the default block size is clamped to (see Passes.td).
constexpr int64_t kMinDefaultBlockSize = 16, kMaxDefaultBlockSize = 32;
/// Bytes each attention-kernel lane loads at once; every cache row starts on
/// a multiple of it.
constexpr int64_t kKernelAlignment = 16;

int64_t defaultBlockSize(int64_t headDim, int64_t elementBytes) {
  int64_t tokens = kTargetBlockBytesPerHead / (headDim * elementBytes);
  tokens =
      tokens > 0
          ? static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(tokens)))
          : 1;
  return std::clamp(tokens, kMinDefaultBlockSize, kMaxDefaultBlockSize);
}

struct SolPlanKvCachePass : sol::impl::SolPlanKvCacheBase<SolPlanKvCachePass> {
  using SolPlanKvCacheBase::SolPlanKvCacheBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto existing =
        module->getAttrOfType<KvCacheLayoutAttr>(KvCacheLayoutAttr::kAttrName);

    KvCacheDType kvDtype = existing ? existing.getDtype() : KvCacheDType::BF16;
    if (dtype == "fp8")
      kvDtype = KvCacheDType::FP8;
    else if (dtype == "bf16")
      kvDtype = KvCacheDType::BF16;
    else if (!dtype.empty())
      return fail(module.emitError()
                  << "sol-plan-kv-cache: unknown KV-cache dtype '" << dtype
                  << "'; expected bf16 or fp8");

    // Every op that uses the cache must agree on its per-layer shape.
    KvCacheUser first;
    int64_t numLayers = 0;
    WalkResult walk = module.walk([&](KvCacheUser op) {
      if (!first) {
        first = op;
      } else if (op.getCacheKvHeads() != first.getCacheKvHeads() ||
                 op.getCacheHeadDim() != first.getCacheHeadDim()) {
        InFlightDiagnostic d =
            op->emitError()
            << "sol-plan-kv-cache: every layer must have the "
            << "same KV shape, but this one has " << op.getCacheKvHeads()
            << " kv heads of head dim " << op.getCacheHeadDim() << " and layer "
            << first.getCacheLayer() << " has " << first.getCacheKvHeads()
            << " of " << first.getCacheHeadDim();
        d.attachNote(first->getLoc()) << "layer " << first.getCacheLayer();
        return WalkResult::interrupt();
      }
      numLayers = std::max<int64_t>(numLayers, op.getCacheLayer() + 1);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    if (!first)
      return fail(module.emitError()
                  << "sol-plan-kv-cache: no op of the module uses the KV "
                  << "cache (no sol.attention), so there is nothing to plan");
    const int64_t kvHeads = first.getCacheKvHeads();
    const int64_t headDim = first.getCacheHeadDim();
    const int64_t elementBytes = kvDtype == KvCacheDType::FP8 ? 1 : 2;

    if (kvDtype == KvCacheDType::FP8 &&
        !KvCacheLayoutAttr::fp8SupportsHeadDim(headDim))
      return fail(first->emitError()
                  << "sol-plan-kv-cache: the fp8 KV cache supports head dims "
                  << "that are multiples of 16 up to 256, but this model's is "
                  << headDim
                  << "; use the bf16 KV cache");
    if (headDim * elementBytes % kKernelAlignment != 0)
      return fail(first->emitError()
                  << "sol-plan-kv-cache: a KV-cache row of head dim " << headDim
                  << " is " << headDim * elementBytes
                  << " bytes; the attention kernels need a multiple of "
                  << kKernelAlignment);

    int64_t tokens = blockSize;
    if (tokens == 0)
      tokens = existing ? existing.getBlockSize()
                        : defaultBlockSize(headDim, elementBytes);
    if (tokens < KvCacheLayoutAttr::kMinBlockSize ||
        tokens > KvCacheLayoutAttr::kMaxBlockSize ||
        !llvm::isPowerOf2_64(static_cast<uint64_t>(tokens)))
      return fail(module.emitError()
                  << "sol-plan-kv-cache: the KV-cache block size must be a "
                  << "power of two in [" << KvCacheLayoutAttr::kMinBlockSize
                  << ", " << KvCacheLayoutAttr::kMaxBlockSize << "], got "
                  << tokens);

    auto layout = KvCacheLayoutAttr::get(
        &getContext(), numLayers, kvHeads, headDim, tokens, kvDtype,
        KvArrangement::BlockSlotHeadDim, kKernelAlignment,
        kvDtype == KvCacheDType::FP8 ? KvScales::PerTokenHead : KvScales::None);
    module->setAttr(KvCacheLayoutAttr::kAttrName, layout);
  }

  void fail(InFlightDiagnostic &&diagnostic) {
    (void)diagnostic; // reported when it goes out of scope
    signalPassFailure();
  }
};

} // namespace

//===- SolInterfaces.td - Interfaces and traits of sol ops -*- tablegen -*-===//
#ifndef SOL_INTERFACES_TD
#define SOL_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Sol_KvCacheUser : OpInterface<"KvCacheUser"> {
  let description = [{
    An op that reads or writes the paged KV cache of one layer
    (`sol.attention`, `sol.rope_kv_write`, `sol.kv_attention`):
    sol-plan-kv-cache sizes the cache from these, and code generation checks
    them against the layout it chose.
  }];
  let cppNamespace = "::sol";
  let methods = [
    InterfaceMethod<"the layer whose cache it uses", "int64_t", "getCacheLayer",
      (ins), [{}], [{ return static_cast<int64_t>($_op.getLayer()); }]>,
    InterfaceMethod<"kv heads per token", "int64_t", "getCacheKvHeads",
      (ins), [{}], [{ return static_cast<int64_t>($_op.getNumKvHeads()); }]>,
    InterfaceMethod<"elements per head", "int64_t", "getCacheHeadDim",
      (ins), [{}], [{ return static_cast<int64_t>($_op.getHeadDim()); }]>
  ];
}

// A weight transform: its operands are weights (sol.weight or other
// transforms), so sol-materialize-weights can compute it at compile time.
def Sol_WeightTransform : NativeOpTrait<"WeightTransform"> {
  let cppNamespace = "::sol";
}

#endif // SOL_INTERFACES_TD

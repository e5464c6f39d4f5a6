//===- Passes.td - Sol's passes ----------------------------*- tablegen -*-===//
#ifndef SOL_PASSES_TD
#define SOL_PASSES_TD

include "mlir/Pass/PassBase.td"

def SolFuse : Pass<"sol-fuse", "::mlir::func::FuncOp"> {
  let summary = "merge projections that share an input into one GEMM";
  let description = [{
    Batch-1 decode reads every weight once per token and launches one kernel
    per op, so fewer, larger GEMMs are faster. This pass:

    * merges `sol.linear` ops that read the same input (Q, K and V) into one
      linear over a weight concatenated along the output dimension (a
      `sol.weight ... concat [...]`), followed by `sol.split`;
    * merges the gate and up projections feeding a `sol.swiglu` into one
      linear with the `swiglu` epilogue.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolPlanKvCache : Pass<"sol-plan-kv-cache", "::mlir::ModuleOp"> {
  let summary = "choose the paged KV cache's layout and record it on the module";
  let description = [{
    Reads every `sol.attention` of the module (layer, kv heads, head dim) and
    records the paged KV cache's layout as the module attribute
    `sol.kv_cache_layout = #sol.kv_cache_layout<...>`, which code generation
    and the plan writer read:

    * `block_size`: the `block-size` option, or when it is 0 (and the module
      has no layout yet) the power of two nearest below 4 KiB per block and
      kv head, `4096 / (head_dim × element bytes)`, clamped to [16, 32]:
      16 tokens for bf16 head dim 128, 32 for head dim 64 or fp8 head dim
      128. Fewer tokens per block multiply block-table entries and
      prefix-cache hashing; more waste half a block per sequence on average
      and coarsen prefix-cache reuse (only whole blocks are shared).
    * `dtype`: the `dtype` option (`bf16` or `fp8`, E4M3 with one float32
      scale per token and kv head for K and for V, computed when the token
      is written); empty keeps the module's layout, else bf16.
    * `arrangement`: `[blocks, block_size, kv_heads, head_dim]` for K and V
      of every layer; `alignment`: 16 bytes (the kernels' lane loads).

    Errors: no attention op, layers that disagree on kv heads or head dim, a
    block size that is not a power of two in [8, 256], an unknown dtype, a
    head dim the fp8 kernels do not support, rows not a multiple of 16 bytes.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"0",
           "tokens per KV-cache block: a power of two in [8, 256], or 0 to "
           "choose from the head dim">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"\"",
           "KV-cache element type: bf16 or fp8 (E4M3 with per-token, "
           "per-head scales); empty keeps the module's, else bf16">
  ];
  let dependentDialects = ["::sol::SolDialect"];
}

#endif // SOL_PASSES_TD

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

#endif // SOL_PASSES_TD

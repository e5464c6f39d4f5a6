//===- SolDialect.td - The sol dialect ---------------------*- tablegen -*-===//
//
// Tensor-level operations of Transformer language models. Tensors are builtin
// ranked tensors whose leading token dimension is dynamic (`?`) and whose other
// dimensions are static. Weights are referenced by name (`sol.weight`), never
// inlined, so the IR of a 70B model prints in milliseconds.
//
//===----------------------------------------------------------------------===//
#ifndef SOL_DIALECT_TD
#define SOL_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Sol_Dialect : Dialect {
  let name = "sol";
  let cppNamespace = "::sol";
  let summary = "Transformer language models at the tensor level";
  let description = [{
    The `sol` dialect describes one forward step of a decoder-only Transformer
    over a flat batch of tokens drawn from many sequences (prefill chunks and
    decode tokens mixed). Attention ops read and append to the paged KV cache
    of their layer, so the same function serves prefill and decode.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class Sol_Op<string mnemonic, list<Trait> traits = []>
    : Op<Sol_Dialect, mnemonic, traits>;

class Sol_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Sol_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// Element types Sol computes in.
def Sol_FloatType : AnyTypeOf<[BF16, F16, F32], "bf16, f16 or f32">;
// Element types Sol stores weights in (quantized forms appear after
// sol-quantize).
def I4 : I<4>;
def Sol_StorageType
    : AnyTypeOf<[BF16, F16, F32, F8E4M3FN, I8, I4], "a Sol storage type">;

def Sol_FloatTensor : RankedTensorOf<[BF16, F16, F32]>;
def Sol_WeightTensor : RankedTensorOf<[BF16, F16, F32, F8E4M3FN, I8, UI8, I4, UI<4>]>;
def Sol_IndexTensor : RankedTensorOf<[I32]>;

#endif // SOL_DIALECT_TD

//===- SolOnnxOps.td - ONNX nodes before raising -----------*- tablegen -*-===//
//
// The ONNX importer writes a graph as it is, one `sol.onnx` op per node, so
// that `solc --emit=imported` shows the file and the raise passes
// (sol-raise-*) can rewrite its idioms (RMSNorm spelled as Pow, ReduceMean,
// Sqrt...) into Sol's layer ops with ordinary rewrite patterns. After
// sol-raise none of these ops may remain: sol-raise-check reports every one
// left, by op type and node name.
//
//===----------------------------------------------------------------------===//
#ifndef SOL_ONNX_OPS_TD
#define SOL_ONNX_OPS_TD

def Sol_OnnxOp : Sol_Op<"onnx", [Pure]> {
  let summary = "one node of an imported ONNX graph";
  let description = [{
    The node's `op_type` and `domain` ("" for ai.onnx), its inputs and
    outputs in order, and its ONNX attributes as the op's other attributes
    (INT as i64, FLOAT as f32, STRING as a string, INTS and FLOATS as dense
    arrays, STRINGS as an array of strings, TENSOR as dense elements). An
    omitted optional input is a `sol.onnx_none` value. The location is the
    node's name. Result types carry the shape the graph declares for the
    value (`?` for symbolic dimensions), or are unranked where it declares
    none.

    ```mlir
    %y = sol.onnx "ReduceMean"(%x) {axes = array<i64: -1>, keepdims = 1 : i64}
        : (tensor<?x?x64xf32>) -> tensor<*xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$op_type,
                       DefaultValuedStrAttr<StrAttr, "">:$domain);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)
  }];
  let extraClassDeclaration = [{
    /// The ONNX attribute `name`, or null.
    ::mlir::Attribute getOnnxAttr(::llvm::StringRef name) {
      return (*this)->getAttr(name);
    }
    /// "Pow", or "com.microsoft.GroupQueryAttention" outside ai.onnx.
    std::string qualifiedType();
  }];
}

def Sol_OnnxNoneOp : Sol_Op<"onnx_none", [Pure]> {
  let summary = "an omitted optional input of an ONNX node";
  let results = (outs NoneType:$result);
  let assemblyFormat = "attr-dict";
}

def Sol_OnnxConstantOp : Sol_Op<"onnx_constant", [Pure]> {
  let summary = "a small constant of an ONNX graph, with its value";
  let description = [{
    A `Constant` node's value, or an initializer small enough to inline
    (shape pieces, epsilons, scales, rope frequencies), so that the raise
    patterns can read it. When `weight` is set, the weight store holds the
    same tensor under that name (an initializer), and a pattern that needs
    it as a weight (a norm's scale) refers to it there.
  }];
  let arguments = (ins ElementsAttr:$value, OptionalAttr<FlatSymbolRefAttr>:$weight);
  let results = (outs AnyTensor:$result);
  let assemblyFormat = "($weight^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Sol_BatchViewOp : Sol_Op<"batch_view", [Pure]> {
  let summary = "a value seen between an ONNX graph's and Sol's layouts";
  let description = [{
    The same elements in the same order under another shape and element
    type: Sol's token-major `tensor<?xNxbf16>` seen as the ONNX graph's
    `tensor<1x?xNxf32>` (a batch of one sequence) or back. The raise
    patterns put one where a raised op meets the rest of the graph, and
    remove pairs that meet (a view of a view); none may survive sol-raise.
  }];
  let arguments = (ins AnyTensor:$input);
  let results = (outs AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

#endif // SOL_ONNX_OPS_TD

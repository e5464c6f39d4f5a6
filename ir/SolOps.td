//===- SolOps.td - Operations of the sol dialect -----------*- tablegen -*-===//
#ifndef SOL_OPS_TD
#define SOL_OPS_TD

include "ir/SolDialect.td"
include "ir/SolAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

def Sol_WeightOp : Sol_Op<"weight", [Pure]> {
  let summary = "a named tensor of the weight store";
  let description = [{
    Refers to a tensor held outside the IR: a safetensors file of the
    checkpoint, an ONNX initializer, or a tensor a pass produced. The IR only
    carries the name and the type, so printing a large model stays cheap.

    ```mlir
    %w = sol.weight @"model.layers.0.self_attn.q_proj.weight" : tensor<2048x2048xbf16>
    ```

    A weight a pass produced by concatenating others along dimension 0 (for
    example the fused Q/K/V projection) names its sources with `concat`; the
    plan writer materialises it:

    ```mlir
    %w = sol.weight @"layers.0.qkv" concat [@q, @k, @v] : tensor<3072x2048xbf16>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name,
                       OptionalAttr<FlatSymbolRefArrayAttr>:$concat);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$name (`concat` $concat^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

def Sol_EmbeddingOp : Sol_Op<"embedding", [Pure]> {
  let summary = "looks up one row of the embedding table per token";
  let description = [{
    `ids` is `tensor<?xi32>`, `table` is `tensor<VxDxT>`; the result is
    `tensor<?xDxT>`.
  }];
  let arguments = (ins Sol_IndexTensor:$ids, Sol_WeightTensor:$table);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` `(` type($ids) `,` type($table) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_LinearOp : Sol_Op<"linear", [Pure]> {
  let summary = "x · Wᵀ + b, with an optional fused epilogue";
  let description = [{
    `input` is `tensor<?xK>`, `weight` is `tensor<NxK>` (the Hugging Face
    `out × in` layout), `bias` (optional) is `tensor<N>`. The result is
    `tensor<?xN>`, or `tensor<?x(N/2)>` with the `swiglu` epilogue, which
    treats the first half of the columns as the gate and the second as up.
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$weight,
                       Optional<Sol_WeightTensor>:$bias,
                       DefaultValuedAttr<Sol_LinearEpilogueAttr,
                                         "::sol::LinearEpilogue::None">:$epilogue);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` `(` type($input) `,`
    type($weight) (`,` type($bias)^)? `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_RmsNormOp : Sol_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalisation, scaled by a weight";
  let description = [{
    `input` is `tensor<?xN>` and `weight` is `tensor<G>` with `N % G == 0`:
    each group of `G` consecutive elements of a row is normalised on its own
    (`G == N` for the usual layer norm of a hidden state; `G == head_dim` for
    Qwen3's per-head `q_norm` / `k_norm`).
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$weight,
                       F32Attr:$epsilon);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` `(` type($input) `,` type($weight) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_LayerNormOp : Sol_Op<"layer_norm", [Pure]> {
  let summary = "layer normalisation with weight and optional bias";
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$weight,
                       Optional<Sol_WeightTensor>:$bias, F32Attr:$epsilon);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` `(` type($input) `,`
    type($weight) (`,` type($bias)^)? `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_RopeOp : Sol_Op<"rope", [Pure]> {
  let summary = "rotary position embedding (rotate-half convention)";
  let description = [{
    `input` is `tensor<?x(H·D)>`: `num_heads` heads of `head_dim` each.
    Each head is rotated by the angle `position · inv_freq[i]`, where the
    inverse frequencies follow from `rope` (base and long-context scaling).
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_IndexTensor:$positions,
                       Sol_RopeAttr:$rope, I64Attr:$num_heads,
                       I64Attr:$head_dim);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` `(` type($input) `,` type($positions) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_AttentionOp : Sol_Op<"attention",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "grouped-query attention over the KV cache of one layer";
  let description = [{
    Appends `key` and `value` (`tensor<?x(Hkv·D)>`) at `positions` of the
    sequences named by `token_seq` to the paged KV cache of layer `layer`,
    then lets every query token (`tensor<?x(H·D)>`) attend to the cached
    tokens of its own sequence: causally up to its own position, and within
    the last `sliding_window` positions when that is set. The result has the
    query's type. Because it reads and writes the cache, it is not pure.
  }];
  let arguments = (ins Sol_FloatTensor:$query, Sol_FloatTensor:$key,
                       Sol_FloatTensor:$value, Sol_IndexTensor:$positions,
                       Sol_IndexTensor:$token_seq, I64Attr:$layer,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F32Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "true">:$causal,
                       OptionalAttr<I64Attr>:$sliding_window);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $positions `,` $token_seq attr-dict `:`
    `(` type($query) `,` type($key) `,` type($value) `,` type($positions) `,`
    type($token_seq) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Sol_ElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Sol_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
                                            SameOperandsAndResultType])>;

def Sol_SiluOp : Sol_ElementwiseOp<"silu"> {
  let summary = "x · sigmoid(x)";
  let arguments = (ins Sol_FloatTensor:$input);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Sol_GeluOp : Sol_ElementwiseOp<"gelu"> {
  let summary = "Gaussian error linear unit (exact or tanh approximation)";
  let arguments = (ins Sol_FloatTensor:$input,
                       DefaultValuedAttr<Sol_GeluApproximationAttr,
                         "::sol::GeluApproximation::None">:$approximation);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Sol_MulOp : Sol_ElementwiseOp<"mul", [Commutative]> {
  let summary = "elementwise product";
  let arguments = (ins Sol_FloatTensor:$lhs, Sol_FloatTensor:$rhs);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Sol_AddOp : Sol_ElementwiseOp<"add", [Commutative]> {
  let summary = "elementwise sum (residual connections)";
  let arguments = (ins Sol_FloatTensor:$lhs, Sol_FloatTensor:$rhs);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Sol_SwigluOp : Sol_Op<"swiglu", [Pure]> {
  let summary = "silu(gate) · up";
  let description = [{
    Two forms: `sol.swiglu %gate, %up` with both `tensor<?xI>`, or
    `sol.swiglu %gate_up` with one `tensor<?x(2·I)>` whose first half of
    columns is the gate (the form left by `sol-fuse`). The result is
    `tensor<?xI>`.
  }];
  let arguments = (ins Sol_FloatTensor:$gate, Optional<Sol_FloatTensor>:$up);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $gate (`,` $up^)? attr-dict `:` `(` type($gate) (`,` type($up)^)? `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_SplitOp : Sol_Op<"split", [Pure]> {
  let summary = "splits the columns of a token-major tensor into parts";
  let description = [{
    `input` is `tensor<?xN>`; result `i` is `tensor<?xS_i>` holding the next
    `S_i` columns, where the `S_i` sum to `N`. Fused projections are split
    back into their parts this way (Q, K and V from one GEMM).
  }];
  let arguments = (ins Sol_FloatTensor:$input);
  let results = (outs Variadic<Sol_FloatTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

def Sol_LogitsOp : Sol_Op<"logits", [Pure]> {
  let summary = "final RMS norm and LM head on selected token rows";
  let description = [{
    Picks the rows `rows` (`tensor<?xi32>`, typically the last token of each
    sequence) of `hidden` (`tensor<?xD>`), normalises them with
    `norm_weight` (`tensor<D>`) and multiplies by `lm_head` (`tensor<VxD>`).
    The result is float32 logits `tensor<?xVxf32>`, one row per selected row.
  }];
  let arguments = (ins Sol_FloatTensor:$hidden, Sol_WeightTensor:$norm_weight,
                       Sol_WeightTensor:$lm_head, Sol_IndexTensor:$rows,
                       F32Attr:$epsilon);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $hidden `,` $norm_weight `,` $lm_head `,` $rows attr-dict `:` `(`
    type($hidden) `,` type($norm_weight) `,` type($lm_head) `,` type($rows)
    `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def Sol_FusedOp : Sol_Op<"fused", [
    Pure, SingleBlockImplicitTerminator<"::sol::YieldOp">,
    IsolatedFromAbove]> {
  let summary = "a region of elementwise ops emitted as one kernel";
  let description = [{
    The block's arguments stand for `inputs`, in order and with their types;
    the region may hold only elementwise `sol` ops and ends with `sol.yield`
    of values whose types are the results' types. All tensors in the region
    have the same shape.

    ```mlir
    %r = sol.fused ins(%g, %u : tensor<?x64xbf16>, tensor<?x64xbf16>) -> tensor<?x64xbf16> {
    ^bb0(%a: tensor<?x64xbf16>, %b: tensor<?x64xbf16>):
      %s = sol.silu %a : tensor<?x64xbf16>
      %m = sol.mul %s, %b : tensor<?x64xbf16>
      sol.yield %m : tensor<?x64xbf16>
    }
    ```
  }];
  let arguments = (ins Variadic<Sol_FloatTensor>:$inputs);
  let results = (outs Variadic<Sol_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `ins` `(` $inputs `:` type($inputs) `)` (`->` type($results)^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
}

def Sol_YieldOp : Sol_Op<"yield", [Pure, Terminator, ReturnLike,
                                   HasParent<"::sol::FusedOp">]> {
  let summary = "the values a sol.fused region produces";
  let arguments = (ins Variadic<Sol_FloatTensor>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // SOL_OPS_TD

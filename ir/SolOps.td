//===- SolOps.td - Operations of the sol dialect -----------*- tablegen -*-===//
//
// Three groups of ops:
//  * weights: `sol.weight` names a tensor of the weight store; the weight
//    transforms (concat, slice, interleave, permute_head_dims, convert,
//    offset, transpose, scale, clamp, quantize, unpack_nbits,
//    dequantize_weight, shard_weight, first_rank_weight) derive new weights from others and are
//    materialised by sol-materialize-weights;
//  * tensor-level layers, as importers produce them (`sol.linear`,
//    `sol.rms_norm`, `sol.rope`, `sol.attention`, `sol.logits`...);
//  * kernel-level ops, as the fusion passes and sol-lower-to-kernels produce
//    them: each is one op of the plan (one kernel family), so code
//    generation translates them one to one.
// Several ops are both (`sol.embedding`, `sol.add`, `sol.rms_norm` and
// `sol.linear` without fusions; the tensor-parallel collectives
// `sol.all_reduce` and `sol.all_gather`).
//
//===----------------------------------------------------------------------===//
#ifndef SOL_OPS_TD
#define SOL_OPS_TD

include "ir/SolDialect.td"
include "ir/SolAttrs.td"
include "ir/SolInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

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
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

/// A weight derived from other weights; sol-materialize-weights computes it
/// into the weight store and replaces it by a sol.weight.
class Sol_WeightTransformOp<string mnemonic, list<Trait> traits = []>
    : Sol_Op<mnemonic, !listconcat(traits, [Pure, Sol_WeightTransform])>;

def Sol_ConcatWeightsOp : Sol_WeightTransformOp<"concat_weights"> {
  let summary = "weights stacked along their first dimension";
  let description = [{
    The rows of `inputs`, in order: the fused weight of projections that
    read the same input (Q, K and V). All inputs have the same element type
    and the same dimensions after the first.

    ```mlir
    %qkv = sol.concat_weights %q, %k, %v : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
    ```
  }];
  let arguments = (ins Variadic<Sol_WeightTensor>:$inputs);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` `(` type($inputs) `)` `->` type($result)
  }];
  let hasVerifier = 1;
  // The consecutive row slices of one weight that cover it (a fused
  // checkpoint projection taken apart and fused again) fold to the weight.
  let hasFolder = 1;
}

def Sol_SliceRowsOp : Sol_WeightTransformOp<"slice_rows"> {
  let summary = "consecutive rows of a weight";
  let description = [{
    Rows `offset, offset + stride, ...` of `input` (elements, for a 1-D
    weight), `R` of them for the result's first dimension `R`: the parts of
    a projection that a checkpoint stores fused (Phi-3's `qkv_proj` and
    `gate_up_proj`; with `stride = 2`, gpt-oss's interleaved gate and up
    rows), taken apart so that the fusion passes see the usual projections.

    ```mlir
    %q = sol.slice_rows %qkv {offset = 0 : i64} : tensor<192x64xbf16> -> tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$input, I64Attr:$offset,
                       DefaultValuedAttr<I64Attr, "1">:$stride);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Sol_PermuteHeadDimsOp : Sol_WeightTransformOp<"permute_head_dims",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "each head's dims reordered for a partial rotary embedding";
  let description = [{
    `input` holds heads of `head_dim` rows (a query or key projection's
    weight `[H·D, K]`, or its bias `[H·D]`). With `R = rotary_dim` of the
    `D` dims rotating (rotate-half pairs `(i, i + R/2)`, `i < R/2`) and the
    rest passing through, each head's rows become: rotated first half
    `[0, R/2)`, passed first half `[R, R + (D-R)/2)`, rotated second half
    `[R/2, R)`, passed second half `[R + (D-R)/2, D)`. The pairs then sit
    `D/2` apart, as in a full rotary embedding whose pairs `i >= R/2` have
    frequency 0; queries and keys permuted alike give the same scores.
  }];
  let arguments = (ins Sol_WeightTensor:$input, I64Attr:$head_dim,
                       I64Attr:$rotary_dim);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Sol_OffsetWeightOp : Sol_WeightTransformOp<"offset_weight"> {
  let summary = "a weight plus a constant, in float32";
  let description = [{
    `input + offset`, elementwise, as an `f32` weight of the same shape:
    Gemma's RMSNorm multiplies by `1 + w` computed in float32, which a
    bf16 weight could not hold exactly.

    ```mlir
    %n = sol.offset_weight %w {offset = 1.0 : f32} : tensor<64xbf16> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$input, F32Attr:$offset);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Sol_InterleaveRowsOp : Sol_WeightTransformOp<"interleave_rows",
    [SameTypeOperands]> {
  let summary = "two weights' rows taken in turn";
  let description = [{
    Row `2i` of the result is row `i` of `first`, row `2i + 1` row `i` of
    `second` (for 1-D weights, elements): the gate/up layout of a linear
    with the `swiglu` epilogue, which pairs each gate row with its up row.
  }];
  let arguments = (ins Sol_WeightTensor:$first, Sol_WeightTensor:$second);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = [{
    $first `,` $second attr-dict `:` type($first) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_ShardWeightOp : Sol_WeightTransformOp<"shard_weight"> {
  let summary = "one tensor-parallel rank's slice of a weight";
  let description = [{
    The module runs on `ranks` GPUs at once (tensor parallelism), each with
    its own weights: this is the part rank `r` holds. Along `axis` the
    weight is `groups` equal groups, each cut into `shards` equal blocks;
    rank `r` takes block `r / (ranks / shards)` of every group, so the
    result is `shards` times smaller along `axis`. `shards == ranks` splits
    the weight among the ranks (query heads, the MLP's rows or columns, the
    LM head's vocabulary); fewer shards give several ranks the same block
    (key/value heads, when there are fewer than ranks). `groups` cuts each
    expert of a stacked mixture-of-experts weight the same way. The IR
    after sol-shard-tensor-parallel is one rank's program with its local
    shapes; sol-materialize-weights writes each rank's slice.

    ```mlir
    %q = sol.shard_weight %w {axis = 0 : i64, shards = 2 : i64, ranks = 2 : i64} : tensor<128x64xbf16> -> tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       I64Attr:$shards, I64Attr:$ranks);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Sol_FirstRankWeightOp : Sol_WeightTransformOp<"first_rank_weight",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "a weight on tensor-parallel rank 0, zeros on the others";
  let description = [{
    The bias of a row-parallel linear: every rank adds its partial product
    and the `sol.all_reduce` after it sums them, so only rank 0 adds the
    bias and the sum holds it once.

    ```mlir
    %b0 = sol.first_rank_weight %b {ranks = 2 : i64} : tensor<64xbf16>
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$input, I64Attr:$ranks);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Sol_ConvertWeightOp : Sol_WeightTransformOp<"convert_weight"> {
  let summary = "a weight converted to another element type";
  let description = [{
    Elementwise conversion between `f32`, `f16` and `bf16` (round to nearest
    even), e.g. an f32 checkpoint's weights to the bf16 the kernels read.
  }];
  let arguments = (ins Sol_WeightTensor:$input);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Sol_TransposeWeightOp : Sol_WeightTransformOp<"transpose_weight"> {
  let summary = "a 2-D weight transposed";
  let description = [{
    `[K, N]` to `[N, K]`: an ONNX MatMul's `[in, out]` weight in the
    `[out, in]` layout of `sol.linear`. A 3-D `[E, K, N]` weight (stacked
    experts, gpt-oss) becomes `[E·N, K]`: each expert transposed, stacked.
  }];
  let arguments = (ins Sol_WeightTensor:$input);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Sol_ReshapeWeightOp : Sol_WeightTransformOp<"reshape_weight"> {
  let summary = "a weight's elements in another shape";
  let description = [{
    The same elements in the same (row-major) order: e.g. stacked experts'
    biases `[E, N]` as the `[E·N]` vector of `sol.moe`.
  }];
  let arguments = (ins Sol_WeightTensor:$input);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Sol_DequantizeMxfp4Op : Sol_WeightTransformOp<"dequantize_mxfp4"> {
  let summary = "an MXFP4 weight (gpt-oss's experts) in bf16";
  let description = [{
    `blocks` is `[..., G, 16]` ui8: each byte two FP4 (E2M1) values, the low
    nibble first, 32 per group; `scales` is `[..., G]` ui8, the groups'
    shared E8M0 exponents (2^(s − 127)). The result is `[R, G·32]` bf16 for
    `R` the product of the leading dimensions: value 2j of a group is
    lut[byte_j & 15] · 2^(s − 127) and value 2j + 1 lut[byte_j >> 4] · …,
    with lut = 0, .5, 1, 1.5, 2, 3, 4, 6 and their negatives. Every such
    value is exact in bf16.

    ```mlir
    %w = sol.dequantize_mxfp4 %blocks, %scales : (tensor<4x96x2x16xui8>, tensor<4x96x2xui8>) -> tensor<384x64xbf16>
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$blocks, Sol_WeightTensor:$scales);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = [{
    $blocks `,` $scales attr-dict `:` `(` type($blocks) `,` type($scales) `)`
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_DequantizeFp8BlocksOp : Sol_WeightTransformOp<"dequantize_fp8_blocks"> {
  let summary = "a block-scaled fp8 weight (Qwen3-FP8, DeepSeek) in bf16";
  let description = [{
    `codes` is `[N, K]` `f8E4M3FN`; `scales` is `[ceil(N / block_rows),
    ceil(K / block_cols)]` f32, one scale (the checkpoint's
    `weight_scale_inv`) per block of `block_rows` x `block_cols` codes (the
    last blocks of a row or column may be partial). The result is `[N, K]`
    bf16: element (n, k) is e4m3(codes[n, k]) · scales[n / block_rows,
    k / block_cols] in float32, rounded to bf16 (to nearest even).

    ```mlir
    %w = sol.dequantize_fp8_blocks %codes, %scales {block_rows = 128, block_cols = 128} : (tensor<256x384xf8E4M3FN>, tensor<2x3xf32>) -> tensor<256x384xbf16>
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$codes, Sol_WeightTensor:$scales,
                   I64Attr:$block_rows, I64Attr:$block_cols);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = [{
    $codes `,` $scales attr-dict `:` `(` type($codes) `,` type($scales) `)`
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_ScaleWeightOp : Sol_WeightTransformOp<"scale_weight",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "a weight multiplied (or divided) by a per-channel vector";
  let description = [{
    `scales` is `tensor<Cxf32>`. A 2-D `[N, K]` weight has column `k`
    multiplied by `scales[k]` when `axis = 1` (a linear's input channels) and
    row `n` by `scales[n]` when `axis = 0`; a 1-D weight (a norm's, a bias)
    element `i` by `scales[i]`. With `axis = 1`, `scales` may also be
    `tensor<BxKxf32>`: the rows are B equal blocks (a mixture's stacked
    experts) and block b's columns take row b of the scales. With `divide`,
    it is divided instead. The result keeps the input's type (rounded to
    it, to nearest even).

    AWQ's activation-aware scaling is a pair of these: a linear's input
    channels times `s` and the producer of its input (the norm's weight, or
    the rows of the linear before it) divided by `s`, so the unquantized
    model computes the same function while the quantized one loses less on
    the channels that carry large activations.

    ```mlir
    %q2 = sol.scale_weight %q, %s {axis = 1 : i64} : tensor<64x32xbf16>, tensor<32xf32>
    %n2 = sol.scale_weight %n, %s {axis = 0 : i64, divide} : tensor<32xbf16>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$input, Sol_WeightTensor:$scales,
                       I64Attr:$axis, UnitAttr:$divide);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = [{
    $input `,` $scales attr-dict `:` type($input) `,` type($scales)
  }];
  let hasVerifier = 1;
}

def Sol_ClampWeightOp : Sol_WeightTransformOp<"clamp_weight",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "each group of a weight's rows clamped to a shrunk range";
  let description = [{
    `input` is a float `[N, K]` weight, `ratios` `tensor<Nx(K/g)xf32>` with
    `g = group_size`. Each group of `g` consecutive inputs of a row, with
    minimum `lo` and maximum `hi`, has its values clamped to
    `[lo * r, hi * r]` for its ratio `r` in (0, 1]. An int4
    `sol.quantize_weight` with the same group size then spans exactly the
    shrunk range: AWQ's clipping, whose ratios calibration chose by the
    error of the group's outputs on calibration inputs.
  }];
  let arguments = (ins Sol_WeightTensor:$input, Sol_WeightTensor:$ratios,
                       I64Attr:$group_size);
  let results = (outs Sol_WeightTensor:$result);
  let assemblyFormat = [{
    $input `,` $ratios attr-dict `:` type($input) `,` type($ratios)
  }];
  let hasVerifier = 1;
}

def Sol_QuantizeWeightOp : Sol_WeightTransformOp<"quantize_weight"> {
  let summary = "a linear's weight quantized: codes, scales and zero points";
  let description = [{
    `input` is a float `[N, K]` weight (the `out × in` layout of
    `sol.linear`). By `scheme` (runtime/support/Quantize.h has the exact
    rules and layouts):

    * `int8`: `codes` is `tensor<NxKxi8>`, symmetric per output row,
      `scales` `tensor<Nxf32>`; w = q · s;
    * `fp8`: `codes` is `tensor<NxKxf8E4M3FN>`, `scales` `tensor<Nxf32>`;
      w = q · s (the linear quantizes its input rows at run time too);
    * `int4`: `codes` is `tensor<NxKxi4>` (0..15, two per byte in storage),
      asymmetric in groups of `group_size` consecutive inputs, `scales`
      `tensor<Nx(K/g)xf32>` and `zeros` `tensor<Nx(K/g)xui8>`;
      w = (q − z) · s. With `clip_search`, each group's range is shrunk by
      the ratio (of a 20-point grid) that minimises its squared error.

    Made by sol-quantize; materialised like the other weight transforms.

    ```mlir
    %q, %s = sol.quantize_weight %w {scheme = #sol<quant int8>} : tensor<64x32xbf16> -> (tensor<64x32xi8>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$input, Sol_QuantSchemeAttr:$scheme,
                       DefaultValuedAttr<I64Attr, "0">:$group_size,
                       DefaultValuedAttr<BoolAttr, "false">:$clip_search);
  let results = (outs Sol_WeightTensor:$codes, Sol_WeightTensor:$scales,
                      Optional<Sol_WeightTensor>:$zeros);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` `(` type($codes) `,` type($scales)
    (`,` type($zeros)^)? `)`
  }];
  let hasVerifier = 1;
}

def Sol_UnpackNBitsOp : Sol_WeightTransformOp<"unpack_nbits"> {
  let summary = "an onnxruntime MatMulNBits weight in Sol's layout";
  let description = [{
    The block-quantized weight of com.microsoft's `MatMulNBits` (and the
    table of `GatherBlockQuantized`): `packed` holds `[N, blocks, bytes]`
    codes of `bits` bits, low bits first, for N rows of K inputs in blocks
    of `block_size`; `scales` `[N, blocks]` (or flat) floats; `zero_points`
    (optional) packed codes of the same width per block, or floats. A code q
    of block b stands for (q - z_b) · s_b, z_b defaulting to 2^(bits-1).

    Two forms, by result types:
    * `(tensor<NxKxi4>, tensor<Nx(K/g)xf32>, tensor<Nx(K/g)xui8>)`: Sol's
      int4 (runtime/support/Quantize.h), for 4 bits with integer zero points
      and K a multiple of the block size: the same values, repacked;
    * `tensor<NxKxbf16>`: the weight dequantized.

    The block size is a power of two of at least 16, or the whole row (one
    scale a row: QMoE's per-row experts). With `columns` (a permutation of
    the K inputs: MatMulNBits' act-order `g_idx` sorted by block), result
    column j is stored column `columns[j]` and belongs to block j / g; the
    linear's input is gathered in the same order (`sol.gather_columns`).

    ```mlir
    %c, %s, %z = sol.unpack_nbits %q, %sc {bits = 4, block_size = 32} : (tensor<64x2x16xui8>, tensor<64x2xf32>) -> (tensor<64x64xi4>, tensor<64x2xf32>, tensor<64x2xui8>)
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$packed, Sol_WeightTensor:$scales,
                       Optional<Sol_WeightTensor>:$zero_points,
                       I64Attr:$bits, I64Attr:$block_size,
                       OptionalAttr<DenseI32ArrayAttr>:$columns);
  let results = (outs Variadic<Sol_WeightTensor>:$outputs);
  let assemblyFormat = [{
    $packed `,` $scales (`,` $zero_points^)? attr-dict `:` `(` type($packed)
    `,` type($scales) (`,` type($zero_points)^)? `)` `->` `(` type($outputs) `)`
  }];
  let hasVerifier = 1;
}

def Sol_DequantizeWeightOp : Sol_WeightTransformOp<"dequantize_weight"> {
  let summary = "an ONNX integer weight, dequantized or in Sol's layout";
  let description = [{
    ONNX's linear dequantization of a stored integer weight, as
    `DequantizeLinear` or onnxruntime's dynamic quantization (`MatMulInteger`)
    store it: `(codes - zero_points) · scales`. `codes` are a 2-D `[R, C]`
    tensor of i8, ui8, i4 or ui4; `scales` (and `zero_points`, of the
    codes' type) one value for the whole tensor, one per index of dimension
    `axis`, or with `block_size` one per block of that many along `axis`
    (the codes' shape with that dimension divided, rounded up).

    Three forms, by result types:
    * `tensor<RxCxbf16>`: the weight dequantized;
    * `(tensor<CxRxi8>, tensor<Cxf32>)`: Sol's int8 of the transposed weight
      (a MatMul's `[in, out]` as a linear's `[out, in]`), for signed 8-bit
      codes with zero points 0 and scales per tensor or per column;
    * `(tensor<CxRxi4>, tensor<Cx(R/g)xf32>, tensor<Cx(R/g)xui8>)`: Sol's
      int4 of the transposed weight (group g = `block_size`), for 4-bit
      codes in blocks along axis 0 that divide R.

    runtime/support/QuantizedCheckpoint.h has the conversions.

    ```mlir
    %w = sol.dequantize_weight %q, %s {axis = 1} : (tensor<64x96xi8>, tensor<96xf32>) -> (tensor<64x96xbf16>)
    %c, %sc = sol.dequantize_weight %q, %s {axis = 1} : (tensor<64x96xi8>, tensor<96xf32>) -> (tensor<96x64xi8>, tensor<96xf32>)
    ```
  }];
  let arguments = (ins Sol_WeightTensor:$codes, Sol_WeightTensor:$scales,
                       Optional<Sol_WeightTensor>:$zero_points,
                       DefaultValuedAttr<I64Attr, "1">:$axis,
                       DefaultValuedAttr<I64Attr, "0">:$block_size);
  let results = (outs Variadic<Sol_WeightTensor>:$outputs);
  let assemblyFormat = [{
    $codes `,` $scales (`,` $zero_points^)? attr-dict `:` `(` type($codes) `,`
    type($scales) (`,` type($zero_points)^)? `)` `->` `(` type($outputs) `)`
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Layers (tensor level; several are kernel-level too)
//===----------------------------------------------------------------------===//

def Sol_EmbeddingOp : Sol_Op<"embedding", [Pure]> {
  let summary = "looks up one row of the embedding table per token";
  let description = [{
    `ids` is `tensor<?xi32>`, `table` is `tensor<VxDxT>`; the result is
    `tensor<?xDxT>`. With `scale`, each row is multiplied by it (Gemma's
    sqrt(hidden_size), rounded to the activation type first as Gemma's
    bf16 models do).
  }];
  let arguments = (ins Sol_IndexTensor:$ids, Sol_WeightTensor:$table,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` `(` type($ids) `,` type($table) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_LinearOp : Sol_Op<"linear", [Pure,
                                      AttrSizedOperandSegments]> {
  let summary = "x · Wᵀ + b, with an optional fused epilogue";
  let description = [{
    `input` is `tensor<?xK>`, `weight` is `tensor<NxK>` (the Hugging Face
    `out × in` layout), `bias` (optional) is `tensor<N>`. The result has the
    input's element type, or `f32` (logits), and by `epilogue`:

    * `none`: `y = x · Wᵀ + b`, `tensor<?xN>`;
    * `residual`: `residual + y` (rounded to the activation type once for
      `y` and once for the sum), `tensor<?xN>`; the `residual` operand is
      required. Code generation adds in place, into the residual's buffer;
    * `swiglu`: W's rows (and the bias) are interleaved gate/up pairs (row
      `2i` gate row `i`, row `2i + 1` up row `i`), and the result is
      `silu(g_i) · u_i`, `tensor<?x(N/2)>`.

    A quantized weight (sol-quantize's `sol.quantize_weight`, or imported)
    comes with `weight_scales`, for `int4` also `weight_zeros`, and the
    `quant` scheme (and `group_size` for `int4`): the linear multiplies by
    the dequantized weight; with `fp8` it also rounds each input row to E4M3
    under a per-row scale (max |x| / 448) before the product.

    Importers produce the plain form; sol-fuse-projections and
    sol-fuse-residual-add produce the epilogues.
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$weight,
                       Optional<Sol_WeightTensor>:$bias,
                       Optional<Sol_FloatTensor>:$residual,
                       Optional<Sol_WeightTensor>:$weight_scales,
                       Optional<Sol_WeightTensor>:$weight_zeros,
                       DefaultValuedAttr<Sol_LinearEpilogueAttr,
                                         "::sol::LinearEpilogue::None">:$epilogue,
                       DefaultValuedAttr<Sol_QuantSchemeAttr,
                                         "::sol::QuantScheme::None">:$quant,
                       DefaultValuedAttr<I64Attr, "0">:$group_size);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`residual` $residual^)?
    (`scales` $weight_scales^)? (`zeros` $weight_zeros^)? attr-dict `:` `(`
    type($input) `,` type($weight) (`,` type($bias)^)?
    (`residual` type($residual)^)? (`scales` type($weight_scales)^)?
    (`zeros` type($weight_zeros)^)? `)` `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$weight, "::mlir::Value":$bias), [{
      build($_builder, $_state, result, input, weight, bias,
            /*residual=*/::mlir::Value(), ::sol::LinearEpilogue::None);
    }]>,
    // An unquantized linear.
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$weight, "::mlir::Value":$bias,
                   "::mlir::Value":$residual,
                   "::sol::LinearEpilogue":$epilogue), [{
      build($_builder, $_state, result, input, weight, bias, residual,
            /*weight_scales=*/::mlir::Value(), /*weight_zeros=*/::mlir::Value(),
            epilogue, ::sol::QuantScheme::None, 0);
    }]>
  ];
  let hasVerifier = 1;
}

def Sol_RmsNormOp : Sol_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalisation, scaled by a weight";
  let description = [{
    `input` is `tensor<?xN>` and `weight` is `tensor<G>` with `N % G == 0`:
    each group of `G` consecutive elements of a row is normalised on its own
    (`G == N` for the usual layer norm of a hidden state; `G == head_dim` for
    Qwen3's per-head `q_norm` / `k_norm`). The weight may be `f32` (Gemma's
    `1 + w`, from `sol.offset_weight`).
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$weight,
                       F32Attr:$epsilon);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` `(` type($input) `,` type($weight) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_RopeOp : Sol_Op<"rope", [Pure]> {
  let summary = "rotary position embedding (rotate-half convention)";
  let description = [{
    `input` is `tensor<?x(H·D)>`: `num_heads` heads of `head_dim` each.
    Each head is rotated by the angle `position · inv_freq[i]`, where the
    inverse frequencies follow from `rope` (base and long-context scaling).
    sol-lower-to-kernels folds it into the KV-cache append
    (`sol.rope_kv_write`) of the attention that reads it.
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
    [MemoryEffects<[MemRead, MemWrite]>, Sol_KvCacheUser]> {
  let summary = "grouped-query attention over the KV cache of one layer";
  let description = [{
    Appends `key` and `value` (`tensor<?x(Hkv·D)>`) at `positions` of the
    sequences named by `token_seq` to the paged KV cache of layer `layer`,
    then lets every query token (`tensor<?x(H·D)>`) attend to the cached
    tokens of its own sequence: causally up to its own position, and within
    the last `sliding_window` positions when that is set. Scores are
    `q·k · scale`, with `softcap` then `softcap · tanh(score / softcap)`
    (Gemma 2). With `sinks` (`tensor<H>`, one logit per query head:
    gpt-oss), each head's softmax has one more term in its denominator,
    `exp(sink)`, that belongs to no key: a head may attend to nothing. The
    result has the query's type. Because it reads and writes the cache, it
    is not pure. sol-lower-to-kernels turns it into `sol.rope_kv_write` and
    `sol.kv_attention`.
  }];
  let arguments = (ins Sol_FloatTensor:$query, Sol_FloatTensor:$key,
                       Sol_FloatTensor:$value, Sol_IndexTensor:$positions,
                       Sol_IndexTensor:$token_seq,
                       Optional<Sol_WeightTensor>:$sinks, I64Attr:$layer,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F32Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "true">:$causal,
                       OptionalAttr<I64Attr>:$sliding_window,
                       OptionalAttr<F32Attr>:$softcap);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $positions `,` $token_seq
    (`sinks` $sinks^)? attr-dict `:`
    `(` type($query) `,` type($key) `,` type($value) `,` type($positions) `,`
    type($token_seq) (`,` type($sinks)^)? `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_AddOp : Sol_Op<"add", [Pure, Elementwise, SameOperandsAndResultType,
                                Commutative]> {
  let summary = "elementwise sum (residual connections)";
  let arguments = (ins Sol_FloatTensor:$lhs, Sol_FloatTensor:$rhs);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Sol_SwigluOp : Sol_Op<"swiglu", [Pure]> {
  let summary = "act(gate) · up: SwiGLU, or GeGLU with `gelu_tanh`";
  let description = [{
    Two forms: `sol.swiglu %gate, %up` with both `tensor<?xI>` (tensor
    level), or `sol.swiglu %gate_up` with one `tensor<?x(2·I)>` whose first
    half of columns is the gate (kernel level). The result is `tensor<?xI>`.
    `activation` is `silu` (default) or `gelu_tanh` (Gemma's
    `gelu_pytorch_tanh`: 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³)))).
  }];
  let arguments = (ins Sol_FloatTensor:$gate, Optional<Sol_FloatTensor>:$up,
                       DefaultValuedAttr<Sol_GateActivationAttr,
                                         "::sol::GateActivation::Silu">:$activation);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $gate (`,` $up^)? attr-dict `:` `(` type($gate) (`,` type($up)^)? `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_MoeOp : Sol_Op<"moe", [Pure, AttrSizedOperandSegments]> {
  let summary = "mixture of experts: each row through the gated MLPs of its top_k experts";
  let description = [{
    `input` is `tensor<?xH>`; `router` is `[E, H]`; `gate` and `up` are
    `[E·I, H]` (expert e's rows at [e·I, (e+1)·I)) and `down` is `[E·H, I]`
    (expert e's at [e·H, (e+1)·H)): the experts' weights stacked by
    `sol.concat_weights`. Per row x: p = softmax(x · routerᵀ) in float32;
    the `top_k` experts of highest p (the lower index first on ties), their
    p divided by their sum when `normalize_top_k` (Mixtral; Qwen3-MoE's
    `norm_topk_prob`; gpt-oss's softmax over the top-k logits is the same);
    the result is Σ p_e · down_e(act(gate_e · x) · (up_e · x)) with
    `activation` as for `sol.swiglu`, of the input's type.

    `biases`, when present, are four: the router's `[E]` (added to its
    logits) and the experts' gate, up (`[E·I]`) and down (`[E·H]`) biases,
    stacked like their weights (gpt-oss). `clamped_silu` is gpt-oss's
    activation: with g = min(gate, L) and u = clamp(up, −L, L) for
    L = `activation_limit`, it gives (u + 1) · g · sigmoid(1.702 · g).

    MXFP4 experts (gpt-oss's checkpoints): `gate`, `up` and `down` are `ui8`
    codes, two E2M1 values a byte (the low nibble first), `[E·I, H/2]` and
    `[E·H, I/2]`, and `scales` holds their E8M0 exponents, one a group of
    32 values of a row: `[E·I, H/32]` twice and `[E·H, I/32]`.

    Quantized experts (sol-quantize): `gate`, `up` and `down` are `i8`,
    `f8E4M3FN` or `i4` codes of their float shapes, as a quantized
    `sol.linear`'s weight; `scales` holds each one's f32 scales (`[rows]` for
    int8 and fp8, `[rows, K/G]` for int4 in groups of G along its inputs),
    and `zeros` int4's ui8 zero points of the scales' shapes.

    ```mlir
    %y = sol.moe %x, %router, %gate, %up, %down {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<8x64xbf16>, tensor<256x64xbf16>, tensor<256x64xbf16>, tensor<512x32xbf16>) -> tensor<?x64xbf16>
    ```
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$router,
                       Sol_WeightTensor:$gate, Sol_WeightTensor:$up,
                       Sol_WeightTensor:$down,
                       Variadic<Sol_WeightTensor>:$biases,
                       Variadic<Sol_WeightTensor>:$scales,
                       Variadic<Sol_WeightTensor>:$zeros, I64Attr:$top_k,
                       BoolAttr:$normalize_top_k,
                       DefaultValuedAttr<Sol_GateActivationAttr,
                                         "::sol::GateActivation::Silu">:$activation,
                       OptionalAttr<F32Attr>:$activation_limit);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $router `,` $gate `,` $up `,` $down (`biases` `(` $biases^ `)`)?
    (`scales` `(` $scales^ `)`)? (`zeros` `(` $zeros^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    int64_t getNumExperts() { return getRouter().getType().getDimSize(0); }
    /// Each expert's intermediate size.
    int64_t getExpertWidth() { return getGate().getType().getDimSize(0) / getNumExperts(); }
    /// Whether the experts are MXFP4 codes (with `scales`).
    bool isMxfp4() { return getGate().getType().getElementType().isUnsignedInteger(8); }
    /// The scheme of sol-quantize's expert codes (by their type), or none
    /// (float or MXFP4 experts).
    ::sol::QuantScheme getExpertQuant() {
      ::mlir::Type t = getGate().getType().getElementType();
      if (t.isSignlessInteger(8))
        return ::sol::QuantScheme::Int8;
      if (::mlir::isa<::mlir::Float8E4M3FNType>(t))
        return ::sol::QuantScheme::Fp8;
      if (t.isSignlessInteger(4))
        return ::sol::QuantScheme::Int4;
      return ::sol::QuantScheme::None;
    }
    /// Int4 experts: the inputs per scale (0 otherwise).
    int64_t getExpertGroupSize() {
      if (getExpertQuant() != ::sol::QuantScheme::Int4 || getScales().empty())
        return 0;
      auto scales = ::mlir::cast<::mlir::RankedTensorType>(getScales()[0].getType());
      return scales.getDimSize(1) > 0 ? getGate().getType().getDimSize(1) / scales.getDimSize(1) : 0;
    }
  }];
  let hasVerifier = 1;
}

def Sol_SigmoidGateOp : Sol_Op<"sigmoid_gate", [Pure,
                                                   AllTypesMatch<["value", "result"]>]> {
  let summary = "a value scaled per row by sigmoid(x · w)";
  let description = [{
    `value` and `input` are `tensor<?xH>` with the same rows, `weight` is
    `[1, H]`: row r of the result is `sigmoid(input[r] · weight)` (float32)
    times `value[r]`. Qwen2-MoE scales its shared expert's output so.

    ```mlir
    %g = sol.sigmoid_gate %shared, %x, %w : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<1x64xbf16>) -> tensor<?x64xbf16>
    ```
  }];
  let arguments = (ins Sol_FloatTensor:$value, Sol_FloatTensor:$input,
                       Sol_WeightTensor:$weight);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $value `,` $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Sol_AllReduceOp : Sol_Op<"all_reduce", [Pure,
                                               AllTypesMatch<["input", "result"]>]> {
  let summary = "the sum of a value over tensor-parallel ranks";
  let description = [{
    Every rank contributes its `input` (the partial product of a
    row-parallel linear: each rank multiplied its slice of the inputs by its
    slice of the weight's columns, rank 0 adding the bias) and receives the
    sum over the `ranks` ranks. Code generation works in place.

    ```mlir
    %y = sol.all_reduce %partial {ranks = 2 : i64} : tensor<?x64xbf16>
    ```
  }];
  let arguments = (ins Sol_FloatTensor:$input, I64Attr:$ranks);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Sol_AllGatherOp : Sol_Op<"all_gather", [Pure]> {
  let summary = "each tensor-parallel rank's columns side by side";
  let description = [{
    `input` is `tensor<?xN>` on each of the `ranks` ranks; every rank
    receives `tensor<?x(ranks·N)>`, rank 0's columns first: the logits of a
    vocabulary-parallel LM head.

    ```mlir
    %logits = sol.all_gather %local {ranks = 2 : i64} : tensor<?x1024xf32> -> tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Sol_FloatTensor:$input, I64Attr:$ranks);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Sol_SplitOp : Sol_Op<"split", [Pure]> {
  let summary = "splits the columns of a token-major tensor into parts";
  let description = [{
    `input` is `tensor<?xN>`; result `i` is `tensor<?xS_i>` holding the next
    `S_i` columns, where the `S_i` sum to `N`. Fused projections are split
    back into their parts this way (Q, K and V from one GEMM). Code
    generation makes views, not copies.
  }];
  let arguments = (ins Sol_FloatTensor:$input);
  let results = (outs Variadic<Sol_FloatTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def Sol_LogitsOp : Sol_Op<"logits", [Pure]> {
  let summary = "final RMS norm and LM head on selected token rows";
  let description = [{
    Picks the rows `rows` (`tensor<?xi32>`, typically the last token of each
    sequence) of `hidden` (`tensor<?xD>`), normalises them with
    `norm_weight` (`tensor<D>`) and multiplies by `lm_head` (`tensor<VxD>`).
    The result is float32 logits `tensor<?xVxf32>`, one row per selected row,
    with `softcap` then `softcap · tanh(logit / softcap)` (Gemma 2's
    final_logit_softcapping).
  }];
  let arguments = (ins Sol_FloatTensor:$hidden, Sol_WeightTensor:$norm_weight,
                       Sol_WeightTensor:$lm_head, Sol_IndexTensor:$rows,
                       F32Attr:$epsilon, OptionalAttr<F32Attr>:$softcap);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $hidden `,` $norm_weight `,` $lm_head `,` $rows attr-dict `:` `(`
    type($hidden) `,` type($norm_weight) `,` type($lm_head) `,` type($rows)
    `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

def Sol_NormLinearOp : Sol_Op<"norm_linear", [Pure,
                                               AttrSizedOperandSegments]> {
  let summary = "an RMS norm in the prologue of a linear";
  let description = [{
    `sol.linear(sol.rms_norm(input, norm_weight, epsilon), weight, bias)`
    with the epilogue (and `residual`) of `sol.linear`. The norm covers the
    whole row (`norm_weight` is `tensor<K>`). Few-row GEMVs recompute the
    norm in each block instead of a launch of its own; made by
    sol-fuse-norm-linear and sol-fuse-logits.
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$norm_weight,
                       F32Attr:$epsilon, Sol_WeightTensor:$weight,
                       Optional<Sol_WeightTensor>:$bias,
                       Optional<Sol_FloatTensor>:$residual,
                       Optional<Sol_WeightTensor>:$weight_scales,
                       Optional<Sol_WeightTensor>:$weight_zeros,
                       DefaultValuedAttr<Sol_LinearEpilogueAttr,
                                         "::sol::LinearEpilogue::None">:$epilogue,
                       DefaultValuedAttr<Sol_QuantSchemeAttr,
                                         "::sol::QuantScheme::None">:$quant,
                       DefaultValuedAttr<I64Attr, "0">:$group_size);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $norm_weight `,` $weight (`,` $bias^)? (`residual` $residual^)?
    (`scales` $weight_scales^)? (`zeros` $weight_zeros^)?
    attr-dict `:` `(` type($input) `,` type($norm_weight) `,` type($weight)
    (`,` type($bias)^)? (`residual` type($residual)^)?
    (`scales` type($weight_scales)^)? (`zeros` type($weight_zeros)^)? `)`
    `->` type($result)
  }];
  let builders = [
    // An unquantized linear.
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$norm_weight, "::mlir::FloatAttr":$epsilon,
                   "::mlir::Value":$weight, "::mlir::Value":$bias,
                   "::mlir::Value":$residual,
                   "::sol::LinearEpilogueAttr":$epilogue), [{
      build($_builder, $_state, result, input, norm_weight, epsilon, weight,
            bias, residual, /*weight_scales=*/::mlir::Value(),
            /*weight_zeros=*/::mlir::Value(), epilogue,
            ::sol::QuantSchemeAttr::get($_builder.getContext(),
                                        ::sol::QuantScheme::None),
            $_builder.getI64IntegerAttr(0));
    }]>
  ];
  let hasVerifier = 1;
}

def Sol_AddRmsNormOp : Sol_Op<"add_rms_norm", [Pure]> {
  let summary = "a residual add and the RMS norm of the sum";
  let description = [{
    `sum = residual + input` (rounded to the activation type) and
    `normed = rms_norm(sum, weight, epsilon)`, in one kernel; code
    generation writes `sum` in place, into the residual's buffer. With
    `input_weight`, the input is normalised first:
    `sum = residual + rms_norm(input, input_weight, input_epsilon)` (Gemma's
    norms after attention and after the MLP). Made by sol-fuse-add-norm and
    sol-fuse-logits.
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_FloatTensor:$residual,
                       Sol_WeightTensor:$weight, F32Attr:$epsilon,
                       Optional<Sol_WeightTensor>:$input_weight,
                       OptionalAttr<F32Attr>:$input_epsilon);
  let results = (outs Sol_FloatTensor:$normed, Sol_FloatTensor:$sum);
  let assemblyFormat = [{
    $input `,` $residual `,` $weight (`input_norm` $input_weight^ `:`
    type($input_weight))? attr-dict `:` `(` type($input) `,`
    type($residual) `,` type($weight) `)` `->` `(` type($normed) `,`
    type($sum) `)`
  }];
  let hasVerifier = 1;
}

def Sol_HeadRmsNormOp : Sol_Op<"head_rms_norm", [Pure,
                                                  AllTypesMatch<["input", "result"]>]> {
  let summary = "per-head RMS norm of a column range, in place";
  let description = [{
    The columns `[column, column + num_heads · D)` of `input`
    (`tensor<?xN>`, `D` the size of `weight`) are normalised per head of
    `D`; with `second_weight`, the `second_heads` heads right after them are
    normalised by it (q's heads, then k's, in one kernel). The other columns
    pass through. The q/k norms of Qwen3 and Gemma 3 on the fused QKV
    projection; code generation works in place.
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_WeightTensor:$weight,
                       I64Attr:$column, I64Attr:$num_heads, F32Attr:$epsilon,
                       Optional<Sol_WeightTensor>:$second_weight,
                       DefaultValuedAttr<I64Attr, "0">:$second_heads);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`then` $second_weight^ `:` type($second_weight))?
    attr-dict `:` `(` type($input) `,` type($weight) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_RopeKvWriteOp : Sol_Op<"rope_kv_write", [
    MemoryEffects<[MemWrite]>, Sol_KvCacheUser,
    AllTypesMatch<["qkv", "result"]>]> {
  let summary = "rotates q and k of a packed QKV tensor and appends K and V";
  let description = [{
    `qkv` is `tensor<?x((H + 2·Hkv)·D)>`, per token the query heads, then the
    key heads, then the value heads. The result is `qkv` with q and k
    rotated by `rope` at `positions`; k and v are appended to the paged KV
    cache of `layer` for the sequences `token_seq` names. Code generation
    rotates in place.
  }];
  let arguments = (ins Sol_FloatTensor:$qkv, Sol_IndexTensor:$positions,
                       Sol_IndexTensor:$token_seq, I64Attr:$layer,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, Sol_RopeAttr:$rope);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv `,` $positions `,` $token_seq attr-dict `:` `(` type($qkv) `,`
    type($positions) `,` type($token_seq) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_KvAttentionOp : Sol_Op<"kv_attention", [
    MemoryEffects<[MemRead]>, Sol_KvCacheUser]> {
  let summary = "attention of the queries of a packed QKV over the KV cache";
  let description = [{
    The query heads of `qkv` (after `sol.rope_kv_write`) attend, causally and
    within `sliding_window` positions when set, to the cached K/V of `layer`
    of their sequence, scores soft-capped by `softcap` when set, with the
    heads' `sinks` in the softmax when given (as `sol.attention`); the
    result is `tensor<?x(H·D)>`.
  }];
  let arguments = (ins Sol_FloatTensor:$qkv, Sol_IndexTensor:$positions,
                       Sol_IndexTensor:$token_seq,
                       Optional<Sol_WeightTensor>:$sinks, I64Attr:$layer,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F32Attr:$scale,
                       OptionalAttr<I64Attr>:$sliding_window,
                       OptionalAttr<F32Attr>:$softcap);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv `,` $positions `,` $token_seq (`sinks` $sinks^)? attr-dict `:`
    `(` type($qkv) `,` type($positions) `,` type($token_seq)
    (`,` type($sinks)^)? `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_SoftcapOp : Sol_Op<"softcap", [Pure,
                                         AllTypesMatch<["input", "result"]>]> {
  let summary = "cap · tanh(x / cap) of float32 logits, in place";
  let description = [{
    Gemma 2's final-logit soft-capping on the LM head's f32 results
    (`sol.logits` with `softcap`); code generation works in place.
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, F32Attr:$cap);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Sol_GatherRowsOp : Sol_Op<"gather_rows", [Pure]> {
  let summary = "the rows of a token-major tensor that `rows` names";
  let description = [{
    `result[r] = input[rows[r]]`: the LM head then runs on the rows whose
    logits are wanted instead of every token of the step.
  }];
  let arguments = (ins Sol_FloatTensor:$input, Sol_IndexTensor:$rows);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $rows attr-dict `:` `(` type($input) `,` type($rows) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_ConcatColumnsOp : Sol_Op<"concat_columns", [Pure]> {
  let summary = "token-major tensors side by side";
  let description = [{
    The columns of `inputs`, in order, for each token: the packed QKV of an
    attention whose projections were not fused (-O0), or gate and up of an
    unfused SwiGLU. A copy.
  }];
  let arguments = (ins Variadic<Sol_FloatTensor>:$inputs);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` `(` type($inputs) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sol_GatherColumnsOp : Sol_Op<"gather_columns", [Pure]> {
  let summary = "each row's columns in the order `columns` names";
  let description = [{
    `result[r][j] = input[r][columns[j]]`, `columns` a permutation of the
    input's columns: the inputs of a GPTQ linear quantized with act-order
    (desc_act), whose weight columns are stored sorted by quantization
    group, reordered to match.

    ```mlir
    %p = sol.gather_columns %x {columns = array<i32: 2, 0, 3, 1>} : (tensor<?x4xbf16>) -> tensor<?x4xbf16>
    ```
  }];
  let arguments = (ins Sol_FloatTensor:$input, DenseI32ArrayAttr:$columns);
  let results = (outs Sol_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` `(` type($input) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

include "ir/SolOnnxOps.td"

#endif // SOL_OPS_TD

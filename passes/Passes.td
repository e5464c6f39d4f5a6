//===- Passes.td - Sol's passes ----------------------------*- tablegen -*-===//
#ifndef SOL_PASSES_TD
#define SOL_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Raising (every level): an imported ONNX graph's idioms into Sol's layer
// ops, one pass per idiom, then sol-raise-check. Modules from the Hugging
// Face importer have nothing to raise.
//===----------------------------------------------------------------------===//

def SolRaiseInputs : Pass<"sol-raise-inputs", "::mlir::ModuleOp"> {
  let summary = "Sol's arguments for an imported ONNX graph";
  let description = [{
    Adds `tokens`, `positions`, `token_seq` and `logit_rows` in front of the
    graph's inputs and makes `input_ids` and `position_ids` views of the
    first two (a batch of one sequence), so that the raise patterns can use
    Sol's positions. Only modules the ONNX importer wrote
    (`sol.onnx_source`).
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseEmbedding : Pass<"sol-raise-embedding", "::mlir::ModuleOp"> {
  let summary = "ONNX Gather of a weight's rows into sol.embedding";
  let description = [{
    `Gather(table, ids)` along axis 0 of a 2-D weight becomes
    `sol.embedding` of the ids seen as Sol's flat `tensor<?xi32>`; a `Mul`
    of it by a scalar constant (Gemma's sqrt(hidden_size)) its `scale`.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseMoe : Pass<"sol-raise-moe", "::mlir::ModuleOp"> {
  let summary = "com.microsoft MoE / QMoE into sol.moe";
  let description = [{
    onnxruntime's mixture-of-experts ops (onnxruntime-genai writes them for
    gpt-oss) become `sol.moe`: the router is the raised linear (MatMul,
    bias Add, Reshape to [tokens, experts]) of the same input that feeds
    `router_probs`; `k`, `normalize_routing_weights` and the activation
    (`swiglu` as silu(g)·u or gpt-oss's clamped form with alpha 1.702, beta
    1 and `swiglu_limit`; `silu` with fc3) map to its attributes; fc1 holds
    gate and up interleaved (`swiglu_fusion` 1), or fc1 and fc3 hold them
    (0). QMoE's 4-bit codes in blocks of a multiple of 32 become Sol's int4
    experts (zero point 8 unless given) when every projection's codes are
    so; otherwise all are dequantized to bf16 with a note. Refused by name: `swiglu_fusion` 2, `use_sparse_mixer`,
    `router_weights`, FP4 `quant_type`s, CUTLASS-prepacked weights (the
    attribute, or a graph whose genai_config.json names the CUDA provider),
    activations that are not gated, and biases on some but not all of the
    router and the experts. Runs after sol-raise-linear (the router) and
    before sol-raise-rms-norm (the norm that adds the experts' output to
    the residual).
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseRmsNorm : Pass<"sol-raise-rms-norm", "::mlir::ModuleOp"> {
  let summary = "decomposed RMSNorm into sol.rms_norm";
  let description = [{
    `w * (x / sqrt(mean(x^2, axis -1) + eps))` in any of the exporters'
    spellings (Pow(x, 2) or Mul(x, x); Div(x, s), Mul(x, Div(1, s)) or
    Mul(x, Reciprocal(s)); float casts anywhere in between) becomes
    `sol.rms_norm(x, w, eps)`. A norm over the last axis of a value whose
    heads a Reshape split off (Qwen3's q/k norm) becomes the per-group norm
    of the unsplit rows. A weight stored in f32 or f16 is kept in f32
    (Gemma's 1 + w, which bf16 would round). Not raised: another exponent,
    a mean over another axis or without keepdims, an epsilon outside
    (0, 1e-2], a norm whose divided value differs from the squared one.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseLinear : Pass<"sol-raise-linear", "::mlir::ModuleOp"> {
  let summary = "MatMul by a weight (and its bias Add) into sol.linear";
  let description = [{
    `MatMul(x, Wt)` with `Wt` a 2-D weight stored transposed (`[in, out]`,
    the exporters' layout) becomes `sol.linear(x, transpose_weight(Wt))`;
    `MatMul(x, Transpose(W))` with `W` in `[out, in]` becomes
    `sol.linear(x, W)`. An `Add` of a `[out]` weight right after (either
    operand order) becomes the linear's bias. Weights of other float types
    are converted to bf16 by `sol.convert_weight`. Integer weights
    (`DequantizeLinear`, onnxruntime's `MatMulInteger`, `MatMulNBits`) become
    Sol's int8 or int4 linears where their codes are that already, else are
    dequantized to bf16 with a note.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseSwiglu : Pass<"sol-raise-swiglu", "::mlir::ModuleOp"> {
  let summary = "act(gate) * up into sol.swiglu";
  let description = [{
    `Mul(Mul(g, Sigmoid(g)), u)` (any operand order, casts allowed) where
    `g` and `u` are raised values of one width becomes `sol.swiglu(g, u)`;
    `Mul(Gelu(g), u)` with approximate = "tanh" (or com.microsoft
    `FastGelu(g)`) the same with `activation = gelu_tanh` (Gemma).
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseResidualAdd : Pass<"sol-raise-residual-add", "::mlir::ModuleOp"> {
  let summary = "Adds of two raised values into sol.add";
  let description = [{
    The residual stream's `Add`s: both operands raised values of one width.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseRope : Pass<"sol-raise-rope", "::mlir::ModuleOp"> {
  let summary = "rotary embeddings into sol.rope";
  let description = [{
    `x * cos + rotate_half(x) * sin` on the head view of a raised projection
    (rotate_half as Slice, Neg, Concat on the last axis) becomes `sol.rope`.
    cos and sin are evaluated for a few positions: they must be those of
    position x inv_freq, and inv_freq one that `#sol.rope` computes (the
    rope parameters of the config.json beside the graph, or plain or linear
    scaling fitted from the frequencies).
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseAttention : Pass<"sol-raise-attention", "::mlir::ModuleOp"> {
  let summary = "eager attention over past/present caches into sol.attention";
  let description = [{
    `Transpose(Softmax(q @ Transpose(k) * scale + mask) @ v)` where k and v
    are a past input concatenated with the new tokens (and repeated for
    GQA) becomes `sol.attention` of the layer the past input names. The mask
    is evaluated for steps with and without cached tokens and must be
    causal, or causal within a sliding window (which the op records).
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseOutputs : Pass<"sol-raise-outputs", "::mlir::ModuleOp"> {
  let summary = "an ONNX graph's outputs and inputs into Sol's";
  let description = [{
    The logits (the LM head's linear of the final norm) become `sol.logits`
    of the `logit_rows`; the present key/value outputs are dropped (Sol's
    attention keeps the cache); inputs nothing reads any more are removed;
    the module gets its `sol.model`. Leaves the function as it is when any
    output is something else.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolRaiseCheck : Pass<"sol-raise-check", "::mlir::ModuleOp"> {
  let summary = "refuse a graph that was not raised completely, with one report";
  let description = [{
    Removes what raising left unused, then fails if any ONNX node remains,
    naming every unsupported op type (domain, type, count, node names) and
    the inputs and outputs not yet turned into Sol's. No silent fallback: a
    graph Sol cannot raise is not compiled.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

//===----------------------------------------------------------------------===//
// Tensor parallelism (solc --tensor-parallel-size N): before the fusions, so
// that they fuse each rank's own projections.
//===----------------------------------------------------------------------===//

def SolShardTensorParallel : Pass<"sol-shard-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "split the model over tensor-parallel ranks (GPUs)";
  let description = [{
    Rewrites the tensor-level module into the program each of `ranks` GPUs
    runs at once (SPMD), with local shapes, Megatron-style:

    * attention by heads: the query, key and value projections keep their
      rank's heads (`sol.shard_weight` of their rows, biases and quantized
      scales alike), with the per-head ops between them and the attention
      (rope, q/k norms); key/value heads are split when `ranks` divides
      them, else replicated, each rank keeping the one its query heads read
      (`ranks` a multiple of the kv heads);
    * the output projection takes its rank's columns (row-parallel), rank 0
      adding the bias (`sol.first_rank_weight`), and a `sol.all_reduce` sums
      the ranks' partial products;
    * the MLP: gate and up keep their rank's rows (column-parallel), down
      its columns, then `sol.all_reduce`; a `sol.moe` cuts every expert's
      intermediate rows the same way (`groups` = experts) and keeps the
      router whole;
    * the LM head by vocabulary, with `sol.all_gather` of the logits' columns
      (kept whole when `ranks` does not divide the vocabulary);
    * embeddings, norms and residual adds are replicated.

    The module records `sol.tensor_parallel_size`. A layout that cannot be
    split evenly (query heads, kv heads, an MLP's or an expert's
    intermediate size, a quantized group) is refused with an error naming
    the op and the numbers. `ranks = 1` leaves the module unchanged.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "GPUs the model is split over">
  ];
  let dependentDialects = ["::sol::SolDialect"];
}

//===----------------------------------------------------------------------===//
// Fusions (-O2 and up): each rewrites tensor-level ops into kernel-level ops
// that do more in one launch.
//===----------------------------------------------------------------------===//

def SolFuseProjections : Pass<"sol-fuse-projections", "::mlir::func::FuncOp"> {
  let summary = "merge projections that share an input into one GEMM";
  let description = [{
    Batch-1 decode reads every weight once per token and launches one kernel
    per op, so fewer, larger GEMMs are faster. This pass:

    * merges `sol.linear` ops that read the same input (Q, K and V) into one
      linear over their weights stacked by `sol.concat_weights`, followed by
      `sol.split`;
    * merges the gate and up projections feeding a `sol.swiglu` into one
      linear with the `swiglu` epilogue, over the gate and up rows paired by
      `sol.interleave_rows`.

    Quantized linears (an AWQ, GPTQ or fp8 checkpoint's) are merged the
    same way, their scales and zero points stacked or paired like the
    codes, when every part has the same scheme and group size. Linears with
    an epilogue, of different inputs, quantized differently, or where only
    some have a bias are left alone.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolFuseResidualAdd : Pass<"sol-fuse-residual-add", "::mlir::func::FuncOp"> {
  let summary = "a residual add into the epilogue of the linear it adds";
  let description = [{
    `sol.add(r, sol.linear(x, W))`, where the add is the linear's only user,
    becomes `sol.linear(x, W) residual(r)`: the GEMM adds into the residual
    stream in place, with no launch and no round trip of its own. Only when
    `r` is dead after the linear (so its buffer can take the sum there), is
    not a function argument or a column slice, and `x` does not live in
    `r`'s buffer (blocks read all of `x` while others write their part).
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolFuseAddNorm : Pass<"sol-fuse-add-norm", "::mlir::func::FuncOp"> {
  let summary = "a residual add and the RMS norm of its sum into one kernel";
  let description = [{
    `sol.rms_norm(sol.add(r, x))` becomes `sol.add_rms_norm(x, r)`, which
    writes the sum into `r`'s buffer and the normalised rows beside it; other
    users of the sum read it from there. Only when `r` is dead after the add
    and is not a function argument, and the norm covers whole rows. Then
    `sol.add_rms_norm(sol.rms_norm(x, w1), r, w2)`, where that norm has no
    other user, takes the norm in as `input_norm w1` (Gemma's norms after
    attention and the MLP): one kernel instead of two.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolFuseNormLinear : Pass<"sol-fuse-norm-linear", "::mlir::func::FuncOp"> {
  let summary = "an RMS norm into the prologue of the linear that reads it";
  let description = [{
    `sol.linear(sol.rms_norm(h, w), W)` becomes `sol.norm_linear(h, w, W)`
    when the linear is the norm's only user, the norm covers whole rows, its
    input is not a `sol.add` (sol-fuse-add-norm takes those), only weights
    are computed between the two, and the linear's residual (if any) is not
    `h`'s buffer. Few-row GEMVs then recompute the norm in each block instead
    of a launch of its own.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolFuseLogits : Pass<"sol-fuse-logits", "::mlir::func::FuncOp"> {
  let summary = "the LM head on the wanted rows, its norm in the prologue";
  let description = [{
    `sol.logits` becomes `sol.gather_rows` of the rows whose logits are
    wanted (one per sequence in a decode step, not one per token) and a
    `sol.norm_linear` with the final norm in its prologue. When the hidden
    state is a `sol.add`, both addends are gathered and summed by
    `sol.add_rms_norm`, so the add runs on the gathered rows only.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

//===----------------------------------------------------------------------===//
// Lowering (every level)
//===----------------------------------------------------------------------===//

def SolLowerToKernels : Pass<"sol-lower-to-kernels", "::mlir::func::FuncOp"> {
  let summary = "the remaining tensor-level ops as kernel-level ops";
  let description = [{
    After it, every op of `@forward` is one op of the plan:

    * `sol.attention` over `sol.rope`'d queries and keys becomes
      `sol.rope_kv_write` (rotate, append K and V to the cache) and
      `sol.kv_attention` on a packed QKV tensor: the tensor Q, K and V were
      split from when they are its consecutive columns (after
      sol-fuse-projections), with per-head q/k norms on it as
      `sol.head_rms_norm`; else their `sol.concat_columns`;
    * `sol.swiglu %gate, %up` becomes `sol.swiglu` of their
      `sol.concat_columns`;
    * `sol.logits` becomes `sol.gather_rows`, `sol.rms_norm` and a linear
      with f32 results (sol-fuse-logits does better at -O2).

    Fails, naming the op, on what it cannot lower (an attention whose query
    or key has no `sol.rope`, a non-causal attention, query and key with
    different rope parameters).
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolQuantize : Pass<"sol-quantize", "::mlir::func::FuncOp"> {
  let summary = "quantize the weights of the linears";
  let description = [{
    Runs on kernel-level IR (after sol-lower-to-kernels). The weight of every
    `sol.linear` and `sol.norm_linear` becomes the codes of a
    `sol.quantize_weight` of it, and the linear takes its scales (and zero
    points) and the scheme:

    * `int8`: W8A16, symmetric per output row;
    * `fp8`: W8A8 E4M3, per output row; the linear quantizes its input
      rows at run time;
    * `int4`: W4A16, asymmetric, groups of `group-size` inputs (with
      `clip-search`, each group's range shrunk by the best of a 20-point
      grid of ratios; without, plain round to nearest).

    The experts of a `sol.moe` take the scheme too (gate, up and down codes
    with their scales and zero points; the router stays float); MXFP4
    experts keep their format, with a warning. The LM head (the linear
    whose results are f32 logits) keeps its weight unless `lm-head` is set. A linear that cannot take the scheme (int4 with
    input features that are not a multiple of the group size) keeps its
    weight with a warning. A linear that is quantized already (imported from
    a quantized checkpoint) keeps its format; one warning counts them. Each
    linear left alone gets a `sol.quant_kept` string attribute saying why,
    which the plan records.
  }];
  let options = [
    Option<"scheme", "scheme", "std::string", /*default=*/"\"int8\"",
           "int8, fp8 or int4">,
    Option<"groupSize", "group-size", "int64_t", /*default=*/"128",
           "inputs per int4 scale and zero point (an even divisor of K)">,
    Option<"clipSearch", "clip-search", "bool", /*default=*/"false",
           "int4: search each group's clipping ratio">,
    Option<"lmHead", "lm-head", "bool", /*default=*/"false",
           "quantize the LM head too">
  ];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolAwqCalibrate : Pass<"sol-awq-calibrate", "::mlir::ModuleOp"> {
  let summary = "AWQ: activation-aware scales and clipping from calibration text";
  let description = [{
    Runs on tensor-level IR (as importers produce it), before the fusions,
    and prepares the linears for int4 (`sol-quantize` with the same group
    size) as the AWQ paper does. The module is evaluated in float32 over the
    calibration sequences (TensorEvaluator), layer by layer in program
    order, each layer fed the unquantized output of the one before. Per
    scaling group (a norm and the linears that read it; the up projection
    and the down projection that reads its SwiGLU; V and O where their
    shapes match, so not under grouped-query attention):

    * per input channel, the mean |x| over the calibration tokens, and the
      mean of |w| normalised by its int4 group's largest;
    * for α in 0, 1/20, ... 19/20, scales s = x_mean^α / w_mean^(1−α)
      normalised to a geometric mean of 1 between their extremes, and
      s = 1; the group's linears quantized as W·s (round to nearest) and
      evaluated on x/s through the ops up to the layer's residual add: the
      candidate whose output differs least (mean squared error) from the
      float one wins;
    * the linears' input channels become `sol.scale_weight` (× s) and the
      producer of their input (the norm's weight, the up or V projection's
      rows and bias) `sol.scale_weight` (÷ s).

    Then each linear's int4 groups get a clipping ratio (1, 0.95, ... 0.55)
    by the error of the group's outputs on the calibration
    inputs (`sol.clamp_weight`), except the projections that feed a rope
    (queries and keys: their error shows in attention scores, not in their
    outputs). Linears whose inputs are not a multiple of the group size get
    scales but no clipping. Built with the weight store and the calibration
    tokens (createSolAwqCalibrate); the scales and ratios are new tensors of
    the store.

    Mixtures of experts (float experts whose hidden size and width the group
    size divides) are routed in float32, each expert's tokens through its
    MLP, and calibrated as AutoAWQ does: the norm before a mixture forms a
    group with it (every expert's stacked gate and up are quantized with the
    group's scales, the router and Qwen2-MoE's shared-expert gate take them
    exactly, a shared expert's linears belong to the group too); each
    expert's up -> down is a group of its own, searched on the tokens routed
    to it by the error of its down projection alone (up's rows divided,
    down's inputs multiplied: `sol.scale_weight` with `[E, I]` scales); then
    the clipping of each expert's gate, up and down on its tokens. An expert
    no calibration token reaches keeps round to nearest.
  }];
  let options = [
    Option<"groupSize", "group-size", "int64_t", /*default=*/"128",
           "inputs per int4 scale and zero point">,
    Option<"gridPoints", "grid-points", "int", /*default=*/"20",
           "points of the α grid and of the clipping grid">
  ];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolMaterializeWeights : Pass<"sol-materialize-weights", "::mlir::ModuleOp"> {
  let summary = "compute the weight transforms into the weight store";
  let description = [{
    Replaces every tree of weight transforms (`sol.concat_weights`,
    `sol.slice_rows`, `sol.interleave_rows`, `sol.permute_head_dims`,
    `sol.convert_weight`, `sol.offset_weight`, `sol.transpose_weight`,
    `sol.scale_weight`, `sol.clamp_weight`, `sol.quantize_weight`,
    `sol.unpack_nbits`, `sol.dequantize_weight`) over
    `sol.weight` ops by one `sol.weight` naming a new tensor of the
    weight store, whose bytes are computed when the plan writer reads them
    (nothing is copied before). Names say what was derived from what:
    `l.{q_proj,k_proj,v_proj}.weight` for a concatenation or an interleave
    of those weights, `name~BF16` for a conversion, `name~rows64+32` for a
    slice, `name~rot96` for a partial-rotary permutation, `name~plus1` for
    an offset, `name~t` for a
    transpose, `name~scaled` and `name~clamped` for AWQ's transforms, `name~int8`, `name~int8.scales` (and `name~int4.zeros`) for a
    quantization, `name~int4` or `name~bf16` for an unpacked MatMulNBits weight, `#2`, `#3`... appended where two derived tensors would share
    a name. Run without a weight store (solc-opt), it rewrites the IR only.
  }];
  let dependentDialects = ["::sol::SolDialect"];
}

def SolPlanKvCache : Pass<"sol-plan-kv-cache", "::mlir::ModuleOp"> {
  let summary = "choose the paged KV cache's layout and record it on the module";
  let description = [{
    Reads every op that uses the KV cache (`sol.attention`,
    `sol.rope_kv_write`, `sol.kv_attention`: layer, kv heads, head dim) and
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

    Errors: no op uses the cache, layers that disagree on kv heads or head
    dim, a block size that is not a power of two in [8, 256], an unknown
    dtype, a head dim the fp8 kernels do not support, rows not a multiple of
    16 bytes.
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

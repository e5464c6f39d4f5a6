//===- SolAttrs.td - Attributes of the sol dialect ---------*- tablegen -*-===//
#ifndef SOL_ATTRS_TD
#define SOL_ATTRS_TD

include "ir/SolDialect.td"

def Sol_RopeScalingKind : I32EnumAttr<"RopeScalingKind",
    "how rotary position frequencies are rescaled for long contexts", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Linear", 1, "linear">,
      I32EnumAttrCase<"Llama3", 2, "llama3">,
      I32EnumAttrCase<"Yarn", 3, "yarn">,
      I32EnumAttrCase<"LongRope", 4, "longrope">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}

def Sol_RopeScalingKindAttr
    : EnumAttr<Sol_Dialect, Sol_RopeScalingKind, "rope_scaling_kind">;

def Sol_RopeAttr : Sol_Attr<"Rope", "rope"> {
  let summary = "Rotary position embedding parameters";
  let description = [{
    `theta` is the base of the frequencies; `kind` selects the long-context
    rescaling and the parameters that apply to it:

    * `linear`: positions are divided by `factor`.
    * `llama3`: `factor`, `low_freq_factor`, `high_freq_factor`,
      `original_max_position` (Llama 3.1 / 3.2).
    * `yarn`: `factor`, `original_max_position`, `beta_fast`, `beta_slow`,
      `attention_factor` (0 means the default `0.1 ln(factor) + 1`),
      `truncate` (transformers' flooring of the correction range; gpt-oss
      turns it off).
    * `longrope` (Phi-3): each pair's frequency divided by `short_factor[i]`
      below `original_max_position` and by `long_factor[i]` from there on
      (a position's own choice; Hugging Face switches once the sequence is
      longer, which is the same for every token a decode step adds);
      cos and sin times `attention_factor`.

    `rotary_dim` (0: the whole head) rotates only that many dims of each
    head (Phi-4-mini's partial_rotary_factor), with frequencies of a head of
    `rotary_dim`. Importers reorder the query and key dims of each head so
    that the rotated pairs come first in each half (`sol.permute_head_dims`);
    the plan's table then has a zero frequency for the pairs of the dims
    that pass through.

    Example: `#sol.rope<theta = 500000.0, kind = llama3, factor = 32.0,
    low_freq_factor = 1.0, high_freq_factor = 4.0,
    original_max_position = 8192>`
  }];
  let parameters = (ins
    "::llvm::APFloat":$theta,
    DefaultValuedParameter<"::sol::RopeScalingKind",
                           "::sol::RopeScalingKind::None">:$kind,
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(1.0)">:$factor,
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(1.0)">:$low_freq_factor,
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(4.0)">:$high_freq_factor,
    DefaultValuedParameter<"int64_t", "0">:$original_max_position,
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(32.0)">:$beta_fast,
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(1.0)">:$beta_slow,
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(0.0)">:$attention_factor,
    DefaultValuedParameter<"int64_t", "0">:$rotary_dim,
    OptionalParameter<"::mlir::DenseF64ArrayAttr">:$short_factor,
    OptionalParameter<"::mlir::DenseF64ArrayAttr">:$long_factor,
    DefaultValuedParameter<"bool", "true">:$truncate
  );
  let assemblyFormat = [{
    `<` struct($theta, $kind, $factor, $low_freq_factor, $high_freq_factor,
               $original_max_position, $beta_fast, $beta_slow,
               $attention_factor, $rotary_dim, $short_factor,
               $long_factor, $truncate) `>`
  }];
  let genVerifyDecl = 1;
}

def Sol_LinearEpilogue : I32EnumAttr<"LinearEpilogue",
    "elementwise work fused after a linear layer (values as in Plan.fbs)", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Residual", 1, "residual">,
      I32EnumAttrCase<"Swiglu", 2, "swiglu">,
      I32EnumAttrCase<"Geglu", 3, "geglu">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}
def Sol_LinearEpilogueAttr
    : EnumAttr<Sol_Dialect, Sol_LinearEpilogue, "epilogue">;

def Sol_GateActivation : I32EnumAttr<"GateActivation",
    "the activation of a gated MLP's gate (values as in Plan.fbs)", [
      I32EnumAttrCase<"Silu", 0, "silu">,
      I32EnumAttrCase<"GeluTanh", 1, "gelu_tanh">,
      I32EnumAttrCase<"ClampedSilu", 2, "clamped_silu">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}
def Sol_GateActivationAttr
    : EnumAttr<Sol_Dialect, Sol_GateActivation, "activation">;

def Sol_QuantScheme : I32EnumAttr<"QuantScheme",
    "how a linear's weight is stored (values as in Plan.fbs and "
    "sol::quant::Scheme)", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Int8", 1, "int8">,
      I32EnumAttrCase<"Fp8", 2, "fp8">,
      I32EnumAttrCase<"Int4", 3, "int4">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}
def Sol_QuantSchemeAttr : EnumAttr<Sol_Dialect, Sol_QuantScheme, "quant">;

def Sol_ModelAttr : Sol_Attr<"Model", "model"> {
  let summary = "What a compiled model is, recorded by its importer";
  let description = [{
    The module attribute `sol.model`: the architecture's name as its source
    format spells it, and the figures the plan and the runtime report and
    size things by. Code generation reads the model from here, never from
    the source format.

    `position_limit` (0, and then not printed, for none) is the longest
    sequence the compiled model computes as its source does: dynamic NTK
    rope scaling changes the frequencies per sequence past
    max_position_embeddings, which a plan's fixed table cannot.

    Example: `#sol.model<architecture = "LlamaForCausalLM", vocab_size =
    2048, hidden_size = 128, num_layers = 2, max_position_embeddings = 256>`
  }];
  let parameters = (ins
    StringRefParameter<>:$architecture,
    "int64_t":$vocab_size,
    "int64_t":$hidden_size,
    "int64_t":$num_layers,
    "int64_t":$max_position_embeddings,
    DefaultValuedParameter<"int64_t", "0">:$position_limit
  );
  let assemblyFormat = [{
    `<` struct($architecture, $vocab_size, $hidden_size, $num_layers,
               $max_position_embeddings, $position_limit) `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The name of the module attribute that holds it.
    static constexpr ::llvm::StringLiteral kAttrName = "sol.model";
  }];
}

def Sol_KvCacheDType : I32EnumAttr<"KvCacheDType",
    "KV-cache dtype (bf16 or fp8)", [
      I32EnumAttrCase<"BF16", 0, "bf16">,
      I32EnumAttrCase<"FP8", 1, "fp8">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}
def Sol_KvCacheDTypeAttr
    : EnumAttr<Sol_Dialect, Sol_KvCacheDType, "kv_cache_dtype">;

def Sol_KvArrangement : I32EnumAttr<"KvArrangement",
    "how one layer's K (and V) array of the paged KV cache is laid out", [
      I32EnumAttrCase<"BlockSlotHeadDim", 0, "block_slot_head_dim">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}

def Sol_KvScales : I32EnumAttr<"KvScales",
    "the dequantization scales stored beside an fp8 KV cache", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"PerTokenHead", 1, "per_token_head">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}

def Sol_KvCacheLayoutAttr : Sol_Attr<"KvCacheLayout", "kv_cache_layout"> {
  let summary = "The paged KV cache's layout, chosen by sol-plan-kv-cache";
  let description = [{
    Recorded on the module by `sol-plan-kv-cache` and read by code
    generation and the plan writer. Every layer has one K and one V array
    arranged as `arrangement` says; `block_slot_head_dim` is
    `[blocks, block_size, num_kv_heads, head_dim]`, position p of a sequence
    living in block `block_table[p / block_size]`, slot `p % block_size`.

    * `block_size`: tokens per block, a power of two in [8, 256].
    * `dtype`: `bf16`, or `fp8` (E4M3) with `scales = per_token_head`: one
      float32 scale per (token, kv head) for K and one for V, each
      `[blocks, block_size, num_kv_heads]` per layer.
    * `alignment`: bytes every cache row (one head's `head_dim` values) and
      every array starts on; the attention kernels load 16 bytes per lane.

    Example: `#sol.kv_cache_layout<num_layers = 2, num_kv_heads = 2,
    head_dim = 64, block_size = 32, dtype = bf16,
    arrangement = block_slot_head_dim, alignment = 16, scales = none>`
  }];
  let parameters = (ins
    "int64_t":$num_layers,
    "int64_t":$num_kv_heads,
    "int64_t":$head_dim,
    "int64_t":$block_size,
    "::sol::KvCacheDType":$dtype,
    "::sol::KvArrangement":$arrangement,
    "int64_t":$alignment,
    "::sol::KvScales":$scales
  );
  let assemblyFormat = [{
    `<` struct($num_layers, $num_kv_heads, $head_dim, $block_size, $dtype,
               $arrangement, $alignment, $scales) `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of one cache element (2 for bf16, 1 for fp8).
    int64_t elementBytes() const;
    /// The name of the module attribute that holds the layout.
    static constexpr ::llvm::StringLiteral kAttrName = "sol.kv_cache_layout";
    /// Block sizes the attention kernels take: powers of two in this range.
    static constexpr int64_t kMinBlockSize = 8, kMaxBlockSize = 256;
    /// True when the fp8 kernels support `headDim`: multiples of 16 up to
    /// 256 (a position's lanes padded to a power of two).
    static bool fp8SupportsHeadDim(int64_t headDim);
  }];
}

#endif // SOL_ATTRS_TD

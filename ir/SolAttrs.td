//===- SolAttrs.td - Attributes of the sol dialect ---------*- tablegen -*-===//
#ifndef SOL_ATTRS_TD
#define SOL_ATTRS_TD

include "ir/SolDialect.td"

def Sol_RopeScalingKind : I32EnumAttr<"RopeScalingKind",
    "how rotary position frequencies are rescaled for long contexts", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Linear", 1, "linear">,
      I32EnumAttrCase<"Llama3", 2, "llama3">,
      I32EnumAttrCase<"Yarn", 3, "yarn">
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
      `attention_factor` (0 means the default `0.1 ln(factor) + 1`).

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
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(0.0)">:$attention_factor
  );
  let assemblyFormat = [{
    `<` struct($theta, $kind, $factor, $low_freq_factor, $high_freq_factor,
               $original_max_position, $beta_fast, $beta_slow,
               $attention_factor) `>`
  }];
  let genVerifyDecl = 1;
}

def Sol_LinearEpilogue : I32EnumAttr<"LinearEpilogue",
    "elementwise work fused after a linear layer", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Silu", 1, "silu">,
      I32EnumAttrCase<"Gelu", 2, "gelu">,
      I32EnumAttrCase<"SwiGLU", 3, "swiglu">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}
def Sol_LinearEpilogueAttr
    : EnumAttr<Sol_Dialect, Sol_LinearEpilogue, "epilogue">;

def Sol_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "the GELU formula", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Tanh", 1, "tanh">
    ]> {
  let cppNamespace = "::sol";
  let genSpecializedAttr = 0;
}
def Sol_GeluApproximationAttr
    : EnumAttr<Sol_Dialect, Sol_GeluApproximation, "gelu_approximation">;

#endif // SOL_ATTRS_TD

// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int8}))' | FileCheck %s --check-prefix=INT8
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=fp8}))' | FileCheck %s --check-prefix=FP8
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int4 group-size=32}))' 2>/dev/null | FileCheck %s --check-prefix=INT4
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int4 group-size=32}))' 2>&1 >/dev/null | FileCheck %s --check-prefix=WARN
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int4 group-size=32 clip-search=true lm-head=true}))' 2>&1 | FileCheck %s --check-prefix=LMHEAD
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int8}))' --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=ALREADY
// RUN: not solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int3}))' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int4 group-size=7}))' 2>&1 | FileCheck %s --check-prefix=ODD

// sol-quantize on kernel-level IR: every linear's weight becomes the codes of
// a sol.quantize_weight, and the linear takes its scales (and zero points);
// the LM head (f32 results) keeps its weight unless lm-head is set; a linear
// whose input features the int4 group size does not divide keeps its weight
// with a warning. Either way the kept ones say why in sol.quant_kept.

// INT8-LABEL: func.func @layer
// INT8: %[[Q:.*]], %[[S:.*]] = sol.quantize_weight %{{.*}} {scheme = #sol<quant int8>} : tensor<96x64xbf16> -> (tensor<96x64xi8>, tensor<96xf32>)
// INT8: sol.norm_linear %{{.*}}, %{{.*}}, %[[Q]] scales %[[S]] {epsilon = {{.*}}, quant = #sol<quant int8>} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<96x64xi8> scales tensor<96xf32>) -> tensor<?x96xbf16>
// The bias stays in the activation type.
// INT8: %[[Q2:.*]], %[[S2:.*]] = sol.quantize_weight %{{.*}} {scheme = #sol<quant int8>} : tensor<64x96xbf16> -> (tensor<64x96xi8>, tensor<64xf32>)
// INT8: sol.linear %{{.*}}, %[[Q2]], %{{.*}} residual %{{.*}} scales %[[S2]] {epilogue = #sol<epilogue residual>, quant = #sol<quant int8>} : (tensor<?x96xbf16>, tensor<64x96xi8>, tensor<64xbf16> residual tensor<?x64xbf16> scales tensor<64xf32>) -> tensor<?x64xbf16>
// INT8: sol.linear %{{.*}}, %{{.*}} {sol.quant_kept = "LM head (--quant-lm-head quantizes it)"} : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xf32>
// int8 and fp8 scales are per row: any number of input features takes them.
// INT8-LABEL: func.func @indivisible
// INT8: sol.quantize_weight %{{.*}} {scheme = #sol<quant int8>} : tensor<16x48xbf16>

// FP8-LABEL: func.func @layer
// FP8: sol.quantize_weight %{{.*}} {scheme = #sol<quant fp8>} : tensor<96x64xbf16> -> (tensor<96x64xf8E4M3FN>, tensor<96xf32>)
// FP8: quant = #sol<quant fp8>
// FP8: sol.quantize_weight %{{.*}} {scheme = #sol<quant fp8>} : tensor<64x96xbf16> -> (tensor<64x96xf8E4M3FN>, tensor<64xf32>)

// 64 and 96 input features are multiples of 32: every linear but the LM head
// takes int4, with f32 scales and ui8 zero points per group.
// INT4-LABEL: func.func @layer
// INT4: %[[Q:.*]], %[[S:.*]], %[[Z:.*]] = sol.quantize_weight %{{.*}} {group_size = 32 : i64, scheme = #sol<quant int4>} : tensor<96x64xbf16> -> (tensor<96x64xi4>, tensor<96x2xf32>, tensor<96x2xui8>)
// INT4: sol.norm_linear %{{.*}}, %{{.*}}, %[[Q]] scales %[[S]] zeros %[[Z]] {epsilon = {{.*}}, group_size = 32 : i64, quant = #sol<quant int4>}
// INT4: sol.quantize_weight %{{.*}} {group_size = 32 : i64, scheme = #sol<quant int4>} : tensor<64x96xbf16> -> (tensor<64x96xi4>, tensor<64x3xf32>, tensor<64x3xui8>)
// INT4: sol.quant_kept = "LM head

// With lm-head the LM head is quantized too, with the clipping search.
// LMHEAD-LABEL: func.func @layer
// LMHEAD-COUNT-3: sol.quantize_weight %{{.*}} {clip_search = true, group_size = 32 : i64, scheme = #sol<quant int4>}
// LMHEAD-NOT: sol.quant_kept
// LMHEAD-LABEL: func.func @indivisible

// BAD: sol-quantize: unknown scheme 'int3' (int8, fp8 or int4)
// ODD: sol-quantize: the int4 group size must be a positive even number, got 7

func.func @layer(%h: tensor<?x64xbf16>, %r: tensor<?x64xbf16>) -> tensor<?x128xf32> {
  %nw = sol.weight @norm : tensor<64xbf16>
  %w = sol.weight @qkv : tensor<96x64xbf16>
  %p = sol.norm_linear %h, %nw, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<96x64xbf16>) -> tensor<?x96xbf16>
  %wo = sol.weight @o : tensor<64x96xbf16>
  %bo = sol.weight @o_bias : tensor<64xbf16>
  %o = sol.linear %p, %wo, %bo residual %r {epilogue = #sol<epilogue residual>} : (tensor<?x96xbf16>, tensor<64x96xbf16>, tensor<64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %lm = sol.weight @lm_head : tensor<128x64xbf16>
  %logits = sol.linear %o, %lm : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xf32>
  return %logits : tensor<?x128xf32>
}

// Near miss: 48 input features are not a multiple of the group size 32.
// WARN: warning: keeps its weight: 48 input features are not a multiple of the group size 32
// INT4-LABEL: func.func @indivisible
// INT4-NOT: sol.quantize_weight
// INT4: sol.linear %{{.*}}, %{{.*}} {sol.quant_kept = "48 input features are not a multiple of the group size 32"}
func.func @indivisible(%x: tensor<?x48xbf16>) -> tensor<?x16xbf16> {
  %w = sol.weight @w48 : tensor<16x48xbf16>
  %y = sol.linear %x, %w : (tensor<?x48xbf16>, tensor<16x48xbf16>) -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}

// Linears a checkpoint brought quantized (AWQ, GPTQ, fp8) keep their weights
// and say why; one warning per function counts them. The bf16 one beside
// them takes the scheme.
// ALREADY: warning: keeps the weights of linears that are already quantized (1 fp8, 1 int4 in groups of 32); int8 applies to the float ones only
// ALREADY-LABEL: func.func @already
// ALREADY: sol.linear %{{.*}}, %{{.*}} scales %{{.*}} zeros %{{.*}} {group_size = 32 : i64, quant = #sol<quant int4>, sol.quant_kept = "already int4 in groups of 32"}
// ALREADY: sol.linear %{{.*}}, %{{.*}} scales %{{.*}} {quant = #sol<quant fp8>, sol.quant_kept = "already fp8"}
// ALREADY: sol.quantize_weight %{{.*}} {scheme = #sol<quant int8>} : tensor<16x64xbf16>
func.func @already(%x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x16xbf16>) {
  %qc = sol.weight @"q~int4" : tensor<64x64xi4>
  %qs = sol.weight @"q~int4.scales" : tensor<64x2xf32>
  %qz = sol.weight @"q~int4.zeros" : tensor<64x2xui8>
  %q = sol.linear %x, %qc scales %qs zeros %qz {group_size = 32 : i64, quant = #sol<quant int4>} : (tensor<?x64xbf16>, tensor<64x64xi4> scales tensor<64x2xf32> zeros tensor<64x2xui8>) -> tensor<?x64xbf16>
  %kc = sol.weight @k : tensor<32x64xf8E4M3FN>
  %ks = sol.weight @k.scales : tensor<32xf32>
  %k = sol.linear %x, %kc scales %ks {quant = #sol<quant fp8>} : (tensor<?x64xbf16>, tensor<32x64xf8E4M3FN> scales tensor<32xf32>) -> tensor<?x32xbf16>
  %vw = sol.weight @v : tensor<16x64xbf16>
  %v = sol.linear %x, %vw : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<?x16xbf16>
  return %q, %k, %v : tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x16xbf16>
}

// A mixture's experts take the scheme too, each projection's stacked weight
// quantized as one linear's (the router stays float); int4 experts whose
// hidden size or width the group does not divide keep their weights.
// MOE-INT8-LABEL: func.func @mixture
// MOE-INT8: %[[G:.*]], %[[GS:.*]] = sol.quantize_weight %{{.*}} {scheme = #sol<quant int8>} : tensor<128x64xbf16> -> (tensor<128x64xi8>, tensor<128xf32>)
// MOE-INT8: %[[D:.*]], %[[DS:.*]] = sol.quantize_weight %{{.*}} {scheme = #sol<quant int8>} : tensor<256x32xbf16> -> (tensor<256x32xi8>, tensor<256xf32>)
// MOE-INT8: sol.moe %{{.*}}, %{{.*}}, %[[G]], %{{.*}}, %[[D]] scales(%[[GS]], %{{.*}}, %[[DS]]) {normalize_top_k = true, top_k = 2 : i64} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xi8>
// MOE-INT4-LABEL: func.func @mixture
// MOE-INT4: sol.quantize_weight %{{.*}} {group_size = 32 : i64, scheme = #sol<quant int4>} : tensor<256x32xbf16> -> (tensor<256x32xi4>, tensor<256x1xf32>, tensor<256x1xui8>)
// MOE-INT4: sol.moe {{.*}} scales(%{{.*}}, %{{.*}}, %{{.*}}) zeros(%{{.*}}, %{{.*}}, %{{.*}})
// MOE-KEEP: warning: keeps its expert weights: the hidden size 64 or the experts' width 32 is not a multiple of the group size 64
// MOE-KEEP-LABEL: func.func @mixture
// MOE-KEEP: sol.moe {{.*}}sol.quant_kept = "the hidden size 64 or the experts' width 32 is not a multiple of the group size 64"
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int8}))' | FileCheck %s --check-prefix=MOE-INT8
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int4 group-size=32}))' 2>/dev/null | FileCheck %s --check-prefix=MOE-INT4
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int4 group-size=64}))' 2>&1 | FileCheck %s --check-prefix=MOE-KEEP
func.func @mixture(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x64xbf16>
  %u = sol.weight @up : tensor<128x64xbf16>
  %d = sol.weight @down : tensor<256x32xbf16>
  %y = sol.moe %x, %r, %g, %u, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// MXFP4 experts keep their format; one warning counts the layers.
// MXFP4: warning: keeps the expert weights of 1 mixture-of-experts layers in their checkpoint's format (MXFP4); int8 applies to the other linears
// MXFP4-LABEL: func.func @mixture_mxfp4
// MXFP4: sol.moe {{.*}} scales(%{{.*}}, %{{.*}}, %{{.*}}) {normalize_top_k = true, top_k = 2 : i64} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x32xui8>
// RUN: solc-opt %s --pass-pipeline='builtin.module(func.func(sol-quantize{scheme=int8}))' --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=MXFP4
func.func @mixture_mxfp4(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x32xui8>
  %d = sol.weight @down : tensor<256x16xui8>
  %gs = sol.weight @gate.scales : tensor<128x2xui8>
  %ds = sol.weight @down.scales : tensor<256x1xui8>
  %y = sol.moe %x, %r, %g, %g, %d scales(%gs, %gs, %ds) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x32xui8>, tensor<128x32xui8>, tensor<256x16xui8>, tensor<128x2xui8>, tensor<128x2xui8>, tensor<256x1xui8>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// RUN: solc-opt %s --sol-materialize-weights | FileCheck %s

// sol-materialize-weights replaces every tree of weight transforms by one
// sol.weight naming the derived tensor. In solc-opt there is no weight store,
// so only the IR is rewritten (solc computes the bytes into the store).

// A concatenation is named after its sources: the shared prefix and suffix
// (cut at dots) around the differing parts in braces.
// CHECK-LABEL: func.func @concat
// CHECK-NOT: sol.concat_weights
// CHECK: %[[W:.*]] = sol.weight @"model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight" : tensor<128x64xbf16>
// CHECK-NEXT: return %[[W]]
func.func @concat() -> tensor<128x64xbf16> {
  %q = sol.weight @model.layers.0.self_attn.q_proj.weight : tensor<64x64xbf16>
  %k = sol.weight @model.layers.0.self_attn.k_proj.weight : tensor<32x64xbf16>
  %v = sol.weight @model.layers.0.self_attn.v_proj.weight : tensor<32x64xbf16>
  %qkv = sol.concat_weights %q, %k, %v : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
  return %qkv : tensor<128x64xbf16>
}

// CHECK-LABEL: func.func @concat_bias
// CHECK: %[[W:.*]] = sol.weight @"model.layers.0.self_attn.{q_proj,k_proj,v_proj}.bias" : tensor<128xbf16>
// CHECK-NEXT: return %[[W]]
func.func @concat_bias() -> tensor<128xbf16> {
  %q = sol.weight @model.layers.0.self_attn.q_proj.bias : tensor<64xbf16>
  %k = sol.weight @model.layers.0.self_attn.k_proj.bias : tensor<32xbf16>
  %v = sol.weight @model.layers.0.self_attn.v_proj.bias : tensor<32xbf16>
  %qkv = sol.concat_weights %q, %k, %v : (tensor<64xbf16>, tensor<32xbf16>, tensor<32xbf16>) -> tensor<128xbf16>
  return %qkv : tensor<128xbf16>
}

// A concatenation of one weight is that weight, under its own name.
// CHECK-LABEL: func.func @concat_one
// CHECK-NOT: sol.concat_weights
// CHECK: sol.weight @model.layers.0.self_attn.q_proj.weight : tensor<64x64xbf16>
// CHECK-NEXT: %[[W:.*]] = sol.weight @model.layers.0.self_attn.q_proj.weight : tensor<64x64xbf16>
// CHECK-NEXT: return %[[W]]
func.func @concat_one() -> tensor<64x64xbf16> {
  %q = sol.weight @model.layers.0.self_attn.q_proj.weight : tensor<64x64xbf16>
  %c = sol.concat_weights %q : (tensor<64x64xbf16>) -> tensor<64x64xbf16>
  return %c : tensor<64x64xbf16>
}

// Interleaved rows are named like a concatenation of their two sources.
// CHECK-LABEL: func.func @interleave
// CHECK-NOT: sol.interleave_rows
// CHECK: %[[W:.*]] = sol.weight @"model.layers.0.mlp.{gate_proj,up_proj}.weight" : tensor<256x64xbf16>
// CHECK-NEXT: return %[[W]]
func.func @interleave() -> tensor<256x64xbf16> {
  %g = sol.weight @model.layers.0.mlp.gate_proj.weight : tensor<128x64xbf16>
  %u = sol.weight @model.layers.0.mlp.up_proj.weight : tensor<128x64xbf16>
  %gu = sol.interleave_rows %g, %u : tensor<128x64xbf16> -> tensor<256x64xbf16>
  return %gu : tensor<256x64xbf16>
}

// A conversion appends ~ and the store's name of the new dtype.
// CHECK-LABEL: func.func @convert
// CHECK-NOT: sol.convert_weight
// CHECK: %[[W:.*]] = sol.weight @"model.layers.0.self_attn.o_proj.weight~BF16" : tensor<64x64xbf16>
// CHECK: %[[N:.*]] = sol.weight @"model.norm.weight~F32" : tensor<64xf32>
// CHECK-NEXT: return %[[W]], %[[N]]
func.func @convert() -> (tensor<64x64xbf16>, tensor<64xf32>) {
  %w = sol.weight @model.layers.0.self_attn.o_proj.weight : tensor<64x64xf32>
  %c = sol.convert_weight %w : tensor<64x64xf32> -> tensor<64x64xbf16>
  %n = sol.weight @model.norm.weight : tensor<64xf16>
  %c2 = sol.convert_weight %n : tensor<64xf16> -> tensor<64xf32>
  return %c, %c2 : tensor<64x64xbf16>, tensor<64xf32>
}

// A transposition appends ~t.
// CHECK-LABEL: func.func @transpose
// CHECK-NOT: sol.transpose_weight
// CHECK: %[[W:.*]] = sol.weight @"onnx__MatMul_123~t" : tensor<64x32xbf16>
// CHECK-NEXT: return %[[W]]
func.func @transpose() -> tensor<64x32xbf16> {
  %w = sol.weight @onnx__MatMul_123 : tensor<32x64xbf16>
  %t = sol.transpose_weight %w : tensor<32x64xbf16> -> tensor<64x32xbf16>
  return %t : tensor<64x32xbf16>
}

// A tree of transforms (f16 weights converted, then concatenated) becomes
// one weight whose name tells both steps.
// CHECK-LABEL: func.func @chain
// CHECK-NOT: sol.convert_weight
// CHECK-NOT: sol.concat_weights
// CHECK: %[[W:.*]] = sol.weight @"l.{q_proj,k_proj,v_proj}.weight~BF16" : tensor<128x64xbf16>
// CHECK-NEXT: return %[[W]]
func.func @chain() -> tensor<128x64xbf16> {
  %q = sol.weight @l.q_proj.weight : tensor<64x64xf16>
  %k = sol.weight @l.k_proj.weight : tensor<32x64xf16>
  %v = sol.weight @l.v_proj.weight : tensor<32x64xf16>
  %qc = sol.convert_weight %q : tensor<64x64xf16> -> tensor<64x64xbf16>
  %kc = sol.convert_weight %k : tensor<32x64xf16> -> tensor<32x64xbf16>
  %vc = sol.convert_weight %v : tensor<32x64xf16> -> tensor<32x64xbf16>
  %qkv = sol.concat_weights %qc, %kc, %vc : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
  return %qkv : tensor<128x64xbf16>
}

// Two transforms that derive the same name (a concatenation and an
// interleave of the same weights): the later one gets a #2 suffix.
// CHECK-LABEL: func.func @clash
// CHECK: %[[C:.*]] = sol.weight @"mlp.{gate_proj,up_proj}.weight" : tensor<256x64xbf16>
// CHECK-NEXT: %[[I:.*]] = sol.weight @"mlp.{gate_proj,up_proj}.weight#2" : tensor<256x64xbf16>
// CHECK-NEXT: return %[[C]], %[[I]]
func.func @clash() -> (tensor<256x64xbf16>, tensor<256x64xbf16>) {
  %g = sol.weight @mlp.gate_proj.weight : tensor<128x64xbf16>
  %u = sol.weight @mlp.up_proj.weight : tensor<128x64xbf16>
  %c = sol.concat_weights %g, %u : (tensor<128x64xbf16>, tensor<128x64xbf16>) -> tensor<256x64xbf16>
  %i = sol.interleave_rows %g, %u : tensor<128x64xbf16> -> tensor<256x64xbf16>
  return %c, %i : tensor<256x64xbf16>, tensor<256x64xbf16>
}

// A quantization's outputs are named after its source and scheme.
// CHECK-LABEL: func.func @quantize
// CHECK-NOT: sol.quantize_weight
// CHECK-DAG: sol.weight @"model.layers.0.mlp.down_proj.weight~int4" : tensor<16x64xi4>
// CHECK-DAG: sol.weight @"model.layers.0.mlp.down_proj.weight~int4.scales" : tensor<16x2xf32>
// CHECK-DAG: sol.weight @"model.layers.0.mlp.down_proj.weight~int4.zeros" : tensor<16x2xui8>
func.func @quantize() -> (tensor<16x64xi4>, tensor<16x2xf32>, tensor<16x2xui8>) {
  %w = sol.weight @model.layers.0.mlp.down_proj.weight : tensor<16x64xbf16>
  %q, %s, %z = sol.quantize_weight %w {scheme = #sol<quant int4>, group_size = 32} : tensor<16x64xbf16> -> (tensor<16x64xi4>, tensor<16x2xf32>, tensor<16x2xui8>)
  return %q, %s, %z : tensor<16x64xi4>, tensor<16x2xf32>, tensor<16x2xui8>
}

// AWQ's transforms: a scaling and a clamp name their source.
// CHECK-LABEL: func.func @awq
// CHECK-NOT: sol.scale_weight
// CHECK-NOT: sol.clamp_weight
// CHECK-DAG: sol.weight @"l.input_layernorm.weight~scaled" : tensor<64xbf16>
// CHECK-DAG: sol.weight @"l.q_proj.weight~scaled~clamped" : tensor<16x64xbf16>
func.func @awq() -> (tensor<64xbf16>, tensor<16x64xbf16>) {
  %n = sol.weight @l.input_layernorm.weight : tensor<64xbf16>
  %s = sol.weight @l.awq.scales : tensor<64xf32>
  %r = sol.weight @l.awq.clip : tensor<16x2xf32>
  %q = sol.weight @l.q_proj.weight : tensor<16x64xbf16>
  %n2 = sol.scale_weight %n, %s {axis = 0 : i64, divide} : tensor<64xbf16>, tensor<64xf32>
  %q2 = sol.scale_weight %q, %s {axis = 1 : i64} : tensor<16x64xbf16>, tensor<64xf32>
  %q3 = sol.clamp_weight %q2, %r {group_size = 32 : i64} : tensor<16x64xbf16>, tensor<16x2xf32>
  return %n2, %q3 : tensor<64xbf16>, tensor<16x64xbf16>
}

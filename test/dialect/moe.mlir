// RUN: solc-opt %s | FileCheck %s
// RUN: solc-opt %s --mlir-print-op-generic | solc-opt | FileCheck %s

// A mixture of experts prints and parses back: the experts' projections
// stacked by sol.concat_weights (expert e's rows in order), routed by sol.moe.

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g0 = sol.weight @e0.gate : tensor<32x64xbf16>
  %g1 = sol.weight @e1.gate : tensor<32x64xbf16>
  %g2 = sol.weight @e2.gate : tensor<32x64xbf16>
  %g3 = sol.weight @e3.gate : tensor<32x64xbf16>
  %g = sol.concat_weights %g0, %g1, %g2, %g3 : (tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
  %u = sol.weight @up : tensor<128x64xbf16>
  %d = sol.weight @down : tensor<256x32xbf16>
  // CHECK: sol.moe %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {normalize_top_k = true, top_k = 2 : i64} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  %y = sol.moe %x, %r, %g, %u, %d {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  // CHECK: sol.moe {{.*}}activation = #sol<activation gelu_tanh>, normalize_top_k = false, top_k = 1 : i64
  %z = sol.moe %y, %r, %g, %u, %d {top_k = 1 : i64, normalize_top_k = false, activation = #sol<activation gelu_tanh>} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>) -> tensor<?x64xbf16>
  return %z : tensor<?x64xbf16>
}

// gpt-oss: experts stored inputs first ([E, H, 2I], gate/up interleaved),
// transposed per expert and split by sol.slice_rows with stride 2; the
// biases reshaped and split alike; the clamped SwiGLU; attention sinks.
// CHECK-LABEL: func.func @gpt_oss
func.func @gpt_oss(%x: tensor<?x64xbf16>, %pos: tensor<?xi32>, %seq: tensor<?xi32>) -> tensor<?x64xbf16> {
  %r = sol.weight @router : tensor<4x64xbf16>
  %rb = sol.weight @router.bias : tensor<4xbf16>
  %gu = sol.weight @gate_up_proj : tensor<4x64x64xbf16>
  // CHECK: sol.transpose_weight %{{.*}} : tensor<4x64x64xbf16> -> tensor<256x64xbf16>
  %t = sol.transpose_weight %gu : tensor<4x64x64xbf16> -> tensor<256x64xbf16>
  // CHECK: sol.slice_rows %{{.*}} {offset = 1 : i64, stride = 2 : i64} : tensor<256x64xbf16> -> tensor<128x64xbf16>
  %g = sol.slice_rows %t {offset = 0 : i64, stride = 2 : i64} : tensor<256x64xbf16> -> tensor<128x64xbf16>
  %u = sol.slice_rows %t {offset = 1 : i64, stride = 2 : i64} : tensor<256x64xbf16> -> tensor<128x64xbf16>
  %dp = sol.weight @down_proj : tensor<4x32x64xbf16>
  %d = sol.transpose_weight %dp : tensor<4x32x64xbf16> -> tensor<256x32xbf16>
  %gub = sol.weight @gate_up_proj_bias : tensor<4x64xbf16>
  // CHECK: sol.reshape_weight %{{.*}} : tensor<4x64xbf16> -> tensor<256xbf16>
  %gubf = sol.reshape_weight %gub : tensor<4x64xbf16> -> tensor<256xbf16>
  %gb = sol.slice_rows %gubf {offset = 0 : i64, stride = 2 : i64} : tensor<256xbf16> -> tensor<128xbf16>
  %ub = sol.slice_rows %gubf {offset = 1 : i64, stride = 2 : i64} : tensor<256xbf16> -> tensor<128xbf16>
  %db = sol.weight @down_proj_bias : tensor<256xbf16>
  // CHECK: sol.moe {{.*}} biases(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {activation = #sol<activation clamped_silu>, activation_limit = 7.000000e+00 : f32, normalize_top_k = true, top_k = 2 : i64}
  %y = sol.moe %x, %r, %g, %u, %d biases(%rb, %gb, %ub, %db) {top_k = 2 : i64, normalize_top_k = true, activation = #sol<activation clamped_silu>, activation_limit = 7.0 : f32} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>, tensor<4xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256xbf16>) -> tensor<?x64xbf16>
  %s = sol.weight @sinks : tensor<4xbf16>
  // CHECK: sol.attention {{.*}} sinks %{{.*}} {head_dim = 16 : i64
  %a = sol.attention %y, %y, %y, %pos, %seq sinks %s {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<4xbf16>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// MXFP4 experts kept packed: ui8 codes two to a byte and their exponents.
// CHECK-LABEL: func.func @moe_mxfp4
func.func @moe_mxfp4(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %r = sol.weight @router : tensor<4x64xbf16>
  %g = sol.weight @gate : tensor<128x32xui8>
  %u = sol.weight @up : tensor<128x32xui8>
  %d = sol.weight @down : tensor<256x16xui8>
  %gs = sol.weight @gate.scales : tensor<128x2xui8>
  %us = sol.weight @up.scales : tensor<128x2xui8>
  %ds = sol.weight @down.scales : tensor<256x1xui8>
  // CHECK: sol.moe {{.*}} scales(%{{.*}}, %{{.*}}, %{{.*}}) {normalize_top_k = true, top_k = 2 : i64}
  %y = sol.moe %x, %r, %g, %u, %d scales(%gs, %us, %ds) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x32xui8>, tensor<128x32xui8>, tensor<256x16xui8>, tensor<128x2xui8>, tensor<128x2xui8>, tensor<256x1xui8>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// sol-quantize's experts: int8 (or fp8) codes with an f32 scale a row;
// int4 codes with f32 scales and ui8 zero points a group (here 32).
// CHECK-LABEL: func.func @moe_int8
func.func @moe_int8(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xi8>, %d: tensor<256x32xi8>, %gs: tensor<128xf32>, %ds: tensor<256xf32>) -> tensor<?x64xbf16> {
  // CHECK: sol.moe {{.*}} scales(%{{.*}}, %{{.*}}, %{{.*}}) {normalize_top_k = true, top_k = 2 : i64} : ({{.*}}tensor<128x64xi8>
  %y = sol.moe %x, %r, %g, %g, %d scales(%gs, %gs, %ds) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xi8>, tensor<128x64xi8>, tensor<256x32xi8>, tensor<128xf32>, tensor<128xf32>, tensor<256xf32>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
// CHECK-LABEL: func.func @moe_int4
func.func @moe_int4(%x: tensor<?x64xbf16>, %r: tensor<4x64xbf16>, %g: tensor<128x64xi4>, %d: tensor<256x32xi4>, %gs: tensor<128x2xf32>, %ds: tensor<256x1xf32>, %gz: tensor<128x2xui8>, %dz: tensor<256x1xui8>) -> tensor<?x64xbf16> {
  // CHECK: sol.moe {{.*}} scales(%{{.*}}, %{{.*}}, %{{.*}}) zeros(%{{.*}}, %{{.*}}, %{{.*}}) {normalize_top_k = true, top_k = 2 : i64}
  %y = sol.moe %x, %r, %g, %g, %d scales(%gs, %gs, %ds) zeros(%gz, %gz, %dz) {top_k = 2 : i64, normalize_top_k = true} : (tensor<?x64xbf16>, tensor<4x64xbf16>, tensor<128x64xi4>, tensor<128x64xi4>, tensor<256x32xi4>, tensor<128x2xf32>, tensor<128x2xf32>, tensor<256x1xf32>, tensor<128x2xui8>, tensor<128x2xui8>, tensor<256x1xui8>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// MXFP4 experts: 16 bytes (32 values) per group, rows = outputs.
// CHECK-LABEL: func.func @mxfp4
func.func @mxfp4() -> tensor<256x64xbf16> {
  %b = sol.weight @blocks : tensor<4x64x2x16xui8>
  %s = sol.weight @scales : tensor<4x64x2xui8>
  // CHECK: sol.dequantize_mxfp4 %{{.*}}, %{{.*}} : (tensor<4x64x2x16xui8>, tensor<4x64x2xui8>) -> tensor<256x64xbf16>
  %w = sol.dequantize_mxfp4 %b, %s : (tensor<4x64x2x16xui8>, tensor<4x64x2xui8>) -> tensor<256x64xbf16>
  return %w : tensor<256x64xbf16>
}

// Qwen2-MoE's shared expert gate.
// CHECK-LABEL: func.func @shared_expert_gate
func.func @shared_expert_gate(%v: tensor<?x64xbf16>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w = sol.weight @gate : tensor<1x64xbf16>
  // CHECK: sol.sigmoid_gate %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<1x64xbf16>) -> tensor<?x64xbf16>
  %y = sol.sigmoid_gate %v, %x, %w : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<1x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

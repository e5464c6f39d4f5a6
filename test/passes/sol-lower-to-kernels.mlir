// RUN: solc-opt %s --sol-lower-to-kernels | FileCheck %s

// sol-lower-to-kernels: what is left of the tensor level becomes
// kernel-level ops, one plan op each. Its errors are in
// sol-lower-to-kernels-invalid.mlir.

// Q, K and V as consecutive parts of one sol.split (after
// sol-fuse-projections): the split's input is the packed QKV, rotated and
// appended by rope_kv_write (the queries' rope parameters), then read by
// kv_attention (scale and sliding window kept). The split and the ropes go.
// CHECK-LABEL: func.func @packed
// CHECK: %[[QKV:.*]] = sol.linear %arg0, %{{.*}} : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[ROT:.*]] = sol.rope_kv_write %[[QKV]], %arg1, %arg2 {head_dim = 16 : i64, layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #sol.rope<theta = 5.000000e+05, kind = llama3, factor = 8.000000e+00, original_max_position = 64>} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[A:.*]] = sol.kv_attention %[[ROT]], %arg1, %arg2 {head_dim = 16 : i64, layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, sliding_window = 8 : i64} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
// CHECK-NEXT: return %[[A]]
func.func @packed(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %w = sol.weight @qkv.weight : tensor<128x64xbf16>
  %qkv = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %parts:3 = sol.split %qkv : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
  %q = sol.rope %parts#0, %p {rope = #sol.rope<theta = 500000.0, kind = llama3, factor = 8.0, original_max_position = 64>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %parts#1, %p {rope = #sol.rope<theta = 500000.0, kind = llama3, factor = 8.0, original_max_position = 64>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %parts#2, %p, %s {layer = 3, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32, sliding_window = 8} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// Qwen3: per-head norms of the q and k parts become head_rms_norm on the
// packed tensor, q's (columns [0, 64), 4 heads) then k's (from column 64,
// 2 heads), each with its own weight and epsilon.
// CHECK-LABEL: func.func @qk_norms
// CHECK-DAG: %[[QNW:.*]] = sol.weight @q_norm.weight
// CHECK-DAG: %[[KNW:.*]] = sol.weight @k_norm.weight
// CHECK-DAG: %[[QKV:.*]] = sol.linear
// CHECK: %[[N1:.*]] = sol.head_rms_norm %[[QKV]], %[[QNW]] {column = 0 : i64, epsilon = 9.99999997E-7 : f32, num_heads = 4 : i64} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[N2:.*]] = sol.head_rms_norm %[[N1]], %[[KNW]] {column = 64 : i64, epsilon = 2.000000e-06 : f32, num_heads = 2 : i64} : (tensor<?x128xbf16>, tensor<16xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[ROT:.*]] = sol.rope_kv_write %[[N2]], %arg1, %arg2 {{.*}}rope = #sol.rope<theta = 1.000000e+06>}
// CHECK-NEXT: %[[A:.*]] = sol.kv_attention %[[ROT]]
// CHECK-NEXT: return %[[A]]
func.func @qk_norms(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %w = sol.weight @qkv.weight : tensor<128x64xbf16>
  %qkv = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %parts:3 = sol.split %qkv : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
  %qnw = sol.weight @q_norm.weight : tensor<16xbf16>
  %qn = sol.rms_norm %parts#0, %qnw {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  %knw = sol.weight @k_norm.weight : tensor<16xbf16>
  %kn = sol.rms_norm %parts#1, %knw {epsilon = 2.0e-6 : f32} : (tensor<?x32xbf16>, tensor<16xbf16>) -> tensor<?x32xbf16>
  %q = sol.rope %qn, %p {rope = #sol.rope<theta = 1000000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %kn, %p {rope = #sol.rope<theta = 1000000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %parts#2, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// A norm on one part only: one head_rms_norm.
// CHECK-LABEL: func.func @k_norm_only
// CHECK: %[[QKV:.*]] = sol.linear
// CHECK: %[[N:.*]] = sol.head_rms_norm %[[QKV]], %{{.*}} {column = 64 : i64, epsilon = 9.99999997E-7 : f32, num_heads = 2 : i64}
// CHECK-NEXT: sol.rope_kv_write %[[N]]
// CHECK-NOT: sol.head_rms_norm
func.func @k_norm_only(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %w = sol.weight @qkv.weight : tensor<128x64xbf16>
  %qkv = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %parts:3 = sol.split %qkv : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
  %knw = sol.weight @k_norm.weight : tensor<16xbf16>
  %kn = sol.rms_norm %parts#1, %knw {epsilon = 1.0e-6 : f32} : (tensor<?x32xbf16>, tensor<16xbf16>) -> tensor<?x32xbf16>
  %q = sol.rope %parts#0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %kn, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %parts#2, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// Q, K and V from separate linears (-O0): packed by concat_columns of the
// unrotated q and k and v.
// CHECK-LABEL: func.func @unfused
// CHECK: %[[Q:.*]] = sol.linear %arg0, %{{.*}} -> tensor<?x64xbf16>
// CHECK: %[[K:.*]] = sol.linear %arg0, %{{.*}} -> tensor<?x32xbf16>
// CHECK: %[[V:.*]] = sol.linear %arg0, %{{.*}} -> tensor<?x32xbf16>
// CHECK-NEXT: %[[QKV:.*]] = sol.concat_columns %[[Q]], %[[K]], %[[V]] : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: %[[ROT:.*]] = sol.rope_kv_write %[[QKV]], %arg1, %arg2 {head_dim = 16 : i64, layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #sol.rope<theta = 1.000000e+04>}
// CHECK-NEXT: %[[A:.*]] = sol.kv_attention %[[ROT]], %arg1, %arg2 {head_dim = 16 : i64, layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : (tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
// CHECK-NEXT: return %[[A]]
func.func @unfused(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %wq = sol.weight @q.weight : tensor<64x64xbf16>
  %wk = sol.weight @k.weight : tensor<32x64xbf16>
  %wv = sol.weight @v.weight : tensor<32x64xbf16>
  %q0 = sol.linear %x, %wq : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %k0 = sol.linear %x, %wk : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %v = sol.linear %x, %wv : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %q = sol.rope %q0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %k0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %v, %p, %s {layer = 1, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// Unfused with per-head norms: the norms stay rms_norm (of their own
// tensors) and their results are packed.
// CHECK-LABEL: func.func @unfused_norms
// CHECK-NOT: sol.head_rms_norm
// CHECK: %[[QN:.*]] = sol.rms_norm
// CHECK: %[[KN:.*]] = sol.rms_norm
// CHECK-NEXT: %[[QKV:.*]] = sol.concat_columns %[[QN]], %[[KN]], %{{.*}} :
// CHECK-NEXT: sol.rope_kv_write %[[QKV]]
func.func @unfused_norms(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x64xbf16> {
  %wq = sol.weight @q.weight : tensor<64x64xbf16>
  %wk = sol.weight @k.weight : tensor<32x64xbf16>
  %wv = sol.weight @v.weight : tensor<32x64xbf16>
  %q0 = sol.linear %x, %wq : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %k0 = sol.linear %x, %wk : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %v = sol.linear %x, %wv : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  %qnw = sol.weight @q_norm.weight : tensor<16xbf16>
  %qn = sol.rms_norm %q0, %qnw {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  %knw = sol.weight @k_norm.weight : tensor<16xbf16>
  %kn = sol.rms_norm %k0, %knw {epsilon = 1.0e-6 : f32} : (tensor<?x32xbf16>, tensor<16xbf16>) -> tensor<?x32xbf16>
  %q = sol.rope %qn, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %kn, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %v, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  return %a : tensor<?x64xbf16>
}

// A split whose parts are not q, k, v in order is not the packed QKV: its
// parts are packed again in q, k, v order.
// CHECK-LABEL: func.func @split_out_of_order
// CHECK: %[[P:.*]]:3 = sol.split
// CHECK-NEXT: %[[QKV:.*]] = sol.concat_columns %[[P]]#1, %[[P]]#0, %[[P]]#2 : (tensor<?x32xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: sol.rope_kv_write %[[QKV]]
func.func @split_out_of_order(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> tensor<?x32xbf16> {
  %w = sol.weight @kqv.weight : tensor<64x64xbf16>
  %kqv = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %parts:3 = sol.split %kqv : tensor<?x64xbf16> -> tensor<?x16xbf16>, tensor<?x32xbf16>, tensor<?x16xbf16>
  %q = sol.rope %parts#1, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %k = sol.rope %parts#0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 1, head_dim = 16} : (tensor<?x16xbf16>, tensor<?xi32>) -> tensor<?x16xbf16>
  %a = sol.attention %q, %k, %parts#2, %p, %s {layer = 0, num_heads = 2, num_kv_heads = 1, head_dim = 16, scale = 0.25 : f32} : (tensor<?x32xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x32xbf16>
  return %a : tensor<?x32xbf16>
}

// The two-operand swiglu: gate and up packed side by side, then the
// one-operand form.
// CHECK-LABEL: func.func @swiglu
// CHECK: %[[GU:.*]] = sol.concat_columns %arg0, %arg1 : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x256xbf16>
// CHECK-NEXT: %[[S:.*]] = sol.swiglu %[[GU]] : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: return %[[S]]
func.func @swiglu(%g: tensor<?x128xbf16>, %u: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  %s = sol.swiglu %g, %u : (tensor<?x128xbf16>, tensor<?x128xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}

// The one-operand swiglu is already kernel-level.
// CHECK-LABEL: func.func @swiglu_packed
// CHECK-NEXT: %[[S:.*]] = sol.swiglu %arg0 : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
// CHECK-NEXT: return %[[S]]
func.func @swiglu_packed(%gu: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %s = sol.swiglu %gu : (tensor<?x256xbf16>) -> tensor<?x128xbf16>
  return %s : tensor<?x128xbf16>
}

// sol.logits: gather the rows, the final norm, and a linear with f32 results.
// CHECK-LABEL: func.func @logits
// CHECK-DAG: %[[NW:.*]] = sol.weight @model.norm.weight
// CHECK-DAG: %[[HEAD:.*]] = sol.weight @lm_head.weight
// CHECK: %[[G:.*]] = sol.gather_rows %arg0, %arg1 : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
// CHECK-NEXT: %[[N:.*]] = sol.rms_norm %[[G]], %[[NW]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
// CHECK-NEXT: %[[L:.*]] = sol.linear %[[N]], %[[HEAD]] : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
// CHECK-NEXT: return %[[L]]
func.func @logits(%h: tensor<?x64xbf16>, %rows: tensor<?xi32>) -> tensor<?x256xf32> {
  %nw = sol.weight @model.norm.weight : tensor<64xbf16>
  %head = sol.weight @lm_head.weight : tensor<256x64xbf16>
  %l = sol.logits %h, %nw, %head, %rows {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<?xi32>) -> tensor<?x256xf32>
  return %l : tensor<?x256xf32>
}

// Kernel-level ops are left as they are.
// CHECK-LABEL: func.func @kernel_level
// CHECK: %[[Y:.*]] = sol.norm_linear %arg0,
// CHECK-NEXT: sol.add_rms_norm %[[Y]], %arg1,
func.func @kernel_level(%x: tensor<?x64xbf16>, %h: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %nw = sol.weight @norm.weight : tensor<64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.norm_linear %x, %nw, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %n, %s = sol.add_rms_norm %y, %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  return %n, %s : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near miss of the packed path: the unrotated q part is also read after the
// attention, so the packed tensor cannot be rotated in place; Q, K and V are
// packed by a copy instead.
// CHECK-LABEL: func.func @q_part_read_later
// CHECK: %[[P:.*]]:3 = sol.split
// CHECK: %[[C:.*]] = sol.concat_columns %[[P]]#0, %[[P]]#1, %[[P]]#2
// CHECK: sol.rope_kv_write %[[C]]
// CHECK: sol.linear %[[P]]#0
func.func @q_part_read_later(%x: tensor<?x64xbf16>, %p: tensor<?xi32>, %s: tensor<?xi32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %w = sol.weight @qkv.weight : tensor<128x64xbf16>
  %qkv = sol.linear %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %parts:3 = sol.split %qkv : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
  %q = sol.rope %parts#0, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 4, head_dim = 16} : (tensor<?x64xbf16>, tensor<?xi32>) -> tensor<?x64xbf16>
  %k = sol.rope %parts#1, %p {rope = #sol.rope<theta = 10000.0>, num_heads = 2, head_dim = 16} : (tensor<?x32xbf16>, tensor<?xi32>) -> tensor<?x32xbf16>
  %a = sol.attention %q, %k, %parts#2, %p, %s {layer = 0, num_heads = 4, num_kv_heads = 2, head_dim = 16, scale = 0.25 : f32} : (tensor<?x64xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64xbf16>
  %wo = sol.weight @o.weight : tensor<64x64xbf16>
  %o = sol.linear %parts#0, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %a, %o : tensor<?x64xbf16>, tensor<?x64xbf16>
}

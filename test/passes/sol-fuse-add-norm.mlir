// RUN: solc-opt %s --sol-fuse-add-norm | FileCheck %s

// sol-fuse-add-norm: a residual add and the RMS norm of its sum as one
// sol.add_rms_norm, which writes the sum into the residual's buffer.

// rms_norm(add(r, x)) with only weights between becomes add_rms_norm(x, r):
// the norm's users read `normed`, the add's other users `sum`.
// CHECK-LABEL: func.func @add_norm
// CHECK: %[[R:.*]] = sol.embedding
// CHECK: %[[W:.*]] = sol.weight @post_attention_layernorm.weight
// CHECK: %[[N:.*]], %[[S:.*]] = sol.add_rms_norm %arg1, %[[R]], %[[W]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
// CHECK-NOT: sol.rms_norm
// CHECK: %[[Y:.*]] = sol.linear %[[N]], %{{.*}}
// CHECK: %[[S2:.*]] = sol.add %[[S]], %[[Y]]
// CHECK: return %[[S2]], %[[N]]
func.func @add_norm(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %w = sol.weight @post_attention_layernorm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wo = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %n, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %s2 = sol.add %s, %y : tensor<?x64xbf16>
  return %s2, %n : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: the residual (lhs) is read after the add.
// CHECK-LABEL: func.func @lhs_read_after
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.add
// CHECK: sol.rms_norm
func.func @lhs_read_after(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %w = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n, %r : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: a non-weight op (a linear) runs between the add and the norm.
// CHECK-LABEL: func.func @op_between
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.add
// CHECK: sol.rms_norm
func.func @op_between(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %wo = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %x, %wo : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n, %y : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: a per-head norm (weight of one head, 16 of 64 columns).
// CHECK-LABEL: func.func @per_head
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.add
// CHECK: sol.rms_norm
func.func @per_head(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %w = sol.weight @q_norm.weight : tensor<16xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  return %n : tensor<?x64xbf16>
}

// Near-miss: the residual is a function argument.
// CHECK-LABEL: func.func @argument_residual
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.add
// CHECK: sol.rms_norm
func.func @argument_residual(%r: tensor<?x64xbf16>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %w = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n : tensor<?x64xbf16>
}

// Near-miss: x lives in the residual's buffer (an in-place head norm of it).
// CHECK-LABEL: func.func @same_storage
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.add
// CHECK: sol.rms_norm
func.func @same_storage(%ids: tensor<?xi32>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %hw = sol.weight @head_norm.weight : tensor<16xbf16>
  %x = sol.head_rms_norm %r, %hw {column = 0, num_heads = 4, epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %x : tensor<?x64xbf16>
  %w = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n : tensor<?x64xbf16>
}

// Near-miss: x is the residual itself.
// CHECK-LABEL: func.func @doubled
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.add
// CHECK: sol.rms_norm
func.func @doubled(%ids: tensor<?xi32>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %r, %r : tensor<?x64xbf16>
  %w = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n : tensor<?x64xbf16>
}

// Near-miss: the norm's input is not an add.
// CHECK-LABEL: func.func @input_not_add
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.rms_norm
func.func @input_not_add(%ids: tensor<?xi32>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %r, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n : tensor<?x64xbf16>
}

// Near-miss: the residual is the add's left operand, here a function
// argument; the right one is not tried in its place.
// CHECK-LABEL: func.func @rhs_argument
// CHECK-NOT: sol.add_rms_norm
// CHECK: sol.add
// CHECK: sol.rms_norm
func.func @rhs_argument(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %s = sol.add %x, %r : tensor<?x64xbf16>
  %w = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n : tensor<?x64xbf16>
}

// Near miss: the residual is a column slice of a wider tensor; the kernel
// writes whole rows of it.
// CHECK-LABEL: func.func @split_residual
// CHECK: sol.add
// CHECK: sol.rms_norm
// CHECK-NOT: sol.add_rms_norm
func.func @split_residual(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w0 = sol.weight @w : tensor<128x64xbf16>
  %tt = sol.linear %x, %w0 : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  %p:2 = sol.split %tt : tensor<?x128xbf16> -> tensor<?x64xbf16>, tensor<?x64xbf16>
  %s = sol.add %p#0, %x : tensor<?x64xbf16>
  %nw = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %n : tensor<?x64xbf16>
}

// Gemma's sandwich norms: the norm of the sub-layer's output before the
// residual add joins the add's kernel as its input norm.
// CHECK-LABEL: func.func @input_norm
// CHECK: %[[R:.*]] = sol.embedding
// CHECK: %[[WP:.*]] = sol.weight @post_attention_layernorm.weight
// CHECK: %[[WN:.*]] = sol.weight @pre_feedforward_layernorm.weight
// CHECK: %[[N:.*]], %[[S:.*]] = sol.add_rms_norm %arg1, %[[R]], %[[WN]] input_norm %[[WP]] : tensor<64xf32> {epsilon = 9.99999997E-7 : f32, input_epsilon = 9.99999997E-7 : f32}
// CHECK-NOT: sol.rms_norm
// CHECK: return %[[S]], %[[N]]
func.func @input_norm(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %wp = sol.weight @post_attention_layernorm.weight : tensor<64xf32>
  %p = sol.rms_norm %x, %wp {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xf32>) -> tensor<?x64xbf16>
  %s = sol.add %r, %p : tensor<?x64xbf16>
  %wn = sol.weight @pre_feedforward_layernorm.weight : tensor<64xf32>
  %n = sol.rms_norm %s, %wn {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xf32>) -> tensor<?x64xbf16>
  return %s, %n : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: the sub-layer's normalised output is read elsewhere too, so
// its norm stays an op of its own.
// CHECK-LABEL: func.func @input_norm_read_elsewhere
// CHECK: %[[P:.*]] = sol.rms_norm %arg1
// CHECK: sol.add_rms_norm %[[P]], %{{.*}}, %{{.*}} {epsilon
// CHECK: return
func.func @input_norm_read_elsewhere(%ids: tensor<?xi32>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %wp = sol.weight @post_attention_layernorm.weight : tensor<64xf32>
  %p = sol.rms_norm %x, %wp {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xf32>) -> tensor<?x64xbf16>
  %s = sol.add %r, %p : tensor<?x64xbf16>
  %wn = sol.weight @pre_feedforward_layernorm.weight : tensor<64xf32>
  %n = sol.rms_norm %s, %wn {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xf32>) -> tensor<?x64xbf16>
  return %s, %n, %p : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>
}

// RUN: solc-opt %s --sol-fuse-norm-linear | FileCheck %s

// sol-fuse-norm-linear: an RMS norm into the prologue of the linear that
// reads it (sol.norm_linear).

// linear(rms_norm(h, w), W, b) becomes norm_linear(h, w, W, b); weights
// (here a weight transform too) may sit between the norm and the linear.
// CHECK-LABEL: func.func @norm_linear
// CHECK: %[[H:.*]] = sol.embedding
// CHECK: %[[NW:.*]] = sol.weight @input_layernorm.weight
// CHECK: %[[W:.*]] = sol.concat_weights
// CHECK: %[[B:.*]] = sol.weight @qkv.bias
// CHECK-NOT: sol.rms_norm
// CHECK: %[[Y:.*]] = sol.norm_linear %[[H]], %[[NW]], %[[W]], %[[B]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
// CHECK: return %[[Y]]
func.func @norm_linear(%ids: tensor<?xi32>) -> tensor<?x128xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %h = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %nw = sol.weight @input_layernorm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wq = sol.weight @q.weight : tensor<64x64xbf16>
  %wk = sol.weight @k.weight : tensor<32x64xbf16>
  %wv = sol.weight @v.weight : tensor<32x64xbf16>
  %w = sol.concat_weights %wq, %wk, %wv : (tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
  %b = sol.weight @qkv.bias : tensor<128xbf16>
  %y = sol.linear %n, %w, %b : (tensor<?x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// The linear's epilogue carries over; the epsilon is the norm's.
// CHECK-LABEL: func.func @swiglu
// CHECK: sol.norm_linear %arg0, %{{.*}}, %{{.*}} {epilogue = #sol<epilogue swiglu>, epsilon = 9.99999997E-7 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
func.func @swiglu(%h: tensor<?x64xbf16>) -> tensor<?x128xbf16> {
  %nw = sol.weight @post_attention_layernorm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @gate_up.weight : tensor<256x64xbf16>
  %y = sol.linear %n, %w {epilogue = #sol<epilogue swiglu>} : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// So does the residual epilogue, with a residual other than the norm's input.
// CHECK-LABEL: func.func @residual
// CHECK: %[[R:.*]] = sol.embedding
// CHECK: sol.norm_linear %arg1, %{{.*}}, %{{.*}} residual %[[R]] {epilogue = #sol<epilogue residual>, epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64x64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
func.func @residual(%ids: tensor<?xi32>, %h: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %r = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %nw = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %n, %w residual %r {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<64x64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// A linear with f32 results (an LM head) keeps them.
// CHECK-LABEL: func.func @logits
// CHECK: sol.norm_linear %arg0, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
func.func @logits(%h: tensor<?x64xbf16>) -> tensor<?x256xf32> {
  %nw = sol.weight @model.norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @lm_head.weight : tensor<256x64xbf16>
  %y = sol.linear %n, %w : (tensor<?x64xbf16>, tensor<256x64xbf16>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// Near-miss: the norm has two users (unfused Q and K projections).
// CHECK-LABEL: func.func @two_users
// CHECK-NOT: sol.norm_linear
// CHECK: %[[N:.*]] = sol.rms_norm
// CHECK: sol.linear %[[N]]
// CHECK: sol.linear %[[N]]
func.func @two_users(%h: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x32xbf16>) {
  %nw = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %wq = sol.weight @q.weight : tensor<64x64xbf16>
  %wk = sol.weight @k.weight : tensor<32x64xbf16>
  %q = sol.linear %n, %wq : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %k = sol.linear %n, %wk : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %q, %k : tensor<?x64xbf16>, tensor<?x32xbf16>
}

// Near-miss: a non-weight op runs between the norm and the linear.
// CHECK-LABEL: func.func @op_between
// CHECK-NOT: sol.norm_linear
// CHECK: sol.rms_norm
// CHECK: sol.linear
func.func @op_between(%h: tensor<?x64xbf16>, %x: tensor<?x64xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %nw = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %z = sol.add %x, %x : tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %n, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y, %z : tensor<?x64xbf16>, tensor<?x64xbf16>
}

// Near-miss: the norm's input is an add (sol-fuse-add-norm's case).
// CHECK-LABEL: func.func @input_is_add
// CHECK-NOT: sol.norm_linear
// CHECK: sol.rms_norm
// CHECK: sol.linear
func.func @input_is_add(%h: tensor<?x64xbf16>, %x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %s = sol.add %h, %x : tensor<?x64xbf16>
  %nw = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %s, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %n, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// Near-miss: a per-head norm.
// CHECK-LABEL: func.func @per_head
// CHECK-NOT: sol.norm_linear
// CHECK: sol.rms_norm
// CHECK: sol.linear
func.func @per_head(%h: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %nw = sol.weight @q_norm.weight : tensor<16xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<16xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %n, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// Near-miss: the linear adds into the norm's input, which the fused kernel
// would still be reading.
// CHECK-LABEL: func.func @residual_is_input
// CHECK-NOT: sol.norm_linear
// CHECK: %[[H:.*]] = sol.embedding
// CHECK: %[[N:.*]] = sol.rms_norm %[[H]]
// CHECK: sol.linear %[[N]], %{{.*}} residual %[[H]]
func.func @residual_is_input(%ids: tensor<?xi32>) -> tensor<?x64xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %h = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %nw = sol.weight @norm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @o.weight : tensor<64x64xbf16>
  %y = sol.linear %n, %w residual %h {epilogue = #sol<epilogue residual>} : (tensor<?x64xbf16>, tensor<64x64xbf16> residual tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// A quantized linear keeps its scales, scheme and bias.
// CHECK-LABEL: func.func @quantized
// CHECK: %[[Y:.*]] = sol.norm_linear %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scales %{{.*}} {epsilon = 9.99999974E-6 : f32, quant = #sol<quant fp8>} : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xf8E4M3FN>, tensor<128xbf16> scales tensor<128xf32>) -> tensor<?x128xbf16>
// CHECK: return %[[Y]]
func.func @quantized(%ids: tensor<?xi32>) -> tensor<?x128xbf16> {
  %e = sol.weight @embed : tensor<256x64xbf16>
  %h = sol.embedding %ids, %e : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  %nw = sol.weight @input_layernorm.weight : tensor<64xbf16>
  %n = sol.rms_norm %h, %nw {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %w = sol.weight @qkv.weight : tensor<128x64xf8E4M3FN>
  %s = sol.weight @"qkv.weight~fp8.scales" : tensor<128xf32>
  %b = sol.weight @qkv.bias : tensor<128xbf16>
  %y = sol.linear %n, %w, %b scales %s {quant = #sol<quant fp8>} : (tensor<?x64xbf16>, tensor<128x64xf8E4M3FN>, tensor<128xbf16> scales tensor<128xf32>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// RUN: solc-opt %s --split-input-file --sol-raise-rms-norm | FileCheck %s

// sol-raise-rms-norm: RMSNorm as ONNX exporters spell it, into sol.rms_norm
// of the token-major rows, between views of the graph's values.

// Pow / ReduceMean / Add / Sqrt / Div(1, s) / Mul(x, r) / Mul(w, n), as the
// TorchScript exporter writes it (opset 17: axes as an attribute).
// CHECK-LABEL: func.func @reciprocal_by_div
// The float32 weight stays float32 (a norm weight the exporter stored wider
// than bf16 loses nothing).
// CHECK: %[[W:.*]] = sol.weight @norm.weight : tensor<64xf32>
// CHECK-NOT: sol.convert_weight
// CHECK: %[[X:.*]] = sol.batch_view %arg0 : tensor<?x?x64xf32> -> tensor<?x64xbf16>
// CHECK: %[[N:.*]] = sol.rms_norm %[[X]], %[[W]] {epsilon = 9.99999997E-7 : f32}
// CHECK: %[[Y:.*]] = sol.batch_view %[[N]] : tensor<?x64xbf16> -> tensor<?x?x64xf32>
// CHECK-NOT: sol.onnx "
// CHECK: return %[[Y]]
func.func @reciprocal_by_div(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %w = sol.weight @norm.weight : tensor<64xf32>
  %two = sol.onnx_constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %eps = sol.onnx_constant {value = dense<1.0e-6> : tensor<f32>} : tensor<f32>
  %one = sol.onnx_constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %sq = sol.onnx "Pow"(%x, %two) : (tensor<?x?x64xf32>, tensor<f32>) -> tensor<*xf32>
  %m = sol.onnx "ReduceMean"(%sq) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %a = sol.onnx "Add"(%m, %eps) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %s = sol.onnx "Sqrt"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  %r = sol.onnx "Div"(%one, %s) : (tensor<f32>, tensor<*xf32>) -> tensor<*xf32>
  %n = sol.onnx "Mul"(%x, %r) : (tensor<?x?x64xf32>, tensor<*xf32>) -> tensor<*xf32>
  %y = sol.onnx "Mul"(%w, %n) : (tensor<64xf32>, tensor<*xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// float16 graphs: the norm in float32 between Casts; Reciprocal(Sqrt) as
// torch.onnx's dynamo exporter writes rsqrt; axes as an input (opset 18);
// x * x for the square; the weight on the right.
// CHECK-LABEL: func.func @fp16_reciprocal
// CHECK: %[[X:.*]] = sol.batch_view %arg0 : tensor<1x?x64xf16> -> tensor<?x64xbf16>
// CHECK: sol.rms_norm %[[X]], %{{.*}} {epsilon = 9.99999974E-6 : f32}
// CHECK-NOT: sol.onnx "
func.func @fp16_reciprocal(%x: tensor<1x?x64xf16>) -> tensor<1x?x64xf16> {
  %w = sol.weight @norm.weight : tensor<64xf16>
  %axes = sol.onnx_constant {value = dense<[2]> : tensor<1xi64>} : tensor<1xi64>
  %eps = sol.onnx_constant {value = dense<1.0e-5> : tensor<f32>} : tensor<f32>
  %x32 = sol.onnx "Cast"(%x) {to = 1 : i64} : (tensor<1x?x64xf16>) -> tensor<1x?x64xf32>
  %sq = sol.onnx "Mul"(%x32, %x32) : (tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %m = sol.onnx "ReduceMean"(%sq, %axes) {keepdims = 1 : i64} : (tensor<1x?x64xf32>, tensor<1xi64>) -> tensor<1x?x1xf32>
  %a = sol.onnx "Add"(%eps, %m) : (tensor<f32>, tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %s = sol.onnx "Sqrt"(%a) : (tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %r = sol.onnx "Reciprocal"(%s) : (tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %n = sol.onnx "Mul"(%r, %x32) : (tensor<1x?x1xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %n16 = sol.onnx "Cast"(%n) {to = 10 : i64} : (tensor<1x?x64xf32>) -> tensor<1x?x64xf16>
  %y = sol.onnx "Mul"(%n16, %w) : (tensor<1x?x64xf16>, tensor<64xf16>) -> tensor<1x?x64xf16>
  return %y : tensor<1x?x64xf16>
}

// -----

// Qwen3's q_norm: over the last axis of [batch, seq, heads, head_dim], a
// per-group norm (groups of 16) of the 64-wide token-major rows; the weight
// is a small initializer inlined as a constant the store also holds.
// CHECK-LABEL: func.func @per_head
// CHECK: %[[W:.*]] = sol.weight @q_norm.weight : tensor<16xf32>
// CHECK: %[[X:.*]] = sol.batch_view %arg0 : tensor<?x?x4x16xf32> -> tensor<?x64xbf16>
// CHECK: sol.rms_norm %[[X]], %{{.*}} : (tensor<?x64xbf16>, tensor<16xf32>) -> tensor<?x64xbf16>
func.func @per_head(%x: tensor<?x?x4x16xf32>) -> tensor<?x?x4x16xf32> {
  %w = sol.onnx_constant @q_norm.weight {value = dense<1.5> : tensor<16xf32>} : tensor<16xf32>
  %two = sol.onnx_constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %eps = sol.onnx_constant {value = dense<1.0e-6> : tensor<f32>} : tensor<f32>
  %sq = sol.onnx "Pow"(%x, %two) : (tensor<?x?x4x16xf32>, tensor<f32>) -> tensor<*xf32>
  %m = sol.onnx "ReduceMean"(%sq) {axes = array<i64: 3>, keepdims = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %a = sol.onnx "Add"(%m, %eps) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %s = sol.onnx "Sqrt"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  %n = sol.onnx "Div"(%x, %s) : (tensor<?x?x4x16xf32>, tensor<*xf32>) -> tensor<*xf32>
  %y = sol.onnx "Mul"(%w, %n) : (tensor<16xf32>, tensor<*xf32>) -> tensor<?x?x4x16xf32>
  return %y : tensor<?x?x4x16xf32>
}

// -----

// Near misses, left as they are: another exponent; an epsilon out of
// range; a mean over another axis; a divided value that is not the squared
// one; a scale that is not a weight.
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: sol.rms_norm
// CHECK: return
func.func @near_misses(%x: tensor<?x?x64xf32>, %z: tensor<?x?x64xf32>, %v: tensor<64xf32>)
    -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %w = sol.weight @norm.weight : tensor<64xf32>
  %two = sol.onnx_constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %three = sol.onnx_constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %eps = sol.onnx_constant {value = dense<1.0e-6> : tensor<f32>} : tensor<f32>
  %big = sol.onnx_constant {value = dense<0.5> : tensor<f32>} : tensor<f32>

  %c3 = sol.onnx "Pow"(%x, %three) : (tensor<?x?x64xf32>, tensor<f32>) -> tensor<*xf32>
  %m3 = sol.onnx "ReduceMean"(%c3) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %a3 = sol.onnx "Add"(%m3, %eps) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %s3 = sol.onnx "Sqrt"(%a3) : (tensor<*xf32>) -> tensor<*xf32>
  %n3 = sol.onnx "Div"(%x, %s3) : (tensor<?x?x64xf32>, tensor<*xf32>) -> tensor<*xf32>
  %y3 = sol.onnx "Mul"(%w, %n3) : (tensor<64xf32>, tensor<*xf32>) -> tensor<*xf32>

  %sq = sol.onnx "Pow"(%x, %two) : (tensor<?x?x64xf32>, tensor<f32>) -> tensor<*xf32>
  %m = sol.onnx "ReduceMean"(%sq) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %ab = sol.onnx "Add"(%m, %big) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %sb = sol.onnx "Sqrt"(%ab) : (tensor<*xf32>) -> tensor<*xf32>
  %nb = sol.onnx "Div"(%x, %sb) : (tensor<?x?x64xf32>, tensor<*xf32>) -> tensor<*xf32>
  %yb = sol.onnx "Mul"(%w, %nb) : (tensor<64xf32>, tensor<*xf32>) -> tensor<*xf32>

  %m1 = sol.onnx "ReduceMean"(%sq) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %a1 = sol.onnx "Add"(%m1, %eps) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %s1 = sol.onnx "Sqrt"(%a1) : (tensor<*xf32>) -> tensor<*xf32>
  %n1 = sol.onnx "Div"(%x, %s1) : (tensor<?x?x64xf32>, tensor<*xf32>) -> tensor<*xf32>
  %y1 = sol.onnx "Mul"(%w, %n1) : (tensor<64xf32>, tensor<*xf32>) -> tensor<*xf32>

  %a = sol.onnx "Add"(%m, %eps) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %s = sol.onnx "Sqrt"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  %nz = sol.onnx "Div"(%z, %s) : (tensor<?x?x64xf32>, tensor<*xf32>) -> tensor<*xf32>
  %yz = sol.onnx "Mul"(%w, %nz) : (tensor<64xf32>, tensor<*xf32>) -> tensor<*xf32>

  %n = sol.onnx "Div"(%x, %s) : (tensor<?x?x64xf32>, tensor<*xf32>) -> tensor<*xf32>
  %yv = sol.onnx "Mul"(%v, %n) : (tensor<64xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %y3, %yb, %y1, %yz, %yv : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

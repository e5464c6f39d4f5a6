// RUN: solc-opt %s --split-input-file --sol-raise-linear | FileCheck %s

// sol-raise-linear: MatMul by a weight, and the bias Add after it, into
// sol.linear with the weight in Hugging Face's [out, in] layout.

// The exporters' layout: Wᵀ stored as the initializer ([in, out] = 64x32),
// the bias added first-operand-first as the TorchScript exporter writes it.
// CHECK-LABEL: func.func @transposed_initializer
// CHECK: %[[WT:.*]] = sol.weight @"onnx::MatMul_12" : tensor<64x32xf32>
// CHECK: %[[B:.*]] = sol.weight @q_proj.bias : tensor<32xf32>
// CHECK: %[[C:.*]] = sol.convert_weight %[[WT]] : tensor<64x32xf32> -> tensor<64x32xbf16>
// CHECK: %[[W:.*]] = sol.transpose_weight %[[C]] : tensor<64x32xbf16> -> tensor<32x64xbf16>
// CHECK: %[[BB:.*]] = sol.convert_weight %[[B]]
// CHECK: %[[X:.*]] = sol.batch_view %arg0 : tensor<?x?x64xf32> -> tensor<?x64xbf16>
// CHECK: %[[Y:.*]] = sol.linear %[[X]], %[[W]], %[[BB]] : (tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
// CHECK: %[[R:.*]] = sol.batch_view %[[Y]] : tensor<?x32xbf16> -> tensor<?x?x32xf32>
// CHECK-NOT: sol.onnx "
// CHECK: return %[[R]]
func.func @transposed_initializer(%x: tensor<?x?x64xf32>) -> tensor<?x?x32xf32> {
  %wt = sol.weight @"onnx::MatMul_12" : tensor<64x32xf32>
  %b = sol.weight @q_proj.bias : tensor<32xf32>
  %y = sol.onnx "MatMul"(%x, %wt) : (tensor<?x?x64xf32>, tensor<64x32xf32>) -> tensor<*xf32>
  %z = sol.onnx "Add"(%b, %y) : (tensor<32xf32>, tensor<*xf32>) -> tensor<?x?x32xf32>
  return %z : tensor<?x?x32xf32>
}

// -----

// The original [out, in] weight behind a Transpose node (dynamo), bf16
// already: no transform; no bias.
// CHECK-LABEL: func.func @transpose_node
// CHECK: %[[W:.*]] = sol.weight @o_proj.weight : tensor<32x64xbf16>
// CHECK-NOT: sol.transpose_weight
// CHECK: sol.linear %{{.*}}, %[[W]] : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
// CHECK-NOT: sol.onnx "
func.func @transpose_node(%x: tensor<?x?x64xbf16>) -> tensor<*xbf16> {
  %w = sol.weight @o_proj.weight : tensor<32x64xbf16>
  %t = sol.onnx "Transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<32x64xbf16>) -> tensor<64x32xbf16>
  %y = sol.onnx "MatMul"(%x, %t) : (tensor<?x?x64xbf16>, tensor<64x32xbf16>) -> tensor<*xbf16>
  return %y : tensor<*xbf16>
}

// -----

// Not linears: a product of two activations (attention scores); an Add of
// something that is not a [out] weight stays an Add after the linear.
// CHECK-LABEL: func.func @not_linear
// CHECK: sol.onnx "MatMul"(%arg0, %arg1)
// CHECK: %[[Y:.*]] = sol.linear
// CHECK: %[[V:.*]] = sol.batch_view %[[Y]]
// CHECK: sol.onnx "Add"(%[[V]], %arg2)
func.func @not_linear(%q: tensor<?x?x?x16xf32>, %k: tensor<?x?x16x?xf32>, %r: tensor<?x?x32xf32>, %x: tensor<?x?x64xf32>)
    -> (tensor<*xf32>, tensor<*xf32>) {
  %s = sol.onnx "MatMul"(%q, %k) : (tensor<?x?x?x16xf32>, tensor<?x?x16x?xf32>) -> tensor<*xf32>
  %wt = sol.weight @w : tensor<64x32xf32>
  %y = sol.onnx "MatMul"(%x, %wt) : (tensor<?x?x64xf32>, tensor<64x32xf32>) -> tensor<*xf32>
  %z = sol.onnx "Add"(%y, %r) : (tensor<*xf32>, tensor<?x?x32xf32>) -> tensor<*xf32>
  return %s, %z : tensor<*xf32>, tensor<*xf32>
}

// -----

// An Add of a one-element vector broadcasts a scalar: it is no bias and
// stays after the linear.
// CHECK-LABEL: func.func @scalar_add_is_no_bias
// CHECK: %[[Y:.*]] = sol.linear %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
// CHECK: %[[V:.*]] = sol.batch_view %[[Y]]
// CHECK: sol.onnx "Add"(%[[V]], %{{.*}})
func.func @scalar_add_is_no_bias(%x: tensor<?x?x64xf32>) -> tensor<?x?x32xf32> {
  %wt = sol.weight @w : tensor<64x32xf32>
  %b = sol.weight @shift : tensor<1xf32>
  %y = sol.onnx "MatMul"(%x, %wt) : (tensor<?x?x64xf32>, tensor<64x32xf32>) -> tensor<*xf32>
  %z = sol.onnx "Add"(%y, %b) : (tensor<*xf32>, tensor<1xf32>) -> tensor<?x?x32xf32>
  return %z : tensor<?x?x32xf32>
}
